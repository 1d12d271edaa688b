//! `oslab shuffle-eval`: the seed's with/without table for shuffling.

use super::session::Session;
use crate::cli::ShuffleEvalArgs;
use crate::error::usage;
use oslab_core::model::{Measurement, Unit};
use oslab_core::stats::mean_ci95;
use oslab_core::{params, signals, Status};
use oslab_probes::probe::judged;
use oslab_sched::eval::{run_once, workloads, Outcome, Score, Workload};
use oslab_sched::shuffle::domains;
use std::fmt::Write;
use std::process::ExitCode;

pub fn run(args: ShuffleEvalArgs) -> anyhow::Result<ExitCode> {
    let mut session = Session::open(false, None, None, &args.store)?;
    let doms = domains(&session.machine.topology, &session.allowed);
    let threads = args
        .threads
        .map_or(2 * session.allowed.len(), |t| t as usize);
    let me = std::env::current_exe()?.to_string_lossy().to_string();
    let mut list: Vec<Result<Workload, (String, String)>> = if args.command.is_empty() {
        workloads(&me, threads, doms.len())
    } else {
        vec![Ok(Workload {
            name: "command".into(),
            argv: args.command.clone(),
            score: Score::Wall,
            note: None,
        })]
    };
    if !args.workload.is_empty() {
        let names: Vec<String> = list
            .iter()
            .map(|w| w.as_ref().map_or_else(|e| e.0.clone(), |w| w.name.clone()))
            .collect();
        for wanted in &args.workload {
            if !names.contains(wanted) {
                return Err(usage(format!(
                    "no workload {wanted:?}; known: {}",
                    names.join(", ")
                )));
            }
        }
        list.retain(|w| {
            args.workload
                .contains(&w.as_ref().map_or_else(|e| e.0.clone(), |w| w.name.clone()))
        });
    }
    let mut text = format!(
        "{} cache domain(s) among the cpus we may use, {threads} threads per workload, {} runs per mode\n",
        doms.len(),
        args.runs
    );
    if doms.len() < 2 {
        text.push_str("note: with one cache domain, shuffling can only re-pin threads inside it: expect little or no gain here\n");
    }
    let mut ms = Vec::new();
    let mut interrupted = false;
    let mut methods = std::collections::BTreeSet::new();
    'workloads: for w in list {
        let w = match w {
            Ok(w) => w,
            Err((name, why)) => {
                ms.push(Measurement::not_taken(
                    "shuffle-eval",
                    params! {"workload" => name},
                    "time",
                    Unit::Ns,
                    Status::Skipped(why.trim_start_matches("skipped: ").into()),
                ));
                continue;
            }
        };
        let mut runs: [Vec<Outcome>; 2] = [Vec::new(), Vec::new()];
        for r in 0..args.runs as usize {
            let order = if r % 2 == 0 {
                [false, true]
            } else {
                [true, false]
            };
            for shuffle in order {
                match run_once(
                    &w,
                    &doms,
                    args.locks.threshold,
                    args.interval,
                    shuffle,
                    args.locks.method,
                    &signals::interrupted,
                ) {
                    Ok(Some(o)) => {
                        eprintln!(
                            "{} {} run {}/{}: {:.3} s, lock wait {:.1}%, {} shuffles",
                            w.name,
                            mode(shuffle),
                            r + 1,
                            args.runs,
                            o.cost,
                            o.lock_fraction * 100.0,
                            o.shuffles
                        );
                        runs[shuffle as usize].push(o);
                    }
                    Ok(None) => {
                        interrupted = true;
                        break 'workloads;
                    }
                    Err(e) => {
                        ms.push(Measurement::not_taken(
                            "shuffle-eval",
                            params! {"workload" => w.name.clone()},
                            "time",
                            Unit::Ns,
                            Status::Failed(e),
                        ));
                        continue 'workloads;
                    }
                }
            }
        }
        summarise(&mut text, &mut ms, &w, &runs);
        methods.extend(runs.iter().flatten().map(|o| o.method.clone()));
    }
    for m in &methods {
        let _ = writeln!(text, "lock waits measured by {m}");
    }
    session.finish(&ms, &[], interrupted, args.json, Some(text))
}

fn mode(shuffle: bool) -> &'static str {
    if shuffle {
        "with"
    } else {
        "without"
    }
}

fn summarise(text: &mut String, ms: &mut Vec<Measurement>, w: &Workload, runs: &[Vec<Outcome>; 2]) {
    let unit = if w.score == Score::Wall {
        "s"
    } else {
        "s per op"
    };
    for (i, shuffle) in [false, true].into_iter().enumerate() {
        let p = params! {"workload" => w.name.clone(), "mode" => mode(shuffle)};
        let costs: Vec<f64> = runs[i].iter().map(|o| o.cost * 1e9).collect();
        ms.push(judged(
            "shuffle-eval",
            p.clone(),
            "time",
            Unit::Ns,
            &costs,
            Some(format!("{unit} of the workload, one sample per run")),
            None,
        ));
        let locks: Vec<f64> = runs[i].iter().map(|o| o.lock_fraction).collect();
        ms.push(judged(
            "shuffle-eval",
            p.clone(),
            "lock_fraction",
            Unit::Ratio,
            &locks,
            None,
            None,
        ));
        let sh: Vec<f64> = runs[i].iter().map(|o| f64::from(o.shuffles)).collect();
        ms.push(judged(
            "shuffle-eval",
            p,
            "shuffles",
            Unit::Count,
            &sh,
            None,
            None,
        ));
    }
    let reductions: Vec<f64> = runs[0]
        .iter()
        .zip(&runs[1])
        .map(|(a, b)| (a.cost - b.cost) / a.cost)
        .collect();
    let mean = |v: &[Outcome], f: fn(&Outcome) -> f64| {
        v.iter().map(f).sum::<f64>() / v.len().max(1) as f64
    };
    let verdict = match mean_ci95(&reductions) {
        Some((m, lo, hi)) if lo > 0.0 || hi < 0.0 => format!("reduction {:+.1}% (95% interval {:+.1}% .. {:+.1}%): significant", m * 100.0, lo * 100.0, hi * 100.0),
        Some((m, lo, hi)) => format!("reduction {:+.1}% (95% interval {:+.1}% .. {:+.1}%): not significant, within run-to-run noise", m * 100.0, lo * 100.0, hi * 100.0),
        None => "one run per mode: no interval".into(),
    };
    let _ = writeln!(
        text,
        "{:<20} without {:.4} {unit} (lock wait {:.1}%), with {:.4} {unit} ({:.1} shuffles per run): {verdict}",
        w.name,
        mean(&runs[0], |o| o.cost),
        mean(&runs[0], |o| o.lock_fraction) * 100.0,
        mean(&runs[1], |o| o.cost),
        mean(&runs[1], |o| f64::from(o.shuffles)),
    );
    let mut m = judged(
        "shuffle-eval",
        params! {"workload" => w.name.clone()},
        "reduction",
        Unit::Ratio,
        &reductions,
        Some(verdict),
        None,
    );
    m.status = Status::Ok;
    ms.push(m);
}
