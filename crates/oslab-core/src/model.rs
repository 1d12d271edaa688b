//! The data model shared by probes, store and report: a [`Measurement`] is what one probe measured
//! under one set of parameters, with its summary, status and, where a model exists, a prediction.

use crate::stats::{noise_reason, NoiseRule, Summary};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

pub use crate::units::Unit;

/// Outcome of a measurement: `status` and, unless ok, its `reason` (for noisy its [`Cause`],
/// the note saying more).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "StatusRecord", into = "StatusRecord")]
pub enum Status {
    /// Measured; spread acceptable.
    Ok,
    /// Measured, but not to be trusted as a point value, for the [`Cause`] it carries.
    Noisy(Cause),
    /// Not run: the machine lacks something the probe needs.
    Skipped(String),
    /// Ran and failed.
    Failed(String),
}

/// Why a result is noisy, in a word or two: the same words in the table, JSON and CSV. Stored as
/// its word; a word this oslab does not know (a newer one's) is kept as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// Its interval or quartiles are too wide for the median.
    Spread,
    /// Too few samples for an interval.
    FewSamples,
    /// Other work took the cpus while it was measured.
    Contention,
    /// Measured on a core that ran slow around most samples.
    SlowedCore,
    /// oslab itself was stopped (SIGSTOP, Ctrl-Z) while it measured: the pause is in it.
    Stopped,
    /// Measured on an emulated cpu.
    Emulated,
    /// Its interval reaches below zero, which the quantity cannot.
    BelowZero,
    /// Pooled from repetitions that disagree (each tight, their medians apart beyond the noise
    /// bar) or of which one has no value.
    Repetitions,
    /// Stored before causes were recorded.
    Unknown,
    /// A word this oslab does not know, kept as written.
    Other(String),
}

impl Cause {
    /// The word it is written as.
    pub fn word(&self) -> &str {
        match self {
            Cause::Spread => "spread",
            Cause::FewSamples => "few samples",
            Cause::Contention => "contention",
            Cause::SlowedCore => "slowed core",
            Cause::Stopped => "stopped",
            Cause::Emulated => "emulated",
            Cause::BelowZero => "below zero",
            Cause::Repetitions => "repetitions",
            Cause::Unknown => "",
            Cause::Other(w) => w,
        }
    }

    /// Read back from its word.
    pub fn parse(word: &str) -> Cause {
        [
            Cause::Spread,
            Cause::FewSamples,
            Cause::Contention,
            Cause::SlowedCore,
            Cause::Stopped,
            Cause::Emulated,
            Cause::BelowZero,
            Cause::Repetitions,
            Cause::Unknown,
        ]
        .into_iter()
        .find(|c| c.word() == word)
        .unwrap_or_else(|| Cause::Other(word.to_string()))
    }

    /// A condition measured while the result was taken (the machine was busy, slowed, stopped
    /// or emulated), not a property of the samples' spread.
    pub fn is_condition(&self) -> bool {
        matches!(
            self,
            Cause::Contention | Cause::SlowedCore | Cause::Stopped | Cause::Emulated
        )
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

/// How a status is written: `{"status": "noisy", "reason": "spread"}`.
#[derive(Clone, Serialize, Deserialize)]
struct StatusRecord {
    status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

impl From<StatusRecord> for Status {
    fn from(r: StatusRecord) -> Status {
        let reason = r.reason.unwrap_or_default();
        match r.status.as_str() {
            "ok" => Status::Ok,
            "noisy" => Status::Noisy(Cause::parse(&reason)),
            "skipped" => Status::Skipped(reason),
            "failed" => Status::Failed(reason),
            other => Status::Failed(format!("unknown status {other:?}")),
        }
    }
}

impl From<Status> for StatusRecord {
    fn from(s: Status) -> StatusRecord {
        StatusRecord {
            status: s.word().to_string(),
            reason: match s {
                Status::Ok => None,
                Status::Noisy(c) => Some(c.word().to_string()).filter(|w| !w.is_empty()),
                Status::Skipped(r) | Status::Failed(r) => (!r.is_empty()).then_some(r),
            },
        }
    }
}

impl Status {
    /// Parses the stored form (`ok`, `noisy`, `noisy: cause`, `skipped: why`, `failed: why`).
    pub fn parse(s: &str) -> Status {
        match s.split_once(": ") {
            Some(("skipped", r)) => Status::Skipped(r.to_string()),
            Some(("failed", r)) => Status::Failed(r.to_string()),
            Some(("noisy", r)) => Status::Noisy(Cause::parse(r)),
            _ if s == "noisy" => Status::Noisy(Cause::Unknown),
            _ if s == "ok" => Status::Ok,
            _ => Status::Failed(format!("unknown status {s:?}")),
        }
    }

    /// The outcome in one word: ok, noisy, skipped, failed.
    pub fn word(&self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Noisy(_) => "noisy",
            Status::Skipped(_) => "skipped",
            Status::Failed(_) => "failed",
        }
    }

    /// Whether it is noisy (for whatever cause).
    pub fn is_noisy(&self) -> bool {
        matches!(self, Status::Noisy(_))
    }

    /// Noisy because other work took the cpus while it was measured.
    pub fn is_contended(&self) -> bool {
        matches!(self, Status::Noisy(Cause::Contention))
    }

    /// The word and, for noisy, its cause: `noisy: spread`; what a table's status column shows.
    pub fn short(&self) -> String {
        match self {
            Status::Noisy(c) if *c != Cause::Unknown => format!("noisy: {c}"),
            other => other.word().to_string(),
        }
    }

    /// Why it was skipped or failed.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Status::Skipped(r) | Status::Failed(r) => Some(r),
            _ => None,
        }
    }

