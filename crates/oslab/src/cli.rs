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
    /// The NUMA matrix: bandwidth and latency for every cpu node x memory node (= `run numa.matrix`).
    Numa(NumaArgs),
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
    /// Size of the file the page-fault probe maps, e.g. 2.8G, 512M (default: from RAM and the
    /// memory budget).
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes)]
    pub file_size: Option<u64>,
    /// Directory for that file (default: $TMPDIR, else /var/tmp); it is never left behind.
    #[arg(long, value_name = "DIR")]
    pub temp_dir: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Where to store the run.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `oslab numa`.
#[derive(Debug, Args)]
pub struct NumaArgs {
    /// Shorter budgets and smaller arrays.
    #[arg(long)]
    pub quick: bool,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Where to store the run.
    #[command(flatten)]
    pub store: StoreArgs,
}

impl From<NumaArgs> for RunArgs {
    fn from(a: NumaArgs) -> RunArgs {
        RunArgs {
            probes: vec!["numa.matrix".into()],
            quick: a.quick,
            cpu: None,
            peer_cpu: None,
            no_rt: false,
            file_size: None,
            temp_dir: None,
            json: a.json,
            store: a.store,
        }
    }
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

/// Parses a byte size: "4096", "512K", "2.8G", "1GiB", "64MB" (binary multiples).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size (e.g. 512M, 2.8G)"))?;
    let mult: u64 = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return Err(format!("{s:?}: unknown unit (use K, M, G or T)")),
    };
    let bytes = n * mult as f64;
    if !(1.0..=(1u64 << 50) as f64).contains(&bytes) {
        return Err(format!("{s:?}: size must be between 1 byte and 1 PiB"));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::parse_bytes;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("512K"), Ok(512 << 10));
        assert_eq!(parse_bytes("1GiB"), Ok(1 << 30));
        assert_eq!(parse_bytes("2.5g"), Ok(5 << 29));
        assert!(parse_bytes("12Q").is_err());
        assert!(parse_bytes("lots").is_err());
        assert!(parse_bytes("0").is_err());
    }
}
