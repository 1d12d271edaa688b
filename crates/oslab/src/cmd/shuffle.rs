//! `oslab shuffle`: the lock-contention shuffler on a live process.

use super::session::{Pace, RecordedSession};
use crate::cli::{ShuffleArgs, ShuffleCommand, ShuffleSimulateArgs};
use crate::error::usage;
use oslab_os::signals;
use oslab_shuffle::live::{self, Process};
use oslab_shuffle::profile::Profile;
use oslab_store::RunRef;
use std::process::ExitCode;

pub fn run(args: ShuffleArgs) -> anyhow::Result<ExitCode> {
    if let Some(ShuffleCommand::Simulate(a)) = args.simulate {
        return simulate(a);
    }
    let running = args.pid.map(Process::running).transpose().map_err(usage)?;
    let mut session = RecordedSession::open(Pace::Full, None, None, &args.out)?;
    let target = match running {
        Some(t) => t,
        None => Process::start(&args.command, args.out.json).map_err(usage)?,
    };
    let w = live::live(
        &args.watch,
        target,
        &session.placement_topology(),
        &signals::interrupted,
        &mut |l| eprintln!("{l}"),
    )
    .map_err(anyhow::Error::msg)?;
    session.finish(&w.measurements, &w.timeline, w.interrupted, Some(w.text))
}

/// `oslab shuffle simulate`: the study on a simulated machine, stored as a run.
fn simulate(mut a: ShuffleSimulateArgs) -> anyhow::Result<ExitCode> {
    if let Some(r) = a.request.profile.clone() {
        let store = super::store().open_to_read()?;
        let run: RunRef = r.parse().map_err(usage)?;
        let id = store.load_run(&run)?.0.id.unwrap_or_default();
        let profile = Profile::from_timeline(&store.load_timeline(&run)?)
            .map_err(|e| usage(format!("--profile {r}: run {id}: {e}")))?;
        eprintln!("profile of run {id}: {}", profile.describe());
        a.request.recorded = Some(profile);
    }
    let mut session = RecordedSession::open(Pace::Quick, None, None, &a.out)?.simulation();
    let t = std::time::Instant::now();
    let study = oslab_shuffle::study::study(&a.request, &signals::interrupted);
    eprintln!("simulated in {:.1} s", t.elapsed().as_secs_f64());
    let text = oslab_report::table::doc(&study.doc());
    session.finish(&study.measurements(), &[], study.interrupted, Some(text))
}
