//! `oslab fleet summary JOB`: the collected runs of one job side by side, and every node's
//! verdict (healthy, busy, outlier, drifted, partial, crashed, failed, missing).

use crate::cli::FleetSummaryArgs;
use crate::cmd::{print_json, print_text};
use crate::error::usage;
use oslab_fleet::{self as fleet, summary::Health, JobSummaryError};
use std::process::ExitCode;

pub fn run(args: FleetSummaryArgs) -> anyhow::Result<ExitCode> {
    let store = crate::cmd::store().open_to_read()?;
    let found = fleet::job_summary(&store, &args.job, args.baseline.as_deref(), args.min_effect);
    let (job, s) = found.map_err(|e| match e {
        JobSummaryError::Usage(m) => usage(m),
        other => other.into(),
    })?;
    if args.drain {
        // Whole lines, never wrapped: they are for a shell.
        let lines = fleet::drain_script(&job, &s);
        crate::cmd::to_stdout(&mut std::io::stdout().lock(), lines.as_bytes())?;
    } else if args.out.json {
        print_json(&s)?;
    } else {
        print_text(&oslab_report::views::fleet(&job.to_string(), &s, args.all))?;
    }
    let sick = s.verdicts.iter().any(|v| v.verdict != Health::Healthy);
    Ok(ExitCode::from(u8::from(args.fail_on_outlier && sick)))
}

/// `oslab fleet history NODE`: its verdict in every collected job, oldest first.
pub fn history(args: crate::cli::FleetHistoryArgs) -> anyhow::Result<ExitCode> {
    let store = crate::cmd::store().open_to_read()?;
    let jobs = fleet::node_history(&store, &args.node, args.min_effect)?;
    match args.out.json {
        true => print_json(&jobs)?,
        false => print_text(&oslab_report::views::fleet_history(&args.node, &jobs))?,
    }
    Ok(ExitCode::SUCCESS)
}
