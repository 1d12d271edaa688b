//! The probe catalog: what every probe is, declared once. Its id, what it measures, its unit,
//! its metrics (each with its unit and whether the machine model predicts it, or why not), its
//! family and where it comes from (the suite or an experiment's command); the families in one
//! order, each with its chart; and the headline's lines. The probes, the model, the reports,
//! the comparisons and the store read these values instead of spelling ids: a typo in a
//! constant's name does not compile, and the tests walk the catalog (every suite probe is run by
//! the registry, every predicted metric has a model arm, every measurement a probe returns is
//! one of its own).

use crate::model::Unit;

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
    pub const ALL: [Family; 20] = [
        Family::Timer,
        Family::Loop,
        Family::Call,
        Family::Syscall,
        Family::Task,
        Family::Switch,
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
            Family::Task | Family::Switch | Family::Syscall | Family::Faults | Family::Timer => {
                Some(Chart::Costs)
            }
            Family::Numa => Some(Chart::Numa),
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

/// Whether the machine model predicts a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// It does (a run may still lack an input, and says which).
    Predicted,
    /// It does not, by design, for this reason.
    Without(&'static str),
}

/// One metric of a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    /// Its name (`per_call`, `switch`, ...).
    pub name: &'static str,
    /// Its unit.
    pub unit: Unit,
    /// Whether the model predicts it.
    pub model: Model,
}

const fn predicted(name: &'static str, unit: Unit) -> Metric {
    Metric {
        name,
        unit,
        model: Model::Predicted,
    }
}

