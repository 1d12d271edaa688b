//! `oslab shuffle simulate`: workloads of rising lock contention run on a simulated machine with
//! and without shuffling (each pair shares its random draws, so it differs only by the daemon), then the
//! monitoring interval swept: execution time, lock contention, shuffles, cross-socket hand-offs.

use super::simulate::{
    simulate, Costs, DaemonSettings, LockProgram, SimulatedMachine, SimulatedRun,
};
use oslab_core::catalog::id;
use oslab_core::model::{self, judged, Judge, Measurement, Unit};
use oslab_core::params;
use oslab_core::reason::BadValue;
use oslab_core::stats::Summary;
use oslab_core::text::{Block, Doc, Table};
use oslab_core::units::setting;
use std::time::Duration;

/// Probe id of the simulation's measurements.
pub const PROBE: &str = id::SHUFFLE_SIM;

/// How contended a preset workload is: work outside the lock per acquisition, in critical
/// sections of lock 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Contention {
    /// Twice the critical section outside it: every lock saturated.
    High,
    /// Six times.
    Medium,
    /// Sixteen times.
    Low,
    /// 150 times: waits far below any threshold.
    None,
}

impl Contention {
    /// Every preset, most contended first.
    pub const ALL: [Contention; 4] = [
        Contention::High,
        Contention::Medium,
        Contention::Low,
        Contention::None,
    ];

    fn name(self) -> &'static str {
        match self {
            Contention::High => "high",
            Contention::Medium => "medium",
            Contention::Low => "low",
            Contention::None => "none",
        }
    }

    fn outside(self) -> f64 {
        match self {
            Contention::High => 2.0,
            Contention::Medium => 6.0,
            Contention::Low => 16.0,
            Contention::None => 150.0,
        }
    }
}

fn ns(d: Duration) -> f64 {
    d.as_secs_f64() * 1e9
}

