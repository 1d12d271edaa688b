//! `oslab timeslice`: N processes on one CPU, their schedule, slices and switches.

use super::session::Session;
use crate::cli::TimesliceArgs;
use crate::error::usage;
use oslab_core::affinity::AffinityGuard;
use oslab_core::CpuSet;
use oslab_probes::activity::Threshold;
use oslab_probes::timeslice::{self, SchedClass, Sweep, Swept};
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
    let mut session = Session::open(
        false,
        args.cpu.as_deref().map(|c| ("--cpu", c)),
        None,
        &args.store,
    )?;
    let clock = session.machine.clock().clone();
    let threshold = Threshold::from_arg(args.threshold.as_deref(), &clock).map_err(usage)?;
    // We wait on another cpu when there is one, so we never take the measured cpu from them.
    let watcher = oslab_core::placement::watcher(&session.allowed, session.cpu);
    let _away = watcher
        .map(|c| AffinityGuard::pin_current(&CpuSet::single(c)))
        .transpose()?;
    let sweep = Sweep {
        cpu: session.cpu,
        counts,
        duration: args.duration,
        class: policy,
        threshold: &threshold,
        shown: if args.all { usize::MAX } else { 20 },
    };
    let Swept {
        measurements,
        timeline,
        doc,
        interrupted,
    } = timeslice::sweep(&clock, &sweep)?;
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
