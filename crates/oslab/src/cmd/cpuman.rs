//! `oslab cpuman run | workload | compare` (and the internal `job`).

use super::session::Session;
use super::{open_store, print_json, print_text, write_whole};
use crate::cli::{
    CpumanArgs, CpumanCommand, CpumanCompareArgs, CpumanJobArgs, CpumanRunArgs, CpumanSimulateArgs,
    CpumanWorkloadArgs, WorkloadSource,
};
use crate::error::usage;
use oslab_core::model::{Measurement, Unit};
use oslab_core::CpuSet;
use oslab_core::units::value;
use oslab_sched::cpuman::manager::{self, Config, Migration};
use oslab_sched::cpuman::outcome::{RunOutcome, JOB_PROBE, RUN_PROBE};
use oslab_sched::cpuman::simulate::{self as sim, SimConfig};
use oslab_sched::cpuman::workload::{self, Generate, JobSpec};
use oslab_sched::cpuman::{channel::Channel, job, mapping, work};
use oslab_sched::jobs::Kind;
use oslab_sched::policy::{Equip, Native, Pdpa, Policy};
use oslab_sched::swf;
use oslab_store::RunRef;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};
use std::process::ExitCode;

pub fn run(args: CpumanArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        CpumanCommand::Run(a) => live(a),
        CpumanCommand::Simulate(a) => simulate(a),
        CpumanCommand::Workload(a) => write_workload(a),
        CpumanCommand::Compare(a) => compare(a),
        CpumanCommand::Job(a) => job_process(a),
    }
}

/// The policy named on the command line; PDPA's step defaults to 4 per 64 processors.
pub fn policy(name: &str, target: f64, step: Option<u64>, cpus: usize) -> Box<dyn Policy> {
    match name {
        "native" => Box::new(Native),
        "pdpa" => {
            let step = step.map_or((cpus / 16).max(1), |s| s as usize);
            Box::new(Pdpa::new(target, step))
        }
        _ => Box::new(Equip),
    }
}

/// The jobs of a generated workload or a trace, and the workload's label.
pub fn jobs_of(
    src: &WorkloadSource,
    cpus: usize,
) -> anyhow::Result<(Vec<JobSpec>, String, Option<f64>)> {
    match (&src.workload, &src.trace) {
        (Some(mix), None) => {
            let g = Generate {
                mix: mix.clone(),
                load: src.load,
                jobs: src.jobs as usize,
                cpus,
                time_scale: src.time_scale,
                seed: src.seed,
            };
            let jobs = workload::generate(&g).map_err(usage)?;
            let specs = jobs
                .iter()
                .map(workload::spec)
                .collect::<Result<_, _>>()
                .map_err(usage)?;
            Ok((specs, mix.clone(), Some(src.load)))
        }
        (None, Some(path)) => {
            let file = std::fs::File::open(path)
                .map_err(|e| usage(format!("cannot read {}: {e}", path.display())))?;
            let mut specs = Vec::new();
            for job in swf::read(std::io::BufReader::new(file)) {
                let job = job.map_err(|e| usage(format!("{}: {e}", path.display())))?;
                specs.push(workload::spec(&job).map_err(usage)?);
            }
            if specs.is_empty() {
                return Err(usage(format!("{} holds no jobs", path.display())));
            }
            let name = path
                .file_name()
                .map_or("trace".into(), |n| n.to_string_lossy().to_string());
            Ok((specs, name, None))
        }
        _ => Err(usage(
            "give --workload W1..W4 (with --load), --trace FILE.swf or --external COMMAND",
        )),
    }
}

