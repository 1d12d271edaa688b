//! The migration experiment behind `oslab migrate`: a matrix multiply runs pinned on cpu A, or
//! moves to cpu B half way; counters per half; pinned and migrated runs alternate as pairs; the
//! migration cost is the paired difference with its interval.

use super::matmul::{run_matmul, Matmul, MatmulKernel, PageMove, RunResult, Variant};
use crate::probe::ProbeError;
use oslab_core::catalog::metric;
use oslab_core::model::{judged, Judge, Measurement, Unit};
use oslab_core::reason::BadValue;
use oslab_core::stats::paired::{self, Arm, Pairs};
use oslab_core::text::{Block, Doc, Table};
use oslab_core::units::value;
use oslab_core::{params, Topology};
use oslab_os::counters::{self, CpuId, Spec};

/// Probe id of the experiment's measurements.
pub const PROBE: &str = oslab_core::catalog::id::MIGRATE;

/// What to run.
#[derive(Debug, Clone)]
pub struct Request {
    /// Matrix size N (N x N doubles).
    pub size: usize,
    /// Kernels, each run `runs` times per variant.
    pub kernels: Vec<MatmulKernel>,
    /// Pairs of runs per kernel.
    pub runs: usize,
    /// Where every run starts.
    pub from: usize,
    /// Where migrated runs finish.
    pub to: usize,
    /// A's and B's NUMA nodes when they differ (with memory on both): the pages-follow variant
    /// runs; None on one node, or when A and B share theirs.
    pub nodes: Option<(usize, usize)>,
    /// Why the pages cannot start on A's node and follow to B's although the two differ (the
    /// cpuset's memory nodes exclude one of them).
    pub no_follow: Option<String>,
    /// Counters per phase.
    pub counters: Vec<Spec>,
    /// Presets this cpu has no definition for, with why (reported, not counted).
    pub undefined: Vec<String>,
}

/// The kernels `oslab migrate` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Kernels {
    /// i-j-k loops.
    Naive,
    /// Square blocks of --block elements.
    Blocked,
    /// Both, one after the other.
    Both,
}

/// What `oslab migrate` asks; the cpus are names the session resolves.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct Options {
    /// Matrix size N (N x N doubles).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 1024, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(2..=16384)))]
    pub size: usize,
    /// Block size of the blocked kernel (need not divide N).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 16, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=4096)))]
    pub block: usize,
    /// Which kernels.
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value_t = Kernels::Both))]
    pub kernel: Kernels,
    /// Runs per kernel and variant (pinned and migrated runs alternate).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 5, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1000)))]
    pub runs: usize,
    /// CPU A, where every run starts (default 0, or the first cpu we may use).
    #[cfg_attr(feature = "clap", arg(long, value_name = "CPU"))]
    pub from: Option<String>,
    /// CPU B, where migrated runs finish (default: the farthest cpu we may use).
    #[cfg_attr(feature = "clap", arg(long, value_name = "CPU"))]
    pub to: Option<String>,
    /// Counters per phase, comma-separated (perf names, raw rXXXX, L2_TCM, L2_TCA). Default:
    /// L2_TCM, L2_TCA, cycles, instructions, LLC-load-misses, task-clock, cpu-migrations,
    /// context-switches.
    #[cfg_attr(
        feature = "clap",
        arg(
            long,
            default_value = "L2_TCM,L2_TCA,cycles,instructions,LLC-load-misses,task-clock,cpu-migrations,context-switches",
            hide_default_value = true
        )
    )]
    pub counters: String,
    /// Start even when the run is estimated to take longer than 10 minutes (asked on a
    /// terminal, refused otherwise).
    #[cfg_attr(feature = "clap", arg(long))]
    pub yes: bool,
}

/// The longest run `oslab migrate` starts without `--yes`, in seconds.
pub const UNASKED_SECONDS: f64 = 600.0;

