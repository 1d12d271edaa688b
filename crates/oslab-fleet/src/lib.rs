//! A fleet: the suite run on every node of a Slurm cluster. Slurm schedules; [`slurm`] writes
//! its batch script and talks to its clients, [`submit`] checks a job and submits it, one task
//! per node leaves its run in a shared directory, [`collect`] stores what the nodes left, and
//! [`summary`] shows the nodes side by side:
//!
//! ```text
//! RESULTS/slurm-JOB.out          the job's output (every node's run table)
//! RESULTS/JOB/fleet.json         what was submitted (nodes, run arguments), for collect
//! RESULTS/JOB/node-NAME.json     one node's run (oslab.run/1)
//! RESULTS/JOB/node-NAME.failed   why a node has none
//! ```

#![deny(missing_docs)]

#[cfg(feature = "clap")]
pub mod args;
pub mod slurm;
pub mod submit;
pub mod summary;
pub mod task;

pub use summary::{summarize, FleetSummary, NodeRun};

use oslab_core::files::{read_bounded, FileError, Links};
use oslab_store::exchange::{self, ImportFailed, RunDocument};
use oslab_store::{RunRecord, RunRef, Store, StoreError};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Tag key of a collected run's job.
pub const JOB_TAG: &str = "fleet.job";
/// Tag key of a collected run's node.
pub const NODE_TAG: &str = "fleet.node";
/// The manifest written at submission.
pub const MANIFEST: &str = "fleet.json";

/// A node's result file, or its failure note.
pub fn node_file(job_dir: &Path, node: &str, failed: bool) -> PathBuf {
    job_dir.join(format!(
        "node-{node}.{}",
        if failed { "failed" } else { "json" }
    ))
}

/// (node, failed) for a file name written by [`node_file`]; none for a name [`node_file`]
/// would not write (a node name [`is_node_name`] refuses).
pub fn parse_node_file(name: &str) -> Option<(&str, bool)> {
    let rest = name.strip_prefix("node-")?;
    let (node, failed) = match rest.strip_suffix(".json") {
        Some(n) => (n, false),
        None => (rest.strip_suffix(".failed")?, true),
    };
    is_node_name(node).then_some((node, failed))
}

/// Slurm job ids: digits, or array jobs "123_4".
pub fn is_job_id(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || c == '_')
}