const fn unmodelled(name: &'static str, unit: Unit, why: &'static str) -> Metric {
    Metric {
        name,
        unit,
        model: Model::Without(why),
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

/// Why no published figure predicts a creation cost.
const NO_FIGURE: &str =
    "no published figure to predict it from; compare it with the other creation costs";
/// Why a noise recording's own figures have no model.
const OF_THE_RECORDING: &str =
    "a property of this recording (a chosen threshold or a histogram), not a cost to predict";
/// Why an experiment's figures have no model.
const EXPERIMENT: &str = "an experiment's outcome: compared between its own arms, not predicted";
/// Why the host's figures have no model.
const OF_THE_HOST: &str = "a property of the host and its other tenants, not of the machine";

/// Probe ids, as `&str` constants (usable as match patterns).
pub mod id {
    /// `timer.rdtsc`.
    pub const TIMER_RDTSC: &str = "timer.rdtsc";
    /// `timer.rdtscp`.
    pub const TIMER_RDTSCP: &str = "timer.rdtscp";
    /// `timer.lfence-rdtsc`.
    pub const TIMER_LFENCE_RDTSC: &str = "timer.lfence-rdtsc";
    /// `timer.cpuid-rdtsc`.
    pub const TIMER_CPUID_RDTSC: &str = "timer.cpuid-rdtsc";
    /// `timer.clock_gettime`.
    pub const TIMER_CLOCK_GETTIME: &str = "timer.clock_gettime";
    /// `timer.clock_gettime.syscall`.
    pub const TIMER_CLOCK_GETTIME_SYSCALL: &str = "timer.clock_gettime.syscall";
    /// `loop.empty`.
    pub const LOOP_EMPTY: &str = "loop.empty";
    /// `call.args`.
    pub const CALL_ARGS: &str = "call.args";
    /// `syscall.getpid`.
    pub const SYSCALL_GETPID: &str = "syscall.getpid";
    /// `syscall.getppid`.
    pub const SYSCALL_GETPPID: &str = "syscall.getppid";
    /// `syscall.time.vdso`.
    pub const SYSCALL_TIME_VDSO: &str = "syscall.time.vdso";
    /// `syscall.time.raw`.
    pub const SYSCALL_TIME_RAW: &str = "syscall.time.raw";
    /// `syscall.read.devzero`.
    pub const SYSCALL_READ_DEVZERO: &str = "syscall.read.devzero";
    /// `syscall.write.devnull`.
    pub const SYSCALL_WRITE_DEVNULL: &str = "syscall.write.devnull";
    /// `task.fork`.
    pub const TASK_FORK: &str = "task.fork";
    /// `task.vfork`.
    pub const TASK_VFORK: &str = "task.vfork";
    /// `task.posix_spawn`.
    pub const TASK_POSIX_SPAWN: &str = "task.posix_spawn";
    /// `task.fork-exec`.
    pub const TASK_FORK_EXEC: &str = "task.fork-exec";
    /// `task.pthread`.
    pub const TASK_PTHREAD: &str = "task.pthread";
    /// `task.std-thread`.
    pub const TASK_STD_THREAD: &str = "task.std-thread";
    /// `switch.process.pipe`.
    pub const SWITCH_PROCESS_PIPE: &str = "switch.process.pipe";
    /// `switch.process.futex`.
    pub const SWITCH_PROCESS_FUTEX: &str = "switch.process.futex";
    /// `switch.process.eventfd`.
    pub const SWITCH_PROCESS_EVENTFD: &str = "switch.process.eventfd";
    /// `switch.thread.pipe`.
    pub const SWITCH_THREAD_PIPE: &str = "switch.thread.pipe";
    /// `switch.thread.futex`.
    pub const SWITCH_THREAD_FUTEX: &str = "switch.thread.futex";
    /// `switch.thread.eventfd`.
    pub const SWITCH_THREAD_EVENTFD: &str = "switch.thread.eventfd";
    /// `switch.oneshot`.
    pub const SWITCH_ONESHOT: &str = "switch.oneshot";
    /// `memory.latency.chunk`.
    pub const MEMORY_LATENCY_CHUNK: &str = "memory.latency.chunk";
    /// `memory.latency.random`.
    pub const MEMORY_LATENCY_RANDOM: &str = "memory.latency.random";
    /// `memory.latency.sequential`.
    pub const MEMORY_LATENCY_SEQUENTIAL: &str = "memory.latency.sequential";
    /// `memory.latency.stride`.
    pub const MEMORY_LATENCY_STRIDE: &str = "memory.latency.stride";
    /// `memory.latency.pages`.
    pub const MEMORY_LATENCY_PAGES: &str = "memory.latency.pages";
    /// `memory.latency.parallel`.
    pub const MEMORY_LATENCY_PARALLEL: &str = "memory.latency.parallel";
    /// `memory.latency.loaded`.
    pub const MEMORY_LATENCY_LOADED: &str = "memory.latency.loaded";
    /// `bandwidth.stream`.
    pub const BANDWIDTH_STREAM: &str = "bandwidth.stream";
    /// `bandwidth.threads`.
    pub const BANDWIDTH_THREADS: &str = "bandwidth.threads";
    /// `bandwidth.mix`.
    pub const BANDWIDTH_MIX: &str = "bandwidth.mix";
    /// `bandwidth.sweep`.
    pub const BANDWIDTH_SWEEP: &str = "bandwidth.sweep";
    /// `faults.anon`.
    pub const FAULTS_ANON: &str = "faults.anon";
    /// `faults.thp`.
    pub const FAULTS_THP: &str = "faults.thp";
    /// `faults.populate`.
    pub const FAULTS_POPULATE: &str = "faults.populate";
    /// `faults.file`.
    pub const FAULTS_FILE: &str = "faults.file";
    /// `numa.matrix`.
    pub const NUMA_MATRIX: &str = "numa.matrix";
    /// `activity.noise`.
    pub const ACTIVITY_NOISE: &str = "activity.noise";
    /// `migration.cost`.
    pub const MIGRATION_COST: &str = "migration.cost";
    /// `c2c.latency`.
    pub const C2C_LATENCY: &str = "c2c.latency";
    /// `activity`.
    pub const ACTIVITY: &str = "activity";
    /// `timeslice`.
    pub const TIMESLICE: &str = "timeslice";
    /// `migrate`.
    pub const MIGRATE: &str = "migrate";
    /// `cpuman.job`.
    pub const CPUMAN_JOB: &str = "cpuman.job";
    /// `cpuman.run`.
    pub const CPUMAN_RUN: &str = "cpuman.run";
    /// `cpuman.speedup`.
    pub const CPUMAN_SPEEDUP: &str = "cpuman.speedup";
    /// `shuffle`.
    pub const SHUFFLE: &str = "shuffle";
    /// `shuffle-eval`.
    pub const SHUFFLE_EVAL: &str = "shuffle-eval";
    /// `shuffle-sim`.
    pub const SHUFFLE_SIM: &str = "shuffle-sim";
    /// `host`.
    pub const HOST: &str = "host";
}

/// Metric names, as `&str` constants (usable as match patterns).
pub mod metric {
    /// `bandwidth`.
    pub const BANDWIDTH: &str = "bandwidth";
    /// `cost_per_mib`.
    pub const COST_PER_MIB: &str = "cost_per_mib";
    /// `count`.
    pub const COUNT: &str = "count";
    /// `create`.
    pub const CREATE: &str = "create";
    /// `fixed_cost`.
    pub const FIXED_COST: &str = "fixed_cost";
    /// `hw_bandwidth`.
    pub const HW_BANDWIDTH: &str = "hw_bandwidth";
    /// `increment`.
    pub const INCREMENT: &str = "increment";
    /// `interruption`.
    pub const INTERRUPTION: &str = "interruption";
    /// `interruptions`.
    pub const INTERRUPTIONS: &str = "interruptions";
    /// `latency`.
    pub const LATENCY: &str = "latency";
    /// `level_latency`.
    pub const LEVEL_LATENCY: &str = "level_latency";
    /// `level_size`.
    pub const LEVEL_SIZE: &str = "level_size";
    /// `load_bandwidth`.
    pub const LOAD_BANDWIDTH: &str = "load_bandwidth";
    /// `lost_fraction`.
    pub const LOST_FRACTION: &str = "lost_fraction";
    /// `move`.
    pub const MOVE: &str = "move";
    /// `one_way`.
    pub const ONE_WAY: &str = "one_way";
    /// `parallelism`.
    pub const PARALLELISM: &str = "parallelism";
    /// `per_byte`.
    pub const PER_BYTE: &str = "per_byte";
    /// `per_call`.
    pub const PER_CALL: &str = "per_call";
    /// `per_fault`.
    pub const PER_FAULT: &str = "per_fault";
    /// `per_iteration`.
    pub const PER_ITERATION: &str = "per_iteration";
    /// `per_load`.
    pub const PER_LOAD: &str = "per_load";
    /// `per_migration`.
    pub const PER_MIGRATION: &str = "per_migration";
    /// `per_page`.
    pub const PER_PAGE: &str = "per_page";
    /// `per_read`.
    pub const PER_READ: &str = "per_read";
    /// `periodic_hz`.
    pub const PERIODIC_HZ: &str = "periodic_hz";
    /// `read_overhead`.
    pub const READ_OVERHEAD: &str = "read_overhead";
    /// `retouch_local`.
    pub const RETOUCH_LOCAL: &str = "retouch_local";
    /// `round_trip`.
    pub const ROUND_TRIP: &str = "round_trip";
    /// `switch`.
    pub const SWITCH: &str = "switch";
    /// `threshold`.
    pub const THRESHOLD: &str = "threshold";
    /// `tick_hz`.
    pub const TICK_HZ: &str = "tick_hz";
    /// `tlb_reach`.
    pub const TLB_REACH: &str = "tlb_reach";
    /// `transfer`.
    pub const TRANSFER: &str = "transfer";
    /// `wakeup`.
    pub const WAKEUP: &str = "wakeup";
    /// `core_speed`.
    pub const CORE_SPEED: &str = "core_speed";
    /// `steal`.
    pub const STEAL: &str = "steal";
    /// `slice`.
    pub const SLICE: &str = "slice";
    /// `switches`.
    pub const SWITCHES: &str = "switches";
    /// `time`.
    pub const TIME: &str = "time";
    /// `moves`.
    pub const MOVES: &str = "moves";
    /// `migration_cost`.
    pub const MIGRATION_COST: &str = "migration_cost";
    /// `migration_cost_cpu`.
    pub const MIGRATION_COST_CPU: &str = "migration_cost_cpu";
    /// `cpu_time`.
    pub const CPU_TIME: &str = "cpu_time";
    /// `execution_time`.
    pub const EXECUTION_TIME: &str = "execution_time";
    /// `response_time`.
    pub const RESPONSE_TIME: &str = "response_time";
    /// `speedup`.
    pub const SPEEDUP: &str = "speedup";
    /// `allocation`.
    pub const ALLOCATION: &str = "allocation";
    /// `migrations`.
    pub const MIGRATIONS: &str = "migrations";
    /// `makespan`.
    pub const MAKESPAN: &str = "makespan";
    /// `multiprogramming`.
    pub const MULTIPROGRAMMING: &str = "multiprogramming";
    /// `page_migrations`.
    pub const PAGE_MIGRATIONS: &str = "page_migrations";
    /// `burst_length`.
    pub const BURST_LENGTH: &str = "burst_length";
    /// `bursts`.
    pub const BURSTS: &str = "bursts";
    /// `lock_fraction`.
    pub const LOCK_FRACTION: &str = "lock_fraction";
    /// `shuffles`.
    pub const SHUFFLES: &str = "shuffles";
    /// `lock_before`.
    pub const LOCK_BEFORE: &str = "lock_before";
    /// `lock_after`.
    pub const LOCK_AFTER: &str = "lock_after";
    /// `overhead`.
    pub const OVERHEAD: &str = "overhead";
    /// `reduction`.
    pub const REDUCTION: &str = "reduction";
    /// `remote_share`.
    pub const REMOTE_SHARE: &str = "remote_share";
    /// `change`.
    pub const CHANGE: &str = "change";
}

/// timer.rdtsc.
pub const TIMER_RDTSC: Entry = Entry {
    id: id::TIMER_RDTSC,
    about: "rdtsc, unfenced (may overlap neighbouring instructions)",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_READ, Unit::Ns)],
    origin: Origin::Suite,
};
/// timer.rdtscp.
pub const TIMER_RDTSCP: Entry = Entry {
    id: id::TIMER_RDTSCP,
    about: "rdtscp (waits for earlier instructions)",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_READ, Unit::Ns)],
    origin: Origin::Suite,
};
/// timer.lfence-rdtsc.
pub const TIMER_LFENCE_RDTSC: Entry = Entry {
    id: id::TIMER_LFENCE_RDTSC,
    about: "lfence; rdtsc; lfence (fully ordered read, what oslab itself uses)",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_READ, Unit::Ns)],
    origin: Origin::Suite,
};
/// timer.cpuid-rdtsc.
pub const TIMER_CPUID_RDTSC: Entry = Entry {
    id: id::TIMER_CPUID_RDTSC,
    about: "cpuid; rdtsc (a serializing read; cpuid traps to a hypervisor)",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_READ, Unit::Ns)],
    origin: Origin::Suite,
};
/// timer.clock_gettime.
pub const TIMER_CLOCK_GETTIME: Entry = Entry {
    id: id::TIMER_CLOCK_GETTIME,
    about: "clock_gettime(CLOCK_MONOTONIC) through the vDSO",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_READ, Unit::Ns)],
    origin: Origin::Suite,
};
/// timer.clock_gettime.syscall.
pub const TIMER_CLOCK_GETTIME_SYSCALL: Entry = Entry {
    id: id::TIMER_CLOCK_GETTIME_SYSCALL,
    about: "clock_gettime(CLOCK_MONOTONIC) as a real system call",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_READ, Unit::Ns)],
    origin: Origin::Suite,
};
/// loop.empty.
pub const LOOP_EMPTY: Entry = Entry {
    id: id::LOOP_EMPTY,
    about: "one iteration of an empty counted loop (dec; jnz), which the compiler cannot unroll",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_ITERATION, Unit::Ns)],
    origin: Origin::Suite,
};
/// call.args.
pub const CALL_ARGS: Entry = Entry {
    id: id::CALL_ARGS,
    about: "procedure call with 0..7 integer arguments, absolute and per extra argument",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::PER_CALL, Unit::Ns),
        predicted(metric::INCREMENT, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// syscall.getpid.
pub const SYSCALL_GETPID: Entry = Entry {
    id: id::SYSCALL_GETPID,
    about: "getpid via raw syscall (no libc caching), hot and cold cache",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_CALL, Unit::Ns)],
    origin: Origin::Suite,
};
/// syscall.getppid.
pub const SYSCALL_GETPPID: Entry = Entry {
    id: id::SYSCALL_GETPPID,
    about: "getppid via raw syscall, hot and cold cache",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_CALL, Unit::Ns)],
    origin: Origin::Suite,
};
/// syscall.time.vdso.
pub const SYSCALL_TIME_VDSO: Entry = Entry {
    id: id::SYSCALL_TIME_VDSO,
    about: "time() through the vDSO (no kernel entry), hot and cold cache",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_CALL, Unit::Ns)],
    origin: Origin::Suite,
};
/// syscall.time.raw.
pub const SYSCALL_TIME_RAW: Entry = Entry {
    id: id::SYSCALL_TIME_RAW,
    about: "time() as a real system call, hot and cold cache",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_CALL, Unit::Ns)],
    origin: Origin::Suite,
};
/// syscall.read.devzero.
pub const SYSCALL_READ_DEVZERO: Entry = Entry {
    id: id::SYSCALL_READ_DEVZERO,
    about: "read(2) of 1 byte from /dev/zero, hot and cold cache",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_CALL, Unit::Ns)],
    origin: Origin::Suite,
};
/// syscall.write.devnull.
pub const SYSCALL_WRITE_DEVNULL: Entry = Entry {
    id: id::SYSCALL_WRITE_DEVNULL,
    about: "write(2) of 1 byte to /dev/null, hot and cold cache",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_CALL, Unit::Ns)],
    origin: Origin::Suite,
};
/// task.fork.
pub const TASK_FORK: Entry = Entry {
    id: id::TASK_FORK,
    about: "fork + _exit + waitpid from a minimal parent, and its cost per MiB the parent touched",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::ROUND_TRIP, Unit::Ns),
        unmodelled(metric::CREATE, Unit::Ns, NO_FIGURE),
        predicted(metric::COST_PER_MIB, Unit::Ns),
        unmodelled(metric::FIXED_COST, Unit::Ns, NO_FIGURE),
    ],
    origin: Origin::Suite,
};
/// task.vfork.
pub const TASK_VFORK: Entry = Entry {
    id: id::TASK_VFORK,
    about: "vfork (clone CLONE_VM|CLONE_VFORK) + _exit + waitpid",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::ROUND_TRIP, Unit::Ns),
        predicted(metric::CREATE, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// task.posix_spawn.
pub const TASK_POSIX_SPAWN: Entry = Entry {
    id: id::TASK_POSIX_SPAWN,
    about: "posix_spawn of a static do-nothing program + waitpid",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::ROUND_TRIP, Unit::Ns),
        predicted(metric::CREATE, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// task.fork-exec.
pub const TASK_FORK_EXEC: Entry = Entry {
    id: id::TASK_FORK_EXEC,
    about: "fork + execve of a static do-nothing program + waitpid",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::ROUND_TRIP, Unit::Ns),
        predicted(metric::CREATE, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// task.pthread.
pub const TASK_PTHREAD: Entry = Entry {
    id: id::TASK_PTHREAD,
    about: "pthread_create + pthread_join of an empty thread",
    unit: Unit::Ns,
    metrics: &[
        unmodelled(metric::ROUND_TRIP, Unit::Ns, NO_FIGURE),
        unmodelled(metric::CREATE, Unit::Ns, NO_FIGURE),
    ],
    origin: Origin::Suite,
};
/// task.std-thread.
pub const TASK_STD_THREAD: Entry = Entry {
    id: id::TASK_STD_THREAD,
    about: "std::thread::spawn + join of an empty closure",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::ROUND_TRIP, Unit::Ns),
        predicted(metric::CREATE, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// switch.process.pipe.
pub const SWITCH_PROCESS_PIPE: Entry = Entry {
    id: id::SWITCH_PROCESS_PIPE,
    about: "process ping-pong over two pipes: switch (same cpu) and wake-up (cross cpu)",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::SWITCH, Unit::Ns),
        predicted(metric::TRANSFER, Unit::Ns),
        predicted(metric::WAKEUP, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// switch.process.futex.
pub const SWITCH_PROCESS_FUTEX: Entry = Entry {
    id: id::SWITCH_PROCESS_FUTEX,
    about: "process ping-pong over shared-memory futexes",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::SWITCH, Unit::Ns),
        predicted(metric::TRANSFER, Unit::Ns),
        predicted(metric::WAKEUP, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// switch.process.eventfd.
pub const SWITCH_PROCESS_EVENTFD: Entry = Entry {
    id: id::SWITCH_PROCESS_EVENTFD,
    about: "process ping-pong over eventfds",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::SWITCH, Unit::Ns),
        predicted(metric::TRANSFER, Unit::Ns),
        predicted(metric::WAKEUP, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// switch.thread.pipe.
pub const SWITCH_THREAD_PIPE: Entry = Entry {
    id: id::SWITCH_THREAD_PIPE,
    about: "thread ping-pong over two pipes",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::SWITCH, Unit::Ns),
        predicted(metric::TRANSFER, Unit::Ns),
        predicted(metric::WAKEUP, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// switch.thread.futex.
pub const SWITCH_THREAD_FUTEX: Entry = Entry {
    id: id::SWITCH_THREAD_FUTEX,
    about: "thread ping-pong over futexes",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::SWITCH, Unit::Ns),
        predicted(metric::TRANSFER, Unit::Ns),
        predicted(metric::WAKEUP, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// switch.thread.eventfd.
pub const SWITCH_THREAD_EVENTFD: Entry = Entry {
    id: id::SWITCH_THREAD_EVENTFD,
    about: "thread ping-pong over eventfds",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::SWITCH, Unit::Ns),
        predicted(metric::TRANSFER, Unit::Ns),
        predicted(metric::WAKEUP, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// switch.oneshot.
pub const SWITCH_ONESHOT: Entry = Entry {
    id: id::SWITCH_ONESHOT,
    about: "one-shot switch: parent's TSC after fork/create -> the child's first TSC read",
    unit: Unit::Ns,
    metrics: &[unmodelled(
        metric::SWITCH,
        Unit::Ns,
        "the one-shot method mixes creation with the first switch; no model separates them",
    )],
    origin: Origin::Suite,
};
/// memory.latency.chunk.
pub const MEMORY_LATENCY_CHUNK: Entry = Entry {
    id: id::MEMORY_LATENCY_CHUNK,
    about:
        "latency vs working-set size, random within 256 KiB chunks: cache levels, idle DRAM latency",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::PER_LOAD, Unit::Ns),
        predicted(metric::LEVEL_LATENCY, Unit::Ns),
        predicted(metric::LEVEL_SIZE, Unit::Bytes),
    ],
    origin: Origin::Suite,
};
/// memory.latency.random.
pub const MEMORY_LATENCY_RANDOM: Entry = Entry {
    id: id::MEMORY_LATENCY_RANDOM,
    about: "latency vs working-set size, fully random chain (TLB misses included): TLB reach",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::PER_LOAD, Unit::Ns),
        predicted(metric::TLB_REACH, Unit::Bytes),
    ],
    origin: Origin::Suite,
};
/// memory.latency.sequential.
pub const MEMORY_LATENCY_SEQUENTIAL: Entry = Entry {
    id: id::MEMORY_LATENCY_SEQUENTIAL,
    about: "load-to-use latency vs working-set size, lines in address order (prefetch-friendly)",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_LOAD, Unit::Ns)],
    origin: Origin::Suite,
};
/// memory.latency.stride.
pub const MEMORY_LATENCY_STRIDE: Entry = Entry {
    id: id::MEMORY_LATENCY_STRIDE,
    about: "load latency by working-set size x stride (8 B .. 16 MiB), address order (the lmbench table)",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_LOAD, Unit::Ns)],
    origin: Origin::Suite,
};
/// memory.latency.pages.
pub const MEMORY_LATENCY_PAGES: Entry = Entry {
    id: id::MEMORY_LATENCY_PAGES,
    about: "random-chain latency on 4 KiB, transparent huge and hugetlb pages (what the TLB costs)",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_LOAD, Unit::Ns)],
    origin: Origin::Suite,
};
/// memory.latency.parallel.
pub const MEMORY_LATENCY_PARALLEL: Entry = Entry {
    id: id::MEMORY_LATENCY_PARALLEL,
    about: "1..16 independent chases at once: time per load and memory-level parallelism",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::PER_LOAD, Unit::Ns),
        predicted(metric::PARALLELISM, Unit::Count),
    ],
    origin: Origin::Suite,
};
/// memory.latency.loaded.
pub const MEMORY_LATENCY_LOADED: Entry = Entry {
    id: id::MEMORY_LATENCY_LOADED,
    about: "idle-latency chase while the other cpus stream memory at rising intensity (MLC's loaded latency): latency vs bandwidth, reads and 1:1 read/write",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_LOAD, Unit::Ns), unmodelled(metric::LOAD_BANDWIDTH, Unit::GBps, "the loaders' bandwidth is the experiment's input, not a cost to predict")],
    origin: Origin::Suite,
};
/// bandwidth.stream.
pub const BANDWIDTH_STREAM: Entry = Entry {
    id: id::BANDWIDTH_STREAM,
    about: "RAM bandwidth, one thread: read, write, STREAM copy/scale/add/triad; plain and non-temporal stores",
    unit: Unit::GBps,
    metrics: &[predicted(metric::BANDWIDTH, Unit::GBps), predicted(metric::HW_BANDWIDTH, Unit::GBps)],
    origin: Origin::Suite,
};
/// bandwidth.threads.
pub const BANDWIDTH_THREADS: Entry = Entry {
    id: id::BANDWIDTH_THREADS,
    about: "RAM bandwidth of read, copy, triad with 1..N pinned threads (a thread per core first, then SMT)",
    unit: Unit::GBps,
    metrics: &[predicted(metric::BANDWIDTH, Unit::GBps), predicted(metric::HW_BANDWIDTH, Unit::GBps)],
    origin: Origin::Suite,
};
/// bandwidth.mix.
pub const BANDWIDTH_MIX: Entry = Entry {
    id: id::BANDWIDTH_MIX,
    about: "RAM bandwidth of read:write mixes 1:0, 3:1, 2:1, 1:1, 0:1 (plain stores; non-temporal too on all threads), one thread and all",
    unit: Unit::GBps,
    metrics: &[predicted(metric::BANDWIDTH, Unit::GBps), predicted(metric::HW_BANDWIDTH, Unit::GBps)],
    origin: Origin::Suite,
};
/// bandwidth.sweep.
pub const BANDWIDTH_SWEEP: Entry = Entry {
    id: id::BANDWIDTH_SWEEP,
    about: "bandwidth vs working-set size (read, write, copy, triad): each cache level's bandwidth",
    unit: Unit::GBps,
    metrics: &[predicted(metric::BANDWIDTH, Unit::GBps)],
    origin: Origin::Suite,
};
/// faults.anon.
pub const FAULTS_ANON: Entry = Entry {
    id: id::FAULTS_ANON,
    about:
        "minor fault on first touch of fresh anonymous memory (4 KiB pages, zeroed by the kernel)",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::PER_FAULT, Unit::Ns),
        predicted(metric::PER_PAGE, Unit::Ns),
        predicted(metric::PER_BYTE, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// faults.thp.
pub const FAULTS_THP: Entry = Entry {
    id: id::FAULTS_THP,
    about: "fault on first touch of a transparent huge page (2 MiB, zeroed by the kernel)",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::PER_FAULT, Unit::Ns),
        predicted(metric::PER_PAGE, Unit::Ns),
        predicted(metric::PER_BYTE, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// faults.populate.
pub const FAULTS_POPULATE: Entry = Entry {
    id: id::FAULTS_POPULATE,
    about: "MAP_POPULATE: the kernel fills a mapping in one call, no trap per page (the baseline)",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::PER_PAGE, Unit::Ns),
        predicted(metric::PER_BYTE, Unit::Ns),
    ],
    origin: Origin::Suite,
};
/// faults.file.
pub const FAULTS_FILE: Entry = Entry {
    id: id::FAULTS_FILE,
    about: "faults on a mapped file: minor (in page cache, fault-around) and major (evicted, read from disk)",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_FAULT, Unit::Ns), predicted(metric::PER_PAGE, Unit::Ns), predicted(metric::PER_BYTE, Unit::Ns)],
    origin: Origin::Suite,
};
/// numa.matrix.
pub const NUMA_MATRIX: Entry = Entry {
    id: id::NUMA_MATRIX,
    about: "cpu node x memory node: STREAM bandwidth (4 kernels and average) and idle latency, memory bound with mbind",
    unit: Unit::GBps,
    metrics: &[predicted(metric::BANDWIDTH, Unit::GBps), predicted(metric::LATENCY, Unit::Ns)],
    origin: Origin::Suite,
};
/// activity.noise.
pub const ACTIVITY_NOISE: Entry = Entry {
    id: id::ACTIVITY_NOISE,
    about:
        "interruptions of a pinned busy loop: inferred tick rate, count, CPU time lost (OS noise)",
    unit: Unit::Ns,
    metrics: &[
        predicted(metric::INTERRUPTIONS, Unit::Count),
        unmodelled(metric::INTERRUPTION, Unit::Ns, OF_THE_RECORDING),
        predicted(metric::LOST_FRACTION, Unit::Share),
        predicted(metric::TICK_HZ, Unit::Count),
        unmodelled(
            metric::PERIODIC_HZ,
            Unit::Count,
            "interruptions from outside this kernel follow the host's scheduling, which nothing inside the guest describes",
        ),
        predicted(metric::READ_OVERHEAD, Unit::Ns),
        unmodelled(metric::THRESHOLD, Unit::Ns, OF_THE_RECORDING),
        unmodelled(metric::COUNT, Unit::Count, OF_THE_RECORDING),
    ],
    origin: Origin::Suite,
};
/// migration.cost.
pub const MIGRATION_COST: Entry = Entry {
    id: id::MIGRATION_COST,
    about: "time to re-touch a warm working set after moving to another cpu, minus re-touching it in place",
    unit: Unit::Ns,
    metrics: &[predicted(metric::PER_MIGRATION, Unit::Ns), predicted(metric::RETOUCH_LOCAL, Unit::Ns), predicted(metric::MOVE, Unit::Ns)],
    origin: Origin::Suite,
};
/// c2c.latency.
pub const C2C_LATENCY: Entry = Entry {
    id: id::C2C_LATENCY,
    about: "one-way core-to-core latency: a cache line handed back and forth by compare-and-swap between two pinned threads",
    unit: Unit::Ns,
    metrics: &[predicted(metric::ONE_WAY, Unit::Ns)],
    origin: Origin::Suite,
};
/// The suite's probes, in the order it runs them.
pub const SUITE: &[&Entry] = &[
    &TIMER_RDTSC,
    &TIMER_RDTSCP,
    &TIMER_LFENCE_RDTSC,
    &TIMER_CPUID_RDTSC,
    &TIMER_CLOCK_GETTIME,
    &TIMER_CLOCK_GETTIME_SYSCALL,
    &LOOP_EMPTY,
    &CALL_ARGS,
    &SYSCALL_GETPID,
    &SYSCALL_GETPPID,
    &SYSCALL_TIME_VDSO,
    &SYSCALL_TIME_RAW,
    &SYSCALL_READ_DEVZERO,
    &SYSCALL_WRITE_DEVNULL,
    &TASK_FORK,
    &TASK_VFORK,
    &TASK_POSIX_SPAWN,
    &TASK_FORK_EXEC,
    &TASK_PTHREAD,
    &TASK_STD_THREAD,
    &SWITCH_PROCESS_PIPE,
    &SWITCH_PROCESS_FUTEX,
    &SWITCH_PROCESS_EVENTFD,
    &SWITCH_THREAD_PIPE,
    &SWITCH_THREAD_FUTEX,
    &SWITCH_THREAD_EVENTFD,
    &SWITCH_ONESHOT,
    &MEMORY_LATENCY_CHUNK,
    &MEMORY_LATENCY_RANDOM,
    &MEMORY_LATENCY_SEQUENTIAL,
    &MEMORY_LATENCY_STRIDE,
    &MEMORY_LATENCY_PAGES,
    &MEMORY_LATENCY_PARALLEL,
    &MEMORY_LATENCY_LOADED,
    &BANDWIDTH_STREAM,
    &BANDWIDTH_THREADS,
    &BANDWIDTH_MIX,
    &BANDWIDTH_SWEEP,
    &FAULTS_ANON,
    &FAULTS_THP,
    &FAULTS_POPULATE,
    &FAULTS_FILE,
    &NUMA_MATRIX,
    &ACTIVITY_NOISE,
    &MIGRATION_COST,
    &C2C_LATENCY,
];
/// `oslab activity`: the noise of one recording.
pub const ACTIVITY: Entry = Entry {
    id: id::ACTIVITY,
    about: "interruptions of a pinned busy loop over a chosen time, with its timeline",
    unit: Unit::Ns,
    metrics: ACTIVITY_NOISE.metrics,
    origin: Origin::Command("oslab activity"),
};

