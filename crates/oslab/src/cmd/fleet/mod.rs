//! `oslab fleet`: the suite on every node of a Slurm cluster, and one view of the results. Slurm
//! schedules; we write its batch script, run one task per node, and read back what the tasks
//! leave in a shared directory:
//!
//! ```text
//! RESULTS/slurm-JOB.out          the job's output (every node's run table)
//! RESULTS/JOB/fleet.json         what was submitted (nodes, run arguments), for collect
//! RESULTS/JOB/node-NAME.json     one node's run (oslab.run/1)
//! RESULTS/JOB/node-NAME.failed   why a node has none
//! ```

mod collect;
mod slurm;
mod submit;
mod summary;
mod task;

use crate::cli::{FleetArgs, FleetCommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub fn run(args: FleetArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        FleetCommand::Submit(a) => submit::run(a),
        FleetCommand::Collect(a) => collect::run(a),
        FleetCommand::Summary(a) => summary::run(a),
        FleetCommand::Task(a) => task::run(a),
    }
}

/// Tag keys of collected runs.
const JOB_TAG: &str = "fleet.job";
const NODE_TAG: &str = "fleet.node";

/// The manifest written at submission.
const MANIFEST: &str = "fleet.json";

/// A node's result file, or its failure note.
fn node_file(job_dir: &Path, node: &str, failed: bool) -> PathBuf {
    job_dir.join(format!(
        "node-{node}.{}",
        if failed { "failed" } else { "json" }
    ))
}

/// (node, failed) for a file name written by [`node_file`].
fn parse_node_file(name: &str) -> Option<(&str, bool)> {
    let rest = name.strip_prefix("node-")?;
    if let Some(n) = rest.strip_suffix(".json") {
        return Some((n, false));
    }
    rest.strip_suffix(".failed").map(|n| (n, true))
}

/// Slurm job ids: digits, or array jobs "123_4".
fn is_job_id(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || c == '_')
}

/// Node names become file names: no separators, nothing hidden.
fn is_node_name(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('.')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_round_trip() {
        let d = Path::new("/r/42");
        let f = node_file(d, "n01", false);
        assert_eq!(f, Path::new("/r/42/node-n01.json"));
        let name = f.file_name().unwrap().to_str().unwrap();
        assert_eq!(parse_node_file(name), Some(("n01", false)));
        assert_eq!(parse_node_file("node-gpu-3.failed"), Some(("gpu-3", true)));
        assert_eq!(parse_node_file("fleet.json"), None);
        assert!(is_job_id("123") && is_job_id("123_4") && !is_job_id("x1") && !is_job_id(""));
        assert!(is_node_name("n01.cluster") && !is_node_name("../x") && !is_node_name(".h"));
    }
}
