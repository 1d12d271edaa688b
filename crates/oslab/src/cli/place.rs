//! Arguments of the placement experiments: shuffle, shuffle-eval and the CPU manager.

use super::Output;
use clap::{Args, Subcommand};
use oslab_sched::cpuman::simulate;
use std::path::PathBuf;

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
    /// Output file (default, or `-`: standard output).
    #[arg(short, long, value_name = "FILE.swf")]
    pub output: Option<PathBuf>,
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
