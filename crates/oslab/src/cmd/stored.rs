//! `oslab runs` and `oslab show`: reading the store back.

use super::{open_store, print_json, print_text};
use crate::cli::{RunsArgs, ShowArgs};
use crate::error::usage;
use oslab_core::machine::Environment;
use oslab_core::model::Measurement;
use oslab_store::exchange::RunDocument;
use oslab_store::{RunRecord, RunRef};
use std::process::ExitCode;

pub fn runs(args: RunsArgs) -> anyhow::Result<ExitCode> {
    let store = open_store(&args.store)?;
    let runs = store.runs()?;
    if args.json {
        print_json(&runs)?;
    } else if runs.is_empty() {
        print_text(&format!(
            "no runs in {} yet; `oslab run --quick` makes one",
            store.path().display()
        ))?;
    } else {
        print_text(&oslab_report::table::runs(&runs))?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn show(args: ShowArgs) -> anyhow::Result<ExitCode> {
    let run: RunRef = args.run.parse().map_err(usage)?;
    let store = open_store(&args.store)?;
    let (record, mut ms) = store.load_run(&run)?;
    if !args.samples {
        ms.iter_mut().for_each(|m| m.samples = None);
    }
    if args.json {
        let timeline = store.load_timeline(&run)?;
        print_json(&RunDocument::new(record, ms, timeline))?;
    } else {
        print_text(&render_run(&record, &ms))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A run as text: header, table, warnings.
pub fn render_run(record: &RunRecord, ms: &[Measurement]) -> String {
    let mut out = format!(
        "run {}  {}  {}  host {}  oslab {}{}  wall {:.1} s\n{}\n",
        record
            .id
            .map(|i| i.to_string())
            .unwrap_or_else(|| "-".into()),
        record.started,
        record.status.as_str(),
        record.hostname,
        record.oslab_version,
        record
            .git_rev
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default(),
        record.wall_s,
        record.command,
    );
    if let Some(clock) = record
        .fingerprint
        .get("clock")
        .and_then(|c| serde_json::from_value::<oslab_core::Clock>(c.clone()).ok())
    {
        out.push_str(&format!("clock: {}\n", clock.describe()));
    }
    match record.status {
        oslab_store::RunStatus::Crashed => out.push_str(&format!(
            "crashed: the process that measured this run no longer exists (killed, out of memory, or the machine went down); it holds the {} measurements of the probes that completed\n",
            ms.len()
        )),
        oslab_store::RunStatus::Running => out.push_str(&format!(
            "running: still being measured; {} measurements so far\n",
            ms.len()
        )),
        _ => {}
    }
    out.push_str(&oslab_report::table::measurements(ms));
    out.push('\n');
    if let Some(matrix) = oslab_report::numa::matrix(ms) {
        out.push('\n');
        out.push_str(&matrix);
    }
    if let Ok(env) = serde_json::from_value::<Environment>(record.environment.clone()) {
        if !env.warnings.is_empty() {
            out.push_str("\nenvironment warnings (they affect these numbers):\n");
            out.push_str(&oslab_report::machine::warnings(&env));
        }
    }
    out
}
