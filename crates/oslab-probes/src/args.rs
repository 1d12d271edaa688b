//! The command lines of the measuring commands (with the `clap` feature): info, list, run, numa,
//! c2c, activity, timeslice, migrate.

use clap::Args;
use oslab_core::args::Output;
use oslab_core::catalog::id;
use std::path::PathBuf;

/// `oslab run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Probe ids or globs (e.g. 'syscall.*', 'switch', 'task.fork'). Default: the whole suite.
    #[arg(value_name = "PROBE-GLOB")]
    pub probes: Vec<String>,
    /// Shorter budgets per measurement (the whole suite in about 15 s on 2 cores).
    #[arg(long)]
    pub quick: bool,
    /// The CPU to measure on (a number or a one-cpu list like "core-sibling-of:0").
    #[arg(long, value_name = "N")]
    pub cpu: Option<String>,
    /// The second CPU for cross-CPU measurements.
    #[arg(long, value_name = "M")]
    pub peer_cpu: Option<String>,
    /// Do not raise the measuring thread to SCHED_FIFO even when permitted.
    #[arg(long)]
    pub no_rt: bool,
    /// Measure nothing: say what each probe would measure on this machine (teams, cells, pairs)
    /// and its share of the suite's time.
    #[arg(long)]
    pub plan: bool,
    /// Print every row, the sweeps, the model's reasons and what to do about each warning (the
    /// first view has the headline and a line per probe).
    #[arg(long)]
    pub details: bool,
    /// The page-fault file and the memory's description.
    #[command(flatten)]
    pub options: crate::Options,
    /// Measure every probe N times, interleaved (each probe once, then each again, ...): the
    /// independent repetitions `oslab compare` needs to judge a difference (3 or more). Two single
    /// runs are judged on them only when 3 earlier runs of this machine show how far its runs
    /// drift apart (or with `compare --no-history`); several runs a side need no history.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// Label the run, e.g. --tag kernel=6.18 (repeatable): `oslab compare tag:kernel=6.18 ...`
    /// takes every run so labelled as one side.
    #[arg(long, value_name = "KEY=VALUE", value_parser = oslab_core::tags::parse_tag)]
    pub tag: Vec<(String, String)>,
    /// Text or JSON.
    #[command(flatten)]
    pub out: Output,
}

impl RunArgs {
    /// The measuring cpu and its peer as the user named them (`--cpu`, `--peer-cpu`).
    pub fn named_cpus(&self) -> [Option<oslab_os::placement::Named<'_>>; 2] {
        [
            self.cpu.as_deref().map(|c| ("--cpu", c)),
            self.peer_cpu.as_deref().map(|c| ("--peer-cpu", c)),
        ]
    }
}

/// `oslab numa`.
#[derive(Debug, Args)]
pub struct NumaArgs {
    /// Shorter budgets and smaller arrays.
    #[arg(long)]
    pub quick: bool,
    /// Text or JSON.
    #[command(flatten)]
    pub out: Output,
}

impl From<NumaArgs> for RunArgs {
    fn from(a: NumaArgs) -> RunArgs {
        RunArgs {
            probes: vec![id::NUMA_MATRIX.into()],
            quick: a.quick,
            cpu: None,
            peer_cpu: None,
            no_rt: false,
            plan: false,
            details: false,
            options: crate::Options {
                whole_matrix: true,
                ..Default::default()
            },
            repeat: 1,
            tag: Vec::new(),
            out: a.out,
        }
    }
}

/// `oslab c2c`.
#[derive(Debug, Args)]
pub struct C2cArgs {
    /// What is asked.
    #[command(flatten)]
    pub request: crate::c2c::Request,
    /// Text or JSON.
    #[command(flatten)]
    pub out: Output,
}

/// `oslab activity`.
#[derive(Debug, Args)]
pub struct ActivityArgs {
    /// The CPU to watch (default: the highest allowed).
    #[arg(long, value_name = "N")]
    pub cpu: Option<String>,
    /// What is asked.
    #[command(flatten)]
    pub options: crate::activity::Options,
    /// Print every period (default: the first 20).
    #[arg(long)]
    pub periods: bool,
    /// Also write the timeline as Chrome trace-event JSON (opens in Perfetto).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Do not raise the loop to SCHED_FIFO even when permitted.
    #[arg(long)]
    pub no_rt: bool,
    /// Text or JSON.
    #[command(flatten)]
    pub out: Output,
}

/// `oslab timeslice`.
#[derive(Debug, Args)]
pub struct TimesliceArgs {
    /// The CPU the processes share (default: the highest allowed).
    #[arg(long, value_name = "N")]
    pub cpu: Option<String>,
    /// What is asked.
    #[command(flatten)]
    pub options: crate::timeslice::Options,
    /// Also write the schedule as Chrome trace-event JSON (one track per process).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Text or JSON.
    #[command(flatten)]
    pub out: Output,
}

/// `oslab migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// What is asked.
    #[command(flatten)]
    pub options: crate::migration::experiment::Options,
    /// Text or JSON.
    #[command(flatten)]
    pub out: Output,
}

/// `oslab info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also list every counter (generic, cache, software, L2_TCM/L2_TCA presets), how it is
    /// defined on this CPU and whether it can be opened here.
    #[arg(long)]
    pub counters: bool,
    /// Print the topology as hwloc's XML instead (`lstopo --input`, `hwloc-calc --input`,
    /// Slurm and MPI read it).
    #[arg(long, conflicts_with_all = ["json", "counters"])]
    pub hwloc: bool,
    /// Read the topology from a copy of another machine's file system instead (the directory
    /// holding its `sys/devices/system`, as hwloc's HWLOC_FSROOT): its shape, or with --hwloc
    /// its XML.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["json", "counters"])]
    pub sysfs_root: Option<std::path::PathBuf>,
}

/// `oslab bind`.
#[derive(Debug, Args)]
pub struct BindArgs {
    /// Ranks (processes) of the program.
    #[arg(long, default_value_t = 1)]
    pub ranks: usize,
    /// Threads per rank (default: as many as there are cores for each rank).
    #[arg(long)]
    pub threads: Option<usize>,
    /// How ranks are laid out: compact (side by side), spread (one per package, node or L3),
    /// by-cost (spread, on the costs `oslab c2c` and `oslab numa` measured on this machine).
    #[arg(long, value_enum, default_value = "spread")]
    pub policy: oslab_core::binding::Policy,
    /// Plan for the machine an hwloc XML describes (`lstopo --of xml`, `oslab info --hwloc`
    /// on a compute node), not this one; by-cost uses what the store measured on that host.
    #[arg(long, value_name = "FILE")]
    pub topology: Option<std::path::PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// The program and its arguments, for the lines printed (after `--`).
    #[arg(last = true)]
    pub program: Vec<String>,
}

/// `oslab list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}
