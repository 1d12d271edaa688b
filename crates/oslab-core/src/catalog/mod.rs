//! The probe catalog: what every probe is, declared once. Its id, what it measures, its unit,
//! its metrics (each with its unit and whether the machine model predicts it, or why not), its
//! family and where it comes from (the suite or an experiment's command); the families in one
//! order, each with its chart; and the headline's lines. The probes, the model, the reports,
//! the comparisons and the store read these values instead of spelling ids: a typo in a
//! constant's name does not compile, and the tests walk the catalog (every suite probe is run by
//! the registry, every predicted metric has a model arm, every measurement a probe returns is
//! one of its own).

use crate::model::Unit;

mod commands;
pub mod id;
pub mod metric;
mod suite;

pub use commands::*;
pub use suite::*;

/// A group of probes that share a prefix (`syscall` for `syscall.getppid`), their model and their
/// chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// Reading a clock.
    Timer,
    /// An empty loop's iteration.
    Loop,
    /// A procedure call.
    Call,
    /// A system call.
    Syscall,
    /// Creating a process or thread.
    Task,
    /// A context switch.
    Switch,
    /// Messages between tasks: pipes, sockets on loopback.
    Ipc,
    /// Signals installed, caught, and protection faults.
    Signal,
    /// Waiting on many descriptors: select, poll, epoll.
    Poll,
    /// Files and the file cache.
    Fs,
    /// Load latency through the hierarchy.
    Memory,
    /// Bandwidth from caches and memory.
    Bandwidth,
    /// Page faults.
    Faults,
    /// The cpu node x memory node matrix.
    Numa,
    /// OS noise.
    Activity,
    /// What a move to another cpu costs.
    Migration,
    /// Core-to-core latency.
    C2c,
    /// Time slices (`oslab timeslice`).
    Timeslice,
    /// Matrix multiply pinned vs migrated (`oslab migrate`).
    Migrate,
    /// The processor manager (`oslab cpuman`).
    Cpuman,
    /// The shuffling daemon on one target (`oslab shuffle`).
    Shuffle,
    /// With vs without shuffling (`oslab shuffle-eval`).
    ShuffleEval,
    /// Shuffling simulated (`oslab shuffle-eval --simulate`).
    ShuffleSim,
    /// The host during a run: the core's speed, steal time.
    Host,
}

/// How a family's results are drawn in the HTML report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chart {
    /// Latency curves over the working set, memory-level parallelism.
    Latency,
    /// Bandwidth by kernel, threads, mix and working set.
    Bandwidth,
    /// Call cost by argument count.
    Calls,
    /// One bar per primitive cost.
    Costs,
    /// Times as bars (round trips by transport and placement; a file's create and delete by
    /// size) and bandwidth over the message or block size.
    Ipc,
    /// The cpu node x memory node heatmaps.
    Numa,
    /// Pinned vs migrated.
    Migrate,
    /// The core-to-core heatmap.
    C2c,
    /// The simulated shuffling study.
    ShuffleSim,
}

impl Family {
    /// Every family: the suite's in the order it runs them (the order primitive costs are taught:
    /// timer, loop, call, system call, creation, switch, memory, bandwidth, faults, NUMA, noise,
    /// migration), then the experiments'.
    pub const ALL: [Family; 24] = [
        Family::Timer,
        Family::Loop,
        Family::Call,
        Family::Syscall,
        Family::Task,
        Family::Switch,
        Family::Ipc,
        Family::Signal,
        Family::Poll,
        Family::Fs,
        Family::Memory,
        Family::Bandwidth,
        Family::Faults,
        Family::Numa,
        Family::Activity,
        Family::Migration,
        Family::C2c,
        Family::Timeslice,
        Family::Migrate,
        Family::Cpuman,
        Family::Shuffle,
        Family::ShuffleEval,
        Family::ShuffleSim,
        Family::Host,
    ];

