//! Memory latency: the level that holds a working set, its load-to-use cycles from the core's
//! table at the measured clock, DRAM from the platform's typical idle latency, and the TLB's
//! share for orders that leave its reach.

use crate::answer::NoModel;
use crate::answer::{Figure, Model, Outcome, Source};
use crate::run::{number, param, Run};
use crate::spec::Spec;
use oslab_core::catalog::{id, metric};
use oslab_core::model::Measurement;
use oslab_core::units::bytes;

const LINE: f64 = 64.0;
const PAGE: f64 = 4096.0;

/// Latency of cache level `level` (1-based) at the measured clock.
pub(crate) fn level_latency(spec: &Spec, level: usize) -> Result<Figure, NoModel> {
    let u = spec.uarch()?;
    let ghz = spec.ghz()?;
    let cycles = *u
        .latency
        .get(level.wrapping_sub(1))
        .filter(|&&c| c > 0.0)
        .ok_or_else(|| format!("no published L{level} latency for {}", u.name))?;
    Ok(Figure::new(
        cycles / ghz.value,
        format!(
            "table: L{level} {cycles} cycles ({}) at {:.2} GHz (core clock {})",
            u.name,
            ghz.value,
            ghz.source.text.trim_start_matches("measured: ")
        ),
    ))
}

/// Idle DRAM latency: the figure typical of the core's platforms.
pub(crate) fn dram_latency(spec: &Spec) -> Result<Figure, NoModel> {
    let u = spec.uarch()?;
    Ok(Figure::new(
        u.dram_ns,
        format!(
            "table: typical idle DRAM latency of {} platforms, {} ns",
            u.name, u.dram_ns
        ),
    ))
}

/// The level a working set of `size` bytes lives in: its name and latency.
pub(crate) fn level_of(spec: &Spec, size: f64) -> Result<(String, Figure), NoModel> {
    match spec.caches.iter().position(|c| size <= c.holds()) {
        Some(i) => Ok((
            format!("L{}", spec.caches[i].level),
            level_latency(spec, spec.caches[i].level as usize)?,
        )),
        None => Ok(("memory".into(), dram_latency(spec)?)),
    }
}

/// The spec with the last cache level at the size this run found it serving, in a guest whose
/// chunked chase (`memory.latency.chunk`, the plateau's end) found less than sysfs claims: a
/// hypervisor gives the guest the host's cache in sysfs, of which the guest gets a share (other
/// tenants, cache allocation) that no specification gives.
pub(crate) fn served(spec: &Spec, run: &Run) -> Spec {
    let mut spec = spec.clone();
    if spec.hypervisor.is_none() {
        return spec;
    }
    let Some(last) = spec.caches.last_mut() else {
        return spec;
    };
    if let Some(plateau) = plateau(run, last.level).filter(|&p| p < last.size as f64) {
        last.served = Some(Figure::new(
            plateau,
            Source::run(format!(
                "{} {} level=L{}, the plateau's end ({} where sysfs claims {}: a guest's share of the host's cache)",
                id::MEMORY_LATENCY_CHUNK,
                metric::LEVEL_SIZE,
                last.level,
                bytes(plateau as u64),
                bytes(last.size)
            )),
        ));
    }
    spec
}

/// Where this run's chunked chase found cache level `level`'s plateau end (its `level_size`),
/// the median over the run's repetitions; None where it found none.
pub(crate) fn plateau(run: &Run, level: u8) -> Option<f64> {
    let name = format!("L{level}");
    let mut found: Vec<f64> = run
        .all(id::MEMORY_LATENCY_CHUNK, metric::LEVEL_SIZE, |p| {
            param(p, "level").as_deref() == Some(name.as_str())
        })
        .filter_map(|m| m.summary.as_ref().map(|s| s.median))
        .filter(|&v| v > 0.0)
        .collect();
    found.sort_by(f64::total_cmp);
    found.get(found.len() / 2).copied()
}

/// What each load of a chain the prefetchers follow waits for, over a working set of
/// `footprint` bytes: the L1's latency where the set fits the L1, or where the L1's prefetchers
/// run ahead of the chain; else ([`crate::uarch::Uarch::l1_prefetch_runs_ahead`]) the L2's,
/// which its streamer keeps ahead.
pub(crate) fn chain_floor(spec: &Spec, footprint: f64) -> Result<(&'static str, Figure), NoModel> {
    let fits_l1 = spec
        .caches
        .first()
        .is_some_and(|c| c.level == 1 && footprint <= c.holds());
    match fits_l1 || spec.uarch()?.l1_prefetch_runs_ahead() {
        true => Ok(("L1", level_latency(spec, 1)?)),
        false => Ok(("L2", level_latency(spec, 2)?)),
    }
}

