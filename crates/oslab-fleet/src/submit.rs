//! Submitting a fleet job: the request checked against Slurm's syntax (a typo should not cost a
//! queue wait), the nodes chosen, the batch script written and submitted, and the manifest that
//! `collect` reads left in the job's directory.

use crate::slurm::{self, ScriptOptions, SlurmError};
use crate::{JobRef, NodeState, MANIFEST};
use oslab_files::write_whole;
use std::path::{Path, PathBuf};

/// Where and how the suite runs on the cluster.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct Request {
    /// Slurm partition (default: the cluster's default partition).
    #[cfg_attr(feature = "clap", arg(long, value_name = "P"))]
    pub partition: Option<String>,
    /// Nodes: a Slurm hostlist ("n[01-16],gpu3") or "all" (every node of the partition).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "LIST|all", default_value = "all")
    )]
    pub nodes: String,
    /// Share the nodes with other jobs (default: exclusive, so nothing else disturbs the numbers).
    #[cfg_attr(feature = "clap", arg(long))]
    pub shared: bool,
    /// Directory on a file system every node sees; each job writes RESULTS/JOBID/node-NAME.json.
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "DIR", default_value = "oslab-fleet")
    )]
    pub results: PathBuf,
    /// How the nodes get this oslab binary: sbcast (copied to each node's /tmp) or shared (this
    /// path is visible on every node).
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value_t = Stage::Sbcast))]
    pub stage: Stage,
    /// Slurm time limit, e.g. 30:00.
    #[cfg_attr(feature = "clap", arg(long, value_name = "TIME"))]
    pub time: Option<String>,
    /// How each node's step binds its cpus (srun --cpu-bind: none, cores, sockets, ldoms,
    /// map_cpu:0,2, ...); each run records the cpuset it got.
    #[cfg_attr(feature = "clap", arg(long, value_name = "BIND"))]
    pub cpu_bind: Option<String>,
    /// How each node's step binds its memory (srun --mem-bind: none, local, map_mem:0, ...).
    #[cfg_attr(feature = "clap", arg(long, value_name = "BIND"))]
    pub mem_bind: Option<String>,
}

/// How the nodes get the oslab binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Stage {
    /// Copied to each node's /tmp with sbcast.
    Sbcast,
    /// This path is visible on every node.
    Shared,
}

/// Why a job was not submitted.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    /// The request cannot be written as a batch script.
    #[error("{0}")]
    Invalid(String),
    /// Slurm refused or is not here.
    #[error(transparent)]
    Slurm(#[from] SlurmError),
    /// A file could not be written.
    #[error("{0}")]
    Io(String),
}

/// A job ready to submit.
#[derive(Debug)]
pub struct Plan {
    /// The batch script.
    pub script: String,
    /// The node names, when Slurm's clients could tell them.
    pub names: Option<Vec<String>>,
    /// The nodes as a hostlist.
    pub nodelist: String,
    /// Nodes of the partition left out, with their state.
    pub skipped: Vec<(String, String)>,
    /// Why the node list is left open in the script (a dry run where sinfo cannot answer).
    pub open: Option<String>,
    /// The results directory, absolute.
    pub results: PathBuf,
    /// The submission's token (see [`JobRef`]).
    pub token: String,
    binary: PathBuf,
    run_args: Vec<String>,
}

/// What a dry run without Slurm's clients writes where the node list goes.
const OPEN_NODELIST: &str = "NODES-FROM-SINFO";

impl Request {
    /// Checks the request and chooses the nodes; `dry_run` leaves the node list open where sinfo
    /// cannot answer (a dry run needs no cluster).
    pub fn plan(
        &self,
        binary: &Path,
        run_args: &[String],
        dry_run: bool,
    ) -> Result<Plan, SubmitError> {
        // Every value that goes into an #SBATCH line follows Slurm's syntax, or nothing is written.
        let invalid = SubmitError::Invalid;
        if let Some(p) = &self.partition {
            slurm::check_partition(p).map_err(|e| invalid(e.0))?;
        }
        if let Some(t) = &self.time {
            slurm::check_time(t).map_err(|e| invalid(e.0))?;
        }
        if self.nodes != "all" {
            slurm::check_hostlist(&self.nodes).map_err(|e| invalid(e.0))?;
        }
        for (flag, bind) in [
            ("--cpu-bind", &self.cpu_bind),
            ("--mem-bind", &self.mem_bind),
        ] {
            if let Some(b) = bind {
                slurm::check_bind(flag, b).map_err(|e| invalid(e.0))?;
            }
        }
        let results = std::path::absolute(&self.results)
            .map_err(|e| SubmitError::Io(format!("{}: {e}", self.results.display())))?;
        // Slurm reads --output's '%' as a pattern (%u, %x: another file than asked) and '\\'
        // as its escape; a space ends the #SBATCH line's value, '#' starts a comment in it, and
        // a quote opens a string sbatch cuts or refuses ("unclosed quote").
        if let Some(c) = results
            .to_string_lossy()
            .chars()
            .find(|c| c.is_whitespace() || c.is_control() || "%\\#'\"".contains(*c))
        {
            return Err(invalid(format!(
                "--results {}: Slurm's #SBATCH lines cannot carry a path with {c:?} in it (no spaces, '%', '\\', '#' or quotes): choose another directory",
                results.display()
            )));
        }
        let token = JobRef::draw_token()
            .map_err(|e| SubmitError::Io(format!("cannot draw a submission token: {e}")))?;
        let mut plan = Plan {
            token,
            script: String::new(),
            names: None,
            nodelist: self.nodes.clone(),
            skipped: Vec::new(),
            open: None,
            results,
            binary: binary.to_path_buf(),
            run_args: run_args.to_vec(),
        };
        if self.nodes != "all" {
            plan.names = slurm::hostnames(&self.nodes);
        } else {
            match slurm::partition_nodes(self.partition.as_deref()) {
                Err(e) if dry_run => {
                    plan.open = Some(e.to_string());
                    plan.nodelist = OPEN_NODELIST.into();
                }
                Err(e) => return Err(e.into()),
                Ok((ok, skipped)) if ok.is_empty() => {
                    let states: Vec<String> =
                        skipped.iter().map(|(n, s)| format!("{n} {s}")).collect();
                    return Err(SubmitError::Slurm(SlurmError(format!(
                        "no usable node in partition {} ({})",
                        self.partition.as_deref().unwrap_or("(default)"),
                        states.join(", ")
                    ))));
                }
                Ok((ok, skipped)) => {
                    plan.nodelist = ok.join(",");
                    plan.names = Some(ok);
                    plan.skipped = skipped;
                }
            }
        }
        plan.script = slurm::script(&ScriptOptions {
            partition: self.partition.as_deref(),
            nodelist: &plan.nodelist,
            node_count: plan.names.as_ref().map(Vec::len),
            exclusive: !self.shared,
            time: self.time.as_deref(),
            results: &plan.results,
            token: &plan.token,
            binary: &plan.binary,
            sbcast: self.stage == Stage::Sbcast,
            cpu_bind: self.cpu_bind.as_deref(),
            mem_bind: self.mem_bind.as_deref(),
            run_args: &plan.run_args,
        });
        Ok(plan)
    }
}

