//! `oslab compare` for reading: the sides loaded from the store with the drift between runs of
//! their machine ([`Sides`]); which runs each side holds, how their machines differ, the rows (by
//! default those that changed or could not be judged) and the tally.

use oslab_core::catalog;
use oslab_core::model::Measurement;
use oslab_core::stats::compare::{
    compare, Drift, DriftFrom, Replicates, Row, Verdict, DEFAULT_THRESHOLD, PLACEMENT_APART,
};
use oslab_core::text::Table;
use oslab_core::units::{bytes, figure, num, percent, scale_for};
use oslab_store::{Loaded, RunRecord, RunRef, RunSet, Store, StoreError};

/// What a comparison's text shows besides its answer and changed rows.
#[derive(Debug, Clone, Copy, Default)]
pub struct View {
    /// Every row.
    pub all: bool,
    /// How a change is called, and the false alarms measured, in full.
    pub details: bool,
}

/// [`FALSE_ALARMS`] in a line, beside every verdict.
pub const FALSE_ALARMS_SHORT: &str = "false alarms on identical runs: 0-0.9% of rows for single runs, 0-0.6% with 2-3 runs a side (--details: how a change is called, each case measured)";

/// How often the verdicts cry wolf, as `scripts/false-alarms` measured it: two identical runs
/// (`--quick --repeat 3`) compared, every regression, improvement or change a false alarm.
pub const FALSE_ALARMS: &str = "False alarms (scripts/false-alarms, 3 repetitions a side, 2-vCPU KVM guests, 2026-11-28): identical runs, single runs without history 0-0.9% of rows, with earlier runs as history 0.4%, two runs a side 0% (as many rows judged as one run a side), 3 runs a side taken alternately 0.6%. One side quiet, the other beside stress-ng --cpu 2: 0-0.3% single runs, 0% with history, two runs a side or alternated groups (the rows the load moved, cross-cpu wake-ups among them, read `other work in B`). THP always -> never: every THP-backed row (59) flagged or saying its pages moved; 0.4-1.2% of the other rows single runs, 0% two runs a side, 0.7% alternated groups (a strided chain at 64 KiB and 64 MiB, whose pages read 4k on both sides). A syscall audit rule: 9-16 system-call rows, 0-0.8% of the others. A getppid made 14% slower on purpose was found without history, with one other row. Rows where the cache moved between the sides are said, not called changes.";

/// Earlier runs looked at, at most, for the drift between runs.
const HISTORY_RUNS: usize = 20;

/// How sides are judged: the threshold, and the earlier runs that show the drift between runs.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct Judging {
    /// Relative change that counts as a regression or an improvement, e.g. 5% or 0.05.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = DEFAULT_THRESHOLD,
        value_parser = oslab_core::units::parse_fraction))]
    pub threshold: f64,
    /// Earlier runs that show how far runs of this machine drift apart when nothing changed
    /// (default: up to 20 recent runs of the baseline's machine and suite, not compared now).
    /// The drift widens the band of a side that is a single run; a single run's measurement
    /// that fewer than 3 of them show is not judged (ratio only).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "RUNS", conflicts_with = "no_history")
    )]
    pub history: Option<RunSet>,
    /// Judge single runs by their repetitions alone, without the drift earlier runs show.
    #[cfg_attr(feature = "clap", arg(long))]
    pub no_history: bool,
}

impl Default for Judging {
    fn default() -> Judging {
        Judging {
            threshold: DEFAULT_THRESHOLD,
            history: None,
            no_history: false,
        }
    }
}

/// Sides loaded from the store: the baseline first; and the drift between runs of its machine.
pub struct Sides {
    sets: Vec<RunSet>,
    loaded: Vec<Loaded>,
    drift: Drift,
    threshold: f64,
}

fn measurements(runs: &Loaded) -> Vec<&[Measurement]> {
    runs.iter().map(|(_, m)| &m[..]).collect()
}

impl Sides {
    /// Loads `sets` (the baseline first) and the history: the one `judging` names, none with
    /// `no_history`, else recent runs of the baseline's machine.
    pub fn load(store: &Store, sets: Vec<RunSet>, judging: &Judging) -> Result<Sides, StoreError> {
        let loaded = sets
            .iter()
            .map(|s| store.load_set(s))
            .collect::<Result<Vec<_>, _>>()?;
        let compared: Vec<i64> = loaded.iter().flatten().filter_map(|(r, _)| r.id).collect();
        let history = match &judging.history {
            _ if judging.no_history => None,
            Some(set) => Some(store.load_set(set)?),
            None => Some(same_machine(store, &loaded[0], &compared)?),
        };
        let drift = match history {
            None => Drift::default(),
            Some(runs) => {
                let runs: Loaded = runs
                    .into_iter()
                    .filter(|(r, _)| r.id.is_none_or(|id| !compared.contains(&id)))
                    .collect();
                Drift::from_runs(&measurements(&runs))
            }
        };
        Ok(Sides {
            sets,
            loaded,
            drift,
            threshold: judging.threshold,
        })
    }

