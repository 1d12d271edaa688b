//! When measured and predicted differ by more than 2x: by how much, and the likely reason, from
//! what the machine is (a hypervisor, mitigations, caches smaller than claimed) and what the
//! probe does.

use crate::run::{number, param, Run};
use crate::spec::Spec;
use oslab_core::catalog::{id, metric, Family};
use oslab_core::model::Measurement;

/// The gap's size and likely reason, when the measurement is far from its model
/// ([`Measurement::far_from_model`]).
pub(crate) fn explain(spec: &Spec, run: &Run, m: &Measurement) -> Option<String> {
    let e = m.efficiency()?;
    if !m.far_from_model() {
        return None;
    }
    // Slower: a time above the prediction or a rate below it.
    let slower = (e > 1.0) != m.unit.higher_is_better();
    let how = if e >= 1.0 {
        format!("measured {e:.1}x the prediction")
    } else {
        format!("measured {:.2}x the prediction ({:.1}x below)", e, 1.0 / e)
    };
    // This row's own figure goes last, after the causes it shares with others.
    let own = kernel_excess(m).filter(|_| slower && kernel_path(m));
    let mut why = reason(spec, run, m, slower, own.is_some());
    let p = m.prediction.as_ref()?;
    let from_table = p
        .sources
        .values()
        .any(|s| s.as_str().is_some_and(|s| s.starts_with("table")));
    // The core a hypervisor may present speaks for rows the core's own tables price (caches,
    // timers, bandwidth), after the row's own reason: a kernel path's gap is the kernel's.
    let core_priced = !kernel_path(m);
    if let Some(presented) = presented_core(spec).filter(|_| from_table && core_priced) {
        why = format!("{why}; {presented}");
    }
    if p.kind == oslab_core::ModelKind::Composed {
        why = format!(
            "the parts measured in this run do not add up to it ({}); {why}",
            p.formula
        );
    }
    match own {
        Some(own) => Some(format!(
            "{how}: {why}{}{own}",
            oslab_core::model::GAP_THIS_ROW
        )),
        None => Some(format!("{how}: {why}")),
    }
}

