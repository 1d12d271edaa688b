//! `oslab fleet collect DIR`: every node's result of one submission (DIR = RESULTS/JOB.TOKEN)
//! or of every one (DIR = RESULTS), validated before anything is stored, each stored in one
//! transaction and tagged with its job, submission and node; then every node's state (ok,
//! partial, crashed, failed, missing). Runs already collected are skipped, so collecting again
//! after late nodes finish is safe.

use crate::cli::FleetCollectArgs;
use crate::cmd::print_json;
use oslab_fleet as fleet;
use std::process::ExitCode;

pub fn run(args: FleetCollectArgs) -> anyhow::Result<ExitCode> {
    // Read and validate everything first: a job directory that mixes submissions is refused
    // whole; a node's file that is no valid run is named and left out.
    let jobs = fleet::job_dirs(&args.dir)
        .and_then(|dirs| {
            dirs.iter()
                .map(|(job, dir)| fleet::read_job(job, dir))
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(|e| anyhow::anyhow!("{e}\nNothing was collected."))?;
    let mut store = crate::cmd::store().open()?;
    let mut collected = Vec::new();
    let unreadable: usize = jobs.iter().map(|j| j.unreadable.len()).sum();
    for j in jobs {
        let c = fleet::collect(&mut store, &j)?;
        c.lines(&j).iter().for_each(|l| crate::cmd::say(l));
        collected.push(c.json(&j));
    }
    if args.out.json {
        print_json(&serde_json::json!({"jobs": collected}))?;
    }
    // The other nodes are collected; a result file that is no run is still an error to see.
    if unreadable > 0 {
        crate::cmd::say(&format!(
            "error: {} not collected: {} no valid run (named above)",
            oslab_core::units::counted(unreadable, "node result file"),
            if unreadable == 1 { "it is" } else { "they are" }
        ));
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
