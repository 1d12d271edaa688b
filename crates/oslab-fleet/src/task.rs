//! One node's share of a fleet job, started by srun: `oslab run RUN-ARGS` into a private store
//! in the node's temporary directory, then that run handed in as RESULTS/JOB/node-NAME.json, or
//! node-NAME.failed saying why.

use crate::{hand_in, is_job_id, is_node_name, node_file, remove_store_files};
use oslab_core::files::write_whole;
use oslab_core::tree::run_contained;
use std::path::Path;
use std::process::Command;

/// Runs this node's share with `program` (the oslab binary) and returns `oslab run`'s exit
/// code; an error says why the node has no run (also written to its `.failed` file).
pub fn run(program: &Path, results: &Path, run_args: &[String]) -> Result<u8, String> {
    let job = std::env::var("SLURM_JOB_ID")
        .ok()
        .filter(|j| is_job_id(j))
        .ok_or(
            "oslab fleet task runs inside a Slurm job (no SLURM_JOB_ID); use `oslab fleet submit`",
        )?;
    let node = std::env::var("SLURMD_NODENAME")
        .ok()
        .or_else(kernel_hostname)
        .filter(|n| is_node_name(n))
        .ok_or("cannot tell this node's name (SLURMD_NODENAME)")?;
    let dir = results.join(&job);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let db = std::env::temp_dir().join(format!("oslab-fleet-{job}-{node}.db"));
    remove_store_files(&db);
    // Through the process tree: a task Slurm cancels (SIGTERM) ends oslab run with it, which
    // stores what it measured.
    let mut cmd = Command::new(program);
    cmd.arg("run").args(run_args).arg("--db").arg(&db);
    let status = run_contained(&mut cmd, oslab_core::signals::interrupted);
    let why = match (&status, hand_in(&db, &node_file(&dir, &node, false))) {
        // Stored, complete or interrupted: the run speaks for itself.
        (_, Ok(())) => return Ok(status.ok().and_then(|s| s.code()).unwrap_or(0) as u8),
        (Ok(s), Err(e)) => format!("oslab run ended with {s} and left no run to export: {e}"),
        (Err(e), _) => format!("cannot start oslab run: {e}"),
    };
    write_whole(&node_file(&dir, &node, true), format!("{why}\n").as_bytes())
        .map_err(|e| e.to_string())?;
    Err(format!("node {node}: {why}"))
}

fn kernel_hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
}