    /// Whether a value was measured (ok or noisy).
    pub fn has_value(&self) -> bool {
        matches!(self, Status::Ok | Status::Noisy(_))
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Status::Ok => f.write_str("ok"),
            Status::Noisy(Cause::Unknown) => f.write_str("noisy"),
            Status::Noisy(c) => write!(f, "noisy: {c}"),
            Status::Skipped(r) => write!(f, "skipped: {r}"),
            Status::Failed(r) => write!(f, "failed: {r}"),
        }
    }
}

/// A value predicted from the machine's specs or from other measurements, with its inputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    /// Predicted value, in the measurement's unit.
    pub value: f64,
    /// The model's name, e.g. "L2 hit latency" (older runs: the model in words).
    pub model: String,
    /// The inputs the model used (name -> value).
    pub inputs: Map<String, Value>,
    /// What kind of model: from the specs, or composed from other measurements of the run.
    #[serde(default)]
    pub kind: ModelKind,
    /// The formula with its inputs filled in, e.g. "16 cycles / 2.10 GHz".
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub formula: String,
    /// Where each input comes from (input name -> "table: ...", "measured: ...", "--memory").
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub sources: Map<String, Value>,
    /// When measured and predicted differ by more than 2x: by how much and the likely reason
    /// (the cause it shares with other rows, then, after [`GAP_THIS_ROW`], this row's own
    /// figure where it has one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap: Option<String>,
}

/// What a prediction rests on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelKind {
    /// The machine's specifications (published cycle counts, the memory's rate, the kernel's
    /// configuration) and the measured core clock: a prediction.
    #[default]
    Spec,
    /// Other measurements of the same run composed: a consistency check, not a prediction.
    Composed,
    /// A count the kernel keeps for the same interval: a cross-check of the measurement.
    Reference,
}

impl ModelKind {
    /// The stored name.
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Spec => "spec",
            ModelKind::Composed => "composed",
            ModelKind::Reference => "reference",
        }
    }

    /// Parses the stored name (unknown names read as `Spec`, the kind of older runs).
    pub fn from_name(s: &str) -> ModelKind {
        match s {
            "composed" => ModelKind::Composed,
            "reference" => ModelKind::Reference,
            _ => ModelKind::Spec,
        }
    }
}

impl Prediction {
    /// A prediction with no formula, sources or gap (filled in by the machine model).
    pub fn new(value: f64, model: impl Into<String>, inputs: Map<String, Value>) -> Prediction {
        Prediction {
            value,
            model: model.into(),
            inputs,
            kind: ModelKind::Spec,
            formula: String::new(),
            sources: Map::new(),
            gap: None,
        }
    }
}

/// What one probe measured under one set of parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// Probe id, e.g. `syscall.getppid`.
    pub probe: String,
    /// Parameters (cpu, cache state, argument count, ...).
    pub params: Map<String, Value>,
    /// What the value is, e.g. `per_call`, `switch`, `create`.
    pub metric: String,
    /// Unit of every value in `summary`.
    pub unit: Unit,
    /// Summary of the samples, when anything was measured.
    pub summary: Option<Summary>,
    /// Median in TSC cycles, when the clock is the TSC and the unit is time.
    pub cycles: Option<f64>,
    /// Iterations per sample (batch size).
    pub batch: Option<u64>,
    /// Overhead subtracted from each sample, per iteration, in `unit`.
    pub overhead: Option<f64>,
    /// Outcome.
    #[serde(flatten)]
    pub status: Status,
    /// How it was measured, when the id alone does not say.
    pub note: Option<String>,
    /// The model value, when a model exists.
    pub prediction: Option<Prediction>,
    /// Why there is no prediction: which input is missing and how to supply it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_model: Option<String>,
    /// Raw per-iteration samples (after overhead subtraction), in `unit`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub samples: Option<Vec<f64>>,
    /// The value is a paired difference of two measured quantities (e.g. the cost of one more
    /// argument): it may truly be zero or below zero, so it has no best sample and no ratio.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub difference: bool,
    /// How many times the probe measured this before the result was kept: more than 1 when a
    /// noisy result was measured again later in the run.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub attempts: u32,
    /// Which independent repetition of the probe this is (1, 2, ... with `oslab run --repeat`):
    /// the unit of replication when runs are compared.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub repetition: u32,
    /// What was found while measuring (the page size the kernel actually gave, the cache size the
    /// machine claims): shown beside the parameters, never used to match measurements.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub context: Map<String, Value>,
}