    /// Every side after the first compared with the first.
    pub fn comparisons(&self) -> Vec<Comparison<'_>> {
        let threshold = self.threshold;
        let side = |i: usize| Side {
            set: self.sets[i].to_string(),
            runs: &self.loaded[i],
        };
        (1..self.sets.len())
            .map(|i| Comparison {
                rows: compare(
                    &measurements(&self.loaded[0]),
                    &measurements(&self.loaded[i]),
                    threshold,
                    &self.drift,
                ),
                a: side(0),
                b: side(i),
                threshold,
                history: self.drift.learnt.then_some(self.drift.runs),
            })
            .collect()
    }

    /// Each side as a report draws it: its name, its first run, its measurements pooled.
    pub fn drawn(&self) -> Vec<(String, &RunRecord, Vec<Measurement>)> {
        self.sets
            .iter()
            .zip(&self.loaded)
            .map(|(set, runs)| {
                let all: Vec<Measurement> = runs.iter().flat_map(|(_, m)| m.clone()).collect();
                (
                    set.to_string(),
                    &runs[0].0,
                    oslab_core::stats::repetitions::pooled(&all).into_owned(),
                )
            })
            .collect()
    }
}

/// Recent runs of the machine and suite (`--quick` or not, and sharing a probe) of the baseline
/// `side`, in its configuration, newest first, none of `compared`: what this machine does
/// between runs when nothing changed. A run of another command (`cpuman simulate`) shares no
/// row, and is no history; nor is a run with THP off when the baseline had it on (runs of both
/// states made every THP-backed row's drift the change itself).
fn same_machine(store: &Store, side: &Loaded, compared: &[i64]) -> Result<Loaded, StoreError> {
    let like = &side[0].0;
    let probes: std::collections::HashSet<&str> = side
        .iter()
        .flat_map(|(_, ms)| ms.iter().map(|m| m.probe.as_str()))
        .collect();
    let cpu = |r: &RunRecord| r.fingerprint.get("cpu_model").cloned();
    let settings =
        |r: &RunRecord| oslab_core::conditions::configuration(&r.fingerprint, &r.environment);
    let configured = [settings(like)];
    let mut out = Vec::new();
    for summary in store.runs()? {
        if out.len() == HISTORY_RUNS {
            break;
        }
        if summary.hostname != like.hostname || compared.contains(&summary.id) {
            continue;
        }
        let (record, ms) = store.load_run_summaries(&RunRef::Id(summary.id))?;
        let shares = ms.iter().any(|m| probes.contains(m.probe.as_str()));
        let alike = oslab_core::conditions::diff(&configured, &[settings(&record)]).is_empty();
        if record.quick == like.quick && cpu(&record) == cpu(like) && shares && alike {
            out.push((record, ms));
        }
    }
    Ok(out)
}

/// One side: how it was chosen and its runs.
pub struct Side<'a> {
    /// The selector as the user gave it, in words (`runs 3, 4, 5`, `tag kernel=6.18`).
    pub set: String,
    /// Its runs.
    pub runs: &'a Loaded,
}

impl Side<'_> {
    /// The core clock its runs measured (median), GHz.
    /// Each run's measurements.
    fn measured(&self) -> Vec<&[oslab_core::model::Measurement]> {
        self.runs.iter().map(|(_, m)| &m[..]).collect()
    }

    fn cpu_pair_latency(&self) -> Option<f64> {
        oslab_core::stats::compare::cpu_pair_latency(&self.measured())
    }

    fn ids(&self) -> Vec<i64> {
        self.runs.iter().filter_map(|(r, _)| r.id).collect()
    }

    /// Repetitions per run (the most any measurement of the run has).
    fn repetitions(&self) -> Vec<u32> {
        self.runs
            .iter()
            .map(|(_, ms)| ms.iter().map(|m| m.repetition).max().unwrap_or(1))
            .collect()
    }

    fn describe(&self) -> String {
        let ids: Vec<String> = self.ids().iter().map(|i| i.to_string()).collect();
        let reps = self.repetitions();
        let total: u32 = reps.iter().sum();
        let when = match (self.runs.first(), self.runs.last()) {
            (Some((a, _)), Some((b, _))) if self.runs.len() > 1 => {
                format!("{} to {}", a.started, b.started)
            }
            (Some((a, _)), _) => a.started.clone(),
            _ => String::new(),
        };
        let runs = if ids.len() == 1 {
            format!("run {}", ids[0])
        } else {
            format!("runs {}", ids.join(", "))
        };
        let chosen = if self.set.starts_with("tag ") {
            format!("{}: ", self.set)
        } else {
            String::new()
        };
        format!(
            "{chosen}{runs} ({when}), {total} repetition{}",
            if total == 1 { "" } else { "s" }
        )
    }
}

