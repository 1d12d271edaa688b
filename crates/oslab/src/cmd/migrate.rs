//! `oslab migrate`: the matrix-multiply migration experiment
//! ([`oslab_probes::migration::experiment`]) on the cpus the user chose.

use super::session::{Pace, RecordedSession};
use crate::cli::MigrateArgs;
use crate::error::usage;
use oslab_os::affinity::{get_affinity, AffinityGuard};
use oslab_probes::migration::experiment;
use std::process::ExitCode;

/// Asks on a terminal whether to start a run of `minutes`; false without a terminal.
fn confirmed(minutes: f64) -> anyhow::Result<bool> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Ok(false);
    }
    eprint!("this run would take about {minutes:.0} minutes here. Start it? [y/N] ");
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

pub fn run(args: MigrateArgs) -> anyhow::Result<ExitCode> {
    let o = &args.options;
    let allowed = get_affinity(0)?;
    let from = o.from_cpu(&allowed);
    let mut session = RecordedSession::open(
        Pace::Full,
        Some(("--from", &from)),
        o.to.as_deref().map(|t| ("--to", t)),
        &args.out,
    )?;
    let to = o.to.as_ref().and(session.peer_cpu);
    let req = o
        .request(&session.machine.topology, &session.allowed, session.cpu, to)
        .map_err(usage)?;
    let estimate = experiment::estimate_seconds(&req);
    let minutes = estimate / 60.0;
    if estimate > experiment::UNASKED_SECONDS && !o.yes && !confirmed(minutes)? {
        return Err(usage(format!(
            "this run would take about {minutes:.0} minutes here (--size {}, --runs {}, {} kernel(s)); pass --yes to start it anyway, or a smaller --size or --runs",
            req.size,
            req.runs,
            req.kernels.len()
        )));
    }
    if estimate > 60.0 {
        eprintln!(
            "note: this takes about {minutes:.0} minutes here; Ctrl-C stops it at once and keeps the runs that completed"
        );
    }
    let outcome = {
        let _restore = AffinityGuard::pin_current(&session.allowed)?;
        experiment::run(&session.machine.topology, &req, &mut |line| {
            eprintln!("{line}")
        })?
    };
    session.finish(
        &outcome.measurements,
        &[],
        outcome.interrupted,
        Some(oslab_report::table::doc(&outcome.doc)),
    )
}