fn one() -> u32 {
    1
}

fn is_one(v: &u32) -> bool {
    *v == 1
}

/// Ends the note of a measurement whose samples were all kept though the measuring core ran slow
/// around too many of them (another guest on its physical core, a clock change).
pub const SLOWED_CORE: &str =
    "too many to leave out: all kept, so it is the figure of a slowed core";

/// A time difference whose whole interval lies within this of zero is no difference (≈ 0), not
/// a negative cost: 0.1 ns is a third of a cycle at 3 GHz, an instruction's share in a core that
/// issues several a cycle, below what a batch resolves between runs (one binary's slope per
/// call argument read -0.033, +0.047 and +0.056 ns in three runs, each interval under ±0.001).
pub const NIL_DIFFERENCE_NS: f64 = 0.1;

/// The parameter saying which clock a figure lives on, present only when it is not the run's
/// own: [`SIMULATED`] for a simulator's time.
pub const CLOCK: &str = "clock";

/// [`CLOCK`]'s value for figures computed by a simulator.
pub const SIMULATED: &str = "simulated";

/// Whether measured/predicted `ratio` is more than [`FAR_FACTOR`] from 1, either way: the one
/// rule for the `!` mark.
pub fn far(ratio: f64) -> bool {
    !(1.0 / FAR_FACTOR..=FAR_FACTOR).contains(&ratio)
}

/// In a prediction's gap, what follows this is the row's own figure (by how many cycles it
/// missed, beside which input); what precedes it, the cause it shares with other rows, by which
/// `show --details` groups its misses.
pub const GAP_THIS_ROW: &str = "; this row: ";

impl Measurement {
    /// Whether its samples were taken on a slowed core (see [`SLOWED_CORE`]): a figure of the
    /// host at that moment more than of what was measured.
    pub fn slowed_core(&self) -> bool {
        self.note
            .as_deref()
            .is_some_and(|n| n.contains(SLOWED_CORE))
    }

    /// Puts `text` before the note (what the probe says first, then what the harness said).
    pub fn note_before(&mut self, text: impl Into<String>) {
        self.note = Some(join_notes(text.into(), self.note.take()));
    }

    /// A time, a rate or a cycle count taken by a clock, which an emulated CPU makes
    /// meaningless (counts, sizes, ratios and a simulation's own time it does not).
    pub fn is_timing(&self) -> bool {
        matches!(self.unit, Unit::Ns | Unit::Cycles | Unit::GBps) && !self.simulated()
    }

    /// Whether the figure lives on a simulation's clock (its [`CLOCK`] parameter says
    /// [`SIMULATED`]): simulated seconds owe nothing to the wall time the simulator took.
    pub fn simulated(&self) -> bool {
        self.params.get(CLOCK).and_then(Value::as_str) == Some(SIMULATED)
    }

    /// A timing taken on an emulated CPU: never `ok`, and the note says why first, whatever
    /// else made it noisy.
    pub fn mark_emulated(&mut self) {
        if self.is_timing() && self.status.has_value() {
            self.status = Status::Noisy(Cause::Emulated);
            self.note_before(format!("emulated CPU: {}", crate::machine::EMULATED));
        }
    }

