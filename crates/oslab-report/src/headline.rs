//! The lines a person quotes from a run, first: timer, system call, context switches, process and
//! thread creation, latency per cache level and of DRAM, bandwidth, page faults.

use oslab_core::catalog::{Headline, HEADLINE};
use oslab_core::model::Measurement;
use oslab_core::text::Table;
use oslab_core::units::{num, scale_for};

/// The measurement a headline names, if the run has it.
fn find<'a>(ms: &'a [Measurement], line: &Headline) -> Option<&'a Measurement> {
    let want = line.params;
    let matching: Vec<&Measurement> = ms
        .iter()
        .filter(|m| m.probe == line.probe && m.metric == line.metric && m.summary.is_some())
        .filter(|m| {
            want.iter()
                .all(|(k, v)| *v == "max" || m.param_text(k) == *v)
        })
        .collect();
    match want.iter().find(|(_, v)| *v == "max") {
        Some((k, _)) => matching
            .into_iter()
            .max_by_key(|m| m.params.get(*k).and_then(|v| v.as_u64()).unwrap_or(0)),
        None => matching.into_iter().next(),
    }
}

/// The headline table of a run, or None when it holds fewer than two of the lines. A figure
/// partly from a cache (a `--quick` run's small arrays) is marked `*`: [`notes`] says why.
pub fn table(ms: &[Measurement]) -> Option<Table> {
    // An 80-column terminal keeps the value, its interval (relative: it reads the same at any
    // scale), its ratio to the model and the status; a wider one adds the prediction. Why a
    // figure is noisy is said under the table ([`notes`]), the same at every width.
    let mut t = Table::new(
        &["", "median", "CI95", "predicted", "vs model", "status"],
        &[1, 2, 3, 4],
    )
    .optional(&[3]);
    for line in HEADLINE {
        let Some(m) = find(ms, line) else { continue };
        let Some(s) = m.summary.as_ref().filter(|_| m.status.has_value()) else {
            // Failed: no number, the word (its reason is with the details).
            t.row(vec![
                label(line, m),
                "-".into(),
                String::new(),
                String::new(),
                String::new(),
                m.status.word().into(),
            ]);
            continue;
        };
        let (div, sym) = scale_for(m.unit, s.median);
        let name = match partly_cached(m) {
            Some(_) => format!("{} *", label(line, m)),
            None => label(line, m),
        };
        t.row(vec![
            name,
            format!("{} {sym}", s.median_text(div, m.unit))
                .trim_end()
                .to_string(),
            s.relative_interval_text(m.unit),
            m.prediction.as_ref().map_or_else(
                || "no model".into(),
                |p| {
                    format!("{} {sym}", num(p.value / div))
                        .trim_end()
                        .to_string()
                },
            ),
            // Against figures composed from the run's others: a check, not a prediction (the
            // mark is on the ratio, which every width shows).
            match composed(m) {
                true => format!("{}{FROM_RUN}", crate::table::versus(m)),
                false => crate::table::versus(m),
            },
            // Busy, yet tight on a full-speed core: the figure a busy host can still use, said
            // where every width shows it.
            match crate::summary::still_holds(m) {
                true => TIGHT.to_string(),
                false => m.status.word().to_string(),
            },
        ]);
    }
    (t.rows.len() >= 2).then_some(t)
}

/// A headline's label, with its parent's resident size where the figure depends on it.
fn label(line: &Headline, m: &Measurement) -> String {
    match m
        .context
        .get(oslab_core::model::PARENT_RESIDENT)
        .and_then(|v| v.as_u64())
    {
        Some(b) => format!(
            "{}, {:.0} MiB parent",
            line.label,
            b as f64 / f64::from(1 << 20)
        ),
        None => line.label.to_string(),
    }
}

/// Why a headline figure is partly a cache's (the level its probe found), if it is.
fn partly_cached(m: &Measurement) -> Option<&str> {
    m.context
        .get(oslab_core::beyond_cache::MARK)
        .and_then(|v| v.as_str())
}

/// The status of a busy figure that still holds (noisy, yet tight).
const TIGHT: &str = "tight";

/// Marks a ratio to a figure composed from the run's other figures.
const FROM_RUN: &str = "†";

/// Whether `m`'s model is composed from the run's other figures (or a kernel count), not the
/// machine's specifications.
fn composed(m: &Measurement) -> bool {
    m.prediction
        .as_ref()
        .is_some_and(|p| p.kind != oslab_core::model::ModelKind::Spec)
}

/// The footnotes of [`table`]: what a `*` means and what "tight" does, once each, or nothing.
pub fn notes(ms: &[Measurement]) -> String {
    let tight = HEADLINE
        .iter()
        .filter_map(|line| find(ms, line))
        .any(crate::summary::still_holds);
    let tight = match tight {
        true => "tight: noisy (other work ran), yet within ±2% on a full-speed core: it holds, unless the load is in the figure\n",
        false => "",
    };
    let composed = HEADLINE
        .iter()
        .filter_map(|line| find(ms, line))
        .any(|m| m.status.has_value() && composed(m));
    let composed = match composed {
        true => "† against this run's other figures composed (a consistency check), not a prediction from the machine's specifications\n",
        false => "",
    };
    let coverage = oslab_core::stats::short_coverage_note(
        HEADLINE
            .iter()
            .filter_map(|line| find(ms, line))
            .filter(|m| m.status.has_value())
            .filter_map(|m| m.summary.as_ref().map(|s| s.n)),
    )
    .map(|note| note + "\n")
    .unwrap_or_default();
    format!(
        "{}{}{tight}{composed}{coverage}",
        noisy_note(ms),
        cache_note(ms)
    )
}

