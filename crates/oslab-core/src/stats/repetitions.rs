//! Repetitions of one measurement (`oslab run --repeat`, or several runs taken together) shown
//! as one, for tables and charts: comparisons use them one by one ([`crate::stats::compare`]).

use crate::model::{Measurement, Status};
use crate::stats::median;

/// `ms` with the repetitions of each measurement (same probe, parameters and metric) pooled
/// into one, in order of first appearance; `ms` itself when none repeats (no copy: a run of
/// a million measurements was held twice to show).
pub fn pooled(ms: &[Measurement]) -> std::borrow::Cow<'_, [Measurement]> {
    // Grouped by hash: a linear search made `show` of a 40,000-row run take 33 s.
    let mut at: std::collections::HashMap<(&str, &str, String), usize> = Default::default();
    let mut groups: Vec<Vec<&Measurement>> = Vec::new();
    for m in ms {
        let key = (m.probe.as_str(), m.metric.as_str(), m.params_key());
        match at.get(&key) {
            Some(&g) => groups[g].push(m),
            None => {
                at.insert(key, groups.len());
                groups.push(vec![m]);
            }
        }
    }
    if groups.len() == ms.len() {
        return std::borrow::Cow::Borrowed(ms);
    }
    groups.iter().map(|g| pool(g)).collect()
}

/// Repetitions of one measurement as one: the median of their medians, with an interval that
/// spans theirs (so it shows the drift between them, not only the noise within each).
pub fn pool(reps: &[&Measurement]) -> Measurement {
    let mut out = reps[0].clone();
    if reps.len() == 1 {
        return out;
    }
    let valued: Vec<&Measurement> = reps
        .iter()
        .copied()
        .filter(|m| m.status.has_value() && m.summary.is_some())
        .collect();
    let Some(first) = valued.first() else {
        return out;
    };
    let of = |f: fn(&crate::Summary) -> f64| -> Vec<f64> {
        valued
            .iter()
            .filter_map(|m| m.summary.as_ref().map(f))
            .collect()
    };
    let fold =
        |v: Vec<f64>, pick: fn(f64, f64) -> f64| v.into_iter().reduce(pick).unwrap_or(f64::NAN);
    let mut s = first.summary.clone().expect("filtered on summary");
    s.n = valued
        .iter()
        .filter_map(|m| m.summary.as_ref())
        .map(|s| s.n)
        .sum();
    s.median = median(&of(|s| s.median)).unwrap_or(s.median);
    s.p25 = median(&of(|s| s.p25)).unwrap_or(s.p25);
    s.p75 = median(&of(|s| s.p75)).unwrap_or(s.p75);
    s.min = fold(of(|s| s.min), f64::min);
    s.max = fold(of(|s| s.max), f64::max);
    s.ci_low = fold(of(|s| s.ci_low), f64::min);
    s.ci_high = fold(of(|s| s.ci_high), f64::max);
    let means = of(|s| s.mean);
    s.mean = means.iter().sum::<f64>() / means.len() as f64;
    let variances = of(|s| s.stddev * s.stddev);
    s.stddev = (variances.iter().sum::<f64>() / variances.len() as f64).sqrt();
    s.outliers = valued
        .iter()
        .filter_map(|m| m.summary.as_ref())
        .map(|s| s.outliers)
        .sum();
    out.summary = Some(s);
    out.cycles = median(&valued.iter().filter_map(|m| m.cycles).collect::<Vec<_>>());
    out.status = pooled_status(reps, &valued, out.summary.as_ref().expect("set above"));
    out.samples = None;
    out.attempts = reps.iter().map(|m| m.attempts).max().unwrap_or(1);
    let pooled = format!(
        "median of {} repetitions ({} with a value), interval spanning theirs",
        reps.len(),
        valued.len()
    );
    out.note = Some(match &first.note {
        Some(n) => format!("{pooled}; {n}"),
        None => pooled,
    });
    out
}

