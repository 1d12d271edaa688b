//! A run's first view: headline, metadata, a line per probe, what to distrust; `--details`
//! every row.

use super::measurements::{measurements, sweeps};
use crate::table::*;
use oslab_core::catalog::id;
use oslab_core::model::Measurement;
use oslab_core::text::one_line;

/// Which model judged a run shown with `--repredict`: this oslab's (`version`, `rev`), not the
/// one the run's header names, which measured it and stored its first predictions.
pub fn repredicted(version: &str, rev: &str) -> String {
    let rev = Some(rev).filter(|r| !r.is_empty());
    format!(
        "predictions: by this oslab's model ({version}{}), not the run's own\n",
        rev.map(|r| format!(", {r}")).unwrap_or_default()
    )
}

/// A run as text: by default the headline, a line per probe, what to distrust, the model in a
/// line and the warnings ([`crate::summary`]); with `details` every row, the sweeps, the
/// model's reasons per probe and the warnings with their fixes.
pub fn run(record: &oslab_store::RunRecord, ms: &[Measurement], details: bool) -> String {
    let mut out = format!(
        // The wall time before the version: at 80 columns the line wraps at the version's end,
        // not between "wall" and its value.
        "run {}  {}  {}  wall {:.1} s  host {}  oslab {}{}\n{}\n",
        record
            .id
            .map(|i| i.to_string())
            .unwrap_or_else(|| "-".into()),
        one_line(&record.started),
        record.status.as_str(),
        record.wall_s,
        one_line(&record.hostname),
        one_line(&record.oslab_version),
        record
            .git_rev
            .as_deref()
            .map(|r| format!(" ({})", one_line(r)))
            .unwrap_or_default(),
        one_line(&record.command),
    );
    if let Some(clock) = record
        .fingerprint
        .get("clock")
        .and_then(|c| serde_json::from_value::<oslab_core::Clock>(c.clone()).ok())
    {
        out.push_str(&format!("clock: {}\n", clock.describe()));
    }
    match record.status {
        oslab_store::RunStatus::Crashed => out.push_str(&format!(
            "crashed: the process that measured this run no longer exists (killed, out of memory, or the machine went down); it holds the {} measurements of the probes that completed\n",
            ms.len()
        )),
        oslab_store::RunStatus::Running => out.push_str(&format!(
            "running: still being measured; {} measurements so far\n",
            ms.len()
        )),
        _ => {}
    }
    let repetitions = ms.iter().map(|m| m.repetition).max().unwrap_or(1);
    if repetitions > 1 {
        out.push_str(&format!(
            "{repetitions} repetitions of each probe, shown pooled: the median of their medians, the interval spanning theirs (`oslab export` has each)\n"
        ));
    }
    let ms: &[Measurement] = &oslab_core::stats::repetitions::pooled(ms);
    let env =
        serde_json::from_value::<oslab_core::machine::Environment>(record.environment.clone()).ok();
    if !details {
        return out + &summary(record, ms, env.as_ref());
    }
    if let Some(headline) = crate::headline::table(ms) {
        out.push_str("\nheadline (details below; `oslab report` draws them)\n");
        out.push_str(&render(&headline));
        out.push('\n');
        out.push_str(&crate::headline::notes(ms));
        out.push_str("\ndetails\n");
    }
    let (swept, rest) = sweeps(ms);
    out.push_str(&swept);
    out.push_str(&measurements(&rest));
    out.push('\n');
    if let Some(matrix) =
        crate::numa::matrix(ms, crate::numa::Host::of(&record.fingerprint, env.as_ref()))
    {
        out.push('\n');
        out.push_str(&matrix);
    }
    if let Some(env) = env.filter(|e| !e.warnings.is_empty()) {
        out.push_str("\nenvironment warnings (they affect these numbers):\n");
        out.push_str(&crate::machine::warnings(&env));
    }
    out
}

/// The first view of a run, after its header.
fn summary(
    record: &oslab_store::RunRecord,
    ms: &[Measurement],
    env: Option<&oslab_core::machine::Environment>,
) -> String {
    use crate::summary;
    let mut out = String::new();
    if let Some(headline) = crate::headline::table(ms) {
        out.push_str("\nheadline\n");
        out.push_str(&render(&headline));
        out.push('\n');
        out.push_str(&crate::headline::notes(ms));
    }
    let id = record
        .id
        .map_or_else(|| "RUN".to_string(), |i| i.to_string());
    out.push_str(&format!(
        "\nevery probe, its main figure (all rows and the model's reasons: oslab show {id} --details; charts: oslab report {id})\n"
    ));
    out.push_str(&summary::probes(ms));
    out.push('\n');
    let distrust = summary::distrust(ms);
    if !distrust.is_empty() {
        out.push_str("\nwhat to distrust, by cause:\n");
        out.push_str(&distrust);
    }
    out.push_str(&summary::model_line(ms));
    let numa = ms.iter().any(|m| m.probe == id::NUMA_MATRIX);
    if summary::several_nodes(ms) {
        if let Some(matrix) =
            crate::numa::matrix(ms, crate::numa::Host::of(&record.fingerprint, env))
        {
            out.push('\n');
            out.push_str(&matrix);
        }
    } else if numa {
        out.push_str(
            "NUMA: one NUMA node here, so no matrix: there is no remote memory to compare\n",
        );
    }
    if let Some(env) = env.filter(|e| !e.warnings.is_empty()) {
        out.push_str("\nenvironment (`--details` says what to do about each):\n");
        out.push_str(&summary::warnings(env));
    }
    out
}
