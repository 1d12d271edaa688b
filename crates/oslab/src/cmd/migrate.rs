//! `oslab migrate`: the seed's experiment. A matrix multiply runs pinned on CPU A, or moves to B
//! half way; counters per phase; runs interleaved; the migration cost with its uncertainty.

use super::session::Session;
use crate::cli::MigrateArgs;
use crate::error::usage;
use crate::setup::allowed_cpus;
use oslab_core::affinity::AffinityGuard;
use oslab_core::counters::{self, CpuId, Spec};
use oslab_core::model::{Measurement, Unit};
use oslab_core::stats::mean_ci95;
use oslab_core::{params, Status};
use oslab_probes::migration::{distance_class, run_matmul, Kernel, Matmul, RunResult, Variant};
use oslab_probes::probe::judged;
use oslab_probes::ProbeError;
use oslab_report::units::value;
use std::fmt::Write;
use std::process::ExitCode;

pub fn run(args: MigrateArgs) -> anyhow::Result<ExitCode> {
    let cpu = CpuId::read();
    // A preset this CPU has no definition for is reported, not fatal; a misspelled name is.
    let mut specs: Vec<Spec> = Vec::new();
    let mut undefined: Vec<String> = Vec::new();
    for name in args
        .counters
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
    {
        match counters::parse(name, &cpu) {
            Ok(s) => specs.push(s),
            Err(why)
                if counters::preset(name, &cpu).is_err()
                    && ["L2_TCM", "L2_TCA"].contains(&name) =>
            {
                undefined.push(format!("{name}: {why}"))
            }
            Err(why) => return Err(usage(why)),
        }
    }
    let n = args.size as usize;
    let kernels = match args.kernel.as_str() {
        "naive" => vec![Kernel::Naive],
        "blocked" => vec![Kernel::Blocked(args.block as usize)],
        _ => vec![Kernel::Naive, Kernel::Blocked(args.block as usize)],
    };
    let allowed = allowed_cpus()?;
    let from = args.from.clone().unwrap_or_else(|| {
        if allowed.contains(0) {
            0
        } else {
            allowed.first().unwrap_or(0)
        }
        .to_string()
    });
    let mut session = Session::open(false, Some(&from), args.to.as_deref(), &args.store)?;
    let a = session.cpu;
    let b = match (args.to.as_ref(), session.peer_cpu) {
        (Some(_), Some(p)) => p,
        _ => farthest(&session, a).ok_or_else(|| {
            usage(format!(
                "only cpu {a} is in our affinity mask: there is nowhere to migrate to"
            ))
        })?,
    };
    let class = distance_class(&session.machine.topology, a, b);
    let _restore = AffinityGuard::pin_current(&session.allowed)?;
    let mut text = format!(
        "{n}x{n} matrix multiply, A = cpu {a}, B = cpu {b} ({class}), {} runs per kernel and variant, pinned and migrated alternating\n",
        args.runs
    );
    let mut measurements = Vec::new();
    let mut interrupted = false;
    let mut m = Matmul::new(n);
    // Say so before work that takes long: every run is two multiplies per kernel.
    let estimate: f64 = kernels
        .iter()
        .map(|&k| m.estimate_seconds(k) * 2.0 * args.runs as f64)
        .sum();
    if estimate > 60.0 {
        eprintln!(
            "note: this takes about {:.0} minutes here ({} runs x pinned and migrated x {} kernel(s) of a {n}x{n} multiply); Ctrl-C stops it between rows and keeps the runs that completed",
            estimate / 60.0,
            args.runs,
            kernels.len()
        );
    }
    'kernels: for kernel in kernels {
        let mut runs: [Vec<RunResult>; 2] = [Vec::new(), Vec::new()];
        for r in 0..args.runs as usize {
            // Alternate which variant goes first, so drift hits both alike.
            let order = if r % 2 == 0 {
                [Variant::Pinned, Variant::Migrated]
            } else {
                [Variant::Migrated, Variant::Pinned]
            };
            for variant in order {
                match run_matmul(&mut m, kernel, variant, a, b, &specs) {
                    Ok(res) => {
                        eprintln!(
                            "{} {} run {}/{}: {:.3} s",
                            kernel.name(),
                            variant.name(),
                            r + 1,
                            args.runs,
                            res.seconds()
                        );
                        runs[(variant == Variant::Migrated) as usize].push(res);
                    }
                    Err(ProbeError::Interrupted) => {
                        interrupted = true;
                        break 'kernels;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        }
        report(
            &mut text,
            &mut measurements,
            &specs,
            kernel,
            n,
            (a, b, class),
            &runs,
        );
    }
    let group = counters::Group::open(&specs, counters::Target::ThisThread);
    let missing: Vec<String> = undefined
        .into_iter()
        .chain(
            group
                .unavailable()
                .iter()
                .map(|u| format!("{}: {}", u.name, u.reason)),
        )
        .collect();
    if !missing.is_empty() {
        let _ = writeln!(
            text,
            "\ncounters not measured here:\n  {}",
            missing.join("\n  ")
        );
    }
    session.finish(&measurements, &[], interrupted, args.json, Some(text))
}

/// A signed time for people: "+1.23 ms", "-450 µs".
fn signed(ns: f64) -> String {
    let sign = if ns < 0.0 { "-" } else { "+" };
    format!("{sign}{}", value(ns.abs(), Unit::Ns))
}

/// The allowed CPU farthest from `a`: other node, other package, other L3, other L2, sibling.
fn farthest(session: &Session, a: usize) -> Option<usize> {
    let topo = &session.machine.topology;
    session.allowed.iter().filter(|&c| c != a).max_by_key(|&c| {
        let node = topo.cpu(a).map(|x| x.node) != topo.cpu(c).map(|x| x.node);
        (node, topo.distance_rank(a, c), std::cmp::Reverse(c))
    })
}

/// Prints the per-run table and averages, and adds the measurements of one kernel.
fn report(
    text: &mut String,
    out: &mut Vec<Measurement>,
    specs: &[Spec],
    kernel: Kernel,
    n: usize,
    (a, b, class): (usize, usize, &str),
    runs: &[Vec<RunResult>; 2],
) {
    let block = match kernel {
        Kernel::Blocked(bs) => bs,
        Kernel::Naive => 0,
    };
    let _ = writeln!(
        text,
        "\n{} kernel{}:\n  {:<9} {:>3} {:>10} {:>16} {:>16} {:>14} {:>14}",
        kernel.name(),
        if block > 0 {
            format!(" (block {block})")
        } else {
            String::new()
        },
        "variant",
        "run",
        "time",
        "phase 1 (cpu)",
        "phase 2 (cpu)",
        "L2 miss rate 1",
        "L2 miss rate 2"
    );
    let rate = |r: &RunResult, p: usize| {
        let get = |name: &str| {
            r.phases[p]
                .counters
                .iter()
                .find(|c| c.name == name)
                .map(|c| c.value)
        };
        match (get("L2_TCM"), get("L2_TCA")) {
            (Some(m), Some(t)) if t > 0.0 => Some(m / t),
            _ => None,
        }
    };
    for (v, variant) in [Variant::Pinned, Variant::Migrated].into_iter().enumerate() {
        for (i, r) in runs[v].iter().enumerate() {
            let phase = |p: usize| {
                format!(
                    "{} ({})",
                    value(r.phases[p].seconds * 1e9, Unit::Ns),
                    r.phases[p].cpu.map_or("?".into(), |c| c.to_string())
                )
            };
            let fmt_rate = |p| rate(r, p).map_or("-".into(), |x| format!("{:.4}", x));
            let _ = writeln!(
                text,
                "  {:<9} {:>3} {:>10} {:>16} {:>16} {:>14} {:>14}",
                variant.name(),
                i + 1,
                value(r.seconds() * 1e9, Unit::Ns),
                phase(0),
                phase(1),
                fmt_rate(0),
                fmt_rate(1)
            );
        }
        let base = params! {
            "kernel" => kernel.name(), "block" => block, "size" => n, "variant" => variant.name(),
            "from" => a, "to" => if variant == Variant::Migrated { b } else { a }, "class" => class,
        };
        let moves: Vec<f64> = runs[v]
            .iter()
            .filter_map(|r| r.moves)
            .map(|n| n as f64)
            .collect();
        if !moves.is_empty() {
            let note =
                Some("cpu-migrations counted across the move between the halves".to_string());
            out.push(judged(
                "migrate",
                base.clone(),
                "moves",
                Unit::Count,
                &moves,
                note,
                None,
            ));
        }
        let ns =
            |f: &dyn Fn(&RunResult) -> f64| runs[v].iter().map(|r| f(r) * 1e9).collect::<Vec<_>>();
        out.push(judged(
            "migrate",
            base.clone(),
            "time",
            Unit::Ns,
            &ns(&|r| r.seconds()),
            None,
            None,
        ));
        for p in 0..2 {
            let metric = format!("phase{}_time", p + 1);
            out.push(judged(
                "migrate",
                base.clone(),
                &metric,
                Unit::Ns,
                &ns(&|r| r.phases[p].seconds),
                None,
                None,
            ));
            for spec in specs {
                let readings: Vec<_> = runs[v]
                    .iter()
                    .filter_map(|r| r.phases[p].counters.iter().find(|c| c.name == spec.name))
                    .collect();
                if readings.is_empty() {
                    continue;
                }
                let values: Vec<f64> = readings.iter().map(|c| c.value).collect();
                let on_pmu = readings.iter().map(|c| c.running).fold(1.0, f64::min);
                let mut note = spec.origin.clone();
                if on_pmu < 0.999 {
                    note.push_str(&format!(
                        "; multiplexed: on the PMU {:.0}% of the time at worst, values scaled by enabled/running",
                        on_pmu * 100.0
                    ));
                }
                let metric = format!("{} phase{}", spec.name, p + 1);
                out.push(judged(
                    "migrate",
                    base.clone(),
                    &metric,
                    Unit::Count,
                    &values,
                    Some(note),
                    None,
                ));
            }
            let rates: Vec<f64> = runs[v].iter().filter_map(|r| rate(r, p)).collect();
            if !rates.is_empty() {
                let metric = format!("L2 miss rate phase{}", p + 1);
                out.push(judged(
                    "migrate",
                    base.clone(),
                    &metric,
                    Unit::Ratio,
                    &rates,
                    None,
                    None,
                ));
            }
        }
    }
    let mean = |v: &[RunResult]| v.iter().map(|r| r.seconds()).sum::<f64>() / v.len().max(1) as f64;
    let (pinned, migrated) = (mean(&runs[0]), mean(&runs[1]));
    let diffs: Vec<f64> = runs[1]
        .iter()
        .zip(&runs[0])
        .map(|(m, p)| (m.seconds() - p.seconds()) * 1e9)
        .collect();
    let _ = writeln!(
        text,
        "  mean: pinned {}, migrated {}; migration cost (mean difference) {}",
        value(pinned * 1e9, Unit::Ns),
        value(migrated * 1e9, Unit::Ns),
        signed((migrated - pinned) * 1e9)
    );
    let params = params! {"kernel" => kernel.name(), "block" => block, "size" => n, "from" => a, "to" => b, "class" => class};
    let mut cost = judged(
        "migrate",
        params,
        "migration_cost",
        Unit::Ns,
        &diffs,
        None,
        None,
    );
    let verdict = match mean_ci95(&diffs) {
        Some((_, lo, hi)) if lo > 0.0 || hi < 0.0 => format!(
            "significant: the 95% interval of the mean paired difference ({} .. {}) excludes 0",
            signed(lo),
            signed(hi)
        ),
        Some((_, lo, hi)) => format!(
            "not significant at {} runs: the 95% interval of the mean paired difference ({} .. {}) includes 0, so the difference is within run-to-run noise",
            diffs.len(),
            signed(lo),
            signed(hi)
        ),
        None => "one run per variant: no interval (use --runs 5 or more)".to_string(),
    };
    let _ = writeln!(text, "  {verdict}");
    cost.note = Some(format!("paired runs (migrated - pinned); {verdict}"));
    if cost.status == Status::Noisy {
        cost.status = Status::Ok; // the interval says how sure we are; noise is the subject
    }
    out.push(cost);
}
