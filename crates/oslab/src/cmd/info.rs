//! `oslab info`.

use super::{print_json, print_text};
use crate::cli::InfoArgs;
use oslab_core::counters;
use oslab_core::machine::Machine;
use std::process::ExitCode;
use std::time::Duration;

pub fn run(args: InfoArgs) -> anyhow::Result<ExitCode> {
    let m = Machine::read(Duration::from_millis(200))?;
    let counters = args
        .counters
        .then(|| counters::availability(&counters::CpuId::read()));
    if args.json {
        print_json(&serde_json::json!({
            "fingerprint": m.fingerprint,
            "environment": m.environment,
            "counters": counters,
        }))?;
    } else {
        print_text(&oslab_report::machine::info(&m.fingerprint, &m.environment))?;
        if let Some(c) = counters {
            print_text(&oslab_report::machine::counters(&c))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
