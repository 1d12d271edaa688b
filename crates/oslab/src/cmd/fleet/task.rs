//! `oslab fleet task` (internal): one node's share of a fleet job, started by srun. Runs
//! `oslab run RUN-ARGS` into a private store in the node's temporary directory, then writes that
//! run as RESULTS/JOB/node-NAME.json (through a temporary name), or node-NAME.failed saying why.

use super::{is_job_id, is_node_name, node_file};
use crate::cli::FleetTaskArgs;
use crate::cmd::write_whole;
use oslab_store::exchange::RunDocument;
use oslab_store::{RunRef, Store};
use std::path::Path;
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
    remove_store(&db);
    let status = Command::new(std::env::current_exe()?)
        .arg("run")
        .args(&args.run_args)
        .arg("--db")
        .arg(&db)
        .status();
    let exported = export_latest(&db, &node_file(&dir, &node, false));
    remove_store(&db);
    let why = match (&status, exported) {
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

/// Writes the store's latest run as an oslab.run/1 document.
fn export_latest(db: &Path, to: &Path) -> anyhow::Result<()> {
    let store = Store::open(db)?;
    let (record, ms) = store.load_run(&RunRef::Latest)?;
    let timeline = store.load_timeline(&RunRef::Latest)?;
    write_whole(
        to,
        &serde_json::to_vec(&RunDocument::new(record, ms, timeline))?,
    )
}

/// Removes a store and its WAL files.
fn remove_store(db: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(p);
    }
}

fn kernel_hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
}
