//! One run written as it is measured: started as `running` before the first probe, each probe's
//! results appended as it completes, and the final results written in one transaction. The run
//! record (machine, environment, command, timing) is assembled here, once for every command.

use crate::exchange::RunDocument;
use crate::{RunRecord, RunStatus, Store, StoreError};
use oslab_core::machine::Machine;
use oslab_core::model::{Measurement, TimelineEvent};
use oslab_core::pace::Pace;
use std::cell::Cell;
use std::path::PathBuf;
use std::time::Instant;

/// Which program wrote the run.
#[derive(Debug, Clone)]
pub struct Program {
    /// Its version.
    pub version: String,
    /// Git revision of the build, when known.
    pub git_rev: Option<String>,
    /// The command line.
    pub command: String,
}

/// A run the store could not take (locked past the timeout, full, gone), and where it went.
#[derive(Debug, thiserror::Error)]
pub enum NotStored {
    /// Written to a JSON file that `oslab import` stores later.
    #[error("could not store the run ({error}); its {count} measurements are in {}: `oslab import {}` stores them once the store is free", .file.display(), .file.display())]
    Kept {
        /// Why the store refused it.
        error: StoreError,
        /// Measurements kept.
        count: usize,
        /// The JSON file.
        file: PathBuf,
    },
    /// Not even the JSON file could be written.
    #[error("could not store the run ({error}), nor write it to {} ({why}); its results are printed above", .file.display())]
    Lost {
        /// Why the store refused it.
        error: StoreError,
        /// The file that could not be written.
        file: PathBuf,
        /// Why.
        why: String,
    },
}

/// Writes one run to a store.
pub struct Recorder {
    store: Store,
    program: Program,
    started: String,
    wall: Instant,
    pace: Pace,
    tags: std::collections::BTreeMap<String, String>,
    run_id: Cell<Option<i64>>,
}

impl Recorder {
    /// A run about to start (nothing is written until [`Recorder::begin`] or
    /// [`Recorder::finish`]).
    pub fn new(store: Store, program: Program, pace: Pace) -> Recorder {
        Recorder {
            store,
            program,
            started: oslab_core::time::utc_now(),
            wall: Instant::now(),
            pace,
            tags: Default::default(),
            run_id: Cell::new(None),
        }
    }

    /// Labels the run (before [`Recorder::begin`]): `kernel` = `6.18`.
    pub fn tag(&mut self, key: &str, value: &str) {
        self.tags.insert(key.to_string(), value.to_string());
    }

    /// The store written to.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Seconds since the run started.
    pub fn wall_s(&self) -> f64 {
        self.wall.elapsed().as_secs_f64()
    }

    /// The record of a run that could not be stored (for a JSON file `oslab import` reads).
    pub fn unsaved(&self, machine: &Machine, interrupted: bool) -> RunRecord {
        let status = match interrupted {
            true => RunStatus::Interrupted,
            false => RunStatus::Complete,
        };
        RunRecord {
            id: None,
            ..self.record(machine, status)
        }
    }

    fn record(&self, machine: &Machine, status: RunStatus) -> RunRecord {
        RunRecord {
            id: self.run_id.get(),
            started: self.started.clone(),
            // A wall clock stepped back during the run (NTP) does not make it end before it
            // began: a run oslab stores always imports again.
            finished: Some(oslab_core::time::utc_now())
                .filter(|now| {
                    let at = oslab_core::time::epoch_seconds;
                    at(now) >= at(&self.started)
                })
                .unwrap_or_else(|| self.started.clone()),
            status,
            oslab_version: self.program.version.clone(),
            git_rev: self.program.git_rev.clone(),
            command: self.program.command.clone(),
            hostname: machine.fingerprint.hostname.clone(),
            quick: self.pace.is_quick(),
            wall_s: self.wall_s(),
            fingerprint: serde_json::to_value(&machine.fingerprint)
                .unwrap_or(serde_json::Value::Null),
            environment: serde_json::to_value(&machine.environment)
                .unwrap_or(serde_json::Value::Null),
            tags: self.tags.clone(),
        }
    }

    /// Starts the run in the store as `running`, so what completes is kept even if this process
    /// dies; returns its id (the same id when called again).
    pub fn begin(&mut self, machine: &Machine) -> Result<i64, StoreError> {
        if let Some(id) = self.run_id.get() {
            return Ok(id);
        }
        let id = self
            .store
            .begin_run(&self.record(machine, RunStatus::Running))?;
        self.run_id.set(Some(id));
        Ok(id)
    }

    /// Stores the measurements of a completed probe of a started run (none before
    /// [`Recorder::begin`]).
    pub fn append(&self, measurements: &[Measurement]) -> Result<(), StoreError> {
        match self.run_id.get() {
            Some(id) => self.store.append(id, measurements, self.wall_s()),
            None => Ok(()),
        }
    }

    /// Writes the final run in one transaction (its measurements replace what was appended)
    /// and returns its record, with its id.
    pub fn finish(
        &mut self,
        machine: &Machine,
        measurements: &[Measurement],
        timeline: &[TimelineEvent],
        interrupted: bool,
    ) -> Result<RunRecord, StoreError> {
        let id = self.begin(machine)?;
        let status = match interrupted {
            true => RunStatus::Interrupted,
            false => RunStatus::Complete,
        };
        let record = self.record(machine, status);
        self.store.finish_run(id, &record, measurements, timeline)?;
        Ok(record)
    }

    /// [`Recorder::finish`], or where the store cannot take the run, writes it to a JSON file
    /// instead and says where and how to import it. The run's record comes back either way
    /// (without an id when it was not stored).
    pub fn finish_or_keep(
        &mut self,
        machine: &Machine,
        measurements: &[Measurement],
        timeline: &[TimelineEvent],
        interrupted: bool,
    ) -> (RunRecord, Result<(), NotStored>) {
        let error = match self.finish(machine, measurements, timeline, interrupted) {
            Ok(record) => return (record, Ok(())),
            Err(e) => e,
        };
        let record = self.unsaved(machine, interrupted);
        let doc = RunDocument::new(record.clone(), measurements.to_vec(), timeline.to_vec());
        let kept = match doc.keep_unsaved() {
            Ok(file) => NotStored::Kept {
                error,
                count: measurements.len(),
                file,
            },
            Err((file, why)) => NotStored::Lost { error, file, why },
        };
        (record, Err(kept))
    }
}
