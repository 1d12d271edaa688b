//! `oslab c2c`: the core-to-core latency of every pair of a cpu list (or a sample of the pairs),
//! stored as a run, printed as a matrix and by topology class.

use super::session::RecordedSession;
use crate::cli::C2cArgs;
use crate::error::usage;
use oslab_probes::c2c;
use std::process::ExitCode;

pub fn run(args: C2cArgs) -> anyhow::Result<ExitCode> {
    let req = &args.request;
    let mut session = RecordedSession::open(req.pace(), None, None, &args.out)?;
    let topology = session.machine.topology.clone();
    let chosen = req.chosen(&topology, &session.allowed).map_err(usage)?;
    let (pairs, total) = (&chosen.pairs, chosen.total);
    if req.sample.is_some() && chosen.seconds() > 10.0 {
        eprintln!(
            "note: {} pairs of {total} take about {:.0} s; Ctrl-C stops and keeps the pairs measured (--sample N measures fewer)",
            pairs.len(),
            chosen.seconds()
        );
    }
    session.begin()?;
    let started = std::time::Instant::now();
    let deadline = chosen.deadline.map(|d| started + d);
    let (mut measured, interrupted) = c2c::matrix(&topology, pairs, chosen.budget, deadline)?;
    if req.sample.is_none() && measured.len() < total {
        eprintln!(
            "note: measured {} of the {total} pairs (every topology class first, then spread over the rest) in {:.0} s; --sample {total} measures every pair",
            measured.len(),
            started.elapsed().as_secs_f64()
        );
    }
    let spec = oslab_probes::spec::read(&session.machine.fingerprint, session.cpu, None);
    oslab_model::predict(&spec, &mut measured);
    let text = oslab_report::c2c::text(&measured, total);
    session.finish(&measured, &[], interrupted, Some(text))
}
