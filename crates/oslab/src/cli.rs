//! Command-line arguments (clap derive). What the user typed, before anything touches the OS.

use clap::{Args, Parser, Subcommand};
use oslab_report::export::Format;
use oslab_sched::cpuman::simulate;
use oslab_store::{Location, RunSet};
use std::path::PathBuf;

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
    Lockbench(oslab_sched::shuffle::lockbench::Lockbench),
    /// A user-level CPU manager: malleable parallel jobs under native, equipartition or PDPA
    /// allocation, with page migration; workloads, live runs, comparisons.
    Cpuman(CpumanArgs),
    /// Run the suite on every node of a Slurm cluster and see the nodes side by side: submit,
    /// collect, summary (outlier nodes by robust z-score).
    Fleet(FleetArgs),
    /// The NUMA matrix: bandwidth and latency for every cpu node x memory node (= `run numa.matrix`).
    Numa(NumaArgs),
    /// Core-to-core latency: a cache line handed back and forth between every pair of cpus, as a
    /// matrix and by topology class (SMT sibling, shared L2/L3, other package or node).
    C2c(C2cArgs),
    /// Write a self-contained HTML report (or Markdown with SVG files) of a stored run.
    Report(ReportArgs),
    /// Compare runs measurement by measurement: medians, ratio, significance, regressions.
    Compare(CompareArgs),
    /// Write a stored run as JSON (schema oslab.run/1), CSV, or a Perfetto trace of its timeline.
    Export(ExportArgs),
    /// Merge runs exported elsewhere (oslab.run/1 JSON) into the store, validated first.
    Import(ImportArgs),
    /// List stored runs.
    Runs(Output),
    /// Print a stored run again.
    Show(ShowArgs),
    /// Print a shell completion script: oslab completions bash > /etc/bash_completion.d/oslab
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff): oslab man | man -l -
    Man,
    /// The minimal parent process creation is timed from (started by the task probes).
    #[command(hide = true)]
    TaskHelper {
        /// What to measure, as JSON.
        request: String,
    },
}

/// How a command prints what it did (text, or JSON for programs), and its store.
#[derive(Debug, Args, Clone)]
pub struct Output {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: Location,
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
}

/// `oslab list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `oslab run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Probe ids or globs (e.g. 'syscall.*', 'switch', 'task.fork'). Default: the whole suite.
    #[arg(value_name = "PROBE-GLOB")]
    pub probes: Vec<String>,
    /// Shorter budgets per measurement (the whole suite in about 20 s on 2 cores).
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
    /// The page-fault file and the memory's description.
    #[command(flatten)]
    pub options: oslab_probes::Options,
    /// Measure every probe N times, interleaved (each probe once, then each again, ...): the
    /// independent repetitions `oslab compare` needs to judge a difference (3 or more).
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// Label the run, e.g. --tag kernel=6.18 (repeatable): `oslab compare tag:kernel=6.18 ...`
    /// takes every run so labelled as one side.
    #[arg(long, value_name = "KEY=VALUE", value_parser = parse_tag)]
    pub tag: Vec<(String, String)>,
    #[command(flatten)]
    pub out: Output,
}

/// `oslab numa`.
#[derive(Debug, Args)]
pub struct NumaArgs {
    /// Shorter budgets and smaller arrays.
    #[arg(long)]
    pub quick: bool,
    #[command(flatten)]
    pub out: Output,
}

impl From<NumaArgs> for RunArgs {
    fn from(a: NumaArgs) -> RunArgs {
        RunArgs {
            probes: vec!["numa.matrix".into()],
            quick: a.quick,
            cpu: None,
            peer_cpu: None,
            no_rt: false,
            options: Default::default(),
            repeat: 1,
            tag: Vec::new(),
            out: a.out,
        }
    }
}

/// `oslab c2c`.
#[derive(Debug, Args)]
pub struct C2cArgs {
    #[command(flatten)]
    pub request: oslab_probes::c2c::Request,
    #[command(flatten)]
    pub out: Output,
}

/// `oslab activity`.
#[derive(Debug, Args)]
pub struct ActivityArgs {
    /// The CPU to watch (default: the highest allowed).
    #[arg(long, value_name = "N")]
    pub cpu: Option<String>,
    #[command(flatten)]
    pub options: oslab_probes::activity::Options,
    /// Print every period (default: the first 20).
    #[arg(long)]
    pub periods: bool,
    /// Also write the timeline as Chrome trace-event JSON (opens in Perfetto).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Do not raise the loop to SCHED_FIFO even when permitted.
    #[arg(long)]
    pub no_rt: bool,
    #[command(flatten)]
    pub out: Output,
}

