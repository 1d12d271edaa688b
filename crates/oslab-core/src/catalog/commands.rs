//! The probes of the experiments' commands, and the host's.

use super::*;

/// Why an experiment's figures have no model.
const EXPERIMENT: &str = "an experiment's outcome: compared between its own arms, not predicted";
/// Why the host's figures have no model.
const OF_THE_HOST: &str = "a property of the host and its other tenants, not of the machine";

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
    about: "matrix multiply pinned vs migrated half way, with counters per phase (named `COUNTER phaseN`)",
    unit: Unit::Ns,
    metrics: &[
        unmodelled(metric::MIGRATION_COST, Unit::Ns, EXPERIMENT),
        unmodelled(metric::MIGRATION_COST_CPU, Unit::Ns, EXPERIMENT),
        unmodelled(metric::MIGRATION_COST_PAGES_FOLLOW, Unit::Ns, EXPERIMENT),
        unmodelled(metric::MIGRATION_COST_PAGES_FOLLOW_CPU, Unit::Ns, EXPERIMENT),
        unmodelled(metric::REMOTE_MEMORY_COST, Unit::Ns, EXPERIMENT),
        unmodelled(metric::PAGE_MOVE, Unit::Ns, EXPERIMENT),
        unmodelled(metric::PAGES_MOVED, Unit::Count, EXPERIMENT),
        unmodelled(metric::TIME, Unit::Ns, EXPERIMENT),
        unmodelled(metric::PHASE1_TIME, Unit::Ns, EXPERIMENT),
        unmodelled(metric::PHASE2_TIME, Unit::Ns, EXPERIMENT),
        unmodelled(metric::MOVES, Unit::Count, EXPERIMENT),
    ],
    origin: Origin::Command("oslab migrate"),
};

/// `oslab cpuman`: per kind of job.
pub const CPUMAN_JOB: Entry = Entry {
    id: id::CPUMAN_JOB,
    about: "malleable jobs under a processor allocation policy: per kind of job",
    unit: Unit::Ns,
    metrics: &[
        unmodelled(metric::RESPONSE_TIME, Unit::Ns, EXPERIMENT),
        unmodelled(metric::EXECUTION_TIME, Unit::Ns, EXPERIMENT),
        unmodelled(metric::CPU_TIME, Unit::Ns, EXPERIMENT),
        unmodelled(metric::SPEEDUP, Unit::Ratio, EXPERIMENT),
        unmodelled(metric::ALLOCATION, Unit::Count, EXPERIMENT),
        unmodelled(metric::MIGRATIONS, Unit::Count, EXPERIMENT),
        unmodelled(metric::PAGES_MOVED, Unit::Count, EXPERIMENT),
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
        unmodelled(metric::REDUCTION, Unit::Share, EXPERIMENT),
        unmodelled(metric::TIME, Unit::Ns, EXPERIMENT),
        unmodelled(metric::LOCK_FRACTION, Unit::Share, EXPERIMENT),
        unmodelled(metric::SHUFFLES, Unit::Count, EXPERIMENT),
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

/// The experiments' probes and the host's.
pub(super) const OTHERS: &[&Entry] = &[
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