/// What to simulate.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct Request {
    /// Sockets of the simulated machine (each one cache domain).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=64)))]
    pub sockets: u64,
    /// Cores per socket.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=256)))]
    pub cores: u64,
    /// Threads (default: one per core).
    #[cfg_attr(feature = "clap", arg(long, value_parser = clap::value_parser!(u64).range(1..=4096)))]
    pub threads: Option<u64>,
    /// Locks; thread i starts on lock i mod locks.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=1024)))]
    pub locks: u64,
    /// Preset workloads to run (default: all).
    #[cfg_attr(feature = "clap", arg(long, value_enum, value_delimiter = ','))]
    pub workload: Vec<Contention>,
    /// Mean work inside lock 0 per acquisition; lock k's is 1 + k x --spread times longer.
    #[cfg_attr(feature = "clap", arg(long, value_name = "TIME", default_value = "5us", value_parser = oslab_core::units::parse_duration))]
    pub critical: Duration,
    /// Mean work outside the lock: one workload of this shape instead of the presets.
    #[cfg_attr(feature = "clap", arg(long, value_name = "TIME", value_parser = oslab_core::units::parse_duration))]
    pub noncritical: Option<Duration>,
    /// How much longer each further lock's critical sections are (0: all alike, so lock times
    /// cannot tell the locks' threads apart).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0.5, value_parser = oslab_core::units::parse_growth))]
    pub spread: f64,
    /// Acquisitions per thread.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000)))]
    pub iterations: u64,
    /// The threads are dealt to the locks anew this often, as pipeline stages change ("0": never).
    #[cfg_attr(feature = "clap", arg(long, value_name = "TIME", default_value = "1s", value_parser = parse_duration_or_zero))]
    pub phase: Duration,
    /// Daemon interval.
    #[cfg_attr(feature = "clap", arg(long, value_name = "TIME", default_value = "200ms", value_parser = oslab_core::units::parse_duration))]
    pub interval: Duration,
    /// Intervals to sweep on the most contended workload ("0": no sweep).
    #[cfg_attr(feature = "clap", arg(long, value_name = "TIME,...", value_delimiter = ',', default_value = "20ms,50ms,100ms,200ms,500ms,1s", value_parser = parse_duration_or_zero))]
    pub sweep: Vec<Duration>,
    /// Lock-wait share of thread time above which threads are regrouped.
    #[cfg_attr(feature = "clap", arg(long, default_value = "10%", value_parser = oslab_core::units::parse_share))]
    pub threshold: f64,
    /// How the daemon groups threads: lock-time (the paper's: sorted by lock-wait share, cut
    /// into one group per socket) or lock (the threads of one lock on one socket, as many as fit).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "lock-time|lock", default_value = "lock-time")
    )]
    pub grouping: super::Grouping,
    /// Runs per workload and mode, each with its own random draws (a pair with and without
    /// shares them).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=100)))]
    pub runs: u64,
    /// A cache line from another core of the same socket.
    #[cfg_attr(feature = "clap", arg(long, value_name = "TIME", default_value = "80ns", value_parser = oslab_core::units::parse_duration))]
    pub line_local: Duration,
    /// A cache line from another socket.
    #[cfg_attr(feature = "clap", arg(long, value_name = "TIME", default_value = "200ns", value_parser = oslab_core::units::parse_duration))]
    pub line_remote: Duration,
    /// Cache lines of protected data a critical section pulls from the previous holder.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(0..=100_000)))]
    pub lines: u32,
    /// A blocked waiter handed the lock starts this much later (futex wake-up across cpus).
    #[cfg_attr(feature = "clap", arg(long, value_name = "TIME", default_value = "3us", value_parser = oslab_core::units::parse_duration))]
    pub wake: Duration,
    /// Cache refill of a thread moved to another socket.
    #[cfg_attr(feature = "clap", arg(long, value_name = "TIME", default_value = "50us", value_parser = oslab_core::units::parse_duration))]
    pub move_cost: Duration,
    /// The daemon's cpu time per thread per interval.
    #[cfg_attr(feature = "clap", arg(long, value_name = "TIME", default_value = "10us", value_parser = oslab_core::units::parse_duration))]
    pub monitor_cost: Duration,
    /// A recorded lock profile instead of the presets: a stored watch of a live program
    /// (`oslab shuffle --monitor-only -- CMD`; id or 'latest'): its contending threads on their
    /// locks, each lock's outside work calibrated to the waits recorded (critical sections of
    /// --critical).
    #[cfg_attr(feature = "clap", arg(long, value_name = "RUN", conflicts_with_all = ["workload", "noncritical"]))]
    pub profile: Option<String>,
    /// The profile `--profile` names, loaded.
    #[cfg_attr(feature = "clap", arg(skip))]
    pub recorded: Option<super::profile::Profile>,
}

/// A duration, or zero for "0" (never, none).
pub fn parse_duration_or_zero(s: &str) -> Result<Duration, BadValue> {
    if s.trim() == "0" {
        return Ok(Duration::ZERO);
    }
    oslab_core::units::parse_duration(s)
}

impl Request {
    fn machine(&self) -> SimulatedMachine {
        SimulatedMachine {
            sockets: self.sockets as usize,
            cores: self.cores as usize,
        }
    }

    fn costs(&self) -> Costs {
        Costs {
            line_local: ns(self.line_local),
            line_remote: ns(self.line_remote),
            lines: self.lines,
            wake: ns(self.wake),
            move_cost: ns(self.move_cost),
            monitor_cost: ns(self.monitor_cost),
            ..Costs::default()
        }
    }

    fn threads(&self) -> usize {
        self.threads
            .map_or(self.sockets as usize * self.cores as usize, |t| t as usize)
    }

