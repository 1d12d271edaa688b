//! Finished jobs folded into per-kind statistics as they end, so a run's memory does not grow
//! with its trace: the first [`JOBS_SHOWN`] jobs are kept for the table; for every kind and
//! metric the count, mean, spread and extremes are exact, and a uniform random sample of the
//! values (all of them up to [`SAMPLE_CAP`]) gives the quartiles, tail and CI.

use crate::jobs::Kind;
use crate::workload::JobSpec;
use oslab_core::model::{judged, EventKind, Judge, Measurement, Status, TimelineEvent, Unit};
use oslab_core::stats::SplitMix64;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Jobs listed one by one in the text (a million-job trace is summarised, not printed).
pub const JOBS_SHOWN: usize = 50;

/// Values of one metric kept for its quantiles (Algorithm R over a fixed random stream).
/// Beyond it the median's rank is off by at most 0.3% (95%); below it every value is kept.
pub const SAMPLE_CAP: usize = 100_000;

/// A per-job metric: name, unit, and its value for one job when it has one.
type Metric = (&'static str, Unit, fn(&JobOutcome) -> Option<f64>);

/// The per-job metrics, in the order they are reported: the response time first, what a
/// processor allocation policy is judged by (`show`'s main figure is a probe's first metric).
pub const METRICS: [Metric; 7] = [
    ("response_time", Unit::Ns, |j| {
        j.end_s.map(|e| (e - j.submit_s) * 1e9)
    }),
    ("execution_time", Unit::Ns, |j| {
        j.execution_s().map(|s| s * 1e9)
    }),
    ("cpu_time", Unit::Ns, |j| j.cpu_s.map(|s| s * 1e9)),
    ("speedup", Unit::Ratio, JobOutcome::speedup),
    ("allocation", Unit::Count, JobOutcome::mean_alloc),
    ("migrations", Unit::Count, |j| {
        j.migrations.map(|m| m as f64)
    }),
    (PAGES_MOVED, Unit::Count, |j| {
        j.pages_moved.map(|p| p as f64)
    }),
];

/// The per-job metric of pages the manager moved: counted only where it moves pages (manual
/// migration on several nodes, live or simulated), left out elsewhere.
pub use oslab_core::catalog::metric::PAGES_MOVED;

/// One metric over the completed jobs of one kind.
#[derive(Debug, Clone, Default)]
pub struct Values {
    n: usize,
    mean: f64,
    /// Sum of squared deviations from the mean (Welford).
    m2: f64,
    min: f64,
    max: f64,
    sample: Vec<f64>,
}

impl Values {
    /// Whether no job had this value.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    fn add(&mut self, x: f64, rng: &mut SplitMix64) {
        self.n += 1;
        let d = x - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x - self.mean);
        if self.n == 1 {
            (self.min, self.max) = (x, x);
        } else {
            (self.min, self.max) = (self.min.min(x), self.max.max(x));
        }
        if self.sample.len() < SAMPLE_CAP {
            self.sample.push(x);
        } else {
            let k = rng.below(self.n);
            if k < SAMPLE_CAP {
                self.sample[k] = x;
            }
        }
    }

    /// The measurement of these values (`note` says where they come from).
    pub fn measurement(
        &self,
        probe: &str,
        params: Map<String, Value>,
        (metric, unit): (&str, Unit),
        origin: &str,
    ) -> Measurement {
        let note = if self.n == self.sample.len() {
            format!("{origin}; samples are the {} completed jobs", self.n)
        } else {
            format!(
                "{origin}; the {} completed jobs: count, mean, spread and extremes over all of them, quartiles and CI from a uniform random sample of {}",
                self.n,
                self.sample.len()
            )
        };
        let mut m = valued(probe, params, metric, unit, &self.sample, note);
        if let Some(s) = m.summary.as_mut() {
            s.n = self.n;
            s.mean = self.mean;
            s.stddev = if self.n > 1 {
                (self.m2 / (self.n - 1) as f64).sqrt()
            } else {
                0.0
            };
            (s.min, s.max) = (self.min, self.max);
        }
        m
    }
}

/// Every job a run ended, folded as it ends.
#[derive(Debug, Clone)]
pub struct Tally {
    shown: Vec<JobOutcome>,
    jobs: usize,
    /// Per kind name of the completed jobs, then "all": one [`Values`] per metric of [`METRICS`].
    kinds: BTreeMap<&'static str, Vec<Values>>,
    all: Vec<Values>,
    cpu_s: Option<f64>,
    migrations: Option<u64>,
    rng: SplitMix64,
}

impl Default for Tally {
    fn default() -> Tally {
        Tally {
            shown: Vec::new(),
            jobs: 0,
            kinds: BTreeMap::new(),
            all: vec![Values::default(); METRICS.len()],
            cpu_s: Some(0.0),
            migrations: Some(0),
            rng: SplitMix64(0x7a11_7a11),
        }
    }
}

