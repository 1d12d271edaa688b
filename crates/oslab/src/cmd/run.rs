//! `oslab run`: select probes, place ourselves, measure, store, print.

use super::stored::{render_run, run_json};
use super::{open_store, print_json, print_text};
use crate::cli::RunArgs;
use crate::error::usage;
use crate::progress::Progress;
use crate::setup::{allowed_cpus, choose_cpus, Machine};
use oslab_core::affinity::{AffinityGuard, SchedGuard};
use oslab_core::{signals, CpuSet};
use oslab_probes::{faults, registry, runner, Context, Harness, HarnessConfig, Options};
use oslab_store::{RunRecord, RunStatus};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Real-time priority for the measuring thread: high enough to keep ordinary tasks off the CPU,
/// low enough to leave kernel threads at higher RT priorities alone.
const RT_PRIORITY: i32 = 50;

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let wall = Instant::now();
    let started = oslab_core::time::utc_now();
    // Everything that can be wrong with the request is checked before anything is measured.
    let probes = registry::select(&args.probes).map_err(usage)?;
    let machine = Machine::read(if args.quick {
        Duration::from_millis(50)
    } else {
        Duration::from_millis(200)
    })?;
    let allowed = allowed_cpus()?;
    let (cpu, peer_cpu) = choose_cpus(
        &machine.topology,
        &allowed,
        args.cpu.as_deref(),
        args.peer_cpu.as_deref(),
    )?;
    let options = Options {
        file_size: args.file_size,
        temp_dir: args.temp_dir.clone(),
    };
    if probes.iter().any(|p| p.id == "faults.file") {
        check_fault_file(&options, args.quick)?;
    }
    let mut store = open_store(&args.store)?;
    signals::install();

    let outcome = {
        // The measuring thread is pinned (and real-time when permitted) until the guards drop.
        let _pin = AffinityGuard::pin_current(&CpuSet::single(cpu))?;
        let _rt = if args.no_rt {
            None
        } else {
            match SchedGuard::fifo(RT_PRIORITY) {
                Ok(g) => Some(g),
                Err(e) => {
                    eprintln!("note: measuring at normal priority: {e}");
                    None
                }
            }
        };
        let config = if args.quick {
            HarnessConfig::quick()
        } else {
            HarnessConfig::full()
        };
        let harness = Harness::new(machine.clock().clone(), config);
        let cx = Context {
            harness: &harness,
            topology: &machine.topology,
            environment: &machine.environment,
            cpu,
            peer_cpu,
            allowed: allowed.clone(),
            options: &options,
        };
        let mut progress = Progress::new(probes.len());
        let outcome = runner::run(&probes, &cx, &mut progress);
        progress.finish();
        outcome
    };

    let record = RunRecord {
        id: None,
        started,
        finished: oslab_core::time::utc_now(),
        status: if outcome.interrupted {
            RunStatus::Interrupted
        } else {
            RunStatus::Complete
        },
        oslab_version: env!("CARGO_PKG_VERSION").to_string(),
        git_rev: Some(env!("OSLAB_GIT_REV").to_string()).filter(|r| !r.is_empty()),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        hostname: machine.fingerprint.hostname.clone(),
        quick: args.quick,
        wall_s: wall.elapsed().as_secs_f64(),
        fingerprint: serde_json::to_value(&machine.fingerprint)?,
        environment: serde_json::to_value(&machine.environment)?,
    };
    let id = store.save_run(&record, &outcome.measurements, &[])?;
    let record = RunRecord {
        id: Some(id),
        ..record
    };
    let mut shown = outcome.measurements.clone();
    shown.iter_mut().for_each(|m| m.samples = None);
    if args.json {
        print_json(&run_json(&record, &shown))?;
    } else {
        print_text(&render_run(&record, &shown))?;
    }
    eprintln!(
        "{} measurements in {:.1} s, stored as run {id} in {}",
        outcome.measurements.len(),
        record.wall_s,
        store.path().display()
    );
    if outcome.interrupted {
        eprintln!("interrupted: run {id} holds what completed and is marked 'interrupted'");
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::SUCCESS)
}

/// The page-fault file must fit in its directory: refuse before measuring anything.
fn check_fault_file(options: &Options, quick: bool) -> anyhow::Result<()> {
    let dir = faults::temp_dir(options);
    if !dir.is_dir() {
        return Err(usage(format!(
            "--temp-dir {}: not a directory",
            dir.display()
        )));
    }
    let memory_max = if quick {
        HarnessConfig::quick()
    } else {
        HarnessConfig::full()
    }
    .memory_max;
    let size = options
        .file_size
        .unwrap_or_else(|| faults::default_file_size(memory_max));
    faults::check_space(&dir, size).map_err(usage)
}
