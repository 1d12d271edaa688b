//! The command lines of the shuffler (with the `clap` feature): shuffle, shuffle simulate and
//! shuffle-eval.

use clap::{Args, Subcommand};
use oslab_core::args::Output;

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
    pub watch: crate::live::Watch,
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
    pub request: crate::study::Request,
    /// Text or JSON.
    #[command(flatten)]
    pub out: Output,
}

/// `oslab shuffle-eval`.
#[derive(Debug, Args)]
pub struct ShuffleEvalArgs {
    /// Runs, workloads, threads and the daemon's settings.
    #[command(flatten)]
    pub options: crate::eval::Options,
    /// Text or JSON.
    #[command(flatten)]
    pub out: Output,
    /// Evaluate this command instead (after --).
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}
