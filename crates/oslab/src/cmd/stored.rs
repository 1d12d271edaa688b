//! `oslab runs` and `oslab show`: reading the store back.

use super::{print_json, print_text};
use crate::cli::{RunsArgs, ShowArgs};
use crate::error::usage;
use oslab_store::exchange::RunDocument;
use oslab_store::RunRef;
use std::process::ExitCode;

/// The newest runs a text listing shows unless asked for more.
const LISTED: usize = 50;

pub fn runs(args: RunsArgs) -> anyhow::Result<ExitCode> {
    let store = super::store().open_to_read()?;
    let limit = match (args.all, args.last) {
        (true, _) => None,
        (false, Some(n)) => Some(n),
        (false, None) => (!args.out.json).then_some(LISTED),
    };
    let (runs, total) = store.newest_runs(limit)?;
    if args.out.json {
        print_json(&runs)?;
    } else if runs.is_empty() {
        print_text(&format!(
            "no runs in {} yet; `oslab run --quick` makes one",
            store.path().display()
        ))?;
    } else {
        let mut text = oslab_report::views::runs(&runs);
        if runs.len() < total {
            text = format!(
                "{}\nthe newest {} of {total} runs (--last N or --all for more)",
                text.trim_end(),
                runs.len()
            );
        }
        print_text(&text)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn show(args: ShowArgs) -> anyhow::Result<ExitCode> {
    let run: RunRef = args.run.parse().map_err(usage)?;
    let store = super::store().open_to_read()?;
    // The samples only when asked for: a run of a million measurements held with them took
    // 5x its export's size to show.
    let (record, mut ms) = match args.samples {
        true => store.load_run(&run)?,
        false => store.load_run_summaries(&run)?,
    };
    if args.repredict {
        oslab_model::repredict(&record.fingerprint, &mut ms).map_err(anyhow::Error::msg)?;
    }
    // A run stored by an older oslab is held to today's contract too.
    oslab_core::relations::check(&mut ms, Some(record.wall_s * 1e9));
    if args.out.json {
        let timeline = store.load_timeline(&run)?;
        print_json(&RunDocument::new(record, ms, timeline))?;
    } else {
        let (version, rev) = (env!("CARGO_PKG_VERSION"), env!("OSLAB_GIT_REV"));
        let note = args
            .repredict
            .then(|| oslab_report::views::repredicted(version, rev));
        let text = oslab_report::views::run(&record, &ms, args.details);
        print_text(&(note.unwrap_or_default() + &text))?;
    }
    Ok(ExitCode::SUCCESS)
}