/// `oslab timeslice`.
#[derive(Debug, Args)]
pub struct TimesliceArgs {
    /// The CPU the processes share (default: the highest allowed).
    #[arg(long, value_name = "N")]
    pub cpu: Option<String>,
    #[command(flatten)]
    pub options: oslab_probes::timeslice::Options,
    /// Also write the schedule as Chrome trace-event JSON (one track per process).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    #[command(flatten)]
    pub out: Output,
}

/// `oslab migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub options: oslab_probes::migration::experiment::Options,
    #[command(flatten)]
    pub out: Output,
}

/// `oslab report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run id or 'latest'; or several, each a run, runs taken together (3,4,5 or 3-5) or
    /// tag:KEY=VALUE, overlaid on the same charts with their comparison (the first is the
    /// baseline; HTML only).
    #[arg(value_name = "RUNS", default_value = "latest")]
    pub runs: Vec<RunSet>,
    /// Output file (default: oslab-run-ID.html or .md; oslab-comparison.html for several).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// html (one self-contained file) or md (Markdown with SVG charts beside it).
    #[arg(long, value_enum, default_value_t = Format::Html, value_parser = report_format)]
    pub format: Format,
    /// The store.
    #[command(flatten)]
    pub store: Location,
}

/// The formats a report is written in.
fn report_format(s: &str) -> Result<Format, String> {
    match s {
        "html" => Ok(Format::Html),
        "md" => Ok(Format::Md),
        _ => Err(format!("{s:?}: html or md")),
    }
}

/// `oslab compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline, then what is compared with it. Each side is a run id, 'latest', several runs
    /// taken together (3,4,5 or 3-5) or every run with a tag (tag:kernel=6.18); each run's
    /// repetitions (`run --repeat`) are the replicates.
    #[arg(value_name = "RUNS", required = true)]
    pub sets: Vec<RunSet>,
    /// The baseline, given apart: then every RUNS is compared with it.
    #[arg(long, value_name = "RUNS")]
    pub baseline: Option<RunSet>,
    /// Threshold and history.
    #[command(flatten)]
    pub judging: oslab_report::comparison::Judging,
    /// Exit with status 1 when any measurement regressed beyond the threshold (for CI gates);
    /// with too few repetitions to judge anything, exit with status 2 and say so.
    #[arg(long)]
    pub fail_on_regression: bool,
    /// Show every row (default: those that changed, could not be compared, or, unjudged, moved
    /// beyond the threshold).
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub out: Output,
}

/// `oslab export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Run id, or 'latest'.
    #[arg(value_name = "RUN")]
    pub run: String,
    /// The format.
    #[arg(long, value_enum, default_value_t = Format::Json)]
    pub format: Format,
    /// With --format csv: one row per sample (long format) instead of one per measurement.
    #[arg(long)]
    pub samples: bool,
    /// Write to this file instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The store.
    #[command(flatten)]
    pub store: Location,
}

/// `oslab import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// oslab.run/1 JSON files (from `oslab export`). All are checked before any is stored.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub out: Output,
}

/// `oslab shuffle`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct ShuffleArgs {
    /// Shuffling on a simulated machine instead of a live process.
    #[command(subcommand)]
    pub simulate: Option<ShuffleCommand>,
    /// The process to watch.
    #[arg(
        long,
        value_name = "PID",
        conflicts_with = "command",
        required_unless_present = "command"
    )]
    pub pid: Option<i32>,
    /// Interval, threshold, lock-wait method.
    #[command(flatten)]
    pub watch: oslab_sched::shuffle::live::Watch,
    #[command(flatten)]
    pub out: Output,
    /// A command to start and watch (after --).
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `oslab shuffle simulate`.
#[derive(Debug, Subcommand)]
pub enum ShuffleCommand {
    /// Threads contending for locks on a simulated machine of S sockets x C cores, with and
    /// without the daemon's regrouping (its own decision code), at rising contention and over
    /// monitoring intervals.
    Simulate(ShuffleSimulateArgs),
}

/// `oslab shuffle simulate`.
#[derive(Debug, Args)]
pub struct ShuffleSimulateArgs {
    /// The machine, workloads, daemon and costs.
    #[command(flatten)]
    pub request: oslab_sched::shuffle::study::Request,
    #[command(flatten)]
    pub out: Output,
}

