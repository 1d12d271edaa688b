//! Arguments of the commands that read the store: report, compare, export, import, show.

use crate::export::Format;
use clap::Args;
use oslab_core::args::Output;
use oslab_core::reason::BadValue;
use oslab_store::RunSet;
use std::path::PathBuf;

/// `oslab report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run id or 'latest'; or several, each a run, runs taken together (3,4,5 or 3-5) or
    /// tag:KEY=VALUE, overlaid on the same charts with their comparison (the first is the
    /// baseline; HTML only).
    #[arg(value_name = "RUNS", default_value = "latest")]
    pub runs: Vec<RunSet>,
    /// Output file (default: oslab-run-ID.html or .md; oslab-comparison.html for several); `-`:
    /// standard output (HTML only).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// html (one self-contained file) or md (Markdown with SVG charts beside it); default: the
    /// output's extension (.md: md), else html.
    #[arg(long, value_enum, value_parser = report_format)]
    pub format: Option<Format>,
}

impl ReportArgs {
    /// The format asked, or the one the output file's name says (`-o report.md`), else HTML.
    pub fn format(&self) -> Format {
        self.format
            .unwrap_or_else(|| match self.output.as_ref().and_then(|p| p.extension()) {
                Some(e) if e.eq_ignore_ascii_case("md") || e.eq_ignore_ascii_case("markdown") => {
                    Format::Md
                }
                _ => Format::Html,
            })
    }
}

/// The formats a report is written in.
fn report_format(s: &str) -> Result<Format, BadValue> {
    match s {
        "html" => Ok(Format::Html),
        "md" => Ok(Format::Md),
        _ => Err(format!("{s:?}: html or md").into()),
    }
}

/// `oslab compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline, then what is compared with it. Each side is a run id, 'latest', several runs
    /// taken together (3,4,5 or 3-5) or every run with a tag (tag:kernel=6.18); each run's
    /// repetitions (`run --repeat`) are the replicates.
    #[arg(value_name = "RUNS", required = true)]
    pub sets: Vec<RunSet>,
    /// The baseline, given apart: then every RUNS is compared with it.
    #[arg(long, value_name = "RUNS")]
    pub baseline: Option<RunSet>,
    /// Threshold and history.
    #[command(flatten)]
    pub judging: crate::comparison::Judging,
    /// Exit with status 1 when any measurement regressed beyond the threshold (for CI gates);
    /// with too few repetitions to judge anything, exit with status 2 and say so.
    #[arg(long)]
    pub fail_on_regression: bool,
    /// Show every row (default: those that changed, could not be compared, or, unjudged, moved
    /// beyond the threshold).
    #[arg(long)]
    pub all: bool,
    /// Say how a change is called, and the false alarms measured on identical runs, in full.
    #[arg(long)]
    pub details: bool,
    /// Text or JSON.
    #[command(flatten)]
    pub out: Output,
}

impl CompareArgs {
    /// What the comparison's text shows.
    pub fn view(&self) -> crate::comparison::View {
        crate::comparison::View {
            all: self.all,
            details: self.details,
        }
    }
}

/// `oslab export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Run id, or 'latest'.
    #[arg(value_name = "RUN", default_value = "latest")]
    pub run: String,
    /// The format.
    #[arg(long, value_enum, default_value_t = Format::Json)]
    pub format: Format,
    /// With --format csv: one row per sample (long format) instead of one per measurement.
    #[arg(long)]
    pub samples: bool,
    /// Write to this file instead of standard output (`-`: standard output).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `oslab import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// oslab.run/1 JSON files (from `oslab export`). All are checked before any is stored.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Text or JSON.
    #[command(flatten)]
    pub out: Output,
}

/// `oslab runs`.
#[derive(Debug, Args)]
pub struct RunsArgs {
    /// List the newest N runs (default: 50 as text, every one as JSON).
    #[arg(long, value_name = "N", conflicts_with = "all")]
    pub last: Option<usize>,
    /// List every run.
    #[arg(long)]
    pub all: bool,
    /// Text or JSON.
    #[command(flatten)]
    pub out: Output,
}

/// `oslab show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Run id, or 'latest'.
    #[arg(value_name = "RUN", default_value = "latest")]
    pub run: String,
    /// Include raw samples in the JSON.
    #[arg(long, requires = "json")]
    pub samples: bool,
    /// Every row, the sweeps, the model's reasons and what to do about each warning (the
    /// first view has the headline and a line per probe).
    #[arg(long)]
    pub details: bool,
    /// Predict again with this oslab's model (stored predictions are the model of the day the
    /// run was measured; the core clock and memory it measured are reused).
    #[arg(long)]
    pub repredict: bool,
    /// Text or JSON.
    #[command(flatten)]
    pub out: Output,
}
