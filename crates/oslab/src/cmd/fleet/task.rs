//! `oslab fleet task` (internal): one node's share of a fleet job
//! ([`oslab_fleet::task`]).

use crate::cli::FleetTaskArgs;
use std::process::ExitCode;

pub fn run(args: FleetTaskArgs) -> anyhow::Result<ExitCode> {
    oslab_os::signals::install();
    let program = std::env::current_exe()?;
    let code = oslab_fleet::task::run(
        &program,
        &args.results,
        args.submission.as_deref(),
        &args.run_args,
        |cmd| oslab_os::tree::run_contained(cmd, oslab_os::signals::interrupted),
    );
    if args.staged {
        oslab_fleet::task::remove_staged(&program);
    }
    let (code, handed) = code.map_err(anyhow::Error::msg)?;
    eprintln!(
        "run handed in as {} (the store named above was this node's scratch, now removed)",
        handed.display()
    );
    Ok(ExitCode::from(code))
}
