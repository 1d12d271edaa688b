//! `oslab c2c`: the core-to-core latency of every pair of a cpu list (or a sample of the pairs),
//! stored as a run, printed as a matrix and by topology class.

use super::session::RecordedSession;
use crate::cli::C2cArgs;
use crate::error::usage;
use oslab_probes::c2c::{self, Budget};
use oslab_probes::HarnessConfig;
use std::process::ExitCode;

pub fn run(args: C2cArgs) -> anyhow::Result<ExitCode> {
    let req = &args.request;
    let mut session = RecordedSession::open(req.quick, None, None, &args.out)?;
    let topology = session.machine.topology.clone();
    let cpus = c2c::chosen_cpus(req.cpus.as_deref(), &topology, &session.allowed).map_err(usage)?;
    let budget = Budget::of(&HarnessConfig::suite(req.quick));
    let per_pair = budget.time.as_secs_f64().max(0.01);
    // Without --sample, a big machine's pairs (2016 for 64 cpus) are sampled to what fits the
    // time a suite allows: every topology class first, then pairs spread over the rest.
    let fits = (c2c::default_seconds(req.quick) / per_pair) as usize;
    let (pairs, total) = c2c::pairs(&topology, &cpus, req.sample.or(Some(fits.max(2))));
    let seconds = pairs.len() as f64 * per_pair;
    if req.sample.is_some() && seconds > 10.0 {
        eprintln!(
            "note: {} pairs of {} take about {:.0} s; Ctrl-C stops and keeps the pairs measured (--sample N measures fewer)",
            pairs.len(),
            total,
            seconds
        );
    }
    session.begin()?;
    // Without --sample the time target holds however slow a pair turns out (an emulated cpu).
    let started = std::time::Instant::now();
    let deadline = req
        .sample
        .is_none()
        .then(|| started + std::time::Duration::from_secs_f64(c2c::default_seconds(req.quick)));
    let (mut measured, interrupted) = c2c::matrix(&topology, &pairs, budget, deadline)?;
    if req.sample.is_none() && measured.len() < total {
        eprintln!(
            "note: measured {} of the {total} pairs (every topology class first, then spread over the rest) in {:.0} s; --sample {total} measures every pair",
            measured.len(),
            started.elapsed().as_secs_f64()
        );
    }
    let spec = oslab_model::Spec::read(&session.machine.fingerprint, session.cpu, None);
    oslab_model::predict(&spec, &mut measured);
    let text = oslab_report::c2c::text(&measured, total);
    session.finish(&measured, &[], interrupted, Some(text))
}