fn live(args: CpumanRunArgs) -> anyhow::Result<ExitCode> {
    let migration = Migration::parse(&args.migration).unwrap_or(Migration::Off);
    if !(args.target > 0.0 && args.target <= 1.0) {
        return Err(usage("--target is an efficiency in (0, 1]"));
    }
    let mut session = Session::open(true, None, None, &args.store)?;
    let topo = session.machine.topology.clone();
    let managed = match &args.cpus {
        Some(list) => {
            let set = CpuSet::parse(list, &topo).map_err(|e| usage(format!("--cpus: {e}")))?;
            if !set.is_subset(&session.allowed) {
                return Err(usage(format!(
                    "--cpus {set} is not within the cpus we may use ({})",
                    session.allowed
                )));
            }
            set
        }
        None => session.allowed.clone(),
    };
    let order = mapping::placement_order(&topo, &managed);
    if order.is_empty() {
        return Err(usage("no online cpu to manage"));
    }
    let p = order.len();
    let only_external =
        args.source.workload.is_none() && args.source.trace.is_none() && !args.external.is_empty();
    let (mut specs, label, load) = if only_external {
        (Vec::new(), "external".to_string(), None)
    } else {
        jobs_of(&args.source, p)?
    };
    let next_id = specs.iter().map(|s| s.id).max().unwrap_or(0) + 1;
    for (i, cmd) in args.external.iter().enumerate() {
        let argv: Vec<String> = cmd.split_whitespace().map(String::from).collect();
        if argv.is_empty() {
            return Err(usage("--external needs a command"));
        }
        specs.push(JobSpec {
            id: next_id + i as u64,
            kind: Kind::Bt,
            submit_s: 0.0,
            request: args.external_request.map_or(p, |r| r as usize),
            seq_s: 0.0,
            command: Some(argv),
        });
    }
    let l2 = topo
        .caches_of(order[0].0)
        .iter()
        .find(|c| c.level == 2)
        .map_or(1 << 20, |c| c.size);
    eprintln!("calibrating the built-in jobs' iterations (one thread each) ...");
    let iteration_s = work::calibrate(l2);
    let cfg = Config {
        migration,
        mpl: args.mpl as usize,
        order,
        nodes: topo.nodes.len(),
        tick: args.tick,
        program: std::env::current_exe()?,
        l2_bytes: l2,
        iteration_s: iteration_s.clone(),
        workload: label,
        load,
    };
    let mut pol = policy(&args.policy, args.target, args.step, p);
    let tty = std::io::stderr().is_terminal();
    let mut status = |s: &manager::Status| {
        if tty {
            let running: Vec<String> = s.running.iter().map(|(j, a)| format!("{j}:{a}")).collect();
            eprint!(
                "\r\x1b[K{:6.1} s  running [{}]  queued {}  to arrive {}  done {}",
                s.t,
                running.join(" "),
                s.queued,
                s.pending,
                s.done
            );
        }
    };
    eprintln!(
        "{} jobs under {} (page migration {}) on {p} cpus ...",
        specs.len(),
        pol.name(),
        migration.name()
    );
    let outcome = manager::run(pol.as_mut(), &cfg, specs, &mut status)?;
    if tty {
        eprintln!();
    }
    let interrupted = oslab_core::signals::interrupted();
    let mut text = render(&outcome);
    let cal: Vec<String> = iteration_s
        .iter()
        .map(|(k, s)| format!("{k} {}", value(s * 1e9, Unit::Ns)))
        .collect();
    let _ = writeln!(text, "one sequential iteration here: {}", cal.join(", "));
    if let Some(base) = &args.paraver {
        write_paraver(base, &outcome, &session.machine.fingerprint.hostname, p)?;
    }
    let ms = outcome.measurements();
    session.finish(&ms, &outcome.timeline, interrupted, args.json, Some(text))
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
    super::write_paraver(base, &p)?;
    eprintln!(
        "Paraver trace: {}.prv (+ .pcf, .row)",
        base.with_extension("").display()
    );
    Ok(())
}

/// The per-job table, per-kind means and the run's totals, as text.
pub fn render(o: &RunOutcome) -> String {
    let mut t = String::new();
    let opt = |v: Option<f64>, unit: Unit| v.map_or("-".to_string(), |x| value(x, unit));
    let _ = writeln!(
        t,
        "\n{} {} jobs, policy {}, page migration {}, {} cpus{}",
        if o.simulated { "simulated:" } else { "live:" },
        o.jobs.len(),
        o.policy,
        o.migration,
        o.cpus,
        o.load
            .map_or(String::new(), |l| format!(", {} at {l}% load", o.workload))
    );
    let _ = writeln!(
        t,
        "  {:>5} {:>8} {:>4} {:>9} {:>9} {:>10} {:>10} {:>8} {:>6} {:>6}",
        "job",
        "kind",
        "req",
        "arrival",
        "wait",
        "execution",
        "cpu time",
        "speedup",
        "alloc",
        "migr"
    );
    for j in &o.jobs {
        let _ = writeln!(
            t,
            "  {:>5} {:>8} {:>4} {:>9} {:>9} {:>10} {:>10} {:>8} {:>6} {:>6} {}",
            j.id,
            j.kind_name(),
            j.request,
            value(j.submit_s * 1e9, Unit::Ns),
            opt(j.start_s.map(|s| (s - j.submit_s) * 1e9), Unit::Ns),
            opt(j.execution_s().map(|s| s * 1e9), Unit::Ns),
            opt(j.cpu_s.map(|s| s * 1e9), Unit::Ns),
            j.speedup()
                .filter(|_| !j.external)
                .map_or("-".into(), |s| format!("{s:.2}")),
            j.mean_alloc().map_or("-".into(), |a| format!("{a:.2}")),
            j.migrations.map_or("-".into(), |m| m.to_string()),
            if j.completed { "" } else { "not completed" }
        );
    }
    let _ = writeln!(t, "  makespan {}", value(o.makespan_s * 1e9, Unit::Ns));
    for note in &o.notes {
        let _ = writeln!(t, "note: {note}");
    }
    t
}

