//! `oslab cpuman run | simulate | workload | compare` (and the internal `job`): arguments to
//! [`oslab_cpuman`] and back.

mod live;

use super::session::{Pace, RecordedSession};
use super::{print_json, print_text};
use crate::cli::{
    CpumanArgs, CpumanCommand, CpumanCompareArgs, CpumanJobArgs, CpumanSimulateArgs,
    CpumanWorkloadArgs,
};
use crate::error::usage;
use oslab_cpuman::compare::{self, StoredRun};
use oslab_cpuman::jobs::Kind;
use oslab_cpuman::simulate;
use oslab_cpuman::speedups::Speedups;
use oslab_cpuman::swf;
use oslab_cpuman::workload::{self, Generate};
use oslab_cpuman::{channel::Channel, job};
use oslab_files::write_whole;
use oslab_report::table::doc;
use oslab_store::{Location, RunRef};
use std::process::ExitCode;

pub fn run(args: CpumanArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        CpumanCommand::Run(a) => live::run(a),
        CpumanCommand::Simulate(a) => simulate(a),
        CpumanCommand::Workload(a) => write_workload(a),
        CpumanCommand::Compare(a) => compare(a),
        CpumanCommand::Job(a) => job_process(a),
    }
}

/// The speedup curves of `--speedups RUN`, or the paper's.
fn speedups(run: Option<&str>, store: &Location) -> anyhow::Result<Speedups> {
    let Some(r) = run else {
        return Ok(Speedups::paper());
    };
    let store = store.open_to_read()?;
    let run: RunRef = r.parse().map_err(usage)?;
    let (record, ms) = store.load_run(&run)?;
    let id = record.id.unwrap_or_default();
    Speedups::measured(&ms, &format!("run {id}")).ok_or_else(|| {
        usage(format!(
            "--speedups {r}: run {id} holds no measured speedups (a live `oslab cpuman run` stores them)"
        ))
    })
}

fn simulate(a: CpumanSimulateArgs) -> anyhow::Result<ExitCode> {
    let r = &a.request;
    let speedups = speedups(r.speedups.as_deref(), super::store())?;
    let mut session = RecordedSession::open(Pace::Quick, None, None, &a.out)?;
    let (cpus, from) = r.cpus().map_err(usage)?;
    if let Some(from) = from {
        eprintln!("{cpus} cpus: {from}");
    }
    let jobs = match workload::resolve(&r.source, cpus) {
        Ok(jobs) => jobs,
        // Stopped while reading a long trace: nothing was simulated, so nothing is stored,
        // and the exit says it was the signal, not the trace.
        Err(e) if oslab_os::signals::interrupted() => {
            eprintln!("oslab: {e}");
            return Ok(ExitCode::from(oslab_os::signals::exit_status()));
        }
        Err(e) => return Err(usage(e)),
    };
    jobs.notes
        .iter()
        .for_each(|n| super::say(&format!("note: {n}")));
    let cfg = r
        .config(cpus, &jobs, speedups, &session.machine.topology)
        .map_err(usage)?;
    eprintln!("{}", cfg.speedups.describe());
    let mut pol = r.policy.build(cpus);
    let t = std::time::Instant::now();
    let mut outcome = simulate::simulate(pol.as_mut(), &cfg, jobs.jobs);
    outcome.notes.extend(jobs.notes);
    eprintln!(
        "simulated {} jobs on {cpus} cpus in {:.2} s",
        outcome.jobs.len(),
        t.elapsed().as_secs_f64()
    );
    let ms = outcome.measurements();
    let interrupted = oslab_os::signals::interrupted();
    let text = doc(&outcome.doc());
    session.finish(&ms, &outcome.timeline, interrupted, Some(text))
}

fn write_workload(a: CpumanWorkloadArgs) -> anyhow::Result<ExitCode> {
    let cpus = match a.cpus {
        Some(c) => c as usize,
        None => oslab_os::affinity::get_affinity(0)?.len(),
    };
    let g = Generate { cpus, ..a.generate };
    let jobs = workload::generate(&g).map_err(usage)?;
    let mut bytes = Vec::new();
    swf::write(&mut bytes, cpus, &workload::note(&g), &jobs)?;
    match a
        .output
        .as_deref()
        .filter(|p| !oslab_report::export::is_stdout(p))
    {
        Some(path) => {
            write_whole(path, &bytes)?;
            eprintln!("{} jobs written to {}", jobs.len(), path.display());
        }
        None => super::to_stdout(&mut std::io::stdout().lock(), &bytes)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn job_process(a: CpumanJobArgs) -> anyhow::Result<ExitCode> {
    let kind = Kind::parse(&a.kind).ok_or_else(|| usage(format!("unknown kind {}", a.kind)))?;
    let channel = Channel::open_fd(a.channel_fd)
        .map_err(|e| anyhow::anyhow!("this is started by `oslab cpuman run`: {e}"))?;
    job::run(kind, a.iterations, a.l2_bytes, &channel);
    Ok(ExitCode::SUCCESS)
}

fn compare(a: CpumanCompareArgs) -> anyhow::Result<ExitCode> {
    let store = super::store().open_to_read()?;
    let mut runs = Vec::new();
    let loaded = a
        .runs
        .iter()
        .map(|set| store.load_set(set))
        .collect::<Result<Vec<_>, _>>()?;
    for (record, ms) in loaded.into_iter().flatten() {
        let id = record.id.unwrap_or_default();
        runs.push(StoredRun::new(id, ms).ok_or_else(|| {
            usage(format!(
                "run {id} is not a CPU-manager run (`oslab cpuman run` or `simulate`)"
            ))
        })?);
    }
    let ratios = compare::migration_ratios(&runs);
    match a.out.json {
        true => print_json(&compare::json(&runs, &ratios))?,
        false => print_text(&doc(&compare::doc(&runs, &ratios)))?,
    }
    Ok(ExitCode::SUCCESS)
}