    /// Its name: the ids' prefix.
    pub const fn name(self) -> &'static str {
        match self {
            Family::Timer => "timer",
            Family::Loop => "loop",
            Family::Call => "call",
            Family::Syscall => "syscall",
            Family::Task => "task",
            Family::Switch => "switch",
            Family::Ipc => "ipc",
            Family::Signal => "signal",
            Family::Poll => "poll",
            Family::Fs => "fs",
            Family::Memory => "memory",
            Family::Bandwidth => "bandwidth",
            Family::Faults => "faults",
            Family::Numa => "numa",
            Family::Activity => "activity",
            Family::Migration => "migration",
            Family::C2c => "c2c",
            Family::Timeslice => "timeslice",
            Family::Migrate => "migrate",
            Family::Cpuman => "cpuman",
            Family::Shuffle => "shuffle",
            Family::ShuffleEval => "shuffle-eval",
            Family::ShuffleSim => "shuffle-sim",
            Family::Host => "host",
        }
    }

    /// How its results are drawn, if they are.
    pub const fn chart(self) -> Option<Chart> {
        match self {
            Family::Memory => Some(Chart::Latency),
            Family::Bandwidth => Some(Chart::Bandwidth),
            Family::Call => Some(Chart::Calls),
            Family::Task
            | Family::Switch
            | Family::Signal
            | Family::Poll
            | Family::Syscall
            | Family::Faults
            | Family::Timer
            | Family::Activity
            | Family::Migration => Some(Chart::Costs),
            Family::Numa => Some(Chart::Numa),
            Family::Ipc | Family::Fs => Some(Chart::Ipc),
            Family::Migrate => Some(Chart::Migrate),
            Family::C2c => Some(Chart::C2c),
            Family::ShuffleSim => Some(Chart::ShuffleSim),
            _ => None,
        }
    }

    /// The family of a probe id (its prefix before the first dot), if it is one.
    pub fn of(probe: &str) -> Option<Family> {
        let prefix = probe.split('.').next().unwrap_or_default();
        Family::ALL.into_iter().find(|f| f.name() == prefix)
    }

    /// Its place in [`Family::ALL`]: families unknown to this version (an imported run) after.
    pub fn rank(probe: &str) -> usize {
        Family::of(probe).map_or(Family::ALL.len(), |f| {
            Family::ALL.iter().position(|g| *g == f).unwrap_or_default()
        })
    }
}

/// Whether the machine model predicts a metric (not `Model`: the crate has a `model` module of
/// measurements, and a crate of that name is the machine model).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Predicted {
    /// It does (a run may still lack an input, and says which).
    Yes,
    /// It does not, by design, for this reason.
    No(&'static str),
}

/// One metric of a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    /// Its name (`per_call`, `switch`, ...).
    pub name: &'static str,
    /// Its unit.
    pub unit: Unit,
    /// Whether the model predicts it.
    pub predicted: Predicted,
}

const fn predicted(name: &'static str, unit: Unit) -> Metric {
    Metric {
        name,
        unit,
        predicted: Predicted::Yes,
    }
}

const fn unmodelled(name: &'static str, unit: Unit, why: &'static str) -> Metric {
    Metric {
        name,
        unit,
        predicted: Predicted::No(why),
    }
}

/// Where a probe's measurements come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The suite (`oslab run`): the registry runs it, and a measurement it returns under another
    /// id or metric is a failure.
    Suite,
    /// An experiment's command (`oslab timeslice`, ...), which may add metrics of its own
    /// (counters named by the user).
    Command(&'static str),
    /// The runner itself, about the host during a run.
    Runner,
}

/// What a probe is.
#[derive(Debug, PartialEq, Eq)]
pub struct Entry {
    /// Its id, `family.name`.
    pub id: &'static str,
    /// What it measures, in a line.
    pub about: &'static str,
    /// Its main metric's unit.
    pub unit: Unit,
    /// Its metrics.
    pub metrics: &'static [Metric],
    /// Where its measurements come from.
    pub origin: Origin,
}

impl Entry {
    /// Its family.
    pub fn family(&self) -> Family {
        Family::of(self.id).unwrap_or(Family::Host)
    }

    /// Its metric of this name.
    pub fn metric(&self, name: &str) -> Option<&'static Metric> {
        self.metrics.iter().find(|m| m.name == name)
    }
}

/// The ping-pong probes by mechanism: (mechanism, between threads, between processes). The
/// model composes a process switch from the thread switch of the same mechanism, and a process
/// switch must not cost less than its thread twin.
pub const SWITCH_PAIRS: [(&str, &str, &str); 3] = [
    ("pipe", id::SWITCH_THREAD_PIPE, id::SWITCH_PROCESS_PIPE),
    ("futex", id::SWITCH_THREAD_FUTEX, id::SWITCH_PROCESS_FUTEX),
    (
        "eventfd",
        id::SWITCH_THREAD_EVENTFD,
        id::SWITCH_PROCESS_EVENTFD,
    ),
];