impl Options {
    /// The kernels to run.
    pub fn kernels(&self) -> Vec<MatmulKernel> {
        let blocked = MatmulKernel::Blocked(self.block);
        match self.kernel {
            Kernels::Naive => vec![MatmulKernel::Naive],
            Kernels::Blocked => vec![blocked],
            Kernels::Both => vec![MatmulKernel::Naive, blocked],
        }
    }

    /// The request from cpu `from` to `to` (default: the farthest cpu in `allowed`), refused
    /// with why when there is nowhere to migrate, a counter is misspelled or the three matrices
    /// would take more than half the memory available.
    pub fn request(
        &self,
        topology: &Topology,
        allowed: &oslab_core::CpuSet,
        from: usize,
        to: Option<usize>,
    ) -> Result<Request, BadValue> {
        let (counters, undefined) = counters_of(&self.counters)?;
        let to = to
            .or_else(|| oslab_os::placement::farthest(topology, allowed, from))
            .ok_or_else(|| {
                format!("only cpu {from} is in our affinity mask: there is nowhere to migrate to")
            })?;
        let need = Matmul::bytes(self.size);
        if let Some(free) = crate::buffer::available_memory().filter(|&f| need > f / 2) {
            return Err(format!(
                "a {n} x {n} multiply needs {} for its three matrices; {} is available (at most half is used): pass a smaller --size",
                oslab_core::units::bytes(need),
                oslab_core::units::bytes(free),
                n = self.size
            ).into());
        }
        let (size, kernels, runs) = (self.size, self.kernels(), self.runs);
        let node = |c: usize| topology.cpu(c).map(|c| c.node);
        let has_memory = |n: usize| {
            topology
                .nodes
                .iter()
                .any(|x| x.id == n && x.memory.is_none_or(|m| m > 0))
        };
        // Under a cpuset (Slurm's, a container's) the pages may only live on its memory nodes:
        // binding them to A's node, or moving them to B's, outside it is refused (EPERM).
        let mems = oslab_os::numa::Numa::mems_allowed(&oslab_os::numa::LinuxNuma::new(topology));
        let outside = |n: usize| mems.as_ref().is_some_and(|m| !m.contains(n));
        let (nodes, no_follow) = match (node(from), node(to)) {
            (Some(a), Some(b)) if a != b && has_memory(a) && has_memory(b) => {
                match [a, b].into_iter().filter(|&n| outside(n)).collect::<Vec<_>>() {
                    out if out.is_empty() => (Some((a, b)), None),
                    out => (None, Some(format!(
                        " This process's cpuset allows memory on node(s) {} only, not on {}: the pages cannot start on A's node {a} and follow the thread to B's node {b}, so they stay where the kernel put them (inside the cpuset) and no pages-follow variant runs.",
                        mems.as_ref().map(|m| m.to_list()).unwrap_or_default(),
                        out.iter().map(|n| format!("node {n}")).collect::<Vec<_>>().join(" or ")
                    ))),
                }
            }
            _ => (None, None),
        };
        Ok(Request {
            size,
            kernels,
            runs,
            from,
            to,
            nodes,
            no_follow,
            counters,
            undefined,
        })
    }

    /// The cpu every run starts on, as the user names it: `--from`, else 0, else the first cpu
    /// in `allowed`.
    pub fn from_cpu(&self, allowed: &oslab_core::CpuSet) -> String {
        self.from.clone().unwrap_or_else(|| {
            let first = allowed.first().unwrap_or(0);
            (if allowed.contains(0) { 0 } else { first }).to_string()
        })
    }
}

/// The counters named in `list` (comma-separated). A preset this cpu has no definition for is
/// reported in the request's `undefined`, not fatal; a misspelled name is an error.
pub fn counters_of(list: &str) -> Result<(Vec<Spec>, Vec<String>), BadValue> {
    let cpu = CpuId::read();
    let mut specs = Vec::new();
    let mut undefined = Vec::new();
    for name in list.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        match counters::parse(name, &cpu) {
            Ok(s) => specs.push(s),
            Err(why)
                if counters::preset(name, &cpu).is_err()
                    && ["L2_TCM", "L2_TCA"].contains(&name) =>
            {
                undefined.push(format!("{name}: {why}"))
            }
            Err(why) => return Err(why),
        }
    }
    Ok((specs, undefined))
}

