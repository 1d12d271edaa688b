//! The machine model: what each measurement should cost, predicted from the machine's
//! specifications before looking at what was measured (the primitive-cost method: predict,
//! measure, explain the gap).
//!
//! - [`spec::Spec`]: the machine's figures, each with its source: the core's published cycle
//!   counts ([`uarch`]), the core clock (measured by oslab-probes' `core_clock`: a chain of dependent multiplies), the
//!   memory's rate and channels ([`memory`]: SMBIOS or `--memory`), cache sizes, mitigations,
//!   CONFIG_HZ, idle-state exit latencies and NUMA distances.
//! - [`predict`]: gives every measurement of a run its model's value, formula, inputs and their
//!   sources, and, where measured and predicted differ more than 2x, the likely reason; or says
//!   which input was missing and how to supply it.
//!
//! A *spec* model predicts from the specifications alone. A *composed* model predicts a complex
//! primitive from simpler ones measured in the same run (a pipe round trip from the switch and
//! the transfer): a consistency check, labelled as such. `docs/models.md` lists every model.

pub mod memory;
pub mod spec;
pub mod uarch;

mod activity;
mod answer;
mod bandwidth;
mod cpu;
mod faults;
mod gap;
mod hierarchy;
mod run;
mod services;
mod tasks;

pub use answer::{Figure, Source};
use memory::MemorySpec;
pub use spec::Spec;

pub use answer::NoModel;
use answer::{unmodelled, Outcome};
use oslab_core::catalog::{self, id::Probe};
use oslab_core::model::{Measurement, ModelKind};
use run::Run;
use serde_json::Value;

/// Gives every measured value of a run its prediction (or the reason there is none). A
/// prediction a probe made itself from what it observed (a count the kernel kept over the same
/// interval) is kept.
pub fn predict(spec: &Spec, measurements: &mut [Measurement]) {
    let run = Run::new(measurements.to_vec());
    let served = hierarchy::served(spec, &run);
    let plateau = served.caches.iter().find_map(|c| c.served.clone());
    for m in measurements.iter_mut() {
        if !m.status.has_value() {
            continue;
        }
        if m.prediction
            .as_ref()
            .is_some_and(|p| p.kind == ModelKind::Reference)
        {
            continue;
        }
        // A row whose model the cache this run found serving changes rests on that finding (the
        // chunked chase's own rows, which found it, are judged against sysfs).
        let claimed = model(spec, &run, m);
        let (spec, model) = match &plateau {
            Some(f) if m.probe != catalog::id::MEMORY_LATENCY_CHUNK => {
                match (claimed, model(&served, &run, m)) {
                    (Ok(a), Ok(b)) if a.value == b.value => (spec, Ok(a)),
                    (Err(a), Err(_)) => (spec, Err(a)),
                    (_, b) => (
                        &served,
                        b.map(|b| b.figure("served_bytes", f)).map_err(|NoModel(why)| {
                            NoModel(format!("{why} (the working set is beyond the {} the last cache serves this guest)", oslab_core::units::bytes(f.value as u64)))
                        }),
                    ),
                }
            }
            _ => (spec, claimed),
        };
        match model {
            Ok(model) if model.value.is_finite() && model.value > 0.0 => {
                let mut p = model.into_prediction();
                m.prediction = Some(p.clone());
                p.gap = gap::explain(spec, &run, m);
                m.prediction = Some(p);
                m.no_model = None;
            }
            Ok(model) => {
                m.prediction = None;
                m.no_model = Some(format!(
                    "the {} model gives no positive value ({})",
                    model.name, model.formula
                ));
            }
            Err(NoModel(why)) => {
                m.prediction = None;
                m.no_model = Some(why);
            }
        }
    }
}