/// One status for a measurement's repetitions, judged on the interval shown for them (the one
/// vocabulary of every view): a condition one of them was measured under (contention, a slowed
/// core) stays said; repetitions each tight but whose medians lie apart beyond the noise bar are
/// `noisy: repetitions` (a pooled -51% interval read `ok`), as are repetitions of which one has
/// no value; otherwise ok, even where one repetition alone was noisy by its spread but the
/// pooled interval is within the bar (every headline row of a quiet `--repeat 3` run read
/// noisy, even getppid ±0.01%).
fn pooled_status(
    reps: &[&Measurement],
    valued: &[&Measurement],
    pooled: &crate::Summary,
) -> Status {
    use crate::model::Cause;
    if valued.len() < reps.len() {
        return Status::Noisy(Cause::Repetitions);
    }
    let condition = valued.iter().find_map(|m| match &m.status {
        Status::Noisy(c) if c.is_condition() => Some(c.clone()),
        _ => None,
    });
    if let Some(c) = condition {
        return Status::Noisy(c);
    }
    let rule = crate::stats::NoiseRule::default();
    let wide = |s: &crate::Summary| s.is_noisy_at_scale(rule, s.median.abs());
    // Judged by the median's bar only where each repetition was (a distribution, a paired
    // difference judged against its scale, are ok whatever their spread).
    let judged_by_median = valued
        .iter()
        .all(|m| m.status != Status::Ok || m.summary.as_ref().is_some_and(|s| !wide(s)));
    if judged_by_median {
        // A repetition noisy for a cause the pooled interval shows anyway (few samples, its
        // own spread) leaves the pooled figure as good as that interval.
        return match wide(pooled) {
            true => Status::Noisy(Cause::Repetitions),
            false => Status::Ok,
        };
    }
    valued
        .iter()
        .find(|m| m.status != Status::Ok)
        .map_or(Status::Ok, |m| m.status.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Unit;
    use crate::{params, Summary};

    fn rep(k: u32, value: f64, status: Status) -> Measurement {
        let mut m = Measurement::not_taken("p", params! {"x" => 1}, "t", Unit::Ns, status);
        m.summary = Summary::new(&[value - 1.0, value, value + 1.0]);
        m.repetition = k;
        m
    }

    #[test]
    fn pooling_grows_with_the_rows_not_their_square() {
        // 200,000 rows of 100,000 measurements, two repetitions each: by hash well under a
        // second; the linear search it replaced compared 10^10 pairs (minutes). The bound is
        // wide enough for a machine busy many times over.
        let ms: Vec<Measurement> = (0..200_000u64)
            .map(|i| {
                let mut m = rep(1 + (i % 2) as u32, 100.0, Status::Ok);
                m.params = params! {"x" => i / 2};
                m
            })
            .collect();
        let t = std::time::Instant::now();
        assert_eq!(pooled(&ms).len(), 100_000);
        assert!(
            t.elapsed() < std::time::Duration::from_secs(30),
            "{:?}",
            t.elapsed()
        );
    }

    #[test]
    fn repetitions_pool_into_one_row_whose_interval_spans_them() {
        let mut other = rep(1, 5.0, Status::Ok);
        other.metric = "u".into();
        let ms = vec![
            rep(1, 100.0, Status::Ok),
            other,
            rep(2, 103.0, Status::Ok),
            rep(3, 101.0, Status::Ok),
        ];
        let p = pooled(&ms);
        assert_eq!(p.len(), 2);
        let s = p[0].summary.as_ref().unwrap();
        assert_eq!((s.median, s.n), (101.0, 9));
        assert!(s.ci_low <= 100.0 && s.ci_high >= 103.0, "{s:?}");
        assert_eq!(p[0].status, Status::Ok);
        assert!(p[0].note.as_deref().unwrap().contains("3 repetitions"));
        assert_eq!(p[1].metric, "u");
        // A failed repetition makes the pooled row noisy.
        let reps = [
            rep(1, 100.0, Status::Ok),
            rep(2, 0.0, Status::Failed("x".into())),
        ];
        let p = pooled(&reps);
        assert_eq!(
            (p[0].status.clone(), p[0].summary.as_ref().unwrap().median),
            (Status::Noisy(crate::model::Cause::Repetitions), 100.0)
        );
    }

    #[test]
    fn pooled_repetitions_are_judged_on_the_interval_they_show() {
        use crate::model::Cause;
        let status = |reps: &[Measurement]| pooled(reps)[0].status.clone();
        // Each tight, their medians 10% apart: the interval shown spans them, wider than the
        // bar, and the status says so (it read ok beside -51%).
        let apart = [
            rep(1, 100.0, Status::Ok),
            rep(2, 110.0, Status::Ok),
            rep(3, 104.0, Status::Ok),
        ];
        assert_eq!(status(&apart), Status::Noisy(Cause::Repetitions));
        // One repetition noisy for too few samples, the three together tight: ok (a quiet
        // `--repeat 3` run read noisy on every headline row).
        let tight = [
            rep(1, 100.0, Status::Ok),
            rep(2, 101.0, Status::Noisy(Cause::FewSamples)),
            rep(3, 100.5, Status::Ok),
        ];
        assert_eq!(status(&tight), Status::Ok);
        // A condition measured on one of them stays said.
        let busy = [
            rep(1, 100.0, Status::Ok),
            rep(2, 101.0, Status::Noisy(Cause::Contention)),
            rep(3, 100.5, Status::Ok),
        ];
        assert_eq!(status(&busy), Status::Noisy(Cause::Contention));
        // A distribution judged ok whatever its spread (each repetition wide and ok): ok.
        let wide = |k, v: f64| {
            let mut m = rep(k, v, Status::Ok);
            m.summary = Summary::new(&[v * 0.2, v, v * 5.0]);
            m
        };
        assert_eq!(status(&[wide(1, 100.0), wide(2, 150.0)]), Status::Ok);
    }
}
