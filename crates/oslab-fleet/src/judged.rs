//! A stored job judged: its nodes' runs with the ones its results directory or collection
//! listed that handed in nothing, against an earlier job's healthy nodes or a saved reference
//! (`fleet summary`), and one node through every job it was in (`fleet history`).

use crate::{
    job_dirs, node_runs, read_job, reference, summary, JobRef, JobSummaryError, NodeRun, NodeState,
    JOB_TAG, NODE_TAG, SUBMISSION_TAG,
};
use oslab_store::{Store, StoreError};
use std::collections::BTreeSet;
use std::path::Path;

/// What a job is judged against besides its own nodes: an earlier job's healthy nodes
/// (`--baseline JOB`), a saved reference (`--reference NAME`), both or neither.
#[derive(Debug, Clone, Default)]
pub struct Against {
    /// The earlier job.
    pub baseline: Option<String>,
    /// The saved reference's name.
    pub reference: Option<String>,
}

/// The summary of one job, named by its id (JOB or JOB.TOKEN) or by its results directory: with a
/// directory, the nodes listed there that have no stored run are judged too (missing, crashed,
/// failed, with what their files say). With a `baseline` job, its nodes that were healthy there
/// count as references in every median and majority (`n1@4711`): a job whose nodes are mostly
/// sick, or that moved as a whole (a new kernel everywhere, every node slower), is judged
/// against what the fleet was. A job the store holds no run of is a usage error.
pub fn job_summary(
    store: &Store,
    job: &str,
    against: &Against,
    min_effect: f64,
) -> Result<(JobRef, summary::FleetSummary), JobSummaryError> {
    let dir = Path::new(job);
    let listed = match dir.is_dir() {
        true => {
            let dirs = job_dirs(dir)?;
            let [(job, at)] = &dirs[..] else {
                return Err(JobSummaryError::Usage(format!(
                    "{} holds {} submissions: name one (RESULTS/JOB.TOKEN)",
                    dir.display(),
                    dirs.len()
                )));
            };
            Some(read_job(job, at)?)
        }
        false => None,
    };
    let name = listed
        .as_ref()
        .map_or(job.to_string(), |j| j.job.to_string());
    let (job, mut runs) = node_runs(store, &name)?;
    if runs.is_empty() {
        return Err(JobSummaryError::Usage(format!(
            "no runs of fleet job {name} in {} (collect them first: oslab fleet collect RESULTS/{name})",
            store.path().display()
        )));
    }
    if let Some(b) = &against.baseline {
        runs.extend(references(store, b, min_effect)?);
    }
    if let Some(name) = &against.reference {
        runs.extend(reference::runs(store, name)?);
    }
    let mut s = summary::summarize_by_shape(&runs, min_effect);
    // The listed nodes: from the results directory, else as collected.
    let states = match &listed {
        Some(j) => j.states(),
        None => listed_nodes(store, &job)?,
    };
    add_absent(&mut s, &runs, states);
    Ok((job, s))
}

/// The nodes job `job` listed and how each ended, as its collection recorded them.
fn listed_nodes(
    store: &Store,
    job: &JobRef,
) -> Result<Vec<(String, NodeState, String)>, StoreError> {
    Ok(store
        .job_nodes(&job.job, job.token.as_deref().unwrap_or(""))?
        .into_iter()
        .map(|(n, st, d)| (n, NodeState::parse(&st), d))
        .collect())
}

/// A verdict for each listed node with no run among `runs` (missing, crashed, failed).
fn add_absent(
    s: &mut summary::FleetSummary,
    runs: &[NodeRun],
    states: Vec<(String, NodeState, String)>,
) {
    for (node, state, detail) in states {
        if !runs.iter().any(|r| r.node == node) {
            s.verdicts
                .push(summary::NodeVerdict::absent(&node, state, &detail));
        }
    }
}

/// One job as one node lived it (`oslab fleet history NODE`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct NodeInJob {
    /// The job (JOB.TOKEN).
    pub job: String,
    /// When the node's run began (the job's first run, for a node that handed in none).
    pub started: String,
    /// The node's run in the store; none when it handed in nothing.
    pub run_id: Option<i64>,
    /// How many nodes of the job were judged with it.
    pub nodes: usize,
    /// Its verdict there, and why.
    pub verdict: summary::Health,
    /// Why, in short clauses.
    pub why: Vec<String>,
}

/// Every collected job `node` ran in or was listed for, oldest first, with its verdict there
/// (each job judged as `fleet summary JOB` judges it): when it drifted, when it first went
/// slow, and the jobs it crashed in or handed nothing in to.
pub fn node_history(
    store: &Store,
    node: &str,
    min_effect: f64,
) -> Result<Vec<NodeInJob>, JobSummaryError> {
    let mut jobs = BTreeSet::new();
    for run in store.tagged(NODE_TAG, node)? {
        let tags = store.tags(run)?;
        if let Some(job) = tags.get(JOB_TAG) {
            jobs.insert(JobRef {
                job: job.clone(),
                token: tags.get(SUBMISSION_TAG).cloned(),
            });
        }
    }
    for (job, token) in store.node_jobs(node)? {
        jobs.insert(JobRef {
            job,
            token: (!token.is_empty()).then_some(token),
        });
    }
    let mut out = Vec::new();
    for job in jobs {
        let (_, runs) = node_runs(store, &job.to_string())?;
        let mut s = summary::summarize_by_shape(&runs, min_effect);
        add_absent(&mut s, &runs, listed_nodes(store, &job)?);
        let started = match runs.iter().find(|r| r.node == node) {
            Some(run) => run.started.clone(),
            None => runs
                .iter()
                .map(|r| r.started.clone())
                .min()
                .unwrap_or_default(),
        };
        let nodes = s.verdicts.len();
        if let Some(v) = s.verdicts.into_iter().find(|v| v.node == node) {
            out.push(NodeInJob {
                job: job.to_string(),
                started,
                run_id: v.run_id,
                nodes,
                verdict: v.verdict,
                why: v.why,
            });
        }
    }
    out.sort_by(|a, b| a.started.cmp(&b.started));
    Ok(out)
}

/// The nodes of job `baseline` that its own summary called healthy, renamed `NODE@JOB`, as
/// references for another job.
fn references(
    store: &Store,
    baseline: &str,
    min_effect: f64,
) -> Result<Vec<NodeRun>, JobSummaryError> {
    let (job, runs) = node_runs(store, baseline)?;
    if runs.is_empty() {
        return Err(JobSummaryError::Usage(format!(
            "no runs of baseline job {baseline} in the store (collect it first)"
        )));
    }
    let own = summary::summarize_by_shape(&runs, min_effect);
    let healthy = |node: &str| {
        own.verdicts
            .iter()
            .any(|v| v.node == node && v.verdict == summary::Health::Healthy)
    };
    Ok(runs
        .into_iter()
        .filter(|r| healthy(&r.node))
        .map(|mut r| {
            r.node = format!("{}@{}", r.node, job.job);
            r.reference = true;
            r
        })
        .collect())
}