    /// Keeps the contract every result keeps, whatever command made it: a value that cannot be
    /// is a failure with the reason, never a number. A time, rate, size or count below zero, or
    /// a time or rate of zero, cannot be; a paired difference may be zero or below (its interval
    /// decides), but a negative *time* that its interval keeps below zero is no cost either.
    /// A time whose interval reaches below zero is noisy.
    pub fn check_possible(&mut self) {
        let Some(s) = self.summary.as_ref().filter(|_| self.status.has_value()) else {
            return;
        };
        let (median, low, high) = (s.median, s.ci_low, s.ci_high);
        let unit = self.unit.symbol();
        let show = |v: f64| crate::units::value(v, self.unit);
        let why = if !median.is_finite() {
            Some("not a number".to_string())
        } else if self.difference {
            // Three paired differences all below zero happen one time in eight by chance: a
            // difference is impossible only from as many samples as an interval needs (a 240 MiB
            // re-touch 0.8% faster after a move, n=3, once read "impossible").
            let time = matches!(self.unit, Unit::Ns | Unit::Cycles);
            let enough = s.n >= crate::stats::MIN_FOR_INTERVAL;
            (time && enough && high < 0.0 && !self.difference_spans_zero()).then(|| {
                format!(
                    "impossible: a negative cost ({}, CI95 {} to {}): the variant with more work ran faster, an artifact (code alignment, the order of measurement, a busy host), not a cost",
                    show(median), show(low), show(high)
                )
            })
        } else if self.unit != Unit::Ratio && median < 0.0 {
            Some(format!(
                "impossible: a negative value ({}): the overhead subtracted was larger than what was measured",
                show(median)
            ))
        } else if self.is_timing() && median == 0.0 {
            Some(format!(
                "impossible: zero {unit}: the work was optimised away or is below the clock's resolution"
            ))
        } else {
            None
        };
        match why {
            // A value that cannot be is no value: nothing to set a prediction beside (as the
            // model gives none to a row without one, and `show --repredict` would not).
            Some(why) => {
                self.status = Status::Failed(why);
                self.prediction = None;
            }
            // A paired cost within noise of zero is no measurable cost: stored as zero up to its
            // upper bound, never as a negative cost a script reads (migration's median once
            // read -78.6 us at 240 MiB).
            None if self.difference
                && matches!(self.unit, Unit::Ns | Unit::Cycles)
                && median < 0.0
                && self.difference_spans_zero() =>
            {
                if let Some(s) = self.summary.as_mut() {
                    for v in [
                        &mut s.min,
                        &mut s.p25,
                        &mut s.median,
                        &mut s.p75,
                        &mut s.max,
                        &mut s.mean,
                        &mut s.ci_low,
                        &mut s.ci_high,
                    ] {
                        *v = v.max(0.0);
                    }
                }
                self.cycles = self.cycles.map(|c| c.max(0.0));
                self.note_before(format!(
                    "no measurable cost: its median was {} and its interval spans zero, so its figures below zero are stored as 0 (up to {})",
                    show(median),
                    show(high.max(0.0))
                ));
            }
            // Once is enough: `show` checks a run that was checked when it was measured.
            None if self.status == Status::Noisy(Cause::BelowZero) => {}
            None if self.is_timing() && !self.difference && low < 0.0 => {
                self.status = Status::Noisy(Cause::BelowZero);
                self.note_before(format!(
                    "noisy: its interval reaches below zero ({}), which a time or rate cannot",
                    show(low)
                ));
            }
            None => {}
        }
    }

    /// A measurement that was not taken.
    pub fn not_taken(
        probe: &str,
        params: Map<String, Value>,
        metric: &str,
        unit: Unit,
        status: Status,
    ) -> Measurement {
        Measurement {
            probe: probe.to_string(),
            params,
            metric: metric.to_string(),
            unit,
            summary: None,
            cycles: None,
            batch: None,
            overhead: None,
            status,
            note: None,
            prediction: None,
            no_model: None,
            samples: None,
            difference: false,
            attempts: 1,
            repetition: 1,
            context: Map::new(),
        }
    }

    /// The same measurement with `key` recorded as found while measuring (see `context`).
    pub fn found(mut self, key: &str, value: impl Into<Value>) -> Measurement {
        self.context.insert(key.to_string(), value.into());
        self
    }

    /// The best sample: the maximum of a rate, the minimum of a time or count; none for a
    /// paired difference (its smallest sample is noise, not a best case).
    pub fn best(&self) -> Option<f64> {
        let s = self.summary.as_ref()?;
        match (self.difference, self.unit.higher_is_better()) {
            (true, _) => None,
            (false, true) => Some(s.max),
            (false, false) => Some(s.min),
        }
    }

    /// Measured over predicted (the median over the model's value), when both exist.
    /// None for a difference with nothing measurable (its interval spans zero).
    pub fn efficiency(&self) -> Option<f64> {
        let p = self.prediction.as_ref()?.value;
        let m = self.summary.as_ref()?.median;
        (p > 0.0 && m > 0.0 && self.status.has_value() && !self.difference_spans_zero())
            .then(|| m / p)
    }

    /// Whether it is more than [`FAR_FACTOR`] from its prediction, either way: the one rule for
    /// the `!` mark, the gap analysis and the model's share figures.
    pub fn far_from_model(&self) -> bool {
        self.efficiency().is_some_and(far)
    }

    /// A parameter as text (a string without its quotes), empty when the measurement has none.
    pub fn param_text(&self, key: &str) -> String {
        match self.params.get(key) {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => String::new(),
        }
    }

