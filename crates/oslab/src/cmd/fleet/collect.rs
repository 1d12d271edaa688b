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
    // Read and validate everything first: all or nothing.
    let jobs = fleet::job_dirs(&args.dir)
        .and_then(|dirs| {
            dirs.iter()
                .map(|(job, dir)| fleet::read_job(job, dir))
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(|e| anyhow::anyhow!("{e}\nNothing was collected."))?;
    let mut store = crate::cmd::store().open()?;
    let mut collected = Vec::new();
    for j in jobs {
        let c = fleet::collect(&mut store, &j)?;
        c.lines(&j).iter().for_each(|l| crate::cmd::say(l));
        collected.push(c.json(&j));
    }
    if args.out.json {
        print_json(&serde_json::json!({"jobs": collected}))?;
    }
    Ok(ExitCode::SUCCESS)
}
