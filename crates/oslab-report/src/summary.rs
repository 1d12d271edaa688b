//! A run as a person reads it first (`oslab run`, `oslab show`): the headline, one line per
//! probe, what to distrust (one line per cause, naming the probes), the model in a line, the
//! NUMA grid when there is more than one node, and the warnings a line each. Every row, the
//! sweeps and the model's reasons are in `--details`, the report, JSON and CSV.

use crate::table::versus;
use oslab_core::catalog::id;
use oslab_core::model::{Measurement, ModelKind, Status};
use oslab_core::units::{figure, scale_for};
use std::collections::BTreeMap;

/// The probes of `ms` in the order they ran, each with its measurements.
fn by_probe(ms: &[Measurement]) -> Vec<(&str, Vec<&Measurement>)> {
    let mut out: Vec<(&str, Vec<&Measurement>)> = Vec::new();
    for m in ms {
        match out.iter_mut().find(|(p, _)| *p == m.probe) {
            Some((_, v)) => v.push(m),
            None => out.push((&m.probe, vec![m])),
        }
    }
    out
}

/// One line per probe: its main metric (the first it reports), over how many points, the value
/// (or the range of the points' medians), the ratio to the model (or its range) and how many
/// points are not ok.
pub fn probes(ms: &[Measurement]) -> String {
    // A narrow terminal loses what was measured first (the details say it), then the model.
    let mut t = oslab_core::text::Table::new(
        &["probe", "measured", "value", "vs model", "status"],
        &[2, 3],
    )
    .optional(&[1, 3]);
    // The sample counts of the single intervals shown, for what a short-coverage mark means.
    let mut shown = Vec::new();
    for (probe, all) in by_probe(ms) {
        let metric = &all[0].metric;
        let main: Vec<&Measurement> = all
            .iter()
            .copied()
            .filter(|m| &m.metric == metric)
            .collect();
        let valued: Vec<&Measurement> = main
            .iter()
            .copied()
            .filter(|m| m.status.has_value() && m.summary.is_some())
            .collect();
        let medians: Vec<f64> = valued
            .iter()
            .filter(|m| !m.difference_spans_zero())
            .filter_map(|m| m.summary.as_ref().map(|s| s.median))
            .collect();
        // One point's parameters are in the details; several points say what they vary over.
        let measured = match main.len() {
            1 => metric.to_string(),
            n => format!("{metric}, {n} points{}", varying(&main)),
        };
        let value = match (valued.as_slice(), medians.as_slice()) {
            // Differences all within noise of 0.
            ([_, ..], []) => "≈0".to_string(),
            (_, []) => "-".to_string(),
            ([m], [v]) => {
                let (div, sym) = scale_for(m.unit, *v);
                let s = m.summary.as_ref().expect("valued");
                shown.push(s.n);
                format!(
                    "{} {sym} {}",
                    figure(v / div, m.unit),
                    s.relative_interval_text(m.unit)
                )
            }
            (ms, vs) => {
                let lo = vs.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = vs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let (div, sym) = scale_for(ms[0].unit, hi.abs().max(lo.abs()));
                // Differences within noise of 0 have no median shown: the range starts at ≈0.
                let near_zero = valued.len() > vs.len() && lo > 0.0;
                // Points within the printed precision of each other read as one value
                // (timeslice's 4 points read '3.993 – 3.993 ms').
                let one = (hi - lo).abs() <= 5e-4 * hi.abs().max(lo.abs());
                // Ends three orders of magnitude apart each get their own scale (`90.1 ns –
                // 2.19 ms`, not `9.01e-5 – 2.19 ms`).
                let apart = lo > 0.0 && hi / lo > 1e3;
                match (near_zero, one) {
                    (true, _) => format!("≈0 – {} {sym}", figure(hi / div, ms[0].unit)),
                    (false, true) => format!("{} {sym}", figure(hi / div, ms[0].unit)),
                    (false, false) if apart => {
                        let (lo_div, lo_sym) = scale_for(ms[0].unit, lo);
                        format!(
                            "{} {lo_sym} – {} {sym}",
                            figure(lo / lo_div, ms[0].unit),
                            figure(hi / div, ms[0].unit)
                        )
                    }
                    (false, false) => format!(
                        "{} – {} {sym}",
                        figure(lo / div, ms[0].unit),
                        figure(hi / div, ms[0].unit)
                    ),
                }
            }
        };
        t.row(vec![
            probe.to_string(),
            measured,
            value,
            model_range(&valued),
            status_counts(&main),
        ]);
    }
    let table = crate::table::render(&t);
    match oslab_core::stats::short_coverage_note(shown) {
        Some(note) => format!("{table}\n{note}"),
        None => table,
    }
}

