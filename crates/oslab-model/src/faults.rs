//! Page faults: the trap (a kernel entry), allocating and mapping the page, and zeroing it at the
//! rate this run measured for plain stores; file faults map page-cache pages (several per fault
//! with fault-around). Per page and per byte follow from the kernel's count of faults.

use crate::cpu::null_syscall;
use crate::run::{number, param, Run};
use crate::{Figure, Model, Outcome, Spec};
use oslab_core::catalog::{id, metric};
use oslab_core::model::Measurement;

/// Allocating a 4 KiB page and installing it: per-cpu free list, memory-cgroup charge, LRU and
/// reverse-map bookkeeping, the page-table entry.
const ALLOC_CYCLES: f64 = 500.0;
/// Allocating a 2 MiB compound page (the huge page's bookkeeping, once per 512 base pages).
const HUGE_ALLOC_CYCLES: f64 = 2000.0;
/// Looking a page up in the page cache and mapping one entry.
const FILE_LOOKUP_CYCLES: f64 = 300.0;
const MAP_CYCLES: f64 = 30.0;

/// The rate at which one core writes with plain stores: this run's measurement from memory when
/// present, else half of Little's law (write-allocate).
fn write_rate(spec: &Spec, run: &Run, m: &Measurement) -> Result<Figure, String> {
    if let Ok(w) = run.median(m, id::BANDWIDTH_STREAM, metric::BANDWIDTH, |p| {
        param(p, "kernel").as_deref() == Some("write")
            && param(p, "stores").as_deref() == Some("plain")
            && number(p, "threads") == Some(1.0)
    }) {
        return Ok(Figure::new(w.value, w.source));
    }
    let u = spec.uarch()?;
    let lat = crate::hierarchy::dram_latency(spec)?;
    let rate = u.fill_buffers as f64 * 64.0 / lat.value / 2.0;
    Ok(Figure::new(
        rate,
        format!(
            "Little's law / 2 (write-allocate): {} fill buffers x 64 B / {} ns ({})",
            u.fill_buffers, lat.value, u.name
        ),
    ))
}

pub(crate) fn model(spec: &Spec, run: &Run, m: &Measurement) -> Outcome {
    let ghz = spec.ghz()?;
    let page = number(&m.params, "page_bytes").unwrap_or(4096.0);
    let cache = param(&m.params, "cache").unwrap_or_default();
    if cache.contains("major") {
        return Err("a major fault waits for the device: its latency and rate are not measured yet (a direct-I/O probe of the temp file's device would supply them)".into());
    }
    let (per_fault, pages_per_fault) = match m.probe.as_str() {
        id::FAULTS_ANON | id::FAULTS_THP | id::FAULTS_POPULATE => {
            let huge = m.probe == id::FAULTS_THP;
            let rate = write_rate(spec, run, m)?;
            let alloc = if huge {
                HUGE_ALLOC_CYCLES
            } else {
                ALLOC_CYCLES
            };
            let populate = m.probe == id::FAULTS_POPULATE;
            let (model, entry) = if populate {
                (Model::spec("populate", 0.0, ""), 0.0)
            } else {
                null_syscall(spec, Model::spec("anonymous fault", 0.0, ""))
            };
            let zero = page / rate.value;
            let value = (entry + alloc) / ghz.value + zero;
            let trap = if populate {
                String::new()
            } else {
                format!("trap {entry} + ")
            };
            let model = Model {
                value,
                formula: format!("({trap}allocate {alloc}) cycles / {:.2} GHz + zero {page} B at {:.1} GB/s", ghz.value, rate.value),
                ..model
            }
            .input("alloc_cycles", alloc, "estimate: free-list, memory-cgroup, LRU and reverse-map bookkeeping and the page-table entry")
            .figure("write_rate_gbps", &rate)
            .figure("core_ghz", ghz);
            (model, 1.0)
        }
        id::FAULTS_FILE => {
            // Pages mapped per fault: the ratio of the two rows the kernel's fault count divides.
            let per = |metric: &str| {
                run.median(m, &m.probe, metric, |p| p == &m.params)
                    .map(|x| x.value)
            };
            let ratio = per("per_fault")? / per("per_page")?;
            let (model, entry) = null_syscall(spec, Model::spec("file fault", 0.0, ""));
            let cycles = entry + FILE_LOOKUP_CYCLES + ratio * MAP_CYCLES;
            let model = Model {
                value: cycles / ghz.value,
                formula: format!("(trap {entry} + lookup {FILE_LOOKUP_CYCLES} + {ratio:.1} pages x {MAP_CYCLES}) cycles / {:.2} GHz", ghz.value),
                ..model
            }
            .input("lookup_cycles", FILE_LOOKUP_CYCLES, "estimate: the page-cache lookup of a cached page")
            .input("map_cycles", MAP_CYCLES, "estimate: one page-table entry and the page's counts, per page fault-around maps")
            .input("pages_per_fault", crate::round(ratio), "measured in this run: pages touched / faults the kernel counted")
            .figure("core_ghz", ghz);
            (model, ratio)
        }
        _ => return Err(crate::unmodelled(m)),
    };
    match m.metric.as_str() {
        "per_fault" => Ok(per_fault),
        "per_page" => Ok(per_fault.scaled(
            1.0 / pages_per_fault,
            &format!("/ {pages_per_fault:.1} pages per fault"),
        )),
        "per_byte" => Ok(per_fault.scaled(
            1.0 / pages_per_fault / page,
            &format!("/ {pages_per_fault:.1} pages per fault / {page} B"),
        )),
        _ => Err(crate::unmodelled(m)),
    }
}
