//! Comparing runs measurement by measurement, in the manner of Go's benchstat. The unit of
//! replication is an independent repetition of a probe (`oslab run --repeat N`, or several runs
//! taken together as one side), never the samples of one burst: those share the burst's
//! conditions, and tested as if independent they make any drift between two runs look
//! significant.
//!
//! A side of one run has its repetitions as replicates: they show the noise within a run, not
//! how far the machine drifts between runs (on a shared host, far). A side of several runs has one
//! replicate per run (the median of its repetitions), so that drift is in the comparison; runs
//! taken alternately (A B A B A B) and compared as groups are the way to compare on a noisy host.
//!
//! A side of one run has its band widened, besides, by how far two runs of the same machine
//! drift apart when nothing changed ([`Drift`], learnt from earlier runs). Where the history
//! does not show that drift (fewer than 3 earlier runs with the measurement), a single run is
//! not judged: its repetitions alone called back-to-back identical runs different on a shared
//! host (in 3 of 20 pairs, a whole probe's rows at once, 13-49% apart). The core clock each side
//! measured ([`core_clock`]) is reported beside the verdicts, not folded into them: a clock that
//! differs may be the host's noise, or the very thing compared (turbo off, another machine).
//!
//! For each measurement: the median of each side's replicates, their ratio, the Hodges-Lehmann
//! interval of the ratio (at the highest of [`CONFIDENCES`] reached, on logarithms), the Mann-Whitney p of the
//! replicates, and a verdict. A regression or an improvement is called only when the whole
//! interval lies beyond the band: the threshold, widened to the spread of either side's own
//! repetitions (a change smaller than the noise between repetitions is not called). With fewer
//! than 3 repetitions a side no interval reaches the confidence: the ratio is shown, unjudged.
//! Placement parameters (which cpu) are left out of the match, so runs from different machines
//! or cpus line up. A repetition whose samples were all taken on a slowed core
//! ([`Measurement::slowed_core`]) is not a replicate: it says how busy the host was; unless,
//! without such repetitions, a side has too few to judge: then both sides keep theirs, and a
//! slowed core counts as other work beside them ([`Verdict::LoadMoved`] where it moved).

use crate::beyond_cache::{reaches, working_set, Reach};
use crate::model::{pairs_text, readable_pairs, Measurement, Unit};
use crate::stats::ranks::{mann_whitney_p, shift_interval};
use crate::stats::{mean_sd, median, robust_z, student_t, TwoSided, OUTLIER_Z};
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// Parameters that say where a measurement ran, not what it measured.
const PLACEMENT: &[&str] = &["cpu", "cpus", "peer_cpu", "from", "to", "temp_dir"];

/// Found while measuring, not asked for: parameters in runs stored before oslab kept them apart
/// (`Measurement::context`); left out of the match so those runs still compare.
const FOUND: &[&str] = &["pages", "claimed_bytes", "placed"];

/// The relative change that counts unless the user says otherwise: 5%.
pub const DEFAULT_THRESHOLD: f64 = 0.05;

/// Confidences of the ratio's interval, the highest the replicates reach: 99% from 5 a side, 95%
/// from 4, 90% from 3 (the whole range of their 9 ratios; 95% on each side). The more rows a
/// comparison has, the more a higher confidence spares it false alarms.
pub const CONFIDENCES: [f64; 3] = [0.99, 0.95, 0.90];

/// What changed for one measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Better beyond the band, with the confidence.
    Better,
    /// Worse beyond the band, with the confidence.
    Regression,
    /// Different beyond the band with the confidence, in a unit without a better direction (a
    /// count, a ratio), or a difference whose shift excludes zero.
    Changed,
    /// No difference shown.
    Same,
    /// Too few repetitions to judge: the ratio alone.
    RatioOnly,
    /// Beyond the band, but the working set lies where the cache that served the cpu moved
    /// between the sides ([`Row::cache_edge`]): the figure shows how much cache the cpu had,
    /// not what was compared.
    CacheMoved,
    /// Beyond the band, but other work competed for the cpus on one side's repetitions and
    /// not on the other's ([`Row::contended`]), or as much again on one side ([`Row::other_work`],
    /// [`LOAD_APART`]): the difference is the load's (identical runs, one beside two cpu hogs,
    /// once read 2-thread bandwidth 3-8x "better"; one hog, then two, same-cpu switches +15% to
    /// +81%).
    LoadMoved,
    /// Beyond the band, on a row whose work crosses cpus ([`crosses_cpus`]), where the two
    /// cpus sat differently on the host between the sides ([`placement_moved`]): core-to-core
    /// latency read 100 ns on one side and 32.9 ns on the other of identical runs, `better`.
    PlacementMoved,
    /// No difference shown, but the band or the interval reaches beyond [`BLIND_BAND`]
    /// ([`Judgement::unseen`]): a change of the size asked for could not have been seen (171 of 353 rows once read `same` with bands over
    /// ±25%, 85 capped at ±99%).
    CannotTell,
    /// Cannot compare: missing on one side, or without a value there.
    Unknown,
}

impl Verdict {
    /// Whether the row was judged changed (better, a regression, or changed): the answer a
    /// comparison leads with.
    pub fn is_change(self) -> bool {
        matches!(
            self,
            Verdict::Better | Verdict::Regression | Verdict::Changed
        )
    }
}

/// The widest band a verdict of no difference stands for: beyond it, a row cannot tell.
pub const BLIND_BAND: f64 = 0.25;

/// One row of a comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Probe id.
    pub probe: String,
    /// Parameters for reading (placement left out).
    pub params: String,
    /// Metric.
    pub metric: String,
    /// Unit.
    pub unit: Unit,
    /// Whether each side has the measurement at all (with or without a value).
    pub present: [bool; 2],
    /// The drift between runs that widened the band, when a side is one run: from earlier runs
    /// of this machine, or the other side's runs, or (neither showing it) the scatter of this
    /// comparison's rows.
    pub drift: Option<f64>,
    /// Where `drift` came from.
    pub drift_from: Option<DriftFrom>,
    /// Repetitions left out on each side for being measured on a slowed core.
    pub slowed: [usize; 2],
    /// The working sets (bytes, low and high) between which the cache that served the cpu
    /// moved between the sides, when this row's lies there ([`moved_cache`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_edge: Option<[f64; 2]>,
    /// Repetitions measured while other work competed for the cpus (status `contention`), of
    /// those with a value, on each side.
    pub contended: [[usize; 2]; 2],
    /// The other work beside each side's repetitions, in cpus (the median of what they
    /// recorded, [`crate::model::OTHER_WORK`]); None for runs that did not record it.
    pub other_work: [Option<f64>; 2],
    /// What this row's measurements got that differs between the sides (pages thp 100% -> 4k):
    /// its verdict stands on its own evidence, and this says what moved with it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub got_moved: Vec<crate::conditions::Moved>,
    /// What each side's replicates are: its repetitions (pooled over its runs, fewer than 3),
    /// or one per run (3 runs or more).
    pub replicates: [Replicates; 2],
    /// The judgement.
    #[serde(flatten)]
    pub judgement: Judgement,
}

/// What a side's replicates are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Replicates {
    /// Its repetitions, pooled over its runs: a side of one or two runs, whose few runs cannot
    /// show the drift between runs (the band is widened by it, [`DriftFrom`]).
    Repetitions,
    /// The median of each run's repetitions: a side of 3 runs or more, the drift between runs
    /// in the replicates themselves.
    Runs,
}

/// Runs a side needs before each counts as one replicate (3 give the 90% interval).
pub const RUNS_AS_REPLICATES: usize = 3;

/// Replicates a side needs for an interval (the lowest of [`CONFIDENCES`]).
const JUDGED_FROM: usize = 3;

/// What showed how far a single run drifts from another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DriftFrom {
    /// Earlier runs of this machine in the store ([`Drift`]).
    History,
    /// The other side's several runs.
    OtherSide,
    /// How far this comparison's rows scatter about their common ratio ([`scatter`]).
    Rows,
    /// How far this machine's earlier runs drift on the measurements they show (the upper
    /// quartile of their drifts, [`Drift::typical`]): a focused run of a few rows the history
    /// lacks.
    Machine,
    /// Nothing showed it: [`ASSUMED_DRIFT`].
    Assumed,
}

/// Two sets of independent replicate values judged against each other.
#[derive(Debug, Clone, Serialize)]
pub struct Judgement {
    /// Median of the baseline's replicates.
    pub a: Option<f64>,
    /// Median of the other side's.
    pub b: Option<f64>,
    /// Replicates on each side.
    pub n: [usize; 2],
    /// Each side's spread as a share of its median (half the range of its replicates), from 3
    /// replicates on: what benchstat prints as `± x%`.
    pub spread: [Option<f64>; 2],
    /// b / a.
    pub ratio: Option<f64>,
    /// Interval of the ratio, when there are enough replicates.
    pub interval: Option<[f64; 2]>,
    /// Its confidence (one of [`CONFIDENCES`]).
    pub confidence: Option<f64>,
    /// The relative change that counts: the threshold, or the replicates' spread when larger.
    pub band: f64,
    /// Mann-Whitney p of the replicates.
    pub p: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
}

