//! `oslab timeslice`: N processes on one CPU, their schedule, slices and switches.

use super::session::{Pace, RecordedSession};
use crate::cli::TimesliceArgs;
use crate::error::usage;
use oslab_core::CpuSet;
use oslab_os::affinity::AffinityGuard;
use oslab_probes::activity::Threshold;
use oslab_probes::timeslice::{self, Sweep, Swept};
use std::process::ExitCode;

pub fn run(args: TimesliceArgs) -> anyhow::Result<ExitCode> {
    let o = &args.options;
    // Refused before anything is recorded, not after.
    if let Some(path) = &args.trace {
        oslab_files::check_writable(path).map_err(|e| usage(format!("--trace {e}")))?;
    }
    let counts = o.counts().map_err(usage)?;
    let mut session = RecordedSession::open(
        Pace::Full,
        args.cpu.as_deref().map(|c| ("--cpu", c)),
        None,
        &args.out,
    )?;
    let clock = session.machine.clock().clone();
    let threshold = Threshold::from_arg(o.threshold.as_deref(), &clock).map_err(usage)?;
    // We wait on another cpu when there is one, so we never take the measured cpu from them.
    let watcher = oslab_os::placement::watcher(&session.allowed, session.cpu);
    let _away = watcher
        .map(|c| AffinityGuard::pin_current(&CpuSet::single(c)))
        .transpose()?;
    let sweep = Sweep {
        cpu: session.cpu,
        counts,
        duration: o.duration,
        class: o.policy,
        threshold: &threshold,
        shown: o.shown(),
    };
    let Swept {
        measurements,
        timeline,
        doc,
        interrupted,
    } = timeslice::sweep(&clock, &sweep)?;
    if let Some(path) = &args.trace {
        oslab_report::trace::write(path, "oslab timeslice", &timeline)?;
        eprintln!(
            "schedule written to {} (open it in https://ui.perfetto.dev)",
            path.display()
        );
    }
    let text = oslab_report::table::doc(&doc);
    session.finish(&measurements, &timeline, interrupted, Some(text))
}