    /// The workloads asked for: a recorded profile, one custom shape, or the presets.
    pub fn workloads(&self) -> Vec<LockProgram> {
        if let Some(p) = &self.recorded {
            return vec![p.program(ns(self.critical), self.iterations, self.costs())];
        }
        let shape = |name: &str, outside: f64| LockProgram {
            name: name.into(),
            threads: self.threads(),
            locks: self.locks as usize,
            critical: ns(self.critical),
            spread: self.spread,
            noncritical: outside,
            iterations: self.iterations,
            phase: (!self.phase.is_zero()).then(|| ns(self.phase)),
            recorded: None,
        };
        if let Some(n) = self.noncritical {
            return vec![shape("custom", ns(n))];
        }
        let presets: &[Contention] = if self.workload.is_empty() {
            &Contention::ALL
        } else {
            &self.workload
        };
        presets
            .iter()
            .map(|c| shape(c.name(), c.outside() * ns(self.critical)))
            .collect()
    }
}

/// A workload's runs with and without shuffling at one interval.
#[derive(Debug, Clone)]
pub struct Cell {
    /// The workload.
    pub workload: String,
    /// The daemon's interval.
    pub interval: Duration,
    /// Runs without shuffling (the daemon watching only), by random stream.
    pub without: Vec<SimulatedRun>,
    /// Runs with shuffling, same random streams.
    pub with: Vec<SimulatedRun>,
}

impl Cell {
    /// Execution time with / without, pair by pair, minus one: the change shuffling made.
    pub fn changes(&self) -> Vec<f64> {
        self.with
            .iter()
            .zip(&self.without)
            .map(|(w, o)| w.time / o.time - 1.0)
            .collect()
    }
}

/// The whole simulation.
#[derive(Debug, Clone)]
pub struct Study {
    /// What was asked.
    pub request: Request,
    /// One cell per workload at the request's interval.
    pub workloads: Vec<Cell>,
    /// The most contended workload at each swept interval.
    pub sweep: Vec<Cell>,
    /// Whether Ctrl-C cut it short (cells then hold the completed runs).
    pub interrupted: bool,
}

/// Runs the study: every run independent and seeded, spread over the cpus we may use.
pub fn study(r: &Request, stop: &(dyn Fn() -> bool + Sync)) -> Study {
    let workloads = r.workloads();
    let mut cells: Vec<(LockProgram, Duration)> =
        workloads.iter().map(|w| (w.clone(), r.interval)).collect();
    // The sweep runs the first workload at each interval; at the request's own interval that
    // is its first cell already.
    let mut swept = Vec::new();
    if let Some(first) = workloads.first() {
        for &i in r.sweep.iter().filter(|i| !i.is_zero()) {
            if i == r.interval {
                swept.push(0);
            } else {
                swept.push(cells.len());
                cells.push((first.clone(), i));
            }
        }
    }
    // Each job: (cell, seed, shuffle).
    let jobs: Vec<(usize, u64, bool)> = (0..cells.len())
        .flat_map(|c| (1..=r.runs).flat_map(move |s| [(c, s, false), (c, s, true)]))
        .collect();
    let (m, costs) = (r.machine(), r.costs());
    let results = parallel(&jobs, stop, |&(c, seed, shuffle)| {
        let (w, interval) = &cells[c];
        let d = DaemonSettings {
            shuffle,
            interval: ns(*interval),
            threshold: r.threshold,
            grouping: r.grouping,
        };
        simulate(m, costs, w, d, seed, stop)
    });
    let interrupted = results.iter().any(Option::is_none);
    let mut out: Vec<Cell> = cells
        .iter()
        .map(|(w, i)| Cell {
            workload: w.name.clone(),
            interval: *i,
            without: Vec::new(),
            with: Vec::new(),
        })
        .collect();
    // Only complete pairs count.
    for pair in jobs.chunks(2).zip(results.chunks(2)) {
        if let (&[(c, _, _), _], [Some(a), Some(b)]) = (pair.0, pair.1) {
            out[c].without.push(a.clone());
            out[c].with.push(b.clone());
        }
    }
    let sweep = swept.iter().map(|&c| out[c].clone()).collect();
    out.truncate(workloads.len());
    Study {
        request: r.clone(),
        workloads: out,
        sweep,
        interrupted,
    }
}

