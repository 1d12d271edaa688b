//! The command lines of the CPU manager (with the `clap` feature): its run, simulate, workload
//! and job (`cpuman compare` reads the store: the CLI declares it).

use crate::simulate;
use clap::Args;
use oslab_core::args::Output;
use std::path::PathBuf;

/// `oslab cpuman run`.
#[derive(Debug, Args)]
pub struct CpumanRunArgs {
    /// What is asked.
    #[command(flatten)]
    pub request: crate::manager::Request,
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
    /// The mix, the load and the random stream that orders it.
    #[command(flatten)]
    pub generate: crate::workload::Generate,
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
