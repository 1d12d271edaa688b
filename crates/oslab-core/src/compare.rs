//! Comparing two runs measurement by measurement: both medians, their ratio, whether the
//! difference is significant given both runs' samples (Mann-Whitney U), and whether it is a
//! regression beyond a threshold. Runs from different machines compare too; placement parameters
//! (which cpu) are left out of the match so the same probe lines up.

use crate::model::{Measurement, Unit};
use crate::stats::mann_whitney_p;
use serde::Serialize;

/// Parameters that say where a measurement ran, not what it measured.
const PLACEMENT: &[&str] = &["cpu", "cpus", "peer_cpu", "from", "to", "temp_dir"];

/// Significance level for "the difference is real".
pub const ALPHA: f64 = 0.01;

/// What changed for one measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Significantly better beyond the threshold.
    Better,
    /// Significantly worse beyond the threshold.
    Regression,
    /// Significant but within the threshold, or in a unit without a better direction.
    Changed,
    /// No significant difference.
    Same,
    /// Cannot tell: too few samples, or a value missing on one side.
    Unknown,
}

/// One row of a comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Probe id.
    pub probe: String,
    /// Parameters (placement left out).
    pub params: String,
    /// Metric.
    pub metric: String,
    /// Unit.
    pub unit: Unit,
    /// Median of the baseline, when it has a value.
    pub a: Option<f64>,
    /// Median of the other run.
    pub b: Option<f64>,
    /// b / a.
    pub ratio: Option<f64>,
    /// Mann-Whitney p-value, when both have samples.
    pub p: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
}

/// What lines a measurement up with its counterpart: probe, parameters without placement, metric.
pub fn key(m: &Measurement) -> (String, String, String) {
    let mut params = m.params.clone();
    for k in PLACEMENT {
        params.remove(*k);
    }
    let text = params
        .iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect::<Vec<_>>()
        .join(" ");
    (m.probe.clone(), text, m.metric.clone())
}

/// Compares `b` against the baseline `a`; `threshold` is the relative change that counts
/// (0.05 = 5%). Rows follow the baseline's order, then what only `b` has.
pub fn compare(a: &[Measurement], b: &[Measurement], threshold: f64) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut used = vec![false; b.len()];
    for ma in a {
        let k = key(ma);
        let found = b
            .iter()
            .enumerate()
            .find(|(i, mb)| !used[*i] && key(mb) == k);
        let mb = found.map(|(i, mb)| {
            used[i] = true;
            mb
        });
        rows.push(row(k, ma.unit, Some(ma), mb, threshold));
    }
    for (mb, _) in b.iter().zip(&used).filter(|(_, u)| !**u) {
        rows.push(row(key(mb), mb.unit, None, Some(mb), threshold));
    }
    rows
}

fn median(m: Option<&Measurement>) -> Option<f64> {
    m.filter(|m| m.status.has_value())?
        .summary
        .as_ref()
        .map(|s| s.median)
}

fn row(
    (probe, params, metric): (String, String, String),
    unit: Unit,
    ma: Option<&Measurement>,
    mb: Option<&Measurement>,
    threshold: f64,
) -> Row {
    let (a, b) = (median(ma), median(mb));
    let ratio = match (a, b) {
        (Some(x), Some(y)) if x != 0.0 => Some(y / x),
        _ => None,
    };
    let samples =
        |m: Option<&Measurement>| m.and_then(|m| m.samples.clone()).filter(|s| s.len() >= 3);
    let p = match (samples(ma), samples(mb)) {
        (Some(x), Some(y)) => mann_whitney_p(&x, &y),
        _ => None,
    };
    let verdict = match (ratio, p) {
        (Some(r), Some(p)) if p < ALPHA => {
            let worse = match unit {
                Unit::Ns | Unit::Cycles => r > 1.0 + threshold,
                Unit::GBps => r < 1.0 - threshold,
                _ => false,
            };
            let better = match unit {
                Unit::Ns | Unit::Cycles => r < 1.0 - threshold,
                Unit::GBps => r > 1.0 + threshold,
                _ => false,
            };
            if worse {
                Verdict::Regression
            } else if better {
                Verdict::Better
            } else {
                Verdict::Changed
            }
        }
        (Some(_), Some(_)) => Verdict::Same,
        _ => Verdict::Unknown,
    };
    Row {
        probe,
        params,
        metric,
        unit,
        a,
        b,
        ratio,
        p,
        verdict,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Status;
    use crate::{params, Summary};

    fn m(cpu: usize, unit: Unit, samples: Vec<f64>) -> Measurement {
        let mut x = Measurement::not_taken(
            "syscall.getppid",
            params! {"cpu" => cpu, "cache" => "hot"},
            "per_call",
            unit,
            Status::Ok,
        );
        x.summary = Summary::new(&samples);
        x.samples = Some(samples);
        x
    }

    #[test]
    fn slower_times_are_regressions_and_faster_rates_are_better() {
        let base: Vec<f64> = (0..40).map(|i| 100.0 + (i % 5) as f64).collect();
        let slow: Vec<f64> = base.iter().map(|x| x * 1.2).collect();
        // Different cpus still line up: placement is not part of the key.
        let rows = compare(
            &[m(1, Unit::Ns, base.clone())],
            &[m(3, Unit::Ns, slow.clone())],
            0.05,
        );
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].verdict, Verdict::Regression);
        assert!((rows[0].ratio.unwrap() - 1.2).abs() < 0.01);
        let rows = compare(
            &[m(1, Unit::GBps, base.clone())],
            &[m(1, Unit::GBps, slow)],
            0.05,
        );
        assert_eq!(rows[0].verdict, Verdict::Better);
        let rows = compare(
            &[m(1, Unit::Ns, base.clone())],
            &[m(1, Unit::Ns, base.clone())],
            0.05,
        );
        assert_eq!(rows[0].verdict, Verdict::Same);
        // A 2% change that is significant is "changed", not a regression, at a 5% threshold.
        let bit: Vec<f64> = base.iter().map(|x| x * 1.02 + 0.001).collect();
        let rows = compare(
            &[m(1, Unit::Ns, base.clone())],
            &[m(1, Unit::Ns, bit)],
            0.05,
        );
        assert!(matches!(rows[0].verdict, Verdict::Changed | Verdict::Same));
    }

    #[test]
    fn unmatched_measurements_are_listed_as_unknown() {
        let a = m(1, Unit::Ns, vec![1.0, 2.0, 3.0]);
        let mut b = m(1, Unit::Ns, vec![1.0, 2.0, 3.0]);
        b.metric = "other".into();
        let rows = compare(&[a], &[b], 0.05);
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().all(|r| r.verdict == Verdict::Unknown));
        assert!(rows[0].b.is_none() && rows[1].a.is_none());
    }
}