/// Node names become file names: no separators, nothing hidden.
pub fn is_node_name(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('.')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

/// What one job directory holds.
pub struct JobResults {
    /// The job id.
    pub job: String,
    /// (node, the file of its run, validated): read again when stored, one at a time.
    pub runs: Vec<(String, PathBuf)>,
    /// (node, why it has no run).
    pub failed: Vec<(String, String)>,
    /// The nodes the job was submitted to (from the manifest).
    pub expected: Vec<String>,
}

/// (job, directory) pairs: DIR itself when it holds node files, else its job-id subdirectories.
pub fn job_dirs(dir: &Path) -> Result<Vec<(String, PathBuf)>, FileError> {
    let holds_nodes = |d: &Path| {
        std::fs::read_dir(d).is_ok_and(|it| {
            it.flatten()
                .any(|e| e.file_name().to_str().and_then(parse_node_file).is_some())
        })
    };
    let name = |d: &Path| d.file_name().and_then(|n| n.to_str()).map(str::to_string);
    let cannot = |e: std::io::Error| FileError(format!("cannot read {}: {e}", dir.display()));
    let entries = std::fs::read_dir(dir).map_err(cannot)?;
    let mut out = Vec::new();
    if holds_nodes(dir) {
        let canon = dir.canonicalize().map_err(cannot)?;
        let job = name(&canon).filter(|j| is_job_id(j)).ok_or_else(|| {
            FileError(format!(
                "{} holds node results but is not named after a job id",
                dir.display()
            ))
        })?;
        out.push((job, dir.to_path_buf()));
    } else {
        for e in entries.flatten() {
            let p = e.path();
            if let Some(job) = name(&p).filter(|j| is_job_id(j)) {
                if holds_nodes(&p) {
                    out.push((job, p));
                }
            }
        }
    }
    if out.is_empty() {
        return Err(FileError(format!(
            "no fleet results under {} (expected DIR/JOB/node-NAME.json, as `oslab fleet submit --results DIR` writes)",
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
pub fn read_job(job: &str, dir: &Path) -> Result<JobResults, FileError> {
    let mut r = JobResults {
        job: job.to_string(),
        runs: Vec::new(),
        failed: Vec::new(),
        expected: Vec::new(),
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| FileError(format!("cannot read {}: {e}", dir.display())))?
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    for path in files {
        let Some(fname) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        match parse_node_file(fname) {
            Some((node, false)) => {
                exchange::read_file(&path, Links::Refuse)?;
                r.runs.push((node.to_string(), path.clone()));
            }
            Some((node, true)) => {
                // One line, nothing that acts on a terminal: the file is the node's to write.
                let why = match read_bounded(&path, FAILED_MAX, Links::Refuse) {
                    Ok(b) => {
                        oslab_core::text::one_line(String::from_utf8_lossy(&b).trim()).into_owned()
                    }
                    Err(e) => format!("(its reason is not shown: {e})"),
                };
                r.failed.push((node.to_string(), why));
            }
            None => {}
        }
    }
    if let Ok(text) = read_bounded(&dir.join(MANIFEST), MANIFEST_MAX, Links::Refuse) {
        let v: serde_json::Value = serde_json::from_slice(&text)
            .map_err(|e| FileError(format!("{}: {e}", dir.join(MANIFEST).display())))?;
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
    /// Expected nodes with neither a run nor a failure note.
    pub missing: Vec<String>,
}

impl Collected {
    /// What collecting `j` did, in lines: runs stored, nodes that failed, nodes not heard from.
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
        for (node, why) in &j.failed {
            out.push(format!("job {}: node {node} failed: {why}", j.job));
        }
        if !self.missing.is_empty() {
            out.push(format!(
                "job {}: no result yet from {} (still running, or lost: see slurm-{}.out)",
                j.job,
                self.missing.join(", "),
                j.job
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
        let failed: Vec<serde_json::Value> = j
            .failed
            .iter()
            .map(|(node, why)| serde_json::json!({"node": node, "why": why}))
            .collect();
        serde_json::json!({
            "job": j.job, "new": new, "already": self.already,
            "failed": failed, "missing": self.missing,
        })
    }
}

/// Stores a job's runs not stored before, each in one transaction, tagged with job and node.
pub fn collect(store: &mut Store, j: &JobResults) -> Result<Collected, ImportFailed> {
    let have: BTreeSet<String> = store
        .tagged(JOB_TAG, &j.job)?
        .into_iter()
        .filter_map(|id| store.tags(id).ok()?.get(NODE_TAG).cloned())
        .collect();
    let mut new = Vec::new();
    for (node, path) in &j.runs {
        if have.contains(node) {
            continue;
        }
        let doc = exchange::read_file(path, Links::Refuse).map_err(ImportFailed::Invalid)?;
        let record = RunRecord {
            id: None,
            ..doc.run.clone()
        };
        let tags = [(JOB_TAG, j.job.as_str()), (NODE_TAG, node.as_str())];
        let id = store.save_tagged_run(&record, &doc.measurements, &doc.timeline, &tags)?;
        new.push((node.clone(), id));
    }
    let seen: BTreeSet<&str> = j
        .runs
        .iter()
        .map(|r| r.0.as_str())
        .chain(j.failed.iter().map(|f| f.0.as_str()))
        .collect();
    let missing = j
        .expected
        .iter()
        .filter(|n| !seen.contains(n.as_str()))
        .cloned()
        .collect();
    Ok(Collected {
        already: j.runs.len() - new.len(),
        new,
        missing,
    })
}

/// The collected runs of fleet job `job`, one per node.
pub fn node_runs(store: &Store, job: &str) -> Result<Vec<NodeRun>, StoreError> {
    let mut runs = Vec::new();
    for id in store.tagged(JOB_TAG, job)? {
        let node = store
            .tags(id)?
            .get(NODE_TAG)
            .cloned()
            .unwrap_or_else(|| format!("run{id}"));
        let (record, measurements) = store.load_run(&RunRef::Id(id))?;
        let shape =
            serde_json::from_value::<oslab_core::Topology>(record.fingerprint["topology"].clone())
                .ok()
                .map(|t| t.shape());
        runs.push(NodeRun {
            node,
            run_id: id,
            measurements,
            shape,
        });
    }
    Ok(runs)
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
        oslab_core::files::write_whole(to, &doc).map_err(|e| e.to_string())
    })();
    remove_store_files(db);
    exported
}

/// Removes a store and its WAL files.
pub fn remove_store_files(db: &Path) {
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
        let f = node_file(d, "n01", false);
        assert_eq!(f, Path::new("/r/42/node-n01.json"));
        let name = f.file_name().unwrap().to_str().unwrap();
        assert_eq!(parse_node_file(name), Some(("n01", false)));
        assert_eq!(parse_node_file("node-gpu-3.failed"), Some(("gpu-3", true)));
        // A name node_file would not write is no node's file.
        assert_eq!(parse_node_file("node-a\nb.json"), None);
        assert_eq!(parse_node_file("node-.hidden.json"), None);
        assert_eq!(parse_node_file("node-\u{1b}[2J.failed"), None);
        assert_eq!(parse_node_file("fleet.json"), None);
        assert!(is_job_id("123") && is_job_id("123_4") && !is_job_id("x1") && !is_job_id(""));
        assert!(is_node_name("n01.cluster") && !is_node_name("../x") && !is_node_name(".h"));
    }
}
