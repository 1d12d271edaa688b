//! What every measuring command shares: read the machine, choose and check the CPUs, open the
//! store (all before anything is measured), pin the measuring thread, store results as they
//! complete (the run is `running` until it ends, so a crash keeps what completed), and at the end
//! write the final run in one transaction and print it.

use super::stored::{render_run, run_json};
use super::{open_store, print_json, print_text};
use crate::cli::StoreArgs;
use crate::setup::{allowed_cpus, choose_cpus, Machine};
use oslab_core::affinity::{AffinityGuard, SchedGuard};
use oslab_core::model::{Measurement, TimelineEvent};
use oslab_core::{signals, CpuSet};
use oslab_probes::{Context, Harness, HarnessConfig, Options};
use oslab_store::{RunRecord, RunStatus, Store};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Real-time priority for the measuring thread: high enough to keep ordinary tasks off the CPU,
/// low enough to leave kernel threads at higher RT priorities alone.
const RT_PRIORITY: i32 = 50;

/// A measuring session.
pub struct Session {
    wall: Instant,
    started: String,
    quick: bool,
    /// The machine.
    pub machine: Machine,
    /// CPUs we may use.
    pub allowed: CpuSet,
    /// The measuring CPU.
    pub cpu: usize,
    /// The peer CPU, when there is one.
    pub peer_cpu: Option<usize>,
    store: Store,
    /// The run's id once it has been started in the store.
    run_id: std::cell::Cell<Option<i64>>,
    /// Whether appending to the store failed once (said once; the final save tries again).
    append_failed: std::cell::Cell<bool>,
}

/// Guards that undo the pinning and priority change when dropped.
pub struct Placement {
    _pin: AffinityGuard,
    _rt: Option<SchedGuard>,
}

impl Session {
    /// Reads the machine and checks the request; opens the store. Installs the Ctrl-C handler.
    pub fn open(
        quick: bool,
        cpu: Option<&str>,
        peer: Option<&str>,
        store: &StoreArgs,
    ) -> anyhow::Result<Session> {
        let wall = Instant::now();
        let started = oslab_core::time::utc_now();
        let machine = Machine::read(if quick {
            Duration::from_millis(50)
        } else {
            Duration::from_millis(200)
        })?;
        let allowed = allowed_cpus()?;
        let (cpu, peer_cpu) = choose_cpus(&machine.topology, &allowed, cpu, peer)?;
        let store = open_store(store)?;
        signals::install();
        Ok(Session {
            wall,
            started,
            quick,
            machine,
            allowed,
            cpu,
            peer_cpu,
            store,
            run_id: std::cell::Cell::new(None),
            append_failed: std::cell::Cell::new(false),
        })
    }

    /// Starts the run in the store as `running`, so that what completes can be kept even if this
    /// process dies. Measuring commands call it before measuring; [`Session::save`] does it
    /// otherwise.
    pub fn begin(&mut self) -> anyhow::Result<i64> {
        if let Some(id) = self.run_id.get() {
            return Ok(id);
        }
        let record = self.record(RunStatus::Running);
        let id = self.store.begin_run(&record)?;
        self.run_id.set(Some(id));
        Ok(id)
    }

    /// Stores measurements of a started run now (a probe that completed). A failure is said once
    /// and measuring goes on: the final save writes everything again.
    pub fn append(&self, measurements: &[Measurement]) {
        let Some(id) = self.run_id.get() else { return };
        let wall = self.wall.elapsed().as_secs_f64();
        if let Err(e) = self.store.append(id, measurements, wall) {
            if !self.append_failed.replace(true) {
                eprintln!("warning: could not store results as they complete ({e}); they are kept in memory until the end");
            }
        }
    }

    /// Adds a warning found while measuring to the environment report stored with the run.
    pub fn warn(&mut self, kind: &str, message: String, remedy: &str) {
        self.machine
            .environment
            .warnings
            .push(oslab_core::machine::Warning {
                kind: kind.to_string(),
                message,
                remedy: remedy.to_string(),
            });
    }

    fn record(&self, status: RunStatus) -> RunRecord {
        RunRecord {
            id: self.run_id.get(),
            started: self.started.clone(),
            finished: oslab_core::time::utc_now(),
            status,
            oslab_version: env!("CARGO_PKG_VERSION").to_string(),
            git_rev: Some(env!("OSLAB_GIT_REV").to_string()).filter(|r| !r.is_empty()),
            command: std::env::args().collect::<Vec<_>>().join(" "),
            hostname: self.machine.fingerprint.hostname.clone(),
            quick: self.quick,
            wall_s: self.wall.elapsed().as_secs_f64(),
            fingerprint: serde_json::to_value(&self.machine.fingerprint)
                .unwrap_or(serde_json::Value::Null),
            environment: serde_json::to_value(&self.machine.environment)
                .unwrap_or(serde_json::Value::Null),
        }
    }

    /// Pins the calling thread to the measuring CPU and, unless `no_rt`, raises it to SCHED_FIFO
    /// when permitted (saying so when not).
    pub fn place(&self, no_rt: bool) -> anyhow::Result<Placement> {
        let pin = AffinityGuard::pin_current(&CpuSet::single(self.cpu))?;
        let rt = if no_rt {
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
        Ok(Placement { _pin: pin, _rt: rt })
    }

    /// A harness with this session's budgets.
    pub fn harness(&self) -> Harness {
        Harness::new(
            self.machine.clock().clone(),
            HarnessConfig::suite(self.quick),
        )
    }

    /// A probe context.
    pub fn context<'a>(&'a self, harness: &'a Harness, options: &'a Options) -> Context<'a> {
        Context {
            harness,
            topology: &self.machine.topology,
            environment: &self.machine.environment,
            cpu: self.cpu,
            peer_cpu: self.peer_cpu,
            allowed: self.allowed.clone(),
            options,
            earlier: Default::default(),
        }
    }

    /// Writes the final run (its measurements replace what was appended) in one transaction and
    /// returns its record (with its id).
    pub fn save(
        &mut self,
        measurements: &[Measurement],
        timeline: &[TimelineEvent],
        interrupted: bool,
    ) -> anyhow::Result<RunRecord> {
        let id = self.begin()?;
        let record = self.record(if interrupted {
            RunStatus::Interrupted
        } else {
            RunStatus::Complete
        });
        self.store.finish_run(id, &record, measurements, timeline)?;
        Ok(record)
    }

    /// Saves, prints (table or JSON, with `extra` text after the table) and returns the exit
    /// code: 130 when interrupted.
    pub fn finish(
        &mut self,
        measurements: &[Measurement],
        timeline: &[TimelineEvent],
        interrupted: bool,
        json: bool,
        extra: Option<String>,
    ) -> anyhow::Result<ExitCode> {
        let record = self.save(measurements, timeline, interrupted)?;
        let mut shown = measurements.to_vec();
        shown.iter_mut().for_each(|m| m.samples = None);
        if json {
            print_json(&run_json(&record, &shown))?;
        } else {
            print_text(&render_run(&record, &shown))?;
            if let Some(text) = extra {
                print_text(&text)?;
            }
        }
        let id = record.id.unwrap_or_default();
        eprintln!(
            "{} measurements{} in {:.1} s, stored as run {id} in {}",
            measurements.len(),
            if timeline.is_empty() {
                String::new()
            } else {
                format!(" and {} timeline events", timeline.len())
            },
            record.wall_s,
            self.store.path().display()
        );
        if interrupted {
            eprintln!("interrupted: run {id} holds what completed and is marked 'interrupted'");
            return Ok(ExitCode::from(130));
        }
        Ok(ExitCode::SUCCESS)
    }
}
