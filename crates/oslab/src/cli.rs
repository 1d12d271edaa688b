//! Command-line arguments (clap derive). What the user typed, before anything touches the OS.
//! The subcommands are assembled here; each library declares its own commands' arguments (its
//! `args` module).

use clap::{Args, Parser, Subcommand};
pub use oslab_core::args::Output;
pub use oslab_cpuman::args::*;
pub use oslab_fleet::args::*;
pub use oslab_probes::args::*;
pub use oslab_report::args::*;
pub use oslab_shuffle::args::*;
use oslab_store::Location;

/// oslab: what your machine and its operating system really cost.
#[derive(Debug, Parser)]
#[command(name = "oslab", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Tables and text as wide as their content (default: they fit $COLUMNS, or the terminal).
    #[arg(long, global = true)]
    pub wide: bool,
    /// Print long output as it is (default on a terminal: through $PAGER, else `less`).
    #[arg(long, global = true)]
    pub no_pager: bool,
    /// Say the harness's decisions on stderr: its budgets, each probe's time and statuses, what
    /// was measured again and what was not, and why.
    #[arg(short, long, global = true)]
    pub verbose: bool,
    /// The store (`--db`, `--db-timeout`): before or after the subcommand.
    #[command(flatten)]
    pub store: Location,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show the machine as oslab sees it: CPU, caches, NUMA, clock, privileges, PMU, noise sources.
    Info(InfoArgs),
    /// List every probe, its unit, what it needs, and whether it can run here.
    List(ListArgs),
    /// Run probes (all by default), print a table and store the run.
    Run(RunArgs),
    /// Record when a pinned busy loop runs and when it does not: OS noise, timer ticks.
    Activity(ActivityArgs),
    /// N busy processes on one CPU: who ran when, time slices and context switches.
    Timeslice(TimesliceArgs),
    /// Matrix multiply pinned vs migrated half way to another cpu, with counters: what a
    /// migration costs a running program.
    Migrate(MigrateArgs),
    /// Watch a process's lock waits and regroup its threads by cache domain when they pass a
    /// threshold.
    Shuffle(ShuffleArgs),
    /// Evaluate shuffling: workloads run with and without it, interleaved; time, lock wait and
    /// shuffles side by side.
    ShuffleEval(ShuffleEvalArgs),
    /// A built-in lock benchmark: T threads, K mutexes, thread i uses lock i mod K.
    Lockbench(oslab_shuffle::lockbench::Lockbench),
    /// A user-level CPU manager: malleable parallel jobs under native, equipartition or PDPA
    /// allocation, with page migration; workloads, live runs, comparisons.
    Cpuman(CpumanArgs),
    /// Run the suite on every node of a Slurm cluster and see the nodes side by side: submit,
    /// collect, summary (every node healthy, busy, an outlier, drifted or missing, and why: a
    /// health check), history (one node across jobs).
    Fleet(FleetArgs),
    /// This node alone, judged in seconds against a fleet's saved reference: exit 0 healthy,
    /// 1 sick, 2 unusable, with a one-line reason (a Slurm HealthCheckProgram).
    Check(CheckArgs),
    /// The NUMA matrix: bandwidth and latency for every cpu node x memory node (= `run numa.matrix`).
    Numa(NumaArgs),
    /// Core-to-core latency: a cache line handed back and forth between every pair of cpus, as a
    /// matrix and by topology class (SMT sibling, shared L2/L3, other package or node).
    C2c(C2cArgs),
    /// Where each rank and thread of a parallel program should run here (compact, spread or by
    /// measured cost), and the numactl, srun, OpenMP and likwid-pin lines that put them there.
    Bind(BindArgs),
    /// Write a self-contained HTML report (or Markdown with SVG files) of a stored run.
    Report(ReportArgs),
    /// Compare runs measurement by measurement: medians, ratio, significance, regressions.
    Compare(CompareArgs),
    /// Write a stored run as JSON (schema oslab.run/1), CSV, or a Perfetto trace of its timeline.
    Export(ExportArgs),
    /// Merge runs exported elsewhere (oslab.run/1 JSON) into the store, validated first.
    Import(ImportArgs),
    /// List stored runs, newest first.
    Runs(RunsArgs),
    /// Print a stored run again.
    Show(ShowArgs),
    /// Print a shell completion script: oslab completions bash > /etc/bash_completion.d/oslab
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print a manual page (roff): `oslab man | man -l -`, `oslab man run`, `oslab man cpuman
    /// simulate`; `--dir DIR` writes every page (oslab.1, oslab-run.1, ...) there.
    Man {
        /// The subcommand whose page to print (none: oslab's own).
        #[arg(value_name = "SUBCOMMAND")]
        path: Vec<String>,
        /// Write every page into this directory instead (e.g. /usr/local/share/man/man1).
        #[arg(long, value_name = "DIR", conflicts_with = "path")]
        dir: Option<std::path::PathBuf>,
    },
    /// The minimal parent process creation is timed from (started by the task probes).
    #[command(hide = true)]
    TaskHelper {
        /// What to measure, as JSON.
        request: String,
    },
    /// Puts back what an ended oslab left changed (started by its guard when it ends).
    #[command(hide = true)]
    Restore {
        /// The oslab to wait for first.
        #[arg(long, value_name = "PID")]
        after: Option<u32>,
    },
}

/// `oslab cpuman`.
#[derive(Debug, Args)]
pub struct CpumanArgs {
    #[command(subcommand)]
    pub command: CpumanCommand,
}

/// What `oslab cpuman` does.
#[derive(Debug, Subcommand)]
pub enum CpumanCommand {
    /// Run a workload live under a policy and page-migration mode; store and print the result.
    Run(CpumanRunArgs),
    /// Simulate the CPU manager on a CC-NUMA machine of any size (same policies, same outputs).
    Simulate(CpumanSimulateArgs),
    /// Write a workload (the W1..W4 mixes of swim, bt, hydro2d and apsi jobs at a load) as an SWF
    /// trace.
    Workload(CpumanWorkloadArgs),
    /// Compare CPU-manager runs: CPU time, speedup and migrations per policy, migration mode,
    /// application and load, with the with/without-migration ratios.
    Compare(CpumanCompareArgs),
    /// (internal) One built-in job, started by `cpuman run`.
    #[command(hide = true)]
    Job(CpumanJobArgs),
}

/// `oslab cpuman compare`.
#[derive(Debug, Args)]
pub struct CpumanCompareArgs {
    /// Stored runs of `cpuman run` (or `cpuman simulate`), chosen as everywhere: 7, latest,
    /// 3,4,5, 3-5 or tag:KEY=VALUE.
    #[arg(required = true, num_args = 1..)]
    pub runs: Vec<oslab_store::RunSet>,
    #[command(flatten)]
    pub out: Output,
}
