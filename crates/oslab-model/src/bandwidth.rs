//! Bandwidth: the level the arrays live in and the bytes it moves per cycle. From memory no
//! specification gives one core's rate (its prefetchers' lines in flight): one thread has no
//! model, and N threads are checked against N x this run's one thread, up to the memory's peak.
//! Plain stores read each line before writing it (write-allocate), so they move twice the bytes
//! STREAM counts.

use crate::answer::Source;
use crate::answer::{Model, Outcome};
use crate::hierarchy::{dram_latency, level_of};
use crate::run::{number, param, Run};
use crate::spec::Spec;
use crate::uarch::Uarch;
use oslab_core::catalog::id;
use oslab_core::model::Measurement;

/// Bytes of a cache line.
const LINE: f64 = 64.0;

/// Loads and stores per element of a kernel (a read:write mix touches each element once).
fn streams(kernel: &str, ratio: Option<String>) -> Option<(f64, f64)> {
    if kernel == "mix" {
        let (r, w) = ratio?
            .split_once(':')
            .and_then(|(r, w)| Some((r.parse::<f64>().ok()?, w.parse::<f64>().ok()?)))?;
        return (r + w > 0.0).then(|| (r / (r + w), w / (r + w)));
    }
    Some(match kernel {
        "read" => (1.0, 0.0),
        "write" => (0.0, 1.0),
        "copy" | "scale" => (1.0, 1.0),
        "add" | "triad" => (2.0, 1.0),
        _ => return None,
    })
}

/// Micro-op slots at rename per 32-byte vector of each stream, as oslab's kernels are written
/// (crates/oslab-probes/src/kernels.rs): `read` adds its loads into accumulators, `scale` and
/// `triad` fold theirs into the multiply and add, `add` loads one stream plainly and folds the
/// other, `copy` loads plainly; a store is one; the loop's add and fused compare-and-branch
/// come once per four vectors. A folded load takes `folded` slots.
fn rename_slots(kernel: &str, (loads, stores): (f64, f64), folded: f64) -> f64 {
    let folded_loads = match kernel {
        "copy" => 0.0,
        "add" => 1.0,
        _ => loads,
    };
    folded_loads * folded + (loads - folded_loads) + stores + 0.5
}

/// Why one thread's bandwidth from memory has no model.
const NO_SINGLE_MODEL: &str = "one core's rate from memory is how many lines its L2 prefetchers keep in flight, which no specification gives (Little's law over the L1's fill buffers, or over the misses in flight the parallel chase measures, predicted 3 to 22 times too little on every machine seen); the rows with more threads are checked against this one";

/// This run's one-thread rate from memory of the kernel `m` measures (same metric, stores and
/// read:write mix): its own probe's first, then the other bandwidth probes'.
fn one_thread<'a>(run: &'a Run, m: &'a Measurement) -> Option<&'a Measurement> {
    let want: Vec<(&str, String)> = ["kernel", "stores", "read_write"]
        .into_iter()
        .filter_map(|k| Some((k, param(&m.params, k)?)))
        .collect();
    [
        m.probe.as_str(),
        id::BANDWIDTH_STREAM,
        id::BANDWIDTH_THREADS,
        id::BANDWIDTH_MIX,
    ]
    .into_iter()
    .find_map(|probe| {
        let want = want.clone();
        run.all(probe, &m.metric, move |p| {
            number(p, "threads") == Some(1.0)
                && want
                    .iter()
                    .all(|(k, v)| param(p, k).as_deref() == Some(v.as_str()))
        })
        .next()
    })
}