/// Why each noisy headline figure is noisy: a line per cause, its figures.
fn noisy_note(ms: &[Measurement]) -> String {
    let mut by_cause: Vec<(oslab_core::model::Cause, Vec<String>)> = Vec::new();
    for (line, m) in HEADLINE
        .iter()
        .filter_map(|line| Some((line, find(ms, line)?)))
        .filter(|(_, m)| !crate::summary::still_holds(m))
    {
        if let oslab_core::Status::Noisy(cause) = &m.status {
            if *cause == oslab_core::model::Cause::Unknown {
                continue;
            }
            match by_cause.iter_mut().find(|(c, _)| c == cause) {
                Some((_, names)) => names.push(label(line, m)),
                None => by_cause.push((cause.clone(), vec![label(line, m)])),
            }
        }
    }
    by_cause
        .iter()
        .map(|(cause, names)| format!("noisy ({cause}): {}\n", names.join("; ")))
        .collect()
}

/// What a `*` means, once, or nothing.
fn cache_note(ms: &[Measurement]) -> String {
    let marked: Vec<&str> = HEADLINE
        .iter()
        .filter_map(|line| find(ms, line))
        .filter(|m| m.status.has_value())
        .filter_map(partly_cached)
        .collect();
    match marked.first() {
        Some(level) => format!(
            "* {level}: partly the cache's bandwidth, not the memory's alone (`--details`: the arrays' size)\n"
        ),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_core::model::{Status, Unit};
    use oslab_core::{params, Summary};

    fn m(
        probe: &str,
        metric: &str,
        params: serde_json::Map<String, serde_json::Value>,
        v: f64,
    ) -> Measurement {
        let mut m = Measurement::not_taken(probe, params, metric, Unit::GBps, Status::Ok);
        m.summary = Summary::new(&[v, v, v]);
        m
    }

    #[test]
    fn headlines_pick_their_measurement_and_the_most_threads() {
        let ms = vec![
            m(
                "bandwidth.threads",
                "bandwidth",
                params! {"kernel" => "triad", "stores" => "plain", "threads" => 1},
                10.0,
            ),
            m(
                "bandwidth.threads",
                "bandwidth",
                params! {"kernel" => "triad", "stores" => "plain", "threads" => 8},
                80.0,
            ),
            m(
                "bandwidth.stream",
                "bandwidth",
                params! {"kernel" => "read", "stores" => "plain"},
                12.0,
            ),
        ];
        let t = table(&ms).unwrap();
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.rows[0][0], "read bandwidth, 1 thread");
        assert_eq!(t.rows[1][1], "80.0 GB/s");
        assert!(table(&ms[..1]).is_none());
        // Arrays too small for RAM alone: the name says the figure is partly the cache's.
        let mut small = ms.clone();
        small[2] = small[2]
            .clone()
            .found("level", oslab_core::beyond_cache::PARTLY_CACHE);
        let t = table(&small).unwrap();
        assert_eq!(t.rows[0][0], "read bandwidth, 1 thread *");
        assert!(notes(&small).starts_with("* working set under 4x the LLC: partly the cache's"));
        // Three values each: their range, said once to cover the median 75% of the time.
        assert_eq!(
            notes(&ms),
            "‡ the range of 3 values, which holds the median 75% of the time, not 95%\n"
        );
        // Busy: a tight figure is told from a spread one, and the notes say what tight means.
        let mut busy = ms.clone();
        for m in &mut busy {
            m.status = Status::Noisy(oslab_core::model::Cause::Contention);
        }
        busy[1].summary = Summary::new(&[60.0, 80.0, 100.0, 70.0, 90.0]);
        let t = table(&busy).unwrap();
        assert_eq!(
            (t.rows[0][5].as_str(), t.rows[1][5].as_str()),
            ("tight", "noisy")
        );
        // Why the noisy one is noisy is said under the table, the same at every width; the
        // tight one is not listed there.
        let said = notes(&busy);
        let first = said.lines().next().unwrap();
        assert_eq!(
            first, "noisy (contention): triad bandwidth, all threads",
            "{said}"
        );
        assert!(said.contains("\ntight: noisy (other work ran)"), "{said}");
        // A prediction composed from the run says so; one from the specs does not.
        let mut checked = ms.clone();
        let p = |kind| {
            let mut p = oslab_core::model::Prediction::new(9.0, "m", serde_json::Map::new());
            p.kind = kind;
            p
        };
        checked[1].prediction = Some(p(oslab_core::model::ModelKind::Composed));
        checked[2].prediction = Some(p(oslab_core::model::ModelKind::Spec));
        let t = table(&checked).unwrap();
        assert_eq!(
            (t.rows[0][3].as_str(), t.rows[0][4].as_str()),
            ("9.00 GB/s", "1.33x")
        );
        assert_eq!(
            (t.rows[1][3].as_str(), t.rows[1][4].as_str()),
            ("9.00 GB/s", "8.89x!†")
        );
        assert!(notes(&checked).starts_with("† against this run's other figures"));
        assert!(!notes(&ms).contains('†'));
    }
}
