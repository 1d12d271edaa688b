//! `oslab report`: a stored run as an HTML page or a Markdown file with SVG charts, through the
//! same exporters as `oslab export`; or several runs (or groups of runs) overlaid on one page
//! with their comparison.

use super::exchange::{exported, write_files};
use crate::cli::ReportArgs;
use crate::error::usage;
use oslab_report::comparison::Sides;
use oslab_report::export::{exporter, File, Format, Place};
use oslab_store::RunSet;
use std::path::PathBuf;
use std::process::ExitCode;

pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    if let [RunSet::Runs(one)] = &args.runs[..] {
        if let [run] = &one[..] {
            return single(&args, run);
        }
    }
    if args.format() != Format::Html {
        return Err(usage(
            "several runs are reported on one HTML page: write it to an .html file (--format html)",
        ));
    }
    let store = super::store().open_to_read()?;
    let sides = Sides::load(&store, args.runs.clone(), &Default::default())?;
    let comparisons = sides.comparisons();
    if let Some(why) = comparisons
        .iter()
        .find_map(oslab_report::comparison::Comparison::unrelated)
    {
        return Err(usage(why));
    }
    let page = oslab_report::html::comparison_report(&sides.drawn(), &comparisons);
    let path = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from("oslab-comparison.html"));
    write_files(
        &[File {
            place: Place::Main,
            bytes: page.into_bytes(),
        }],
        Some(&path),
    )?;
    if oslab_report::export::is_stdout(&path) {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "report of {} written to {} (one self-contained file)",
        args.runs
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(" vs "),
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn single(args: &ReportArgs, run: &oslab_store::RunRef) -> anyhow::Result<ExitCode> {
    let (doc, files) = exported(run, args.format(), super::store())?;
    let ext = exporter(args.format()).extension();
    let path = args.output.clone().unwrap_or_else(|| {
        PathBuf::from(format!(
            "oslab-run-{}.{ext}",
            doc.run.id.unwrap_or_default()
        ))
    });
    write_files(&files, Some(&path))?;
    if oslab_report::export::is_stdout(&path) {
        return Ok(ExitCode::SUCCESS);
    }
    let charts = files
        .iter()
        .filter(|f| matches!(f.place, Place::Beside(_)))
        .count();
    eprintln!(
        "report written to {}{}",
        path.display(),
        match args.format() {
            Format::Md => format!(" with {charts} charts beside it"),
            _ => " (one self-contained file)".into(),
        }
    );
    Ok(ExitCode::SUCCESS)
}
