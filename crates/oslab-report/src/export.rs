//! Every way a stored run leaves oslab, one exporter per format behind one trait: the
//! `oslab.run/1` JSON document, CSV, a Perfetto trace of the timeline, a Paraver trace, a
//! self-contained HTML report and Markdown with SVG charts. `oslab export` and `oslab report`
//! both go through [`exporter`]; a new format is one more implementation here.

oslab_core::reason! {
    /// Why a run cannot be written in a format.
    NoExport
}

use crate::{html, paraver, trace};
use oslab_files::{write_set, FileError};
use oslab_store::exchange::{self, RunDocument};
use std::io::Write;
use std::path::Path;

/// The formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Format {
    /// Everything, samples included (schema oslab.run/1).
    Json,
    /// One row per measurement, one column per parameter (tidy).
    Csv,
    /// One row per sample (long), as `--format csv --samples` asks.
    CsvSamples,
    /// The timeline as Chrome trace-event JSON (opens in Perfetto).
    Perfetto,
    /// A CPU-manager timeline as BASE.prv, .pcf and .row (needs an output name).
    Paraver,
    /// One self-contained HTML page with charts.
    Html,
    /// Markdown with SVG charts beside it (needs an output name).
    Md,
}

/// Where a file goes, relative to the output the user named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// The output itself (or standard output when none was named and the format allows it).
    Main,
    /// The output with this extension instead of its own.
    Extension(&'static str),
    /// A file of this name in the output's directory.
    Beside(String),
}

/// One file of an export.
#[derive(Debug, Clone)]
pub struct File {
    /// Where it goes.
    pub place: Place,
    /// What it holds.
    pub bytes: Vec<u8>,
}

impl File {
    fn main(bytes: impl Into<Vec<u8>>) -> File {
        File {
            place: Place::Main,
            bytes: bytes.into(),
        }
    }
}

/// Why an export's files were not written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The output named cannot take them (no such directory; several files and no name).
    #[error("{0}")]
    Misplaced(String),
    /// A file could not be written.
    #[error(transparent)]
    File(#[from] FileError),
    /// Standard output could not be written (a closed pipe, say).
    #[error(transparent)]
    Stdout(std::io::Error),
}

/// Whether an output path names standard output (`-`).
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Writes an export's files: the main one to `output` (to `stdout` when none, or `-`), the
/// others next to it. A missing directory is refused, as the store's location refuses one: a
/// mistyped path must not leave directories behind.
pub fn write(
    files: &[File],
    output: Option<&Path>,
    stdout: &mut dyn Write,
) -> Result<(), WriteError> {
    // `-o -` is standard output, as everywhere.
    let output = output.filter(|p| !is_stdout(p));
    if let Some(dir) = output
        .and_then(Path::parent)
        .filter(|d| !d.as_os_str().is_empty() && !d.is_dir())
    {
        return Err(WriteError::Misplaced(format!(
            "{}: no such directory (create it first)",
            dir.display()
        )));
    }
    let mut named = Vec::new();
    for f in files {
        let path = match (&f.place, output) {
            (Place::Main, None) => {
                let end: &[u8] = if f.bytes.ends_with(b"\n") { b"" } else { b"\n" };
                stdout
                    .write_all(&f.bytes)
                    .and_then(|_| stdout.write_all(end))
                    .map_err(WriteError::Stdout)?;
                continue;
            }
            (Place::Main, Some(p)) => p.to_path_buf(),
            (Place::Extension(ext), Some(p)) => p.with_extension(ext),
            (Place::Beside(name), Some(p)) => p
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .join(name),
            (_, None) => {
                return Err(WriteError::Misplaced(
                    "this format writes several files: give -o BASE".into(),
                ))
            }
        };
        named.push((path, f.bytes.as_slice()));
    }
    // All or none: a report whose figures cannot all be written leaves no half set.
    let set: Vec<(&Path, &[u8])> = named.iter().map(|(p, b)| (p.as_path(), *b)).collect();
    write_set(&set)?;
    Ok(())
}

/// A way to write a run.
pub trait Exporter {
    /// The extension of a default file name.
    fn extension(&self) -> &'static str;
    /// Whether the files need a named output (several files, or a page for a browser).
    fn needs_output(&self) -> bool {
        false
    }
    /// The files, the main one first; or why this run cannot be written so.
    fn export(&self, doc: &RunDocument) -> Result<Vec<File>, NoExport>;
}

