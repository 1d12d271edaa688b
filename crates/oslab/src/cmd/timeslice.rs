//! `oslab timeslice`: N processes on one CPU, their schedule, slices and switches.

use super::session::Session;
use crate::cli::TimesliceArgs;
use crate::error::usage;
use oslab_core::affinity::AffinityGuard;
use oslab_core::model::Unit;
use oslab_core::text::{Block, Table};
use oslab_core::units::value;
use oslab_core::CpuSet;
use oslab_probes::activity::Threshold;
use oslab_probes::timeslice::{self, SchedClass};
use oslab_probes::ProbeError;
use std::process::ExitCode;

pub fn run(args: TimesliceArgs) -> anyhow::Result<ExitCode> {
    let counts: Vec<usize> = match (args.procs, args.sweep) {
        (Some(0), _) | (_, Some(0)) => return Err(usage("--procs/--sweep must be at least 1")),
        (Some(n), _) => vec![n],
        (None, Some(k)) => (1..=k).collect(),
        (None, None) => vec![2, 3, 4, 5],
    };
    if counts.iter().any(|&n| n > 256) {
        return Err(usage("at most 256 processes"));
    }
    let policy = args.policy;
    if policy == SchedClass::RoundRobin && !oslab_core::affinity::fifo_permitted() {
        return Err(usage(
            "--policy rr needs permission for real-time scheduling (root, CAP_SYS_NICE or an RLIMIT_RTPRIO)",
        ));
    }
    let mut session = Session::open(false, args.cpu.as_deref(), None, &args.store)?;
    let clock = session.machine.clock().clone();
    let threshold = Threshold::from_arg(args.threshold.as_deref(), &clock).map_err(usage)?;
    // We wait on another cpu when there is one, so we never take the measured cpu from them.
    let watcher = oslab_core::placement::watcher(&session.allowed, session.cpu);
    let _away = watcher
        .map(|c| AffinityGuard::pin_current(&CpuSet::single(c)))
        .transpose()?;
    let mut measurements = Vec::new();
    let mut timeline = Vec::new();
    let mut doc = vec![Block::Text(format!("threshold: {}", threshold.how))];
    let mut interrupted = false;
    let mut offset = 0.0;
    let mut summary = Table::new(&["procs", "slice", "switch", "switches"], &[0, 1, 2, 3]);
    for &n in &counts {
        let rec = match timeslice::record(
            &clock,
            session.cpu,
            n,
            args.duration,
            policy,
            threshold.ticks,
        ) {
            Ok(r) => r,
            Err(ProbeError::Interrupted) => {
                interrupted = true;
                break;
            }
            Err(e) => return Err(e.into()),
        };
        let slices = timeslice::schedule(&rec.processes);
        let switches = timeslice::switches(&clock, &slices);
        timeline.extend(timeslice::timeline(&clock, &rec, &slices, offset));
        offset += args.duration.as_nanos() as f64 * 1.05;
        let ms = timeslice::summarise("timeslice", &clock, &rec, policy, session.cpu);
        doc.push(Block::Text(format!(
            "\n{n} processes on cpu {} ({}):",
            session.cpu,
            policy.name()
        )));
        let mut table = Table::new(&["from", "to", "switch", "slice"], &[0, 1, 2, 3]);
        let limit = if args.all { usize::MAX } else { 20 };
        for (from, to, sw, slice) in switches.iter().take(limit) {
            table.row(vec![
                from.to_string(),
                to.to_string(),
                value(*sw, Unit::Ns),
                value(*slice, Unit::Ns),
            ]);
        }
        doc.push(Block::Table(table));
        if switches.len() > limit {
            doc.push(Block::Text(format!(
                "  ... {} more (--all)",
                switches.len() - limit
            )));
        }
        let median = |metric: &str| {
            ms.iter()
                .find(|m| m.metric == metric)
                .and_then(|m| m.summary.as_ref())
                .map_or("-".to_string(), |s| value(s.median, Unit::Ns))
        };
        summary.row(vec![
            n.to_string(),
            median("slice"),
            median("switch"),
            switches.len().to_string(),
        ]);
        measurements.extend(ms);
    }
    if summary.rows.len() > 1 {
        doc.push(Block::Text(
            "\nslice and switch by number of processes (medians):".into(),
        ));
        doc.push(Block::Table(summary));
    }
    if let Some(path) = &args.trace {
        let doc = oslab_report::trace::chrome_trace("oslab timeslice", &timeline);
        std::fs::write(path, serde_json::to_vec(&doc)?)
            .map_err(|e| anyhow::anyhow!("cannot write the trace to {}: {e}", path.display()))?;
        eprintln!(
            "schedule written to {} (open it in https://ui.perfetto.dev)",
            path.display()
        );
    }
    let text = oslab_report::table::doc(&doc);
    session.finish(&measurements, &timeline, interrupted, args.json, Some(text))
}
