//! A measuring command's session: the library's [`oslab_probes::session::Session`] (machine, cpus,
//! pinning) and a [`Recorder`] writing the run as it is measured, opened before anything is
//! measured; at the end the run is stored (or kept in a file to import) and printed.

use super::{print_json, print_text};
use crate::cli::Output;
use crate::error::usage;
use oslab_core::model::{Measurement, TimelineEvent};
pub use oslab_core::pace::Pace;
use oslab_os::placement::Named;
use oslab_os::signals;
use oslab_probes::session::{self, Placement, SessionError};
use oslab_store::exchange::RunDocument;
use oslab_store::{Program, Recorder};
use std::cell::Cell;
use std::process::ExitCode;

/// A measuring session whose run is recorded in the store as it is measured.
pub struct RecordedSession {
    inner: session::Session,
    recorder: Recorder,
    /// Whether appending to the store failed once (said once; the final save tries again).
    append_failed: Cell<bool>,
    /// A simulation: see [`RecordedSession::simulation`].
    simulated: bool,
    /// Print JSON rather than text.
    json: bool,
    /// Print every row (`--details`), not the first view.
    details: bool,
    /// When the command began: no operation it times can last longer.
    started: std::time::Instant,
}

impl std::ops::Deref for RecordedSession {
    type Target = session::Session;
    fn deref(&self) -> &session::Session {
        &self.inner
    }
}

