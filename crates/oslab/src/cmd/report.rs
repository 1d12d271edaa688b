//! `oslab report`: a stored run as an HTML page or a Markdown file with SVG charts.

use super::open_store;
use crate::cli::ReportArgs;
use crate::error::usage;
use oslab_store::RunRef;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let run: RunRef = args.run.parse().map_err(usage)?;
    let store = open_store(&args.store)?;
    let (record, ms) = store.load_run(&run)?;
    let timeline = store.load_timeline(&run)?;
    let id = record.id.unwrap_or_default();
    let md = args.format == "md";
    let path = args.output.clone().unwrap_or_else(|| {
        PathBuf::from(format!("oslab-run-{id}.{}", if md { "md" } else { "html" }))
    });
    if md {
        let (text, figures) = oslab_report::html::markdown(&record, &ms, &timeline);
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        for (name, svg) in &figures {
            write(&dir.join(name), svg.as_bytes())?;
        }
        write(&path, text.as_bytes())?;
        eprintln!(
            "report written to {} with {} charts beside it",
            path.display(),
            figures.len()
        );
    } else {
        write(
            &path,
            oslab_report::html::report(&record, &ms, &timeline).as_bytes(),
        )?;
        eprintln!(
            "report written to {} (one self-contained file)",
            path.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn write(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    Ok(oslab_core::files::write_whole(path, bytes)?)
}
