//! Speedup curves: the paper's (Table III, [`Kind::speedup`]) or curves measured by the
//! SelfAnalyzer in live runs here, so a simulation of this machine uses the speedups its jobs
//! really reach.
//!
//! A live run stores, per kind and processor count, the speedups of its iterations (one
//! sequential iteration, calibrated at the start, over the time of an iteration on p threads) as
//! `cpuman.speedup` measurements. A curve passes through the best iteration at each p (as a
//! benchmark keeps its best of N: iterations that shared a cpu with another job ran slower, and
//! the simulator models sharing itself), linear in log2 p, from (1, 1) when one thread was not
//! measured, and stays flat beyond the largest p measured.

use super::jobs::{Below8, Kind};
use oslab_core::catalog::id;
use oslab_core::model::Measurement;
use std::collections::BTreeMap;

/// Probe id of the measured speedups.
pub const PROBE: &str = id::CPUMAN_SPEEDUP;

/// Speedup of each kind on p processors.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Speedups {
    /// Measured points (p, speedup) per kind, by p; kinds absent follow the paper.
    curves: BTreeMap<Kind, Vec<(f64, f64)>>,
    /// Where the measured curves come from, for notes.
    pub source: Option<String>,
    /// The paper's curves below 8 processors.
    pub below8: Below8,
}

impl Speedups {
    /// The paper's curves for every kind.
    pub fn paper() -> Speedups {
        Speedups::default()
    }

    /// Curves from a live run's `cpuman.speedup` measurements; None when it has none.
    pub fn measured(ms: &[Measurement], source: &str) -> Option<Speedups> {
        let mut curves: BTreeMap<Kind, Vec<(f64, f64)>> = BTreeMap::new();
        for m in ms
            .iter()
            .filter(|m| m.probe == PROBE && m.metric == "speedup")
        {
            let kind = m
                .params
                .get("kind")
                .and_then(|k| k.as_str())
                .and_then(Kind::parse);
            let p = m.params.get("processors").and_then(|p| p.as_f64());
            let s = m.summary.as_ref().map(|s| s.max);
            if let (Some(kind), Some(p), Some(s)) = (kind, p, s) {
                curves.entry(kind).or_default().push((p, s));
            }
        }
        if curves.is_empty() {
            return None;
        }
        for points in curves.values_mut() {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            if points[0].0 > 1.0 {
                points.insert(0, (1.0, 1.0));
            }
        }
        Some(Speedups {
            curves,
            source: Some(source.to_string()),
            below8: Below8::default(),
        })
    }

    /// Whether `kind` follows the paper's curve (no measured one replaces it).
    pub fn is_papers(&self, kind: Kind) -> bool {
        !self.curves.contains_key(&kind)
    }

    /// Speedup of `kind` on `p` processors.
    pub fn of(&self, kind: Kind, p: f64) -> f64 {
        let Some(points) = self.curves.get(&kind) else {
            return kind.curve(p, self.below8);
        };
        if p <= 0.0 {
            return 0.0;
        }
        let (first, last) = (points[0], points[points.len() - 1]);
        if p <= first.0 {
            // Below the first point, in proportion (0 threads, no progress).
            return first.1 * p / first.0;
        }
        if p >= last.0 {
            return last.1;
        }
        let i = points.windows(2).position(|w| p <= w[1].0).unwrap_or(0);
        let ((p0, s0), (p1, s1)) = (points[i], points[i + 1]);
        let x = (p.log2() - p0.log2()) / (p1.log2() - p0.log2());
        s0 + (s1 - s0) * x
    }

    /// What the curves are, in a line: per kind its points, or "the paper's".
    pub fn describe(&self) -> String {
        let Some(source) = &self.source else {
            return format!(
                "speedups: the paper's (Table III), below 8 processors {}",
                match self.below8 {
                    Below8::Linear => "never above linear",
                    Below8::Log2 => "linear in log2 p from (1, 1)",
                }
            );
        };
        let kinds: Vec<String> = Kind::ALL
            .iter()
            .map(|k| match self.curves.get(k) {
                Some(points) => {
                    let pts: Vec<String> =
                        points.iter().map(|(p, s)| format!("{p}: {s:.2}")).collect();
                    format!("{} {}", k.name(), pts.join(", "))
                }
                None => format!("{} the paper's", k.name()),
            })
            .collect();
        format!("speedups measured in {source}: {}", kinds.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_core::model::{judged, Judge, Unit};
    use oslab_core::params;

    fn point(kind: &str, p: u64, samples: &[f64]) -> Measurement {
        judged(
            PROBE,
            params! {"kind" => kind, "processors" => p},
            "speedup",
            Unit::Ratio,
            samples,
            None,
            Judge::Median,
        )
    }

    #[test]
    fn a_measured_curve_passes_through_the_best_iterations_and_the_paper_covers_the_rest() {
        let ms = vec![
            point("bt", 2, &[0.9, 1.7, 1.6]),
            point("bt", 1, &[0.5, 1.0, 0.45]),
            point("swim", 2, &[1.9]),
        ];
        let s = Speedups::measured(&ms, "run 7").unwrap();
        assert!((s.of(Kind::Bt, 1.0) - 1.0).abs() < 1e-12);
        assert!((s.of(Kind::Bt, 2.0) - 1.7).abs() < 1e-12);
        // Flat beyond the largest measured, interpolated in log2 p between points.
        assert!((s.of(Kind::Bt, 32.0) - 1.7).abs() < 1e-12);
        assert!((s.of(Kind::Bt, 2f64.sqrt()) - 1.35).abs() < 1e-9);
        // swim's one point at 2: from (1, 1).
        assert!((s.of(Kind::Swim, 1.0) - 1.0).abs() < 1e-12);
        assert!((s.of(Kind::Swim, 0.5) - 0.5).abs() < 1e-12);
        // Not measured: the paper's.
        assert_eq!(s.of(Kind::Hydro2d, 8.0), Kind::Hydro2d.speedup(8.0));
        let text = s.describe();
        assert!(
            text.contains("run 7")
                && text.contains("bt 1: 1.00, 2: 1.70")
                && text.contains("apsi the paper's"),
            "{text}"
        );
        assert!(Speedups::measured(&[], "run 8").is_none());
        assert_eq!(
            Speedups::paper().of(Kind::Swim, 8.0),
            Kind::Swim.speedup(8.0)
        );
    }
}