/// Every probe: the suite's, then the experiments' and the host's.
pub fn all() -> impl Iterator<Item = &'static Entry> {
    SUITE.iter().chain(OTHERS).copied()
}

/// The probe with this id, if this version knows it.
pub fn entry(id: &str) -> Option<&'static Entry> {
    all().find(|e| e.id == id)
}

/// The family part of a probe id (`timer` of `timer.rdtsc`), whether this version knows it or
/// not (an imported run's).
pub fn prefix(probe: &str) -> &str {
    probe.split('.').next().unwrap_or(probe)
}

/// The families of `probes`, once each: those this version knows in [`Family::ALL`]'s order, then
/// the others as first seen.
pub fn families<'a>(probes: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for p in probes {
        if !out.contains(&prefix(p)) {
            out.push(prefix(p));
        }
    }
    out.sort_by_key(|f| Family::rank(f));
    out
}

/// Whether the model predicts this probe's metric: `None` for a probe or metric this version
/// does not know (an imported run's).
pub fn prediction_of(probe: &str, metric: &str) -> Option<Predicted> {
    Some(entry(probe)?.metric(metric)?.predicted)
}

/// A headline: what it is called, and which measurement it is (probe, metric, and parameters
/// that must match; the value `max` picks the largest number among the matches). A figure that
/// depends on its parent's size (fork) says that size after its label.
#[derive(Debug, Clone, Copy)]
pub struct Headline {
    /// What a person calls it.
    pub label: &'static str,
    /// Its probe.
    pub probe: &'static str,
    /// Its metric.
    pub metric: &'static str,
    /// Parameters that must match.
    pub params: &'static [(&'static str, &'static str)],
}

const fn line(
    label: &'static str,
    probe: &'static str,
    metric: &'static str,
    params: &'static [(&'static str, &'static str)],
) -> Headline {
    Headline {
        label,
        probe,
        metric,
        params,
    }
}