impl Tally {
    /// Folds in one ended job (completed or stopped).
    pub fn add(&mut self, job: JobOutcome) {
        self.jobs += 1;
        if job.completed {
            self.cpu_s = self.cpu_s.zip(job.cpu_s).map(|(a, b)| a + b);
            self.migrations = self.migrations.zip(job.migrations).map(|(a, b)| a + b);
            let kind = self
                .kinds
                .entry(job.kind_name())
                .or_insert_with(|| vec![Values::default(); METRICS.len()]);
            for (i, (_, _, f)) in METRICS.iter().enumerate() {
                if let Some(x) = f(&job).filter(|x| x.is_finite()) {
                    kind[i].add(x, &mut self.rng);
                    self.all[i].add(x, &mut self.rng);
                }
            }
        }
        // Keep the lowest job numbers, in order.
        let at = self.shown.partition_point(|j| j.id < job.id);
        if at < JOBS_SHOWN {
            self.shown.insert(at, job);
            self.shown.truncate(JOBS_SHOWN);
        }
    }

    /// Jobs ended, completed or not.
    pub fn len(&self) -> usize {
        self.jobs
    }

    /// Whether no job ended.
    pub fn is_empty(&self) -> bool {
        self.jobs == 0
    }

    /// The [`JOBS_SHOWN`] jobs with the lowest numbers, in order.
    pub fn shown(&self) -> &[JobOutcome] {
        &self.shown
    }

    /// CPU time of all completed jobs, s, when every one was measured.
    pub fn cpu_s(&self) -> Option<f64> {
        self.cpu_s
    }

    /// Thread migrations of all completed jobs, when every one was counted.
    pub fn migrations(&self) -> Option<u64> {
        self.migrations
    }

    /// Each kind of the completed jobs (by name, then "all") with its values per metric of
    /// [`METRICS`].
    pub fn kinds(&self) -> impl Iterator<Item = (&'static str, &[Values])> {
        self.kinds
            .iter()
            .map(|(k, v)| (*k, v.as_slice()))
            .chain(std::iter::once(("all", self.all.as_slice())))
    }
}

impl FromIterator<JobOutcome> for Tally {
    fn from_iter<I: IntoIterator<Item = JobOutcome>>(jobs: I) -> Tally {
        let mut t = Tally::default();
        jobs.into_iter().for_each(|j| t.add(j));
        t
    }
}

/// One job's life.
#[derive(Debug, Clone, PartialEq)]
pub struct JobOutcome {
    /// Job number.
    pub id: u64,
    /// Kind (scaling shape); external commands are reported as "external".
    pub kind: Kind,
    /// An external (non-cooperative) command.
    pub external: bool,
    /// Processors requested.
    pub request: usize,
    /// Arrival, s from the start.
    pub submit_s: f64,
    /// Start, when it started.
    pub start_s: Option<f64>,
    /// End, when it finished.
    pub end_s: Option<f64>,
    /// Sequential work in s (the speedup's numerator).
    pub seq_s: f64,
    /// CPU time used (user + system, all threads), when known.
    pub cpu_s: Option<f64>,
    /// Integral of the allocation over time (processor-seconds).
    pub alloc_integral: f64,
    /// Times a thread of the job moved between CPUs (the kernel's cpu-migrations), when counted.
    pub migrations: Option<u64>,
    /// Pages the manager moved to the job's nodes, where it moves pages: live, 4 KiB pages from
    /// its numa_maps before and after each move; simulated, the simulation's pages.
    pub pages_moved: Option<u64>,
    /// Whether it ran to completion (not stopped, not failed).
    pub completed: bool,
}

impl JobOutcome {
    /// A job `spec` started at `t`, nothing measured yet.
    pub fn started(spec: &JobSpec, t: f64) -> JobOutcome {
        JobOutcome {
            id: spec.id,
            kind: spec.kind,
            external: spec.command.is_some(),
            request: spec.request,
            submit_s: spec.submit_s,
            start_s: Some(t),
            end_s: None,
            seq_s: spec.seq_s,
            cpu_s: None,
            alloc_integral: 0.0,
            migrations: None,
            pages_moved: None,
            completed: false,
        }
    }

    /// Execution time (start to end).
    pub fn execution_s(&self) -> Option<f64> {
        Some(self.end_s? - self.start_s?)
    }
    /// Sequential time over execution time.
    pub fn speedup(&self) -> Option<f64> {
        self.execution_s()
            .filter(|&e| e > 0.0)
            .map(|e| self.seq_s / e)
    }
    /// Mean processors allocated while it ran.
    pub fn mean_alloc(&self) -> Option<f64> {
        self.execution_s()
            .filter(|&e| e > 0.0)
            .map(|e| self.alloc_integral / e)
    }
    /// Its row on a timeline.
    pub fn track(&self) -> String {
        format!("job {} {}", self.id, self.kind_name())
    }