/// This program, as a stored run names it.
fn program() -> Program {
    Program {
        version: env!("CARGO_PKG_VERSION").to_string(),
        git_rev: Some(env!("OSLAB_GIT_REV").to_string()).filter(|r| !r.is_empty()),
        // The program by its name, not where it was built or installed (a 60-character path
        // was one unbreakable word on the run line); an argument of thousands of characters (a
        // cpu list) is stored shortened.
        command: std::env::args()
            .enumerate()
            .map(|(i, a)| match i {
                0 => std::path::Path::new(&a)
                    .file_name()
                    .map_or(a.clone(), |n| n.to_string_lossy().into_owned()),
                _ => oslab_core::text::shortened(&a, 200),
            })
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// Reads the machine and checks the cpus asked for (a wrong one is a usage error).
pub fn machine_session(
    pace: Pace,
    cpu: Option<Named>,
    peer: Option<Named>,
) -> anyhow::Result<session::Session> {
    session::Session::open(pace, cpu, peer).map_err(|e| match e {
        SessionError::Misplaced(m) => usage(m.0),
        other => other.into(),
    })
}

impl RecordedSession {
    /// Reads the machine and checks the request; opens the store. Installs the Ctrl-C handler.
    pub fn open(
        pace: Pace,
        cpu: Option<Named>,
        peer: Option<Named>,
        out: &Output,
    ) -> anyhow::Result<RecordedSession> {
        let inner = machine_session(pace, cpu, peer)?;
        let recorder = Recorder::new(super::store().open()?, program(), pace);
        signals::install();
        Ok(RecordedSession {
            inner,
            recorder,
            append_failed: Cell::new(false),
            simulated: false,
            json: out.json,
            details: false,
            started: std::time::Instant::now(),
        })
    }

    /// Labels the run (before [`RecordedSession::begin`]).
    pub fn tag(&mut self, key: &str, value: &str) {
        self.recorder.tag(key, value);
    }

    /// Starts the run in the store as `running`, so what completes is kept if this process dies.
    pub fn begin(&mut self) -> anyhow::Result<i64> {
        Ok(self.recorder.begin(&self.inner.machine)?)
    }

    /// Stores measurements of a started run now (a probe that completed). A failure is said once
    /// and measuring goes on: the final save writes everything again.
    pub fn append(&self, measurements: &[Measurement]) {
        if let Err(e) = self.recorder.append(measurements) {
            if !self.append_failed.replace(true) {
                eprintln!("warning: could not store results as they complete ({e}); they are kept in memory until the end");
            }
        }
    }

    /// Adds a warning found while measuring to the environment report stored with the run.
    pub fn warn(&mut self, w: oslab_core::machine::Warning) {
        self.inner.machine.environment.warnings.push(w);
    }

    /// Pins the calling thread to the measuring CPU (real time unless `no_rt`), saying what was
    /// not permitted.
    pub fn place(&self, no_rt: bool) -> anyhow::Result<Placement> {
        let placement = self.inner.place(no_rt)?;
        if let Some(note) = &placement.note {
            super::say(&format!("note: {note}"));
        }
        Ok(placement)
    }

    /// The topology to place threads by: cpus the store measured sharing a core (a host's SMT
    /// pair a guest hides) made one core, as `bind --policy by-cost` takes them.
    pub fn placement_topology(&self) -> oslab_core::Topology {
        let (t, host) = (&self.machine.topology, oslab_os::machine::hostname());
        super::store()
            .measured_costs(&host, t)
            .with_hidden_siblings(t)
    }

    /// Prints every row, the sweeps and the model's reasons at the end (`--details`).
    pub fn details(mut self, on: bool) -> RecordedSession {
        self.details = on;
        self
    }

    /// A simulation's session: at the end its own text replaces the table of measurements and
    /// the warnings about this machine, which do not bear on simulated values.
    pub fn simulation(mut self) -> RecordedSession {
        self.simulated = true;
        self
    }

    /// Saves, prints (table or JSON, with `extra` text after the table) and returns the exit
    /// code: 128 + the signal when interrupted (130, 143). Results are printed even when they could not be stored.
    pub fn finish(
        &mut self,
        measurements: &[Measurement],
        timeline: &[TimelineEvent],
        interrupted: bool,
        extra: Option<String>,
    ) -> anyhow::Result<ExitCode> {
        let machine = &self.inner.machine;
        let mut measurements = measurements.to_vec();
        let wall_ns = self.started.elapsed().as_secs_f64() * 1e9;
        oslab_core::relations::check(&mut measurements, Some(wall_ns));
        if machine.fingerprint.emulated_cpu() {
            measurements.iter_mut().for_each(Measurement::mark_emulated);
        }
        let measurements = &measurements[..];
        let (record, saved) =
            self.recorder
                .finish_or_keep(machine, measurements, timeline, interrupted);
        let mut shown = measurements.to_vec();
        shown.iter_mut().for_each(|m| m.samples = None);
        if self.json {
            print_json(&RunDocument::new(record.clone(), shown, timeline.to_vec()))?;
            // The text's notes (what was changed for the run, what could not be) still reach
            // a reader of the JSON, on stderr.
            let notes = extra
                .iter()
                .flat_map(|t| t.lines())
                .filter(|l| l.starts_with("note: "));
            notes.for_each(|n| eprintln!("{n}"));
        } else {
            if !self.simulated {
                print_text(&oslab_report::views::run(&record, &shown, self.details))?;
            }
            if let Some(text) = extra {
                print_text(&text)?;
            }
        }
        saved?;
        let id = record.id.unwrap_or_default();
        let events = match timeline.len() {
            0 => String::new(),
            n => format!(" and {}", oslab_core::units::counted(n, "timeline event")),
        };
        // Said as every message is, wrapped to the terminal (a long store path ran past it).
        super::say(&format!(
            "{}{events} in {:.1} s, stored as run {id} in {}",
            oslab_core::units::counted(measurements.len(), "measurement"),
            record.wall_s,
            self.recorder.store().path().display()
        ));
        if interrupted {
            eprintln!("interrupted: run {id} holds what completed and is marked 'interrupted'");
            return Ok(ExitCode::from(oslab_os::signals::exit_status()));
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// Each probe's results stored as soon as it completes ([`RecordedSession::append`]).
impl oslab_probes::runner::Sink for &RecordedSession {
    fn finished(&mut self, _probe: &oslab_probes::Probe, results: &[Measurement]) {
        self.append(results);
    }
}
