//! OS noise on a busy cpu: the tick rate from the kernel's configuration, the clock read from
//! the timer model, the time lost from the tick rate and the measured interruption.

use crate::answer::{Model, Outcome};
use crate::run::Run;
use crate::spec::Spec;
use oslab_core::catalog::{id, metric};
use oslab_core::model::Measurement;

pub(crate) fn model(spec: &Spec, run: &Run, m: &Measurement) -> Outcome {
    let hz = || {
        spec.tick_hz.map(f64::from).ok_or_else(|| {
            "CONFIG_HZ unknown: neither the kernel's configuration (/boot/config-$(uname -r)) nor /proc/timer_list (root only) is readable".to_string()
        })
    };
    match m.metric.as_str() {
        "tick_hz" => match hz() {
            Ok(hz) => Ok(
                Model::spec("timer tick", hz, format!("CONFIG_HZ = {hz}")).input(
                    "config_hz",
                    hz,
                    "kernel: CONFIG_HZ",
                ),
            ),
            Err(why) => {
                // Without the configuration, the kernel's own count over the recording.
                let counted = m
                    .context
                    .get("kernel_timer_hz")
                    .and_then(serde_json::Value::as_f64)
                    .ok_or(why)?;
                Ok(Model {
                    kind: oslab_core::ModelKind::Reference,
                    ..Model::spec("kernel's tick count", counted, format!("{counted} local timer interrupts per second (/proc/interrupts over the recording)"))
                }
                .input("local_timer_hz", counted, "kernel: /proc/interrupts LOC for this cpu over the recording"))
            }
        },
        "interruptions" => {
            let hz = hz()?;
            let seconds = m
                .context
                .get("recording_s")
                .and_then(serde_json::Value::as_f64)
                .ok_or("the recording's length is not known")?;
            Ok(Model::spec(
                "one interruption per tick",
                hz * seconds,
                format!("{hz} Hz x {seconds:.3} s"),
            )
            .input("config_hz", hz, "kernel: CONFIG_HZ")
            .input("seconds", seconds, "measured: the recording's length"))
        }
        "lost_fraction" => {
            let hz = hz()?;
            let each = run.median(m, &m.probe, "interruption", |p| p == &m.params)?;
            Ok(Model::composed(
                "ticks x their length",
                hz * each.value / 1e9,
                format!("{hz} Hz x {:.0} ns", each.value),
            )
            .input("config_hz", hz, "kernel: CONFIG_HZ")
            .input(
                "interruption_ns",
                crate::answer::round(each.value),
                each.source,
            ))
        }
        "read_overhead" => {
            let t = run.median(m, id::TIMER_RDTSC, metric::PER_READ, |_| true)?;
            Ok(Model::composed(
                "clock read",
                t.value,
                format!(
                    "timer.rdtsc {:.1} ns: the tracker reads the clock back to back",
                    t.value
                ),
            )
            .input("rdtsc_ns", crate::answer::round(t.value), t.source))
        }
        _ => Err(crate::answer::unmodelled(m)),
    }
}
