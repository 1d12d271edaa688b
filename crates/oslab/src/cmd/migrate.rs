//! `oslab migrate`: the matrix-multiply migration experiment
//! ([`oslab_probes::migration::experiment`]) on the cpus the user chose.

use super::session::RecordedSession;
use crate::cli::MigrateArgs;
use crate::error::usage;
use oslab_core::affinity::{get_affinity, AffinityGuard};
use oslab_core::placement;
use oslab_probes::migration::experiment::{self, Request};
use std::process::ExitCode;

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
    let estimate = experiment::estimate_seconds(&req);
    if estimate > 60.0 {
        eprintln!(
            "note: this takes about {:.0} minutes here; Ctrl-C stops it between rows and keeps the runs that completed",
            estimate / 60.0
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
