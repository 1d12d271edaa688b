//! `oslab timeslice`: N processes on one CPU, their schedule, slices and switches.

use super::session::Session;
use crate::cli::TimesliceArgs;
use crate::error::usage;
use oslab_core::affinity::AffinityGuard;
use oslab_core::model::Unit;
use oslab_core::units::value;
use oslab_core::CpuSet;
use oslab_probes::timeslice::{self, SchedClass};
use oslab_probes::ProbeError;
use std::fmt::Write;
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
    let threshold = super::activity::threshold(args.threshold.as_deref(), &clock)?;
    // We wait on another cpu when there is one, so we never take the measured cpu from them.
    let watcher = oslab_core::placement::watcher(&session.allowed, session.cpu);
    let _away = watcher
        .map(|c| AffinityGuard::pin_current(&CpuSet::single(c)))
        .transpose()?;
    let mut measurements = Vec::new();
    let mut timeline = Vec::new();
    let mut text = format!("threshold: {}\n", threshold.how);
    let mut interrupted = false;
    let mut offset = 0.0;
    let mut summary = Vec::new();
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
        let _ = writeln!(
            text,
            "\n{n} processes on cpu {} ({}):",
            session.cpu,
            policy.name()
        );
        let _ = writeln!(
            text,
            "  {:>5} {:>5} {:>12} {:>12}",
            "from", "to", "switch", "slice"
        );
        let limit = if args.all { usize::MAX } else { 20 };
        for (from, to, sw, slice) in switches.iter().take(limit) {
            let _ = writeln!(
                text,
                "  {from:>5} {to:>5} {:>12} {:>12}",
                value(*sw, Unit::Ns),
                value(*slice, Unit::Ns)
            );
        }
        if switches.len() > limit {
            let _ = writeln!(text, "  ... {} more (--all)", switches.len() - limit);
        }
        let median = |metric: &str| {
            ms.iter()
                .find(|m| m.metric == metric)
                .and_then(|m| m.summary.as_ref())
                .map_or("-".to_string(), |s| value(s.median, Unit::Ns))
        };
        summary.push(format!(
            "  {n:>5} {:>12} {:>12} {:>9}",
            median("slice"),
            median("switch"),
            switches.len()
        ));
        measurements.extend(ms);
    }
    if summary.len() > 1 {
        let _ = writeln!(text, "\nslice and switch by number of processes (medians):");
        let _ = writeln!(
            text,
            "  {:>5} {:>12} {:>12} {:>9}",
            "procs", "slice", "switch", "switches"
        );
        for line in &summary {
            let _ = writeln!(text, "{line}");
        }
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
    session.finish(&measurements, &timeline, interrupted, args.json, Some(text))
}
