//! `oslab compare`: a baseline run against one or more others.

use super::{open_store_to_read, print_json, print_text};
use crate::cli::CompareArgs;
use crate::error::usage;
use oslab_core::compare::{compare, Verdict};
use oslab_store::RunRef;
use std::process::ExitCode;

/// Fingerprint fields worth showing when runs come from different machines.
const MACHINE: &[&str] = &[
    "hostname",
    "cpu_model",
    "microcode",
    "kernel",
    "governor",
    "threads",
];

pub fn run(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let store = open_store_to_read(&args.store)?;
    let base_ref: RunRef = args.a.parse().map_err(usage)?;
    let (base, base_ms) = store.load_run(&base_ref)?;
    let mut regressions = 0;
    let mut json = Vec::new();
    let mut text = String::new();
    for other in &args.others {
        let r: RunRef = other.parse().map_err(usage)?;
        let (run, ms) = store.load_run(&r)?;
        let rows = compare(&base_ms, &ms, args.threshold);
        regressions += rows
            .iter()
            .filter(|r| r.verdict == Verdict::Regression)
            .count();
        let differs: Vec<String> = MACHINE
            .iter()
            .filter(|k| base.fingerprint.get(**k) != run.fingerprint.get(**k))
            .map(|k| {
                format!(
                    "  {k}: {} -> {}",
                    base.fingerprint.get(*k).unwrap_or(&serde_json::Value::Null),
                    run.fingerprint.get(*k).unwrap_or(&serde_json::Value::Null)
                )
            })
            .collect();
        text.push_str(&format!(
            "run {} ({}) vs run {} ({}), threshold {:.1}%, significance: Mann-Whitney p < {}\n",
            base.id.unwrap_or_default(),
            base.started,
            run.id.unwrap_or_default(),
            run.started,
            args.threshold * 100.0,
            oslab_core::compare::ALPHA
        ));
        if !differs.is_empty() {
            text.push_str(&format!(
                "different machines or settings:\n{}\n",
                differs.join("\n")
            ));
        }
        let shown: Vec<_> = rows
            .iter()
            .filter(|r| args.all || r.verdict != Verdict::Same)
            .cloned()
            .collect();
        text.push_str(&oslab_report::table::comparison(&shown));
        let count = |v: Verdict| rows.iter().filter(|r| r.verdict == v).count();
        text.push_str(&format!(
            "\n{} compared: {} regressions, {} better, {} changed within the threshold, {} same, {} not comparable{}\n\n",
            rows.len(),
            count(Verdict::Regression),
            count(Verdict::Better),
            count(Verdict::Changed),
            count(Verdict::Same),
            count(Verdict::Unknown),
            if args.all { "" } else { " (--all shows the unchanged rows)" }
        ));
        json.push(serde_json::json!({"a": base.id, "b": run.id, "rows": rows}));
    }
    if args.json {
        print_json(
            &serde_json::json!({"schema": "oslab.compare/1", "threshold": args.threshold, "comparisons": json}),
        )?;
    } else {
        print_text(&text)?;
    }
    if args.fail_on_regression && regressions > 0 {
        eprintln!(
            "{regressions} measurements regressed beyond {:.1}%",
            args.threshold * 100.0
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
