//! What a watch found: lock-wait share per interval, regroupings, the daemon's overhead, as
//! measurements and a summary.

use super::decision::Grouping;
use oslab_core::catalog::id;
use oslab_core::model::{judged, Judge, Measurement, Unit};
use oslab_core::params;
use std::time::Duration;

/// What the daemon did, for its summary line and the store.
#[derive(Debug, Clone, Default)]
pub struct WatchSummary {
    /// Intervals monitored.
    pub intervals: u32,
    /// Shuffles performed: intervals in which at least one thread changed domain.
    pub shuffles: u32,
    /// Lock fraction of each interval.
    pub lock_fractions: Vec<f64>,
    /// Lock fraction before the first shuffle (mean), and after it (mean).
    pub before: Option<f64>,
    /// After the first shuffle.
    pub after: Option<f64>,
    /// The daemon's CPU time / the target's CPU time over the run.
    pub overhead: Option<f64>,
    /// Threads whose affinity was restored at the end.
    pub restored: usize,
}

/// How a process was watched, as its stored measurements say.
#[derive(Debug, Clone)]
pub struct Setting {
    /// The process.
    pub pid: i32,
    /// Cache domains it may use.
    pub domains: usize,
    /// Lock-wait share that triggers a shuffle.
    pub threshold: f64,
    /// Daemon interval.
    pub interval: Duration,
    /// Measured and decided, but moved nothing.
    pub monitor_only: bool,
    /// How lock waits were measured, in words.
    pub method: String,
    /// How threads were grouped.
    pub grouping: Grouping,
}

/// Probe id of a watch's measurements.
pub const PROBE: &str = id::SHUFFLE;

impl WatchSummary {
    fn one_domain(s: &Setting) -> Option<&'static str> {
        (s.domains < 2).then_some(
            "the target may use one cache domain only: regrouping cannot separate anything on this machine",
        )
    }

    /// The watch as measurements: lock-wait share per interval, shuffles, before/after, overhead.
    pub fn measurements(&self, s: &Setting) -> Vec<Measurement> {
        let base = params! {
            "pid" => s.pid,
            "domains" => s.domains,
            "threshold" => s.threshold,
            "interval_ms" => s.interval.as_millis() as u64,
            "mode" => if s.monitor_only { "monitor-only" } else { "shuffle" },
            "method" => if s.method.starts_with("eBPF") { "ebpf" } else { "proxy" },
            "grouping" => s.grouping.name(),
        };
        let single = |metric: &str, unit: Unit, v: f64, note: &str| {
            judged(
                PROBE,
                base.clone(),
                metric,
                unit,
                &[v],
                Some(note.into()),
                Judge::Subject,
            )
        };
        let per_interval = format!("per interval; method: {}", s.method);
        let mut ms = vec![judged(
            PROBE,
            base.clone(),
            "lock_fraction",
            Unit::Share,
            &self.lock_fractions,
            Some(per_interval),
            Judge::Median,
        )];
        let applied = Self::one_domain(s).unwrap_or("placements applied");
        ms.push(single(
            "shuffles",
            Unit::Count,
            f64::from(self.shuffles),
            applied,
        ));
        let optional = [
            (
                "lock_before",
                self.before,
                "mean lock-wait fraction before the first shuffle",
            ),
            (
                "lock_after",
                self.after,
                "mean lock-wait fraction after the first shuffle",
            ),
            (
                "overhead",
                self.overhead,
                "the daemon's CPU time / the target's CPU time",
            ),
        ];
        for (metric, v, note) in optional {
            if let Some(v) = v {
                ms.push(single(metric, Unit::Ratio, v, note));
            }
        }
        ms
    }

    /// The watch in a few lines.
    pub fn text(&self, s: &Setting) -> String {
        let pct = |v: Option<f64>| v.map_or("-".into(), |v| format!("{:.1}%", v * 100.0));
        format!(
            "shuffle summary: {} intervals, {} shuffles, lock wait {} before / {} after{}, daemon overhead {}, {} affinities restored\nmethod: {}; grouped by {}\n{}",
            self.intervals,
            self.shuffles,
            pct(self.before),
            pct(self.after),
            match (self.before, self.after) {
                (Some(b), Some(a)) if a > b + 0.05 && a > b * 1.1 => format!(
                    " (up {:.1} points since the first shuffle: `oslab shuffle-eval` tells whether the shuffling raised it)",
                    (a - b) * 100.0
                ),
                _ => String::new(),
            },
            pct(self.overhead),
            self.restored,
            s.method,
            match s.grouping {
                Grouping::Lock => "lock (the futex word each thread waits on)",
                Grouping::LockTime => "lock time (similar lock-wait shares together)",
            },
            Self::one_domain(s).unwrap_or("")
        )
    }
}
