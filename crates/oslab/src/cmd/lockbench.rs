//! `oslab lockbench`: [`oslab_shuffle::lockbench`], its time printed as JSON.

use oslab_shuffle::lockbench::{self, Lockbench};
use std::process::ExitCode;

pub fn run(b: Lockbench) -> anyhow::Result<ExitCode> {
    let secs = lockbench::run(&b).map_err(anyhow::Error::msg)?;
    println!(
        "{{\"elapsed_s\": {secs:.6}, \"threads\": {}, \"locks\": {}, \"acquisitions\": {}}}",
        b.threads,
        b.locks,
        b.threads as u64 * b.iterations
    );
    Ok(ExitCode::SUCCESS)
}