/// Bytes per ns the core reads from the level a working set of `size` lives in (for the
/// sequential chase and the bandwidth kernels): L1 loads, L2 and L3 fills at the table's bytes
/// per cycle, memory by Little's law over the fill buffers.
pub(crate) fn level_read_rate(spec: &Spec, size: f64) -> Result<Figure, NoModel> {
    let u = spec.uarch()?;
    let ghz = spec.ghz()?.value;
    let (name, _) = level_of(spec, size)?;
    let bpc = match name.as_str() {
        "L1" => u.bytes_per_cycle[0],
        "L2" => u.bytes_per_cycle[2],
        "memory" => {
            let lat = dram_latency(spec)?;
            let rate = u.fill_buffers as f64 * LINE / lat.value;
            return Ok(Figure::new(
                rate,
                format!(
                    "Little's law: {} fill buffers x 64 B / {} ns (table: {})",
                    u.fill_buffers, lat.value, u.name
                ),
            ));
        }
        _ => u.bytes_per_cycle[3],
    };
    Ok(Figure::new(
        bpc * ghz,
        format!("table: {name} {bpc} B/cycle ({}) at {ghz:.2} GHz", u.name),
    ))
}

/// What a load beyond the TLB's reach adds: an STLB hit past the first level, and a page walk
/// (reading the page-table entry from where the tables live) past the second.
fn tlb_share(spec: &Spec, size: f64, page: f64) -> Result<(f64, String), NoModel> {
    let u = spec.uarch()?;
    let ghz = spec.ghz()?.value;
    let pages = size / page;
    let mut ns = 0.0;
    let mut what = Vec::new();
    if pages > u.tlb[0] as f64 {
        ns += u.stlb_hit_cycles / ghz;
        what.push(format!(
            "{} cycles STLB hit ({} pages > {} entries)",
            u.stlb_hit_cycles, pages, u.tlb[0]
        ));
    }
    if pages > u.tlb[1] as f64 {
        let (level, walk) = level_of(spec, pages * 8.0)?;
        ns += walk.value;
        what.push(format!(
            "a page walk reading the {level}-resident page tables ({:.1} ns)",
            walk.value
        ));
    }
    Ok((ns, what.join(" + ")))
}