/// `oslab timeslice`.
pub const TIMESLICE: Entry = Entry {
    id: id::TIMESLICE,
    about: "the time slices busy processes get on one cpu, and the switch between them",
    unit: Unit::Ns,
    metrics: &[
        unmodelled(metric::SLICE, Unit::Ns, EXPERIMENT),
        unmodelled(
            metric::SWITCH,
            Unit::Ns,
            "read from the kernel's sched_switch gaps under load: compare it with a suite run's switch.*",
        ),
        unmodelled(metric::SWITCHES, Unit::Count, EXPERIMENT),
    ],
    origin: Origin::Command("oslab timeslice"),
};

/// `oslab migrate` (also stores the counters of each phase, named by the user).
pub const MIGRATE: Entry = Entry {
    id: id::MIGRATE,
    about: "matrix multiply pinned vs migrated half way, with counters per phase",
    unit: Unit::Ns,
    metrics: &[
        unmodelled(metric::TIME, Unit::Ns, EXPERIMENT),
        unmodelled(metric::MOVES, Unit::Count, EXPERIMENT),
        unmodelled(metric::MIGRATION_COST, Unit::Ns, EXPERIMENT),
        unmodelled(metric::MIGRATION_COST_CPU, Unit::Ns, EXPERIMENT),
    ],
    origin: Origin::Command("oslab migrate"),
};

