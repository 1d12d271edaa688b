//! `oslab compare`: a baseline side against one or more others, each side one or more runs; and
//! the sides as `oslab report` overlays them.

use super::{open_store_to_read, print_json, print_text};
use crate::cli::CompareArgs;
use crate::error::usage;
use oslab_core::compare::{compare, Drift, Verdict};
use oslab_core::model::Measurement;
use oslab_report::comparison::{Comparison, Side};
use oslab_store::{Loaded, RunRecord, RunRef, RunSet, Store};
use std::process::ExitCode;

/// Earlier runs looked at, at most, for the drift between runs.
const HISTORY_RUNS: usize = 20;

/// Sides loaded from the store: the baseline first; and the drift between runs of its machine.
pub struct Sides {
    sets: Vec<RunSet>,
    loaded: Vec<Loaded>,
    drift: Drift,
}

fn measurements(runs: &Loaded) -> Vec<&[Measurement]> {
    runs.iter().map(|(_, m)| &m[..]).collect()
}

impl Sides {
    /// Loads `sets` (the baseline first) and the history: `history` when given, none with
    /// `no_history`, else recent runs of the baseline's machine.
    pub fn load(
        store: &Store,
        sets: Vec<RunSet>,
        history: Option<&RunSet>,
        no_history: bool,
    ) -> anyhow::Result<Sides> {
        let loaded = sets
            .iter()
            .map(|s| store.load_set(s))
            .collect::<Result<Vec<_>, _>>()?;
        let compared: Vec<i64> = loaded.iter().flatten().filter_map(|(r, _)| r.id).collect();
        let history = match history {
            _ if no_history => None,
            Some(set) => Some(store.load_set(set)?),
            None => Some(same_machine(store, &loaded[0][0].0, &compared)?),
        };
        let drift = match history {
            None => Drift::default(),
            Some(runs) => {
                let runs: Loaded = runs
                    .into_iter()
                    .filter(|(r, _)| r.id.is_none_or(|id| !compared.contains(&id)))
                    .collect();
                Drift::from_runs(&measurements(&runs))
            }
        };
        Ok(Sides {
            sets,
            loaded,
            drift,
        })
    }

    /// Every side after the first compared with the first.
    pub fn comparisons(&self, threshold: f64) -> Vec<Comparison<'_>> {
        let side = |i: usize| Side {
            set: self.sets[i].to_string(),
            runs: &self.loaded[i],
        };
        (1..self.sets.len())
            .map(|i| Comparison {
                rows: compare(
                    &measurements(&self.loaded[0]),
                    &measurements(&self.loaded[i]),
                    threshold,
                    &self.drift,
                ),
                a: side(0),
                b: side(i),
                threshold,
                history: self.drift.learnt.then_some(self.drift.runs),
            })
            .collect()
    }

    /// Each side as a report draws it: its name, its first run, its measurements pooled.
    pub fn drawn(&self) -> Vec<(String, &RunRecord, Vec<Measurement>)> {
        self.sets
            .iter()
            .zip(&self.loaded)
            .map(|(set, runs)| {
                let all: Vec<Measurement> = runs.iter().flat_map(|(_, m)| m.clone()).collect();
                (
                    set.to_string(),
                    &runs[0].0,
                    oslab_core::repetitions::pooled(&all),
                )
            })
            .collect()
    }
}

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
    let store = open_store_to_read(&args.store)?;
    let sides = Sides::load(&store, sets, args.history.as_ref(), args.no_history)?;
    let comparisons = sides.comparisons(args.threshold);
    if args.json {
        print_json(&serde_json::json!({
            "schema": "oslab.compare/2",
            "threshold": args.threshold,
            "comparisons": comparisons.iter().map(Comparison::json).collect::<Vec<_>>(),
        }))?;
    } else {
        let texts: Vec<String> = comparisons.iter().map(|c| c.text(args.all)).collect();
        print_text(&texts.join("\n"))?;
    }
    if !args.fail_on_regression {
        return Ok(ExitCode::SUCCESS);
    }
    let regressions: usize = comparisons
        .iter()
        .map(|c| c.count(Verdict::Regression))
        .sum();
    let judged = comparisons
        .iter()
        .flat_map(|c| &c.rows)
        .any(|r| !matches!(r.judgement.verdict, Verdict::RatioOnly | Verdict::Unknown));
    if regressions > 0 {
        eprintln!(
            "{regressions} measurements regressed beyond {:.1}%",
            args.threshold * 100.0
        );
        return Ok(ExitCode::from(1));
    }
    if !judged {
        eprintln!("error: --fail-on-regression: no measurement could be judged: too few repetitions (3 a side: `oslab run --repeat 3`) or, for a single run, too few earlier runs of this machine in the store to show how far its runs drift apart (keep 3, or give several runs a side)");
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}

/// Recent runs of the machine and suite (`--quick` or not) of `like`, newest first, none of
/// `compared`: what this machine does between runs when nothing changed.
fn same_machine(store: &Store, like: &RunRecord, compared: &[i64]) -> anyhow::Result<Loaded> {
    let cpu = |r: &RunRecord| r.fingerprint.get("cpu_model").cloned();
    let mut out = Vec::new();
    for summary in store.runs()? {
        if out.len() == HISTORY_RUNS {
            break;
        }
        if summary.hostname != like.hostname || compared.contains(&summary.id) {
            continue;
        }
        let (record, ms) = store.load_run_summaries(&RunRef::Id(summary.id))?;
        if record.quick == like.quick && cpu(&record) == cpu(like) {
            out.push((record, ms));
        }
    }
    Ok(out)
}
