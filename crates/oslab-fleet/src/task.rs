//! One node's share of a fleet job, started by srun: `oslab run RUN-ARGS` into a private store
//! in the node's temporary directory, then that run handed in as
//! RESULTS/JOB.TOKEN/node-NAME.json, or node-NAME.failed saying why.

use crate::{hand_in, is_job_id, is_node_name, node_file, JobRef, NodeFile};
use oslab_files::private::PrivateDir;
use oslab_files::write_whole;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;

/// Runs this node's share with `program` (the oslab binary), started by `start` (the CLI's
/// process tree: a task Slurm cancels with SIGTERM ends `oslab run` with it, which stores what it
/// measured), and returns `oslab run`'s exit code (128 + the signal that ended it) and the file
/// its run was handed in as; an error says why the node has no run (also written to its
/// `.failed` file when the results directory can be written).
pub fn run(
    program: &Path,
    results: &Path,
    token: Option<&str>,
    run_args: &[String],
    start: impl FnOnce(&mut Command) -> std::io::Result<std::process::ExitStatus>,
) -> Result<(u8, std::path::PathBuf), String> {
    let job = std::env::var("SLURM_JOB_ID")
        .ok()
        .filter(|j| is_job_id(j))
        .ok_or(
            "oslab fleet task runs inside a Slurm job (no SLURM_JOB_ID); use `oslab fleet submit`",
        )?;
    let node = this_node().ok_or("cannot tell this node's name (SLURMD_NODENAME)")?;
    let submission = JobRef {
        job: job.clone(),
        token: token.map(str::to_string),
    };
    let dir = results.join(submission.to_string());
    // The results directory must be the one every node sees: a node that cannot reach it says
    // so in the job's output, the only place left to say it.
    std::fs::create_dir_all(&dir).map_err(|e| {
        format!(
            "node {node}: cannot create {}: {e} (--results must be on a file system every node mounts at the same path)",
            dir.display()
        )
    })?;
    // Started: from here on a node with no run crashed or was lost, rather than never ran.
    let _ = write_whole(&node_file(&dir, &node, NodeFile::Started), b"");
    // The scratch store lives in a directory of ours alone: another user must not hand in a run
    // as ours, nor read ours, by making its name first.
    let scratch = PrivateDir::new("oslab-fleet").map_err(|e| {
        let why = format!("node {node}: no private scratch directory for its store: {e}");
        let _ = write_whole(
            &node_file(&dir, &node, NodeFile::Failed),
            format!("{why}\n").as_bytes(),
        );
        why
    })?;
    let db = scratch.path().join("run.db");
    let mut cmd = Command::new(program);
    cmd.arg("run").args(run_args).arg("--db").arg(&db);
    let status = start(&mut cmd);
    let handed = node_file(&dir, &node, NodeFile::Run);
    let why = match (&status, hand_in(&db, &handed)) {
        // Stored, complete or interrupted: the run speaks for itself.
        (_, Ok(())) => return Ok((status.ok().map_or(1, |s| exit_code(&s)), handed)),
        (Ok(s), Err(e)) => format!("oslab run ended with {s} and left no run to export: {e}"),
        (Err(e), _) => format!("cannot start oslab run: {e}"),
    };
    write_whole(
        &node_file(&dir, &node, NodeFile::Failed),
        format!("{why}\n").as_bytes(),
    )
    .map_err(|e| e.to_string())?;
    Err(format!("node {node}: {why}"))
}

/// A child's exit as a shell reports it: its code, or 128 + the signal that ended it (a killed
/// run is no success).
fn exit_code(s: &std::process::ExitStatus) -> u8 {
    match (s.code(), s.signal()) {
        (Some(c), _) => c as u8,
        (None, Some(sig)) => 128u8.saturating_add(sig as u8),
        _ => 1,
    }
}

/// This node's name: Slurm's for it, else the kernel's host name; None when neither is a node
/// name.
pub fn this_node() -> Option<String> {
    std::env::var("SLURMD_NODENAME")
        .ok()
        .or_else(kernel_hostname)
        .filter(|n| is_node_name(n))
}

fn kernel_hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
}

/// Removes the copy of the binary that `srun --bcast` staged for this task, and the private
/// directory the job made for it, once the run it started has ended.
pub fn remove_staged(program: &Path) {
    let _ = std::fs::remove_file(program);
    if let Some(dir) = program.parent() {
        let _ = std::fs::remove_dir(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_killed_run_is_no_success() {
        let s = Command::new("sh")
            .args(["-c", "kill -9 $$"])
            .status()
            .unwrap();
        assert_eq!(exit_code(&s), 137);
        let s = Command::new("sh").args(["-c", "exit 3"]).status().unwrap();
        assert_eq!(exit_code(&s), 3);
    }
}
