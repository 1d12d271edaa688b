//! `oslab fleet summary JOB`: the collected runs of one job side by side.

use crate::cli::FleetSummaryArgs;
use crate::cmd::{print_json, print_text};
use crate::error::usage;
use oslab_core::stats::OUTLIER_Z;
use oslab_store::fleet::{self, summarize};
use std::process::ExitCode;

pub fn run(args: FleetSummaryArgs) -> anyhow::Result<ExitCode> {
    let store = args.out.store.open_to_read()?;
    let runs = fleet::node_runs(&store, &args.job)?;
    if runs.is_empty() {
        return Err(usage(format!(
            "no runs of fleet job {} in {} (collect them first: oslab fleet collect RESULTS/{})",
            args.job,
            store.path().display(),
            args.job
        )));
    }
    let s = summarize(&runs);
    if args.out.json {
        print_json(&s)?;
        return Ok(ExitCode::SUCCESS);
    }
    let flagged = s.outlier_nodes();
    let mut text = format!(
        "fleet job {}: {} node(s), {} measurements; deviation from the fleet median, ! = outlier (|robust z| > {OUTLIER_Z}, median/MAD)\n",
        args.job,
        s.nodes.len(),
        s.rows.len()
    );
    if s.nodes.len() < 3 {
        text += "note: outliers need at least 3 nodes; none can be flagged here\n";
    }
    text += &oslab_report::table::fleet(&s, args.all);
    text += &match flagged.len() {
        0 => "\nno outlier nodes".to_string(),
        _ => format!("\noutlier nodes: {}", flagged.join(", ")),
    };
    print_text(&text)?;
    Ok(ExitCode::SUCCESS)
}
