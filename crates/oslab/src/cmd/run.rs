//! `oslab run`: select probes, place ourselves, measure, store, print.

use super::session::{Pace, RecordedSession};
use crate::cli::RunArgs;
use crate::error::usage;
use crate::progress::Progress;
use oslab_core::catalog::id;
use oslab_probes::{faults, registry, runner, HarnessConfig, Options};
use std::process::ExitCode;

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    // Everything that can be wrong with the request is checked before anything is measured.
    let probes = registry::select(&args.probes).map_err(usage)?;
    // Process creation is timed from a fresh oslab, not from this one after its probes.
    let options = Options {
        helper: std::env::current_exe().ok(),
        ..args.options.clone()
    };
    if args.plan {
        return plan(&probes, &args, &options);
    }
    // The run's budgets, decided once.
    let pace = Pace::of(args.quick);
    let config = HarnessConfig::suite(pace);
    if probes.iter().any(|p| p.id() == id::FAULTS_FILE) {
        faults::check_request(&options, config.memory_max).map_err(usage)?;
    }
    oslab_core::tags::check_count(args.tag.len()).map_err(usage)?;
    let [cpu, peer] = args.named_cpus();
    let mut session = RecordedSession::open(pace, cpu, peer, &args.out)?.details(args.details);
    for (k, v) in &args.tag {
        session.tag(k, v);
    }
    session.begin()?;
    let outcome = {
        // The measuring thread is pinned (and real-time when permitted) until the guards drop.
        let _placed = session.place(args.no_rt)?;
        let harness = session.harness();
        let cx = session.context(&harness, &options);
        // The bar shows; the session stores each probe's results as it completes.
        let mut sinks = (Progress::new(&probes, args.repeat, &cx), &session);
        let outcome = runner::run(&probes, args.repeat, &cx, &mut sinks);
        sinks.0.finish();
        outcome
    };
    for w in outcome.warnings() {
        session.warn(w);
    }
    if let Some(note) = outcome.not_retried_note(&config) {
        super::say(&note);
    }
    session.finish(&outcome.measurements, &[], outcome.interrupted, None)
}

/// `oslab run --plan`: what the run would measure here, measuring nothing and storing nothing.
fn plan(
    probes: &[&'static oslab_probes::Probe],
    args: &RunArgs,
    options: &Options,
) -> anyhow::Result<ExitCode> {
    let [cpu, peer] = args.named_cpus();
    let session = super::session::machine_session(Pace::of(args.quick), cpu, peer)?;
    let harness = session.harness();
    let cx = session.context(&harness, options);
    let planned = registry::plan(probes, &cx);
    if args.out.json {
        super::print_json(&planned)?;
        return Ok(ExitCode::SUCCESS);
    }
    let t = &session.machine.topology;
    use oslab_core::units::counted;
    let seconds: f64 = planned.iter().map(|p| p.seconds).sum::<f64>() * f64::from(args.repeat);
    let head = format!(
        "{} on {}, {}, {}, measuring on cpu {}: about {seconds:.0} s of measuring ({} s is the whole suite's target)",
        counted(probes.len(), "probe"),
        counted(session.allowed.len(), "cpu"),
        counted(t.packages(), "socket"),
        counted(t.nodes.len(), "NUMA node"),
        session.cpu,
        harness.config.suite_target.as_secs()
    );
    let rows: Vec<_> = planned
        .iter()
        .map(|p| (p.id.to_string(), p.seconds, p.what()))
        .collect();
    super::print_text(&format!("{head}\n{}", oslab_report::views::plan(&rows)))?;
    Ok(ExitCode::SUCCESS)
}
