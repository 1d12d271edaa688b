//! `oslab fleet summary JOB`: the collected runs of one job side by side.

use crate::cli::FleetSummaryArgs;
use crate::cmd::{print_json, print_text};
use crate::error::usage;
use oslab_fleet::{self as fleet, summarize};
use std::process::ExitCode;

pub fn run(args: FleetSummaryArgs) -> anyhow::Result<ExitCode> {
    let store = crate::cmd::store().open_to_read()?;
    let (job, runs) = fleet::node_runs(&store, &args.job).map_err(|e| match e {
        fleet::NodeRunsError::Ambiguous(m) => usage(m),
        other => other.into(),
    })?;
    if runs.is_empty() {
        return Err(usage(format!(
            "no runs of fleet job {} in {} (collect them first: oslab fleet collect RESULTS/{})",
            args.job,
            store.path().display(),
            args.job
        )));
    }
    let s = summarize(&runs, args.min_effect);
    if args.out.json {
        print_json(&s)?;
        return Ok(ExitCode::SUCCESS);
    }
    let text = oslab_report::views::fleet(&job.to_string(), &s, args.all);
    print_text(&text)?;
    Ok(ExitCode::SUCCESS)
}
