//! One view of a fleet run: the same measurements taken on many nodes, each node's value against
//! the fleet median, and the nodes that stand out. The slow node with a misconfigured governor or
//! a bad DIMM is what users look for; a healthy node called an outlier sends them chasing noise.
//!
//! A node's value stands out of a measurement only when all three hold:
//! - it lies at least the minimum effect from the fleet median (5% unless asked otherwise): a
//!   node 1% off is no finding, however quiet the fleet;
//! - its own interval (the hull of its repetitions' intervals) excludes the fleet median: a
//!   node that cannot tell its own value apart from the median is not apart from it;
//! - its deviation lies beyond the noise between nodes by a z corrected for how many values were
//!   judged (Bonferroni over measurements x nodes, 5% for the whole fleet): the noise is the
//!   robust spread (MAD, corrected for few values) of the row's log values, never below a floor
//!   (three nodes' MAD is one gap, often near nothing): the median spread of the probe's rows
//!   where it has at least three (one mechanism measured several ways is as steady in each:
//!   nine argument counts of a call agreeing within 0.3% on every healthy guest), else the
//!   median of every row's; widened for a deviation from a median the node itself moves.
//!
//! Every repetition counts: a node's value is the median of its repetitions' medians.

use oslab_core::machine::OtherWork;
use oslab_core::model::{Cause, Measurement, Status, Unit};
use oslab_core::stats::compare::key;
use oslab_core::stats::median;
use oslab_core::stats::ranks::normal_quantile_upper;
use serde::Serialize;

/// The smallest deviation from the fleet median that is called, unless asked otherwise.
pub const DEFAULT_MIN_EFFECT: f64 = 0.05;

/// The chance that a healthy fleet shows any outlier value at all, before the minimum effect and
/// the nodes' own intervals (which only lower it).
pub const FAMILY_ALPHA: f64 = 0.05;

/// The share of a node's values that must stand out for the node to be called an outlier
/// without a family shift.
pub const OUTLIER_SHARE: f64 = 0.25;

/// Nodes a measurement needs before one can stand out of it.
pub const MIN_NODES: usize = 3;

/// One node's run.
#[derive(Debug, Clone)]
pub struct NodeRun {
    /// Node name (the Slurm node).
    pub node: String,
    /// Its run id in the store.
    pub run_id: i64,
    /// When its run began (RFC 3339).
    pub started: String,
    /// How its run ended: a partial or crashed run's values are judged, and its state said.
    pub state: crate::NodeState,
    /// Its measurements.
    pub measurements: Vec<Measurement>,
    /// Its machine's shape (`Topology::shape`), when the run recorded it.
    pub shape: Option<String>,
    /// Its configuration ([`oslab_core::conditions::configuration`]): a node unlike most is
    /// drifted, however healthy its figures.
    pub settings: Vec<oslab_core::conditions::Setting>,
    /// Other work on the node as its run began, when the run recorded it.
    pub other_work: Option<OtherWork>,
    /// A node of an earlier job judged healthy then (`fleet summary --baseline`): it counts in
    /// every median and majority, and gets no verdict of its own.
    pub reference: bool,
}

/// What the fleet makes of one node: the answer a scheduler acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Health {
    /// Its figures and its configuration are the fleet's.
    Healthy,
    /// Its configuration differs from most nodes' (its figures may be fine, or apart for it).
    Drifted,
    /// Its figures stand apart ([`FleetSummary::outlier_nodes`]) or one mechanism collapsed,
    /// with no other work or drifted setting to explain it.
    Outlier,
    /// Other work ran on it as it measured ([`Busy`]): whatever its figures, they are not the
    /// node's own.
    Busy,
    /// Its run was stopped and holds part of the suite.
    Partial,
    /// Its run or the node died.
    Crashed,
    /// Its task could not run the suite.
    Failed,
    /// Listed for the job, nothing from it.
    Missing,
    /// Its task never started (its binary not staged): not measured, not drained.
    NotRun,
    /// Of a shape too few nodes share to judge it among them, and unlike no majority of the
    /// fleet either: nothing to judge it against (never silently healthy).
    NotJudged,
}

impl Health {
    /// The verdict's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Health::Healthy => "healthy",
            Health::Drifted => "drifted",
            Health::Outlier => "outlier",
            Health::Busy => "busy",
            Health::Partial => "partial",
            Health::Crashed => "crashed",
            Health::Failed => "failed",
            Health::Missing => "missing",
            Health::NotRun => "not run",
            Health::NotJudged => "not judged",
        }
    }

    /// The verdict of a node whose run ended in `state`, before its figures are judged.
    fn of_state(state: &crate::NodeState) -> Health {
        match state {
            crate::NodeState::Ok => Health::Healthy,
            crate::NodeState::Partial => Health::Partial,
            crate::NodeState::Crashed => Health::Crashed,
            crate::NodeState::Failed => Health::Failed,
            crate::NodeState::Missing => Health::Missing,
            crate::NodeState::NotRun => Health::NotRun,
        }
    }
}

/// How far off every row of one mechanism must be, at least, for the mechanism to have
/// collapsed on a node: twice or half the fleet's value (a runaway process made every cross-cpu
/// wake-up 190-550x slower; a healthy node's single values have read +68,581% alone).
pub const COLLAPSED: f64 = 1.0;

/// A mechanism (a probe family's metric: every `switch` wake-up) off by far on a node: at least
/// two of its rows outliers there, all one way, each at least [`COLLAPSED`] off, and at least
/// half the node's rows of it.
#[derive(Debug, Clone, Serialize)]
pub struct Collapsed {
    /// The family and metric (`switch wake_up`).
    pub mechanism: String,
    /// Its rows apart, and its rows the node measured.
    pub rows: [usize; 2],
    /// The smallest and largest deviation of those apart.
    pub deviation: [f64; 2],
}

/// The share of a node's measurements taken beside other work that makes the node busy: most of
/// them (a probe counts contention as other work keeping [`OtherWork::COMPETES`] cpus busy, or
/// its thread preempted, or its cpu stolen).
pub const BUSY_SHARE: f64 = 0.5;

/// Other work on a node, from its run: what ran as the run began (named), and how many of its
/// measurements were taken beside other work. A stray busy loop left by an earlier job is the
/// case a site meets most; its node measures slow cross-cpu wake-ups first.
#[derive(Debug, Clone, Serialize)]
pub struct Busy {
    /// What ran as the run began.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_start: Option<OtherWork>,
    /// Its measurements marked contended, and its measurements with a value.
    pub contended: [usize; 2],
}

impl Busy {
    /// Why the node counts as busy, or None: other work at the start beyond
    /// [`OtherWork::COMPETES`], or [`BUSY_SHARE`] of its measurements contended.
    fn why(&self) -> Option<String> {
        let start = self
            .at_start
            .as_ref()
            .filter(|o| o.cpus >= OtherWork::COMPETES);
        let [c, n] = self.contended;
        let most = n > 0 && c as f64 >= BUSY_SHARE * n as f64;
        let mut why: Vec<String> = start
            .map(|o| format!("other work as it began: {}", o.describe()))
            .into_iter()
            .collect();
        // None marked is no evidence of none beside (an emulated cpu's rows are marked for
        // that, not for contention): the count is said where some were.
        if c > 0 && (most || start.is_some()) {
            why.push(format!("{c} of {n} measurements taken beside other work"));
        }
        (!why.is_empty()).then(|| why.join("; "))
    }
}