/// The exporter of a format.
pub fn exporter(format: Format) -> Box<dyn Exporter> {
    match format {
        Format::Json => Box::new(Json),
        Format::Csv => Box::new(Csv { samples: false }),
        Format::CsvSamples => Box::new(Csv { samples: true }),
        Format::Perfetto => Box::new(Perfetto),
        Format::Paraver => Box::new(Paraver),
        Format::Html => Box::new(Html),
        Format::Md => Box::new(Markdown),
    }
}

fn run_id(doc: &RunDocument) -> i64 {
    doc.run.id.unwrap_or_default()
}

struct Json;
impl Exporter for Json {
    fn extension(&self) -> &'static str {
        "json"
    }
    fn export(&self, doc: &RunDocument) -> Result<Vec<File>, NoExport> {
        let bytes = serde_json::to_vec(doc).map_err(|e| e.to_string())?;
        Ok(vec![File::main(bytes)])
    }
}

struct Csv {
    samples: bool,
}
impl Exporter for Csv {
    fn extension(&self) -> &'static str {
        "csv"
    }
    fn export(&self, doc: &RunDocument) -> Result<Vec<File>, NoExport> {
        let text = match self.samples {
            true => exchange::csv_samples(&doc.run, &doc.measurements),
            false => exchange::csv(&doc.run, &doc.measurements),
        };
        Ok(vec![File::main(text)])
    }
}

struct Perfetto;
impl Exporter for Perfetto {
    fn extension(&self) -> &'static str {
        "json"
    }
    fn export(&self, doc: &RunDocument) -> Result<Vec<File>, NoExport> {
        if doc.timeline.is_empty() {
            return Err(format!(
                "run {} has no timeline to export (runs of `oslab activity` and `oslab timeslice` have one); use --format json or csv",
                run_id(doc)
            ).into());
        }
        let title = format!("oslab run {} ({})", run_id(doc), doc.run.command);
        let bytes = serde_json::to_vec(&trace::chrome_trace(&title, &doc.timeline))
            .map_err(|e| e.to_string())?;
        Ok(vec![File::main(bytes)])
    }
}

struct Paraver;
impl Exporter for Paraver {
    fn extension(&self) -> &'static str {
        "prv"
    }
    fn needs_output(&self) -> bool {
        true
    }
    fn export(&self, doc: &RunDocument) -> Result<Vec<File>, NoExport> {
        // The machine the jobs ran on: a simulated one's size is in its measurements.
        let cpus = doc
            .measurements
            .iter()
            .filter_map(|m| m.params.get("cpus").and_then(|c| c.as_u64()))
            .max()
            .map_or(0, |c| (c as usize).min(paraver::MAX_CPUS));
        let p = paraver::paraver(&doc.timeline, &doc.run.started, cpus, &doc.run.hostname)?
            .ok_or_else(|| {
                format!(
                    "run {} has no threads-on-cpus timeline (runs of `oslab cpuman` have one)",
                    run_id(doc)
                )
            })?;
        Ok(paraver_files(p))
    }
}

/// A Paraver trace as its three files.
pub fn paraver_files(p: paraver::Paraver) -> Vec<File> {
    [("prv", p.prv), ("pcf", p.pcf), ("row", p.row)]
        .into_iter()
        .map(|(ext, body)| File {
            place: Place::Extension(ext),
            bytes: body.into_bytes(),
        })
        .collect()
}

struct Html;
impl Exporter for Html {
    fn extension(&self) -> &'static str {
        "html"
    }
    fn needs_output(&self) -> bool {
        true
    }
    fn export(&self, doc: &RunDocument) -> Result<Vec<File>, NoExport> {
        let page = html::report(&doc.run, &doc.measurements, &doc.timeline);
        Ok(vec![File::main(page)])
    }
}

struct Markdown;
impl Exporter for Markdown {
    fn extension(&self) -> &'static str {
        "md"
    }
    fn needs_output(&self) -> bool {
        true
    }
    fn export(&self, doc: &RunDocument) -> Result<Vec<File>, NoExport> {
        let (text, figures) = crate::markdown::markdown(&doc.run, &doc.measurements, &doc.timeline);
        let mut files = vec![File::main(text)];
        files.extend(figures.into_iter().map(|(name, svg)| File {
            place: Place::Beside(name),
            bytes: svg.into_bytes(),
        }));
        Ok(files)
    }
}
