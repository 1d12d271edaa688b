//! A fleet's saved reference: the healthy nodes of one job, kept in the store under a name (a
//! partition's), that later jobs (`fleet summary JOB --reference NAME`) and a single node
//! (`oslab check --reference NAME`) are judged against. Two sick nodes of three outvote the
//! healthy one in a job's own majority; against the reference each is found, and a fleet that
//! moved as a whole is said.

use crate::summary::{self, Health, NodeRun, NodeVerdict, MIN_NODES};
use crate::{node_run, node_runs, JobSummaryError, JOB_TAG, NODE_TAG};
use oslab_store::Store;

/// The tag a reference's runs carry, with its name as the value.
pub const REFERENCE_TAG: &str = "fleet.reference";

/// Node `node`'s verdict against reference `name` in one line, for a person or a log.
pub fn check_line(node: &str, name: &str, v: &NodeVerdict) -> String {
    let why = match v.why.is_empty() {
        true => String::new(),
        false => format!(": {}", v.why.join("; ")),
    };
    format!(
        "{node}: {} against reference {name}{why}",
        v.verdict.as_str()
    )
}

/// The exit code of a check: 0 healthy, 1 sick (a finding to act on), 2 unusable (nothing
/// judged: no reference, a run that did not complete, a shape nothing is like).
pub fn check_code(h: Health) -> u8 {
    match h {
        Health::Healthy => 0,
        Health::Drifted | Health::Outlier | Health::Busy => 1,
        Health::Partial
        | Health::Crashed
        | Health::Failed
        | Health::Missing
        | Health::NotRun
        | Health::NotJudged => 2,
    }
}

/// The probes `oslab check` measures: one or two per thing a node goes wrong in, each quick
/// (the set took 5-6 s with `--quick` on a 2-cpu guest, start to stored): the clock source
/// (its reads), mitigations, seccomp and audit (system calls), a busy or throttled cpu
/// (wake-ups within and across cpus, a fork), the caches and memory (a chase over sizes and one
/// far beyond the caches with its pages, bandwidth on one thread and on every cpu, THP's
/// population).
pub const CHECK_PROBES: [&str; 11] = [
    "timer.rdtsc",
    "timer.clock_gettime",
    "syscall.getppid",
    "syscall.read.devzero",
    "switch.thread.pipe",
    "switch.process.pipe",
    "task.fork",
    "memory.latency.random",
    "memory.latency.pages",
    "bandwidth.threads",
    "faults.populate",
];

/// What `fleet reference save` kept.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Saved {
    /// The reference's name.
    pub name: String,
    /// The job its runs are from.
    pub job: String,
    /// Its nodes (healthy in the job).
    pub nodes: Vec<String>,
    /// The job's nodes left out, with their verdict and why.
    pub left_out: Vec<(String, Health, Vec<String>)>,
}

/// Saves the nodes of `job` its own summary calls healthy as reference `name`, replacing what
/// the name held. Refused with fewer than [`MIN_NODES`] healthy nodes: a reference of two cannot
/// tell which of them a third differs from.
pub fn save(
    store: &mut Store,
    job: &str,
    name: &str,
    min_effect: f64,
) -> Result<Saved, JobSummaryError> {
    oslab_core::tags::check_tag(REFERENCE_TAG, name)
        .map_err(|e| JobSummaryError::Usage(e.to_string()))?;
    let (job, runs) = node_runs(store, job)?;
    if runs.is_empty() {
        return Err(JobSummaryError::Usage(format!(
            "no runs of fleet job {job} in {} (collect them first)",
            store.path().display()
        )));
    }
    let s = summary::summarize_by_shape(&runs, min_effect);
    let healthy = |node: &str| {
        s.verdicts
            .iter()
            .any(|v| v.node == node && v.verdict == Health::Healthy)
    };
    let kept: Vec<&NodeRun> = runs.iter().filter(|r| healthy(&r.node)).collect();
    let left_out: Vec<(String, Health, Vec<String>)> = s
        .verdicts
        .iter()
        .filter(|v| v.verdict != Health::Healthy)
        .map(|v| (v.node.clone(), v.verdict, v.why.clone()))
        .collect();
    if kept.len() < MIN_NODES {
        let why: Vec<String> = left_out
            .iter()
            .map(|(n, h, _)| format!("{n} {}", h.as_str()))
            .collect();
        return Err(JobSummaryError::Usage(format!(
            "job {job} has {} healthy of {} (a reference needs {MIN_NODES}){}",
            oslab_core::units::counted(kept.len(), "node"),
            runs.len(),
            match why.is_empty() {
                true => String::new(),
                false => format!(": {}", why.join(", ")),
            }
        )));
    }
    let ids: Vec<i64> = kept.iter().map(|r| r.run_id).collect();
    store.retag(REFERENCE_TAG, name, &ids)?;
    Ok(Saved {
        name: name.to_string(),
        job: job.to_string(),
        nodes: kept.iter().map(|r| r.node.clone()).collect(),
        left_out,
    })
}

/// The runs of reference `name`, each its node's as `NODE@JOB`, marked as references.
pub fn runs(store: &Store, name: &str) -> Result<Vec<NodeRun>, JobSummaryError> {
    let ids = store.tagged(REFERENCE_TAG, name)?;
    if ids.is_empty() {
        return Err(JobSummaryError::Usage(format!(
            "no reference {name:?} in {} (save one: oslab fleet reference save JOB --name {name})",
            store.path().display()
        )));
    }
    let mut out = Vec::new();
    for id in ids {
        let tags = store.tags(id)?;
        let node = tags
            .get(NODE_TAG)
            .cloned()
            .unwrap_or_else(|| format!("run {id}"));
        let job = tags.get(JOB_TAG).cloned().unwrap_or_default();
        let mut r = node_run(store, format!("{node}@{job}"), id)?;
        r.reference = true;
        out.push(r);
    }
    Ok(out)
}

/// Node `mine` judged against a reference's runs (read once by [`runs`]), on the measurements
/// it has (the reference's others would only raise the bar of the correction for many values).
pub fn check(
    mut all: Vec<NodeRun>,
    mine: NodeRun,
    min_effect: f64,
) -> Result<NodeVerdict, JobSummaryError> {
    let node = mine.node.clone();
    let keys: std::collections::HashSet<_> = mine
        .measurements
        .iter()
        .map(oslab_core::stats::compare::key)
        .collect();
    for r in &mut all {
        r.measurements
            .retain(|m| keys.contains(&oslab_core::stats::compare::key(m)));
    }
    all.push(mine);
    let s = summary::summarize_by_shape(&all, min_effect);
    s.verdicts
        .into_iter()
        .find(|v| v.node == node)
        .ok_or_else(|| JobSummaryError::Usage(format!("node {node} was not judged")))
}
