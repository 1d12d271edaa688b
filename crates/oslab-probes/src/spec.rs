//! The model's view of this machine, found here: the core clock measured on the measuring cpu,
//! the memory as the user or the firmware describes it, the deepest idle state's exit latency.
//! The model itself (oslab-model) only computes from them.

use crate::core_clock::CoreClock;
use oslab_core::machine::Fingerprint;
use oslab_model::memory::MemorySpec;
use oslab_model::{Figure, NoModel, Spec};

/// The model of this machine, measuring the core clock on the calling thread's cpu (pinned
/// to `cpu`); `memory` is the user's description, if any.
pub fn read(fingerprint: &Fingerprint, cpu: usize, memory: Option<&str>) -> Spec {
    // A preempted burst widens the spread: up to three tries, the steadiest kept.
    let mut clock: Option<CoreClock> = None;
    for _ in 0..3 {
        let Some(c) = CoreClock::measure() else { break };
        if clock.as_ref().is_none_or(|k| c.spread < k.spread) {
            clock = Some(c);
        }
        if clock.as_ref().is_some_and(|k| k.spread < 0.05) {
            break;
        }
    }
    let core_ghz = match clock {
        Some(c) if c.spread < 0.5 => Ok(Figure::new(c.ghz, c.describe())),
        Some(c) => Err(NoModel(format!(
            "the core clock could not be measured steadily ({}): the cpu was shared or changed speed",
            c.describe()
        ))),
        None => Err("no dependent-operation chain is written for this architecture".into()),
    };
    Spec::from_parts(
        fingerprint,
        cpu,
        core_ghz,
        MemorySpec::described(memory, oslab_os::dmi::read_peak()),
        idle_exit(cpu),
    )
}

/// The exit latency of the deepest enabled idle state of `cpu`, from cpuidle.
fn idle_exit(cpu: usize) -> Result<Figure, NoModel> {
    let dir = format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle");
    let read = |p: String| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    let mut deepest = None;
    for k in 0.. {
        let Some(latency) = read(format!("{dir}/state{k}/latency")) else {
            break;
        };
        if read(format!("{dir}/state{k}/disable")).as_deref() == Some("1") {
            continue;
        }
        let name = read(format!("{dir}/state{k}/name")).unwrap_or_default();
        if let Ok(us) = latency.parse::<f64>() {
            deepest = Some((us, name));
        }
    }
    match deepest {
        Some((us, name)) => Ok(Figure::new(
            us,
            format!("kernel: cpuidle state {name}, exit latency {us} µs"),
        )),
        None => Err(NoModel(format!(
            "{dir} lists no idle states (no cpuidle driver)"
        ))),
    }
}
