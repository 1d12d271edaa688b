//! `oslab export` and `oslab import`: runs as files.

use super::print_json;
use crate::cli::{ExportArgs, ImportArgs};
use crate::error::usage;
use oslab_report::export::{self, File, Format, WriteError};
use oslab_store::exchange::{self, RunDocument};
use oslab_store::RunRef;
use std::path::Path;
use std::process::ExitCode;

pub fn export(mut args: ExportArgs) -> anyhow::Result<ExitCode> {
    if args.samples {
        if args.format != Format::Csv {
            return Err(usage(
                "--samples goes with --format csv (the JSON export holds every sample already)",
            ));
        }
        args.format = Format::CsvSamples;
    }
    if args.output.is_none() && export::exporter(args.format).needs_output() {
        return Err(usage(format!(
            "--format {} writes files for a viewer, not text: give -o FILE (or -o BASE)",
            format!("{:?}", args.format).to_lowercase()
        )));
    }
    let run: RunRef = args.run.parse().map_err(usage)?;
    let (_, files) = exported(&run, args.format, super::store())?;
    write_files(&files, args.output.as_deref())
}

/// A stored run, loaded whole, and its files in `format`.
pub fn exported(
    run: &RunRef,
    format: Format,
    store: &oslab_store::Location,
) -> anyhow::Result<(RunDocument, Vec<File>)> {
    let run = run.clone();
    let store = store.open_to_read()?;
    let (record, ms) = store.load_run(&run)?;
    let timeline = store.load_timeline(&run)?;
    let doc = RunDocument::new(record, ms, timeline);
    let files = export::exporter(format).export(&doc).map_err(usage)?;
    Ok((doc, files))
}

/// Writes an export's files ([`export::write`]), the main one to standard output when no
/// output is named.
pub fn write_files(files: &[File], output: Option<&Path>) -> anyhow::Result<ExitCode> {
    export::write(files, output, &mut std::io::stdout().lock()).map_err(|e| match e {
        WriteError::Misplaced(m) => usage(m),
        WriteError::Stdout(io) => {
            anyhow::Error::from(io).context("cannot write to standard output")
        }
        other => other.into(),
    })?;
    Ok(ExitCode::SUCCESS)
}

pub fn import(args: ImportArgs) -> anyhow::Result<ExitCode> {
    // Every file is read and validated before the store is touched: all or nothing.
    exchange::check_all(&args.files)?;
    let mut store = super::store().open()?;
    let imported = exchange::import(&mut store, &args.files)?;
    imported
        .iter()
        .for_each(|i| crate::cmd::say(&i.to_string()));
    if args.out.json {
        print_json(&serde_json::json!({"imported": imported}))?;
    }
    Ok(ExitCode::SUCCESS)
}