/// ", over size" / ", over args": the parameters that differ between the points.
fn varying(ms: &[&Measurement]) -> String {
    let keys: Vec<&str> = ms[0]
        .params
        .keys()
        .filter(|k| ms.iter().any(|m| m.params.get(*k) != ms[0].params.get(*k)))
        .map(String::as_str)
        .collect();
    match keys.as_slice() {
        [] => String::new(),
        [k] => format!(" over {k}"),
        [k, ..] => format!(" over {k}, ..."),
    }
}

/// The ratio to the model of one point, or the range of the points' ratios ("!" when one is
/// far from it).
fn model_range(ms: &[&Measurement]) -> String {
    match ms {
        [m] => versus(m),
        _ => {
            let ratios: Vec<f64> = ms.iter().filter_map(|m| m.efficiency()).collect();
            if ratios.is_empty() {
                return String::new();
            }
            let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            // The `!` goes on the end that is far from the model (the one rule: more than 2x).
            let far = |e: f64| match oslab_core::model::far(e) {
                true => "!",
                false => "",
            };
            let r = |e: f64| match e >= 10.0 {
                true => format!("{e:.0}x{}", far(e)),
                false => format!("{e:.2}x{}", far(e)),
            };
            match (hi - lo) / hi < 0.01 {
                true => r(lo),
                false => format!("{} – {}", r(lo), r(hi)),
            }
        }
    }
}

/// `ok`, or how many points are noisy, tight (busy yet holding), failed or skipped.
fn status_counts(ms: &[&Measurement]) -> String {
    // A busy figure that still holds reads `tight` here as in the headline: one word per row.
    let word = |m: &Measurement| match still_holds(m) {
        true => "tight",
        false => m.status.word(),
    };
    let count = |w: &str| ms.iter().filter(|m| word(m) == w).count();
    let parts: Vec<String> = ["noisy", "tight", "failed", "skipped"]
        .iter()
        .filter_map(|w| match count(w) {
            0 => None,
            n if n == ms.len() => Some(w.to_string()),
            n => Some(format!("{n} {w}")),
        })
        .collect();
    match parts.is_empty() {
        true => "ok".into(),
        false => parts.join(", "),
    }
}

/// What to distrust, one line per cause: noisy results by their cause, then failed and skipped
/// ones by their reason, each naming the probes it affects.
pub fn distrust(ms: &[Measurement]) -> String {
    let mut causes: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut holding: BTreeMap<String, usize> = BTreeMap::new();
    for m in ms {
        let key = match &m.status {
            Status::Ok => continue,
            Status::Noisy(oslab_core::model::Cause::Unknown) => "noisy".to_string(),
            Status::Noisy(c) => format!("noisy ({c})"),
            Status::Failed(why) => format!("failed: {}", first_clause(why)),
            Status::Skipped(why) => format!("skipped: {}", first_clause(why)),
        };
        *counts.entry(key.clone()).or_default() += 1;
        if still_holds(m) {
            *holding.entry(key.clone()).or_default() += 1;
        }
        let probes = causes.entry(key).or_default();
        if !probes.contains(&m.probe.as_str()) {
            probes.push(&m.probe);
        }
    }
    causes
        .iter()
        .map(|(key, probes)| {
            let n = counts[key];
            let shown: Vec<&str> = probes.iter().take(6).copied().collect();
            let more = match probes.len() > shown.len() {
                true => format!(" and {} more", probes.len() - shown.len()),
                false => String::new(),
            };
            let holds = match holding.get(key) {
                Some(k) => format!(
                    "; {k} of them within ±{:.0}% on a core at full speed: measured while busy yet tight, those figures likely hold",
                    HOLDS * 100.0
                ),
                None => String::new(),
            };
            format!(
                "  {key}: {n} row{} of {}{more}{holds}\n",
                if n == 1 { "" } else { "s" },
                shown.join(", ")
            )
        })
        .collect()
}

/// How tight a contended figure's interval must be (relative, by its farther end) to still hold.
const HOLDS: f64 = 0.02;

/// Whether a figure measured while other work competed still holds: its interval within
/// [`HOLDS`] of the median and the core at full speed around its samples. On a busy host most
/// rows are `noisy (contention)`; these are the ones a reader can still use.
pub fn still_holds(m: &Measurement) -> bool {
    let contended = m.status.is_contended();
    let tight = m
        .summary
        .as_ref()
        .and_then(|s| s.relative_interval())
        .is_some_and(|r| r <= HOLDS);
    contended && tight && !m.slowed_core()
}

/// A row's status as every table shows it: the word and its cause (`noisy: spread`), and for a
/// busy figure that still holds `noisy: contention, tight` (the headline's `tight`; the details
/// said `noisy: contention` for a row the headline called tight).
pub fn status_text(m: &Measurement) -> String {
    match still_holds(m) {
        true => format!("{}, tight", m.status.short()),
        false => m.status.short(),
    }
}

