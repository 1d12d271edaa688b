//! Arguments of `oslab fleet`: submit, collect, summary, history and the nodes' task.

use clap::{Args, Subcommand};
use oslab_core::args::Output;
use oslab_core::reason::BadValue;
use std::path::PathBuf;

/// `oslab fleet`.
#[derive(Debug, Args)]
pub struct FleetArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: FleetCommand,
}

/// What `oslab fleet` does.
#[derive(Debug, Subcommand)]
pub enum FleetCommand {
    /// Write and submit an sbatch script: one `oslab run RUN-ARGS` per node, each exporting its
    /// run as JSON into the results directory; prints the job id.
    Submit(FleetSubmitArgs),
    /// Import every node's result of a fleet job (validated) into the store, tagged with the job.
    Collect(FleetCollectArgs),
    /// Node x measurement table of a collected job: fleet median, each node's deviation, outliers.
    Summary(FleetSummaryArgs),
    /// One node across every collected job it ran in or was listed for: its verdict in each,
    /// oldest first; exits 1 when its latest is not healthy.
    History(FleetHistoryArgs),
    /// Save a job's healthy nodes as a named reference (a partition's) that later jobs and
    /// `oslab check` are judged against.
    Reference(FleetReferenceArgs),
    /// (internal) One node's share of a fleet job, started by the sbatch script.
    #[command(hide = true)]
    Task(FleetTaskArgs),
}

/// `oslab fleet submit`.
#[derive(Debug, Args)]
pub struct FleetSubmitArgs {
    /// Partition, nodes, results directory and staging.
    #[command(flatten)]
    pub request: crate::submit::Request,
    /// Print the sbatch script instead of submitting it.
    #[arg(long)]
    pub dry_run: bool,
    /// Wait until the job has left the queue, then say how it and each node ended; exits 1
    /// unless the job completed and every node handed in a complete run.
    #[arg(long)]
    pub wait: bool,
    /// Print the job, its results directory and nodes as JSON (default: the job id alone).
    #[arg(long)]
    pub json: bool,
    /// Arguments of `oslab run` for every node (after --), e.g. -- --quick syscall.
    #[arg(last = true, value_name = "RUN-ARGS")]
    pub run_args: Vec<String>,
}

/// `oslab fleet collect`.
#[derive(Debug, Args)]
pub struct FleetCollectArgs {
    /// A job's results directory (RESULTS/JOBID), or RESULTS itself for every job in it.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Text or JSON.
    #[command(flatten)]
    pub out: Output,
}

/// `oslab fleet summary`.
#[derive(Debug, Args)]
pub struct FleetSummaryArgs {
    /// The job: its Slurm id, or JOB.TOKEN (as its results directory is named) where the store
    /// holds several submissions that got one id.
    /// Or the job's results directory (RESULTS/JOB.TOKEN): its nodes that handed in nothing,
    /// or crashed or failed, are judged too.
    #[arg(value_name = "JOB")]
    pub job: String,
    /// Exit 1 when any node is not healthy (busy, an outlier, drifted, partial, crashed, failed or
    /// missing): a node health check's answer.
    #[arg(long)]
    pub fail_on_outlier: bool,
    /// Print, not run, the `scontrol update ... State=DRAIN Reason=...` line of every node that
    /// is not healthy, and nothing else.
    #[arg(long, conflicts_with = "json")]
    pub drain: bool,
    /// An earlier job (JOB or JOB.TOKEN) whose healthy nodes count as references, NODE@JOB, in
    /// every median and majority: a job whose nodes are mostly sick, or that moved as a whole
    /// (a kernel update, every node slower), is judged against what the fleet was.
    #[arg(long, value_name = "JOB")]
    pub baseline: Option<String>,
    /// A saved reference (`oslab fleet reference save JOB --name NAME`) whose nodes count in
    /// every median and majority: two sick nodes of three are both found.
    #[arg(long, value_name = "NAME")]
    pub reference: Option<String>,
    /// List every measurement (default: those with an outlier, when there are more than 12 nodes).
    #[arg(long)]
    pub all: bool,
    /// The smallest deviation called an outlier.
    #[command(flatten)]
    pub effect: MinEffect,
    /// Text or JSON.
    #[command(flatten)]
    pub out: Output,
}

/// `oslab fleet history`.
#[derive(Debug, Args)]
pub struct FleetHistoryArgs {
    /// The node (its Slurm name).
    #[arg(value_name = "NODE")]
    pub node: String,
    /// The smallest deviation called an outlier.
    #[command(flatten)]
    pub effect: MinEffect,
    /// Text or JSON.
    #[command(flatten)]
    pub out: Output,
}

/// `oslab fleet task` (internal).
#[derive(Debug, Args)]
pub struct FleetTaskArgs {
    /// The results directory.
    #[arg(long, value_name = "DIR")]
    pub results: PathBuf,
    /// The submission's token.
    #[arg(long, value_name = "TOKEN", value_parser = parse_token)]
    pub submission: Option<String>,
    /// This binary is a copy staged for the task: removed when it ends.
    #[arg(long)]
    pub staged: bool,
    /// Arguments of `oslab run`.
    #[arg(last = true, value_name = "RUN-ARGS")]
    pub run_args: Vec<String>,
}

fn parse_token(s: &str) -> Result<String, BadValue> {
    crate::is_token(s)
        .then(|| s.to_string())
        .ok_or_else(|| BadValue(format!("{s:?}: a submission token is letters and digits")))
}

/// `oslab fleet reference`.
#[derive(Debug, Args)]
pub struct FleetReferenceArgs {
    /// What to do with references.
    #[command(subcommand)]
    pub command: FleetReferenceCommand,
}

/// What `oslab fleet reference` does.
#[derive(Debug, Subcommand)]
pub enum FleetReferenceCommand {
    /// Keep the nodes a collected job calls healthy (at least 3) as reference NAME, replacing
    /// what it held.
    Save(FleetReferenceSaveArgs),
}

/// `oslab fleet reference save`.
#[derive(Debug, Args)]
pub struct FleetReferenceSaveArgs {
    /// The job (JOB or JOB.TOKEN), collected.
    #[arg(value_name = "JOB")]
    pub job: String,
    /// The reference's name: the partition its nodes stand for.
    #[arg(long, value_name = "NAME")]
    pub name: String,
    /// The smallest deviation called an outlier.
    #[command(flatten)]
    pub effect: MinEffect,
    /// Text or JSON.
    #[command(flatten)]
    pub out: Output,
}

/// `oslab check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The saved reference to judge this node against (`oslab fleet reference save`).
    #[arg(long, value_name = "NAME")]
    pub reference: String,
    /// Print, not run, this node's `scontrol ... State=DRAIN` line when it is not healthy.
    #[arg(long)]
    pub drain: bool,
    /// Print, not run, this node's `scontrol ... State=RESUME` line when it is healthy.
    #[arg(long)]
    pub resume: bool,
    /// The smallest deviation called an outlier.
    #[command(flatten)]
    pub effect: MinEffect,
    /// Text or JSON.
    #[command(flatten)]
    pub out: Output,
}

/// The smallest deviation from the fleet's (or the reference's) median called an outlier: one
/// flag for every command that judges nodes.
#[derive(Debug, Args)]
pub struct MinEffect {
    /// The smallest deviation from the median called an outlier, e.g. 5% or 0.05 (a node is
    /// called only beyond this, its own interval and the noise between nodes).
    #[arg(long = "min-effect", default_value_t = crate::summary::DEFAULT_MIN_EFFECT,
        value_parser = oslab_core::units::parse_fraction)]
    pub min_effect: f64,
}