    /// The parameters as one string that is equal exactly when they are (a key to group by).
    pub fn params_key(&self) -> String {
        serde_json::Value::Object(self.params.clone()).to_string()
    }

    /// Whether a difference is no measurable difference: its CI95 includes zero, lies within
    /// [`NIL_DIFFERENCE_NS`] of it (a time: rounding, not a cost either way), or is a cost at
    /// most zero from too few samples for an interval. A relative change (a reduction) below
    /// zero is a loss, never hidden as no difference: with too few samples it is shown as read.
    pub fn difference_spans_zero(&self) -> bool {
        let time = matches!(self.unit, Unit::Ns);
        let cost = matches!(self.unit, Unit::Ns | Unit::Cycles);
        self.difference
            && self.summary.as_ref().is_some_and(|s| {
                (s.ci_low <= 0.0 && s.ci_high >= 0.0)
                    || (time && s.ci_low.abs().max(s.ci_high.abs()) < NIL_DIFFERENCE_NS)
                    || (cost && s.n < crate::stats::MIN_FOR_INTERVAL && s.median <= 0.0)
            })
    }

    /// Parameters as a short `k=v k=v` string for reading (sizes in KiB, MiB, ...), then what
    /// was found while measuring in brackets: `size=8 MiB [pages=4k]` (the other work beside
    /// it left out: a status says when it mattered).
    pub fn params_text(&self) -> String {
        let params = readable_pairs(self.params.iter());
        let found: Vec<(&String, &Value)> = self
            .context
            .iter()
            .filter(|(k, _)| k.as_str() != OTHER_WORK)
            .collect();
        if found.is_empty() {
            params
        } else {
            format!("{params} [{}]", readable_pairs(found.into_iter()))
                .trim_start()
                .to_string()
        }
    }

    /// The other work beside it as it was measured, in cpus ([`OTHER_WORK`]); None when not
    /// recorded (an older run, a measurement the runner did not time).
    pub fn other_work(&self) -> Option<f64> {
        self.context.get(OTHER_WORK)?.as_f64()
    }
}

/// The context key of the other work beside a measurement as it was measured, in cpus: what it
/// kept busy plus the share of the time a task waited for a cpu (one cpu hog beside a one-thread
/// probe on two cpus reads about 1, two hogs about 2.3).
pub const OTHER_WORK: &str = "other_work_cpus";

/// The context key of a new process's parent's resident size, found while creating it: fork copies
/// the parent's page tables, so a creation figure means little without it.
pub const PARENT_RESIDENT: &str = "parent_resident_bytes";
/// The context key of that parent's mappings (VMAs), each of which fork duplicates.
pub const PARENT_VMAS: &str = "parent_vmas";
/// The context key of the parent's resident bytes in mappings with anonymous memory: the pages
/// whose page-table entries fork copies.
pub const PARENT_COPIED: &str = "parent_copied_bytes";

/// The context key of the disk a file fault reads from ("vda", "nvme0n1").
pub const DEVICE: &str = "device";
/// The context key of its kind: nvme, ssd, hdd, virtio, xen, mmc, zram or other.
pub const DEVICE_CLASS: &str = "device_class";

/// Parameters whose numbers are sizes in bytes, besides every `..._bytes` one.
const BYTE_PARAMS: &[&str] = &["size", "stride", "bytes"];