/// A reason up to its first clause, with the numbers that make every row's text differ left
/// for the details.
fn first_clause(why: &str) -> String {
    let cut = why
        .find(" (")
        .or_else(|| why.find("; "))
        .unwrap_or(why.len());
    why[..cut].to_string()
}

/// The model in a line: the share of spec predictions within 1.25x and 2x of the measured
/// value, apart from the consistency checks composed from the same run's numbers.
pub fn model_line(ms: &[Measurement]) -> String {
    let with = |kind: ModelKind| -> Vec<f64> {
        ms.iter()
            .filter(|m| m.prediction.as_ref().is_some_and(|p| p.kind == kind))
            .filter_map(|m| m.efficiency())
            .collect()
    };
    let within = |v: &[f64], f: f64| v.iter().filter(|e| (1.0 / f..=f).contains(*e)).count();
    let spec = with(ModelKind::Spec);
    let composed = with(ModelKind::Composed);
    if spec.is_empty() && composed.is_empty() {
        return String::new();
    }
    let share = |k: usize, n: usize| 100.0 * k as f64 / n.max(1) as f64;
    // Each clause only where it has something to count ("0 of 0 consistency checks hold").
    let mut said = Vec::new();
    if !spec.is_empty() {
        said.push(format!(
            "{} of {} with a spec prediction {} within 2x of it ({:.0}%), {} within 1.25x ({:.0}%)",
            within(&spec, 2.0),
            oslab_core::units::counted(spec.len(), "value"),
            if spec.len() == 1 { "is" } else { "are" },
            share(within(&spec, 2.0), spec.len()),
            within(&spec, 1.25),
            share(within(&spec, 1.25), spec.len()),
        ));
    }
    if !composed.is_empty() {
        said.push(format!(
            "{} of {} (parts of this run composed) {} within 2x",
            within(&composed, 2.0),
            oslab_core::units::counted(composed.len(), "consistency check"),
            if composed.len() == 1 { "holds" } else { "hold" },
        ));
    }
    format!("model: {}\n", said.join("; "))
}

/// The environment's warnings, a line each (their fixes are in the details).
pub fn warnings(env: &oslab_core::machine::Environment) -> String {
    env.warnings
        .iter()
        .map(|w| format!("  - {}: {}\n", w.kind, first_clause(&w.message)))
        .collect()
}

/// Whether the run measured more than one NUMA node (a 1x1 matrix says nothing).
pub fn several_nodes(ms: &[Measurement]) -> bool {
    let mut nodes: Vec<&serde_json::Value> = ms
        .iter()
        .filter(|m| m.probe == id::NUMA_MATRIX)
        .filter_map(|m| m.params.get("mem_node"))
        .collect();
    nodes.dedup();
    nodes.len() > 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_core::model::{Cause, Unit};
    use oslab_core::{params, Summary};

    #[test]
    fn on_a_busy_machine_the_tight_figures_are_told_apart() {
        let row = |k: usize, samples: &[f64]| {
            let mut m = Measurement::not_taken(
                id::SYSCALL_GETPPID,
                params! {"k" => k},
                "per_call",
                Unit::Ns,
                Status::Noisy(Cause::Contention),
            );
            m.summary = Summary::new(samples);
            m
        };
        let tight: Vec<f64> = (0..40).map(|i| 100.0 + (i % 3) as f64 * 0.1).collect();
        let wide: Vec<f64> = (0..40).map(|i| 100.0 + (i % 7) as f64 * 20.0).collect();
        let text = distrust(&[row(1, &tight), row(2, &wide), row(3, &tight)]);
        assert!(
            text.contains("noisy (contention): 3 rows") && text.contains("2 of them within ±2%"),
            "{text}"
        );
        assert!(!distrust(&[row(2, &wide)]).contains("of them within"));
        // The probe list says of them what the headline does: tight where busy yet tight.
        let list = probes(&[row(1, &tight), row(3, &tight)]);
        assert!(list.contains("tight") && !list.contains("noisy"), "{list}");
        // And every row's table (`show --details`) the same word: one vocabulary.
        let details = crate::views::measurements(&[row(1, &tight), row(2, &wide)]);
        assert!(details.contains("tight"), "{details}");
        assert_eq!(status_text(&row(1, &tight)), "noisy: contention, tight");
        assert_eq!(status_text(&row(2, &wide)), "noisy: contention");
    }

    #[test]
    fn a_range_whose_ends_are_far_apart_scales_each() {
        let point = |k: usize, ns: f64| {
            let mut m = Measurement::not_taken(
                id::SYSCALL_GETPPID,
                params! {"k" => k},
                "per_call",
                Unit::Ns,
                Status::Ok,
            );
            m.summary = Summary::new(&[ns, ns, ns]);
            m
        };
        let list = probes(&[point(1, 90.1), point(2, 2.19e6)]);
        assert!(list.contains("90.1 ns – 2.19 ms"), "{list}");
        assert!(!list.contains("e-"), "{list}");
    }
}