pub(crate) fn model(spec: &Spec, run: &Run, m: &Measurement) -> Outcome {
    if m.metric == "latency" {
        // The NUMA matrix's latency: idle DRAM latency scaled by the SLIT distance.
        let lat = dram_latency(spec)?;
        let d = number(&m.params, "distance").unwrap_or(10.0);
        return Ok(Model::spec(
            "remote latency",
            lat.value * d / 10.0,
            format!("{:.1} ns x distance {d} / 10", lat.value),
        )
        .figure("dram_latency_ns", &lat)
        .input(
            "distance",
            d,
            "kernel: SLIT distance (/sys/devices/system/node/node*/distance)",
        ));
    }
    let kernel = param(&m.params, "kernel").unwrap_or_default();
    if kernel == "average" {
        return average(spec, run, m);
    }
    let (loads, stores) = streams(&kernel, param(&m.params, "read_write"))
        .ok_or_else(|| format!("no model for the {kernel} kernel"))?;
    let nontemporal = param(&m.params, "stores").as_deref() == Some("nontemporal");
    let counted = loads + stores;
    // Bytes the memory system moves per element counted: a plain store's line is read first.
    let moved = loads + stores * if nontemporal { 1.0 } else { 2.0 };
    let hardware = m.metric == "hw_bandwidth";
    let share = if hardware { 1.0 } else { counted / moved };
    let threads = number(&m.params, "threads").unwrap_or(1.0);
    let size =
        number(&m.params, "size").or_else(|| number(&m.params, "array_bytes").map(|a| a * 3.0));
    let ghz = spec.ghz()?;
    let u = spec.uarch()?;
    let level = match size {
        Some(s) if !nontemporal => level_of(spec, s)?.0,
        _ => "memory".to_string(),
    };
    // The core's own bound, counted bytes per cycle: load and store ports per 32-byte vector,
    // and for `read` its four accumulators, each waiting a floating-point add per vector.
    let chain = if kernel == "read" {
        u.fadd_cycles / 4.0
    } else {
        0.0
    };
    let slots = rename_slots(&kernel, (loads, stores), u.folded_load_slots());
    let core_cycles = (loads * 32.0 / u.bytes_per_cycle[0])
        .max(stores * 32.0 / u.bytes_per_cycle[1])
        .max(chain)
        .max(slots / u.rename_width);
    let core_bpc = counted * 32.0 / core_cycles;
    let core = Model::spec("core ports", threads * core_bpc * ghz.value, format!("{threads} x {counted} x 32 B / max({loads} x 32 B / {} B loads, {stores} x 32 B / {} B stores, {chain} cycles of add chain, {slots} micro-ops / {} renamed) per cycle x {:.2} GHz", u.bytes_per_cycle[0], u.bytes_per_cycle[1], u.rename_width, ghz.value))
        .input("load_bytes_per_cycle", u.bytes_per_cycle[0], format!("table: {}", u.name))
        .input("store_bytes_per_cycle", u.bytes_per_cycle[1], format!("table: {}", u.name))
        .input("fadd_cycles", u.fadd_cycles, format!("table: {}", u.name))
        .input("rename_width", u.rename_width, format!("table: {}", u.name))
        .input("folded_load_slots", u.folded_load_slots(), format!("table: {} (an indexed AVX load-op at rename)", u.name))
        .figure("core_ghz", ghz);
    if level == "L1" {
        return Ok(core);
    }
    if level != "memory" {
        let mut model = from_cache(u, ghz.value, &level, (loads, stores), hardware, core_cycles);
        if threads > 1.0 {
            model = model.scaled(threads, &format!("x {threads} threads, a core each"));
        }
        return Ok(model.figure("core_ghz", ghz));
    }
    if threads <= 1.0 {
        return Err(NO_SINGLE_MODEL.into());
    }
    let one = one_thread(run, m)
        .and_then(|o| Some((o.summary.as_ref()?.median, o.probe.clone(), o.params_text())))
        .ok_or_else(|| {
            format!("composed from this run's one-thread rate of the {kernel} kernel, which it does not have (run bandwidth.stream)")
        })?;
    let wanted = threads * one.0;
    let mut model = Model::composed(
        "threads x one thread",
        wanted,
        format!("{threads} x {:.2} GB/s (one thread, this run)", one.0),
    )
    .input(
        "one_thread_gbps",
        crate::answer::round(one.0),
        Source::run(format!("{} {}", one.1, one.2)),
    );
    match &spec.memory {
        // Beyond what the memory can deliver, the memory's peak predicts it (a spec figure).
        Ok(mem) if mem.peak_gbps() * share < wanted => {
            model = Model::spec(
                "memory peak",
                mem.peak_gbps() * share,
                if hardware {
                    format!("peak {} (bytes the bus moves)", mem.describe())
                } else {
                    format!(
                        "peak {} x {counted}/{moved} (write-allocate: a plain store reads its line first)",
                        mem.describe()
                    )
                },
            )
            .input("peak_gbps", crate::answer::round(mem.peak_gbps()), mem.source.clone());
        }
        Ok(mem) => {
            model = model.input(
                "peak_gbps",
                crate::answer::round(mem.peak_gbps()),
                mem.source.clone(),
            )
        }
        Err(why) => model = model.input("peak_gbps", "unknown", why.to_string()),
    }
    if m.probe == id::NUMA_MATRIX {
        let d = number(&m.params, "distance").unwrap_or(10.0);
        model.value *= 10.0 / d;
        model.formula = format!("({}) x 10 / distance {d}", model.formula);
        model = model.input("distance", d, "kernel: SLIT distance");
    }
    Ok(model)
}