/// One node's value of one measurement.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// The median of the node's repetitions' medians.
    pub value: f64,
    /// (value - fleet median) / fleet median.
    pub deviation: f64,
    /// Its log deviation over the noise between nodes, when the fleet has at least
    /// [`MIN_NODES`] values and some noise.
    pub z: Option<f64>,
    /// Beyond the minimum effect, its own interval and the corrected z (the module says).
    pub outlier: bool,
}

/// One measurement across the fleet.
#[derive(Debug, Clone, Serialize)]
pub struct FleetRow {
    /// Probe id.
    pub probe: String,
    /// Parameters (placement left out, as in compare).
    pub params: String,
    /// Metric.
    pub metric: String,
    /// Unit.
    pub unit: Unit,
    /// Median of the nodes' values.
    pub median: f64,
    /// Per node, in [`FleetSummary::nodes`] order; None where the node has no value.
    pub cells: Vec<Option<Cell>>,
}

impl FleetRow {
    /// "probe params metric", for one line of text.
    pub fn label(&self) -> String {
        [&self.probe, &self.params, &self.metric]
            .iter()
            .filter(|s| !s.is_empty())
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// What one node looks like against the fleet.
#[derive(Debug, Clone, Serialize)]
pub struct NodeVerdict {
    /// Node name.
    pub node: String,
    /// Its run id; none for a node listed for the job that handed in nothing.
    pub run_id: Option<i64>,
    /// How its run ended.
    pub state: crate::NodeState,
    /// The fleet's verdict on it.
    pub verdict: Health,
    /// Why, in short clauses (`clocksource hpet (3 others: tsc)`); empty when healthy.
    pub why: Vec<String>,
    /// Its settings unlike most nodes'.
    pub drift: Vec<oslab_core::conditions::Odd>,
    /// Its mechanisms that collapsed.
    pub collapsed: Vec<Collapsed>,
    /// Measurements with a value.
    pub measured: usize,
    /// Measurements where it is an outlier.
    pub outliers: usize,
    /// Its largest |z| (row label, deviation, z).
    pub worst: Option<(String, f64, f64)>,
    /// The probe families in which it stands apart as a whole ([`Shift`]).
    pub shifts: Vec<Shift>,
    /// Other work on it ([`Busy`]).
    pub busy: Busy,
}

/// A node apart from the others across a whole probe family: its typical deviation from the
/// fleet median (the median over the family's measurements) at least the minimum effect,
/// and its probes deviating one way more often than chance allows (a sign test over each
/// probe's median deviation); every probe of the node is also tested as one family
/// ([`ALL_PROBES`]). The trials are probes, not rows: the rows of one probe share its mechanism
/// (twenty context-switch rows are a few switch paths measured several ways), and counted as
/// twenty coins they called a healthy guest's switches apart in three healthy jobs of four on a
/// busy host. A probe within the minimum effect of the median is a tie, left out as a sign
/// test leaves ties out (for a healthy node either way is as likely at any size, so leaving
/// out the small ones keeps the test exact and spends it on the probes that say something).
/// The tests are corrected as Tarone corrects discrete tests: Bonferroni over only the
/// families with enough probes to ever pass (a family of 6 probes cannot go below p = 1/32),
/// at [`FAMILY_ALPHA`]. A node slowed everywhere (a slower clock) or in one family (a bad DIMM:
/// memory) is found so even among three nodes, where one value cannot tell which of two gaps
/// is the noise.
#[derive(Debug, Clone, Serialize)]
pub struct Shift {
    /// The family: a probe id's part before its first dot (`memory`, `syscall`), or
    /// [`ALL_PROBES`].
    pub family: String,
    /// Its typical deviation, as a share (0.18: 18% above the others).
    pub deviation: f64,
    /// Measurements of the family it has a value in.
    pub measurements: usize,
    /// Probes of the family it has a value in (the sign test's trials).
    pub probes: usize,
    /// How many probes deviate the way the typical deviation does, by at least the minimum
    /// effect.
    pub same_way: usize,
    /// How many deviate the other way by as much (the rest are ties, within the minimum effect).
    pub against: usize,
    /// The sign test's two-sided p.
    pub p: f64,
}

/// The [`Shift::family`] of a node apart across every probe.
pub const ALL_PROBES: &str = "every probe";

/// The fleet view.
#[derive(Debug, Clone, Serialize)]
pub struct FleetSummary {
    /// How an outlier was called: the minimum effect and the corrected z.
    pub rule: Rule,
    /// Node names, sorted.
    pub nodes: Vec<String>,
    /// Each machine shape and its nodes, when the nodes are not all of one shape: their values
    /// differ by design, not as outliers of one kind of machine.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shapes: Vec<(String, Vec<String>)>,
    /// One row per measurement, in first-seen order.
    pub rows: Vec<FleetRow>,
    /// One verdict per node of the job (references have none), in `nodes` order.
    pub verdicts: Vec<NodeVerdict>,
    /// The nodes of an earlier job judged with these as a reference (`n1@4711`), when asked.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub references: Vec<String>,
    /// Where the nodes are of several shapes: each shape's nodes judged among themselves (the
    /// verdicts above are theirs; rows are then empty here).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<ShapeGroup>,
}

/// The nodes of one shape, judged among themselves ([`summarize_by_shape`]).
#[derive(Debug, Clone, Serialize)]
pub struct ShapeGroup {
    /// The shape (topology and memory).
    pub shape: String,
    /// Its nodes' summary.
    pub summary: FleetSummary,
}

/// Each machine shape and its nodes, in the order met.
fn shapes(runs: &[&NodeRun]) -> Vec<(String, Vec<String>)> {
    let mut shapes: Vec<(String, Vec<String>)> = Vec::new();
    for r in runs {
        let shape = r
            .shape
            .clone()
            .unwrap_or_else(|| "shape not recorded".into());
        match shapes.iter_mut().find(|(s, _)| *s == shape) {
            Some((_, nodes)) => nodes.push(r.node.clone()),
            None => shapes.push((shape, vec![r.node.clone()])),
        }
    }
    shapes
}

/// The pseudo-setting a node's shape is compared under across the fleet.
const SHAPE: &str = "shape";

/// The fleet view, each machine shape judged on its own: a node with four times the others'
/// memory or twice their cores differs by design, and judged against them it reads as an
/// outlier (or hides one: two shapes split the median). One shape: [`summarize`]. A shape
/// fewer than [`MIN_NODES`] nodes share is judged against the whole fleet instead
/// ([`judge_against_the_fleet`]): a node that lost a cpu or memory is a shape of its own.
pub fn summarize_by_shape(runs: &[NodeRun], min_effect: f64) -> FleetSummary {
    let mut sorted: Vec<&NodeRun> = runs.iter().collect();
    sorted.sort_by(|a, b| a.node.cmp(&b.node));
    let shapes = shapes(&sorted);
    if shapes.len() < 2 {
        return summarize(runs, min_effect);
    }
    let mut groups: Vec<ShapeGroup> = shapes
        .iter()
        .map(|(shape, nodes)| {
            let mine: Vec<NodeRun> = runs
                .iter()
                .filter(|r| nodes.contains(&r.node))
                .cloned()
                .collect();
            ShapeGroup {
                shape: shape.clone(),
                summary: summarize(&mine, min_effect),
            }
        })
        .collect();
    judge_against_the_fleet(&mut groups, &sorted, min_effect);
    let mut verdicts: Vec<NodeVerdict> = groups
        .iter()
        .flat_map(|g| g.summary.verdicts.iter().cloned())
        .collect();
    verdicts.sort_by(|a, b| a.node.cmp(&b.node));
    FleetSummary {
        // Each group's own rule is in its summary; the first stands for the whole.
        rule: groups[0].summary.rule.clone(),
        nodes: sorted.iter().map(|r| r.node.clone()).collect(),
        shapes,
        rows: Vec::new(),
        verdicts,
        references: sorted
            .iter()
            .filter(|r| r.reference)
            .map(|r| r.node.clone())
            .collect(),
        groups,
    }
}

/// The nodes of shapes too few share to judge among themselves, judged against the fleet: each
/// setting unlike most nodes' (`cpus 1 (3 others: 2)`, `memory 0.25 GiB (3 others: 0.5 GiB)`,
/// else the shape itself) makes it drifted; a node like most in every setting is judged among
/// every node of the fleet; one whose settings split the fleet with no majority (two kernels, two
/// nodes each) is not judged. An offlined cpu or a smaller memory read `healthy` as a shape of
/// one.
fn judge_against_the_fleet(groups: &mut [ShapeGroup], runs: &[&NodeRun], min_effect: f64) {
    let machines: Vec<(String, Vec<oslab_core::conditions::Setting>)> = runs
        .iter()
        .map(|r| {
            let mut settings = r.settings.clone();
            settings.extend(r.shape.clone().map(|s| (SHAPE.to_string(), s)));
            (r.node.clone(), settings)
        })
        .collect();
    let odd = oslab_core::conditions::odd_ones(&machines);
    let split: Vec<String> = oslab_core::conditions::split_settings(&machines)
        .into_iter()
        .filter(|n| n != SHAPE)
        .collect();
    let mut pooled: Option<FleetSummary> = None;
    for g in groups
        .iter_mut()
        .filter(|g| g.summary.nodes.len() < MIN_NODES)
    {
        for v in &mut g.summary.verdicts {
            let mut mine: Vec<oslab_core::conditions::Odd> = odd
                .iter()
                .filter(|d| d.machine == v.node)
                .cloned()
                .collect();
            // The settings say what differs; the shape only where none does.
            if mine.iter().any(|d| d.name != SHAPE) {
                mine.retain(|d| d.name != SHAPE);
            }
            if !mine.is_empty() {
                for d in mine {
                    if !v.drift.iter().any(|x| x.name == d.name) {
                        v.drift.push(d);
                    }
                }
                v.verdict = Health::of_state(&v.state);
                v.judge(min_effect);
            } else if v.verdict != Health::Healthy {
                // Its run's state speaks for it.
            } else if !split.is_empty() {
                v.verdict = Health::NotJudged;
                v.why = vec![format!(
                    "its shape ({}) is too few nodes' to judge it among them ({MIN_NODES} needed), and the fleet is split on {} with no majority",
                    g.shape,
                    split.join(", ")
                )];
            } else {
                // Like most nodes in every setting: its figures are judged among all of them.
                let all: Vec<NodeRun> = runs.iter().map(|r| (*r).clone()).collect();
                let p = pooled.get_or_insert_with(|| summarize(&all, min_effect));
                if let Some(found) = p.verdicts.iter().find(|x| x.node == v.node) {
                    *v = found.clone();
                }
            }
        }
    }
}

impl FleetSummary {
    /// The nodes apart from the fleet: a whole probe family shifted ([`Shift`]), or outlying
    /// values in at least [`OUTLIER_SHARE`] of what the node measured. A few values apart are
    /// marked where they are, but make no node an outlier: on a shared host single figures move
    /// between runs for real (three runs of one guest as three nodes: 2-8 of 375 values each, a
    /// cache-resident chase at -66%, the L3's detected size at -50%).
    pub fn outlier_nodes(&self) -> Vec<&str> {
        self.verdicts
            .iter()
            .filter(|v| v.verdict == Health::Outlier)
            .map(|v| v.node.as_str())
            .collect()
    }
}

impl NodeVerdict {
    /// Sets the verdict and its reasons from what was found: a run that did not complete says
    /// so first; figures apart make an outlier; a configuration unlike most, drifted.
    fn judge(&mut self, min_effect: f64) {
        let mut why = Vec::new();
        let share =
            self.outliers > 0 && self.outliers as f64 >= OUTLIER_SHARE * self.measured as f64;
        for f in &self.shifts {
            why.push(format!(
                "{} {:+.1}% from the fleet median",
                f.family,
                f.deviation * 100.0
            ));
        }
        for c in &self.collapsed {
            let [low, high] = c.deviation.map(|d| format!("{:+.0}%", d * 100.0));
            why.push(format!(
                "{}: {} of {} rows {}",
                c.mechanism,
                c.rows[0],
                c.rows[1],
                if low == high {
                    low
                } else {
                    format!("{low}..{high}")
                }
            ));
        }
        if share {
            why.push(format!(
                "{} of {} values apart (at least {} off and beyond the noise)",
                self.outliers,
                self.measured,
                oslab_core::units::percent(min_effect)
            ));
        }
        let outlier = !why.is_empty();
        // What explains the figures comes first: other work on the node, then a setting unlike
        // the others' (a clocksource is why its clock reads are slow).
        let busy = self.busy.why();
        let causes = busy
            .iter()
            .cloned()
            .chain(self.drift.iter().map(|d| d.to_string()));
        why.splice(0..0, causes);
        if self.verdict == Health::Healthy {
            // The cause before the figures it explains: a node with another clocksource whose
            // clock reads are 40x is drifted (fix its boot), not an outlier to investigate.
            self.verdict = match (busy.is_some(), !self.drift.is_empty(), outlier) {
                (true, ..) => Health::Busy,
                (false, true, _) => Health::Drifted,
                (false, false, true) => Health::Outlier,
                (false, false, false) => Health::Healthy,
            };
        } else {
            why.insert(0, format!("run {}", self.state.as_str()));
        }
        self.why = why;
    }

    /// A node listed for the job with no run stored: its state there and why.
    pub fn absent(node: &str, state: crate::NodeState, detail: &str) -> NodeVerdict {
        let verdict = match Health::of_state(&state) {
            Health::Healthy | Health::Partial => Health::Missing,
            h => h,
        };
        NodeVerdict {
            node: node.to_string(),
            run_id: None,
            state,
            verdict,
            why: (!detail.is_empty())
                .then(|| detail.to_string())
                .into_iter()
                .collect(),
            drift: Vec::new(),
            collapsed: Vec::new(),
            measured: 0,
            outliers: 0,
            worst: None,
            shifts: Vec::new(),
            busy: Busy {
                at_start: None,
                contended: [0, 0],
            },
        }
    }
}

/// The mechanisms that collapsed on a node, from its cells ([`Collapsed`]).
fn collapsed<'a>(cells: impl Iterator<Item = (&'a FleetRow, &'a Cell)>) -> Vec<Collapsed> {
    // Each cell with whether it lies [`COLLAPSED`] or more from the fleet's value, either way.
    let mut by: Vec<(String, Vec<(&Cell, bool)>)> = Vec::new();
    for (row, cell) in cells {
        let family = row.probe.split('.').next().unwrap_or(&row.probe);
        let mechanism = format!("{family} {}", row.metric);
        let far = cell.value >= row.median * (1.0 + COLLAPSED)
            || cell.value * (1.0 + COLLAPSED) <= row.median;
        match by.iter_mut().find(|(m, _)| *m == mechanism) {
            Some((_, v)) => v.push((cell, far)),
            None => by.push((mechanism, vec![(cell, far)])),
        }
    }
    by.into_iter()
        .filter_map(|(mechanism, cells)| {
            let far: Vec<f64> = cells
                .iter()
                .filter(|(c, far)| c.outlier && *far)
                .map(|(c, _)| c.deviation)
                .collect();
            let one_way = far.iter().all(|d| *d > 0.0) || far.iter().all(|d| *d < 0.0);
            (far.len() >= 2 && one_way && 2 * far.len() >= cells.len()).then(|| Collapsed {
                mechanism,
                rows: [far.len(), cells.len()],
                deviation: [
                    far.iter().copied().fold(f64::INFINITY, f64::min),
                    far.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                ],
            })
        })
        .collect()
}

/// The rule the outliers were called by.
#[derive(Debug, Clone, Serialize)]
pub struct Rule {
    /// The smallest deviation called.
    pub min_effect: f64,
    /// The z a deviation must pass: Bonferroni for `comparisons` at [`FAMILY_ALPHA`].
    pub z: f64,
    /// Values judged (measurements x nodes with a value, in rows of [`MIN_NODES`] or more).
    pub comparisons: usize,
    /// The p a family's sign test must reach ([`FAMILY_ALPHA`] corrected as Tarone does).
    pub sign_level: f64,
}

/// A node's repetitions of one measurement: each one's median and interval.
#[derive(Debug, Default, Clone)]
struct Repetitions {
    medians: Vec<f64>,
    low: f64,
    high: f64,
}

impl Repetitions {
    fn add(&mut self, m: &Measurement) {
        let Some(s) = m.summary.as_ref().filter(|_| m.status.has_value()) else {
            return;
        };
        if !s.median.is_finite() {
            return;
        }
        let (lo, hi) = s.interval().unwrap_or((s.median, s.median));
        if self.medians.is_empty() {
            (self.low, self.high) = (lo, hi);
        }
        self.medians.push(s.median);
        self.low = self.low.min(lo).min(s.median);
        self.high = self.high.max(hi).max(s.median);
    }

