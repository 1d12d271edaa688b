//! `oslab fleet collect DIR`: every node's result of one job (DIR = RESULTS/JOB) or of every job
//! (DIR = RESULTS), validated before anything is stored, each stored in one transaction and
//! tagged with its job and node. Runs already collected are skipped, so collecting again after
//! late nodes finish is safe.

use crate::cli::FleetCollectArgs;
use crate::cmd::print_json;
use oslab_store::fleet;
use std::process::ExitCode;

pub fn run(args: FleetCollectArgs) -> anyhow::Result<ExitCode> {
    // Read and validate everything first: all or nothing.
    let jobs = fleet::job_dirs(&args.dir)
        .and_then(|dirs| {
            dirs.iter()
                .map(|(job, dir)| fleet::read_job(job, dir))
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(|e| anyhow::anyhow!("{e}\nNothing was collected."))?;
    let mut store = args.out.store.open()?;
    let mut collected = Vec::new();
    for j in jobs {
        let c = fleet::collect(&mut store, &j)?;
        collected.push(serde_json::json!({
            "job": j.job,
            "new": c.new.iter().map(|(node, run)| serde_json::json!({"node": node, "run": run})).collect::<Vec<_>>(),
            "already": c.already,
            "failed": j.failed.iter().map(|(node, why)| serde_json::json!({"node": node, "why": why})).collect::<Vec<_>>(),
            "missing": c.missing,
        }));
        let new: Vec<String> = c
            .new
            .iter()
            .map(|(n, id)| format!("{n} (run {id})"))
            .collect();
        eprintln!(
            "job {}: collected {} run(s){}{}",
            j.job,
            new.len(),
            if new.is_empty() {
                String::new()
            } else {
                format!(": {}", new.join(", "))
            },
            match c.already {
                0 => String::new(),
                k => format!("; {k} already in the store"),
            }
        );
        for (node, why) in &j.failed {
            eprintln!("job {}: node {node} failed: {why}", j.job);
        }
        if !c.missing.is_empty() {
            eprintln!(
                "job {}: no result yet from {} (still running, or lost: see slurm-{}.out)",
                j.job,
                c.missing.join(", "),
                j.job
            );
        }
    }
    if args.out.json {
        print_json(&serde_json::json!({"jobs": collected}))?;
    }
    Ok(ExitCode::SUCCESS)
}
