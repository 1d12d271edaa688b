//! Bandwidth: the level the arrays live in and the bytes it moves per cycle; from memory, Little's
//! law (misses in flight x 64 B / latency) per thread up to the memory's peak; plain stores read
//! each line before writing it (write-allocate), so they move twice the bytes STREAM counts.

use crate::hierarchy::{dram_latency, level_of};
use crate::run::{number, param, Run};
use crate::{Figure, Model, Outcome, Spec};
use oslab_core::model::Measurement;

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

/// One thread's rate from memory: misses in flight x 64 B / idle latency. The misses in flight
/// are the parallel chase's measured maximum when this run has it, else the fill buffers.
fn little(spec: &Spec, run: &Run) -> Result<(Figure, Model), String> {
    let u = spec.uarch()?;
    let lat = dram_latency(spec)?;
    let measured = run
        .all("memory.latency.parallel", "parallelism", |_| true)
        .filter_map(|p| Some((p.summary.as_ref()?.median, p.params_text())))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let (mlp, source) = match measured {
        Some((v, params)) => (v, format!("measured in this run: memory.latency.parallel parallelism {params} (the most misses in flight seen)")),
        None => (u.fill_buffers as f64, format!("table: {} fill buffers ({})", u.fill_buffers, u.name)),
    };
    let rate = mlp * LINE / lat.value;
    let model = Model::spec("", 0.0, "")
        .input("misses_in_flight", crate::round(mlp), source)
        .figure("dram_latency_ns", &lat);
    Ok((
        Figure::new(
            rate,
            format!("Little's law: {mlp:.1} misses x 64 B / {} ns", lat.value),
        ),
        model,
    ))
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
    let core_cycles = (loads * 32.0 / u.bytes_per_cycle[0])
        .max(stores * 32.0 / u.bytes_per_cycle[1])
        .max(chain);
    let core_bpc = counted * 32.0 / core_cycles;
    let core = Model::spec("core ports", threads * core_bpc * ghz.value, format!("{threads} x {counted} x 32 B / max({loads} x 32 B / {} B loads, {stores} x 32 B / {} B stores, {chain} cycles of add chain) per cycle x {:.2} GHz", u.bytes_per_cycle[0], u.bytes_per_cycle[1], ghz.value))
        .input("load_bytes_per_cycle", u.bytes_per_cycle[0], format!("table: {}", u.name))
        .input("store_bytes_per_cycle", u.bytes_per_cycle[1], format!("table: {}", u.name))
        .input("fadd_cycles", u.fadd_cycles, format!("table: {}", u.name))
        .figure("core_ghz", ghz);
    if level == "L1" {
        return Ok(core);
    }
    if level != "memory" {
        let bpc = if level == "L2" {
            u.bytes_per_cycle[2]
        } else {
            u.bytes_per_cycle[3]
        };
        if core_bpc <= bpc * share {
            return Ok(core);
        }
        let bw = bpc * ghz.value * share;
        return Ok(Model::spec(
            "cache fill rate",
            bw,
            format!(
                "{bpc} B/cycle from {level} x {:.2} GHz x {counted}/{moved} (write-allocate)",
                ghz.value
            ),
        )
        .input(
            "bytes_per_cycle",
            bpc,
            format!("table: {level} ({})", u.name),
        )
        .figure("core_ghz", ghz));
    }
    let (one, model) = little(spec, run)?;
    let mut rate = threads * one.value;
    let mut formula = format!("{threads} x {}", one.source);
    let model = match &spec.memory {
        Ok(mem) => {
            let peak = mem.peak_gbps();
            if peak < rate {
                rate = peak;
                formula = format!("peak {}", mem.describe());
            }
            model.input("peak_gbps", crate::round(peak), mem.source.clone())
        }
        Err(why) => model.input("peak_gbps", "unknown", why.clone()),
    };
    let mut model = model;
    model.name = if rate < threads * one.value {
        "memory peak"
    } else {
        "Little's law"
    };
    model.value = rate * share;
    model.formula = if hardware {
        format!("{formula} (bytes the bus moves)")
    } else {
        format!(
            "({formula}) x {counted}/{moved} (write-allocate: a plain store reads its line first)"
        )
    };
    if m.probe == "numa.matrix" {
        let d = number(&m.params, "distance").unwrap_or(10.0);
        model.value *= 10.0 / d;
        model.formula = format!("({}) x 10 / distance {d}", model.formula);
        model = model.input("distance", d, "kernel: SLIT distance");
    }
    Ok(model)
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
