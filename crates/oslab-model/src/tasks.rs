//! Process and thread creation, context switches and migrations: fork's page-table copy from the
//! cycles per page, the rest composed from the run's simpler measurements (a consistency check).

use crate::cpu::{null_syscall, VM_EXIT_CYCLES, VM_EXIT_SOURCE};
use crate::hierarchy::{dram_latency, level_latency, level_read_rate};
use crate::run::{number, param, Run};
use crate::{at_clock, Figure, Model, Outcome, Spec};
use oslab_core::catalog::{id, metric, SWITCH_PAIRS};
use oslab_core::model::Measurement;

/// Cycles fork and the child's exit spend per 4 KiB page the parent has mapped: copying and
/// write-protecting the entry, then taking and dropping the page's reference and map counts.
const FORK_CYCLES_PER_PAGE: f64 = 60.0;
/// The scheduler's share of a switch between two threads: dequeue, pick, enqueue, switch_to
/// and the FPU/vector state saved and restored.
const THREAD_SWITCH_CYCLES: f64 = 1500.0;
/// A process switch adds an address-space change: a CR3 write that keeps the TLB (PCID/ASID).
const ADDRESS_SPACE_CYCLES: f64 = 200.0;
/// Sending an inter-processor interrupt and taking it on the other cpu.
const IPI_CYCLES: f64 = 1000.0;
/// Exit latency of HLT (C1) where no cpuidle driver says otherwise, µs.
const HLT_EXIT_US: f64 = 1.0;

fn measured(
    run: &Run,
    like: &Measurement,
    probe: &str,
    metric: &str,
    keep: impl Fn(&serde_json::Map<String, serde_json::Value>) -> bool,
) -> Result<Figure, String> {
    let m = run.median(like, probe, metric, keep)?;
    Ok(Figure::new(m.value, m.source))
}

fn plain(p: &serde_json::Map<String, serde_json::Value>) -> bool {
    !p.contains_key("touched_mib") && !p.contains_key("fit")
}

pub(crate) fn creation(spec: &Spec, run: &Run, m: &Measurement) -> Outcome {
    let rt = |probe: &str| measured(run, m, probe, "round_trip", plain);
    let create = |probe: &str| measured(run, m, probe, "create", plain);
    match (m.probe.as_str(), m.metric.as_str()) {
        (id::TASK_FORK, metric::COST_PER_MIB) => {
            let pages = 256.0;
            let model = Model::spec("page-table copy", 0.0, format!("{pages} pages x {FORK_CYCLES_PER_PAGE} cycles"))
                .input("cycles_per_page", FORK_CYCLES_PER_PAGE, "estimate: copy and write-protect a page-table entry, take and later drop the page's reference and map counts (fork, then the child's exit)");
            at_clock(spec, model, pages * FORK_CYCLES_PER_PAGE)
        }
        (id::TASK_FORK, metric::ROUND_TRIP) => {
            let touched = number(&m.params, "touched_mib").unwrap_or(0.0);
            let fit =
                |metric: &str| measured(run, m, id::TASK_FORK, metric, |p| p.contains_key("fit"));
            let (fixed, slope) = (fit("fixed_cost")?, fit("cost_per_mib")?);
            Ok(Model::composed(
                "fork fit",
                fixed.value + slope.value * touched,
                format!(
                    "{:.0} ns + {:.0} ns/MiB x {touched} MiB",
                    fixed.value, slope.value
                ),
            )
            .figure("fixed_ns", &fixed)
            .figure("per_mib_ns", &slope)
            .input("touched_mib", touched, "parameter"))
        }
        (id::TASK_VFORK, _) => {
            let t = rt(id::TASK_PTHREAD)?;
            Ok(Model::composed("task sharing the address space", t.value, format!("pthread round trip {:.0} ns: vfork's child shares the address space, runs and exits before the parent goes on", t.value))
                .figure("pthread_round_trip_ns", &t))
        }
        (id::TASK_POSIX_SPAWN, _) | (id::TASK_FORK_EXEC, metric::ROUND_TRIP) => {
            let exec = |a: Figure, b: Figure| {
                Figure::new(
                    a.value - b.value,
                    format!("{} minus {}", a.source, b.source),
                )
            };
            let (base, exec) = if m.probe == id::TASK_POSIX_SPAWN {
                let base = if m.metric == "create" {
                    create(id::TASK_VFORK)?
                } else {
                    rt(id::TASK_VFORK)?
                };
                (base, exec(rt(id::TASK_FORK_EXEC)?, rt(id::TASK_FORK)?))
            } else {
                (
                    rt(id::TASK_FORK)?,
                    exec(rt(id::TASK_POSIX_SPAWN)?, rt(id::TASK_VFORK)?),
                )
            };
            Ok(Model::composed(
                "creation + exec",
                base.value + exec.value,
                format!("{:.0} ns + exec {:.0} ns", base.value, exec.value),
            )
            .figure("creation_ns", &base)
            .figure("exec_ns", &exec))
        }
        (id::TASK_FORK_EXEC, metric::CREATE) => {
            let f = create(id::TASK_FORK)?;
            Ok(Model::composed(
                "fork",
                f.value,
                format!(
                    "fork create {:.0} ns: the parent returns from fork before the child execs",
                    f.value
                ),
            )
            .figure("fork_create_ns", &f))
        }
        (id::TASK_STD_THREAD, metric) => {
            let t = if metric == "create" {
                create(id::TASK_PTHREAD)?
            } else {
                rt(id::TASK_PTHREAD)?
            };
            Ok(Model::composed(
                "pthread",
                t.value,
                format!(
                    "pthread {metric} {:.0} ns: std::thread wraps pthread_create",
                    t.value
                ),
            )
            .figure("pthread_ns", &t))
        }
        _ => Err(crate::unmodelled(m)),
    }
}