/// `oslab cpuman`: per kind of job.
pub const CPUMAN_JOB: Entry = Entry {
    id: id::CPUMAN_JOB,
    about: "malleable jobs under a processor allocation policy: per kind of job",
    unit: Unit::Ns,
    metrics: &[
        unmodelled(metric::CPU_TIME, Unit::Ns, EXPERIMENT),
        unmodelled(metric::EXECUTION_TIME, Unit::Ns, EXPERIMENT),
        unmodelled(metric::RESPONSE_TIME, Unit::Ns, EXPERIMENT),
        unmodelled(metric::SPEEDUP, Unit::Ratio, EXPERIMENT),
        unmodelled(metric::ALLOCATION, Unit::Count, EXPERIMENT),
        unmodelled(metric::MIGRATIONS, Unit::Count, EXPERIMENT),
    ],
    origin: Origin::Command("oslab cpuman"),
};

/// `oslab cpuman`: per run.
pub const CPUMAN_RUN: Entry = Entry {
    id: id::CPUMAN_RUN,
    about: "malleable jobs under a processor allocation policy: the whole run",
    unit: Unit::Ns,
    metrics: &[
        unmodelled(metric::MAKESPAN, Unit::Ns, EXPERIMENT),
        unmodelled(metric::CPU_TIME, Unit::Ns, EXPERIMENT),
        unmodelled(metric::MIGRATIONS, Unit::Count, EXPERIMENT),
        unmodelled(metric::MULTIPROGRAMMING, Unit::Count, EXPERIMENT),
        unmodelled(metric::PAGE_MIGRATIONS, Unit::Count, EXPERIMENT),
        unmodelled(metric::BURST_LENGTH, Unit::Ns, EXPERIMENT),
        unmodelled(metric::BURSTS, Unit::Count, EXPERIMENT),
    ],
    origin: Origin::Command("oslab cpuman"),
};