/// A comparison of side B against the baseline side A.
pub struct Comparison<'a> {
    /// The baseline.
    pub a: Side<'a>,
    /// The side compared with it.
    pub b: Side<'a>,
    /// Its rows.
    pub rows: Vec<Row>,
    /// The threshold asked for.
    pub threshold: f64,
    /// Earlier runs the drift between runs was learnt from; None when set aside
    /// (`--no-history`: single runs judged by their repetitions alone).
    pub history: Option<usize>,
}

/// "1 row", "5 rows".
fn rows(n: usize) -> String {
    match n {
        1 => "1 row".into(),
        n => format!("{n} rows"),
    }
}

/// A row's verdict in words.
pub fn verdict_text(r: &Row) -> String {
    match r.judgement.verdict {
        Verdict::Better => "better",
        Verdict::Regression => "REGRESSION",
        Verdict::Changed => "changed",
        Verdict::Same => r.judgement.no_difference_text(),
        Verdict::RatioOnly => "ratio only",
        Verdict::CacheMoved => "cache moved",
        Verdict::PlacementMoved => "cpus sat differently",
        // The side with more other work beside it: by how much was recorded, else where more
        // repetitions had other work beside them.
        Verdict::LoadMoved => {
            let more_in_a = match r.other_work {
                [Some(a), Some(b)] if a != b => a > b,
                _ => r.contended[0][1] * r.contended[1][0] > r.contended[1][1] * r.contended[0][0],
            };
            match more_in_a {
                true => "more other work in A",
                false => "more other work in B",
            }
        }
        Verdict::CannotTell => {
            return format!("cannot tell (±{:.0}%)", r.judgement.unseen() * 100.0);
        }
        Verdict::Unknown => match r.present {
            [true, false] => "only in A",
            [false, true] => "only in B",
            _ if r.judgement.n.contains(&0) && r.slowed.iter().any(|n| *n > 0) => {
                "slowed core only"
            }
            _ if r.judgement.a.is_none() || r.judgement.b.is_none() => "no value",
            _ => "no ratio (values <= 0)",
        },
    }
    .to_string()
}

/// What a CI gate (`compare --fail-on-regression`) makes of comparisons: regressions beyond the
/// threshold fail; with nothing judged (too few repetitions, no history) the gate cannot say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// Nothing regressed.
    Pass,
    /// This many rows regressed.
    Regressed(usize),
    /// No row could be judged.
    Unjudged,
}

/// The gate's verdict on `comparisons`.
pub fn gate(comparisons: &[Comparison]) -> Gate {
    let regressions: usize = comparisons
        .iter()
        .map(|c| c.count(Verdict::Regression))
        .sum();
    let judged = comparisons.iter().flat_map(|c| &c.rows).any(|r| {
        !matches!(
            r.judgement.verdict,
            Verdict::RatioOnly | Verdict::Unknown | Verdict::CannotTell
        )
    });
    match (regressions, judged) {
        (0, false) => Gate::Unjudged,
        (0, true) => Gate::Pass,
        (n, _) => Gate::Regressed(n),
    }
}