/// What the experiment produced: measurements, the per-run tables as text, and whether it was
/// stopped (what completed is kept).
pub struct Experiment {
    /// Measurements of every kernel and variant, and the migration cost.
    pub measurements: Vec<Measurement>,
    /// Per-run tables and verdicts.
    pub doc: Doc,
    /// Whether Ctrl-C stopped it.
    pub interrupted: bool,
}

/// Seconds the whole request takes here, from timing one step of rows of each kernel.
pub fn estimate_seconds(req: &Request) -> f64 {
    let mut m = Matmul::new(req.size);
    req.kernels
        .iter()
        .map(|&k| m.estimate_seconds(k) * 2.0 * req.runs as f64)
        .sum()
}

/// Runs the request; `progress` hears of every run as it completes.
pub fn run(
    topology: &Topology,
    req: &Request,
    progress: &mut dyn FnMut(String),
) -> Result<Experiment, ProbeError> {
    let (n, a, b) = (req.size, req.from, req.to);
    let class = topology.distance_class(a, b);
    let pages = match req.nodes {
        Some((na, nb)) => format!(" Every run starts with its pages on A's node {na}; the migrated run leaves them there (its control too), and a second pair has them follow the thread to node {nb} (move_pages at the switch, timed apart; its control pinned on B with them on node {nb})."),
        None => req.no_follow.clone().unwrap_or_else(|| " A and B share their NUMA node (or there is one): the pages stay where they are, and no pages-follow variant runs.".to_string()),
    };
    let mut doc = vec![Block::Text(format!(
        "{n}x{n} matrix multiply, A = cpu {a}, B = cpu {b} ({class}), {} runs per kernel and variant, alternating: pinned on A, pinned on B (the control) and migrated from A to B half way. The migration's cost is the migrated run's second half less the control's, both on B: in wall time, and in cpu time (which another task on B does not lengthen).{pages}",
        req.runs
    ))];
    // The kernel's automatic NUMA balancing would move pages on its own, into the arm that
    // leaves them behind and out of step with the one that moves them: off for the run, put
    // back after it (through the crash-safe record), and said either way.
    let (_balancing, said) = balancing_off(req.nodes.is_some());
    if let Some(said) = &said {
        doc.push(Block::Text(said.clone()));
    }
    let mut measurements = Vec::new();
    let mut interrupted = false;
    let mut m = Matmul::new(n);
    let follow = req.nodes.is_some();
    for &kernel in &req.kernels {
        // The pairs are (controls, migrated runs): the pinned-on-A run goes with the controls;
        // each arm's runs are its pages-stay variant, then its pages-follow one.
        let mut pinned = Vec::new();
        let pairs = paired::alternate(req.runs, |arm, r| {
            let variants: &[Variant] = match (arm, follow) {
                (Arm::A, false) => &[Variant::Pinned, Variant::Control],
                (Arm::A, true) => &[Variant::Pinned, Variant::Control, Variant::ControlLocal],
                (Arm::B, false) => &[Variant::Migrated],
                (Arm::B, true) => &[Variant::Migrated, Variant::MigratedFollow],
            };
            let mut runs = Vec::new();
            for &variant in variants {
                match run_matmul(&mut m, kernel, variant, (a, b), req.nodes, &req.counters) {
                    Ok(res) => {
                        progress(format!(
                            "{} {} run {}/{}: {:.3} s",
                            kernel.name(),
                            variant.name(),
                            r + 1,
                            req.runs,
                            res.seconds()
                        ));
                        match variant {
                            Variant::Pinned => pinned.push(res),
                            _ => runs.push(res),
                        }
                    }
                    Err(ProbeError::Interrupted) => return Ok(None),
                    Err(e) => return Err(e),
                }
            }
            Ok(Some(runs))
        })?;
        interrupted = pairs.stopped;
        report(
            &mut doc,
            &mut measurements,
            req,
            kernel,
            class,
            &pinned,
            &pairs,
        );
        if interrupted {
            break;
        }
    }
    // Every cost row records what the kernel's balancing did meanwhile.
    if let Some(said) = &said {
        measurements
            .iter_mut()
            .filter(|m| m.difference)
            .for_each(|m| m.note_before(said.clone()));
    }
    let group = counters::Group::open(&req.counters, counters::Target::ThisThread);
    let missing: Vec<String> = req
        .undefined
        .iter()
        .cloned()
        .chain(
            group
                .unavailable()
                .iter()
                .map(|u| format!("{}: {}", u.name, u.reason)),
        )
        .collect();
    if !missing.is_empty() {
        doc.push(Block::Text(format!(
            "\ncounters not measured here:\n  {}",
            missing.join("\n  ")
        )));
    }
    Ok(Experiment {
        measurements,
        doc,
        interrupted,
    })
}

