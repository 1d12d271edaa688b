//! `oslab fleet submit`: checks the run arguments here (a typo should not cost a queue wait),
//! then [`oslab_fleet::submit`] picks the nodes, writes the batch script and the job's
//! manifest and submits; prints the job id, and waits if asked.

use crate::cli::{Cli, FleetSubmitArgs};
use crate::error::usage;
use clap::Parser;
use oslab_fleet::slurm;
use oslab_fleet::submit::SubmitError;
use oslab_os::signals;
use std::process::ExitCode;
use std::time::Duration;

pub fn run(args: FleetSubmitArgs) -> anyhow::Result<ExitCode> {
    check_run_args(&args.run_args)?;
    let binary = std::env::current_exe()?.canonicalize()?;
    let plan = args
        .request
        .plan(&binary, &args.run_args, args.dry_run)
        .map_err(|e| match e {
            SubmitError::Invalid(m) => usage(m),
            other => other.into(),
        })?;
    if let Some(why) = &plan.open {
        eprintln!("note: {why}; the node list sinfo gives at submit time is left open below");
    }
    for (n, state) in &plan.skipped {
        // A node just resumed reads idle* until its slurmd answers: a job given it may wait
        // for as long as it never does. The user who knows it will answer names it.
        let why = if state.ends_with('*') {
            " (not responding to the controller; name it in --nodes to wait for it)"
        } else {
            ""
        };
        crate::cmd::say(&format!("leaving out node {n}: {state}{why}"));
    }
    if args.dry_run {
        print!("{}", plan.script);
        return Ok(ExitCode::SUCCESS);
    }
    let (job, job_dir) = plan.submit()?;
    let nodes = plan.names.clone();
    if args.json {
        crate::cmd::print_json(&serde_json::json!({
            "job": job.job, "submission": job.token, "results": job_dir,
            "output": plan.output(&job),
            "nodes": nodes.clone().unwrap_or_else(|| vec![plan.nodelist.clone()]),
        }))?;
    } else {
        println!("{}", job.job);
    }
    eprintln!(
        "submitted fleet job {} on {}; results in {}\nthen: oslab fleet collect {} && oslab fleet summary {}",
        job.job,
        nodes.map_or(plan.nodelist.clone(), |n| format!("{} node(s)", n.len())),
        job_dir.display(),
        job_dir.display(),
        job.job
    );
    if !args.wait {
        return Ok(ExitCode::SUCCESS);
    }
    signals::install();
    while slurm::in_queue(&job.job) {
        if signals::interrupted() {
            eprintln!(
                "stopped waiting; job {} keeps running (scancel {} stops it)",
                job.job, job.job
            );
            return Ok(ExitCode::from(oslab_os::signals::exit_status()));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let (ok, lines) = oslab_fleet::submit::ended(&job, &job_dir, &plan.output(&job));
    lines.iter().for_each(|l| eprintln!("{l}"));
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The run arguments must parse as `oslab run` arguments, and leave the store to the task.
fn check_run_args(run_args: &[String]) -> anyhow::Result<()> {
    for a in run_args {
        if a == "--db" || a.starts_with("--db=") || a == "--json" {
            return Err(usage(format!(
                "{a} is chosen by fleet (each node writes its own store and exports JSON)"
            )));
        }
    }
    let argv = ["oslab", "run"]
        .into_iter()
        .map(String::from)
        .chain(run_args.iter().cloned());
    let cli = Cli::try_parse_from(argv)
        .map_err(|e| usage(format!("the run arguments after --: {}", e.render())))?;
    // The probes must exist, as `oslab run` checks them.
    if let crate::cli::Command::Run(run) = cli.command {
        oslab_probes::registry::select(&run.probes)
            .map_err(|e| usage(format!("the run arguments after --: {e}")))?;
    }
    Ok(())
}