    /// An allocation change at `t` (s): `threads` on `cpus` (empty: not pinned).
    pub fn alloc_event(&self, threads: usize, cpus: &[usize], t: f64) -> TimelineEvent {
        TimelineEvent {
            track: self.track(),
            kind: EventKind::Alloc,
            start_ns: t * 1e9,
            dur_ns: 0.0,
            args: object(json!({"job": self.id, "threads": threads, "cpus": cpus})),
        }
    }

    /// Its life from start to end, with what it cost.
    pub fn span_event(&self) -> TimelineEvent {
        let start = self.start_s.unwrap_or(self.submit_s);
        let end = self.end_s.unwrap_or(self.submit_s);
        TimelineEvent {
            track: self.track(),
            kind: EventKind::Running,
            start_ns: start * 1e9,
            dur_ns: (end - start) * 1e9,
            args: object(json!({
                "job": self.id, "kind": self.kind_name(), "request": self.request,
                "submitted_s": self.submit_s, "waited_s": start - self.submit_s,
                "cpu_s": self.cpu_s, "speedup": self.speedup(), "completed": self.completed,
            })),
        }
    }

    /// Its kind's name ("external" for commands).
    pub fn kind_name(&self) -> &'static str {
        if self.external {
            "external"
        } else {
            self.kind.name()
        }
    }
}

/// A measurement whose samples are values, not repetitions: no noise judgement.
pub(crate) fn valued(
    probe: &str,
    params: Map<String, Value>,
    metric: &str,
    unit: Unit,
    samples: &[f64],
    note: String,
) -> Measurement {
    if samples.is_empty() {
        let why = Status::Skipped("nothing to measure: no completed job has this value".into());
        return Measurement::not_taken(probe, params, metric, unit, why);
    }
    // Per-job values of a mix of jobs: their spread is the result.
    judged(
        probe,
        params,
        metric,
        unit,
        samples,
        Some(note),
        Judge::Subject,
    )
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where cpu_time is in [`METRICS`].
    const CPU_TIME: usize = 2;
    use crate::jobs::Kind;
    use crate::outcome::tests::job;

    #[test]
    fn a_small_run_keeps_every_value_and_its_jobs_in_order() {
        let t: Tally = (0..60)
            .rev()
            .map(|i| job(i, Kind::Bt, 1.0 + i as f64, 0.0, 2.0))
            .collect();
        assert_eq!(t.len(), 60);
        let ids: Vec<u64> = t.shown().iter().map(|j| j.id).collect();
        assert_eq!(ids, (0..JOBS_SHOWN as u64).collect::<Vec<_>>());
        let (kind, values) = t.kinds().next().unwrap();
        assert_eq!(kind, "bt");
        assert_eq!(METRICS[CPU_TIME].0, "cpu_time");
        let m = values[CPU_TIME].measurement("p", Map::new(), ("cpu_time", Unit::Ns), "simulated");
        let s = m.summary.unwrap();
        assert_eq!((s.n, s.min, s.max), (60, 1e9, 60e9));
        assert_eq!(s.median, 30.5e9);
        assert_eq!(t.cpu_s(), Some((1..=60).sum::<u64>() as f64));
    }

    #[test]
    fn a_huge_run_keeps_a_bounded_sample_and_exact_moments() {
        let mut t = Tally::default();
        let n = 3 * SAMPLE_CAP;
        for i in 0..n {
            // CPU times 1..=n s, in an order unrelated to their size.
            let cpu = ((i * 7919) % n + 1) as f64;
            t.add(job(i as u64, Kind::Swim, cpu, 0.0, 1.0));
        }
        let values = &t.kinds().next().unwrap().1[CPU_TIME];
        assert_eq!(values.sample.len(), SAMPLE_CAP);
        let s = values
            .measurement("p", Map::new(), ("cpu_time", Unit::Ns), "simulated")
            .summary
            .unwrap();
        assert_eq!((s.n, s.min, s.max), (n, 1e9, n as f64 * 1e9));
        assert!(
            (s.mean / 1e9 - (n + 1) as f64 / 2.0).abs() < 1e-3,
            "{}",
            s.mean
        );
        // The sample's median is the true median within its rank error.
        let true_median = (n + 1) as f64 / 2.0 * 1e9;
        assert!((s.median / true_median - 1.0).abs() < 0.01, "{}", s.median);
        assert!(s.ci_low < true_median && true_median < s.ci_high);
    }
}