pub(crate) fn switch(spec: &Spec, run: &Run, m: &Measurement) -> Outcome {
    let Some(&(ipc, thread, process)) = SWITCH_PAIRS
        .iter()
        .find(|(_, t, p)| m.probe == *t || m.probe == *p)
    else {
        return Err(crate::unmodelled(m));
    };
    let same = |task: &'static str, metric: &'static str| {
        let probe = if task == "thread" { thread } else { process };
        measured(run, m, probe, metric, |p| {
            param(p, "placement").as_deref() == Some("same-cpu")
        })
    };
    let task = if m.probe == thread {
        "thread"
    } else {
        "process"
    };
    match (task, m.metric.as_str()) {
        ("thread", "switch") => {
            let model = Model::spec("thread switch", 0.0, format!("{THREAD_SWITCH_CYCLES} cycles"))
                .input("switch_cycles", THREAD_SWITCH_CYCLES, "estimate: dequeue, pick, enqueue, switch_to and the vector state saved and restored");
            at_clock(spec, model, THREAD_SWITCH_CYCLES)
        }
        ("process", "switch") => {
            let t = same("thread", "switch")?;
            let ghz = spec.ghz()?;
            let cr3 = ADDRESS_SPACE_CYCLES / ghz.value;
            Ok(Model::composed("process switch", t.value + cr3, format!("thread switch {:.0} ns + address-space change {ADDRESS_SPACE_CYCLES} cycles / {:.2} GHz", t.value, ghz.value))
                .figure("thread_switch_ns", &t)
                .input("address_space_cycles", ADDRESS_SPACE_CYCLES, "estimate: a CR3 write that keeps the TLB (PCID/ASID)")
                .figure("core_ghz", ghz))
        }
        (_, "transfer") => {
            let syscall = |probe: &str| {
                measured(run, m, probe, "per_call", |p| {
                    param(p, "cache").as_deref() == Some("hot")
                })
            };
            if ipc == "futex" {
                let s = syscall(id::SYSCALL_GETPPID)?;
                Ok(Model::composed("futex wake + wait", 2.0 * s.value, format!("2 x null system call {:.0} ns (a wake with no waiter, a wait that finds the value changed)", s.value)).figure("null_syscall_ns", &s))
            } else {
                let (w, r) = (
                    syscall(id::SYSCALL_WRITE_DEVNULL)?,
                    syscall(id::SYSCALL_READ_DEVZERO)?,
                );
                Ok(Model::composed(
                    "write + read",
                    w.value + r.value,
                    format!(
                        "write {:.0} ns + read {:.0} ns of one byte",
                        w.value, r.value
                    ),
                )
                .figure("write_ns", &w)
                .figure("read_ns", &r))
            }
        }
        (task, "wakeup") if task == "thread" || task == "process" => {
            let task: &'static str = if task == "thread" {
                "thread"
            } else {
                "process"
            };
            let transfer = same(task, "transfer")?;
            let ghz = spec.ghz()?;
            let idle = match &spec.idle_exit_us {
                Ok(f) => f.clone(),
                Err(why) => Figure::new(
                    HLT_EXIT_US,
                    format!("estimate: HLT (C1) exit about 1 µs ({why})"),
                ),
            };
            let mut cycles = IPI_CYCLES;
            let mut formula = format!("transfer {:.0} ns + (IPI {IPI_CYCLES}", transfer.value);
            let mut model = Model::composed("cross-cpu wake-up", 0.0, "")
                .figure("transfer_ns", &transfer)
                .input(
                    "ipi_cycles",
                    IPI_CYCLES,
                    "estimate: send an inter-processor interrupt and take it on the other cpu",
                )
                .figure("idle_exit_us", &idle);
            if let Some(h) = &spec.hypervisor {
                cycles += 2.0 * VM_EXIT_CYCLES;
                formula.push_str(&format!(" + 2 x {VM_EXIT_CYCLES} VM exits"));
                model = model.input("vm_exit_cycles", VM_EXIT_CYCLES, format!("{VM_EXIT_SOURCE}; the IPI's send and the idle vcpu's HLT exit to the hypervisor ({h})"));
            }
            model.value = transfer.value + cycles / ghz.value + idle.value * 1e3;
            model.formula = format!(
                "{formula}) cycles / {:.2} GHz + idle exit {} µs",
                ghz.value, idle.value
            );
            Ok(model.figure("core_ghz", ghz))
        }
        _ => Err(crate::unmodelled(m)),
    }
}

