//! `oslab cpuman run`: a workload live on this machine's cpus
//! ([`oslab_cpuman::manager::Request`]).

use super::super::session::{Pace, RecordedSession};
use crate::cli::CpumanRunArgs;
use crate::error::usage;
use oslab_core::model::Unit;
use oslab_core::units::value;
use oslab_cpuman::manager;
use oslab_cpuman::outcome::RunOutcome;
use oslab_report::table::doc;
use std::io::IsTerminal;
use std::process::ExitCode;

pub fn run(args: CpumanRunArgs) -> anyhow::Result<ExitCode> {
    let req = &args.request;
    // Refused before the store, the calibration or any job: a run that cannot do what was asked.
    req.check().map_err(usage)?;
    if let Some(base) = &args.paraver {
        oslab_files::check_writable(&base.with_extension("prv"))
            .map_err(|e| usage(format!("--paraver {e}")))?;
    }
    let mut session = RecordedSession::open(Pace::Quick, None, None, &args.out)?;
    let program = std::env::current_exe()?;
    // `_balancing` holds NUMA balancing as the run needs it until the run is stored.
    let manager::Prepared {
        config,
        jobs,
        notes,
        balancing: _balancing,
    } = req
        .prepare(
            &session.placement_topology(),
            &session.allowed,
            program,
            &mut |l| eprintln!("{l}"),
        )
        .map_err(usage)?;
    let p = config.order.len();
    let mut pol = req.policy.build(p);
    let tty = std::io::stderr().is_terminal();
    let mut status = |s: &manager::TickState| {
        if tty {
            eprint!("\r\x1b[K{}", s.line());
        }
    };
    eprintln!(
        "{} jobs under {} (page migration {}) on {p} cpus ...",
        jobs.len(),
        pol.name(),
        config.migration.name()
    );
    let mut outcome = manager::run(pol.as_mut(), &config, jobs, &mut status)?;
    outcome.notes.extend(notes);
    if tty {
        eprintln!();
    }
    let interrupted = oslab_os::signals::interrupted();
    let cal: Vec<String> = config
        .iteration_s
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
    let traced = oslab_report::paraver::paraver(&outcome.timeline, &started, cpus, host);
    let Some(p) = traced.map_err(anyhow::Error::msg)? else {
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