/// `oslab shuffle-eval`.
#[derive(Debug, Args)]
pub struct ShuffleEvalArgs {
    /// Runs, workloads, threads and the daemon's settings.
    #[command(flatten)]
    pub options: oslab_sched::shuffle::eval::Options,
    #[command(flatten)]
    pub out: Output,
    /// Evaluate this command instead (after --).
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `oslab show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Run id, or 'latest'.
    #[arg(value_name = "RUN")]
    pub run: String,
    /// Include raw samples in the JSON.
    #[arg(long, requires = "json")]
    pub samples: bool,
    #[command(flatten)]
    pub out: Output,
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

/// `key=value`, both non-empty, the key without spaces or ':'.
fn parse_tag(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v))
            if !k.is_empty()
                && !v.is_empty()
                && !k.contains(|c: char| c.is_whitespace() || c == ':') =>
        {
            Ok((k.to_string(), v.to_string()))
        }
        _ => Err(format!(
            "{s:?}: a tag is KEY=VALUE, e.g. kernel=6.18 (the key without spaces or ':')"
        )),
    }
}

/// `oslab cpuman run`.
#[derive(Debug, Args)]
pub struct CpumanRunArgs {
    #[command(flatten)]
    pub request: oslab_sched::cpuman::manager::Request,
    /// Also write the timeline as Paraver files BASE.prv, BASE.pcf and BASE.row.
    #[arg(long, value_name = "BASE")]
    pub paraver: Option<PathBuf>,
    #[command(flatten)]
    pub out: Output,
}

/// `oslab cpuman simulate`.
#[derive(Debug, Args)]
pub struct CpumanSimulateArgs {
    #[command(flatten)]
    pub request: simulate::Request,
    #[command(flatten)]
    pub out: Output,
}

/// `oslab cpuman workload`.
#[derive(Debug, Args)]
pub struct CpumanWorkloadArgs {
    #[command(flatten)]
    pub generate: oslab_sched::cpuman::workload::Generate,
    /// Processors of the machine it is for (default: the cpus we may use here).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1048576))]
    pub cpus: Option<u64>,
    /// Output file (default: stdout).
    #[arg(short, long, value_name = "FILE.swf")]
    pub output: Option<PathBuf>,
}

/// `oslab cpuman compare`.
#[derive(Debug, Args)]
pub struct CpumanCompareArgs {
    /// Stored runs of `cpuman run` (or `cpuman simulate`): ids or 'latest'.
    #[arg(required = true, num_args = 1..)]
    pub runs: Vec<String>,
    #[command(flatten)]
    pub out: Output,
}

/// `oslab cpuman job` (internal).
#[derive(Debug, Args)]
pub struct CpumanJobArgs {
    #[arg(long)]
    pub kind: String,
    #[arg(long)]
    pub iterations: u64,
    #[arg(long)]
    pub channel_fd: i32,
    #[arg(long, default_value_t = 1 << 20)]
    pub l2_bytes: u64,
}

/// `oslab fleet`.
#[derive(Debug, Args)]
pub struct FleetArgs {
    #[command(subcommand)]
    pub command: FleetCommand,
}

/// What `oslab fleet` does.
#[derive(Debug, Subcommand)]
pub enum FleetCommand {
    /// Write and submit an sbatch script: one `oslab run RUN-ARGS` per node, each exporting its
    /// run as JSON into the results directory; prints the job id.
    Submit(FleetSubmitArgs),
    /// Import every node's result of a fleet job (validated) into the store, tagged with the job.
    Collect(FleetCollectArgs),
    /// Node x measurement table of a collected job: fleet median, each node's deviation, outliers.
    Summary(FleetSummaryArgs),
    /// (internal) One node's share of a fleet job, started by the sbatch script.
    #[command(hide = true)]
    Task(FleetTaskArgs),
}

/// `oslab fleet submit`.
#[derive(Debug, Args)]
pub struct FleetSubmitArgs {
    /// Partition, nodes, results directory and staging.
    #[command(flatten)]
    pub request: oslab_store::fleet::submit::Request,
    /// Print the sbatch script instead of submitting it.
    #[arg(long)]
    pub dry_run: bool,
    /// Wait until the job has left the queue.
    #[arg(long)]
    pub wait: bool,
    /// Print the job, its results directory and nodes as JSON (default: the job id alone).
    #[arg(long)]
    pub json: bool,
    /// Arguments of `oslab run` for every node (after --), e.g. -- --quick syscall.
    #[arg(last = true, value_name = "RUN-ARGS")]
    pub run_args: Vec<String>,
}

/// `oslab fleet collect`.
#[derive(Debug, Args)]
pub struct FleetCollectArgs {
    /// A job's results directory (RESULTS/JOBID), or RESULTS itself for every job in it.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    #[command(flatten)]
    pub out: Output,
}

/// `oslab fleet summary`.
#[derive(Debug, Args)]
pub struct FleetSummaryArgs {
    /// The Slurm job id.
    #[arg(value_name = "JOB")]
    pub job: String,
    /// List every measurement (default: those with an outlier, when there are more than 12 nodes).
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub out: Output,
}

/// `oslab fleet task` (internal).
#[derive(Debug, Args)]
pub struct FleetTaskArgs {
    /// The results directory.
    #[arg(long, value_name = "DIR")]
    pub results: PathBuf,
    /// Arguments of `oslab run`.
    #[arg(last = true, value_name = "RUN-ARGS")]
    pub run_args: Vec<String>,
}