impl Plan {
    /// Submits the script; writes the job's manifest into RESULTS/JOB.TOKEN and returns the
    /// submission and that directory.
    pub fn submit(&self) -> Result<(JobRef, PathBuf), SubmitError> {
        let io = |e: &dyn std::fmt::Display| SubmitError::Io(e.to_string());
        let cannot = |p: &Path, e: std::io::Error| {
            SubmitError::Io(format!("cannot create {}: {e}", p.display()))
        };
        std::fs::create_dir_all(&self.results).map_err(|e| cannot(&self.results, e))?;
        let script_path = self
            .results
            .join(format!(".oslab-fleet-{}.sbatch", self.token));
        write_whole(&script_path, self.script.as_bytes()).map_err(|e| io(&e))?;
        let submitted = slurm::submit(&script_path);
        let _ = std::fs::remove_file(&script_path);
        let job = JobRef {
            job: submitted?,
            token: Some(self.token.clone()),
        };
        let job_dir = self.results.join(job.to_string());
        std::fs::create_dir_all(&job_dir).map_err(|e| cannot(&job_dir, e))?;
        let manifest = serde_json::json!({
            "job": job.job,
            "token": self.token,
            "nodes": self.names.clone().unwrap_or_default(),
            "nodelist": self.nodelist,
            "run_args": self.run_args,
            "submitted": oslab_core::time::utc_now(),
            "binary": self.binary,
            "script": self.script,
        });
        let text = serde_json::to_string_pretty(&manifest).map_err(|e| io(&e))?;
        write_whole(&job_dir.join(MANIFEST), text.as_bytes()).map_err(|e| io(&e))?;
        Ok((job, job_dir))
    }

    /// The job's output file.
    pub fn output(&self, job: &JobRef) -> PathBuf {
        self.results.join(format!("slurm-{job}.out"))
    }
}

/// How a job that left the queue ended, in lines: Slurm's word on the job, each node's state,
/// and, when anything went wrong, what the job's output says of it; true only when the job
/// completed and every node handed in a complete run.
pub fn ended(job: &JobRef, job_dir: &Path, output: &Path) -> (bool, Vec<String>) {
    let end = slurm::job_end(&job.job);
    let mut ok = end.as_ref().is_some_and(|e| e.completed());
    let mut lines = vec![match &end {
        Some(e) => format!(
            "job {} ended {} (exit {}{})",
            job.job,
            e.state,
            e.exit,
            e.reason
                .as_ref()
                .map_or(String::new(), |r| format!(", reason {r}"))
        ),
        None => format!(
            "job {} has left the queue; Slurm no longer says how it ended",
            job.job
        ),
    }];
    match crate::read_job(job, job_dir) {
        Ok(r) => {
            for (node, state, mut detail) in r.states() {
                ok &= state == NodeState::Ok;
                if state == NodeState::Missing {
                    // Not "yet": the job is over.
                    detail = "no result: the job ended without one (its output, below)".into();
                }
                lines.push(format!("  {node:<12} {:<8} {detail}", state.as_str()));
            }
        }
        Err(e) => {
            ok = false;
            lines.push(format!("  the nodes' results cannot be read: {e}"));
        }
    }
    if ok {
        return (true, lines);
    }
    lines.push(format!("the job's output: {}", output.display()));
    // What the job itself said went wrong (the first node's checks, each node's step).
    let said = oslab_files::read_bounded(output, 1 << 20, oslab_files::Links::Refuse)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    lines.extend(
        said.lines()
            .filter(|l| l.starts_with("oslab fleet:") || l.starts_with("srun: error"))
            .take(20)
            .map(|l| format!("  {}", oslab_core::text::one_line(l))),
    );
    if !output.exists() {
        lines.push(format!(
            "  (not written: the job's first node cannot see {}; --results must be on a file system every node mounts at the same path)",
            output.parent().unwrap_or(output).display()
        ));
    }
    (false, lines)
}
