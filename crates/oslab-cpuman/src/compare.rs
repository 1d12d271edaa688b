//! CPU-manager runs side by side: each run's totals, and for every run with page migration the
//! run of the same policy, workload, load and size without it, compared per job kind with the
//! one comparison engine ([`oslab_core::stats::compare`]): CPU time per job with / without migration
//! (the paper's ratio; below 1 migration helps) and whether the difference is significant.

use super::outcome::{JOB_PROBE, RUN_PROBE};
use oslab_core::model::{Measurement, Unit};
use oslab_core::stats::compare::{judge, Verdict};
use oslab_core::text::{Block, Doc, Table};
use oslab_core::units::value;
use serde::Serialize;

/// The settings that identify a CPU-manager run (a simulated one also by its first touch).
const SETTINGS: [&str; 6] = [
    "policy",
    "migration",
    "workload",
    "load",
    "cpus",
    "first_touch",
];

/// One stored CPU-manager run.
pub struct StoredRun {
    /// Its id in the store.
    pub id: i64,
    /// Its settings (policy, migration, workload, load, cpus, first touch).
    pub settings: Vec<(String, String)>,
    /// Its CPU-manager measurements.
    pub measurements: Vec<Measurement>,
}

impl StoredRun {
    /// The CPU-manager measurements of a stored run, or `None` when it holds none.
    pub fn new(id: i64, measurements: Vec<Measurement>) -> Option<StoredRun> {
        let ms: Vec<Measurement> = measurements
            .into_iter()
            .filter(|m| m.probe == JOB_PROBE || m.probe == RUN_PROBE)
            .collect();
        let first = ms.first()?;
        let settings = SETTINGS
            .iter()
            .map(|k| (k.to_string(), param(first, k)))
            .collect();
        Some(StoredRun {
            id,
            settings,
            measurements: ms,
        })
    }

    fn setting(&self, k: &str) -> &str {
        self.settings
            .iter()
            .find(|(key, _)| key == k)
            .map_or("-", |(_, v)| v.as_str())
    }

    /// The run-wide value of `metric` (one sample per run).
    pub fn total(&self, metric: &str) -> Option<f64> {
        self.measurements
            .iter()
            .find(|m| m.probe == RUN_PROBE && m.metric == metric)
            .and_then(|m| m.summary.as_ref())
            .map(|s| s.median)
    }

    /// The per-job CPU-time measurement of `kind` ("all" for every job).
    fn cpu_time(&self, kind: &str) -> Option<Measurement> {
        let mut m = self
            .measurements
            .iter()
            .find(|m| m.probe == JOB_PROBE && m.metric == "cpu_time" && param(m, "kind") == kind)?
            .clone();
        // With and without migration line up: the mode is what is compared.
        m.params.remove("migration");
        Some(m)
    }
}

fn param(m: &Measurement, k: &str) -> String {
    match m.params.get(k) {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => "-".into(),
    }
}

/// One with/without-migration comparison.
#[derive(Debug, Serialize)]
pub struct Ratio {
    /// Policy.
    pub policy: String,
    /// Workload.
    pub workload: String,
    /// Load.
    pub load: String,
    /// Job kind, or "all".
    pub kind: String,
    /// Page migration mode of the run with migration.
    pub mode: String,
    /// Median CPU time per job with migration (ns).
    pub with_ns: f64,
    /// Without (ns).
    pub without_ns: f64,
    /// with / without.
    pub ratio: f64,
    /// Mann-Whitney p-value over the jobs, when both runs have enough.
    pub p: Option<f64>,
    /// The interval of the ratio and its confidence, when both runs have enough jobs: the
    /// verdict is read from it.
    pub interval: Option<[f64; 2]>,
    /// Its confidence.
    pub confidence: Option<f64>,
    /// The comparison's verdict.
    pub verdict: Verdict,
    /// The verdict in words ("~": not told apart).
    pub verdict_text: &'static str,
}

