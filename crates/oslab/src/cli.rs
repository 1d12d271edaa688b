//! Command-line arguments (clap derive). What the user typed, before anything touches the OS.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// oslab: what your machine and its operating system really cost.
#[derive(Debug, Parser)]
#[command(name = "oslab", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
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
    /// List stored runs.
    Runs(RunsArgs),
    /// Print a stored run again.
    Show(ShowArgs),
}

/// Where results are stored.
#[derive(Debug, Args, Clone)]
pub struct StoreArgs {
    /// Result store (SQLite). Default: $XDG_DATA_HOME/oslab/oslab.db.
    #[arg(long, value_name = "PATH", env = "OSLAB_DB")]
    pub db: Option<PathBuf>,
}

/// `oslab info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
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
    /// Shorter budgets per measurement (the whole suite in well under 20 s on 2 cores).
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
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Where to store the run.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `oslab runs`.
#[derive(Debug, Args)]
pub struct RunsArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// The store.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `oslab show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Run id, or 'latest'.
    #[arg(value_name = "RUN")]
    pub run: String,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Include raw samples in the JSON.
    #[arg(long, requires = "json")]
    pub samples: bool,
    /// The store.
    #[command(flatten)]
    pub store: StoreArgs,
}