/// The causes a row shares with others; `excess`: it has its own figure of how far a kernel
/// path missed ([`kernel_excess`]).
fn reason(spec: &Spec, run: &Run, m: &Measurement, slower: bool, excess: bool) -> String {
    let family = family(m);
    let vm = spec.hypervisor.as_deref();
    let (_, mitigations) = spec.mitigation_cycles();
    let shrunk = shrunk_cache(spec, run, m);
    if m.metric == metric::LEVEL_SIZE {
        return "the cache sysfs reports is the host's; a virtual cpu gets a share of it, and the plateau this run measured is that share".into();
    }
    if let Some(served) = input(m, "served_bytes").filter(|_| !slower) {
        return format!(
            "the working set lies past the {} the chunked chase found the last cache serving this guest, yet the cache held it: the guest's share of the host's cache was larger when this row ran (the host's other tenants come and go)",
            oslab_core::units::bytes(served as u64)
        );
    }
    if !slower {
        let estimates: Vec<&str> = m
            .prediction
            .iter()
            .flat_map(|p| p.sources.iter())
            .filter(|(_, s)| s.as_str().is_some_and(|s| s.starts_with("estimate")))
            .map(|(k, _)| k.as_str())
            .collect();
        if let Some(serial) = serial_misses(m) {
            return serial;
        }
        if let Some(near) = just_past_a_cache(spec, m) {
            return near;
        }
        return match family {
            Some(Family::Memory) if m.probe == id::MEMORY_LATENCY_STRIDE || m.probe == id::MEMORY_LATENCY_SEQUENTIAL => {
                "the prefetchers fetch more of the chain ahead, or from nearer, than the model counts".into()
            }
            Some(Family::Bandwidth) | Some(Family::Numa) => "together the threads moved more than their number times one thread: the one-thread row ran at a slower moment (the host's other guests), or the memory's peak is another configuration's than the one oslab was told".into(),
            Some(Family::Migration) => "the re-read is sequential: the L2 prefetchers fetch the moved lines ahead, more at once than the fill buffers the model counts".into(),
            _ if !estimates.is_empty() => format!("the model's estimates ({}) are higher than this kernel and core need", estimates.join(", ")),
            _ => "the published figure is for another configuration of this core (a faster uncore or memory than the table assumes)".into(),
        };
    }
    let mut why: Vec<String> = Vec::new();
    match family {
        Some(Family::Timer) => why.push(match vm {
            Some(h) if m.probe == id::TIMER_CPUID_RDTSC => vm_exit(m, h),
            _ if m.probe == id::TIMER_LFENCE_RDTSC => format!(
                "lfence holds each rdtsc until every earlier instruction has completed, the previous rdtsc among them, so the reads run one after another: the model adds {} cycles of ordering to rdtsc's throughput ({} cycles, the table's), where the wait is rdtsc's whole latency",
                input(m, "ordering_cycles").unwrap_or(f64::NAN),
                input(m, "rdtsc_cycles").unwrap_or(f64::NAN)
            ),
            _ => "the table's cycle counts come from older cores; reading the time stamp counter takes longer on some recent ones".into(),
        }),
        Some(Family::Activity) => why.push(match vm {
            Some(h) => format!("the interruptions come from outside this kernel: the hypervisor ({h}) preempts the virtual cpu"),
            None => "interrupts other than the tick (devices, IPIs) or kernel threads ran on the cpu".into(),
        }),
        Some(Family::C2c) => why.push(match vm {
            Some(h) => format!("under a hypervisor ({h}) the two vcpus may run on host cores that share less than the topology the guest sees, and either may be preempted mid hand-over"),
            None => "the line crosses a mesh or ring farther than the table's average L3 latency".into(),
        }),
        Some(Family::Memory) | Some(Family::Bandwidth) | Some(Family::Numa) | Some(Family::Migration) => {
            if let Some(s) = shrunk {
                why.push(s);
            }
            if !matches!(family, Some(Family::Memory | Family::Migration)) && m.probe != id::BANDWIDTH_SWEEP {
                why.push("the threads share the memory controllers and channels: once those fill, N threads move less than N times one".into());
            }
            if let Some(h) = vm {
                why.push(format!(
                    "under a hypervisor ({h}) the host's other guests share the last-level cache and memory bandwidth, and guest memory may sit on another host node"
                ));
            }
        }
        Some(Family::Syscall) | Some(Family::Switch) | Some(Family::Task) | Some(Family::Faults) => {
            // Configuration that taxes every system call and that no model input counts.
            why.extend(spec.syscall_tax.iter().cloned());
            if excess {
                why.push("the kernel's steps were estimated on an Intel guest (docs/models.md), and this core or kernel runs the path slower".into());
            }
            if !mitigations.starts_with("none") {
                why.push(format!("mitigations at kernel entry: {mitigations}"));
            }
            if let (Some(returns), Some((name, each, _))) =
                (input(m, "kernel_cycles_per_return"), &spec.return_mitigation)
            {
                why.push(format!("{name}'s safe return mispredicts every kernel return, counted as one per {returns:.0} cycles of kernel work at {each:.0} cycles each: a path of more, shorter functions returns more often"));
            }
            let same_cpu = param(&m.params, "placement").as_deref() == Some("same-cpu");
            if let Some(h) = vm {
                why.push(match family {
                    Some(Family::Switch) if same_cpu => format!("under a hypervisor ({h}) the host may preempt the vcpu between the two tasks' turns"),
                    Some(Family::Switch) => format!("under a hypervisor ({h}) an IPI and an idle vcpu's wake-up go through the host's scheduler"),
                    Some(Family::Faults) | Some(Family::Task) => format!("under a hypervisor ({h}) page-table updates and new guest pages cost two-dimensional page walks and host faults"),
                    _ => format!("under a hypervisor ({h}) the host may preempt the vcpu"),
                });
            }
        }
        _ => {}
    }
    if why.is_empty() {
        why.push(match vm {
            Some(h) => format!("the host ({h}) is shared: another guest competes for the core and its caches"),
            None => "the core ran slower than its measured clock suggests (power state), or other work competed".into(),
        });
    }
    why.join("; ")
}

