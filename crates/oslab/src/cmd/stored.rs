//! `oslab runs` and `oslab show`: reading the store back.

use super::{print_json, print_text};
use crate::cli::{Output, ShowArgs};
use crate::error::usage;
use oslab_store::exchange::RunDocument;
use oslab_store::RunRef;
use std::process::ExitCode;

pub fn runs(out: Output) -> anyhow::Result<ExitCode> {
    let store = super::store().open_to_read()?;
    let runs = store.runs()?;
    if out.json {
        print_json(&runs)?;
    } else if runs.is_empty() {
        print_text(&format!(
            "no runs in {} yet; `oslab run --quick` makes one",
            store.path().display()
        ))?;
    } else {
        print_text(&oslab_report::views::runs(&runs))?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn show(args: ShowArgs) -> anyhow::Result<ExitCode> {
    let run: RunRef = args.run.parse().map_err(usage)?;
    let store = super::store().open_to_read()?;
    let (record, mut ms) = store.load_run(&run)?;
    // A run stored by an older oslab is held to today's contract too.
    oslab_core::relations::check(&mut ms, Some(record.wall_s * 1e9));
    if !args.samples {
        ms.iter_mut().for_each(|m| m.samples = None);
    }
    if args.out.json {
        let timeline = store.load_timeline(&run)?;
        print_json(&RunDocument::new(record, ms, timeline))?;
    } else {
        print_text(&oslab_report::views::run(&record, &ms, args.details))?;
    }
    Ok(ExitCode::SUCCESS)
}
