//! `oslab fleet submit`: checks the run arguments here (a typo should not cost a queue wait),
//! picks the nodes, writes the batch script and the job's manifest, submits, prints the job id.

use crate::cli::{Cli, FleetSubmitArgs, Stage};
use crate::error::usage;
use clap::Parser;
use oslab_core::files::write_whole;
use oslab_core::signals;
use oslab_store::fleet::slurm::{self, ScriptOptions};
use oslab_store::fleet::MANIFEST;
use std::process::ExitCode;
use std::time::Duration;

pub fn run(args: FleetSubmitArgs) -> anyhow::Result<ExitCode> {
    check_run_args(&args.run_args)?;
    // Every value that goes into an #SBATCH line follows Slurm's syntax, or nothing is written.
    if let Some(p) = &args.partition {
        slurm::check_partition(p).map_err(usage)?;
    }
    if let Some(t) = &args.time {
        slurm::check_time(t).map_err(usage)?;
    }
    if args.nodes != "all" {
        slurm::check_hostlist(&args.nodes).map_err(usage)?;
    }
    let results = std::path::absolute(&args.results)?;
    if results.to_string_lossy().chars().any(char::is_whitespace) {
        return Err(usage(format!(
            "--results {}: Slurm's #SBATCH --output cannot hold a path with spaces",
            results.display()
        )));
    }
    let (nodelist, names) = if args.nodes == "all" {
        let listed = slurm::partition_nodes(args.partition.as_deref());
        if let (Err(e), true) = (&listed, args.dry_run) {
            // A dry run needs no cluster: the script is shown with the node list that sinfo
            // would give at submit time left open.
            eprintln!("note: {e}; the node list sinfo gives at submit time is left open below");
            let binary = std::env::current_exe()?.canonicalize()?;
            let script = script_of(&args, &results, &binary, OPEN_NODELIST, None);
            print!("{script}");
            return Ok(ExitCode::SUCCESS);
        }
        let (ok, skipped) = listed?;
        for (n, state) in &skipped {
            eprintln!("leaving out node {n}: {state}");
        }
        if ok.is_empty() {
            anyhow::bail!(
                "no usable node in partition {}",
                args.partition.as_deref().unwrap_or("(default)")
            );
        }
        (ok.join(","), Some(ok))
    } else {
        (args.nodes.clone(), slurm::hostnames(&args.nodes))
    };
    let binary = std::env::current_exe()?.canonicalize()?;
    let script = script_of(
        &args,
        &results,
        &binary,
        &nodelist,
        names.as_ref().map(Vec::len),
    );
    if args.dry_run {
        print!("{script}");
        return Ok(ExitCode::SUCCESS);
    }
    std::fs::create_dir_all(&results)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", results.display()))?;
    let script_path = results.join(format!(
        ".oslab-fleet-{}-{}.sbatch",
        oslab_core::time::utc_now().replace(':', ""),
        std::process::id()
    ));
    write_whole(&script_path, script.as_bytes())?;
    let job = slurm::submit(&script_path)?;
    let job_dir = results.join(&job);
    std::fs::create_dir_all(&job_dir)?;
    let manifest = serde_json::json!({
        "job": job,
        "nodes": names.clone().unwrap_or_default(),
        "nodelist": nodelist,
        "run_args": args.run_args,
        "submitted": oslab_core::time::utc_now(),
        "binary": binary,
        "script": script,
    });
    write_whole(
        &job_dir.join(MANIFEST),
        serde_json::to_string_pretty(&manifest)?.as_bytes(),
    )?;
    let _ = std::fs::remove_file(&script_path);
    if args.json {
        crate::cmd::print_json(&serde_json::json!({
            "job": job, "results": job_dir, "nodes": names.clone().unwrap_or_else(|| vec![nodelist.clone()]),
        }))?;
    } else {
        println!("{job}");
    }
    eprintln!(
        "submitted fleet job {job} on {}; results in {}\nthen: oslab fleet collect {} && oslab fleet summary {job}",
        names.map_or(nodelist.clone(), |n| format!("{} node(s)", n.len())),
        job_dir.display(),
        job_dir.display()
    );
    if args.wait {
        signals::install();
        while slurm::in_queue(&job) {
            if signals::interrupted() {
                eprintln!("stopped waiting; job {job} keeps running (scancel {job} stops it)");
                return Ok(ExitCode::from(130));
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        eprintln!("job {job} has left the queue");
    }
    Ok(ExitCode::SUCCESS)
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

/// What a dry run without Slurm's clients writes where the node list goes.
const OPEN_NODELIST: &str = "NODES-FROM-SINFO";

/// The batch script for these arguments and nodes.
fn script_of(
    args: &FleetSubmitArgs,
    results: &std::path::Path,
    binary: &std::path::Path,
    nodelist: &str,
    node_count: Option<usize>,
) -> String {
    slurm::script(&ScriptOptions {
        partition: args.partition.as_deref(),
        nodelist,
        node_count,
        exclusive: !args.shared,
        time: args.time.as_deref(),
        results,
        binary,
        sbcast: args.stage == Stage::Sbcast,
        run_args: &args.run_args,
    })
}
