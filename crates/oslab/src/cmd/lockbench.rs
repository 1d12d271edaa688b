//! `oslab lockbench`: [`oslab_sched::shuffle::lockbench`], its time printed as JSON.

use crate::cli::LockbenchArgs;
use crate::error::usage;
use oslab_sched::shuffle::lockbench::{self, Lockbench};
use std::process::ExitCode;
use std::time::Duration;

pub fn run(args: LockbenchArgs) -> anyhow::Result<ExitCode> {
    let us = |v: f64, flag: &str| {
        (v.is_finite() && v >= 0.0)
            .then(|| Duration::from_secs_f64(v / 1e6))
            .ok_or_else(|| usage(format!("{flag} must be a non-negative number")))
    };
    let b = Lockbench {
        threads: args.threads as usize,
        locks: args.locks as usize,
        critical: us(args.critical_us, "--critical-us")?,
        noncritical: us(args.noncritical_us, "--noncritical-us")?,
        iterations: args.iterations,
    };
    let secs = lockbench::run(&b).map_err(anyhow::Error::msg)?;
    println!(
        "{{\"elapsed_s\": {secs:.6}, \"threads\": {}, \"locks\": {}, \"acquisitions\": {}}}",
        args.threads,
        args.locks,
        args.threads * args.iterations
    );
    Ok(ExitCode::SUCCESS)
}
