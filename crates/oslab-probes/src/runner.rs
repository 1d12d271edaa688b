//! Runs selected probes one after another: checks what each needs, catches panics, stops cleanly
//! on Ctrl-C, and reports every probe's results to a [`Sink`] as soon as it finishes.

use crate::probe::{unmet, Context, Need, Probe, ProbeError};
use oslab_core::machine::Environment;
use oslab_core::model::{Measurement, Status};
use serde_json::Map;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Receives progress and results (the CLI draws a progress bar; tests collect).
pub trait Sink {
    /// A probe is about to run.
    fn started(&mut self, _probe: &Probe, _index: usize, _total: usize) {}
    /// A probe finished (or was skipped / failed).
    fn finished(&mut self, _probe: &Probe, _results: &[Measurement]) {}
}

/// A sink that ignores everything.
pub struct Silent;
impl Sink for Silent {}

/// What a run produced.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Every measurement, in order.
    pub measurements: Vec<Measurement>,
    /// Whether the user stopped the run before the end.
    pub interrupted: bool,
}

/// Runs `probes` in order.
pub fn run(probes: &[&'static Probe], cx: &Context, sink: &mut dyn Sink) -> Outcome {
    let mut outcome = Outcome::default();
    for (i, probe) in probes.iter().enumerate() {
        sink.started(probe, i, probes.len());
        let results = match run_one(probe, cx) {
            Ok(r) => r,
            Err(ProbeError::Interrupted) => {
                outcome.interrupted = true;
                break;
            }
            Err(ProbeError::Unsupported(why)) => vec![whole_probe(probe, Status::Skipped(why))],
            Err(ProbeError::Failed(why)) => vec![whole_probe(probe, Status::Failed(why))],
        };
        sink.finished(probe, &results);
        outcome.measurements.extend(results);
    }
    outcome
}

/// Why a probe cannot run here at all (`PeerCpu` only limits parts, so it never gates).
pub fn gate(probe: &Probe, environment: &Environment, peer_cpu: Option<usize>) -> Option<String> {
    probe
        .needs
        .iter()
        .filter(|n| **n != Need::PeerCpu)
        .find_map(|n| unmet(*n, environment, peer_cpu))
}

fn run_one(probe: &Probe, cx: &Context) -> Result<Vec<Measurement>, ProbeError> {
    if let Some(why) = gate(probe, cx.environment, cx.peer_cpu) {
        return Err(ProbeError::Unsupported(why));
    }
    match catch_unwind(AssertUnwindSafe(|| (probe.run)(cx))) {
        Ok(r) => r,
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(ProbeError::Failed(format!("panicked: {msg}")))
        }
    }
}

fn whole_probe(probe: &Probe, status: Status) -> Measurement {
    Measurement::not_taken(probe.id, Map::new(), "-", probe.unit, status)
}