/// A figure of the prediction's inputs.
fn input(m: &Measurement, key: &str) -> Option<f64> {
    m.prediction.as_ref()?.inputs.get(key)?.as_f64()
}

/// How far a kernel path's measurement is above its model in cycles, beside the model's largest
/// estimated step: which estimate would have to grow, and by how much, for the row to fit
/// ("2,900 cycles over the model; its largest estimate, thread_switch, is 1,500 cycles").
fn kernel_excess(m: &Measurement) -> Option<String> {
    // A composed model's gap is its measured parts'; a cost per byte misses by a fraction of a
    // cycle.
    let p = m
        .prediction
        .as_ref()
        .filter(|p| p.kind == oslab_core::ModelKind::Spec)?;
    let ghz = input(m, "core_ghz")?;
    let over = (m.summary.as_ref()?.median - p.value) * ghz;
    let (name, cycles) = p
        .inputs
        .iter()
        .filter(|(k, _)| k.ends_with("_cycles"))
        .filter(|(k, _)| {
            p.sources
                .get(*k)
                .and_then(|s| s.as_str())
                .is_some_and(|s| s.starts_with("estimate"))
        })
        .filter_map(|(k, v)| Some((k.trim_end_matches("_cycles"), v.as_f64()?)))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    (over >= 10.0).then(|| {
        format!(
            "{} over the model at {ghz:.2} GHz, its largest estimated step {name} at {}",
            cycles_text(over),
            cycles_text(cycles)
        )
    })
}

/// The family a row's gap is explained as: its own, but clock_gettime through the system call
/// is a kernel path, its gap the kernel's.
fn family(m: &Measurement) -> Option<Family> {
    match m.probe.as_str() {
        id::TIMER_CLOCK_GETTIME_SYSCALL => Some(Family::Syscall),
        _ => Family::of(&m.probe),
    }
}

/// Whether a row's reason is a kernel path's ([`reason`]'s system-call branch).
fn kernel_path(m: &Measurement) -> bool {
    matches!(
        family(m),
        Some(Family::Syscall | Family::Switch | Family::Task | Family::Faults)
    )
}

/// Cycles for reading: `3,420 cycles`, `46.7 million cycles` (a positive count).
fn cycles_text(c: f64) -> String {
    if c >= 1e6 {
        return format!("{} million cycles", oslab_core::units::num(c / 1e6));
    }
    let digits = format!("{c:.0}");
    let mut grouped = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(d);
    }
    format!("{grouped} cycles")
}

/// Why `cpuid; rdtsc` under a hypervisor is slower than its model: the exit it took, as the
/// measurement less the instructions' own cycles, against the exit the model assumed.
fn vm_exit(m: &Measurement, hypervisor: &str) -> String {
    let measured = m.summary.as_ref().map(|s| s.median);
    let parts = (|| {
        let ghz = input(m, "core_ghz")?;
        let bare = input(m, "cpuid_cycles")? + input(m, "rdtsc_cycles")?;
        let assumed = input(m, "vm_exit_cycles")?;
        let exit_ns = measured? - bare / ghz;
        (exit_ns > 0.0).then_some((exit_ns, exit_ns * ghz, assumed))
    })();
    match parts {
        Some((ns, cycles, assumed)) => format!(
            "cpuid exits to the hypervisor ({hypervisor}): the exit and re-entry took about {} here ({cycles:.0} cycles: the measurement less cpuid's and rdtsc's own), against the {assumed:.0} cycles of a recent host's exit the model assumes; this host handles the exit slowly (nested virtualization, or an exit its user-space monitor serves)",
            oslab_core::units::value(ns, oslab_core::model::Unit::Ns)
        ),
        None => format!("cpuid exits to the hypervisor ({hypervisor}), and an exit costs more on this host than the estimate"),
    }
}

