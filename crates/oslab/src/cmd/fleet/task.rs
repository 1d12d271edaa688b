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
        // The copy srun --bcast left on this node, and the private directory the job made for
        // it; the run it started has ended.
        let _ = std::fs::remove_file(&program);
        if let Some(dir) = program.parent() {
            let _ = std::fs::remove_dir(dir);
        }
    }
    let (code, handed) = code.map_err(anyhow::Error::msg)?;
    eprintln!(
        "run handed in as {} (the store named above was this node's scratch, now removed)",
        handed.display()
    );
    Ok(ExitCode::from(code))
}