fn simulate(a: CpumanSimulateArgs) -> anyhow::Result<ExitCode> {
    if !(a.target > 0.0 && a.target <= 1.0) {
        return Err(usage("--target is an efficiency in (0, 1]"));
    }
    let mut session = Session::open(true, None, None, &a.store)?;
    let remote_ratio = match a.remote_ratio.as_str() {
        "slit" => slit_ratio(&session.machine.topology).ok_or_else(|| {
            usage("--remote-ratio slit: this machine has one NUMA node, no remote distance")
        })?,
        r => r
            .parse::<f64>()
            .ok()
            .filter(|v| *v >= 1.0 && v.is_finite())
            .ok_or_else(|| usage(format!("--remote-ratio {r:?}: a number >= 1, or 'slit'")))?,
    };
    let cpus = a.cpus as usize;
    let (specs, label, load) = jobs_of(&a.source, cpus)?;
    let cfg = SimConfig {
        cpus,
        nodes: a.nodes as usize,
        remote_ratio,
        quantum_s: a.quantum.as_secs_f64().max(1e-6),
        migration: Migration::parse(&a.migration).unwrap_or(Migration::Off),
        page_cost_s: a.page_cost.as_secs_f64(),
        settle_s: 1.0,
        kernel_rate: 0.5,
        mpl: a.mpl as usize,
        workload: label,
        load,
    };
    let mut pol = policy(&a.policy, a.target, a.step, cpus);
    let t = std::time::Instant::now();
    let outcome = sim::simulate(pol.as_mut(), &cfg, specs);
    eprintln!(
        "simulated {} jobs on {cpus} cpus in {:.2} s",
        outcome.jobs.len(),
        t.elapsed().as_secs_f64()
    );
    let text = render(&outcome);
    let ms = outcome.measurements();
    session.finish(&ms, &outcome.timeline, false, a.json, Some(text))
}

