//! The command lines of the placement experiments (with the `clap` feature): shuffle,
//! shuffle-eval and the CPU manager's run, simulate, workload and job (`cpuman compare` reads
//! the store: the CLI declares it).

use crate::cpuman::simulate;
use clap::{Args, Subcommand};
use oslab_core::args::Output;
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
    pub watch: crate::shuffle::live::Watch,
    /// Text or JSON.
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
    pub request: crate::shuffle::study::Request,
    /// Text or JSON.
    #[command(flatten)]
    pub out: Output,
}

/// `oslab shuffle-eval`.
#[derive(Debug, Args)]
pub struct ShuffleEvalArgs {
    /// Runs, workloads, threads and the daemon's settings.
    #[command(flatten)]
    pub options: crate::shuffle::eval::Options,
    /// Text or JSON.
    #[command(flatten)]
    pub out: Output,
    /// Evaluate this command instead (after --).
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `oslab cpuman run`.
#[derive(Debug, Args)]
pub struct CpumanRunArgs {
    /// What is asked.
    #[command(flatten)]
    pub request: crate::cpuman::manager::Request,
    /// Also write the timeline as Paraver files BASE.prv, BASE.pcf and BASE.row.
    #[arg(long, value_name = "BASE")]
    pub paraver: Option<PathBuf>,
    /// Text or JSON.
    #[command(flatten)]
    pub out: Output,
}

/// `oslab cpuman simulate`.
#[derive(Debug, Args)]
pub struct CpumanSimulateArgs {
    /// What is asked.
    #[command(flatten)]
    pub request: simulate::Request,
    /// Text or JSON.
    #[command(flatten)]
    pub out: Output,
}

/// `oslab cpuman workload`.
#[derive(Debug, Args)]
pub struct CpumanWorkloadArgs {
    /// The mix, load and seed.
    #[command(flatten)]
    pub generate: crate::cpuman::workload::Generate,
    /// Processors of the machine it is for (default: the cpus we may use here).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1048576))]
    pub cpus: Option<u64>,
    /// Output file (default, or `-`: standard output).
    #[arg(short, long, value_name = "FILE.swf")]
    pub output: Option<PathBuf>,
}

/// `oslab cpuman job` (internal).
#[derive(Debug, Args)]
pub struct CpumanJobArgs {
    /// The job's kind (swim, bt, hydro2d, apsi).
    #[arg(long)]
    pub kind: String,
    /// Its outer iterations.
    #[arg(long)]
    pub iterations: u64,
    /// The descriptor of its channel to the manager.
    #[arg(long)]
    pub channel_fd: i32,
    /// The L2 size its working set is fitted to.
    #[arg(long, default_value_t = 1 << 20)]
    pub l2_bytes: u64,
}
