//! `oslab fleet task` (internal): one node's share of a fleet job, started by srun. Runs
//! `oslab run RUN-ARGS` into a private store in the node's temporary directory, then hands that
//! run in as RESULTS/JOB/node-NAME.json, or node-NAME.failed saying why.

use crate::cli::FleetTaskArgs;
use oslab_core::files::write_whole;
use oslab_store::fleet::{self, is_job_id, is_node_name, node_file};
use std::process::{Command, ExitCode};

pub fn run(args: FleetTaskArgs) -> anyhow::Result<ExitCode> {
    let job = std::env::var("SLURM_JOB_ID")
        .ok()
        .filter(|j| is_job_id(j))
        .ok_or_else(|| {
            anyhow::anyhow!("oslab fleet task runs inside a Slurm job (no SLURM_JOB_ID); use `oslab fleet submit`")
        })?;
    let node = std::env::var("SLURMD_NODENAME")
        .ok()
        .or_else(kernel_hostname)
        .filter(|n| is_node_name(n))
        .ok_or_else(|| anyhow::anyhow!("cannot tell this node's name (SLURMD_NODENAME)"))?;
    let dir = args.results.join(&job);
    std::fs::create_dir_all(&dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    let db = std::env::temp_dir().join(format!("oslab-fleet-{job}-{node}.db"));
    fleet::remove_store_files(&db);
    let status = Command::new(std::env::current_exe()?)
        .arg("run")
        .args(&args.run_args)
        .arg("--db")
        .arg(&db)
        .status();
    let why = match (&status, fleet::hand_in(&db, &node_file(&dir, &node, false))) {
        // Stored, complete or interrupted: the run speaks for itself.
        (_, Ok(())) => {
            return Ok(ExitCode::from(
                status.ok().and_then(|s| s.code()).unwrap_or(0) as u8,
            ))
        }
        (Ok(s), Err(e)) => format!("oslab run ended with {s} and left no run to export: {e}"),
        (Err(e), _) => format!("cannot start oslab run: {e}"),
    };
    write_whole(&node_file(&dir, &node, true), format!("{why}\n").as_bytes())?;
    anyhow::bail!("node {node}: {why}")
}

fn kernel_hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
}