pub(crate) fn model(spec: &Spec, run: &Run, m: &Measurement) -> Outcome {
    let size = number(&m.params, "size");
    match (m.probe.as_str(), m.metric.as_str()) {
        (_, "level_size") => {
            let level = param(&m.params, "level").unwrap_or_default();
            let n: u8 = level
                .trim_start_matches('L')
                .parse()
                .map_err(|_| "the plateau matches no cache level sysfs reports".to_string())?;
            let c = spec
                .caches
                .iter()
                .find(|c| c.level == n)
                .ok_or_else(|| format!("sysfs reports no L{n} cache"))?;
            Ok(Model::spec(
                "cache size",
                c.size as f64,
                format!("the L{n} size sysfs reports, {}", bytes(c.size)),
            )
            .input(
                "claimed_bytes",
                c.size,
                "kernel: /sys/devices/system/cpu/cpu*/cache",
            ))
        }
        (_, "level_latency") => {
            let level = param(&m.params, "level").unwrap_or_default();
            let f = match level.as_str() {
                "memory" => dram_latency(spec)?,
                l => level_latency(
                    spec,
                    l.trim_start_matches('L').parse().map_err(|_| {
                        "the plateau matches no cache level sysfs reports".to_string()
                    })?,
                )?,
            };
            Ok(
                Model::spec("cache level latency", f.value, format!("{:.2} ns", f.value))
                    .figure("latency_ns", &f),
            )
        }
        (_, "tlb_reach") => {
            let u = spec.uarch()?;
            let reach = u.tlb[0] as f64 * PAGE;
            Ok(Model::spec(
                "first-level TLB reach",
                reach,
                format!("{} entries x 4 KiB", u.tlb[0]),
            )
            .input("dtlb_entries", u.tlb[0], format!("table: {}", u.name)))
        }
        (_, "parallelism") => {
            let u = spec.uarch()?;
            let k = number(&m.params, "chases").unwrap_or(1.0);
            let mlp = k.min(u.fill_buffers as f64);
            Ok(Model::spec(
                "misses in flight",
                mlp,
                format!("min({k} chases, {} fill buffers)", u.fill_buffers),
            )
            .input("fill_buffers", u.fill_buffers, format!("table: {}", u.name)))
        }
        (id::MEMORY_LATENCY_PARALLEL, metric::PER_LOAD) => {
            let u = spec.uarch()?;
            let size = size.ok_or("no size")?;
            let k = number(&m.params, "chases").unwrap_or(1.0);
            let (level, lat) = level_of(spec, size)?;
            let mlp = k.min(u.fill_buffers as f64);
            Ok(Model::spec(
                "overlapped misses",
                lat.value / mlp,
                format!(
                    "{level} {:.1} ns / min({k} chases, {} fill buffers)",
                    lat.value, u.fill_buffers
                ),
            )
            .figure("latency_ns", &lat)
            .input("fill_buffers", u.fill_buffers, format!("table: {}", u.name)))
        }
        (id::MEMORY_LATENCY_STRIDE, metric::PER_LOAD) => stride(spec, m),
        (id::MEMORY_LATENCY_LOADED, metric::PER_LOAD) => loaded(spec, run, m),
        (_, "per_load") => {
            let size = size.ok_or("no size parameter")?;
            let order = param(&m.params, "order").unwrap_or_default();
            let (level, lat) = level_of(spec, size)?;
            let model = Model::spec(
                "load-to-use latency",
                lat.value,
                format!("{level} {:.2} ns", lat.value),
            )
            .input("size", size, "parameter")
            .figure("latency_ns", &lat);
            match order.as_str() {
                "sequential" => {
                    let (floor_level, floor) = chain_floor(spec, size)?;
                    let rate = level_read_rate(spec, size)?;
                    let per_line = LINE / rate.value;
                    let mut model = model
                        .figure("floor_ns", &floor)
                        .figure("read_rate_gbps", &rate);
                    model.name = "prefetched load";
                    model.value = floor.value.max(per_line);
                    model.formula = format!("max({floor_level} {:.2} ns, 64 B / {:.1} GB/s from {level}): the prefetchers run ahead of the chain", floor.value, rate.value);
                    Ok(model)
                }
                "random" => {
                    let page = match param(&m.params, "asked").as_deref() {
                        Some("4k") | None => PAGE,
                        Some("1g") => (1u64 << 30) as f64,
                        Some(_) => (2u64 << 20) as f64,
                    };
                    let (tlb, what) = tlb_share(spec, size, page)?;
                    let mut model = model.input("page_bytes", page, "parameter");
                    if tlb > 0.0 {
                        model.value += tlb;
                        model.formula = format!("{} + {what}", model.formula);
                    }
                    Ok(model)
                }
                _ => Ok(model),
            }
        }
        _ => Err(crate::answer::unmodelled(m)),
    }
}

