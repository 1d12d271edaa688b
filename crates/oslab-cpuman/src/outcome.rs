//! What a CPU-manager run produced, live or simulated, in one shape: per job and per CPU, turned
//! into the store's measurements (so `oslab compare`, `cpuman compare` and the report read both
//! alike) and a timeline.

use crate::jobs::Kind;
use crate::tally::{valued, Tally, JOBS_SHOWN, METRICS, PAGES_MOVED};
use oslab_core::catalog::id;
use oslab_core::model::{self, judged, Judge, Measurement, Status, TimelineEvent, Unit};
use oslab_core::reason::Unavailable;
use oslab_core::text::{Block, Doc, Table};
use oslab_core::units::value;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Context switches and busy time of one CPU over the run.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuBursts {
    /// The CPU.
    pub cpu: usize,
    /// sched_switch events on it.
    pub switches: u64,
    /// Time it was not idle, s.
    pub busy_s: f64,
}

/// A whole run.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// Policy name.
    pub policy: String,
    /// Page migration mode.
    pub migration: String,
    /// Workload label ("W3" or a trace's file name).
    pub workload: String,
    /// Load in percent, for generated workloads.
    pub load: Option<f64>,
    /// Processors managed.
    pub cpus: usize,
    /// Every job that ended, folded into per-kind statistics.
    pub jobs: Tally,
    /// Per-CPU bursts, or why they were not measured.
    pub bursts: Result<Vec<CpuBursts>, Unavailable>,
    /// Pages migrated, or why not counted.
    pub page_migrations: Result<u64, Unavailable>,
    /// First arrival to last end, s.
    pub makespan_s: f64,
    /// Allocation changes, job spans, threads on CPUs.
    pub timeline: Vec<TimelineEvent>,
    /// Things the reader must know (one node: nothing to migrate; ...).
    pub notes: Vec<String>,
    /// Live or simulated.
    pub simulated: bool,
    /// Live: the SelfAnalyzer's speedups per kind and thread count (one sequential iteration
    /// over an iteration on that many threads).
    pub speedups: BTreeMap<(Kind, usize), Vec<f64>>,
    /// Simulated: where pages were first touched (a parameter of every measurement).
    pub first_touch: Option<&'static str>,
    /// The most jobs that ran at once.
    pub peak_running: usize,
}

/// Probe ids.
pub const JOB_PROBE: &str = id::CPUMAN_JOB;

/// Probe id of whole-run metrics.
pub const RUN_PROBE: &str = id::CPUMAN_RUN;

impl RunOutcome {
    fn params(&self, kind: Option<&str>) -> Map<String, Value> {
        let mut p = Map::new();
        p.insert("policy".into(), self.policy.clone().into());
        p.insert("migration".into(), self.migration.clone().into());
        p.insert("workload".into(), self.workload.clone().into());
        if let Some(l) = self.load {
            p.insert("load".into(), l.into());
        }
        p.insert("cpus".into(), self.cpus.into());
        if let Some(f) = self.first_touch {
            p.insert("first_touch".into(), f.into());
        }
        if self.simulated {
            p.insert(model::CLOCK.into(), model::SIMULATED.into());
        }
        if let Some(k) = kind {
            p.insert("kind".into(), k.into());
        }
        p
    }