/// One line of each stream from the L2 or L3, in cycles: the level's fills (a plain store's line
/// comes in and, dirty, goes back: two lines), the core's accesses (`core_cycles` per 32-byte
/// vector of each stream), and where the L1 takes a cycle per line in and out
/// ([`crate::uarch::Uarch::l1_fill_takes_a_cycle`]) those cycles beside the accesses, whichever
/// binds; one core's rate is the counted bytes over them (`hardware`: the bytes moved).
fn from_cache(
    u: &Uarch,
    ghz: f64,
    level: &str,
    (loads, stores): (f64, f64),
    hardware: bool,
    core_cycles: f64,
) -> Model {
    let bpc = if level == "L2" {
        u.bytes_per_cycle[2]
    } else {
        u.bytes_per_cycle[3]
    };
    let moved = loads + 2.0 * stores;
    let fills = moved * LINE / bpc;
    let core = 2.0 * core_cycles;
    let l1 = u.l1_fill_takes_a_cycle().then(|| {
        loads * (1.0 + LINE / u.bytes_per_cycle[0]) + stores * (2.0 + LINE / u.bytes_per_cycle[1])
    });
    let cycles = fills.max(core).max(l1.unwrap_or(0.0));
    // The bytes the kernel counts, or for the hardware's figure those the caches move.
    let counted = if hardware { moved } else { loads + stores };
    let (name, why) = if cycles == fills {
        ("cache fill rate", format!("{moved} lines x 64 B / {bpc} B a cycle from {level}: a plain store's line comes in and goes back"))
    } else if Some(cycles) == l1 {
        ("L1 fill cycles", format!("L1: {} lines in + {stores} dirty out, a cycle each, + {loads} x 64 B / {} B loads + {stores} x 64 B / {} B stores", loads + stores, u.bytes_per_cycle[0], u.bytes_per_cycle[1]))
    } else {
        (
            "core ports",
            "the core's loads, stores and adds".to_string(),
        )
    };
    let mut model = Model::spec(
        name,
        counted * LINE / cycles * ghz,
        format!("{counted} x 64 B / {cycles:.2} cycles ({why}) x {ghz:.2} GHz"),
    )
    .input(
        "bytes_per_cycle",
        bpc,
        format!("table: {level} ({})", u.name),
    )
    .input(
        "load_bytes_per_cycle",
        u.bytes_per_cycle[0],
        format!("table: {}", u.name),
    )
    .input(
        "store_bytes_per_cycle",
        u.bytes_per_cycle[1],
        format!("table: {}", u.name),
    );
    if l1.is_some() {
        model = model.input("l1_cycles_per_line_in_or_out", 1.0, format!("estimate: the L1 takes a line in or gives a dirty one back in a cycle it serves no access ({}: Intel's sustained L2 bandwidth, about half its peak)", u.name));
    }
    model
}

/// The NUMA matrix's average of the four STREAM kernels: the average of their models.
fn average(spec: &Spec, run: &Run, m: &Measurement) -> Outcome {
    let mut sum = 0.0;
    let mut first = None;
    for k in ["copy", "scale", "add", "triad"] {
        let mut one = m.clone();
        one.params.insert("kernel".into(), k.into());
        let model = model(spec, run, &one)?;
        sum += model.value;
        first.get_or_insert(model);
    }
    let first = first.expect("four kernels");
    Ok(Model {
        value: sum / 4.0,
        formula: format!(
            "average of the copy, scale, add and triad models (copy: {})",
            first.formula
        ),
        ..first
    })
}