/// `oslab cpuman`: speedups per processor count.
pub const CPUMAN_SPEEDUP: Entry = Entry {
    id: id::CPUMAN_SPEEDUP,
    about: "a kind of job's speedup on p processors, as the manager measured it",
    unit: Unit::Ratio,
    metrics: &[unmodelled(metric::SPEEDUP, Unit::Ratio, EXPERIMENT)],
    origin: Origin::Command("oslab cpuman"),
};

/// `oslab shuffle`.
pub const SHUFFLE: Entry = Entry {
    id: id::SHUFFLE,
    about: "the shuffling daemon on one target: lock-wait share, regroupings, its overhead",
    unit: Unit::Share,
    metrics: &[
        unmodelled(metric::LOCK_FRACTION, Unit::Share, EXPERIMENT),
        unmodelled(metric::SHUFFLES, Unit::Count, EXPERIMENT),
        unmodelled(metric::LOCK_BEFORE, Unit::Ratio, EXPERIMENT),
        unmodelled(metric::LOCK_AFTER, Unit::Ratio, EXPERIMENT),
        unmodelled(metric::OVERHEAD, Unit::Ratio, EXPERIMENT),
    ],
    origin: Origin::Command("oslab shuffle"),
};

/// `oslab shuffle-eval`.
pub const SHUFFLE_EVAL: Entry = Entry {
    id: id::SHUFFLE_EVAL,
    about: "workloads with vs without shuffling, paired runs",
    unit: Unit::Ns,
    metrics: &[
        unmodelled(metric::TIME, Unit::Ns, EXPERIMENT),
        unmodelled(metric::LOCK_FRACTION, Unit::Share, EXPERIMENT),
        unmodelled(metric::SHUFFLES, Unit::Count, EXPERIMENT),
        unmodelled(metric::REDUCTION, Unit::Ratio, EXPERIMENT),
    ],
    origin: Origin::Command("oslab shuffle-eval"),
};

