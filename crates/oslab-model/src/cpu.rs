//! Timer reads, the loop, procedure calls and system calls: cycles at the measured core clock.

use crate::answer::{Model, Outcome};
use crate::run::{param, Run};
use crate::spec::Spec;
use crate::spec::{NULL_SYSCALL_CYCLES, NULL_SYSCALL_SOURCE};
use oslab_core::catalog::{id, metric};
use oslab_core::model::Measurement;

/// The VFS path of a read or write on a character device: fd lookup, checks, notification hooks.
pub(crate) const VFS_CYCLES: f64 = 150.0;
/// A VM exit and re-entry, for instructions that always exit (cpuid) or events that do.
pub(crate) const VM_EXIT_CYCLES: f64 = 1200.0;
pub(crate) const VM_EXIT_SOURCE: &str = "estimate: a VM exit and re-entry, about 1,200 cycles on recent Intel and AMD hosts (kvm-unit-tests vmexit)";
/// Cache lines a system call's entry and exit touch that an eviction sends back to the next
/// level: the entry code, the syscall table, the task and its stack, per-cpu data.
const COLD_LINES: f64 = 40.0;
/// Lines the VFS path of read(2)/write(2) adds: the fd table, the file and its operations, the
/// device's code (about as many per cycle of work as the entry path).
const VFS_LINES: f64 = 30.0;
/// Lines a vDSO call touches: its code, the vvar data page, the caller's code and stack.
const VDSO_LINES: f64 = 4.0;
/// Pages whose translations the eviction pushed out of the TLB and a kernel entry walks for: the
/// kernel text, the kernel stack, the task, per-cpu data, the caller's code and stack.
const COLD_WALKS: f64 = 6.0;
/// The vDSO's: its code, the vvar page, the caller's stack.
const VDSO_WALKS: f64 = 3.0;
/// References of a page walk whose entries the eviction sent to the refill level: four levels.
const WALK_REFS: f64 = 4.0;
/// Under a hypervisor with nested paging a walk is two-dimensional: each of the guest's levels is
/// itself translated by the host's, up to 24 references.
const NESTED_WALK_REFS: f64 = 12.0;
/// Copying a result to user space: stac/clac around the access (SMAP) and the copy.
const COPY_OUT_CYCLES: f64 = 40.0;

/// A kernel entry and exit: the null system call with the active entry mitigations, and those
/// paid at each of its returns.
pub(crate) fn null_syscall(spec: &Spec, model: Model) -> (Model, f64) {
    let (mitigation, what) = spec.mitigation_cycles();
    let (model, returns) = spec.return_tax(model, NULL_SYSCALL_CYCLES);
    let model = model
        .input(
            "null_syscall_cycles",
            NULL_SYSCALL_CYCLES,
            NULL_SYSCALL_SOURCE,
        )
        .input(
            "mitigation_cycles",
            mitigation,
            format!("kernel: /sys/devices/system/cpu/vulnerabilities: {what}"),
        );
    let returns = returns.map_or(0.0, |(n, each)| n * each);
    (model, NULL_SYSCALL_CYCLES + mitigation + returns)
}