/// Predicts a stored run again with today's model: what the run measured for the spec (the
/// core clock, the memory's peak, the idle state's exit) is read back from its stored
/// predictions' inputs, the rest from its fingerprint. A model fix then reaches old runs, and a
/// model is judged on machines it was not written on (`oslab show --repredict`). `fingerprint`
/// is the run's as stored; one this oslab cannot read is an error.
pub fn repredict(fingerprint: &Value, measurements: &mut [Measurement]) -> Result<(), NoModel> {
    let fingerprint: oslab_core::machine::Fingerprint = serde_json::from_value(fingerprint.clone())
        .map_err(|e| format!("cannot predict this run again: its machine record is not one this oslab reads ({e})"))?;
    let stored = |key: &str| -> Option<Figure> {
        measurements.iter().find_map(|m| {
            let p = m.prediction.as_ref()?;
            let value = p.inputs.get(key)?.as_f64()?;
            let source = p
                .sources
                .get(key)
                .and_then(|s| s.as_str())
                .unwrap_or("stored with the run");
            Some(Figure::new(
                value,
                format!("{source} (stored with the run)"),
            ))
        })
    };
    let missing = |what: &str| {
        NoModel(format!(
            "not stored with the run: no prediction of it used {what}"
        ))
    };
    let core_ghz = stored("core_ghz").ok_or_else(|| missing("the core clock"));
    let memory = stored("peak_gbps")
        .map(|f| MemorySpec {
            // One 64-bit channel at the rate that gives the stored peak.
            mts: (f.value * 125.0).round() as u32,
            channels: 1,
            width_bits: 64,
            source: f.source.text,
        })
        .ok_or_else(|| missing("the memory's peak"));
    let idle = stored("idle_exit_us").ok_or_else(|| missing("an idle state"));
    let mut cpus: std::collections::BTreeMap<u64, usize> = std::collections::BTreeMap::new();
    for m in measurements.iter() {
        if let Some(c) = m.params.get("cpu").and_then(|c| c.as_u64()) {
            *cpus.entry(c).or_default() += 1;
        }
    }
    let cpu = cpus
        .into_iter()
        .max_by_key(|&(_, n)| n)
        .map_or(0, |(c, _)| c as usize);
    let spec = Spec::from_parts(&fingerprint, cpu, core_ghz, memory, idle);
    for m in measurements.iter_mut() {
        if m.prediction
            .as_ref()
            .is_some_and(|p| p.kind != ModelKind::Reference)
        {
            m.prediction = None;
        }
    }
    predict(&spec, measurements);
    Ok(())
}

/// The model of one measurement: the catalog says whether there is one (or why not); the match
/// names every probe's model, with no wildcard, so a probe added to the catalog without one
/// does not compile.
fn model(spec: &Spec, run: &Run, m: &Measurement) -> Outcome {
    let not_known = || {
        NoModel(format!(
            "{} {} is not in this version's catalog",
            m.probe, m.metric
        ))
    };
    let probe: Probe = m.probe.parse().map_err(|_| not_known())?;
    match catalog::prediction_of(&m.probe, &m.metric) {
        Some(catalog::Predicted::Yes) => {}
        Some(catalog::Predicted::No(why)) => return Err(why.into()),
        None => return Err(not_known()),
    }
    use Probe as P;
    match probe {
        P::TimerRdtsc
        | P::TimerRdtscp
        | P::TimerLfenceRdtsc
        | P::TimerCpuidRdtsc
        | P::TimerClockGettime
        | P::TimerClockGettimeSyscall
        | P::LoopEmpty
        | P::CallArgs => cpu::model(spec, run, m),
        P::SyscallGetpid
        | P::SyscallGetppid
        | P::SyscallTimeVdso
        | P::SyscallTimeRaw
        | P::SyscallReadDevzero
        | P::SyscallWriteDevnull => cpu::syscall(spec, m),
        P::TaskFork
        | P::TaskVfork
        | P::TaskPosixSpawn
        | P::TaskForkExec
        | P::TaskPthread
        | P::TaskStdThread => tasks::creation(spec, run, m),
        P::SwitchProcessPipe
        | P::SwitchProcessFutex
        | P::SwitchProcessEventfd
        | P::SwitchThreadPipe
        | P::SwitchThreadFutex
        | P::SwitchThreadEventfd
        | P::SwitchOneshot => tasks::switch(spec, m),
        P::MigrationCost => tasks::migration(spec, run, m),
        P::C2cLatency => hierarchy::core_to_core(spec, m),
        P::MemoryLatencyChunk
        | P::MemoryLatencyRandom
        | P::MemoryLatencySequential
        | P::MemoryLatencyStride
        | P::MemoryLatencyPages
        | P::MemoryLatencyParallel
        | P::MemoryLatencyLoaded => hierarchy::model(spec, run, m),
        P::BandwidthStream
        | P::BandwidthThreads
        | P::BandwidthMix
        | P::BandwidthSweep
        | P::NumaMatrix => bandwidth::model(spec, run, m),
        P::FaultsAnon | P::FaultsThp | P::FaultsPopulate | P::FaultsFile => {
            faults::model(spec, run, m)
        }
        P::ActivityNoise | P::Activity => activity::model(spec, run, m),
        // The services' figures and the experiments' results: the catalog says why none is
        // predicted.
        P::IpcPipe | P::FsCachedRead | P::FsCacheSize => services::model(run, m),
        P::IpcUnix
        | P::IpcTcp
        | P::IpcUdp
        | P::IpcTcpConnect
        | P::SignalInstall
        | P::SignalCatch
        | P::SignalProtectionFault
        | P::PollSelect
        | P::PollPoll
        | P::PollEpoll
        | P::FsCreate
        | P::FsUncachedRead
        | P::FsReaders
        | P::Timeslice
        | P::Migrate
        | P::CpumanJob
        | P::CpumanRun
        | P::CpumanSpeedup
        | P::Shuffle
        | P::ShuffleEval
        | P::ShuffleSim
        | P::Host => Err(unmodelled(m)),
    }
}

#[cfg(test)]
mod tests;