/// For every run with migration on, the run of the same policy, workload, load, size and first
/// touch without it: per-job CPU time per kind and over all jobs.
pub fn migration_ratios(runs: &[StoredRun]) -> Vec<Ratio> {
    let same = |a: &StoredRun, b: &StoredRun| {
        ["policy", "workload", "load", "cpus", "first_touch"]
            .iter()
            .all(|k| a.setting(k) == b.setting(k))
    };
    let mut out = Vec::new();
    for with in runs.iter().filter(|r| r.setting("migration") != "off") {
        let Some(without) = runs
            .iter()
            .find(|r| r.setting("migration") == "off" && same(r, with))
        else {
            continue;
        };
        let mut kinds: Vec<String> = with
            .measurements
            .iter()
            .filter(|m| m.probe == JOB_PROBE && m.metric == "cpu_time")
            .map(|m| param(m, "kind"))
            .collect();
        kinds.dedup();
        for kind in kinds {
            let (Some(w), Some(wo)) = (with.cpu_time(&kind), without.cpu_time(&kind)) else {
                continue;
            };
            // Each job is an independent replicate: its CPU time is one value. Unpaired: the
            // runs keep their jobs' values in the order they finished, not job by job.
            let jobs = |m: &Measurement| m.samples.clone().unwrap_or_default();
            let row = judge(&jobs(&wo), &jobs(&w), Unit::Ns, 0.05);
            let (Some(without_ns), Some(with_ns), Some(ratio)) = (row.a, row.b, row.ratio) else {
                continue;
            };
            out.push(Ratio {
                policy: with.setting("policy").into(),
                workload: with.setting("workload").into(),
                load: with.setting("load").into(),
                kind,
                mode: with.setting("migration").into(),
                with_ns,
                without_ns,
                ratio,
                p: row.p,
                interval: row.interval,
                confidence: row.confidence,
                verdict: row.verdict,
                verdict_text: match row.verdict {
                    Verdict::Same => row.no_difference_text(),
                    Verdict::Better => "better",
                    Verdict::Regression => "worse",
                    Verdict::Changed => "changed",
                    Verdict::CannotTell => "cannot tell",
                    Verdict::Unknown
                    | Verdict::RatioOnly
                    | Verdict::CacheMoved
                    | Verdict::LoadMoved
                    | Verdict::PlacementMoved => "too few jobs",
                },
            });
        }
    }
    out
}

/// The runs' totals and the ratios, as JSON.
pub fn json(runs: &[StoredRun], ratios: &[Ratio]) -> serde_json::Value {
    let runs: Vec<serde_json::Value> = runs
        .iter()
        .map(|r| {
            let params: serde_json::Map<String, serde_json::Value> = r
                .settings
                .iter()
                .map(|(k, v)| (k.clone(), v.clone().into()))
                .collect();
            serde_json::json!({
                "run": r.id, "params": params,
                "cpu_time_s": r.total("cpu_time").map(|v| v / 1e9),
                "makespan_s": r.total("makespan").map(|v| v / 1e9),
                "migrations": r.total("migrations"),
                "burst_length_ns": r.total("burst_length"),
            })
        })
        .collect();
    serde_json::json!({ "runs": runs, "ratios": ratios })
}

/// The runs' totals and the ratios, as tables.
pub fn doc(runs: &[StoredRun], ratios: &[Ratio]) -> Doc {
    let mut totals = Table::new(
        &[
            "run",
            "policy",
            "migration",
            "workload",
            "load",
            "cpu time",
            "makespan",
            "migrations",
            "mean burst",
        ],
        &[0, 4, 5, 6, 7, 8],
    );
    for r in runs {
        let g = |metric: &str, unit| r.total(metric).map_or("-".into(), |v| value(v, unit));
        totals.row(vec![
            r.id.to_string(),
            r.setting("policy").into(),
            r.setting("migration").into(),
            r.setting("workload").into(),
            r.setting("load").into(),
            g("cpu_time", Unit::Ns),
            g("makespan", Unit::Ns),
            g("migrations", Unit::Count),
            g("burst_length", Unit::Ns),
        ]);
    }
    let mut doc = vec![Block::Table(totals)];
    if ratios.is_empty() {
        doc.push(Block::Text(
            "\nno with/without-migration pairs: give runs of one policy and workload with --migration off and kernel/manual".into(),
        ));
        return doc;
    }
    doc.push(Block::Text(
        "\nmedian CPU time per job with page migration / without (the paper's ratio; < 1: migration helps), with the interval of the ratio over the jobs (unpaired); same: the interval lies within ±5%; ~: it reaches beyond, not told apart (more jobs narrow it):".into(),
    ));
    let mut t = Table::new(
        &[
            "policy", "workload", "load", "kind", "mode", "cpu time", "without", "ratio",
            "interval", "verdict",
        ],
        &[2, 5, 6, 7],
    );
    for r in ratios {
        let verdict = r.verdict_text;
        t.row(vec![
            r.policy.clone(),
            r.workload.clone(),
            r.load.clone(),
            r.kind.clone(),
            r.mode.clone(),
            value(r.with_ns, Unit::Ns),
            value(r.without_ns, Unit::Ns),
            format!("{:.3}", r.ratio),
            match (r.interval, r.confidence) {
                (Some([lo, hi]), Some(c)) => format!("{lo:.3}-{hi:.3} ({:.0}%)", c * 100.0),
                _ => "-".into(),
            },
            verdict.into(),
        ]);
    }
    doc.push(Block::Table(t));
    doc
}