/// `oslab shuffle-eval --simulate`.
pub const SHUFFLE_SIM: Entry = Entry {
    id: id::SHUFFLE_SIM,
    about: "shuffling simulated at the paper's scale, with vs without",
    unit: Unit::Ns,
    metrics: &[
        unmodelled(metric::TIME, Unit::Ns, EXPERIMENT),
        unmodelled(metric::LOCK_FRACTION, Unit::Share, EXPERIMENT),
        unmodelled(metric::SHUFFLES, Unit::Count, EXPERIMENT),
        unmodelled(metric::MOVES, Unit::Count, EXPERIMENT),
        unmodelled(metric::REMOTE_SHARE, Unit::Ratio, EXPERIMENT),
        unmodelled(metric::CHANGE, Unit::Ratio, EXPERIMENT),
    ],
    origin: Origin::Command("oslab shuffle-eval --simulate"),
};

/// The host during a run.
pub const HOST: Entry = Entry {
    id: id::HOST,
    about: "the host during the run: the measuring core's speed, steal time",
    unit: Unit::Ratio,
    metrics: &[
        unmodelled(metric::CORE_SPEED, Unit::Ratio, OF_THE_HOST),
        unmodelled(metric::STEAL, Unit::Share, OF_THE_HOST),
    ],
    origin: Origin::Runner,
};

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

/// The experiments' probes and the host's.
const OTHERS: &[&Entry] = &[
    &ACTIVITY,
    &TIMESLICE,
    &MIGRATE,
    &CPUMAN_JOB,
    &CPUMAN_RUN,
    &CPUMAN_SPEEDUP,
    &SHUFFLE,
    &SHUFFLE_EVAL,
    &SHUFFLE_SIM,
    &HOST,
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
pub fn model(probe: &str, metric: &str) -> Option<Model> {
    Some(entry(probe)?.metric(metric)?.model)
}

/// A headline: what it is called, and which measurement it is (probe, metric, and parameters
/// that must match; the value `max` picks the largest number among the matches).
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
    line(
        "core-to-core latency, one way",
        id::C2C_LATENCY,
        metric::ONE_WAY,
        &[],
    ),
    line(
        "fork, exit and wait",
        id::TASK_FORK,
        metric::ROUND_TRIP,
        &[("touched_mib", "")],
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
