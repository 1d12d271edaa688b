//! `oslab cpuman run`: a workload live on this machine's cpus.

use super::super::session::Session;
use crate::cli::CpumanRunArgs;
use crate::error::usage;
use oslab_core::model::Unit;
use oslab_core::units::value;
use oslab_report::table::doc;
use oslab_sched::cpuman::manager::{self, Config, PageMigration};
use oslab_sched::cpuman::observe::BalancingGuard;
use oslab_sched::cpuman::outcome::RunOutcome;
use oslab_sched::cpuman::workload::{self, Source};
use oslab_sched::cpuman::{mapping, work};
use std::io::IsTerminal;
use std::process::ExitCode;

pub fn run(args: CpumanRunArgs) -> anyhow::Result<ExitCode> {
    // Refused before the store, the calibration or any job: a run that cannot do what was asked.
    if args.policy.migration == PageMigration::Kernel {
        BalancingGuard::check().map_err(usage)?;
    }
    let mut session = Session::open(true, None, None, &args.out)?;
    let topo = &session.machine.topology;
    let order = mapping::managed(topo, &session.allowed, args.cpus.as_deref()).map_err(usage)?;
    let p = order.len();
    let src = Source {
        external: args.external.clone(),
        external_request: args.external_request,
        ..args.source.clone()
    };
    let jobs = workload::resolve(&src, p).map_err(usage)?;
    jobs.notes.iter().for_each(|n| eprintln!("note: {n}"));
    let (specs, label, load, notes) = (jobs.jobs, jobs.label, jobs.load, jobs.notes);
    let l2 = mapping::l2_bytes(topo, order[0].0);
    eprintln!("calibrating the built-in jobs' iterations (one thread each) ...");
    let iteration_s = work::calibrate(l2);
    let migration = args.policy.migration;
    let cfg = Config {
        migration,
        mpl: args.policy.mpl,
        order,
        nodes: topo.nodes.len(),
        tick: args.tick,
        program: std::env::current_exe()?,
        l2_bytes: l2,
        iteration_s: iteration_s.clone(),
        workload: label,
        load,
    };
    let mut pol = args.policy.build(p);
    let tty = std::io::stderr().is_terminal();
    let mut status = |s: &manager::TickState| {
        if tty {
            eprint!("\r\x1b[K{}", s.line());
        }
    };
    eprintln!(
        "{} jobs under {} (page migration {}) on {p} cpus ...",
        specs.len(),
        pol.name(),
        migration.name()
    );
    let mut outcome = manager::run(pol.as_mut(), &cfg, specs, &mut status)?;
    outcome.notes.extend(notes);
    if tty {
        eprintln!();
    }
    let interrupted = oslab_core::signals::interrupted();
    let cal: Vec<String> = iteration_s
        .iter()
        .map(|(k, s)| format!("{k} {}", value(s * 1e9, Unit::Ns)))
        .collect();
    let text = format!(
        "{}one sequential iteration here: {}",
        doc(&outcome.doc()),
        cal.join(", ")
    );
    if let Some(base) = &args.paraver {
        write_paraver(base, &outcome, &session.machine.fingerprint.hostname, p)?;
    }
    let ms = outcome.measurements();
    session.finish(&ms, &outcome.timeline, interrupted, Some(text))
}

fn write_paraver(
    base: &std::path::Path,
    outcome: &RunOutcome,
    host: &str,
    cpus: usize,
) -> anyhow::Result<()> {
    let started = oslab_core::time::utc_now();
    let Some(p) = oslab_report::paraver::paraver(&outcome.timeline, &started, cpus, host) else {
        eprintln!("no thread ran long enough to be sampled: no Paraver trace written");
        return Ok(());
    };
    super::super::exchange::write_files(&oslab_report::export::paraver_files(p), Some(base))?;
    eprintln!(
        "Paraver trace: {}.prv (+ .pcf, .row)",
        base.with_extension("").display()
    );
    Ok(())
}
