//! `oslab compare`: a baseline side against one or more others, each side one or more runs.

use super::{print_json, print_text};
use crate::cli::CompareArgs;
use crate::error::usage;
use oslab_report::comparison::{self, Comparison, Gate, Sides};
use std::process::ExitCode;

pub fn run(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let sets = match (&args.baseline, args.sets.len()) {
        (Some(b), _) => std::iter::once(b.clone()).chain(args.sets.clone()).collect(),
        (None, 2..) => args.sets.clone(),
        (None, _) => {
            return Err(usage(
                "compare needs a baseline and at least one side to compare with it (or --baseline RUNS)",
            ))
        }
    };
    let store = super::store().open_to_read()?;
    let sides = Sides::load(&store, sets, &args.judging)?;
    let comparisons = sides.comparisons();
    if let Some(why) = comparisons.iter().find_map(Comparison::unrelated) {
        return Err(usage(why));
    }
    if args.out.json {
        print_json(&serde_json::json!({
            "schema": "oslab.compare/2",
            "threshold": args.judging.threshold,
            "comparisons": comparisons.iter().map(Comparison::json).collect::<Vec<_>>(),
        }))?;
    } else {
        let texts: Vec<String> = comparisons.iter().map(|c| c.text(args.view())).collect();
        print_text(&texts.join("\n"))?;
    }
    if !args.fail_on_regression {
        return Ok(ExitCode::SUCCESS);
    }
    match comparison::gate(&comparisons) {
        Gate::Pass => Ok(ExitCode::SUCCESS),
        Gate::Regressed(n) => {
            eprintln!(
                "{n} measurements regressed beyond {:.1}%",
                args.judging.threshold * 100.0
            );
            Ok(ExitCode::from(1))
        }
        Gate::Unjudged => {
            let notes: Vec<String> = comparisons.iter().flat_map(Comparison::notes).collect();
            super::say(&format!(
                "error: --fail-on-regression: no measurement could be judged. {}",
                notes.join(" ")
            ));
            Ok(ExitCode::from(2))
        }
    }
}