/// The nearest remote node's SLIT distance over the local one.
fn slit_ratio(topo: &oslab_core::Topology) -> Option<f64> {
    topo.nodes
        .iter()
        .flat_map(|n| {
            let local = n.distances.get(n.id).copied().unwrap_or(10).max(1) as f64;
            n.distances
                .iter()
                .enumerate()
                .filter(move |(i, _)| *i != n.id)
                .map(move |(_, &d)| d as f64 / local)
        })
        .reduce(f64::min)
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
    let header = format!(
        "oslab cpuman workload: mix {} at {}% load, {} jobs for {cpus} processors, time scale {}, seed {}\n\
         field 4 (run time) is the sequential time at this scale, on field 5 = 1 processor;\n\
         field 8 the request; field 14 the kind: 1 swim, 2 bt, 3 hydro2d, 4 apsi",
        a.mix, a.load, a.jobs, a.time_scale, a.seed
    );
    let mut bytes = Vec::new();
    swf::write(&mut bytes, &header, &jobs)?;
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

/// One stored CPU-manager run, as compare sees it.
struct Stored {
    id: i64,
    params: BTreeMap<String, String>,
    ms: Vec<Measurement>,
}

fn param(m: &Measurement, k: &str) -> String {
    match m.params.get(k) {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => "-".into(),
    }
}

fn mean_of(ms: &[Measurement], probe: &str, metric: &str, kind: Option<&str>) -> Option<f64> {
    ms.iter()
        .find(|m| {
            m.probe == probe
                && m.metric == metric
                && kind.is_none_or(|k| m.params.get("kind").and_then(|v| v.as_str()) == Some(k))
        })
        .and_then(|m| m.summary.as_ref())
        .map(|s| s.mean)
}

fn compare(a: CpumanCompareArgs) -> anyhow::Result<ExitCode> {
    let store = open_store(&a.store)?;
    let mut runs = Vec::new();
    for r in &a.runs {
        let run: RunRef = r.parse().map_err(usage)?;
        let (record, ms) = store.load_run(&run)?;
        let ms: Vec<Measurement> = ms
            .into_iter()
            .filter(|m| m.probe == JOB_PROBE || m.probe == RUN_PROBE)
            .collect();
        let Some(first) = ms.first() else {
            return Err(usage(format!(
                "run {} is not a CPU-manager run (`oslab cpuman run` or `simulate`)",
                record.id.unwrap_or_default()
            )));
        };
        let params = ["policy", "migration", "workload", "load", "cpus"]
            .iter()
            .map(|k| (k.to_string(), param(first, k)))
            .collect();
        runs.push(Stored {
            id: record.id.unwrap_or_default(),
            params,
            ms,
        });
    }
    let rows = ratio_rows(&runs);
    if a.json {
        print_json(
            &serde_json::json!({ "runs": runs.iter().map(|r| serde_json::json!({
            "run": r.id, "params": r.params,
            "cpu_time_s": mean_of(&r.ms, RUN_PROBE, "cpu_time", None).map(|v| v / 1e9),
            "makespan_s": mean_of(&r.ms, RUN_PROBE, "makespan", None).map(|v| v / 1e9),
            "migrations": mean_of(&r.ms, RUN_PROBE, "migrations", None),
            "burst_length_ns": mean_of(&r.ms, RUN_PROBE, "burst_length", None),
        })).collect::<Vec<_>>(), "ratios": rows }),
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{:>5} {:>7} {:>8} {:>10} {:>5} {:>12} {:>12} {:>11} {:>12}",
        "run",
        "policy",
        "migration",
        "workload",
        "load",
        "cpu time",
        "makespan",
        "migrations",
        "mean burst"
    );
    for r in &runs {
        let g = |metric: &str, unit| {
            mean_of(&r.ms, RUN_PROBE, metric, None).map_or("-".into(), |v| value(v, unit))
        };
        let _ = writeln!(
            t,
            "{:>5} {:>7} {:>8} {:>10} {:>5} {:>12} {:>12} {:>11} {:>12}",
            r.id,
            r.params["policy"],
            r.params["migration"],
            r.params["workload"],
            r.params["load"],
            g("cpu_time", Unit::Ns),
            g("makespan", Unit::Ns),
            g("migrations", Unit::Count),
            g("burst_length", Unit::Ns)
        );
    }
    if rows.is_empty() {
        let _ = writeln!(
            t,
            "\nno with/without-migration pairs: give runs of one policy and workload with --migration off and kernel/manual"
        );
    } else {
        let _ = writeln!(
            t,
            "\nmean CPU time per job with page migration / without (the paper's ratio; < 1: migration helps):"
        );
        let _ = writeln!(
            t,
            "{:>7} {:>10} {:>5} {:>9} {:>8} {:>12} {:>12} {:>7}",
            "policy", "workload", "load", "kind", "mode", "cpu time", "without", "ratio"
        );
        for r in &rows {
            let _ = writeln!(
                t,
                "{:>7} {:>10} {:>5} {:>9} {:>8} {:>12} {:>12} {:>7.3}",
                r.policy,
                r.workload,
                r.load,
                r.kind,
                r.mode,
                value(r.with_ns, Unit::Ns),
                value(r.without_ns, Unit::Ns),
                r.ratio
            );
        }
    }
    print_text(&t)?;
    Ok(ExitCode::SUCCESS)
}

/// One with/without-migration ratio.
#[derive(Debug, serde::Serialize)]
struct Ratio {
    policy: String,
    workload: String,
    load: String,
    kind: String,
    mode: String,
    with_ns: f64,
    without_ns: f64,
    ratio: f64,
}

/// For every run with migration on, the run of the same policy, workload and load without it:
/// mean CPU time per job, per kind and over all jobs.
fn ratio_rows(runs: &[Stored]) -> Vec<Ratio> {
    let mut out = Vec::new();
    let same = |a: &Stored, b: &Stored| {
        ["policy", "workload", "load", "cpus"]
            .iter()
            .all(|k| a.params[*k] == b.params[*k])
    };
    for with in runs.iter().filter(|r| r.params["migration"] != "off") {
        let Some(without) = runs
            .iter()
            .find(|r| r.params["migration"] == "off" && same(r, with))
        else {
            continue;
        };
        let mut kinds: Vec<String> = with
            .ms
            .iter()
            .filter(|m| m.probe == JOB_PROBE && m.metric == "cpu_time")
            .map(|m| param(m, "kind"))
            .collect();
        kinds.dedup();
        for kind in kinds {
            let (Some(w), Some(wo)) = (
                mean_of(&with.ms, JOB_PROBE, "cpu_time", Some(&kind)),
                mean_of(&without.ms, JOB_PROBE, "cpu_time", Some(&kind)),
            ) else {
                continue;
            };
            out.push(Ratio {
                policy: with.params["policy"].clone(),
                workload: with.params["workload"].clone(),
                load: with.params["load"].clone(),
                kind,
                mode: with.params["migration"].clone(),
                with_ns: w,
                without_ns: wo,
                ratio: w / wo,
            });
        }
    }
    out
}