pub(crate) fn migration(spec: &Spec, run: &Run, m: &Measurement) -> Outcome {
    let size = number(&m.params, "size").ok_or("no size parameter")?;
    match m.metric.as_str() {
        "retouch_local" => {
            let rate = level_read_rate(spec, size)?;
            Ok(Model::spec(
                "re-read in place",
                size / rate.value,
                format!("{size} B / {:.1} GB/s", rate.value),
            )
            .figure("read_rate_gbps", &rate))
        }
        "per_migration" => {
            let u = spec.uarch()?;
            let class = param(&m.params, "class").unwrap_or_default();
            let from = if class.contains("SMT") {
                return Err(
                    "an SMT sibling shares the caches: nothing to refill, no cost to predict"
                        .into(),
                );
            } else if class.contains("L2") {
                level_latency(spec, 2)?
            } else if class.contains("L3") {
                level_latency(spec, 3)?
            } else {
                dram_latency(spec)?
            };
            let lines = size / 64.0;
            let mlp = u.fill_buffers as f64;
            Ok(Model::spec(
                "cache refill",
                lines * from.value / mlp,
                format!("{lines} lines x {:.1} ns / {mlp} fill buffers", from.value),
            )
            .figure("refill_latency_ns", &from)
            .input("fill_buffers", u.fill_buffers, format!("table: {}", u.name)))
        }
        "move" => {
            let wake = measured(run, m, id::SWITCH_THREAD_FUTEX, metric::WAKEUP, |_| true)?;
            let (model, entry) = null_syscall(spec, Model::composed("affinity change", 0.0, ""));
            let model = at_clock(spec, model, entry)?;
            Ok(Model {
                value: model.value + wake.value,
                formula: format!("sched_setaffinity entry {:.0} ns + cross-cpu wake-up {:.0} ns (the migration thread moves us, the target cpu wakes)", model.value, wake.value),
                ..model
            }
            .figure("wakeup_ns", &wake))
        }
        _ => Err(crate::unmodelled(m)),
    }
}