/// The lines a person quotes from a run, in order: timer, system call, context switches,
/// creation, latency per cache level and of DRAM, bandwidth, page faults, the host.
pub const HEADLINE: &[Headline] = &[
    line(
        "timer read (clock_gettime)",
        id::TIMER_CLOCK_GETTIME,
        metric::PER_READ,
        &[],
    ),
    line(
        "system call (getppid)",
        id::SYSCALL_GETPPID,
        metric::PER_CALL,
        &[("cache", "hot")],
    ),
    // Both switches by one mechanism (a pipe, as lmbench's lat_ctx): futex and pipe differ by
    // more than threads and processes do.
    line(
        "thread switch, same cpu",
        id::SWITCH_THREAD_PIPE,
        metric::SWITCH,
        &[("placement", "same-cpu")],
    ),
    line(
        "process switch, same cpu",
        id::SWITCH_PROCESS_PIPE,
        metric::SWITCH,
        &[("placement", "same-cpu")],
    ),
    line(
        "wake-up on another cpu",
        id::SWITCH_THREAD_FUTEX,
        metric::WAKEUP,
        &[("placement", "cross-cpu")],
    ),
    // The service a person asks about first: what a loopback TCP round trip costs here.
    line(
        "TCP round trip on loopback",
        id::IPC_TCP,
        metric::ROUND_TRIP,
        &[("placement", "cross-cpu")],
    ),
    line(
        "cached file read, 64 KiB blocks",
        id::FS_CACHED_READ,
        metric::BANDWIDTH,
        &[("method", "read"), ("block_bytes", "65536")],
    ),
    line(
        "core-to-core latency, one way",
        id::C2C_LATENCY,
        metric::ONE_WAY,
        &[],
    ),
    line(
        "fork+exit+wait",
        id::TASK_FORK,
        metric::ROUND_TRIP,
        &[("touched_mib", "")],
    ),
    // Beside the minimal parent, one the size of a small program: fork copies the parent's page
    // tables, so the figure depends on it (lmbench's lat_proc forks a larger parent).
    line(
        "fork+exit+wait",
        id::TASK_FORK,
        metric::ROUND_TRIP,
        &[("touched_mib", "16")],
    ),
    line(
        "thread create and join",
        id::TASK_PTHREAD,
        metric::ROUND_TRIP,
        &[],
    ),
    line(
        "L1 latency",
        id::MEMORY_LATENCY_CHUNK,
        metric::LEVEL_LATENCY,
        &[("level", "L1")],
    ),
    line(
        "L2 latency",
        id::MEMORY_LATENCY_CHUNK,
        metric::LEVEL_LATENCY,
        &[("level", "L2")],
    ),
    line(
        "L3 latency",
        id::MEMORY_LATENCY_CHUNK,
        metric::LEVEL_LATENCY,
        &[("level", "L3")],
    ),
    line(
        "DRAM latency (idle)",
        id::MEMORY_LATENCY_CHUNK,
        metric::LEVEL_LATENCY,
        &[("level", "memory")],
    ),
    line(
        "loaded latency, heaviest load",
        id::MEMORY_LATENCY_LOADED,
        metric::PER_LOAD,
        &[("traffic", "read"), ("pause", "0")],
    ),
    line(
        "read bandwidth, 1 thread",
        id::BANDWIDTH_STREAM,
        metric::BANDWIDTH,
        &[("kernel", "read")],
    ),
    line(
        "triad bandwidth, 1 thread",
        id::BANDWIDTH_STREAM,
        metric::BANDWIDTH,
        &[("kernel", "triad"), ("stores", "plain")],
    ),
    line(
        "triad bandwidth, all threads",
        id::BANDWIDTH_THREADS,
        metric::BANDWIDTH,
        &[("kernel", "triad"), ("stores", "plain"), ("threads", "max")],
    ),
    line(
        "read:write 1:1, all threads",
        id::BANDWIDTH_MIX,
        metric::BANDWIDTH,
        &[
            ("read_write", "1:1"),
            ("stores", "plain"),
            ("threads", "max"),
        ],
    ),
    line(
        "page fault (anonymous)",
        id::FAULTS_ANON,
        metric::PER_FAULT,
        &[],
    ),
    line(
        "host core speed (1 = full)",
        id::HOST,
        metric::CORE_SPEED,
        &[],
    ),
    line(
        "host steal (share of the cpu)",
        id::HOST,
        metric::STEAL,
        &[],
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_every_probe_has_a_known_family() {
        let mut seen = std::collections::HashSet::new();
        for e in all() {
            assert!(seen.insert(e.id), "{} is in the catalog twice", e.id);
            assert!(Family::of(e.id).is_some(), "{} has no family", e.id);
            assert!(!e.metrics.is_empty(), "{} has no metrics", e.id);
            assert!(
                e.metrics.iter().any(|m| m.unit == e.unit),
                "{}: no metric in its unit",
                e.id
            );
            let mut names = std::collections::HashSet::new();
            for m in e.metrics {
                assert!(names.insert(m.name), "{} lists {} twice", e.id, m.name);
            }
        }
    }

    #[test]
    fn every_probe_of_the_enum_has_an_entry_and_every_entry_is_a_probe() {
        for p in id::Probe::ALL {
            assert!(entry(p.id()).is_some(), "{p} has no catalog entry");
        }
        for e in all() {
            assert!(
                e.id.parse::<id::Probe>().is_ok(),
                "{} is not in id::Probe",
                e.id
            );
        }
    }

    #[test]
    fn every_family_has_a_probe_and_the_suite_runs_in_family_order() {
        for f in Family::ALL {
            assert!(all().any(|e| e.family() == f), "{f:?} has no probe");
        }
        let ranks: Vec<usize> = SUITE.iter().map(|e| Family::rank(e.id)).collect();
        assert!(ranks.windows(2).all(|w| w[0] <= w[1]), "{ranks:?}");
        assert!(SUITE.iter().all(|e| e.origin == Origin::Suite));
        assert!(OTHERS.iter().all(|e| e.origin != Origin::Suite));
    }

    #[test]
    fn families_come_in_the_catalogs_order_unknown_ones_after() {
        let probes = [
            "foo.x",
            "c2c.latency",
            "timer.rdtsc",
            "bar",
            "timer.rdtscp",
            "foo.y",
        ];
        assert_eq!(families(probes), ["timer", "c2c", "foo", "bar"]);
    }

    #[test]
    fn every_headline_names_a_metric_of_its_probe() {
        for h in HEADLINE {
            let e = entry(h.probe).unwrap_or_else(|| panic!("{}: no probe {}", h.label, h.probe));
            assert!(
                e.metric(h.metric).is_some(),
                "{}: {} has no {}",
                h.label,
                h.probe,
                h.metric
            );
        }
    }
}