impl Comparison<'_> {
    /// Why the two sides cannot be compared at all: no measurement is on both (a shuffle-eval
    /// run against a cpuman run printed two hundred lines of "only in B").
    pub fn unrelated(&self) -> Option<String> {
        if self.rows.iter().any(|r| r.present == [true, true]) {
            return None;
        }
        let what = |s: &Side| {
            let commands: std::collections::BTreeSet<String> = s
                .runs
                .iter()
                .map(|(r, _)| {
                    let c = crate::views::program_named(&r.command);
                    oslab_core::text::one_line(&oslab_core::text::printable(&c)).into_owned()
                })
                .collect();
            format!(
                "{} (`{}`)",
                s.set,
                commands.into_iter().collect::<Vec<_>>().join("`, `")
            )
        };
        Some(format!(
            "{} and {} have no measurement in common: they measured different things; compare runs of one command",
            what(&self.a),
            what(&self.b)
        ))
    }

    /// How many rows have verdict `v`.
    pub fn count(&self, v: Verdict) -> usize {
        self.rows
            .iter()
            .filter(|r| r.judgement.verdict == v)
            .count()
    }

    /// Whether a row is worth showing by default: it changed, cannot be compared, what it got
    /// moved (its pages), or (unjudged) its ratio lies beyond the threshold.
    fn notable(&self, r: &Row) -> bool {
        if !r.got_moved.is_empty() {
            return true;
        }
        match r.judgement.verdict {
            // Counted in the tally and said in a note; `--all` lists them.
            Verdict::Same | Verdict::CannotTell => false,
            Verdict::RatioOnly => r
                .judgement
                .ratio
                .is_some_and(|x| (x - 1.0).abs() > self.threshold),
            _ => true,
        }
    }

    /// The rows shown: every one with `all`, else the notable ones.
    pub fn shown(&self, all: bool) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|r| all || self.notable(r))
            .collect()
    }

    /// How many rows got each verdict, in a line.
    pub fn tally(&self) -> String {
        // Said only where it happened: most comparisons have no moved cache or load.
        let mut moved = String::new();
        for (v, what) in [
            (Verdict::CacheMoved, "where the cache moved"),
            (Verdict::LoadMoved, "where other work differed"),
            (
                Verdict::PlacementMoved,
                "crossing cpus that sat differently",
            ),
            (Verdict::CannotTell, "that cannot tell (a band too wide)"),
        ] {
            if self.count(v) > 0 {
                moved += &format!(" {} {what},", self.count(v));
            }
        }
        let got = match self.rows.iter().filter(|r| !r.got_moved.is_empty()).count() {
            0 => String::new(),
            n => format!(" ({n} whose pages or placement moved)"),
        };
        format!(
            "{} compared{got}: {} regressions, {} better, {} changed (no better direction),{moved} {} no difference shown, {} ratio only, {} not comparable",
            self.rows.len(),
            self.count(Verdict::Regression),
            self.count(Verdict::Better),
            self.count(Verdict::Changed),
            self.count(Verdict::Same),
            self.count(Verdict::RatioOnly),
            self.count(Verdict::Unknown),
        )
    }

    /// The settings that change costs and differ between the sides (conditions::diff), and
    /// the other work each side's runs began beside and measured beside.
    pub fn moved(&self) -> Vec<oslab_core::conditions::Moved> {
        let settings = |s: &Side| -> Vec<Vec<oslab_core::conditions::Setting>> {
            s.runs
                .iter()
                .map(|(r, ms)| {
                    let mut c =
                        oslab_core::conditions::configuration(&r.fingerprint, &r.environment);
                    c.extend(oslab_core::conditions::other_work(&r.environment));
                    c.extend(oslab_core::conditions::other_work_measuring(ms));
                    c
                })
                .collect()
        };
        oslab_core::conditions::diff(&settings(&self.a), &settings(&self.b))
    }

    /// The comparison as text: the answer first (the tally, the false alarms such a verdict
    /// has), the sides, what moved, the changed rows, notes; how a change is called with
    /// `details`.
    pub fn text(&self, View { all, details }: View) -> String {
        let mut out = self.tally();
        out.push_str(if all {
            "\n"
        } else {
            " (--all shows every row)\n"
        });
        out.push_str(FALSE_ALARMS_SHORT);
        out.push('\n');
        out.push_str(&format!(
            "A: {}\nB: {}\n",
            self.a.describe(),
            self.b.describe()
        ));
        // What moved between the sides comes first: a difference below may be its doing.
        let moved = self.moved();
        if !moved.is_empty() {
            let lines: Vec<String> = moved
                .iter()
                .map(|m| format!("  {}", oslab_core::text::one_line(&m.to_string())))
                .collect();
            out.push_str(&format!(
                "what moved between A and B (a difference below may be theirs, not your change's):\n{}\n",
                lines.join("\n")
            ));
        }
        if let Some((a, b, c)) = oslab_core::stats::compare::clocks_apart(
            &self.a.measured(),
            &self.b.measured(),
            self.threshold,
        ) {
            out.push_str(&format!(
                "The core clock differed: A {a:.2} GHz, B {b:.2} GHz ({:.1}% apart, beyond how far runs' estimates drift): cycle-bound times move with it, so a difference of that size may be the clock's (turbo, a busy host) rather than the software's.\n",
                c * 100.0
            ));
        }
        // The changed rows first, in one table, the largest first: the answer, on the first
        // screen (per family they sat among rows that moved for other reasons, 245 lines down).
        let shown = self.shown(all);
        let (changed, rest): (Vec<&Row>, Vec<&Row>) = shown
            .into_iter()
            .partition(|r| r.judgement.verdict.is_change());
        if !changed.is_empty() {
            out.push_str(&table(&changed, &[], Grouping::Changed));
            out.push_str("\n\n");
        }
        // Rows one side did not measure at all are counted, not listed (a side that measured a
        // few probes listed 364 rows `only in A` above its two regressions); `--all` lists them.
        let (one_sided, rest): (Vec<&Row>, Vec<&Row>) = rest
            .into_iter()
            .partition(|r| !all && r.present.contains(&false));
        if !rest.is_empty() {
            out.push_str(&table(&rest, &self.rows, Grouping::Family));
            out.push('\n');
        }
        for (side, present) in [("A", [true, false]), ("B", [false, true])] {
            let only: Vec<&&Row> = one_sided.iter().filter(|r| r.present == present).collect();
            if only.is_empty() {
                continue;
            }
            let families = catalog::families(only.iter().map(|r| r.probe.as_str()));
            out.push_str(&format!(
                "{} only in {side} (the other side did not measure them; --all lists them): {}\n",
                oslab_core::units::counted(only.len(), "row"),
                families.join(", ")
            ));
        }
        for note in self.notes() {
            out.push_str(&note);
            out.push('\n');
        }
        // How the verdicts were reached, in full, on request: the answer needs the screen.
        if details {
            out.push_str(&self.method());
            out.push('\n');
        }
        out
    }

    /// How a change is called, and how often the rule cries wolf on identical runs.
    pub fn method(&self) -> String {
        let history = match self.history {
            Some(runs) if runs >= 3 => format!(" and, for a side of repetitions, to how far its runs drift apart (99% of pairs, from {runs} earlier runs of this machine and suite)"),
            _ => String::new(),
        };
        // Where the drift of rows no earlier run shows came from, each said once with its rows.
        let stand_ins: String = [
            (DriftFrom::Rows, "of one or two runs that no earlier runs show, to how far this comparison's rows scatter about their common ratio (±{d}, 99% of rows)"),
            (DriftFrom::Machine, "the history does not show, to how far its other measurements drift (±{d}, their upper quartile)"),
            (DriftFrom::Assumed, "that neither earlier runs nor enough rows show, to an assumed ±{d} (how far runs of a shared 2-vCPU guest drift: keep a few runs in the store, or give 3 runs a side, to judge by this machine's own)"),
        ]
        .iter()
        .filter_map(|(from, what)| {
            let (d, n) = self.drift_taken(*from)?;
            Some(format!("; in {} {}", rows(n), what.replace("{d}", &percent(d))))
        })
        .collect();
        format!(
            "A change is called when the interval of B/A (90% from 3 replicates a side, 95% from 4, 99% from 5) lies beyond the band: ±{:.1}%, widened to the spread of a side's replicates (one per run from 3 runs a side; else the repetitions of its one or two runs, pooled, the spread taken within a run; never the samples within one){history}{stand_ins}.\n{FALSE_ALARMS}",
            self.threshold * 100.0,
        )
    }

    /// The band the rows' scatter gave the rows of a single run no earlier run showed, and how
    /// many rows took it.
    fn scatter(&self) -> Option<(f64, usize)> {
        self.drift_taken(DriftFrom::Rows)
    }

    /// The drift taken from `from` (one figure for all the rows that took it) and how many rows
    /// took it.
    fn drift_taken(&self, from: DriftFrom) -> Option<(f64, usize)> {
        let taken: Vec<f64> = self
            .rows
            .iter()
            .filter(|r| r.drift_from == Some(from))
            .filter_map(|r| r.drift)
            .collect();
        Some((*taken.first()?, taken.len()))
    }

    /// Whether the sides' two cpus sat differently on the host (core-to-core latency more than
    /// 1.5x apart), and what that moves.
    fn placement_note(&self) -> Option<String> {
        let (a, b) = (self.a.cpu_pair_latency()?, self.b.cpu_pair_latency()?);
        let apart = (b / a).max(a / b);
        let moved = match self.count(Verdict::PlacementMoved) {
            0 => String::new(),
            n => format!(
                " Beyond the band, {} crossing cpus {} `cpus sat differently`, not better or worse.",
                rows(n),
                if n == 1 { "reads" } else { "read" }
            ),
        };
        (apart > PLACEMENT_APART).then(|| format!(
            "The cpus sat differently: core-to-core latency A {} ns, B {} ns ({apart:.1}x). On a VM the host places its vCPUs anew (sharing a core, a cache, or neither): what crosses cpus (wake-ups on another cpu, core-to-core latency, cross-cpu switches, the NUMA matrix) moves with it, whatever the software did.{moved}",
            num(a),
            num(b)
        ))
    }

    /// What a reader needs to know about the verdicts: rows left unjudged and why, and
    /// verdicts reached without knowing how far runs drift apart.
    pub fn notes(&self) -> Vec<String> {
        // Unjudged for too few repetitions.
        // Too few repetitions: measured so, or left out for a slowed core (each says why).
        let (slowed, few) = self
            .rows
            .iter()
            .filter(|r| r.judgement.verdict == Verdict::RatioOnly)
            .fold((0, 0), |(s, f), r| match r.slowed.iter().any(|n| *n > 0) {
                true => (s + 1, f),
                false => (s, f + 1),
            });
        let called = self.count(Verdict::Regression) + self.count(Verdict::Better);
        let single = self
            .rows
            .iter()
            .any(|r| r.replicates.contains(&Replicates::Repetitions));
        let mut notes: Vec<String> = self.placement_note().into_iter().collect();
        notes.extend(self.why_only_one_side());
        if called > 0 && single && self.history.is_none() && self.scatter().is_none() {
            notes.push("Judged without history: a side of one run has only its repetitions as replicates, which show the noise within a run, not how far the machine drifts between runs. On a shared host, confirm with runs taken alternately and compared as groups (`oslab compare 1,3,5 2,4,6`).".to_string());
        }
        let varied: Vec<String> = [&self.a, &self.b]
            .iter()
            .flat_map(|s| s.runs.iter())
            .filter(|(r, _)| core_speed_varied(r))
            .filter_map(|(r, _)| r.id.map(|id| id.to_string()))
            .collect();
        if !varied.is_empty() {
            notes.push(format!(
                "The measuring core's speed varied within run{} {} (another guest on the same physical core, or a clock change; `oslab show` gives the range): a single run's medians move with it, so compare groups of runs taken alternately.",
                if varied.len() == 1 { "" } else { "s" },
                varied.join(", ")
            ));
        }
        let moved = self.count(Verdict::CacheMoved);
        if let Some([lo, hi]) = self
            .rows
            .iter()
            .find_map(|r| r.cache_edge)
            .filter(|_| moved > 0)
        {
            notes.push(format!(
                "The cache that served the cpu moved between the sides: the latency curves put the step from cache to memory at different sizes, between {} and {}. Working sets there measure how much cache the cpu had (on a shared host, what other work left of it; on another machine, that machine's), not what else was compared: {} beyond the band there {} `cache moved`, not a regression or an improvement. On one machine, compare several runs a side taken alternately (`compare 1,3,5 2,4,6`).",
                bytes(lo as u64),
                bytes(hi as u64),
                rows(moved),
                if moved == 1 { "reads" } else { "read" }
            ));
        }
        let loaded = self.count(Verdict::LoadMoved);
        if loaded > 0 {
            notes.push(format!(
                "Other work competed for the cpus on one side's repetitions and not on the other's, or as much again ({} cpus or more apart), in {}: beyond the band there, the difference is the load's, not what was compared (`more other work in A/B`). Measure both sides alike: quiet, or beside the same load, taken alternately.",
                oslab_core::stats::compare::LOAD_APART,
                rows(loaded)
            ));
        }
        let blind = self.count(Verdict::CannotTell);
        if blind > 0 {
            notes.push(format!(
                "{} cannot tell: no difference was shown, but their band or interval reaches beyond ±{:.0}% (their replicates' spread, or how far runs drift), so a change of the size that counts could not have been seen; more runs a side narrow it.",
                rows(blind),
                oslab_core::stats::compare::BLIND_BAND * 100.0
            ));
        }
        if slowed > 0 {
            notes.push(format!(
                "Too few replicates to judge in {}: some of their repetitions were measured on a slowed core (another guest on the same physical core) and are left out (`n` says how many); measure again when the host is quieter, or give several runs a side.",
                rows(slowed)
            ));
        }
        if few > 0 {
            notes.push(format!(
                "Too few repetitions to judge in {} (3 a side are needed): measure with `oslab run --repeat 3`, or give several runs a side (`compare 1,2,3 4,5,6`, `tag:KEY=VALUE`).",
                rows(few)
            ));
        }
        notes
    }

    /// For a probe measured on one side only, why the other has none: its skip or failure
    /// there (`faults.thp` with THP off read `only in A` without the kernel's answer).
    fn why_only_one_side(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in self.rows.iter().filter(|r| r.present.contains(&false)) {
            let (side, name) = match r.present {
                [true, false] => (&self.b, "B"),
                _ => (&self.a, "A"),
            };
            use oslab_core::model::Status;
            let why = side
                .runs
                .iter()
                .flat_map(|(_, ms)| ms.iter())
                .filter(|m| m.probe == r.probe)
                .find_map(|m| match &m.status {
                    Status::Skipped(why) => Some(("skipped", why)),
                    Status::Failed(why) => Some(("failed", why)),
                    _ => None,
                });
            if let Some((what, why)) = why {
                let line = format!(
                    "{} has no value in {name}: {what} there: {}",
                    r.probe,
                    oslab_core::text::one_line(why)
                );
                if !out.contains(&line) {
                    out.push(line);
                }
            }
        }
        out
    }

    /// The comparison as JSON (schema `oslab.compare/2`).
    pub fn json(&self) -> serde_json::Value {
        let side = |s: &Side| serde_json::json!({"set": s.set, "runs": s.ids(), "repetitions": s.repetitions()});
        serde_json::json!({
            "history_runs": self.history,
            "cpu_pair_latency_ns": [self.a.cpu_pair_latency(), self.b.cpu_pair_latency()],
            "notes": self.notes(),
            "moved": self.moved(),
            "a": side(&self.a),
            "b": side(&self.b),
            "rows": self.rows,
        })
    }
}

