//! `oslab export` and `oslab import`: runs as files.

use super::open_store;
use crate::cli::{ExportArgs, ImportArgs};
use crate::error::usage;
use oslab_core::files::{write_whole, Links};
use oslab_store::exchange::{self, RunDocument};
use oslab_store::RunRef;
use std::io::Write;
use std::process::ExitCode;

pub fn export(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let run: RunRef = args.run.parse().map_err(usage)?;
    let store = open_store(&args.store)?;
    let (record, ms) = store.load_run(&run)?;
    let timeline = store.load_timeline(&run)?;
    let id = record.id.unwrap_or_default();
    if args.format == "paraver" {
        let base = args
            .output
            .as_ref()
            .ok_or_else(|| usage("--format paraver writes three files: give -o BASE"))?;
        let p = oslab_report::paraver::paraver(&timeline, &record.started, 0, &record.hostname)
            .ok_or_else(|| {
                usage(format!(
                    "run {id} has no threads-on-cpus timeline (runs of `oslab cpuman` have one)"
                ))
            })?;
        super::write_paraver(base, &p)?;
        return Ok(ExitCode::SUCCESS);
    }
    let bytes = match args.format.as_str() {
        "csv" => exchange::csv(id, &ms).into_bytes(),
        "perfetto" => {
            if timeline.is_empty() {
                anyhow::bail!(
                    "run {id} has no timeline to export (runs of `oslab activity` and `oslab timeslice` have one); use --format json or csv"
                );
            }
            let title = format!("oslab run {id} ({})", record.command);
            serde_json::to_vec(&oslab_report::trace::chrome_trace(&title, &timeline))?
        }
        _ => serde_json::to_vec(&RunDocument::new(record, ms, timeline))?,
    };
    match &args.output {
        Some(path) => write_whole(path, &bytes)?,
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(&bytes)?;
            if !bytes.ends_with(b"\n") {
                out.write_all(b"\n")?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn import(args: ImportArgs) -> anyhow::Result<ExitCode> {
    // Every file is read and validated before the store is touched: all or nothing.
    let docs = args
        .files
        .iter()
        .map(|p| exchange::read_file(p, Links::Follow).map(|d| (p, d)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow::anyhow!("{e}\nNothing was imported."))?;
    let mut store = open_store(&args.store)?;
    for (path, doc) in docs {
        let from = doc.run.id;
        let record = oslab_store::RunRecord {
            id: None,
            ..doc.run
        };
        let id = store.save_run(&record, &doc.measurements, &doc.timeline)?;
        eprintln!(
            "imported {} as run {id} ({} measurements, {} timeline events; host {}, run {} there)",
            path.display(),
            doc.measurements.len(),
            doc.timeline.len(),
            record.hostname,
            from.map_or("?".into(), |i| i.to_string())
        );
    }
    Ok(ExitCode::SUCCESS)
}
