//! `oslab migrate`: the matrix-multiply migration experiment
//! ([`oslab_probes::migration::experiment`]) on the cpus the user chose.

use super::session::RecordedSession;
use crate::cli::MigrateArgs;
use crate::error::usage;
use oslab_core::affinity::{get_affinity, AffinityGuard};
use oslab_core::placement;
use oslab_probes::migration::experiment::{self, Request};
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
    let (counters, undefined) = experiment::counters_of(&o.counters).map_err(usage)?;
    let allowed = get_affinity(0)?;
    let from = o.from.clone().unwrap_or_else(|| {
        let first = allowed.first().unwrap_or(0);
        (if allowed.contains(0) { 0 } else { first }).to_string()
    });
    let mut session = RecordedSession::open(
        false,
        Some(("--from", &from)),
        o.to.as_deref().map(|t| ("--to", t)),
        &args.out,
    )?;
    let a = session.cpu;
    let b = match (o.to.as_ref(), session.peer_cpu) {
        (Some(_), Some(p)) => p,
        _ => placement::farthest(&session.machine.topology, &session.allowed, a).ok_or_else(
            || {
                usage(format!(
                    "only cpu {a} is in our affinity mask: there is nowhere to migrate to"
                ))
            },
        )?,
    };
    let req = Request {
        size: o.size,
        kernels: o.kernels(),
        runs: o.runs,
        from: a,
        to: b,
        counters,
        undefined,
    };
    let need = oslab_probes::migration::matmul::Matmul::bytes(req.size);
    if let Some(free) = oslab_probes::buffer::available_memory() {
        if need > free / 2 {
            return Err(usage(format!(
                "a {n} x {n} multiply needs {} for its three matrices; {} is available (at most half is used): pass a smaller --size",
                oslab_core::units::bytes(need),
                oslab_core::units::bytes(free),
                n = req.size
            )));
        }
    }
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
