//! `oslab fleet summary JOB`: the collected runs of one job side by side, and every node's
//! verdict (healthy, busy, outlier, drifted, partial, crashed, failed, missing).

use crate::cli::FleetSummaryArgs;
use crate::cmd::{print_json, print_text};
use crate::error::usage;
use oslab_fleet::{self as fleet, summary::Health, JobSummaryError};
use std::process::ExitCode;

pub fn run(args: FleetSummaryArgs) -> anyhow::Result<ExitCode> {
    let store = crate::cmd::store().open_to_read()?;
    let against = fleet::Against {
        baseline: args.baseline.clone(),
        reference: args.reference.clone(),
    };
    let found = fleet::job_summary(&store, &args.job, &against, args.effect.min_effect);
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
    let jobs = fleet::node_history(&store, &args.node, args.effect.min_effect)?;
    match args.out.json {
        true => print_json(&jobs)?,
        false => print_text(&oslab_report::views::fleet_history(&args.node, &jobs))?,
    }
    // The node as its latest job left it: a script acts on the code.
    let sick = jobs.last().is_some_and(|j| j.verdict != Health::Healthy);
    Ok(ExitCode::from(u8::from(sick)))
}

/// `oslab fleet reference save JOB --name NAME`: the job's healthy nodes kept as a reference.
pub fn reference(args: crate::cli::FleetReferenceArgs) -> anyhow::Result<ExitCode> {
    let crate::cli::FleetReferenceCommand::Save(a) = args.command;
    let mut store = crate::cmd::store().open()?;
    let saved =
        fleet::reference::save(&mut store, &a.job, &a.name, a.effect.min_effect).map_err(|e| {
            match e {
                JobSummaryError::Usage(m) => usage(m),
                other => other.into(),
            }
        })?;
    match a.out.json {
        true => print_json(&saved)?,
        false => print_text(&oslab_report::views::reference_saved(&saved))?,
    }
    Ok(ExitCode::SUCCESS)
}