impl Judgement {
    /// How a verdict of no difference reads: "same" only when the interval lies within the band
    /// (the two are shown equal to within it); "~" when it reaches beyond (not told apart: a
    /// ratio of 1.5 with an interval of 0.7-1.6 is not "the same").
    pub fn no_difference_text(&self) -> &'static str {
        match self.interval {
            Some([lo, hi]) if lo >= 1.0 - self.band && hi <= 1.0 + self.band => "same",
            _ => "~",
        }
    }

    /// A change found where the cache moved between the sides is the cache's
    /// ([`Verdict::CacheMoved`]); no difference stays one.
    fn at_cache_edge(self, edge: bool) -> Judgement {
        self.moved_by(edge, Verdict::CacheMoved)
    }

    /// A change found where the load moved between the sides is the load's
    /// ([`Verdict::LoadMoved`]).
    fn at_load_shift(self, shifted: bool) -> Judgement {
        self.moved_by(shifted, Verdict::LoadMoved)
    }

    /// A change found on a row crossing cpus that sat differently is the placement's
    /// ([`Verdict::PlacementMoved`]).
    fn at_placement_shift(self, shifted: bool) -> Judgement {
        self.moved_by(shifted, Verdict::PlacementMoved)
    }

    /// A change found when `moved` is `cause`'s, not what was compared.
    fn moved_by(self, moved: bool, cause: Verdict) -> Judgement {
        match moved && self.verdict.is_change() {
            true => Judgement {
                verdict: cause,
                ..self
            },
            false => self,
        }
    }

    /// The largest change that could have gone unseen: the band, or how far the interval
    /// reaches from no change when it reaches farther.
    pub fn unseen(&self) -> f64 {
        let [lo, hi] = self.interval.unwrap_or([1.0, 1.0]);
        self.band.max(hi - 1.0).max(1.0 - lo)
    }

    /// No difference under a band, or with an interval, reaching beyond [`BLIND_BAND`] is no
    /// verdict: it cannot tell (two runs a side whose runs drift 30% apart give an interval of
    /// -22..+30% around no change: not `same`). Nor is an interval wholly beyond `threshold`
    /// that a band widened by drift holds: a +14..+17% slowdown within history's ±19% is not
    /// `same`, it cannot be told from the drift.
    fn blind_if_wide(self, threshold: f64) -> Judgement {
        let beyond = self
            .interval
            .is_some_and(|[lo, hi]| lo > 1.0 + threshold || hi < 1.0 - threshold);
        match self.verdict == Verdict::Same && (self.unseen() > BLIND_BAND || beyond) {
            true => Judgement {
                verdict: Verdict::CannotTell,
                ..self
            },
            false => self,
        }
    }
}

/// The shift interval of `y` over `x` at the highest of [`CONFIDENCES`] their numbers reach:
/// (confidence, low, high).
fn shift_at_best(x: &[f64], y: &[f64]) -> Option<(f64, f64, f64)> {
    CONFIDENCES
        .iter()
        .find_map(|&c| shift_interval(x, y, c).map(|(_, lo, hi)| (c, lo, hi)))
}

/// Judges replicates `b` against the baseline `a`: a change counts when the ratio's interval lies
/// wholly outside [1 - band, 1 + band]. Better and worse follow the unit (lower times, higher
/// bandwidth); other units only change. Values that may be zero or below are judged as shifts
/// ([`judge_shift`]), with the ratio of the medians shown when it has one.
pub fn judge(a: &[f64], b: &[f64], unit: Unit, band: f64) -> Judgement {
    let (ma, mb) = (median(a), median(b));
    let ratio = match (ma, mb) {
        (Some(x), Some(y)) if x > 0.0 && y >= 0.0 => Some(y / x),
        _ => None,
    };
    let positive = |v: &[f64]| v.iter().all(|x| *x > 0.0 && x.is_finite());
    if !positive(a) || !positive(b) {
        return Judgement {
            ratio,
            ..judge_shift(a, b, band)
        };
    }
    let logs = |v: &[f64]| v.iter().map(|x| x.ln()).collect::<Vec<_>>();
    let found = shift_at_best(&logs(a), &logs(b));
    let interval = found.map(|(_, lo, hi)| [lo.exp(), hi.exp()]);
    let verdict = match interval {
        _ if ma.is_none() || mb.is_none() => Verdict::Unknown,
        None => Verdict::RatioOnly,
        Some([lo, hi]) => {
            let lower_is_better = match unit {
                Unit::Ns | Unit::Cycles => Some(true),
                Unit::GBps => Some(false),
                _ => None,
            };
            let up = lo > 1.0 + band;
            let down = hi < 1.0 - band;
            // An interval that excludes 1 but stays within the band is no change: the band is
            // what the noise between runs allows (lfence-rdtsc 16.98 -> 16.99 ns was 'changed').
            match (up || down, lower_is_better) {
                (true, Some(lower)) if up == lower => Verdict::Regression,
                (true, Some(_)) => Verdict::Better,
                (true, None) => Verdict::Changed,
                (false, _) => Verdict::Same,
            }
        }
    };
    Judgement {
        a: ma,
        b: mb,
        n: [a.len(), b.len()],
        spread: [relative_spread(a), relative_spread(b)],
        ratio,
        interval,
        confidence: found.map(|(c, _, _)| c),
        band,
        p: mann_whitney_p(a, b),
        verdict,
    }
}

/// Half the range of `v` over its median's size, from [`super::MIN_FOR_SHOWN_INTERVAL`] values on
/// (fewer have no spread worth a number).
fn relative_spread(v: &[f64]) -> Option<f64> {
    if v.len() < super::MIN_FOR_SHOWN_INTERVAL {
        return None;
    }
    let m = median(v)?.abs();
    let (lo, hi) = v
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), x| {
            (l.min(*x), h.max(*x))
        });
    (m > 0.0).then(|| (hi - lo) / 2.0 / m)
}

/// Judges values that may truly be zero or below (paired differences such as the cost of one
/// more argument, counts): a shift is a change when its interval lies wholly beyond the band
/// taken of the larger median's size, never better or worse, and there is no ratio (two
/// differences near zero have any ratio at all). The band holds as it does for ratios: a
/// migration's cost read 321 and 351 ns in identical runs, a shift of 9% that excluded zero
/// and was called a change in every pair.
pub fn judge_shift(a: &[f64], b: &[f64], band: f64) -> Judgement {
    let (ma, mb) = (median(a), median(b));
    let found = shift_at_best(a, b);
    let allowed = band * ma.unwrap_or(0.0).abs().max(mb.unwrap_or(0.0).abs());
    let verdict = match found {
        _ if ma.is_none() || mb.is_none() => Verdict::Unknown,
        None => Verdict::RatioOnly,
        Some((_, lo, hi)) if lo > allowed || hi < -allowed => Verdict::Changed,
        Some(_) => Verdict::Same,
    };
    Judgement {
        a: ma,
        b: mb,
        n: [a.len(), b.len()],
        spread: [relative_spread(a), relative_spread(b)],
        ratio: None,
        interval: None,
        confidence: found.map(|(c, _, _)| c),
        band,
        p: mann_whitney_p(a, b),
        verdict,
    }
}

/// The parameters that identify a measurement across runs: placement and values found while
/// measuring left out.
fn identifying(m: &Measurement) -> serde_json::Map<String, serde_json::Value> {
    let mut params = m.params.clone();
    for k in PLACEMENT.iter().chain(FOUND) {
        params.remove(*k);
    }
    params
}

/// What lines a measurement up with its counterpart: probe, identifying parameters (exactly),
/// metric.
pub fn key(m: &Measurement) -> (String, String, String) {
    let params = identifying(m);
    (m.probe.clone(), pairs_text(params.iter()), m.metric.clone())
}

/// Relative spread of replicates: (max - min) / median; 0 with fewer than two.
fn spread(v: &[f64]) -> f64 {
    let (lo, hi) = v
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), x| {
            (l.min(*x), h.max(*x))
        });
    match median(v) {
        Some(m) if v.len() >= 2 && m > 0.0 => (hi - lo) / m,
        _ => 0.0,
    }
}

/// What lines measurements up.
type Key = (String, String, String);

/// One repetition's value and what it was measured beside.
#[derive(Debug, Clone, Copy)]
struct Rep {
    value: f64,
    /// Its samples were taken on a slowed core ([`Measurement::slowed_core`]).
    slowed: bool,
    /// Other work competed for the cpus (status `contention`).
    contended: bool,
    /// How much other work there was, in cpus, where recorded.
    other_work: Option<f64>,
}

/// The values of some runs: per key (in order of first appearance), per run, its repetitions
/// (the first value of each repetition; none when the measurement has no value).
struct PerRun {
    /// Keys with their unit, their parameters for reading and whether they are differences.
    order: Vec<(Key, Unit, String, bool)>,
    reps: HashMap<Key, Vec<Vec<Rep>>>,
    /// The working set of each key that has one (bytes).
    sets: HashMap<Key, f64>,
    /// What each key's measurements got ([`crate::conditions::GOT`]: the pages the kernel gave,
    /// where memory was placed), every value its repetitions found.
    got: HashMap<Key, Vec<crate::conditions::Setting>>,
}

impl PerRun {
    fn of(runs: &[&[Measurement]]) -> PerRun {
        let mut order = Vec::new();
        let mut reps: HashMap<Key, Vec<Vec<Rep>>> = HashMap::new();
        let mut sets = HashMap::new();
        let mut got: HashMap<Key, Vec<crate::conditions::Setting>> = HashMap::new();
        for (run_no, run) in runs.iter().enumerate() {
            let mut seen = HashSet::new();
            for m in run.iter() {
                let k = key(m);
                if !seen.insert((k.clone(), m.repetition)) {
                    continue;
                }
                if let Some(set) = working_set(m) {
                    sets.insert(k.clone(), set);
                }
                got.entry(k.clone())
                    .or_default()
                    .extend(crate::conditions::got(m));
                let v = reps.entry(k.clone()).or_insert_with(|| {
                    order.push((
                        k,
                        m.unit,
                        readable_pairs(identifying(m).iter()),
                        m.difference,
                    ));
                    Vec::new()
                });
                v.resize(runs.len(), Vec::new());
                if let Some(s) = m.summary.as_ref().filter(|_| m.status.has_value()) {
                    v[run_no].push(Rep {
                        value: s.median,
                        slowed: m.slowed_core(),
                        contended: m.status.is_contended(),
                        other_work: m.other_work(),
                    });
                }
            }
        }
        PerRun {
            order,
            reps,
            sets,
            got,
        }
    }

