//! `oslab info`.

use super::{print_json, print_text};
use crate::cli::InfoArgs;
use crate::setup::Machine;
use std::process::ExitCode;
use std::time::Duration;

pub fn run(args: InfoArgs) -> anyhow::Result<ExitCode> {
    let m = Machine::read(Duration::from_millis(200))?;
    if args.json {
        print_json(&serde_json::json!({
            "fingerprint": m.fingerprint,
            "environment": m.environment,
        }))?;
    } else {
        print_text(&oslab_report::machine::info(&m.fingerprint, &m.environment))?;
    }
    Ok(ExitCode::SUCCESS)
}
