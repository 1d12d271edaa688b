//! `oslab fleet collect DIR`: every node's result of one job (DIR = RESULTS/JOB) or of every job
//! (DIR = RESULTS), validated before anything is stored, each stored in one transaction and
//! tagged with its job and node. Runs already collected are skipped, so collecting again after
//! late nodes finish is safe.

use super::{is_job_id, parse_node_file, JOB_TAG, MANIFEST, NODE_TAG};
use crate::cli::FleetCollectArgs;
use crate::cmd::exchange::read_document;
use crate::cmd::{open_store, read_bounded, Links};
use oslab_store::exchange::RunDocument;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What one job directory holds.
struct JobResults {
    job: String,
    runs: Vec<(String, PathBuf, RunDocument)>,
    failed: Vec<(String, String)>,
    expected: Vec<String>,
}

pub fn run(args: FleetCollectArgs) -> anyhow::Result<ExitCode> {
    let dirs = job_dirs(&args.dir)?;
    // Read and validate everything first: all or nothing.
    let jobs = dirs
        .iter()
        .map(|(job, dir)| read_job(job, dir))
        .collect::<anyhow::Result<Vec<_>>>()
        .map_err(|e| anyhow::anyhow!("{e}\nNothing was collected."))?;
    let mut store = open_store(&args.store)?;
    for j in jobs {
        let have: BTreeSet<String> = store
            .tagged(JOB_TAG, &j.job)?
            .into_iter()
            .filter_map(|id| store.tags(id).ok()?.get(NODE_TAG).cloned())
            .collect();
        let mut new = Vec::new();
        for (node, _path, doc) in &j.runs {
            if have.contains(node) {
                continue;
            }
            let record = oslab_store::RunRecord {
                id: None,
                ..doc.run.clone()
            };
            let id = store.save_tagged_run(
                &record,
                &doc.measurements,
                &doc.timeline,
                &[(JOB_TAG, &j.job), (NODE_TAG, node)],
            )?;
            new.push(format!("{node} (run {id})"));
        }
        let seen: BTreeSet<&str> = j
            .runs
            .iter()
            .map(|r| r.0.as_str())
            .chain(j.failed.iter().map(|f| f.0.as_str()))
            .collect();
        let missing: Vec<&str> = j
            .expected
            .iter()
            .map(String::as_str)
            .filter(|n| !seen.contains(n))
            .collect();
        eprintln!(
            "job {}: collected {} run(s){}{}",
            j.job,
            new.len(),
            if new.is_empty() {
                String::new()
            } else {
                format!(": {}", new.join(", "))
            },
            match j.runs.len() - new.len() {
                0 => String::new(),
                k => format!("; {k} already in the store"),
            }
        );
        for (node, why) in &j.failed {
            eprintln!("job {}: node {node} failed: {why}", j.job);
        }
        if !missing.is_empty() {
            eprintln!(
                "job {}: no result yet from {} (still running, or lost: see slurm-{}.out)",
                j.job,
                missing.join(", "),
                j.job
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// (job, directory) pairs: DIR itself when it holds node files, else its job-id subdirectories.
fn job_dirs(dir: &Path) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let holds_nodes = |d: &Path| {
        std::fs::read_dir(d).is_ok_and(|it| {
            it.flatten()
                .any(|e| e.file_name().to_str().and_then(parse_node_file).is_some())
        })
    };
    let name = |d: &Path| d.file_name().and_then(|n| n.to_str()).map(str::to_string);
    let entries = std::fs::read_dir(dir)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", dir.display()))?;
    let mut out = Vec::new();
    if holds_nodes(dir) {
        let canon = dir.canonicalize()?;
        let job = name(&canon).filter(|j| is_job_id(j)).ok_or_else(|| {
            anyhow::anyhow!(
                "{} holds node results but is not named after a job id",
                dir.display()
            )
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
        anyhow::bail!(
            "no fleet results under {} (expected DIR/JOB/node-NAME.json, as `oslab fleet submit --results DIR` writes)",
            dir.display()
        );
    }
    out.sort();
    Ok(out)
}

/// Largest failure reason and manifest read from a results directory.
const FAILED_MAX: u64 = 64 << 10;
const MANIFEST_MAX: u64 = 16 << 20;

fn read_job(job: &str, dir: &Path) -> anyhow::Result<JobResults> {
    let mut r = JobResults {
        job: job.to_string(),
        runs: Vec::new(),
        failed: Vec::new(),
        expected: Vec::new(),
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
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
                // Nodes write here: a link (to /etc/shadow, say) is refused, not followed.
                let doc = read_document(&path, Links::Refuse)?;
                r.runs.push((node.to_string(), path.clone(), doc));
            }
            Some((node, true)) => {
                let why = match read_bounded(&path, FAILED_MAX, Links::Refuse) {
                    Ok(b) => String::from_utf8_lossy(&b).trim().to_string(),
                    Err(e) => format!("(its reason is not shown: {e})"),
                };
                r.failed.push((node.to_string(), why));
            }
            None => {}
        }
    }
    if let Ok(text) = read_bounded(&dir.join(MANIFEST), MANIFEST_MAX, Links::Refuse) {
        let v: serde_json::Value = serde_json::from_slice(&text)
            .map_err(|e| anyhow::anyhow!("{}: {e}", dir.join(MANIFEST).display()))?;
        r.expected = v["nodes"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|n| n.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
    }
    Ok(r)
}