/// Whether the run carries a `core-speed` warning: the core it measured on ran a fixed loop at
/// speeds more than 15% apart during the run.
fn core_speed_varied(run: &RunRecord) -> bool {
    run.environment["warnings"]
        .as_array()
        .is_some_and(|ws| ws.iter().any(|w| w["kind"] == "core-speed"))
}

/// `±3%` of a side's spread, or nothing from fewer than 3 replicates.
fn spread_text(s: Option<f64>) -> String {
    s.map_or(String::new(), |s| format!(" ±{}", percent(s)))
}

/// A signed change: `+2.4%`, `-12%`.
fn change(x: f64) -> String {
    match percent(x) {
        p if x >= 0.0 => format!("+{p}"),
        p => p,
    }
}

/// How [`table`] groups its rows.
#[derive(Clone, Copy, PartialEq)]
enum Grouping {
    /// One table headed "changed", each row named by its whole probe.
    Changed,
    /// A table per family, named within it, closed by the family's geometric mean.
    Family,
}

/// The comparison's rows as benchstat prints them, one table per family or one of the changed
/// rows (`grouping`): A and B each with its spread (`±%`), the change (`~` when the interval
/// cannot tell it from none), its interval, the evidence, the verdict; the largest changes
/// first; a geometric mean of the family's ratios (over `all` its rows, shown or not) closes a
/// family's table.
fn table(shown: &[&Row], all: &[Row], grouping: Grouping) -> String {
    let narrow = crate::table::width().is_some_and(|w| w < 100);
    let mut out = String::new();
    let groups = match grouping {
        Grouping::Changed => vec!["changed"],
        Grouping::Family => catalog::families(shown.iter().map(|r| r.probe.as_str())),
    };
    for f in groups {
        let mut rows: Vec<&&Row> = shown
            .iter()
            .filter(|r| grouping == Grouping::Changed || catalog::prefix(&r.probe) == f)
            .collect();
        let size = |r: &Row| r.judgement.ratio.map_or(-1.0, |x| x.ln().abs());
        rows.sort_by(|x, y| size(y).total_cmp(&size(x)));
        // Narrow, A and B share a column, one above the other.
        let mut t = match narrow {
            false => Table::new(
                &[f, "A", "B", "change", "interval", "evidence", "verdict"],
                &[1, 2, 3, 4],
            )
            .optional(&[4, 5]),
            true => Table::new(&[f, "A, B", "change", "verdict"], &[1, 2]),
        };
        for r in rows {
            let c = row_cells(r, narrow, grouping);
            t.row(match narrow {
                false => c,
                true => vec![
                    c[0].clone(),
                    format!("{}\n{}", c[1], c[2]),
                    c[3].clone(),
                    c[6].clone(),
                ],
            });
        }
        let ratios: Vec<f64> = all
            .iter()
            .filter(|r| catalog::prefix(&r.probe) == f)
            .filter_map(|r| r.judgement.ratio.filter(|x| *x > 0.0 && x.is_finite()))
            .collect();
        if ratios.len() > 1 {
            let gm = (ratios.iter().map(|x| x.ln()).sum::<f64>() / ratios.len() as f64).exp();
            let mut cells = vec![String::new(); t.header.len()];
            cells[0] = format!("geomean of {} ratios", ratios.len());
            cells[if narrow { 2 } else { 3 }] = change(gm - 1.0);
            t.row(cells);
        }
        out.push_str(&crate::table::render(&t));
        out.push_str("\n\n");
    }
    out.trim_end().to_string()
}