pub(crate) fn model(spec: &Spec, run: &Run, m: &Measurement) -> Outcome {
    let u = spec.uarch();
    match (m.probe.as_str(), m.metric.as_str()) {
        (id::LOOP_EMPTY, _) => {
            let model = Model::spec(
                "loop iteration",
                0.0,
                "1 cycle (a fused decrement and branch, one taken branch per cycle)",
            )
            .input(
                "cycles_per_iteration",
                1,
                "table: one taken branch per cycle on every core since Haswell and Zen",
            );
            spec.at_clock(model, 1.0)
        }
        (id::CALL_ARGS, metric::PER_CALL) => {
            let args = crate::run::number(&m.params, "args").unwrap_or(0.0);
            let cycles = 2.0 + 0.5 * args;
            let model = Model::spec("procedure call", 0.0, format!("(2 + 0.5 x {args}) cycles"))
                .input(
                    "call_ret_cycles",
                    2,
                    "table: call and ret are two taken branches, one per cycle",
                )
                .input(
                    "cycles_per_arg",
                    0.5,
                    "estimate: a move in the caller and a use in the callee, four per cycle",
                )
                .input("args", args, "parameter");
            spec.at_clock(model, cycles)
        }
        (id::CALL_ARGS, metric::INCREMENT) => {
            let model = Model::spec("argument cost", 0.0, "0.5 cycle").input(
                "cycles_per_arg",
                0.5,
                "estimate: a move in the caller and a use in the callee, four per cycle",
            );
            spec.at_clock(model, 0.5)
        }
        (id::TIMER_RDTSC, _) => {
            let u = u?;
            let model = Model::spec("rdtsc", 0.0, format!("{} cycles", u.rdtsc_cycles)).input(
                "rdtsc_cycles",
                u.rdtsc_cycles,
                format!("table: {}", u.name),
            );
            spec.at_clock(model, u.rdtsc_cycles)
        }
        (id::TIMER_RDTSCP, _) | (id::TIMER_LFENCE_RDTSC, _) => {
            let u = u?;
            let (extra, what) = if m.probe == id::TIMER_RDTSCP {
                (7.0, "estimate: rdtscp waits for earlier instructions, about 7 cycles more than rdtsc")
            } else {
                (
                    5.0,
                    "estimate: lfence waits for earlier loads, about 5 cycles",
                )
            };
            let model = Model::spec(
                "ordered rdtsc",
                0.0,
                format!("({} + {extra}) cycles", u.rdtsc_cycles),
            )
            .input("rdtsc_cycles", u.rdtsc_cycles, format!("table: {}", u.name))
            .input("ordering_cycles", extra, what);
            spec.at_clock(model, u.rdtsc_cycles + extra)
        }
        (id::TIMER_CPUID_RDTSC, _) => {
            let u = u?;
            let cpuid = 150.0;
            let mut model = Model::spec(
                "cpuid + rdtsc",
                0.0,
                format!("({cpuid} + {}", u.rdtsc_cycles),
            )
            .input(
                "cpuid_cycles",
                cpuid,
                "table: cpuid 100-250 cycles on bare metal (Agner Fog's instruction tables)",
            )
            .input("rdtsc_cycles", u.rdtsc_cycles, format!("table: {}", u.name));
            let mut cycles = cpuid + u.rdtsc_cycles;
            if let Some(h) = &spec.hypervisor {
                cycles += VM_EXIT_CYCLES;
                model = model.input(
                    "vm_exit_cycles",
                    VM_EXIT_CYCLES,
                    format!("{VM_EXIT_SOURCE}; cpuid always exits to the hypervisor ({h})"),
                );
                model
                    .formula
                    .push_str(&format!(" + {VM_EXIT_CYCLES} VM exit"));
            }
            model.formula.push_str(") cycles");
            spec.at_clock(model, cycles)
        }
        (id::TIMER_CLOCK_GETTIME, _) => clock_gettime(spec, false),
        (id::TIMER_CLOCK_GETTIME_SYSCALL, _) => clock_gettime(spec, true),
        _ => {
            let _ = run;
            Err(crate::answer::unmodelled(m))
        }
    }
}

/// clock_gettime: the vDSO reads the TSC ordered and scales it under a sequence count; through
/// the system call it adds a kernel entry. A clocksource the vDSO cannot read makes the vDSO
/// call the kernel too.
fn clock_gettime(spec: &Spec, syscall: bool) -> Outcome {
    let u = spec.uarch()?;
    let read = u.rdtsc_cycles + 5.0 + 20.0;
    let mut model = Model::spec(
        "clock_gettime",
        0.0,
        format!("({} + 5 + 20", u.rdtsc_cycles),
    )
    .input("rdtsc_cycles", u.rdtsc_cycles, format!("table: {}", u.name))
    .input("ordering_cycles", 5, "estimate: the fence before the read")
    .input(
        "scale_cycles",
        20,
        "estimate: the vDSO's sequence count, multiply and shift",
    );
    let vdso_reads = spec.clocksource.as_deref().is_none_or(|c| {
        [
            "tsc",
            "kvm-clock",
            "arch_sys_counter",
            "hyperv_clocksource_tsc_page",
        ]
        .contains(&c)
    });
    let mut cycles = read;
    if syscall || !vdso_reads {
        let (m, entry) = null_syscall(spec, model);
        model = m.input(
            "copy_out_cycles",
            COPY_OUT_CYCLES,
            "estimate: stac/clac (SMAP) and the copy of the timespec to user space",
        );
        cycles += entry + COPY_OUT_CYCLES;
        model.formula.push_str(&format!(
            " + {entry} kernel entry + {COPY_OUT_CYCLES} copy out"
        ));
        if !vdso_reads {
            model = model.input(
                "clocksource",
                spec.clocksource.clone().unwrap_or_default(),
                "kernel: the vDSO cannot read this clocksource and calls the kernel",
            );
        }
    }
    model.formula.push_str(") cycles");
    spec.at_clock(model, cycles)
}

