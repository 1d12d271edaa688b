//! `oslab activity`: the busy-loop tracker on one CPU, its periods stored as a timeline.

use super::session::{Pace, RecordedSession};
use crate::cli::ActivityArgs;
use crate::error::usage;
use oslab_core::catalog::id;
use oslab_probes::activity::{self, Threshold};
use oslab_probes::Options;
use oslab_report::activity::text;
use std::process::ExitCode;

pub fn run(args: ActivityArgs) -> anyhow::Result<ExitCode> {
    // Refused before anything is recorded, not after.
    if let Some(path) = &args.trace {
        oslab_files::check_writable(path).map_err(|e| usage(format!("--trace {e}")))?;
    }
    let mut session = RecordedSession::open(
        Pace::Full,
        args.cpu.as_deref().map(|c| ("--cpu", c)),
        None,
        &args.out,
    )?;
    let clock = session.machine.clock().clone();
    let threshold =
        Threshold::from_arg(args.options.threshold.as_deref(), &clock).map_err(usage)?;
    let limit = args.options.limit().map_err(usage)?;
    let recorded = {
        let _placed = session.place(args.no_rt)?;
        activity::record(&clock, threshold.ticks, limit)
    };
    // Interrupted: what was recorded until then is summarised and stored, marked so.
    let rec = recorded?;
    let interrupted = rec.interrupted;
    let track = format!("cpu {}", session.cpu);
    let timeline = activity::timeline(&clock, &rec, &track);
    let harness = session.harness();
    let options = Options::default();
    let cx = session.context(&harness, &options);
    let ms = activity::summarise(&cx, id::ACTIVITY, &rec, &threshold, None);
    if let Some(path) = &args.trace {
        oslab_report::trace::write(path, &format!("oslab activity, {track}"), &timeline)?;
        eprintln!(
            "timeline written to {} (open it in https://ui.perfetto.dev)",
            path.display()
        );
    }
    let extra = text(
        &threshold.how,
        &timeline,
        args.periods,
        session.cpu,
        &rec.interrupts,
    );
    session.finish(&ms, &timeline, interrupted, Some(extra))
}