    /// The per-job table (the first [`JOBS_SHOWN`] jobs), the makespan and the notes.
    pub fn doc(&self) -> Doc {
        let opt = |v: Option<f64>, unit: Unit| v.map_or("-".to_string(), |x| value(x, unit));
        let mut doc = vec![Block::Text(format!(
            "\n{} {} jobs, policy {}, page migration {}, {} cpus{}",
            if self.simulated {
                "simulated:"
            } else {
                "live:"
            },
            self.jobs.len(),
            self.policy,
            self.migration,
            self.cpus,
            self.load.map_or(String::new(), |l| format!(
                ", {} at {l}% load",
                self.workload
            ))
        ))];
        let mut t = Table::new(
            &[
                "job",
                "kind",
                "req",
                "arrival",
                "wait",
                "execution",
                "cpu time",
                "speedup",
                "alloc",
                "migr",
                "state",
            ],
            &[0, 2, 3, 4, 5, 6, 7, 8, 9],
        )
        // A narrow terminal loses the arrival, then the counts: the per-kind rows have them.
        .optional(&[3, 9, 8]);
        for j in self.jobs.shown() {
            t.row(vec![
                j.id.to_string(),
                j.kind_name().into(),
                j.request.to_string(),
                value(j.submit_s * 1e9, Unit::Ns),
                // An arrival admitted in the same event reads a rounding error early.
                opt(j.start_s.map(|s| (s - j.submit_s).max(0.0) * 1e9), Unit::Ns),
                opt(j.execution_s().map(|s| s * 1e9), Unit::Ns),
                opt(j.cpu_s.map(|s| s * 1e9), Unit::Ns),
                j.speedup()
                    .filter(|_| !j.external)
                    .map_or("-".into(), |s| format!("{s:.2}")),
                j.mean_alloc().map_or("-".into(), |a| format!("{a:.2}")),
                j.migrations.map_or("-".into(), |m| m.to_string()),
                if j.completed { "" } else { "not completed" }.into(),
            ]);
        }
        doc.push(Block::Table(t));
        let mut tail = String::new();
        if self.jobs.len() > JOBS_SHOWN {
            tail.push_str(&format!(
                "  ... and {} more jobs: every one counts in the per-kind measurements above\n",
                self.jobs.len() - JOBS_SHOWN
            ));
        }
        tail.push_str(&format!(
            "  makespan {}",
            value(self.makespan_s * 1e9, Unit::Ns)
        ));
        for note in &self.notes {
            tail.push_str(&format!("\nnote: {note}"));
        }
        doc.push(Block::Text(tail));
        doc
    }

    /// The measurements: per kind (and "all"), per-job samples of CPU time, execution and
    /// response time, speedup, mean allocation and migrations; per run the makespan, total CPU
    /// time, page migrations and per-CPU bursts.
    pub fn measurements(&self) -> Vec<Measurement> {
        let origin = if self.simulated { "simulated" } else { "live" };
        let mut out = Vec::new();
        for (kind, values) in self.jobs.kinds() {
            for ((metric, unit, _), v) in METRICS.iter().zip(values) {
                if *metric == PAGES_MOVED && v.is_empty() {
                    continue;
                }
                let params = self.params(Some(kind));
                out.push(v.measurement(JOB_PROBE, params, (metric, *unit), origin));
            }
        }
        for ((kind, p), samples) in &self.speedups {
            let mut params = self.params(Some(kind.name()));
            params.insert("processors".into(), (*p as u64).into());
            out.push(judged(
                super::speedups::PROBE,
                params,
                "speedup",
                Unit::Ratio,
                samples,
                Some(format!(
                    "{origin}; per iteration: one sequential iteration (calibrated) / an iteration on {p} threads"
                )),
                Judge::Median,
            ));
        }
        let note = |s: &str| format!("{origin}; {s}");
        out.push(valued(
            RUN_PROBE,
            self.params(None),
            "makespan",
            Unit::Ns,
            &[self.makespan_s * 1e9],
            note("first arrival to last end"),
        ));
        if let Some(c) = self.jobs.cpu_s() {
            out.push(valued(
                RUN_PROBE,
                self.params(None),
                "cpu_time",
                Unit::Ns,
                &[c * 1e9],
                note("CPU time of all completed jobs"),
            ));
        }
        if let Some(m) = self.jobs.migrations() {
            out.push(valued(
                RUN_PROBE,
                self.params(None),
                "migrations",
                Unit::Count,
                &[m as f64],
                note("thread migrations between CPUs, all completed jobs"),
            ));
        }
        out.push(valued(
            RUN_PROBE,
            self.params(None),
            "multiprogramming",
            Unit::Count,
            &[self.peak_running as f64],
            note("the most jobs running at once"),
        ));
        out.push(match &self.page_migrations {
            Ok(p) => valued(
                RUN_PROBE,
                self.params(None),
                "page_migrations",
                Unit::Count,
                &[*p as f64],
                note("pages migrated between nodes"),
            ),
            Err(why) => skipped(self.params(None), "page_migrations", Unit::Count, &why.0),
        });
        match &self.bursts {
            Ok(b) => {
                let lengths: Vec<f64> = b
                    .iter()
                    .filter(|c| c.switches > 0)
                    .map(|c| c.busy_s * 1e9 / c.switches as f64)
                    .collect();
                let counts: Vec<f64> = b.iter().map(|c| c.switches as f64).collect();
                out.push(valued(
                    RUN_PROBE,
                    self.params(None),
                    "burst_length",
                    Unit::Ns,
                    &lengths,
                    note("per CPU: busy time / context switches (all tasks on it)"),
                ));
                out.push(valued(
                    RUN_PROBE,
                    self.params(None),
                    "bursts",
                    Unit::Count,
                    &counts,
                    note("per CPU: sched_switch events"),
                ));
            }
            Err(why) => {
                out.push(skipped(self.params(None), "burst_length", Unit::Ns, &why.0));
            }
        }
        out
    }
}