pub(crate) fn syscall(spec: &Spec, m: &Measurement) -> Outcome {
    let hot = match m.probe.as_str() {
        id::SYSCALL_GETPID | id::SYSCALL_GETPPID => {
            let (model, cycles) = null_syscall(spec, Model::spec("null system call", 0.0, ""));
            (model, cycles, format!("{cycles} cycles"))
        }
        id::SYSCALL_TIME_RAW => {
            let (model, cycles) = null_syscall(spec, Model::spec("time system call", 0.0, ""));
            let model = model.input(
                "work_cycles",
                20,
                "estimate: reading the seconds under a sequence count",
            );
            (model, cycles + 20.0, format!("({cycles} + 20) cycles"))
        }
        id::SYSCALL_TIME_VDSO => (
            Model::spec("vDSO time", 0.0, "").input(
                "cycles",
                5,
                "estimate: a call and a load from the vDSO data page, no kernel entry",
            ),
            5.0,
            "5 cycles".to_string(),
        ),
        id::SYSCALL_READ_DEVZERO | id::SYSCALL_WRITE_DEVNULL => {
            let (model, cycles) = null_syscall(spec, Model::spec("1-byte device I/O", 0.0, ""));
            let model = model.input(
                "vfs_cycles",
                VFS_CYCLES,
                "estimate: fd lookup, access checks and notification hooks of read(2)/write(2)",
            );
            if m.probe == id::SYSCALL_READ_DEVZERO {
                let model = model.input(
                    "copy_out_cycles",
                    COPY_OUT_CYCLES,
                    "estimate: stac/clac (SMAP) and the byte cleared in user space",
                );
                let work = VFS_CYCLES + COPY_OUT_CYCLES;
                (
                    model,
                    cycles + work,
                    format!("({cycles} + {VFS_CYCLES} + {COPY_OUT_CYCLES}) cycles"),
                )
            } else {
                (
                    model,
                    cycles + VFS_CYCLES,
                    format!("({cycles} + {VFS_CYCLES}) cycles"),
                )
            }
        }
        _ => return Err(crate::answer::unmodelled(m)),
    };
    let (mut model, cycles, formula) = hot;
    model.formula = formula;
    let model = spec.at_clock(model, cycles)?;
    if param(&m.params, "cache").as_deref() != Some("cold") {
        return Ok(model);
    }
    // Cold: the lines the call touches come back from where the eviction left them (the last
    // level when only private caches were evicted, else memory), and each page it touches is
    // walked for, the walk's entries coming from there too.
    let u = spec.uarch()?;
    let from_llc = param(&m.params, "evicted").as_deref() == Some("private");
    let refill = if from_llc {
        crate::hierarchy::level_latency(spec, spec.caches.len())
    } else {
        crate::hierarchy::dram_latency(spec)
    }?;
    let vdso = m.probe == id::SYSCALL_TIME_VDSO;
    let vfs = matches!(
        m.probe.as_str(),
        id::SYSCALL_READ_DEVZERO | id::SYSCALL_WRITE_DEVNULL
    );
    let (lines, walks) = match (vdso, vfs) {
        (true, _) => (VDSO_LINES, VDSO_WALKS),
        (_, true) => (COLD_LINES + VFS_LINES, COLD_WALKS),
        _ => (COLD_LINES, COLD_WALKS),
    };
    let (refs, refs_source) = match &spec.hypervisor {
        Some(h) => (NESTED_WALK_REFS, format!("estimate: under a hypervisor ({h}) with nested paging a walk is two-dimensional, up to 24 references; half miss, the host's paging-structure caches keep the rest")),
        None => (WALK_REFS, "estimate: a four-level walk whose entries the eviction sent to the refill level".to_string()),
    };
    let lines_source = match (vdso, vfs) {
        (true, _) => "estimate: the vDSO's code, the vvar data page, the caller's code and stack",
        (_, true) => "estimate: kernel entry code, the syscall table, the task and its stack, per-cpu data (40), and the VFS path's fd table, file, operations and device code (30)",
        _ => "estimate: kernel entry code, the syscall table, the task and its stack, per-cpu data",
    };
    let walks_source = if vdso {
        "estimate: the vDSO's code, the vvar page and the caller's stack, each walked for after the TLB was evicted"
    } else {
        "estimate: kernel text, kernel stack, task, per-cpu data and the caller's code and stack, each walked for after the TLB was evicted"
    };
    let mut model = model
        .input("lines", lines, lines_source)
        .input("page_walks", walks, walks_source)
        .input("walk_references", refs, refs_source)
        .input(
            "refill_ns",
            crate::answer::round(refill.value),
            refill.source.clone(),
        )
        .input("fill_buffers", u.fill_buffers, format!("table: {}", u.name))
        .input("page_walkers", u.page_walkers, format!("table: {}", u.name));
    // The lines' misses overlap across the fill buffers; each walk's references follow one
    // another, the walks overlapping across the page walkers.
    let (fills, walkers) = (u.fill_buffers as f64, u.page_walkers as f64);
    model.value += (lines / fills + walks * refs / walkers) * refill.value;
    model.formula = format!(
        "{} + ({lines} lines / {fills} fill buffers + {walks} walks x {refs} references / {walkers} walkers) x {:.1} ns",
        model.formula, refill.value
    );
    Ok(model)
}