/// `f` over `jobs` on as many threads as we have cpus; None for jobs `stop` kept from starting
/// or cut short.
fn parallel<J: Sync, R: Send>(
    jobs: &[J],
    stop: &(dyn Fn() -> bool + Sync),
    f: impl Fn(&J) -> Option<R> + Sync,
) -> Vec<Option<R>> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<std::sync::Mutex<Option<R>>> =
        jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..workers.min(jobs.len()) {
            s.spawn(|| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if k >= jobs.len() || stop() {
                    break;
                }
                let r = f(&jobs[k]);
                *slots[k].lock().unwrap_or_else(|p| p.into_inner()) = r;
            });
        }
    });
    slots
        .into_iter()
        .map(|m| m.into_inner().unwrap_or_else(|p| p.into_inner()))
        .collect()
}

fn median(v: &[f64]) -> Option<f64> {
    Summary::new(v).map(|s| s.median)
}

fn signed_pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{:+.1}%", x * 100.0))
}

fn of(runs: &[SimulatedRun], f: impl Fn(&SimulatedRun) -> f64) -> Vec<f64> {
    runs.iter().map(f).collect()
}

impl Study {
    /// The runs as measurements: per workload (and swept interval) and mode, time, lock-wait
    /// fraction, shuffles, moves and cross-socket hand-offs over the random streams; the paired change.
    pub fn measurements(&self) -> Vec<Measurement> {
        let r = &self.request;
        let mut ms = Vec::new();
        let cells = self
            .workloads
            .iter()
            .map(|c| (c, "workload"))
            .chain(self.sweep.iter().map(|c| (c, "interval sweep")));
        for (c, part) in cells {
            let base = params! {
                "workload" => c.workload.clone(),
                "interval_ms" => c.interval.as_secs_f64() * 1e3,
                "part" => part,
                "sockets" => r.sockets,
                "cores" => r.cores,
                "threads" => r.threads(),
                "locks" => r.locks,
                model::CLOCK => model::SIMULATED,
            };
            for (mode, runs) in [("monitor-only", &c.without), ("shuffle", &c.with)] {
                let mut p = base.clone();
                p.insert("mode".into(), mode.into());
                let series = [
                    (
                        "time",
                        Unit::Ns,
                        of(runs, |o| o.time),
                        "execution time: the last thread's end",
                    ),
                    (
                        "lock_fraction",
                        Unit::Share,
                        of(runs, |o| o.lock_fraction),
                        "time waiting for locks over thread time",
                    ),
                    (
                        "shuffles",
                        Unit::Count,
                        of(runs, |o| f64::from(o.shuffles)),
                        "intervals in which a thread moved",
                    ),
                    (
                        "moves",
                        Unit::Count,
                        of(runs, |o| f64::from(o.moves)),
                        "threads moved",
                    ),
                    (
                        "remote_share",
                        Unit::Ratio,
                        of(runs, |o| o.remote_share),
                        "lock hand-overs that crossed sockets",
                    ),
                ];
                for (metric, unit, v, note) in series {
                    ms.push(judged(
                        PROBE,
                        p.clone(),
                        metric,
                        unit,
                        &v,
                        Some(format!("simulated, {} randomised runs; {note}", v.len())),
                        Judge::Subject,
                    ));
                }
            }
            // A paired difference: ratio only below three pairs, as every command's.
            ms.push(oslab_core::stats::paired::measurement(
                PROBE,
                base,
                "change",
                Unit::Ratio,
                &c.changes(),
                "time with shuffling / without, same random draws, minus one".into(),
            ));
        }
        ms
    }