/// A comparison row's parts as the terminal and the report show them.
pub struct Parts {
    /// The probe (within its family, or whole) and metric.
    pub what: String,
    /// Its parameters, for reading.
    pub params: String,
    /// A's median and spread: `119 ns ±0.9%`.
    pub a: String,
    /// B's.
    pub b: String,
    /// The change: `+97%`, `~+3.1%` when not told apart from none, `-` when not compared.
    pub change: String,
    /// Its interval: `+86% … +104% (90%)`.
    pub interval: String,
    /// The evidence in words: `beyond ±7%, n=3+3` (the interval against the band).
    pub evidence: String,
    /// The verdict in words.
    pub verdict: String,
    /// What the row got that moved between the sides, a line each.
    pub got_moved: Vec<String>,
}

/// A row's [`Parts`]; `whole` names it by its whole probe, else within its family.
pub fn parts(r: &Row, whole: bool) -> Parts {
    let j = &r.judgement;
    let (div, sym) = scale_for(r.unit, j.a.or(j.b).unwrap_or(0.0));
    let value = |v: Option<f64>, s: Option<f64>| {
        v.map_or("-".into(), |v| {
            format!("{} {sym}{}", figure(v / div, r.unit), spread_text(s))
        })
    };
    // The family heads a table: a probe that is its own family (`host`) adds nothing to it.
    let name = match whole {
        true => r.probe.as_str(),
        false => r.probe.split_once('.').map_or("", |(_, rest)| rest),
    };
    let what = [name, r.metric.as_str()]
        .iter()
        .filter(|s| !s.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ");
    let shift = match (j.a, j.b) {
        (Some(a), Some(b)) => format!(
            "{}{} {sym}",
            if b >= a { "+" } else { "" },
            num((b - a) / div)
        ),
        _ => "-".into(),
    };
    let change = match (j.verdict, j.ratio) {
        // benchstat's `~`: no change told apart from none (the size is still shown).
        (Verdict::Same | Verdict::CannotTell, Some(x)) => format!("~{}", self::change(x - 1.0)),
        (Verdict::Same | Verdict::CannotTell, None) => "~0".to_string(),
        (Verdict::Unknown, _) => "-".to_string(),
        (_, Some(x)) => self::change(x - 1.0),
        (_, None) => shift,
    };
    let interval = match (j.interval, j.confidence) {
        (Some([lo, hi]), Some(c)) => {
            format!(
                "{} … {} ({:.0}%)",
                self::change(lo - 1.0),
                self::change(hi - 1.0),
                c * 100.0
            )
        }
        _ => String::new(),
    };
    // Repetitions left out for a slowed core are counted, never silently gone.
    let slowed = match r.slowed {
        [0, 0] => String::new(),
        [a, b] => format!(" (-{}+{} slowed)", a, b),
    };
    // The evidence in words: where the interval lies against the band decides, not p (a
    // benchstat reader takes p=0.100, the least 3+3 replicates can give, for no difference).
    let n = format!("n={}+{}{slowed}", j.n[0], j.n[1]);
    let band = percent(j.band);
    let evidence = match j.verdict {
        v if v.is_change() && j.interval.is_some() => format!("beyond ±{band}, {n}"),
        Verdict::Same => format!("within ±{band}, {n}"),
        _ => n,
    };
    Parts {
        what,
        params: r.params.clone(),
        a: value(j.a, j.spread[0]),
        b: value(j.b, j.spread[1]),
        change,
        interval,
        evidence,
        verdict: verdict_text(r),
        got_moved: r
            .got_moved
            .iter()
            .map(|m| oslab_core::text::one_line(&m.to_string()).into_owned())
            .collect(),
    }
}

/// One row's cells for [`table`] (`narrow`: parameters under the name): its name, A, B,
/// change, interval, p and n, verdict.
fn row_cells(r: &Row, narrow: bool, grouping: Grouping) -> Vec<String> {
    let p = parts(r, grouping == Grouping::Changed);
    // Parameters go under the name when long or the terminal narrow, so the numbers keep their
    // columns.
    let name = match p.params.as_str() {
        "" => p.what,
        params if narrow || p.what.chars().count() + params.chars().count() > 32 => {
            format!(
                "{}\n  {}",
                p.what,
                oslab_core::text::wrap(params, 28).replace('\n', "\n  ")
            )
        }
        params => format!("{} {params}", p.what),
    };
    vec![
        name,
        p.a,
        p.b,
        p.change,
        p.interval,
        p.evidence,
        // What the row got that moved between the sides comes with its verdict.
        std::iter::once(p.verdict)
            .chain(p.got_moved)
            .collect::<Vec<_>>()
            .join("\n"),
    ]
}

#[cfg(test)]
mod tests {
    use oslab_core::model::{Measurement, Status, Unit};
    use oslab_core::stats::Summary;

    #[test]
    fn the_cpu_placement_of_a_side_reads_every_repetition() {
        // The first repetition's cpus sat close (23 ns), the two after far apart (111 ns).
        let c2c = |repetition: u32, value: f64| {
            let mut x = Measurement::not_taken(
                oslab_core::catalog::id::C2C_LATENCY,
                oslab_core::params! {"from" => 0, "to" => 1},
                "one_way",
                Unit::Ns,
                Status::Ok,
            );
            x.summary = Summary::new(&[value, value, value]);
            x.repetition = repetition;
            x
        };
        let run = [c2c(1, 23.0), c2c(2, 111.0), c2c(3, 111.0)];
        let latency = oslab_core::stats::compare::cpu_pair_latency(&[&run[..]]).unwrap();
        assert!((latency - 111.0).abs() < 5.0, "{latency}");
    }
}