/// `k=v k=v` for reading: sizes in bytes as KiB, MiB, ... (not exact: never for matching).
pub fn readable_pairs<'a>(pairs: impl Iterator<Item = (&'a String, &'a Value)>) -> String {
    pairs
        .map(|(k, v)| match (v, v.as_u64()) {
            (_, Some(n)) if BYTE_PARAMS.contains(&k.as_str()) || k.ends_with("_bytes") => {
                format!("{k}={}", crate::units::bytes(n))
            }
            (Value::String(s), _) => format!("{k}={s}"),
            (other, _) => format!("{k}={other}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `k=v k=v` exactly, strings without their quotes.
pub fn pairs_text<'a>(pairs: impl Iterator<Item = (&'a String, &'a Value)>) -> String {
    pairs
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// What a timeline event is. Stored and exported by name; a name this oslab does not know (a
/// document from a newer one) is kept as it is.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum EventKind {
    /// A busy loop ran.
    Active,
    /// It did not (the OS or the hypervisor took the cpu).
    Inactive,
    /// Something ran for a span: a process's time slice, a job from its start to its end.
    Running,
    /// A job's processor allocation changed.
    Alloc,
    /// A job's thread held a cpu (args: job, slot, cpu).
    Run,
    /// One interval of the lock-wait monitor.
    Interval,
    /// Threads were regrouped.
    Shuffle,
    /// A regrouping decided but not applied (monitor only).
    Decision,
    /// A kind from elsewhere.
    Other(String),
}

impl EventKind {
    const NAMED: [(EventKind, &'static str); 8] = [
        (EventKind::Active, "active"),
        (EventKind::Inactive, "inactive"),
        (EventKind::Running, "running"),
        (EventKind::Alloc, "alloc"),
        (EventKind::Run, "run"),
        (EventKind::Interval, "interval"),
        (EventKind::Shuffle, "shuffle"),
        (EventKind::Decision, "decision (monitor only)"),
    ];

    /// Its name.
    pub fn name(&self) -> &str {
        match self {
            EventKind::Other(s) => s,
            k => Self::NAMED
                .iter()
                .find(|(n, _)| n == k)
                .map_or("other", |(_, s)| s),
        }
    }
}

impl From<String> for EventKind {
    fn from(s: String) -> EventKind {
        Self::NAMED
            .iter()
            .find(|(_, n)| *n == s)
            .map_or(EventKind::Other(s), |(k, _)| k.clone())
    }
}

impl From<&str> for EventKind {
    fn from(s: &str) -> EventKind {
        EventKind::from(s.to_string())
    }
}

impl From<EventKind> for String {
    fn from(k: EventKind) -> String {
        k.name().to_string()
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One span on a timeline: a period a task was active or inactive, a process holding a CPU, a
/// decision. Times are ns from the start of the recording (TSC-derived where the TSC is used).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelineEvent {
    /// The row it belongs to, e.g. "cpu 1" or "pid 4242".
    pub track: String,
    /// What it is.
    pub kind: EventKind,
    /// Start, ns from the recording's origin.
    pub start_ns: f64,
    /// Duration in ns (0 for an instant).
    pub dur_ns: f64,
    /// Anything else worth keeping (sizes, ids, reasons).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub args: Map<String, Value>,
}

/// How a measurement's spread is judged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Judge {
    /// Noisy when the spread is too wide for the median ([`NoiseRule`]).
    Median,
    /// Noisy when the spread is too wide for this scale (a difference that may truly be zero is
    /// judged against the cost it is a part of).
    Scale(f64),
    /// The spread is the result, not noise around one value: a distribution of periods, per-job
    /// values, paired differences that carry their own interval.
    Subject,
}

/// How far from its prediction (measured / predicted, either way) a result is called far.
pub const FAR_FACTOR: f64 = 2.0;

/// Raw samples kept per measurement (evenly thinned beyond this).
pub const MAX_STORED_SAMPLES: usize = 5000;

/// The one way from samples to a measurement: summary, status as `judge` says (noisy with the
/// reason in the note), and the samples (thinned to [`MAX_STORED_SAMPLES`]). No valid samples
/// give a failed measurement.
pub fn judged(
    probe: &str,
    params: Map<String, Value>,
    metric: &str,
    unit: Unit,
    samples: &[f64],
    note: Option<String>,
    judge: Judge,
) -> Measurement {
    let summary = Summary::new(samples);
    let mut note = note;
    let noise = |s: &Summary, scale: f64| noise_reason(s, NoiseRule::default(), scale);
    let status = match (&summary, judge) {
        (None, _) => Status::Failed("no valid samples".into()),
        (Some(_), Judge::Subject) => Status::Ok,
        (Some(s), Judge::Median) | (Some(s), Judge::Scale(_)) => {
            let scale = match judge {
                Judge::Scale(x) => x,
                _ => s.median.abs(),
            };
            match noise(s, scale) {
                Some(why) => {
                    note = Some(match note {
                        Some(n) => format!("{n}; noisy: {why}"),
                        None => format!("noisy: {why}"),
                    });
                    Status::Noisy(match s.n < crate::stats::MIN_FOR_INTERVAL {
                        true => Cause::FewSamples,
                        false => Cause::Spread,
                    })
                }
                None => Status::Ok,
            }
        }
    };
    let mut kept = samples.to_vec();
    if kept.len() > MAX_STORED_SAMPLES {
        let step = kept.len() as f64 / MAX_STORED_SAMPLES as f64;
        kept = (0..MAX_STORED_SAMPLES)
            .map(|i| samples[(i as f64 * step) as usize])
            .collect();
    }
    let mut m = Measurement::not_taken(probe, params, metric, unit, status);
    m.summary = summary;
    m.note = note;
    m.samples = Some(kept);
    m
}

/// Builds a JSON parameter map: `params!{"cpu" => 0, "cache" => "hot"}`.
#[macro_export]
macro_rules! params {
    () => { ::serde_json::Map::new() };
    ($($k:expr => $v:expr),+ $(,)?) => {{
        let mut m = ::serde_json::Map::new();
        $( m.insert($k.to_string(), ::serde_json::json!($v)); )+
        m
    }};
}

/// `first`, then `rest` when there is one, separated by "; ".
pub fn join_notes(first: String, rest: Option<String>) -> String {
    match rest {
        Some(r) if !r.is_empty() => format!("{first}; {r}"),
        _ => first,
    }
}

/// A figure of `v` ns (five samples within 1% of it), for the tests of what reads figures.
#[cfg(test)]
pub(crate) fn measured(
    probe: &str,
    metric: &str,
    params: Map<String, Value>,
    v: f64,
) -> Measurement {
    let mut m = Measurement::not_taken(probe, params, metric, Unit::Ns, Status::Ok);
    m.summary = Summary::new(&[v * 0.99, v, v * 1.01, v, v]);
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(unit: Unit, samples: &[f64], difference: bool) -> Measurement {
        let mut m = judged("p", Map::new(), "m", unit, samples, None, Judge::Median);
        m.difference = difference;
        m.check_possible();
        m
    }

    /// Random sample sets of every awkward kind, through the one judgement and the contract.
    #[test]
    fn a_paired_cost_within_noise_of_zero_is_stored_as_no_cost_with_its_bound() {
        let samples = [-80.0, -60.0, 30.0, -70.0, 20.0, -90.0, 40.0, -50.0, 10.0];
        let mut m = judged(
            "p",
            Map::new(),
            "m",
            Unit::Ns,
            &samples,
            None,
            Judge::Subject,
        );
        m.difference = true;
        m.check_possible();
        let s = m.summary.as_ref().unwrap();
        assert!(m.status.has_value(), "{m:?}");
        assert_eq!((s.median, s.ci_low, s.min), (0.0, 0.0, 0.0), "{s:?}");
        assert!(s.ci_high > 0.0 && s.max == 40.0, "{s:?}");
        assert!(
            m.note.as_deref().unwrap().starts_with("no measurable cost"),
            "{m:?}"
        );
        assert!(m.difference_spans_zero());
        // Checked again (as `show` does): unchanged, not failed as a zero time.
        let again = m.clone();
        m.check_possible();
        assert_eq!((m.status, m.note), (again.status, again.note));
    }

    #[test]
    fn every_result_keeps_the_contract_whatever_its_samples() {
        let mut rng = crate::stats::SplitMix64(7);
        let mut uniform = || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        for case in 0..2000 {
            let n = 1 + (uniform() * 60.0) as usize;
            let kind = case % 6;
            let samples: Vec<f64> = (0..n)
                .map(|i| match kind {
                    0 => 5.0,                                  // all equal
                    1 => 0.0,                                  // all zero
                    2 => -1.0 - uniform(),                     // negative
                    3 if i % 7 == 0 => f64::NAN,               // some not a number
                    4 => uniform() * 100.0 - 10.0,             // straddling zero
                    _ => 10.0 + uniform() * 10.0 * (i as f64), // drifting upwards
                })
                .collect();
            for unit in [Unit::Ns, Unit::GBps, Unit::Count, Unit::Ratio] {
                for difference in [false, true] {
                    let m = checked(unit, &samples, difference);
                    let Some(s) = m.summary.as_ref().filter(|_| m.status.has_value()) else {
                        continue;
                    };
                    let said = format!("{kind} {unit:?} {difference} {samples:?}: {m:?}");
                    assert!(s.median.is_finite(), "{said}");
                    assert!(s.ci_low <= s.median && s.median <= s.ci_high, "{said}");
                    if s.n < crate::stats::MIN_FOR_INTERVAL {
                        assert!(m.status.is_noisy(), "{said}");
                    }
                    if m.is_timing() && !difference {
                        assert!(s.median > 0.0, "{said}");
                    }
                    if unit == Unit::Ns && difference {
                        assert!(
                            s.ci_high >= 0.0 || m.difference_spans_zero(),
                            "a negative cost: {said}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn impossible_values_fail_with_a_reason_and_differences_may_be_zero() {
        let negative = checked(Unit::Ns, &[-3.0; 20], false);
        assert!(matches!(&negative.status, Status::Failed(w) if w.contains("negative")));
        let zero = checked(Unit::GBps, &[0.0; 20], false);
        assert!(matches!(&zero.status, Status::Failed(w) if w.contains("zero")));
        let cost: Vec<f64> = (0..20).map(|i| -0.2 - 0.001 * f64::from(i)).collect();
        let negative_cost = checked(Unit::Ns, &cost, true);
        assert!(matches!(&negative_cost.status, Status::Failed(w) if w.contains("negative cost")));
        let around_zero: Vec<f64> = (0..40).map(|i| f64::from(i % 5) - 2.0).collect();
        let nothing = checked(Unit::Ns, &around_zero, true);
        assert!(nothing.status.has_value() && nothing.difference_spans_zero());
        // A rounding-level difference below zero is ≈ 0, not an impossible negative cost.
        let rounding: Vec<f64> = (0..20).map(|i| -0.0004 - 0.00001 * f64::from(i)).collect();
        let rounding = checked(Unit::Ns, &rounding, true);
        assert!(
            rounding.status.has_value() && rounding.difference_spans_zero(),
            "{:?}",
            rounding.status
        );
        // Three negative differences are no proof: too few for an interval.
        let few = checked(Unit::Ns, &[-0.3, -0.2, -0.25], true);
        assert!(
            few.status.is_noisy() && few.difference_spans_zero(),
            "{:?}",
            few.status
        );
        // Checked twice (a run when measured, then by `show`), a result is the same.
        let drifting: Vec<f64> = (0..40)
            .map(|i| {
                if i < 14 {
                    -5.0
                } else {
                    1.0 + f64::from(i) / 100.0
                }
            })
            .collect();
        let mut once = checked(Unit::Ns, &drifting, false);
        assert_eq!(once.status, Status::Noisy(Cause::BelowZero));
        let again = once.clone();
        once.check_possible();
        assert_eq!(once, again);
        // A reduction below zero (a slowdown) is a result, not an impossibility.
        assert_eq!(checked(Unit::Ratio, &[-0.2; 20], true).status, Status::Ok);
        assert_eq!(checked(Unit::Count, &[0.0; 20], false).status, Status::Ok);
    }

    #[test]
    fn far_from_the_model_is_one_rule_either_way() {
        let at = |ratio: f64| {
            let mut m = checked(Unit::Ns, &[ratio; 20], false);
            m.prediction = Some(Prediction::new(1.0, "x", Map::new()));
            m.far_from_model()
        };
        assert!(!at(1.98) && !at(0.51) && !at(1.0));
        assert!(at(2.01) && at(0.49) && at(14.0));
    }

    #[test]
    fn a_timing_from_an_emulated_cpu_is_never_ok_and_says_why() {
        let mut time = Measurement::not_taken("p", Map::new(), "t", Unit::Ns, Status::Ok);
        let mut count = Measurement::not_taken("p", Map::new(), "c", Unit::Count, Status::Ok);
        time.mark_emulated();
        count.mark_emulated();
        assert_eq!(time.status, Status::Noisy(Cause::Emulated));
        assert!(time
            .note
            .unwrap()
            .starts_with("emulated CPU: timings mean nothing"));
        assert_eq!(count.status, Status::Ok);
        assert_eq!(count.note, None);
    }

    #[test]
    fn a_probe_note_goes_before_the_harness_note() {
        let mut m = Measurement::not_taken("p", params! {}, "m", Unit::Ns, Status::Ok);
        m.note_before("harness");
        m.note_before("probe");
        assert_eq!(m.note.as_deref(), Some("probe; harness"));
        assert_eq!(join_notes("a".into(), Some(String::new())), "a");
    }

    #[test]
    fn status_round_trips_through_text() {
        for s in [
            Status::Ok,
            Status::Noisy(Cause::Spread),
            Status::Noisy(Cause::Unknown),
            Status::Skipped("needs 2 cpus".into()),
            Status::Failed("EPERM: no".into()),
        ] {
            assert_eq!(Status::parse(&s.to_string()), s);
            // JSON: {"status": "noisy", "reason": "spread"}; an older file without a reason reads.
            let json = serde_json::to_value(StatusRecord::from(s.clone())).unwrap();
            let back: StatusRecord = serde_json::from_value(json).unwrap();
            assert_eq!(Status::from(back), s);
        }
        let old: StatusRecord = serde_json::from_str(r#"{"status": "noisy"}"#).unwrap();
        assert_eq!(Status::from(old), Status::Noisy(Cause::Unknown));
    }

    #[test]
    fn unit_names_round_trip() {
        for u in [
            Unit::Ns,
            Unit::Cycles,
            Unit::GBps,
            Unit::Bytes,
            Unit::Count,
            Unit::Ratio,
        ] {
            assert_eq!(Unit::from_name(&u.name()), Some(u));
        }
        assert_eq!(Unit::GBps.name(), "gbps");
    }

    #[test]
    fn params_render_compactly() {
        let mut m = Measurement::not_taken(
            "x",
            params! {"args" => 3, "cache" => "cold"},
            "per_call",
            Unit::Ns,
            Status::Ok,
        );
        assert_eq!(m.params_text(), "args=3 cache=cold");
        let sized = m.clone().found("claimed_bytes", 1572864);
        assert_eq!(
            sized.params_text(),
            "args=3 cache=cold [claimed_bytes=1.50 MiB]"
        );
        m.params.clear();
        assert_eq!(m.params_text(), "");
    }
}