/// Automatic NUMA balancing switched off when pages can move between nodes, and what to say of
/// it: switched off (and from what), already off, or left on because it could not be.
fn balancing_off(nodes: bool) -> (Option<oslab_os::balancing::BalancingGuard>, Option<String>) {
    if !nodes {
        return (None, None);
    }
    match oslab_os::balancing::BalancingGuard::set(false) {
        Ok(Some(g)) => {
            let said = format!("Automatic NUMA balancing switched off for the run (it was {}), put back after it: only this experiment moves pages.", g.previous());
            (Some(g), Some(said))
        }
        Ok(None) => (None, Some("Automatic NUMA balancing is off: only this experiment moves pages.".into())),
        Err(e) => (None, Some(format!("Automatic NUMA balancing stays on ({e}): the kernel may move pages during the runs, so the pages left behind may not all stay."))),
    }
}

/// Why the pages-follow arm did not measure what it says, when some run's pages did not follow:
/// fewer than [`FOLLOWED`] of them on B's node after the move.
fn not_followed(moves: &[PageMove], node: usize) -> Option<String> {
    let short: Vec<String> = moves
        .iter()
        .filter(|p| (p.on_node as f64) < FOLLOWED * p.pages as f64)
        .map(|p| format!("{} of {}", p.on_node, p.pages))
        .collect();
    (!short.is_empty()).then(|| {
        format!(
            "the pages did not follow: {} on node {node} after the move in {} of {} runs",
            short.join(", "),
            short.len(),
            moves.len()
        )
    })
}

/// The share of its pages a pages-follow run must have on B's node after the move.
const FOLLOWED: f64 = 0.9;

/// A signed time for people: "+1.23 ms", "-450 µs".
fn signed(ns: f64) -> String {
    let sign = if ns < 0.0 { "-" } else { "+" };
    format!("{sign}{}", value(ns.abs(), Unit::Ns))
}

/// L2 misses per L2 access in phase `p`, when both were counted.
fn miss_rate(r: &RunResult, p: usize) -> Option<f64> {
    let get = |name: &str| {
        r.phases[p]
            .counters
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.value)
    };
    match (get("L2_TCM"), get("L2_TCA")) {
        (Some(m), Some(t)) if t > 0.0 => Some(m / t),
        _ => None,
    }
}

