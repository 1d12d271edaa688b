//! `oslab report`: a stored run as an HTML page or a Markdown file with SVG charts, through the
//! same exporters as `oslab export`.

use super::exchange::{exported, write_files};
use crate::cli::ReportArgs;
use oslab_report::export::{exporter, Format, Place};
use std::path::PathBuf;
use std::process::ExitCode;

pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let (doc, files) = exported(&args.run, args.format, &args.store)?;
    let ext = exporter(args.format).extension();
    let path = args.output.clone().unwrap_or_else(|| {
        PathBuf::from(format!(
            "oslab-run-{}.{ext}",
            doc.run.id.unwrap_or_default()
        ))
    });
    write_files(&files, Some(&path))?;
    let charts = files
        .iter()
        .filter(|f| matches!(f.place, Place::Beside(_)))
        .count();
    eprintln!(
        "report written to {}{}",
        path.display(),
        match args.format {
            Format::Md => format!(" with {charts} charts beside it"),
            _ => " (one self-contained file)".into(),
        }
    );
    Ok(ExitCode::SUCCESS)
}