    /// The study as tables.
    pub fn doc(&self) -> Doc {
        let r = &self.request;
        let mut doc = vec![Block::Text(format!(
            "simulated: {} sockets x {} cores, {} threads on {} locks (lock k's critical section {} x (1 + {} k)), {} acquisitions each, threads dealt to locks anew every {}; daemon every {}, threshold {:.0}%, grouping by {}; {} randomised runs per cell\ncosts: a cache line {} from the same socket, {} from another; {} lines pulled per critical section; {} to wake a blocked waiter; {} to refill a moved thread's cache; daemon {} per thread per interval",
            r.sockets,
            r.cores,
            r.threads(),
            r.locks,
            setting(r.critical),
            r.spread,
            r.iterations,
            if r.phase.is_zero() { "never".into() } else { setting(r.phase) },
            setting(r.interval),
            r.threshold * 100.0,
            r.grouping.name(),
            r.runs,
            setting(r.line_local),
            setting(r.line_remote),
            r.lines,
            setting(r.wake),
            setting(r.move_cost),
            setting(r.monitor_cost),
        ))];
        let header = |first: &str| {
            Table::new(
                &[
                    first, "waits", "time", "change", "range", "shuffles", "remote",
                ],
                &[1, 2, 3, 4, 5, 6],
            )
        };
        let mut t = header("workload");
        for c in &self.workloads {
            t.row(row(&c.workload, c));
        }
        doc.push(Block::Table(t));
        if let (Some(first), false) = (self.workloads.first(), self.sweep.is_empty()) {
            doc.push(Block::Text(format!(
                "\nthe monitoring interval, workload {}:",
                first.workload
            )));
            let mut t = header("interval");
            for c in &self.sweep {
                t.row(row(&setting(c.interval), c));
            }
            doc.push(Block::Table(t));
        }
        doc.push(Block::Text(
            "waits: lock-wait share of thread time without shuffling; time: execution time without -> with shuffling; change: with / without, same random draws, minus one (median, and its range over the runs); shuffles: intervals in which the daemon moved threads; remote: lock hand-offs that crossed sockets, without -> with (medians)".into(),
        ));
        if self.interrupted {
            doc.push(Block::Text(
                "interrupted: cells hold the pairs completed".into(),
            ));
        }
        doc
    }
}

/// Three significant digits.
fn sig3(v: f64) -> String {
    match v.abs() {
        a if a >= 100.0 => format!("{v:.0}"),
        a if a >= 10.0 => format!("{v:.1}"),
        _ => format!("{v:.2}"),
    }
}

/// A whole percentage with its sign, zero without.
fn whole_pct(v: f64) -> String {
    let p = (v * 100.0).round();
    if p == 0.0 {
        "0".into()
    } else {
        format!("{p:+.0}")
    }
}

fn row(label: &str, c: &Cell) -> Vec<String> {
    let time = |runs: &[SimulatedRun]| median(&of(runs, |o| o.time));
    let time = match (time(&c.without), time(&c.with)) {
        (Some(a), Some(b)) => {
            let (div, unit) = oslab_core::units::time_scale(a);
            format!("{} -> {} {unit}", sig3(a / div), sig3(b / div))
        }
        _ => "-".into(),
    };
    let changes = c.changes();
    let range = match (
        changes.iter().copied().reduce(f64::min),
        changes.iter().copied().reduce(f64::max),
    ) {
        (Some(a), Some(b)) => format!("{}..{}%", whole_pct(a), whole_pct(b)),
        _ => "-".into(),
    };
    let share = |runs: &[SimulatedRun]| {
        median(&of(runs, |o| o.remote_share)).map_or("-".into(), |v| format!("{:.0}%", v * 100.0))
    };
    vec![
        label.to_string(),
        median(&of(&c.without, |o| o.lock_fraction))
            .map_or("-".into(), |v| format!("{:.0}%", v * 100.0)),
        time,
        signed_pct(median(&changes)),
        range,
        median(&of(&c.with, |o| f64::from(o.shuffles))).map_or("-".into(), |s| format!("{s:.0}")),
        format!("{} -> {}", share(&c.without), share(&c.with)),
    ]
}