    /// Each run's values of `k` (empty for a run without one): those measured on a slowed core
    /// too when `slowed_too`.
    fn values(&self, k: &Key, slowed_too: bool) -> Vec<Vec<f64>> {
        self.reps
            .get(k)
            .map(|runs| {
                runs.iter()
                    .map(|r| {
                        r.iter()
                            .filter(|x| slowed_too || !x.slowed)
                            .map(|x| x.value)
                            .collect()
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The median of each run's repetitions of `k` measured at full speed, for the runs with
    /// one.
    fn run_medians(&self, k: &Key) -> Vec<f64> {
        self.values(k, false)
            .iter()
            .filter_map(|r| median(r))
            .collect()
    }

    /// The replicates of `k` and what they are: one value per run (the median of its
    /// repetitions) from [`RUNS_AS_REPLICATES`] runs with a value, else every repetition of the
    /// runs that have one, pooled (two runs of 3 repetitions each judged nothing as 2 per-run
    /// medians).
    fn replicates(&self, k: &Key, slowed_too: bool) -> (Vec<f64>, Replicates) {
        let runs: Vec<Vec<f64>> = self
            .values(k, slowed_too)
            .into_iter()
            .filter(|r| !r.is_empty())
            .collect();
        match runs.len() >= RUNS_AS_REPLICATES {
            true => (
                runs.iter().filter_map(|v| median(v)).collect(),
                Replicates::Runs,
            ),
            false => (runs.concat(), Replicates::Repetitions),
        }
    }

    /// How far `k`'s repetitions spread within a run: the largest [`spread`] of one run's. The
    /// drift between runs is the band's other part, so two runs a side are not judged by it
    /// twice (their pooled range held both, and 153 of 290 rows of identical runs could not
    /// tell).
    fn spread_within(&self, k: &Key, slowed_too: bool) -> f64 {
        self.values(k, slowed_too)
            .iter()
            .map(|r| spread(r))
            .fold(0.0, f64::max)
    }

    /// Repetitions of `k` measured on a slowed core.
    fn slowed(&self, k: &Key) -> usize {
        self.reps
            .get(k)
            .map_or(0, |runs| runs.iter().flatten().filter(|x| x.slowed).count())
    }

    /// Repetitions of `k` with a value, and those of them beside other work: other work
    /// measured, or (when they are replicates, `slowed_too`) a slowed core.
    fn contended(&self, k: &Key, slowed_too: bool) -> [usize; 2] {
        let all: Vec<&Rep> = self.reps.get(k).map_or(Vec::new(), |runs| {
            runs.iter()
                .flatten()
                .filter(|x| slowed_too || !x.slowed)
                .collect()
        });
        let beside = all
            .iter()
            .filter(|x| x.contended || (slowed_too && x.slowed))
            .count();
        [all.len(), beside]
    }

    /// Repetitions with a value, and those beside other work, over every row whose work stays
    /// on one cpu (not in `crossing`): how busy the side's cpus were.
    fn busy(&self, crossing: &HashSet<Key>) -> [usize; 2] {
        self.reps
            .iter()
            .filter(|(k, _)| !crossing.contains(*k))
            .flat_map(|(_, runs)| runs.iter().flatten())
            .fold([0, 0], |[n, c], x| [n + 1, c + usize::from(x.contended)])
    }

    /// The median other work beside `k`'s repetitions (every one, `k` None), in cpus; None
    /// when none recorded it.
    fn other_work(&self, k: Option<&Key>, crossing: &HashSet<Key>) -> Option<f64> {
        let seen: Vec<f64> = self
            .reps
            .iter()
            .filter(|(key, _)| k.map_or(!crossing.contains(*key), |k| k == *key))
            .flat_map(|(_, runs)| runs.iter().flatten())
            .filter_map(|x| x.other_work)
            .collect();
        median(&seen)
    }

    /// The values of `k`'s repetitions measured with no other work competing, at full speed.
    fn calm(&self, k: &Key) -> Vec<f64> {
        self.reps.get(k).map_or(Vec::new(), |runs| {
            runs.iter()
                .flatten()
                .filter(|x| !x.contended && !x.slowed)
                .map(|x| x.value)
                .collect()
        })
    }
}

/// Where the cache that served the cpu moved between the sides: the working sets from the
/// smallest size any repetition's latency curve still showed cached to the largest at which
/// one first read memory, when the sides' curves put that edge at different sizes (their
/// medians differ). On a host whose last-level cache other guests share, identical runs moved it
/// between 4 and 24 MiB: random latency at 12 MiB read 37 ns in one and 103 ns in the next, and
/// about 2% of the rows of two identical runs were called changed for it. None when either side
/// has no curve that reached memory.
pub fn moved_cache(a: &[&[Measurement]], b: &[&[Measurement]]) -> Option<[f64; 2]> {
    let of_side = |runs: &[&[Measurement]]| -> Vec<Reach> {
        runs.iter()
            .flat_map(|run| reaches(run).into_iter().map(|(_, r)| r))
            .collect()
    };
    let (ra, rb) = (of_side(a), of_side(b));
    let middle = |rs: &[Reach], f: fn(&Reach) -> f64| median(&rs.iter().map(f).collect::<Vec<_>>());
    let edge = |r: &Reach| r.cached;
    let memory = |r: &Reach| r.memory;
    let moved =
        middle(&ra, edge)? != middle(&rb, edge)? || middle(&ra, memory)? != middle(&rb, memory)?;
    let all = || ra.iter().chain(&rb);
    moved.then(|| {
        [
            all().map(edge).fold(f64::INFINITY, f64::min),
            all().map(memory).fold(f64::NEG_INFINITY, f64::max),
        ]
    })
}

/// How far two runs of one machine drift apart when nothing changed, learnt from earlier runs:
/// per measurement, the relative change that the ratio of two new runs stays within with 99%
/// probability ([`apart`]). It widens the band of a side that is a single run, whose
/// repetitions cannot show the drift between runs.
///
/// The default is no history at all (`--no-history`): single runs are judged by their
/// repetitions alone. Learnt from a history, a single run whose measurement neither the history
/// nor the other side shows in enough runs is not judged: nothing says how far it drifts.
#[derive(Debug, Default)]
pub struct Drift {
    /// Per measurement, the median of each earlier run that has it.
    per_key: HashMap<Key, Vec<f64>>,
    /// How many runs it was learnt from.
    pub runs: usize,
    /// Learnt from a history (a single run is judged only where the drift is known).
    pub learnt: bool,
}

/// Runs a measurement needs before its drift is trusted.
const DRIFT_MIN_RUNS: usize = 3;

/// The relative change within which two new runs fall with 99% probability, from the medians
/// of earlier runs: a prediction interval from their spread on logarithms (the difference of
/// two runs has twice one run's variance), with Student's t for how few runs there are (3 runs
/// give a band 3.5 times as wide as 20 runs with the same spread). A run that stands far out (a
/// regressed build in the history) is left out, so that it does not hide the next one: far out
/// by robust z, and farther than that z puts a run when runs spread by the default threshold
/// (29%). On a row whose runs agree within 1%, a run 20% off is a state the host takes (another
/// guest, another clock), and the drift must keep it.
///
/// Several groups of runs, each of one setting (the history, each side's own runs), pool their
/// spreads, each about its own centre: a side's two runs show the drift as the history's do,
/// and add to how sure it is (3 earlier runs and two a side: t of 4 degrees of freedom, 4.6,
/// not 9.9). None with fewer than 2 degrees of freedom left (3 runs of one group).
fn apart(groups: &[&[f64]]) -> Option<f64> {
    let (mut squares, mut freedom) = (0.0, 0usize);
    for logs in groups.iter().map(|g| kept_logs(g)) {
        if logs.len() >= 2 {
            let (mean, _) = mean_sd(&logs);
            squares += logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>();
            freedom += logs.len() - 1;
        }
    }
    if freedom + 1 < DRIFT_MIN_RUNS {
        return None;
    }
    let sd = (squares / freedom as f64).sqrt();
    Some((student_t(freedom, TwoSided::P99) * std::f64::consts::SQRT_2 * sd).exp() - 1.0)
}

/// The logarithms of one group's run medians, a run far out left out ([`apart`]) where the
/// group has the [`DRIFT_MIN_RUNS`] that tell one out.
fn kept_logs(run_medians: &[f64]) -> Vec<f64> {
    let logs: Vec<f64> = run_medians
        .iter()
        .filter(|v| **v > 0.0 && v.is_finite())
        .map(|v| v.ln())
        .collect();
    let Some(centre) = median(&logs).filter(|_| logs.len() >= DRIFT_MIN_RUNS) else {
        return logs;
    };
    let least = OUTLIER_Z * (1.0 + DEFAULT_THRESHOLD).ln() / 0.6745;
    match robust_z(&logs) {
        Some(z) => logs
            .iter()
            .zip(z)
            .filter(|(l, z)| z.abs() <= OUTLIER_Z || (*l - centre).abs() <= least)
            .map(|(l, _)| *l)
            .collect(),
        None => logs,
    }
}

/// Rows a comparison needs before their scatter stands for the drift between two runs.
pub const SCATTER_MIN_ROWS: usize = 20;

/// The normal quantile the scatter's band reaches: 99% of rows of two identical runs fall within
/// it (2.576 robust standard deviations of their log ratios).
const SCATTER_Z: f64 = 2.576;

/// How far two single runs drift apart, read from the comparison itself when no earlier runs
/// show it: the robust spread (MAD) of the rows' log ratios about their median, taken to 99% of
/// rows. A change that moves a few rows stands out of it; one that moves every row alike (a
/// slower kernel) moves the median, not the spread, and is still called, since the band is
/// centred on 1. None with fewer than [`SCATTER_MIN_ROWS`] rows with a ratio.
pub fn scatter(ratios: &[f64]) -> Option<f64> {
    let (mad, n) = super::log_mad(ratios)?;
    (n >= SCATTER_MIN_ROWS).then(|| (SCATTER_Z * mad / 0.6745).exp() - 1.0)
}

impl Drift {
    /// Learns the drift from `runs` (earlier runs of the same machine and suite, none of them
    /// compared now: a regressed run among them would hide itself).
    pub fn from_runs(runs: &[&[Measurement]]) -> Drift {
        let per = PerRun::of(runs);
        let per_key = per
            .order
            .iter()
            .map(|(k, ..)| (k.clone(), per.run_medians(k)))
            .collect();
        Drift {
            per_key,
            runs: runs.len(),
            learnt: true,
        }
    }

    /// The drift of `k`, its history's runs pooled with `own` (each side's runs, when a side
    /// has several); None where the history has too few runs with it.
    fn of(&self, k: &Key, own: &[Vec<f64>]) -> Option<f64> {
        let history = self.per_key.get(k)?;
        if kept_logs(history).len() < DRIFT_MIN_RUNS {
            return None;
        }
        let groups: Vec<&[f64]> = std::iter::once(&history[..])
            .chain(own.iter().map(|o| &o[..]))
            .collect();
        apart(&groups)
    }

    /// How far this machine's runs typically drift, for a measurement the history lacks: the
    /// upper quartile of the drifts it shows (a quiet row drifts 1%, a bandwidth row 50%: the
    /// quartile leans to the wide side, where a false alarm costs more than a missed change).
    /// None without [`DRIFT_MIN_KNOWN`] measurements known: then [`ASSUMED_DRIFT`] stands in.
    pub fn typical(&self) -> Option<f64> {
        let mut all: Vec<f64> = self
            .per_key
            .keys()
            .filter_map(|k| self.of(k, &[]))
            .collect();
        if all.len() < DRIFT_MIN_KNOWN {
            return None;
        }
        all.sort_by(f64::total_cmp);
        Some(all[(all.len() * 3) / 4])
    }
}

/// Measurements a history must show the drift of before their typical drift stands for others.
pub const DRIFT_MIN_KNOWN: usize = 20;

/// The drift assumed for a single run's row when nothing in the store or the comparison shows
/// it (a focused run of a few probes in a new store): the upper quartile of the drifts that 4
/// identical runs showed on 2-vCPU KVM guests, quiet and beside a load, 18-24% (the
/// scripts/false-alarms stores of 2026-11-27), rounded up. Only a change beyond it is called (THP
/// off: `faults.populate` +333%); a smaller one cannot be told.
pub const ASSUMED_DRIFT: f64 = 0.25;

/// Whether the load moved between the sides for a row: most of one side's repetitions were
/// measured while other work competed, and at most a few of the other's ([value, contended] a
/// side).
fn load_moved(contended: [[usize; 2]; 2]) -> bool {
    let share = |[n, c]: [usize; 2]| (n > 0).then(|| c as f64 / n as f64);
    match (share(contended[0]), share(contended[1])) {
        (Some(a), Some(b)) => (a - b).abs() >= 0.5,
        _ => false,
    }
}

pub use crate::conditions::LOAD_APART;

/// Whether the other work beside two sides lies [`LOAD_APART`] apart.
fn loads_apart(load: [Option<f64>; 2]) -> bool {
    match load {
        [Some(a), Some(b)] => (a - b).abs() >= LOAD_APART,
        _ => false,
    }
}

/// Whether a change stands without the load: the repetitions each side measured with no other
/// work competing lie apart beyond the band, every one of them (a syscall audit rule made
/// getppid 27x slower; two of B's three repetitions had other work beside them, the third alone
/// showed the change).
fn apart_when_calm(calm: [&[f64]; 2], band: f64) -> bool {
    let range = |v: &[f64]| -> Option<(f64, f64)> {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lo > 0.0 && hi.is_finite()).then_some((lo, hi))
    };
    match (range(calm[0]), range(calm[1])) {
        (Some((alo, ahi)), Some((blo, bhi))) => blo / ahi > 1.0 + band || bhi / alo < 1.0 - band,
        _ => false,
    }
}

/// How far apart two sides' core-to-core latencies must be to say their cpus sat differently.
pub const PLACEMENT_APART: f64 = 1.5;

/// How far apart a side's two cpus sat, as the guest can see it: the median over its runs of
/// the one-way core-to-core latency (`c2c.latency`), ns. On a VM the vCPUs' placement on the
/// host can change between runs (the same two vCPUs: 23 ns one run, 111 ns the next), and every
/// figure that crosses cpus moves with it. Every repetition counts (the first alone once
/// contradicted the table).
pub fn cpu_pair_latency(runs: &[&[Measurement]]) -> Option<f64> {
    let per_run: Vec<f64> = runs
        .iter()
        .filter_map(|ms| {
            let all: Vec<f64> = ms
                .iter()
                .filter(|m| m.probe == crate::catalog::id::C2C_LATENCY && m.metric == "one_way")
                .filter(|m| m.status.has_value())
                .filter_map(|m| m.summary.as_ref().map(|s| s.median))
                .collect();
            median(&all)
        })
        .collect();
    median(&per_run)
}

/// Whether the sides' cpus sat differently on the host: their core-to-core latencies more than
/// [`PLACEMENT_APART`] apart.
pub fn placement_moved(a: &[&[Measurement]], b: &[&[Measurement]]) -> bool {
    match (cpu_pair_latency(a), cpu_pair_latency(b)) {
        (Some(x), Some(y)) if x > 0.0 && y > 0.0 => (y / x).max(x / y) > PLACEMENT_APART,
        _ => false,
    }
}

/// Whether a measurement's work crosses cpus (a wake-up, a cache line or a thread moved from
/// one cpu to another): its placement names two different cpus, or a list of several.
pub fn crosses_cpus(m: &Measurement) -> bool {
    let p = &m.params;
    let two_ends = matches!((p.get("from"), p.get("to")), (Some(f), Some(t)) if f != t);
    let several = p
        .get("cpus")
        .and_then(|c| c.as_str())
        .and_then(|c| crate::cpuset::CpuSet::parse_list(c).ok())
        .is_some_and(|cpus| cpus.len() > 1);
    two_ends || several || p.contains_key("peer_cpu")
}

/// The core clock each run measured for its predictions (the `core_ghz` input), GHz, for the
/// runs that have it.
fn core_clocks(runs: &[&[Measurement]]) -> Vec<f64> {
    runs.iter()
        .filter_map(|ms| {
            ms.iter().find_map(|m| {
                m.prediction
                    .as_ref()?
                    .inputs
                    .get("core_ghz")?
                    .as_f64()
                    .filter(|v| *v > 0.0)
            })
        })
        .collect()
}

/// The core clock a side ran at, GHz: the median over its runs of the clock each run measured
/// for its predictions (the `core_ghz` input); None when no run has it.
pub fn core_clock(runs: &[&[Measurement]]) -> Option<f64> {
    median(&core_clocks(runs))
}

/// How far one run's core clock estimate may lie from another's on the same machine: 25%. It
/// is one estimate a run, taken in a moment, and on a shared host the core runs at two speeds
/// (another guest on its SMT sibling): two identical runs on a 2-vCPU guest read clocks 18.3%
/// apart.
pub const CLOCK_DRIFT: f64 = 0.25;

/// The sides' core clocks (A, B, GHz) and how far apart they lie, when that is beyond what the
/// clock drifts between runs: beyond `threshold`, the spread of a side's own runs, and
/// [`CLOCK_DRIFT`] where a side has fewer than 3 runs to show its drift. None when not.
pub fn clocks_apart(
    a: &[&[Measurement]],
    b: &[&[Measurement]],
    threshold: f64,
) -> Option<(f64, f64, f64)> {
    let (ca, cb) = (core_clocks(a), core_clocks(b));
    let (ma, mb) = (median(&ca)?, median(&cb)?);
    let drift = [&ca, &cb]
        .iter()
        .map(|c| match c.len() >= RUNS_AS_REPLICATES {
            true => spread(c),
            false => CLOCK_DRIFT,
        })
        .fold(threshold, f64::max);
    let apart = (mb / ma).ln().abs().exp() - 1.0;
    (apart > drift).then_some((ma, mb, apart))
}

/// Compares side `b` against the baseline side `a`, each one or more runs (see the module
/// documentation for what the replicates are). `threshold` is the relative change that counts
/// (0.05 = 5%); `drift` widens it for sides of one run. Rows follow the baseline's order, then
/// what only `b` has.
pub fn compare(
    a: &[&[Measurement]],
    b: &[&[Measurement]],
    threshold: f64,
    drift: &Drift,
) -> Vec<Row> {
    let sides = [PerRun::of(a), PerRun::of(b)];
    let crosses: HashSet<Key> = a
        .iter()
        .chain(b)
        .flat_map(|run| run.iter())
        .filter(|m| crosses_cpus(m))
        .map(key)
        .collect();
    let mut order = sides[0].order.clone();
    order.extend(
        sides[1]
            .order
            .iter()
            .filter(|(k, ..)| !sides[0].reps.contains_key(k))
            .cloned(),
    );
    // Repetitions on a slowed core are replicates only where, without them, a side has too few
    // to judge: then both sides keep theirs, and a slowed core counts as other work beside
    // them (on a host whose siblings were busy all along, a fifth of a suite's rows were
    // slowed in every run, and left out they left those rows unjudged between identical runs).
    let slowed_too = |k: &Key| {
        sides.iter().any(|s| s.slowed(k) > 0)
            && sides
                .iter()
                .any(|s| s.replicates(k, false).0.len() < JUDGED_FROM)
    };
    // Every row's ratio of medians, for the scatter that stands in for an unknown drift.
    let ratios: Vec<f64> = order
        .iter()
        .filter(|(.., difference)| !difference)
        .filter_map(|(k, ..)| {
            let slowed = slowed_too(k);
            let (a, b) = (
                median(&sides[0].replicates(k, slowed).0)?,
                median(&sides[1].replicates(k, slowed).0)?,
            );
            (a > 0.0 && b > 0.0).then(|| b / a)
        })
        .collect();
    let scattered = scatter(&ratios);
    let typical = drift.typical();
    let edge = moved_cache(a, b);
    let placement = placement_moved(a, b);
    // A row crossing cpus has its own partner beside it on both sides, so its repetitions say
    // contended either way: whether other work moved shows on the rows that stay on one cpu.
    // Where it did, a wake-up found the other cpu busy on one side and idle on the other (2x
    // faster beside two cpu hogs: no idle exit), a change of the load's.
    let load_moved_at_all = load_moved([0, 1].map(|i| sides[i].busy(&crosses)))
        || loads_apart([0, 1].map(|i| sides[i].other_work(None, &crosses)));
    order
        .into_iter()
        .map(|(k, unit, params, difference)| {
            let slowed = slowed_too(&k);
            let (va, kind_a) = sides[0].replicates(&k, slowed);
            let (vb, kind_b) = sides[1].replicates(&k, slowed);
            // The drift between runs of a side whose replicates are repetitions: from the
            // history (with each side's own runs), else from the other side's runs, else from
            // how far this comparison's rows scatter, else from how far the history's other
            // measurements drift.
            let single = kind_a == Replicates::Repetitions || kind_b == Replicates::Repetitions;
            let learnt = single && drift.learnt;
            let own: Vec<Vec<f64>> = sides
                .iter()
                .map(|s| s.run_medians(&k))
                .filter(|m| m.len() >= 2)
                .collect();
            let found = learnt
                .then(|| drift.of(&k, &own).map(|d| (d, DriftFrom::History)))
                .flatten()
                .or_else(|| {
                    let other = sides.iter().find_map(|s| apart(&[&s.run_medians(&k)]));
                    learnt.then_some(other?).map(|d| (d, DriftFrom::OtherSide))
                })
                .or_else(|| single.then_some(scattered?).map(|d| (d, DriftFrom::Rows)))
                .or_else(|| learnt.then_some(typical?).map(|d| (d, DriftFrom::Machine)))
                .or_else(|| learnt.then_some((ASSUMED_DRIFT, DriftFrom::Assumed)));
            // Without a history asked for (`--no-history`), a single run with nothing to show
            // its drift is judged by its repetitions alone, as the user chose. The spread that
            // widens the band is that of the replicates: of the runs' medians where runs are
            // the replicates, else of the repetitions within a run (the drift between runs is
            // the band's other part).
            let within = |i: usize, v: &[f64], kind| match kind {
                Replicates::Runs => spread(v),
                Replicates::Repetitions => sides[i].spread_within(&k, slowed),
            };
            let band = threshold
                .max(within(0, &va, kind_a))
                .max(within(1, &vb, kind_b))
                .max(found.map_or(0.0, |(d, _)| d))
                .min(0.99);
            let (probe, _, metric) = k.clone();
            let cache_edge = edge.filter(|[lo, hi]| {
                sides.iter().any(|s| {
                    s.sets
                        .get(&k)
                        .is_some_and(|&set| (*lo..=*hi).contains(&set))
                })
            });
            let contended = [0, 1].map(|i| sides[i].contended(&k, slowed));
            let calm = [0, 1].map(|i| sides[i].calm(&k));
            let other_work = [0, 1].map(|i| sides[i].other_work(Some(&k), &crosses));
            let load_shift = match crosses.contains(&k) {
                true => load_moved_at_all,
                false => {
                    (load_moved(contended) || loads_apart(other_work))
                        && !apart_when_calm([&calm[0], &calm[1]], band)
                }
            };
            Row {
                probe,
                params,
                metric,
                unit,
                present: [0, 1].map(|i| sides[i].reps.contains_key(&k)),
                drift: found.map(|(d, _)| d),
                drift_from: found.map(|(_, f)| f),
                slowed: match slowed {
                    true => [0, 0],
                    false => [0, 1].map(|i| sides[i].slowed(&k)),
                },
                judgement: match difference {
                    true => judge_shift(&va, &vb, band),
                    false => judge(&va, &vb, unit, band),
                }
                .at_cache_edge(cache_edge.is_some())
                .at_load_shift(load_shift)
                .at_placement_shift(placement && crosses.contains(&k))
                .blind_if_wide(threshold),
                replicates: [kind_a, kind_b],
                contended,
                other_work,
                cache_edge,
                got_moved: crate::conditions::diff(
                    &[sides[0].got.get(&k).cloned().unwrap_or_default()],
                    &[sides[1].got.get(&k).cloned().unwrap_or_default()],
                ),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Status, SLOWED_CORE};
    use crate::{params, Summary};

    /// One repetition of a measurement on `cpu` whose samples center on `value`.
    fn m(cpu: usize, unit: Unit, repetition: u32, value: f64) -> Measurement {
        let mut x = Measurement::not_taken(
            "syscall.getppid",
            params! {"cpu" => cpu, "cache" => "hot"},
            "per_call",
            unit,
            Status::Ok,
        );
        let samples = vec![value; 40];
        x.summary = Summary::new(&samples);
        x.samples = Some(samples);
        x.repetition = repetition;
        x
    }

    /// A run of one measurement repeated at these values.
    fn run(cpu: usize, unit: Unit, values: &[f64]) -> Vec<Measurement> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| m(cpu, unit, i as u32 + 1, *v))
            .collect()
    }

    /// One repetition of a run whose latency curve shows `cached` MiB cached and memory from
    /// `memory` MiB, with random latency over 12 MiB and over 256 MiB.
    fn curve(repetition: u32, cached: u64, memory: u64, at_12: f64) -> Vec<Measurement> {
        use crate::catalog::{id, metric};
        let mib = 1u64 << 20;
        let one = |probe: &str, metric: &str, params, value: f64| {
            let mut x = m(0, Unit::Ns, repetition, value);
            (x.probe, x.metric, x.params) = (probe.into(), metric.into(), params);
            x
        };
        vec![
            one(
                id::MEMORY_LATENCY_CHUNK,
                metric::LEVEL_SIZE,
                params! {"level" => "L3"},
                (cached * mib) as f64,
            ),
            one(
                id::MEMORY_LATENCY_CHUNK,
                metric::PER_LOAD,
                params! {"size" => cached * mib},
                33.0,
            ),
            one(
                id::MEMORY_LATENCY_CHUNK,
                metric::PER_LOAD,
                params! {"size" => memory * mib},
                100.0,
            ),
            one(
                id::MEMORY_LATENCY_CHUNK,
                metric::LEVEL_LATENCY,
                params! {"level" => "memory"},
                105.0,
            ),
            one(
                "memory.latency.random",
                metric::PER_LOAD,
                params! {"size" => 12 * mib},
                at_12,
            ),
            one(
                "memory.latency.random",
                metric::PER_LOAD,
                params! {"size" => 256 * mib},
                at_12 * 3.0,
            ),
        ]
    }

    #[test]
    fn a_change_where_the_cache_moved_between_the_sides_is_the_caches() {
        // Two identical runs on a host whose shared cache another guest took in between: the
        // curve's step to memory moved from 24 to 12 MiB, and 12 MiB latency tripled with it.
        let side = |memory: u64, at_12: f64| -> Vec<Measurement> {
            (1..=3)
                .flat_map(|r| curve(r, 8, memory, at_12 + r as f64))
                .collect()
        };
        let (a, b) = (side(24, 37.0), side(12, 103.0));
        let rows = compare(&[&a], &[&b], 0.05, &Drift::default());
        let row = |size: u64| {
            rows.iter()
                .find(|r| {
                    r.probe == "memory.latency.random" && r.params.contains(&format!("{size} MiB"))
                })
                .unwrap()
        };
        let edge = Some([8.0, 24.0].map(|mib| mib * 1048576.0));
        assert_eq!(moved_cache(&[&a], &[&b]), edge);
        let verdict_and_edge = |size| (row(size).judgement.verdict, row(size).cache_edge);
        assert_eq!(verdict_and_edge(12), (Verdict::CacheMoved, edge));
        // Far beyond the edge a change is still one.
        assert_eq!(verdict_and_edge(256), (Verdict::Regression, None));
        // Where the curves agree, the same change is a regression.
        let b = side(24, 103.0);
        assert_eq!(moved_cache(&[&a], &[&b]), None);
        let rows = compare(&[&a], &[&b], 0.05, &Drift::default());
        assert!(rows
            .iter()
            .filter(|r| r.probe == "memory.latency.random")
            .all(|r| r.judgement.verdict == Verdict::Regression));
    }

    fn verdict(a: &[Measurement], b: &[Measurement]) -> Row {
        let rows = compare(&[a], &[b], 0.05, &Drift::default());
        assert_eq!(rows.len(), 1, "{rows:?}");
        rows.into_iter().next().unwrap()
    }

    #[test]
    fn a_change_where_other_work_competed_on_one_side_only_is_the_loads() {
        let quiet = run(1, Unit::GBps, &[10.0, 10.1, 10.2]);
        let mut busy = run(1, Unit::GBps, &[40.0, 41.0, 42.0]);
        // Beside no load on either side: a change.
        assert_eq!(verdict(&quiet, &busy).judgement.verdict, Verdict::Better);
        busy.iter_mut()
            .for_each(|m| m.status = Status::Noisy(crate::model::Cause::Contention));
        let r = verdict(&quiet, &busy);
        assert_eq!(r.judgement.verdict, Verdict::LoadMoved);
        assert_eq!(r.contended, [[3, 0], [3, 3]]);
        // The same load on both sides: the change stands.
        let mut both = quiet.clone();
        both.iter_mut()
            .for_each(|m| m.status = Status::Noisy(crate::model::Cause::Contention));
        assert_eq!(verdict(&both, &busy).judgement.verdict, Verdict::Better);
        // A repetition measured alone on the busy side still shows the change: it stands.
        busy[2].status = Status::Ok;
        assert_eq!(verdict(&quiet, &busy).judgement.verdict, Verdict::Better);
        // One that does not (the load's doing) leaves it unclaimed.
        busy[2].summary = Summary::new(&[10.1; 40]);
        assert_ne!(verdict(&quiet, &busy).judgement.verdict, Verdict::Better);
    }

    #[test]
    fn a_change_where_both_sides_were_busy_but_one_twice_as_busy_is_the_loads() {
        // One cpu hog, then two: every repetition of both sides contended, the same-cpu switch
        // 40% slower beside two. How much other work each recorded tells them apart.
        let beside = |values: &[f64], cpus: f64| -> Vec<Measurement> {
            let mut ms = run(1, Unit::Ns, values);
            for m in &mut ms {
                m.status = Status::Noisy(crate::model::Cause::Contention);
                m.context
                    .insert(crate::model::OTHER_WORK.into(), cpus.into());
            }
            ms
        };
        let one = beside(&[100.0, 100.5, 101.0], 1.0);
        let two = beside(&[140.0, 141.0, 142.0], 2.3);
        let r = verdict(&one, &two);
        assert_eq!(r.judgement.verdict, Verdict::LoadMoved);
        assert_eq!(r.other_work, [Some(1.0), Some(2.3)]);
        // Beside the same load (within half a cpu), the change stands.
        let also_one = beside(&[140.0, 141.0, 142.0], 1.2);
        assert_eq!(
            verdict(&one, &also_one).judgement.verdict,
            Verdict::Regression
        );
        // The run-level condition names the load each side measured beside.
        let named = |ms: &[Measurement]| crate::conditions::other_work_measuring(ms).unwrap().1;
        assert_eq!(
            (named(&one), named(&two)),
            ("1 cpu".into(), "2 cpus".into())
        );
        assert_eq!(named(&beside(&[1.0], 0.2)), "none");
    }

    #[test]
    fn a_wake_up_across_cpus_on_a_side_beside_other_work_is_the_loads() {
        // A cross-cpu wake-up says contended on both sides (its partner runs beside it); beside
        // two cpu hogs it read 2x faster (the other cpu busy, not idle). The rows that stay on
        // one cpu show the load moved.
        let contended = |mut ms: Vec<Measurement>| -> Vec<Measurement> {
            ms.iter_mut()
                .for_each(|m| m.status = Status::Noisy(crate::model::Cause::Contention));
            ms
        };
        let wake = |values: &[f64]| -> Vec<Measurement> {
            let mut ms = contended(run(0, Unit::Ns, values));
            ms.iter_mut().for_each(|m| {
                m.probe = "switch.thread.pipe".into();
                m.params = params! {"cpus" => "0,1"};
            });
            ms
        };
        let quiet = [
            wake(&[26.0, 26.5, 27.0]),
            run(1, Unit::Ns, &[100.0, 100.5, 101.0]),
        ]
        .concat();
        let busy = [
            wake(&[13.0, 13.2, 13.4]),
            contended(run(1, Unit::Ns, &[100.0, 100.5, 101.0])),
        ]
        .concat();
        let rows = compare(&[&quiet], &[&busy], 0.05, &Drift::default());
        assert_eq!(rows[0].judgement.verdict, Verdict::LoadMoved, "{rows:?}");
        // Both sides beside their partner only: the change stands.
        let calm = [
            wake(&[13.0, 13.2, 13.4]),
            run(1, Unit::Ns, &[100.0, 100.5, 101.0]),
        ]
        .concat();
        let rows = compare(&[&quiet], &[&calm], 0.05, &Drift::default());
        assert_eq!(rows[0].judgement.verdict, Verdict::Better, "{rows:?}");
    }

    #[test]
    fn no_difference_under_a_band_too_wide_to_see_one_cannot_tell() {
        let a = run(1, Unit::Ns, &[100.0, 140.0, 70.0]);
        let b = run(1, Unit::Ns, &[105.0, 150.0, 68.0]);
        let r = verdict(&a, &b);
        assert!(r.judgement.band > BLIND_BAND, "{r:?}");
        assert_eq!(r.judgement.verdict, Verdict::CannotTell);
        let narrow = run(1, Unit::Ns, &[100.0, 101.0, 102.0]);
        assert_eq!(verdict(&narrow, &narrow).judgement.verdict, Verdict::Same);
    }

    #[test]
    fn a_slowdown_in_every_repetition_is_a_regression_and_faster_rates_are_better() {
        let base = run(1, Unit::Ns, &[100.0, 101.0, 102.0]);
        // Different cpus still line up: placement is not part of the key.
        let slow = run(3, Unit::Ns, &[120.0, 121.5, 123.0]);
        let r = verdict(&base, &slow);
        assert_eq!(r.judgement.verdict, Verdict::Regression);
        assert!((r.judgement.ratio.unwrap() - 121.5 / 101.0).abs() < 1e-9);
        let [lo, hi] = r.judgement.interval.unwrap();
        assert!((lo - 120.0 / 102.0).abs() < 1e-9 && (hi - 123.0 / 100.0).abs() < 1e-9);
        assert!((r.judgement.p.unwrap() - 0.1).abs() < 1e-12);
        let rates = verdict(
            &run(1, Unit::GBps, &[100.0, 101.0, 102.0]),
            &run(1, Unit::GBps, &[120.0, 121.5, 123.0]),
        );
        assert_eq!(rates.judgement.verdict, Verdict::Better);
        assert_eq!(verdict(&base, &base).judgement.verdict, Verdict::Same);
        // A 2% change, every repetition apart, lies within a 5% band: no change is called.
        let bit = run(1, Unit::Ns, &[103.5, 104.0, 104.5]);
        assert_eq!(verdict(&base, &bit).judgement.verdict, Verdict::Same);
    }

    #[test]
    fn no_difference_reads_same_only_when_the_interval_stays_within_the_band() {
        // Equal within 5%: the same.
        let tight = judge(
            &[100.0, 101.0, 100.5, 99.5],
            &[100.2, 100.8, 99.9, 100.4],
            Unit::Ns,
            0.05,
        );
        assert_eq!(tight.verdict, Verdict::Same);
        assert_eq!(tight.no_difference_text(), "same");
        // A ratio of 1.5 whose interval reaches from 0.5 to 3: not told apart, never "same".
        let wide = judge(&[100.0, 40.0, 300.0], &[150.0, 60.0, 400.0], Unit::Ns, 0.05);
        assert_eq!(wide.verdict, Verdict::Same, "{wide:?}");
        assert!(wide.ratio.unwrap() > 1.4);
        assert_eq!(wide.no_difference_text(), "~");
    }

    #[test]
    fn one_repetition_a_side_gives_a_ratio_and_no_verdict() {
        let r = verdict(&run(1, Unit::Ns, &[100.0]), &run(1, Unit::Ns, &[200.0]));
        assert_eq!(r.judgement.verdict, Verdict::RatioOnly);
        assert_eq!(r.judgement.ratio, Some(2.0));
        assert!(r.judgement.interval.is_none());
        // Three runs of one repetition each make a side of three.
        let (a1, a2, a3) = (
            run(1, Unit::Ns, &[100.0]),
            run(1, Unit::Ns, &[101.0]),
            run(1, Unit::Ns, &[102.0]),
        );
        let (b1, b2, b3) = (
            run(1, Unit::Ns, &[150.0]),
            run(1, Unit::Ns, &[151.0]),
            run(1, Unit::Ns, &[152.0]),
        );
        let rows = compare(&[&a1, &a2, &a3], &[&b1, &b2, &b3], 0.05, &Drift::default());
        assert_eq!(rows[0].judgement.n, [3, 3]);
        assert_eq!(rows[0].judgement.verdict, Verdict::Regression);
    }

    #[test]
    fn several_runs_a_side_count_once_each_so_drift_between_runs_is_seen() {
        // Each run's repetitions agree closely, but the runs drift 20% apart: one run against
        // one run looks like a regression; three runs a side, alternated, do not.
        let (a1, b1) = (
            run(1, Unit::Ns, &[100.0, 100.5, 101.0]),
            run(1, Unit::Ns, &[120.0, 120.5, 121.0]),
        );
        assert_eq!(verdict(&a1, &b1).judgement.verdict, Verdict::Regression);
        let (a2, b2) = (
            run(1, Unit::Ns, &[121.0, 121.5, 122.0]),
            run(1, Unit::Ns, &[99.0, 99.5, 100.0]),
        );
        let (a3, b3) = (
            run(1, Unit::Ns, &[110.0, 110.5, 111.0]),
            run(1, Unit::Ns, &[111.0, 111.5, 112.0]),
        );
        let rows = compare(&[&a1, &a2, &a3], &[&b1, &b2, &b3], 0.05, &Drift::default());
        assert_eq!(rows[0].judgement.n, [3, 3]);
        assert_eq!(rows[0].judgement.a, Some(110.5));
        assert_eq!(rows[0].judgement.verdict, Verdict::Same);
        // Those runs as history: one run against one, the band is where the ratio of two new
        // runs falls with 99% probability: six runs whose logarithms spread by 0.086 (sd) give
        // exp(t(5) 4.032 x sqrt(2) x 0.086) - 1 = 63%.
        let drift = Drift::from_runs(&[&a1, &b1, &a2, &b2, &a3, &b3]);
        let rows = compare(&[&a1], &[&b1], 0.05, &drift);
        let d = rows[0].drift.unwrap();
        assert!(d > 0.62 && d < 0.64, "{d}");
        assert_eq!(rows[0].drift_from, Some(DriftFrom::History));
        // A drift of 63% hides any change of the threshold's size: it cannot tell.
        assert_eq!(rows[0].judgement.verdict, Verdict::CannotTell);
        // A run far out of the history (a regressed build) is left out of it.
        let regressed = run(1, Unit::Ns, &[300.0, 301.0, 302.0]);
        let with = Drift::from_runs(&[&a1, &b1, &a2, &b2, &a3, &b3, &regressed]);
        let rows = compare(&[&a1], &[&b1], 0.05, &with);
        assert_eq!(rows[0].drift, Some(d));
        // Too little history says nothing: the assumed drift (25%) widens the band, and 20%
        // cannot be told. Without any history (`--no-history`) it is judged on its
        // repetitions alone.
        let rows = compare(&[&a1], &[&b1], 0.05, &Drift::from_runs(&[&a2, &b2]));
        assert_eq!(rows[0].drift, Some(ASSUMED_DRIFT));
        // Its interval lies wholly beyond the threshold: not `same`, though the band holds it.
        assert_eq!(rows[0].judgement.verdict, Verdict::CannotTell);
        assert_eq!(
            rows[0].judgement.interval,
            verdict(&a1, &b1).judgement.interval
        );
        // A single run against several: their runs show how far runs drift apart.
        let rows = compare(&[&a1, &a2, &a3], &[&b1], 0.05, &Drift::from_runs(&[]));
        let expected = apart(&[&[100.5, 121.5, 110.5]]);
        assert!(expected.is_some() && rows[0].drift == expected, "{rows:?}");
        assert_ne!(rows[0].judgement.verdict, Verdict::RatioOnly);
    }

    #[test]
    fn two_runs_a_side_pool_their_repetitions_and_are_judged() {
        // Two runs of 3 repetitions a side were 2 per-run medians: no interval, nothing judged.
        let (a1, a2) = (
            run(1, Unit::Ns, &[100.0, 100.5, 101.0]),
            run(1, Unit::Ns, &[101.0, 101.5, 102.0]),
        );
        let (b1, b2) = (
            run(1, Unit::Ns, &[130.0, 130.5, 131.0]),
            run(1, Unit::Ns, &[131.0, 131.5, 132.0]),
        );
        let rows = compare(&[&a1, &a2], &[&b1, &b2], 0.05, &Drift::default());
        assert_eq!(rows[0].judgement.n, [6, 6]);
        assert_eq!(rows[0].replicates, [Replicates::Repetitions; 2]);
        assert_eq!(rows[0].judgement.verdict, Verdict::Regression);
        let rows = compare(&[&a1, &b1], &[&a2, &b2], 0.05, &Drift::default());
        // The runs' own difference (30%) is in the interval, not in the band (the band is the
        // repetitions' spread within a run): not a change, and not `same` either.
        assert!(rows[0].judgement.band < 0.1, "{rows:?}");
        assert!(rows[0].judgement.unseen() > 0.25, "{rows:?}");
        assert_eq!(rows[0].judgement.verdict, Verdict::CannotTell);
        // Three runs a side are one replicate each.
        let rows = compare(&[&a1, &a2, &a1], &[&b1, &b2, &b1], 0.05, &Drift::default());
        assert_eq!(rows[0].replicates, [Replicates::Runs; 2]);
        assert_eq!(rows[0].judgement.n, [3, 3]);
    }

    #[test]
    fn a_sides_own_runs_add_to_what_the_history_says_of_the_drift() {
        let history: Vec<Vec<Measurement>> = [100.0, 106.0, 103.0]
            .iter()
            .map(|&v| run(1, Unit::Ns, &[v, v, v]))
            .collect();
        let drift = Drift::from_runs(&views(&history));
        let (a1, a2) = (
            run(1, Unit::Ns, &[100.0, 100.0, 100.0]),
            run(1, Unit::Ns, &[103.0, 103.0, 103.0]),
        );
        let (b1, b2) = (
            run(1, Unit::Ns, &[101.0, 101.0, 101.0]),
            run(1, Unit::Ns, &[104.0, 104.0, 104.0]),
        );
        let one = compare(&[&a1], &[&b1], 0.05, &drift)[0].drift.unwrap();
        let two = &compare(&[&a1, &a2], &[&b1, &b2], 0.05, &drift)[0];
        // 2 more degrees of freedom (t 9.9 -> 4.6) for a spread alike: a narrower band.
        assert_eq!(two.drift_from, Some(DriftFrom::History));
        assert!(two.drift.unwrap() < 0.7 * one, "{one} {two:?}");
        assert_eq!(two.judgement.verdict, Verdict::Same, "{two:?}");
    }

    #[test]
    fn a_slowed_core_on_every_repetition_is_compared_as_other_work() {
        let slowed = |values: &[f64]| -> Vec<Measurement> {
            let mut ms = run(1, Unit::Ns, values);
            for m in &mut ms {
                m.note = Some(format!("around 40 of 40 samples, {SLOWED_CORE}"));
            }
            ms
        };
        // Every repetition of both sides slowed alike: compared, not dropped.
        let (a, b) = (
            slowed(&[100.0, 101.0, 102.0]),
            slowed(&[100.5, 101.5, 102.5]),
        );
        let row = &compare(&[&a], &[&b], 0.05, &Drift::default())[0];
        assert_eq!(row.judgement.n, [3, 3]);
        assert_eq!(row.judgement.verdict, Verdict::Same, "{row:?}");
        assert_eq!(row.slowed, [0, 0]);
    }

    #[test]
    fn a_measurement_the_history_lacks_takes_how_far_the_machines_others_drift() {
        // A history of 30 measurements, none the one compared now (a focused run).
        let earlier: Vec<Vec<Measurement>> = (0..4)
            .map(|r| many(30, |i| 100.0 + i as f64 + 4.0 * f64::from(r % 2 == 0)))
            .collect();
        let drift = Drift::from_runs(&views(&earlier));
        let typical = drift.typical().unwrap();
        assert!(typical > 0.05 && typical < 0.5, "{typical}");
        let (a, b) = (
            run(1, Unit::Ns, &[100.0, 100.5, 101.0]),
            run(1, Unit::Ns, &[200.0, 200.5, 201.0]),
        );
        let rows = compare(&[&a], &[&b], 0.05, &drift);
        assert_eq!(rows[0].drift_from, Some(DriftFrom::Machine));
        assert_eq!(rows[0].drift, Some(typical));
        assert_eq!(rows[0].judgement.verdict, Verdict::Regression);
        // Too few measurements known say nothing of the machine: the assumed drift stands in.
        let little = Drift::from_runs(&views(
            &earlier.iter().map(|r| r[..9].to_vec()).collect::<Vec<_>>(),
        ));
        assert!(little.typical().is_none());
        let rows = compare(&[&a], &[&b], 0.05, &little);
        assert_eq!(rows[0].drift_from, Some(DriftFrom::Assumed));
        assert_eq!(rows[0].judgement.verdict, Verdict::Regression);
    }

    #[test]
    fn a_change_crossing_cpus_that_sat_differently_is_the_placements() {
        use crate::catalog::id::C2C_LATENCY;
        let c2c = |from: usize, to: usize, values: &[f64]| -> Vec<Measurement> {
            run(0, Unit::Ns, values)
                .into_iter()
                .map(|mut x| {
                    x.probe = C2C_LATENCY.into();
                    x.metric = "one_way".into();
                    x.params = params! {"from" => from, "to" => to};
                    x
                })
                .collect()
        };
        let (a, b) = (
            c2c(1, 0, &[100.0, 101.0, 102.0]),
            c2c(1, 0, &[32.9, 33.0, 33.1]),
        );
        assert!(crosses_cpus(&a[0]));
        assert!(!crosses_cpus(&run(1, Unit::Ns, &[1.0])[0]));
        let rows = compare(&[&a], &[&b], 0.05, &Drift::default());
        assert_eq!(rows[0].judgement.verdict, Verdict::PlacementMoved);
        // A row on one cpu keeps its verdict.
        let (mut a1, mut b1) = (a.clone(), b.clone());
        a1.extend(run(1, Unit::Ns, &[100.0, 100.5, 101.0]));
        b1.extend(run(1, Unit::Ns, &[150.0, 150.5, 151.0]));
        let rows = compare(&[&a1], &[&b1], 0.05, &Drift::default());
        assert_eq!(rows[1].judgement.verdict, Verdict::Regression);
        // Cpus that sat alike leave the change a change.
        let rows = compare(
            &[&a],
            &[&c2c(1, 0, &[130.0, 131.0, 132.0])],
            0.05,
            &Drift::default(),
        );
        assert_eq!(rows[0].judgement.verdict, Verdict::Regression);
    }

    /// Runs as the comparison takes them.
    fn views(runs: &[Vec<Measurement>]) -> Vec<&[Measurement]> {
        runs.iter().map(|r| &r[..]).collect()
    }

    #[test]
    fn a_state_the_host_takes_now_and_then_stays_in_the_drift_and_fewer_runs_widen_it() {
        // Nine runs within 2% and two 20% slower (another guest on the host): those two are
        // part of what this machine does, and a 20% step between two runs is not called.
        let mut history: Vec<Vec<Measurement>> = [100.0, 101.0, 99.5, 100.5, 102.0, 100.0]
            .iter()
            .chain(&[101.5, 99.0, 100.0, 120.0, 121.0])
            .map(|v| run(1, Unit::Ns, &[*v, v + 0.5, v + 1.0]))
            .collect();
        let drift = Drift::from_runs(&views(&history));
        let (a, b) = (
            run(1, Unit::Ns, &[100.0, 100.5, 101.0]),
            run(1, Unit::Ns, &[120.0, 120.5, 121.0]),
        );
        let row = &compare(&[&a], &[&b], 0.05, &drift)[0];
        assert!(row.drift.unwrap() > 0.2, "{row:?}");
        assert_ne!(row.judgement.verdict, Verdict::Regression);
        // A build twice as slow in the history is left out of it, so it hides nothing.
        history.push(run(1, Unit::Ns, &[200.0, 201.0, 202.0]));
        assert_eq!(
            Drift::from_runs(&views(&history)).of(&key(&a[0]), &[]),
            drift.of(&key(&a[0]), &[])
        );
        // The same spread seen in fewer runs is known less well: the band is wider.
        let few = Drift::from_runs(&views(&[
            run(1, Unit::Ns, &[100.0]),
            run(1, Unit::Ns, &[120.0]),
            run(1, Unit::Ns, &[110.0]),
        ]));
        let many = Drift::from_runs(&views(
            &[100.0, 120.0, 110.0]
                .repeat(4)
                .iter()
                .map(|v| run(1, Unit::Ns, &[*v]))
                .collect::<Vec<_>>(),
        ));
        let k = key(&a[0]);
        assert!(
            few.of(&k, &[]).unwrap() > 2.0 * many.of(&k, &[]).unwrap(),
            "{few:?} {many:?}"
        );
    }

    #[test]
    fn differences_are_judged_as_shifts_without_a_ratio_or_a_direction() {
        // The cost of one more argument: 0.004 ns in one run, 0.3 ns in the other. Their ratio
        // (75) says nothing; the shift excludes zero, so it changed, neither better nor worse.
        let diff = |values: &[f64]| {
            let mut r = run(1, Unit::Ns, values);
            r.iter_mut().for_each(|m| m.difference = true);
            r
        };
        let row = verdict(&diff(&[0.004, 0.005, 0.003]), &diff(&[0.3, 0.35, 0.28]));
        assert_eq!(row.judgement.verdict, Verdict::Changed);
        assert_eq!(row.judgement.ratio, None);
        let row = verdict(&diff(&[-0.1, 0.2, 0.05]), &diff(&[0.1, -0.05, 0.15]));
        assert!(matches!(
            row.judgement.verdict,
            Verdict::Same | Verdict::CannotTell
        ));
        // A shift that excludes zero but stays within the band of the values' size (5% here) is
        // no change, one beyond it is.
        let row = verdict(&diff(&[318.0, 320.0, 322.0]), &diff(&[328.0, 330.0, 332.0]));
        assert_eq!(row.judgement.verdict, Verdict::Same, "{row:?}");
        let row = verdict(&diff(&[318.0, 320.0, 322.0]), &diff(&[398.0, 400.0, 402.0]));
        assert_eq!(row.judgement.verdict, Verdict::Changed, "{row:?}");
    }

    /// `ms` as measured at a core clock of `ghz` (as the machine model records it).
    fn at_clock(mut ms: Vec<Measurement>, ghz: f64) -> Vec<Measurement> {
        for m in &mut ms {
            m.prediction = Some(crate::model::Prediction {
                value: 1.0,
                model: "test".into(),
                inputs: [("core_ghz".to_string(), ghz.into())].into_iter().collect(),
                kind: crate::model::ModelKind::Spec,
                formula: String::new(),
                sources: Default::default(),
                gap: None,
            });
        }
        ms
    }

    #[test]
    fn the_core_clock_of_a_side_is_the_median_of_its_runs_and_leaves_verdicts_alone() {
        let a = at_clock(run(1, Unit::Ns, &[100.0, 100.5, 101.0]), 2.7);
        let b = at_clock(run(1, Unit::Ns, &[110.0, 110.5, 111.0]), 2.45);
        let c = at_clock(run(1, Unit::Ns, &[110.0, 110.5, 111.0]), 2.5);
        assert_eq!(core_clock(&[&a]), Some(2.7));
        assert_eq!(core_clock(&[&a, &b, &c]), Some(2.5));
        assert_eq!(core_clock(&[&run(1, Unit::Ns, &[1.0])]), None);
        // 10% slower at a 10% lower clock is still called: the clock is said, not discounted.
        assert_eq!(verdict(&a, &b).judgement.verdict, Verdict::Regression);
    }

    #[test]
    fn core_clocks_are_said_apart_only_beyond_how_far_runs_drift() {
        let at = |ghz: f64| at_clock(run(1, Unit::Ns, &[100.0]), ghz);
        // One run a side, 18% apart (identical runs on a shared host): not said; 40%: said.
        assert_eq!(clocks_apart(&[&at(3.0)], &[&at(2.54)], 0.05), None);
        let (a, b, apart) = clocks_apart(&[&at(3.5)], &[&at(2.5)], 0.05).unwrap();
        assert_eq!((a, b), (3.5, 2.5));
        assert!((apart - 0.4).abs() < 1e-9);
        // Three steady runs a side: 10% apart is beyond their own spread.
        let side = |ghz: [f64; 3]| ghz.map(at);
        let (sa, sb) = (side([3.0, 3.01, 3.02]), side([2.7, 2.71, 2.72]));
        let (ra, rb): (Vec<&[Measurement]>, Vec<&[Measurement]>) = (
            sa.iter().map(|r| &r[..]).collect(),
            sb.iter().map(|r| &r[..]).collect(),
        );
        assert!(clocks_apart(&ra, &rb, 0.05).is_some());
    }

    #[test]
    fn a_change_within_the_noise_between_repetitions_is_not_called() {
        // The repetitions of each side spread 26% of their median: a 26% shift is not beyond.
        let a = run(1, Unit::Ns, &[100.0, 115.0, 130.0]);
        let b = run(1, Unit::Ns, &[131.0, 145.0, 160.0]);
        let r = verdict(&a, &b);
        assert!((r.judgement.band - 30.0 / 115.0).abs() < 1e-9, "{r:?}");
        // Not called; and a band of 26% could not have seen a 5% change: it cannot tell.
        assert_eq!(r.judgement.verdict, Verdict::CannotTell);
    }

    /// `rows` measurements of one run, each repeated three times: row `i` at `value(i)`
    /// times `1 + 0.001 x repetition`.
    fn many(rows: usize, value: impl Fn(usize) -> f64) -> Vec<Measurement> {
        (0..rows)
            .flat_map(|i| {
                (1..=3).map(move |r| (i, r)).map(|(i, r)| {
                    let mut x = m(1, Unit::Ns, r, value(i) * (1.0 + 0.001 * f64::from(r)));
                    x.params.insert("row".into(), i.into());
                    x
                })
            })
            .collect()
    }

    #[test]
    fn single_runs_without_history_are_judged_against_how_far_their_rows_scatter() {
        // Two identical runs of 200 rows whose medians drift apart by up to ±12% (a busy host):
        // their repetitions agree within 0.2%, so repetitions alone called most rows changed.
        let wobble = |i: usize| 1.0 + 0.12 * ((i as f64 * 2.399).sin());
        let a = many(200, |_| 100.0);
        let b = many(200, |i| 100.0 * wobble(i));
        let rows = compare(&[&a], &[&b], 0.05, &Drift::default());
        let called = rows
            .iter()
            .filter(|r| {
                matches!(
                    r.judgement.verdict,
                    Verdict::Better | Verdict::Regression | Verdict::Changed
                )
            })
            .count();
        assert!(called <= 4, "{called} of 200 called");
        assert!(rows.iter().all(|r| r.drift_from == Some(DriftFrom::Rows)));
        // A 30% regression of 10 rows stands out of that scatter; so does every row 20% slower.
        let slowed = many(200, |i| 100.0 * wobble(i) * if i < 10 { 1.3 } else { 1.0 });
        let rows = compare(&[&b], &[&slowed], 0.05, &Drift::default());
        let regressed: Vec<usize> = rows
            .iter()
            .enumerate()
            .filter(|(_, r)| r.judgement.verdict == Verdict::Regression)
            .map(|(i, _)| i)
            .collect();
        assert_eq!(regressed, (0..10).collect::<Vec<_>>());
        let all = many(200, |_| 120.0);
        let rows = compare(&[&many(200, |_| 100.0)], &[&all], 0.05, &Drift::default());
        assert!(rows
            .iter()
            .all(|r| r.judgement.verdict == Verdict::Regression));
        // Too few rows show no scatter: a single run is judged only as the user chose.
        assert_eq!(scatter(&[1.0; 19]), None);
    }

    #[test]
    fn unmatched_measurements_are_unknown_and_say_which_side_has_them() {
        let a = run(1, Unit::Ns, &[1.0, 2.0, 3.0]);
        let mut b = run(1, Unit::Ns, &[1.0, 2.0, 3.0]);
        b.iter_mut().for_each(|m| m.metric = "other".into());
        let rows = compare(&[&a], &[&b], 0.05, &Drift::default());
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().all(|r| r.judgement.verdict == Verdict::Unknown));
        // Values at or below zero have no ratio; their shift can still be a change.
        let (d0, d1) = (
            run(1, Unit::Ns, &[-0.5, -0.4, -0.45]),
            run(1, Unit::Ns, &[0.5, 0.6, 0.55]),
        );
        let r = verdict(&d0, &d1);
        assert_eq!(
            (r.judgement.ratio, r.judgement.verdict),
            (None, Verdict::Changed)
        );
        assert_eq!(verdict(&d0, &d0).judgement.verdict, Verdict::Same);
        assert_eq!(
            (rows[0].present, rows[1].present),
            ([true, false], [false, true])
        );
    }

    #[test]
    fn repetitions_measured_on_a_slowed_core_are_replicates_only_when_too_few_are_left() {
        let base = run(1, Unit::Ns, &[100.0, 101.0, 102.0]);
        let mut slowed = run(1, Unit::Ns, &[160.0, 161.0, 162.0]);
        assert_eq!(
            verdict(&base, &slowed).judgement.verdict,
            Verdict::Regression
        );
        for x in slowed.iter_mut() {
            x.note = Some(format!(
                "the core ran slow around 40 of 40 samples, {SLOWED_CORE}"
            ));
        }
        // Every repetition of B slowed, none of A's: the slowed core's doing, not a regression.
        let r = verdict(&base, &slowed);
        assert_eq!(
            (r.judgement.verdict, r.judgement.n, r.slowed),
            (Verdict::LoadMoved, [3, 3], [0, 0])
        );
        assert_eq!(r.contended, [[3, 0], [3, 3]]);
        // One slowed repetition of three: kept, since two are too few, and the change shows.
        slowed[1].note = None;
        slowed[2].note = None;
        let r = verdict(&base, &slowed);
        assert_eq!(
            (r.judgement.verdict, r.judgement.n),
            (Verdict::Regression, [3, 3])
        );
        // With enough at full speed on both sides, the slowed ones are left out and counted.
        let mut four = slowed.clone();
        four.push(m(1, Unit::Ns, 4, 161.0));
        let r = compare(
            &[&[base.clone(), vec![m(1, Unit::Ns, 4, 101.0)]].concat()],
            &[&four],
            0.05,
            &Drift::default(),
        );
        assert_eq!((r[0].judgement.n, r[0].slowed), ([4, 3], [0, 1]));
    }

    #[test]
    fn what_was_found_while_measuring_does_not_split_a_match() {
        let a = vec![m(1, Unit::Ns, 1, 5.0).found("pages", "thp 91%")];
        let mut old = m(1, Unit::Ns, 1, 5.0);
        old.params.insert("pages".into(), "thp 88%".into());
        let rows = compare(&[&a], &[&[old]], 0.05, &Drift::default());
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].present, [true, true]);
    }
}