fn skipped(params: Map<String, Value>, metric: &str, unit: Unit, why: &str) -> Measurement {
    Measurement::not_taken(
        RUN_PROBE,
        params,
        metric,
        unit,
        Status::Skipped(why.to_string()),
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::tally::JobOutcome;

    pub(crate) fn job(id: u64, kind: Kind, cpu: f64, start: f64, end: f64) -> JobOutcome {
        JobOutcome {
            id,
            kind,
            external: false,
            request: 2,
            submit_s: 0.0,
            start_s: Some(start),
            end_s: Some(end),
            seq_s: 2.0,
            cpu_s: Some(cpu),
            alloc_integral: 2.0 * (end - start),
            migrations: Some(3),
            pages_moved: None,
            completed: true,
        }
    }

    #[test]
    fn jobs_become_per_kind_and_per_run_measurements() {
        let run = RunOutcome {
            policy: "equip".into(),
            migration: "off".into(),
            workload: "W3".into(),
            load: Some(100.0),
            cpus: 2,
            jobs: vec![
                job(1, Kind::Swim, 2.0, 0.0, 1.0),
                job(2, Kind::Bt, 3.0, 0.5, 2.5),
                JobOutcome {
                    completed: false,
                    ..job(3, Kind::Bt, 9.0, 1.0, 9.0)
                },
            ]
            .into_iter()
            .collect(),
            bursts: Ok(vec![CpuBursts {
                cpu: 0,
                switches: 100,
                busy_s: 0.5,
            }]),
            page_migrations: Err("one NUMA node: nothing to migrate".into()),
            makespan_s: 2.5,
            timeline: vec![],
            notes: vec![],
            simulated: false,
            speedups: [((Kind::Bt, 2), vec![1.6, 1.8, 1.7])].into(),
            first_touch: None,
            peak_running: 2,
        };
        let ms = run.measurements();
        let curve = ms
            .iter()
            .find(|m| m.probe == crate::speedups::PROBE)
            .unwrap();
        assert_eq!(curve.params["processors"], 2);
        assert_eq!(curve.params["kind"], "bt");
        assert!((curve.summary.as_ref().unwrap().median - 1.7).abs() < 1e-12);
        // Iterations that shared their cpus now and then (0.3 against 1.8): noisy, with why.
        let shared = RunOutcome {
            speedups: [(
                (Kind::Bt, 2),
                (0..12)
                    .map(|k| if k % 2 == 0 { 1.8 } else { 0.3 })
                    .collect(),
            )]
            .into(),
            ..run.clone()
        };
        let wild = shared
            .measurements()
            .into_iter()
            .find(|m| m.probe == crate::speedups::PROBE)
            .unwrap();
        assert!(wild.status.is_noisy(), "{wild:?}");
        assert!(
            wild.note.as_deref().unwrap_or("").contains("noisy:"),
            "{wild:?}"
        );
        let get = |kind: &str, metric: &str| {
            ms.iter()
                .find(|m| {
                    m.metric == metric
                        && m.params.get("kind").and_then(|v| v.as_str()) == Some(kind)
                })
                .unwrap()
        };
        // Only completed jobs count: all = swim + bt(2).
        assert_eq!(get("all", "cpu_time").summary.as_ref().unwrap().n, 2);
        assert_eq!(get("bt", "speedup").summary.as_ref().unwrap().median, 1.0);
        assert_eq!(
            get("swim", "allocation").summary.as_ref().unwrap().median,
            2.0
        );
        let run_metric = |metric: &str| {
            ms.iter()
                .find(|m| m.probe == RUN_PROBE && m.metric == metric)
                .unwrap()
        };
        assert_eq!(run_metric("cpu_time").summary.as_ref().unwrap().median, 5e9);
        assert_eq!(
            run_metric("migrations").summary.as_ref().unwrap().median,
            6.0
        );
        assert_eq!(
            run_metric("burst_length").summary.as_ref().unwrap().median,
            5e6
        );
        assert!(matches!(
            run_metric("page_migrations").status,
            Status::Skipped(_)
        ));
    }
}