    fn value(&self) -> Option<f64> {
        median(&self.medians)
    }
}

/// The spread of one row's log values as a standard deviation, when it has enough positive
/// values: their MAD over its expected share of the deviation for so few values (0.6745 for
/// many; 0.36 for three, whose MAD is the nearer of two gaps: 0.6745 - 0.9/n within 0.01 of a
/// simulation from 3 to 64 values).
fn row_scale(values: &[f64]) -> Option<f64> {
    let (mad, n) = oslab_core::stats::log_mad(values)?;
    (n >= MIN_NODES).then(|| mad / (0.6745 - 0.9 / n as f64))
}

/// A probe needs this many rows with a spread for their median to be its rows' noise floor.
const PROBE_ROWS: usize = 3;

/// Each row's noise floor: the median spread of its probe's rows where the probe has
/// [`PROBE_ROWS`] of them, else the median of every row's.
fn noise_floors(keys: &[(String, String, String)], scales: &[Option<f64>]) -> Vec<f64> {
    let every = median(&scales.iter().flatten().copied().collect::<Vec<_>>()).unwrap_or(0.0);
    let mut by_probe: std::collections::HashMap<&str, Vec<f64>> = Default::default();
    for ((probe, ..), scale) in keys.iter().zip(scales) {
        if let Some(s) = scale {
            by_probe.entry(probe).or_default().push(*s);
        }
    }
    keys.iter()
        .map(|(probe, ..)| match by_probe.get(probe.as_str()) {
            Some(rows) if rows.len() >= PROBE_ROWS => median(rows).unwrap_or(every),
            _ => every,
        })
        .collect()
}

/// How much wider a value's deviation from the median of `n` values (itself among them) spreads
/// than one value: sqrt(1 + 1/(n - 1)), which keeps the tail at or under the normal's from 3
/// values to 64 (simulated).
fn deviation_spread(n: usize) -> f64 {
    (1.0 + 1.0 / (n.max(2) - 1) as f64).sqrt()
}

/// Two-sided p of a sign test: `k` of `n` one way, where each way is as likely.
fn sign_test(k: usize, n: usize) -> f64 {
    let k = k.min(n - k);
    // P(X <= k) for X ~ Binomial(n, 1/2), by terms in logarithms (n may be hundreds).
    let ln_half_n = n as f64 * 0.5f64.ln();
    let mut ln_choose = 0.0;
    let mut sum = 0.0;
    for i in 0..=k {
        if i > 0 {
            ln_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        sum += (ln_choose + ln_half_n).exp();
    }
    (2.0 * sum).min(1.0)
}

/// Each node's [`Shift`]s: per probe family, its log deviations from the fleet median (rows
/// with at least [`MIN_NODES`] values; with three nodes the median is a healthy one, where the
/// others' median would be half the odd node's), tested as the type says.
fn shifts(
    keys: &[(String, String, String)],
    values: &[Vec<Option<f64>>],
    nodes: usize,
    min_effect: f64,
) -> (Vec<Vec<Shift>>, f64) {
    let family = |probe: &str| oslab_core::catalog::prefix(probe).to_string();
    // (node, family) -> probe -> deviations
    type ByProbe = std::collections::BTreeMap<String, Vec<f64>>;
    let mut devs: std::collections::BTreeMap<(usize, String), ByProbe> = Default::default();
    for ((probe, ..), row) in keys.iter().zip(values) {
        if row.iter().flatten().count() < MIN_NODES {
            continue;
        }
        let present: Vec<f64> = row.iter().flatten().copied().filter(|v| *v > 0.0).collect();
        let Some(m) = median(&present) else { continue };
        for (i, v) in row.iter().enumerate() {
            if let Some(v) = v.filter(|v| *v > 0.0) {
                // Each family, and every probe at once: a node slowed everywhere (a capped
                // clock) shows in the probes of all families more surely than in any one's few.
                for group in [family(probe), ALL_PROBES.to_string()] {
                    devs.entry((i, group))
                        .or_default()
                        .entry(probe.clone())
                        .or_default()
                        .push((v / m).ln());
                }
            }
        }
    }
    let tie = (1.0 + min_effect).ln();
    let candidates: Vec<(usize, usize, Shift)> = devs
        .into_iter()
        .filter_map(|((node, family), by_probe)| {
            let d: Vec<f64> = by_probe.values().flatten().copied().collect();
            let typical = median(&d)?;
            let per_probe: Vec<f64> = by_probe.values().filter_map(|p| median(p)).collect();
            let up = per_probe.iter().filter(|x| **x >= tie).count();
            let down = per_probe.iter().filter(|x| **x <= -tie).count();
            let shift = Shift {
                family,
                deviation: typical.exp() - 1.0,
                measurements: d.len(),
                probes: per_probe.len(),
                same_way: if typical >= 0.0 { up } else { down },
                against: if typical >= 0.0 { down } else { up },
                p: sign_test(up, up + down),
            };
            Some((node, up + down, shift))
        })
        .collect();
    let level = tarone_level(&candidates.iter().map(|c| c.1).collect::<Vec<_>>());
    let beyond = beyond_the_others(&candidates);
    let mut out = vec![Vec::new(); nodes];
    for ((node, _, shift), beyond) in candidates.into_iter().zip(beyond) {
        if shift.deviation.abs() >= min_effect && shift.p <= level && beyond {
            out[node].push(shift);
        }
    }
    (out, level)
}

/// Whether each candidate's typical deviation lies beyond the other nodes' typical deviations
/// in its family, as a value lies beyond its row's noise (robust z over the nodes, Bonferroni
/// over them). A shared host moves a whole node for a whole job: on the cluster of guests, in
/// a job whose healthy process-creation rows swung ±100%, a healthy guest read -9.7% across
/// 11 probes (and none the other way) while every node's typical deviation was 10-15% from the
/// others'; on a quiet host the healthy nodes' typical deviations agree within 1%.
fn beyond_the_others(candidates: &[(usize, usize, Shift)]) -> Vec<bool> {
    let nodes = candidates.iter().map(|c| c.0 + 1).max().unwrap_or(0);
    let z = normal_quantile_upper(FAMILY_ALPHA / 2.0 / nodes.max(1) as f64);
    candidates
        .iter()
        .map(|(_, _, shift)| {
            let typical: Vec<f64> = candidates
                .iter()
                .filter(|c| c.2.family == shift.family)
                .map(|c| 1.0 + c.2.deviation)
                .collect();
            let logs: Vec<f64> = typical.iter().map(|t| t.ln()).collect();
            match (row_scale(&typical), median(&logs)) {
                (Some(scale), Some(centre)) if scale > 0.0 => {
                    let d = (1.0 + shift.deviation).ln() - centre;
                    d.abs() > z * scale * deviation_spread(typical.len())
                }
                // Too few nodes to say, or all alike but this one: the sign test decides.
                _ => true,
            }
        })
        .collect()
}

/// The level each of many sign tests is held to, `decided` giving each one's untied trials:
/// [`FAMILY_ALPHA`] / K for the least K such that at most K of the tests could ever reach it
/// (Tarone, 1990: a sign test of n trials goes no lower than p = 2^(1-n); the tests that cannot
/// reach the level cannot raise a false alarm, so they are not counted).
fn tarone_level(decided: &[usize]) -> f64 {
    let least: Vec<f64> = decided.iter().map(|&n| sign_test(0, n)).collect();
    (1..=least.len().max(1))
        .map(|k| (k, FAMILY_ALPHA / k as f64))
        .find(|(k, level)| least.iter().filter(|p| **p <= *level).count() <= *k)
        .map_or(FAMILY_ALPHA, |(_, level)| level)
}

/// Lines the nodes' runs up measurement by measurement and scores every value; `min_effect` is
/// the smallest deviation from the fleet median called (0.05: 5%).
pub fn summarize(runs: &[NodeRun], min_effect: f64) -> FleetSummary {
    let mut runs: Vec<&NodeRun> = runs.iter().collect();
    runs.sort_by(|a, b| a.node.cmp(&b.node));
    let mut keys: Vec<(String, String, String)> = Vec::new();
    let mut units: Vec<Unit> = Vec::new();
    let mut reps: Vec<Vec<Repetitions>> = Vec::new();
    let mut index = std::collections::HashMap::new();
    for (i, r) in runs.iter().enumerate() {
        for m in &r.measurements {
            let k = key(m);
            let row = *index.entry(k.clone()).or_insert_with(|| {
                keys.push(k);
                units.push(m.unit);
                reps.push(vec![Repetitions::default(); runs.len()]);
                keys.len() - 1
            });
            reps[row][i].add(m);
        }
    }
    let values: Vec<Vec<Option<f64>>> = reps
        .iter()
        .map(|row| row.iter().map(Repetitions::value).collect())
        .collect();
    // The noise between nodes: each row's own, never below its probe's rows' median, or every
    // row's where the probe has too few rows to say.
    let scales: Vec<Option<f64>> = values
        .iter()
        .map(|v| row_scale(&v.iter().flatten().copied().collect::<Vec<_>>()))
        .collect();
    let floors = noise_floors(&keys, &scales);
    let comparisons: usize = values
        .iter()
        .map(|v| v.iter().flatten().count())
        .filter(|n| *n >= MIN_NODES)
        .sum();
    let z_crit = normal_quantile_upper(FAMILY_ALPHA / 2.0 / comparisons.max(1) as f64);
    let rows: Vec<FleetRow> = keys
        .clone()
        .into_iter()
        .zip(units)
        .zip(values.iter().zip(&reps).zip(scales.iter().zip(floors)))
        .filter_map(
            |(((probe, params, metric), unit), ((vals, reps), (scale, floor)))| {
                let present: Vec<f64> = vals.iter().flatten().copied().collect();
                let med = median(&present)?;
                let noise = scale
                    .map(|s| s.max(floor) * deviation_spread(present.len()))
                    .filter(|s| *s > 0.0);
                let cells = vals
                    .iter()
                    .zip(reps)
                    .map(|(v, rep)| {
                        v.map(|value| {
                            let log = (value > 0.0 && med > 0.0).then(|| (value / med).ln());
                            let z = noise.zip(log).map(|(s, l)| l / s);
                            let apart = rep.low > med || rep.high < med;
                            let large = log.is_some_and(|l| l.abs() >= (1.0 + min_effect).ln());
                            Cell {
                                value,
                                deviation: if med != 0.0 {
                                    (value - med) / med.abs()
                                } else {
                                    0.0
                                },
                                z,
                                outlier: large && apart && z.is_some_and(|z| z.abs() > z_crit),
                            }
                        })
                    })
                    .collect();
                Some(FleetRow {
                    probe,
                    params,
                    metric,
                    unit,
                    median: med,
                    cells,
                })
            },
        )
        .collect();
    let (mut shifted, sign_level) = shifts(&keys, &values, runs.len(), min_effect);
    let drift = oslab_core::conditions::odd_ones(
        &runs
            .iter()
            .map(|r| (r.node.clone(), r.settings.clone()))
            .collect::<Vec<_>>(),
    );
    let verdicts = runs
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.reference)
        .map(|(i, r)| {
            let mine = rows
                .iter()
                .filter_map(|row| row.cells[i].as_ref().map(|c| (row, c)));
            let mut v = NodeVerdict {
                node: r.node.clone(),
                run_id: Some(r.run_id),
                state: r.state.clone(),
                verdict: Health::of_state(&r.state),
                why: Vec::new(),
                drift: drift
                    .iter()
                    .filter(|d| d.machine == r.node)
                    .cloned()
                    .collect(),
                collapsed: collapsed(mine.clone()),
                measured: mine.clone().count(),
                outliers: mine.clone().filter(|(_, c)| c.outlier).count(),
                worst: mine
                    .filter_map(|(row, c)| c.z.map(|z| (row.label(), c.deviation, z)))
                    .max_by(|a, b| a.2.abs().total_cmp(&b.2.abs())),
                shifts: std::mem::take(&mut shifted[i]),
                busy: Busy {
                    at_start: r.other_work.clone(),
                    contended: [
                        r.measurements
                            .iter()
                            .filter(|m| m.status == Status::Noisy(Cause::Contention))
                            .count(),
                        r.measurements
                            .iter()
                            .filter(|m| m.status.has_value())
                            .count(),
                    ],
                },
            };
            v.judge(min_effect);
            v
        })
        .collect();
    let mut shapes = shapes(&runs);
    if shapes.len() < 2 {
        shapes.clear();
    }
    FleetSummary {
        rule: Rule {
            min_effect,
            z: z_crit,
            comparisons,
            sign_level,
        },
        shapes,
        nodes: runs.iter().map(|r| r.node.clone()).collect(),
        rows,
        verdicts,
        references: runs
            .iter()
            .filter(|r| r.reference)
            .map(|r| r.node.clone())
            .collect(),
        groups: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_core::model::Status;
    use oslab_core::params;
    use oslab_core::stats::Summary;

    fn m(probe: &str, cpu: usize, v: f64) -> Measurement {
        let mut m = Measurement::not_taken(
            probe,
            params! {"cpu" => cpu},
            "per_call",
            Unit::Ns,
            Status::Ok,
        );
        m.summary = Summary::new(&[v, v * 1.01, v * 0.99]);
        m
    }

    #[test]
    fn the_slow_node_stands_out_and_the_others_do_not() {
        let runs: Vec<NodeRun> = (0..8)
            .map(|i| NodeRun {
                node: format!("n{i:02}"),
                run_id: i + 1,
                started: String::new(),
                state: crate::NodeState::Ok,
                measurements: vec![
                    // n05 is 40% slower at syscalls; everyone is within 2% otherwise.
                    m(
                        "syscall",
                        i as usize,
                        if i == 5 {
                            140.0
                        } else {
                            100.0 + i as f64 * 0.3
                        },
                    ),
                    m("fork", 0, 50_000.0 * (1.0 + 0.004 * i as f64)),
                ],
                shape: Some("1 socket x 2 cores x 1 thread, 1 NUMA node".into()),
                settings: Vec::new(),
                other_work: None,
                reference: false,
            })
            .collect();
        let s = summarize(&runs, DEFAULT_MIN_EFFECT);
        assert_eq!(s.nodes.len(), 8);
        // Placement (cpu) is not part of the match: one row per probe.
        assert_eq!(s.rows.len(), 2);
        assert_eq!(s.outlier_nodes(), vec!["n05"]);
        let v = &s.verdicts[5];
        let (label, dev, z) = v.worst.clone().unwrap();
        assert!(label.starts_with("syscall"), "{label}");
        assert!(dev > 0.35 && z > s.rule.z, "{dev} {z}");
        assert_eq!(v.measured, 2);
        assert!(s.shapes.is_empty(), "one shape: nothing to say");
    }

    /// A fleet of `nodes` healthy nodes, `rows` measurements each, every value off by a normal
    /// 2% (and its own interval ±1% about it); node `slow`, when given, `by` slower on all.
    fn fleet(nodes: usize, rows: usize, seed: u64, slow: Option<(usize, f64)>) -> Vec<NodeRun> {
        let probes: Vec<(String, f64)> = (0..rows)
            .map(|r| (format!("{}.p{r}", ["memory", "syscall"][r % 2]), 0.02))
            .collect();
        fleet_of(nodes, &probes, seed, slow)
    }

    /// A fleet whose row `r` is of probe `rows[r].0`, off by a normal `rows[r].1` on each node.
    pub(super) fn fleet_of(
        nodes: usize,
        rows: &[(String, f64)],
        seed: u64,
        slow: Option<(usize, f64)>,
    ) -> Vec<NodeRun> {
        let mut rng = oslab_core::stats::SplitMix64(seed);
        let mut normal = move || {
            // Box-Muller from two uniforms.
            let u = |r: &mut oslab_core::stats::SplitMix64| {
                (r.next_u64() >> 11) as f64 / (1u64 << 53) as f64
            };
            let (a, b) = (u(&mut rng).max(1e-12), u(&mut rng));
            (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
        };
        (0..nodes)
            .map(|n| NodeRun {
                node: format!("n{n:02}"),
                run_id: n as i64 + 1,
                started: String::new(),
                state: crate::NodeState::Ok,
                measurements: rows
                    .iter()
                    .enumerate()
                    .map(|(r, (probe, noise))| {
                        let base = 100.0 * (1.0 + r as f64);
                        let factor = match slow {
                            Some((s, by)) if s == n => 1.0 + by,
                            _ => 1.0,
                        };
                        let mut x = m(probe, 0, base * factor * (1.0 + noise * normal()));
                        x.params.insert("row".into(), r.into());
                        x
                    })
                    .collect(),
                shape: None,
                settings: Vec::new(),
                other_work: None,
                reference: false,
            })
            .collect()
    }

    #[test]
    fn healthy_fleets_have_no_outlier_and_a_slow_node_is_the_one() {
        // Three identical guests flagged n3, n3, n1 and n3; 8 and 16 nodes with 2% noise had
        // every node flagged (robust z > 3.5 with no effect size or correction).
        for nodes in [3, 8, 16, 64] {
            for seed in 1..=5 {
                let s = summarize(&fleet(nodes, 140, seed, None), DEFAULT_MIN_EFFECT);
                assert!(
                    s.outlier_nodes().is_empty(),
                    "{nodes} healthy nodes, seed {seed}: {:?}",
                    s.outlier_nodes()
                );
            }
        }
        // A node 20% slower is the one outlier, from 3 nodes on; 10% from 8 on.
        for (nodes, by) in [(3, 0.20), (8, 0.10), (16, 0.10), (64, 0.20)] {
            let s = summarize(&fleet(nodes, 140, 7, Some((1, by))), DEFAULT_MIN_EFFECT);
            assert_eq!(s.outlier_nodes(), vec!["n01"], "{nodes} nodes, {by}");
            let shift = &s.verdicts[1].shifts;
            // Both families, and every probe at once.
            assert_eq!(shift.len(), 3, "{shift:?}");
            assert!(
                shift.iter().all(|s| (s.deviation - by).abs() < 0.03),
                "{shift:?}"
            );
        }
        // A few values far out among 140 (a shared host moves single figures between runs):
        // marked, but no outlier node.
        let mut runs = fleet(3, 140, 3, None);
        for m in runs[2].measurements.iter_mut().take(5) {
            m.summary = Summary::new(&[60.0, 60.6, 59.4]);
        }
        let s = summarize(&runs, DEFAULT_MIN_EFFECT);
        assert!(s.verdicts[2].outliers >= 4, "{:?}", s.verdicts[2]);
        assert!(s.outlier_nodes().is_empty(), "{:?}", s.outlier_nodes());
        // 3% slower is within the minimum effect: no finding, however clear.
        let s = summarize(&fleet(8, 140, 7, Some((1, 0.03))), DEFAULT_MIN_EFFECT);
        assert!(s.outlier_nodes().is_empty());
    }

    #[test]
    fn a_steady_probes_rows_find_a_node_slower_everywhere_among_noisy_ones() {
        // As on the cluster of guests: a call measured with nine argument counts agrees within
        // 0.3% across healthy nodes; process creation swings 20-40%. A guest 20% slower on
        // every figure read +19% on all nine call rows and was called in one job of three (the
        // median row's noise, a process creation's, floored the call's; the sign test counted
        // a process creation 3% off as a probe the other way).
        let mut rows: Vec<(String, f64)> =
            (0..9).map(|_| ("call.args".to_string(), 0.002)).collect();
        rows.extend((0..12).map(|r| (format!("syscall.s{}", r / 2), 0.03)));
        rows.extend((0..20).map(|r| (format!("task.t{}", r / 3), 0.3)));
        // Of 100 fleets each of 3, 4, 8 and 16 nodes: 89-90 found the slow node, none called
        // a healthy one, and none of 100 healthy fleets had an outlier.
        for nodes in [3, 4, 8, 16] {
            let mut found = 0;
            for seed in 1..=20 {
                let s = summarize(&fleet_of(nodes, &rows, seed, None), DEFAULT_MIN_EFFECT);
                assert!(
                    s.outlier_nodes().is_empty(),
                    "{nodes} healthy nodes, seed {seed}: {:?}",
                    s.verdicts
                );
                let s = summarize(
                    &fleet_of(nodes, &rows, seed, Some((1, 0.2))),
                    DEFAULT_MIN_EFFECT,
                );
                let called = s.outlier_nodes();
                assert!(
                    called.iter().all(|n| *n == "n01"),
                    "{nodes} nodes, seed {seed}: {called:?}"
                );
                found += usize::from(called == ["n01"]);
            }
            assert!(
                found >= 16,
                "{nodes} nodes: the slow one found in {found} of 20"
            );
        }
    }

    #[test]
    fn every_repetition_counts_and_a_node_unsure_of_itself_is_not_apart() {
        let rep = |v: f64, r: u32, spread: f64| {
            let mut x = m("syscall", 0, v);
            x.summary = Summary::new(&[v, v * (1.0 + spread), v * (1.0 - spread)]);
            x.repetition = r;
            x
        };
        let node = |name: &str, ms: Vec<Measurement>| NodeRun {
            node: name.into(),
            run_id: 1,
            started: String::new(),
            state: crate::NodeState::Ok,
            measurements: ms,
            shape: None,
            settings: Vec::new(),
            other_work: None,
            reference: false,
        };
        // Node c's first repetition is 30% off, its other two agree with the fleet: its value
        // is the median of the three.
        let runs = vec![
            node(
                "a",
                vec![rep(100.0, 1, 0.01), rep(100.5, 2, 0.01), rep(99.5, 3, 0.01)],
            ),
            node(
                "b",
                vec![
                    rep(101.0, 1, 0.01),
                    rep(100.0, 2, 0.01),
                    rep(100.2, 3, 0.01),
                ],
            ),
            node(
                "c",
                vec![rep(130.0, 1, 0.01), rep(100.4, 2, 0.01), rep(99.8, 3, 0.01)],
            ),
        ];
        let s = summarize(&runs, DEFAULT_MIN_EFFECT);
        assert!(s.outlier_nodes().is_empty(), "{:?}", s.rows[0]);
        assert!((s.rows[0].cells[2].as_ref().unwrap().value - 100.4).abs() < 1e-9);
        // A node 40% off whose own interval reaches the fleet median is not called.
        let runs = vec![
            node("a", vec![rep(100.0, 1, 0.01)]),
            node("b", vec![rep(101.0, 1, 0.01)]),
            node("c", vec![rep(140.0, 1, 0.5)]),
        ];
        assert!(summarize(&runs, DEFAULT_MIN_EFFECT)
            .outlier_nodes()
            .is_empty());
    }

    #[test]
    fn every_node_has_a_verdict_and_the_reason_a_scheduler_acts_on() {
        // Eight nodes, 40 rows of 4 probes each 2% noisy; n03's six `switch` wake-up rows are
        // 50x (a runaway process), n05 booted with another clocksource.
        let mut rows: Vec<(String, f64)> = (0..40)
            .map(|r| {
                (
                    format!(
                        "{}.p{}",
                        ["memory", "syscall", "task", "timer"][r % 4],
                        r % 4
                    ),
                    0.02,
                )
            })
            .collect();
        rows.extend((0..6).map(|r| (format!("switch.p{r}"), 0.02)));
        let mut runs = fleet_of(8, &rows, 7, None);
        for r in &mut runs {
            r.settings = vec![("clocksource".into(), "tsc".into())];
            for m in r
                .measurements
                .iter_mut()
                .filter(|m| m.probe.starts_with("switch"))
            {
                m.metric = "wake_up".into();
            }
        }
        runs[5].settings[0].1 = "hpet".into();
        // n06 began beside a stray busy loop, n07 measured most rows beside other work; a
        // twentieth of a cpu of daemons on n00 is no finding.
        let work = |cpus: f64, command: &str| OtherWork {
            window_s: 0.2,
            cpus,
            busiest: vec![oslab_core::machine::BusyProcess {
                pid: 149,
                command: command.into(),
                cpus,
            }],
        };
        runs[6].other_work = Some(work(0.98, "runaway"));
        runs[0].other_work = Some(work(0.05, "slurmd"));
        for m in runs[7].measurements.iter_mut().skip(10) {
            m.status = Status::Noisy(Cause::Contention);
        }
        for m in runs[3]
            .measurements
            .iter_mut()
            .filter(|m| m.metric == "wake_up")
        {
            let v = m.summary.as_ref().unwrap().median * 50.0;
            m.summary = Summary::new(&[v, v * 1.01, v * 0.99]);
        }
        let s = summarize(&runs, DEFAULT_MIN_EFFECT);
        let verdict = |n: usize| (s.verdicts[n].verdict, s.verdicts[n].why.join("; "));
        // Six rows of 46 are under a quarter: the collapsed mechanism makes it an outlier.
        assert!(s.verdicts[3].outliers * 4 < s.verdicts[3].measured);
        let (v, why) = verdict(3);
        assert_eq!(v, Health::Outlier, "{why}");
        assert!(why.starts_with("switch wake_up: 6 of 6 rows +4"), "{why}");
        let (v, why) = verdict(5);
        assert_eq!(v, Health::Drifted);
        assert_eq!(why, "clocksource hpet (7 others: tsc)");
        let (v, why) = verdict(6);
        assert_eq!(v, Health::Busy);
        assert_eq!(
            why,
            "other work as it began: runaway (pid 149) 0.98 cpus; 0.98 cpus in all"
        );
        let (v, why) = verdict(7);
        assert_eq!(v, Health::Busy);
        assert_eq!(why, "36 of 46 measurements taken beside other work");
        for n in [0, 1, 2, 4] {
            assert_eq!(verdict(n).0, Health::Healthy, "{n}: {:?}", verdict(n));
        }
        assert_eq!(s.outlier_nodes(), vec!["n03"]);
        // A listed node that handed in nothing has a verdict too.
        let gone = NodeVerdict::absent("n08", crate::NodeState::Missing, "no result yet");
        assert_eq!(
            (gone.verdict, gone.why.join("")),
            (Health::Missing, "no result yet".into())
        );
        let dead = NodeVerdict::absent("n09", crate::NodeState::Crashed, "NODE_FAIL");
        assert_eq!(dead.verdict, Health::Crashed);
    }

    #[test]
    fn an_earlier_jobs_healthy_nodes_find_a_job_mostly_sick_or_moved_as_a_whole() {
        // A job of three nodes, two of them 40% slower everywhere; an earlier job of five
        // healthy nodes on the old kernel, where the three now run a new one.
        let rows: Vec<(String, f64)> = (0..24)
            .map(|r| {
                (
                    format!("{}.p{}", ["memory", "syscall", "task"][r % 3], r % 6),
                    0.02,
                )
            })
            .collect();
        let mut job = fleet_of(3, &rows, 11, None);
        for r in job.iter_mut().skip(1) {
            for m in &mut r.measurements {
                let v = m.summary.as_ref().unwrap().median * 1.4;
                m.summary = Summary::new(&[v, v * 1.01, v * 0.99]);
            }
        }
        for r in &mut job {
            r.settings = vec![("kernel".into(), "6.18".into())];
        }
        // Alone, the two sick nodes are the median: the healthy one stands apart, if anyone.
        let alone = summarize(&job, DEFAULT_MIN_EFFECT);
        assert!(
            alone.verdicts[1].verdict == Health::Healthy
                && alone.verdicts[2].verdict == Health::Healthy
        );
        let mut earlier = fleet_of(5, &rows, 12, None);
        for r in &mut earlier {
            r.node = format!("{}@41", r.node);
            r.reference = true;
            r.settings = vec![("kernel".into(), "6.12".into())];
        }
        job.extend(earlier);
        let s = summarize(&job, DEFAULT_MIN_EFFECT);
        assert_eq!(s.verdicts.len(), 3, "references get no verdict");
        assert_eq!(s.references.len(), 5);
        assert_eq!(s.nodes.len(), 8);
        // Every node of the job runs a kernel the fleet did not: named, with the old one.
        for v in &s.verdicts {
            assert_eq!(v.verdict, Health::Drifted, "{}: {:?}", v.node, v.why);
            assert!(v.why[0] == "kernel 6.18 (5 others: 6.12)", "{:?}", v.why);
        }
        // The sick two stand apart from the references, the healthy one does not.
        assert_eq!(s.verdicts[0].why.len(), 1, "{:?}", s.verdicts[0].why);
        for v in &s.verdicts[1..] {
            assert_eq!(v.outliers, v.measured, "{}: {:?}", v.node, v.why);
        }
    }

    #[test]
    fn each_shape_is_judged_among_its_own_nodes() {
        // Four small nodes, and four with twice the cores whose values are 30% lower; one of
        // those 40% slower than its kind (which, among all eight, sits near the median).
        let rows: Vec<(String, f64)> = (0..24)
            .map(|r| {
                (
                    format!("{}.p{}", ["memory", "syscall", "task"][r % 3], r % 6),
                    0.02,
                )
            })
            .collect();
        let mut runs = fleet_of(8, &rows, 21, Some((6, 0.4)));
        for (i, r) in runs.iter_mut().enumerate() {
            let big = i >= 4;
            r.shape = Some(
                if big {
                    "1 socket x 8 cores"
                } else {
                    "1 socket x 4 cores"
                }
                .into(),
            );
            if big {
                for m in &mut r.measurements {
                    let v = m.summary.as_ref().unwrap().median * 0.7;
                    m.summary = Summary::new(&[v, v * 1.01, v * 0.99]);
                }
            }
        }
        let s = summarize_by_shape(&runs, DEFAULT_MIN_EFFECT);
        assert_eq!(s.groups.len(), 2);
        assert!(s.rows.is_empty());
        assert_eq!(s.groups[1].summary.nodes, ["n04", "n05", "n06", "n07"]);
        let sick: Vec<(&str, Health)> = s
            .verdicts
            .iter()
            .filter(|v| v.verdict != Health::Healthy)
            .map(|v| (v.node.as_str(), v.verdict))
            .collect();
        assert_eq!(sick, [("n06", Health::Outlier)], "{:?}", s.verdicts);
        // One shape: the plain summary.
        assert!(summarize_by_shape(&runs[..4], DEFAULT_MIN_EFFECT)
            .groups
            .is_empty());
    }

    #[test]
    fn a_node_that_lost_a_cpu_or_memory_is_drifted_never_a_healthy_shape_of_one() {
        let node = |cpus: &str, memory: &str| {
            (
                Some(format!(
                    "1 socket x {cpus} x 1 thread, 1 NUMA node, {memory}"
                )),
                vec![
                    (
                        "cpus".to_string(),
                        cpus.split(' ').next().unwrap().to_string(),
                    ),
                    ("memory".to_string(), memory.to_string()),
                ],
            )
        };
        let rows: Vec<(String, f64)> = (0..6).map(|r| (format!("syscall.p{r}"), 0.02)).collect();
        let mut runs = fleet_of(4, &rows, 5, None);
        type Shaped = (Option<String>, Vec<oslab_core::conditions::Setting>);
        let shaped = |runs: &mut [NodeRun], of: &[Shaped]| {
            for (r, (shape, settings)) in runs.iter_mut().zip(of) {
                r.shape = shape.clone();
                r.settings = settings.clone();
            }
        };
        let whole = node("2 cores", "0.5 GiB");
        // n03 with cpu 1 offlined; then with 384 MiB among 512 MiB nodes.
        for (odd, said) in [
            (node("1 core", "0.5 GiB"), "cpus 1 (3 others: 2)"),
            (
                node("2 cores", "0.25 GiB"),
                "memory 0.25 GiB (3 others: 0.5 GiB)",
            ),
        ] {
            shaped(
                &mut runs,
                &[whole.clone(), whole.clone(), whole.clone(), odd],
            );
            let s = summarize_by_shape(&runs, DEFAULT_MIN_EFFECT);
            let v = s.verdicts.iter().find(|v| v.node == "n03").unwrap();
            assert_eq!(v.verdict, Health::Drifted, "{v:?}");
            assert_eq!(v.why, [said], "{v:?}");
            assert!(s.verdicts[..3].iter().all(|v| v.verdict == Health::Healthy));
        }
        // Two shapes, two nodes each: no majority to judge against, and no node healthy.
        let half = node("1 core", "0.5 GiB");
        shaped(
            &mut runs,
            &[whole.clone(), whole.clone(), half.clone(), half],
        );
        let s = summarize_by_shape(&runs, DEFAULT_MIN_EFFECT);
        assert!(
            s.verdicts.iter().all(|v| v.verdict == Health::NotJudged),
            "{:?}",
            s.verdicts
        );
        assert!(
            s.verdicts[0].why[0].contains("the fleet is split on cpus with no majority"),
            "{:?}",
            s.verdicts[0]
        );
        // One node short a cpu and one short of memory among four (three shapes, 2 + 1 + 1, as
        // on the guest cluster): the two whole ones are judged among every node, healthy.
        shaped(
            &mut runs,
            &[
                whole.clone(),
                whole.clone(),
                node("1 core", "0.5 GiB"),
                node("2 cores", "0.25 GiB"),
            ],
        );
        let s = summarize_by_shape(&runs, DEFAULT_MIN_EFFECT);
        let verdicts: Vec<Health> = s.verdicts.iter().map(|v| v.verdict).collect();
        assert_eq!(
            verdicts,
            [
                Health::Healthy,
                Health::Healthy,
                Health::Drifted,
                Health::Drifted
            ],
            "{:?}",
            s.verdicts
        );
    }

    #[test]
    fn two_nodes_or_missing_values_never_invent_an_outlier() {
        let mut failed = m("syscall", 0, 1.0);
        failed.status = Status::Failed("no".into());
        failed.summary = None;
        let runs = vec![
            NodeRun {
                node: "b".into(),
                run_id: 2,
                started: String::new(),
                state: crate::NodeState::Ok,
                measurements: vec![m("syscall", 0, 100.0)],
                shape: Some("2 sockets".into()),
                settings: Vec::new(),
                other_work: None,
                reference: false,
            },
            NodeRun {
                node: "a".into(),
                run_id: 1,
                started: String::new(),
                state: crate::NodeState::Ok,
                measurements: vec![m("syscall", 0, 300.0)],
                shape: Some("1 socket".into()),
                settings: Vec::new(),
                other_work: None,
                reference: false,
            },
            NodeRun {
                node: "c".into(),
                run_id: 3,
                started: String::new(),
                state: crate::NodeState::Ok,
                measurements: vec![failed],
                shape: None,
                settings: Vec::new(),
                other_work: None,
                reference: false,
            },
        ];
        let s = summarize(&runs, DEFAULT_MIN_EFFECT);
        assert_eq!(s.nodes, vec!["a", "b", "c"]);
        let row = &s.rows[0];
        assert_eq!(row.median, 200.0);
        assert!(row.cells[2].is_none());
        assert!(row
            .cells
            .iter()
            .flatten()
            .all(|c| c.z.is_none() && !c.outlier));
        assert_eq!(s.verdicts[2].measured, 0);
        // Nodes of different shapes are named with their shape.
        assert_eq!(
            s.shapes,
            vec![
                ("1 socket".to_string(), vec!["a".to_string()]),
                ("2 sockets".to_string(), vec!["b".to_string()]),
                ("shape not recorded".to_string(), vec!["c".to_string()]),
            ]
        );
    }
}