/// Writes one kernel's per-run table and verdict, and adds its measurements.
fn report(
    doc: &mut Doc,
    out: &mut Vec<Measurement>,
    req: &Request,
    kernel: MatmulKernel,
    class: &str,
    pinned: &[RunResult],
    pairs: &Pairs<Vec<RunResult>>,
) {
    let (n, a, b) = (req.size, req.from, req.to);
    let block = match kernel {
        MatmulKernel::Blocked(bs) => bs,
        MatmulKernel::Naive => 0,
    };
    doc.push(Block::Text(format!(
        "\n{} kernel{}:",
        kernel.name(),
        if block > 0 {
            format!(" (block {block})")
        } else {
            String::new()
        }
    )));
    let mut table = Table::new(
        &[
            "variant",
            "run",
            "time",
            "phase 1 (on cpu)",
            "phase 2 (on cpu)",
            "phase 2 cpu time",
            "L2 miss rate 1",
            "L2 miss rate 2",
        ],
        &[1, 2, 3, 4, 5, 6, 7],
    )
    .optional(&[7, 6, 3]);
    let arm = |runs: &[Vec<RunResult>], k: usize| -> Vec<RunResult> {
        runs.iter().filter_map(|r| r.get(k).cloned()).collect()
    };
    let mut variants = vec![
        (Variant::Pinned, pinned.to_vec()),
        (Variant::Control, arm(&pairs.a, 0)),
        (Variant::Migrated, arm(&pairs.b, 0)),
    ];
    if req.nodes.is_some() {
        variants.push((Variant::ControlLocal, arm(&pairs.a, 1)));
        variants.push((Variant::MigratedFollow, arm(&pairs.b, 1)));
    }
    // The costs come first (the answer: `show`'s main figure is a probe's first metric), each
    // variant's own figures after them.
    let mut per_variant = Vec::new();
    for (variant, runs) in &variants {
        for (i, r) in runs.iter().enumerate() {
            let phase = |p: usize| {
                format!(
                    "{} ({})",
                    value(r.phases[p].seconds * 1e9, Unit::Ns),
                    r.phases[p].cpu.map_or("?".into(), |c| c.to_string())
                )
            };
            let rate = |p| miss_rate(r, p).map_or("-".into(), |x| format!("{:.4}", x));
            table.row(vec![
                variant.name().into(),
                (i + 1).to_string(),
                value(r.seconds() * 1e9, Unit::Ns),
                phase(0),
                phase(1),
                value(r.phases[1].cpu_seconds * 1e9, Unit::Ns),
                rate(0),
                rate(1),
            ]);
        }
        let (from, to) = variant.cpus(a, b);
        let base = params! {
            "kernel" => kernel.name(), "block" => block, "n" => n, "variant" => variant.name(),
            "from" => from, "to" => to, "class" => class,
        };
        variant_measurements(&mut per_variant, &base, &req.counters, runs);
    }
    doc.push(Block::Table(table));
    let params = params! {"kernel" => kernel.name(), "block" => block, "n" => n, "from" => a, "to" => b, "class" => class};
    // The pages-follow runs' page moves: what judges that arm, and the move's own figures.
    let moves: Vec<PageMove> = pairs.b.iter().filter_map(|r| r.get(1)?.page_move).collect();
    let second = |r: &Vec<RunResult>, k: usize, cpu: bool| {
        r.get(k).map_or(f64::NAN, |r| {
            let p = &r.phases[1];
            1e9 * if cpu { p.cpu_seconds } else { p.seconds }
        })
    };
    // The move's cost: the second half on B after the move less its control's second half on
    // B, pair by pair; in wall time (what a program feels) and cpu time (what the move itself
    // costs: another task on B lengthens the wall time of both arms' waits, not their cpu time).
    let stay = format!("migrated from cpu {a} - pinned on cpu {b} all along");
    let mut costs = vec![
        (0, metric::MIGRATION_COST, "wall time", false, stay.clone()),
        (0, metric::MIGRATION_COST_CPU, "cpu time", true, stay),
    ];
    if let Some((_, nb)) = req.nodes {
        let follow = format!("migrated from cpu {a}, its pages following - pinned on cpu {b} all along, its pages on node {nb}");
        costs.push((
            1,
            metric::MIGRATION_COST_PAGES_FOLLOW,
            "wall time",
            false,
            follow.clone(),
        ));
        costs.push((
            1,
            metric::MIGRATION_COST_PAGES_FOLLOW_CPU,
            "cpu time",
            true,
            follow,
        ));
    }
    for (k, metric, what, cpu, arms) in costs {
        let diffs: Vec<f64> = pairs
            .a
            .iter()
            .zip(&pairs.b)
            .map(|(c, m)| second(m, k, cpu) - second(c, k, cpu))
            .filter(|d| d.is_finite())
            .collect();
        let pages = match (req.nodes, k) {
            (Some((na, _)), 0) => format!(", the pages left on A's node {na}"),
            (Some((_, nb)), _) => {
                format!(", the pages on B's node {nb} (moved at the switch, the move not counted)")
            }
            (None, _) => String::new(),
        };
        let (mut verdict, mut m) = cost(
            &params,
            metric,
            &diffs,
            &format!("paired runs, second half on cpu {b}{pages}: {arms}, in {what}"),
        );
        // A pages-follow cost whose pages stayed behind is the pages-stay cost under its name.
        if let (1, Some((_, nb))) = (k, req.nodes) {
            if let Some(why) = not_followed(&moves, nb) {
                m.status = oslab_core::Status::Failed(why.clone());
                verdict = why;
            }
        }
        doc.push(Block::Text(format!(
            "  migration cost in {what} (second half on B{pages}: {arms}) {verdict}"
        )));
        out.push(m);
    }
    if let Some((na, nb)) = req.nodes {
        // What leaving the pages behind costs: the controls on B, pages on A's node less pages
        // on B's node, pair by pair (the same arm's two runs, one after the other).
        let remote: Vec<f64> = pairs
            .a
            .iter()
            .map(|c| second(c, 0, false) - second(c, 1, false))
            .filter(|d| d.is_finite())
            .collect();
        let (verdict, m) = cost(
            &params,
            metric::REMOTE_MEMORY_COST,
            &remote,
            &format!("the control on cpu {b}, second half: pages on A's node {na} - pages on B's node {nb}, run after run"),
        );
        doc.push(Block::Text(format!(
            "  remote memory: the second half on B with the pages on node {na} less with them on node {nb} {verdict}"
        )));
        out.push(m);
        // The page move itself, apart from any cost.
        if !moves.is_empty() {
            let ns: Vec<f64> = moves.iter().map(|p| p.seconds * 1e9).collect();
            let moved: Vec<f64> = moves.iter().map(|p| p.on_node as f64).collect();
            let asked = moves[0].pages;
            let note = format!("move_pages of the three matrices ({asked} pages) to node {nb} at the switch; the pages found there after it");
            let row = |metric: &str, unit, samples: &[f64]| {
                judged(
                    PROBE,
                    params.clone(),
                    metric,
                    unit,
                    samples,
                    Some(note.clone()),
                    Judge::Median,
                )
            };
            out.push(row(metric::PAGE_MOVE, Unit::Ns, &ns));
            out.push(row(metric::PAGES_MOVED, Unit::Count, &moved));
            let (low, high) = (
                moved.iter().cloned().fold(f64::INFINITY, f64::min),
                moved.iter().cloned().fold(0.0, f64::max),
            );
            doc.push(Block::Text(format!(
                "  page move (apart from the cost above): {} median for {asked} pages, {low:.0}-{high:.0} of them on node {nb} after it",
                value(oslab_core::stats::median(&ns).unwrap_or(f64::NAN), Unit::Ns)
            )));
        }
    }
    out.extend(per_variant);
}