/// Why a cold system call misses its model: the lines and page walks it fetches, and how many
/// of them overlap, are estimates. None for other rows.
fn serial_misses(m: &Measurement) -> Option<String> {
    if Family::of(&m.probe) != Some(Family::Syscall)
        || param(&m.params, "cache").as_deref() != Some("cold")
    {
        return None;
    }
    let lines = input(m, "lines")?;
    let walks = input(m, "page_walks")?;
    let refs = input(m, "walk_references")?;
    let refill = input(m, "refill_ns")?;
    let fills = input(m, "fill_buffers")?;
    let walkers = input(m, "page_walkers")?;
    Some(format!(
        "the model fetches the call's {lines:.0} lines across {fills:.0} fill buffers and walks for {walks:.0} pages, {walkers:.0} at a time, each walk's {refs:.0} references one after another ({} ns each): the paging-structure caches answer some of those references, and where the eviction left the page tables decides how many",
        oslab_core::units::num(refill)
    ))
}

/// Under a hypervisor that names no product (no model number: "Intel(R) Xeon(R) Processor"),
/// cpuid's family and model may be a cpu model it presents, not the host's core: the table's
/// figures may then be another core's (model 167, a client core, on a server host whose L3
/// answers in 33 ns against the client table's 12). Where the name says a server, the spec took
/// that generation's server core, and the gap says so.
fn presented_core(spec: &Spec) -> Option<String> {
    if let Some(why) = &spec.presented {
        return Some(format!(
            "{why}, a guess: the host's core may be another generation"
        ));
    }
    let h = spec.hypervisor.as_deref()?;
    let name = spec.cpu_model.as_deref()?;
    if name.chars().any(|c| c.is_ascii_digit()) {
        return None;
    }
    let u = spec.uarch().ok()?;
    Some(format!(
        "the hypervisor ({h}) names no product (\"{}\"): the family and model cpuid gives, which chose the table's {}, may be a cpu model it presents rather than the host's core",
        oslab_core::text::one_line(name),
        u.name
    ))
}

/// A chase over a working set at most twice a cache it overflows, measured faster than the
/// level the model places it in: that cache's replacement (adaptive, not strict LRU) keeps part
/// of the chase's lines, which the model, placing the set whole one level out, does not count.
fn just_past_a_cache(spec: &Spec, m: &Measurement) -> Option<String> {
    if m.probe != id::MEMORY_LATENCY_CHUNK && m.probe != id::MEMORY_LATENCY_RANDOM {
        return None;
    }
    let size = number(&m.params, "size")?;
    let below = spec
        .caches
        .iter()
        .rev()
        .find(|c| c.holds() < size && size <= 2.0 * c.holds())?;
    Some(format!(
        "the working set is within twice the L{} ({}): its replacement keeps part of the chase's lines there, which the model, placing the set whole one level out, does not count",
        below.level,
        oslab_core::units::bytes(below.holds() as u64)
    ))
}

/// When the working set fits the claimed cache but not the effective one this run measured.
fn shrunk_cache(spec: &Spec, run: &Run, m: &Measurement) -> Option<String> {
    let size = number(&m.params, "size")?;
    let claimed = spec.caches.iter().find(|c| size <= c.size as f64)?;
    let measured = crate::hierarchy::plateau(run, claimed.level)?;
    (measured < size).then(|| {
        format!(
            "the effective L{} is smaller than the {} sysfs claims: its plateau ends at {}, below this working set",
            claimed.level,
            oslab_core::units::bytes(claimed.size),
            oslab_core::units::bytes(measured as u64)
        )
    })
}