/// The lmbench table: loads `stride` apart in address order over `size`, as the hardware
/// serves them.
/// - Below a page the prefetchers follow the stride: a load that starts a line costs the time
///   that level streams its bytes, `min(stride, 128)` of them (the adjacent-line prefetcher
///   completes 128-byte pairs), never less than an L1 hit; loads within a line hit L1.
/// - From a page on they cannot (they stop at page boundaries): every load is a miss to the
///   level that holds its lines, plus the TLB's share for `size / stride` pages.
/// - Lines `stride` apart share their low address bits, so they compete for a fraction of a
///   cache's sets: `size / stride` lines fit a cache of `C` when `size` does for strides up to a
///   page, and when `size x 4 KiB / stride` does beyond it (the bits above the page offset
///   come from the physical frames, spread over every set).
fn stride(spec: &Spec, m: &Measurement) -> Outcome {
    let size = number(&m.params, "size").ok_or("no size parameter")?;
    let stride = number(&m.params, "stride").ok_or("no stride parameter")?;
    let footprint = size * (PAGE / stride).min(1.0);
    let l1 = level_latency(spec, 1)?;
    let model = |value: f64, formula: String| {
        Model::spec("strided load", value, formula).input(
            "footprint_bytes",
            footprint,
            "parameter: size x min(1, 4 KiB / stride), the bytes whose sets the lines compete for",
        )
    };
    if stride < PAGE {
        let rate = level_read_rate(spec, footprint)?;
        let (level, _) = level_of(spec, footprint)?;
        let (floor_level, floor) = chain_floor(spec, footprint)?;
        let starts = (stride / LINE).min(1.0);
        let fetched = stride.clamp(LINE, 2.0 * LINE);
        let per_line = floor.value.max(fetched / rate.value);
        let value = starts * per_line + (1.0 - starts) * l1.value;
        return Ok(model(
            value,
            format!(
                "{starts:.3} x max({floor_level} {:.2} ns, {fetched:.0} B / {:.1} GB/s from {level}) + {:.3} x L1: the prefetchers follow the stride",
                floor.value,
                rate.value,
                1.0 - starts
            ),
        )
        .figure("read_rate_gbps", &rate)
        .figure("floor_ns", &floor)
        .figure("l1_ns", &l1));
    }
    let (level, lat) = level_of(spec, footprint)?;
    let mut value = lat.value;
    let mut formula = format!("{level} {:.2} ns (no prefetching across pages)", lat.value);
    let (tlb, what) = tlb_share(spec, size / stride * PAGE, PAGE)?;
    if tlb > 0.0 {
        value += tlb;
        formula.push_str(&format!(" + {what}"));
    }
    Ok(model(value, formula).figure("latency_ns", &lat))
}

/// A cache line handed from one core to another: the reader's miss goes to the level the two
/// cores share and a snoop brings the line from the writer's cache, about twice that level's
/// latency; cores that share no cache pay a memory access's worth.
pub(crate) fn core_to_core(spec: &Spec, m: &Measurement) -> Outcome {
    let class = param(&m.params, "class").unwrap_or_default();
    let (level, lat) = match class.as_str() {
        "SMT sibling" => ("L1".to_string(), level_latency(spec, 1)?),
        "shared L2" => ("L2".to_string(), level_latency(spec, 2)?),
        "shared L3" => ("L3".to_string(), level_latency(spec, 3)?),
        "same cpu" => return Err("a cpu with itself hands nothing over".into()),
        _ => ("memory".to_string(), dram_latency(spec)?),
    };
    let (factor, why) = if level == "memory" {
        (
            1.0,
            "no shared cache: a cross-package snoop costs about a memory access",
        )
    } else {
        (
            2.0,
            "a miss to the shared level, then a snoop to the writer's cache",
        )
    };
    Ok(Model::spec(
        "cache-line hand-over",
        factor * lat.value,
        format!("{factor} x {level} {:.1} ns ({why})", lat.value),
    )
    .input("class", class, "kernel: topology of the two cpus (sysfs)")
    .figure("latency_ns", &lat))
}

/// Latency under load: the idle DRAM latency, stretched as a queue's by the share of the
/// memory's peak the loaders use (1 / (1 - utilisation), capped at 95%); without the peak, the
/// idle latency alone, and the formula says so.
fn loaded(spec: &Spec, run: &Run, m: &Measurement) -> Outcome {
    let idle = dram_latency(spec)?;
    let model = Model::spec(
        "idle DRAM latency",
        idle.value,
        format!("{:.1} ns", idle.value),
    )
    .figure("dram_latency_ns", &idle);
    if param(&m.params, "pause").as_deref() == Some("idle") {
        return Ok(model);
    }
    let bw = run.median(m, &m.probe, "load_bandwidth", |p| p == &m.params)?;
    let Ok(memory) = &spec.memory else {
        return Ok(Model {
            formula: format!("{:.1} ns idle; queueing under {:.1} GB/s of load not modelled: the memory's peak is unknown (oslab run --memory TYPE-RATExCHANNELS)", idle.value, bw.value),
            ..model
        });
    };
    let peak = memory.peak_gbps();
    let u = (bw.value / peak).min(0.95);
    Ok(Model {
        name: "queue at the memory",
        value: idle.value / (1.0 - u),
        formula: format!(
            "{:.1} ns / (1 - {:.1} GB/s / {peak:.1} GB/s peak)",
            idle.value, bw.value
        ),
        ..model
    }
    .input("load_gbps", crate::answer::round(bw.value), bw.source)
    .input(
        "peak_gbps",
        crate::answer::round(peak),
        memory.source.clone(),
    ))
}