/// A cost from paired differences (ns): its verdict in words and its measurement, noted with
/// `how` and the verdict. A cost whose interval lies below zero is no cost: the measurement fails
/// with the reason, and the words give that reason instead of "significant".
fn cost(
    params: &serde_json::Map<String, serde_json::Value>,
    metric: &str,
    diffs: &[f64],
    how: &str,
) -> (String, Measurement) {
    let verdict = paired::verdict_text(diffs, signed);
    let mut m = paired::measurement(
        PROBE,
        params.clone(),
        metric,
        Unit::Ns,
        diffs,
        format!("{how}; {verdict}"),
    );
    m.check_possible();
    match &m.status {
        oslab_core::Status::Failed(why) => (why.clone(), m),
        _ => (verdict, m),
    }
}

/// The time, phase times, counters and miss rates of one variant's runs.
fn variant_measurements(
    out: &mut Vec<Measurement>,
    base: &serde_json::Map<String, serde_json::Value>,
    specs: &[Spec],
    runs: &[RunResult],
) {
    let row = |metric: &str, unit, samples: &[f64], note: Option<String>| {
        judged(
            PROBE,
            base.clone(),
            metric,
            unit,
            samples,
            note,
            Judge::Median,
        )
    };
    let moves: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.moves)
        .map(|n| n as f64)
        .collect();
    if !moves.is_empty() {
        let note = "cpu-migrations counted across the move between the halves";
        out.push(row(metric::MOVES, Unit::Count, &moves, Some(note.into())));
    }
    let ns = |f: &dyn Fn(&RunResult) -> f64| runs.iter().map(|r| f(r) * 1e9).collect::<Vec<_>>();
    out.push(row(metric::TIME, Unit::Ns, &ns(&|r| r.seconds()), None));
    for p in 0..2 {
        let time = [metric::PHASE1_TIME, metric::PHASE2_TIME][p];
        out.push(row(time, Unit::Ns, &ns(&|r| r.phases[p].seconds), None));
        for spec in specs {
            let readings: Vec<_> = runs
                .iter()
                .filter_map(|r| r.phases[p].counters.iter().find(|c| c.name == spec.name))
                .collect();
            if readings.is_empty() {
                continue;
            }
            let values: Vec<f64> = readings.iter().map(|c| c.value).collect();
            let on_pmu = readings.iter().map(|c| c.running).fold(1.0, f64::min);
            let mut note = spec.origin.clone();
            if on_pmu < 0.999 {
                note.push_str(&format!(
                    "; multiplexed: on the PMU {:.0}% of the time at worst, values scaled by enabled/running",
                    on_pmu * 100.0
                ));
            }
            let metric = format!("{} phase{}", spec.name, p + 1);
            out.push(row(&metric, Unit::Count, &values, Some(note)));
        }
        let rates: Vec<f64> = runs.iter().filter_map(|r| miss_rate(r, p)).collect();
        if !rates.is_empty() {
            let metric = format!("L2 miss rate phase{}", p + 1);
            out.push(row(&metric, Unit::Share, &rates, None));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migration::matmul::Phase;

    #[test]
    fn a_pages_follow_arm_whose_pages_stayed_is_no_pages_follow_cost() {
        let moved = |on_node| PageMove {
            seconds: 0.001,
            pages: 381,
            on_node,
        };
        assert_eq!(not_followed(&[moved(381), moved(380)], 2), None);
        // 303-319 of 381 moved in two runs with the kernel's balancing on; 0 in a third.
        let why = not_followed(&[moved(381), moved(303), moved(0)], 2).unwrap();
        assert!(
            why.contains("303 of 381, 0 of 381 on node 2") && why.contains("2 of 3 runs"),
            "{why}"
        );
    }

    fn run(first: f64, second: f64) -> RunResult {
        let phase = |seconds| Phase {
            cpu_seconds: seconds,
            cpu: Some(0),
            seconds,
            counters: Vec::new(),
        };
        RunResult {
            phases: [phase(first), phase(second)],
            moves: None,
            page_move: None,
        }
    }

    #[test]
    fn a_variant_whose_runs_disagree_is_noisy_with_its_reason() {
        let time = |runs: &[RunResult]| {
            let mut out = Vec::new();
            variant_measurements(&mut out, &params! {"variant" => "pinned"}, &[], runs);
            out.into_iter().find(|m| m.metric == "time").unwrap()
        };
        let steady: Vec<RunResult> = (0..9).map(|k| run(0.5 + k as f64 * 1e-4, 0.5)).collect();
        let m = time(&steady);
        assert!(m.status.has_value() && !m.status.is_noisy(), "{m:?}");
        // Every other run shared its cpu with another guest: twice as long.
        let shared: Vec<RunResult> = (0..9)
            .map(|k| {
                if k % 2 == 0 {
                    run(0.5, 0.5)
                } else {
                    run(1.0, 1.0)
                }
            })
            .collect();
        let m = time(&shared);
        assert!(m.status.is_noisy(), "{m:?}");
        assert!(m.note.as_deref().unwrap_or("").contains("noisy:"), "{m:?}");
    }
}
