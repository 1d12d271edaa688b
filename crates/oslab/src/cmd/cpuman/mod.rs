//! `oslab cpuman run | simulate | workload | compare` (and the internal `job`): arguments to
//! [`oslab_sched::cpuman`] and back.

mod live;

use super::session::Session;
use super::{print_json, print_text};
use crate::cli::{
    CpumanArgs, CpumanCommand, CpumanCompareArgs, CpumanJobArgs, CpumanSimulateArgs,
    CpumanWorkloadArgs, PolicyArgs, WorkloadSource,
};
use crate::error::usage;
use oslab_core::files::write_whole;
use oslab_report::table::doc;
use oslab_sched::cpuman::compare::{self, StoredRun};
use oslab_sched::cpuman::jobs::Kind;
use oslab_sched::cpuman::policy::Policy;
use oslab_sched::cpuman::simulate::{self as sim, SimConfig};
use oslab_sched::cpuman::speedups::Speedups;
use oslab_sched::cpuman::swf;
use oslab_sched::cpuman::workload::{self, Generate, Source};
use oslab_sched::cpuman::{channel::Channel, job};
use oslab_store::RunRef;
use std::io::Write as _;
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

pub(super) fn source(
    s: &WorkloadSource,
    external: &[String],
    external_request: Option<u64>,
) -> Source {
    Source {
        mix: s.workload.clone(),
        load: s.load,
        jobs: s.jobs as usize,
        time_scale: s.time_scale,
        seed: s.seed,
        trace: s.trace.clone(),
        external: external.to_vec(),
        external_request: external_request.map(|r| r as usize),
        app_map: s.app_map.clone(),
    }
}

pub(super) fn policy(p: &PolicyArgs, cpus: usize) -> Box<dyn Policy> {
    p.policy.build(p.target, p.step.map(|s| s as usize), cpus)
}

/// The speedup curves of `--speedups RUN`, or the paper's.
fn speedups(a: &CpumanSimulateArgs) -> anyhow::Result<Speedups> {
    let Some(r) = &a.speedups else {
        return Ok(Speedups::paper());
    };
    let store = super::open_store_to_read(&a.store)?;
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
    let speedups = speedups(&a)?;
    eprintln!("{}", speedups.describe());
    let mut session = Session::open(true, None, None, &a.store)?;
    let remote_ratio =
        sim::remote_ratio(&a.remote_ratio, &session.machine.topology).map_err(usage)?;
    let src = source(&a.source, &[], None);
    let cpus = match (a.cpus, workload::trace_machine(&src).map_err(usage)?) {
        (Some(c), _) => c as usize,
        (None, Some((c, from))) => {
            eprintln!("{c} cpus: {from}");
            c
        }
        (None, None) => 64,
    };
    let jobs = workload::resolve(&src, cpus).map_err(usage)?;
    jobs.notes.iter().for_each(|n| eprintln!("note: {n}"));
    let cfg = SimConfig {
        cpus,
        nodes: a.nodes as usize,
        remote_ratio,
        quantum_s: a.quantum.as_secs_f64().max(1e-6),
        migration: a.policy.migration,
        first_touch: a.first_touch,
        speedups,
        page_cost_s: a.page_cost.as_secs_f64(),
        settle_s: 1.0,
        kernel_rate: 0.5,
        mpl: a.policy.mpl as usize,
        workload: jobs.label,
        load: jobs.load,
    };
    let mut pol = policy(&a.policy, cpus);
    let t = std::time::Instant::now();
    let mut outcome = sim::simulate(pol.as_mut(), &cfg, jobs.jobs);
    outcome.notes.extend(jobs.notes);
    eprintln!(
        "simulated {} jobs on {cpus} cpus in {:.2} s",
        outcome.jobs.len(),
        t.elapsed().as_secs_f64()
    );
    let ms = outcome.measurements();
    let interrupted = oslab_core::signals::interrupted();
    let text = doc(&outcome.doc());
    session.finish(&ms, &outcome.timeline, interrupted, a.json, Some(text))
}

fn write_workload(a: CpumanWorkloadArgs) -> anyhow::Result<ExitCode> {
    let cpus = match a.cpus {
        Some(c) => c as usize,
        None => oslab_core::affinity::get_affinity(0)?.len(),
    };
    let g = Generate {
        mix: a.mix.clone(),
        load: a.load,
        jobs: a.jobs as usize,
        cpus,
        time_scale: a.time_scale,
        seed: a.seed,
    };
    let jobs = workload::generate(&g).map_err(usage)?;
    let mut bytes = Vec::new();
    swf::write(&mut bytes, cpus, &workload::note(&g), &jobs)?;
    match &a.output {
        Some(path) => {
            write_whole(path, &bytes)?;
            eprintln!("{} jobs written to {}", jobs.len(), path.display());
        }
        None => std::io::stdout().lock().write_all(&bytes)?,
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
    let store = super::open_store_to_read(&a.store)?;
    let mut runs = Vec::new();
    for r in &a.runs {
        let run: RunRef = r.parse().map_err(usage)?;
        let (record, ms) = store.load_run(&run)?;
        let id = record.id.unwrap_or_default();
        runs.push(StoredRun::new(id, ms).ok_or_else(|| {
            usage(format!(
                "run {id} is not a CPU-manager run (`oslab cpuman run` or `simulate`)"
            ))
        })?);
    }
    let ratios = compare::migration_ratios(&runs);
    if !a.json {
        print_text(&doc(&compare::doc(&runs, &ratios)))?;
        return Ok(ExitCode::SUCCESS);
    }
    print_json(&compare::json(&runs, &ratios))?;
    Ok(ExitCode::SUCCESS)
}
