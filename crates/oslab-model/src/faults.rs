//! Page faults: the trap (a kernel entry), allocating and mapping the page, and zeroing it at the
//! rate this run measured for plain stores; file faults map page-cache pages (several per fault
//! with fault-around). Per page and per byte follow from the kernel's count of faults.

use crate::answer::NoModel;
use crate::answer::Source;
use crate::answer::{Figure, Model, Outcome};
use crate::cpu::{null_syscall, VM_EXIT_CYCLES, VM_EXIT_SOURCE};
use crate::run::{number, param, Run};
use crate::spec::Spec;
use oslab_core::catalog::{id, metric};
use oslab_core::model::{Measurement, DEVICE, DEVICE_CLASS};

/// Allocating a 4 KiB page and installing it: per-cpu free list, memory-cgroup charge, LRU and
/// reverse-map bookkeeping, the page-table entry.
const ALLOC_CYCLES: f64 = 500.0;
/// Allocating a 2 MiB compound page (the huge page's bookkeeping, once per 512 base pages).
const HUGE_ALLOC_CYCLES: f64 = 2000.0;
/// Looking a page up in the page cache and mapping one entry.
const FILE_LOOKUP_CYCLES: f64 = 300.0;
const MAP_CYCLES: f64 = 30.0;
/// A major fault's kernel work beside the device: a page allocated and added to the page cache,
/// a bio built and submitted through the block layer, the completion interrupt, the waiter
/// woken, the page mapped.
const MAJOR_PATH_CYCLES: f64 = 10000.0;

/// A disk's 4 KiB random read at queue depth 1, µs, by kind: the value and its source.
fn device_read_us(class: &str) -> Option<(f64, &'static str)> {
    Some(match class {
        "nvme" => (80.0, "estimate: datacenter TLC NVMe drives' datasheets give 70-90 µs for a 4 KiB random read at queue depth 1"),
        "ssd" => (100.0, "estimate: a SATA/SAS flash drive, the flash read and the link: about 100 µs"),
        "hdd" => (12500.0, "estimate: a 7,200 rpm disk: about 8.5 ms average seek and 4.2 ms, half a rotation"),
        "virtio" | "xen" => (100.0, "estimate: the host's device, unknown to the guest, taken as a local NVMe drive (80 µs) and the host's I/O path (20 µs); network storage takes 0.5-2 ms"),
        "zram" => (5.0, "estimate: a compressed page in RAM, decompressed (lz4) and copied: a few µs"),
        _ => return None,
    })
}

/// The rate at which one core writes with plain stores: this run's measurement from memory when
/// present, else half of Little's law (write-allocate).
fn write_rate(spec: &Spec, run: &Run, m: &Measurement) -> Result<Figure, NoModel> {
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
        return major(spec, m, page);
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
            .input("pages_per_fault", crate::answer::round(ratio), Source::run("pages touched / faults the kernel counted"))
            .figure("core_ghz", ghz);
            (model, ratio)
        }
        _ => return Err(crate::answer::unmodelled(m)),
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
        _ => Err(crate::answer::unmodelled(m)),
    }
}

/// A major fault without readahead: the fault path and one read of the page from the disk. With
/// readahead the faults wait on a stream whose rate is the disk's sequential throughput, which
/// no specification oslab reads gives.
fn major(spec: &Spec, m: &Measurement, page: f64) -> Outcome {
    if !param(&m.params, "cache")
        .unwrap_or_default()
        .contains("no readahead")
    {
        return Err("with readahead the faults wait on a stream read at the disk's sequential rate, which no specification oslab reads gives (a virtio disk hides the host's; an NVMe link bounds it only from above)".into());
    }
    let ghz = spec.ghz()?;
    let class = m
        .context
        .get(DEVICE_CLASS)
        .and_then(|v| v.as_str())
        .unwrap_or("");
    let device = m
        .context
        .get(DEVICE)
        .and_then(|v| v.as_str())
        .unwrap_or("?");
    let (read_us, source) = device_read_us(class).ok_or_else(|| {
        format!("the disk's kind is unknown (device {device}, kind '{class}'): no read latency to predict from")
    })?;
    let (model, entry) = null_syscall(spec, Model::spec("major fault", 0.0, ""));
    let mut cycles = entry + MAJOR_PATH_CYCLES;
    let mut formula = format!("(trap {entry} + path {MAJOR_PATH_CYCLES}");
    let mut model = model
        .input("path_cycles", MAJOR_PATH_CYCLES, "estimate: the page allocated and added to the page cache, a bio submitted through the block layer, the completion interrupt, the waiter woken, the page mapped")
        .input("device", format!("{device} ({class})"), "kernel: /sys/dev/block, the disk holding the temp dir")
        .input("device_read_us", read_us, source);
    if let (Some(h), "virtio" | "xen") = (&spec.hypervisor, class) {
        cycles += 2.0 * VM_EXIT_CYCLES;
        formula.push_str(&format!(" + 2 x {VM_EXIT_CYCLES} VM exits"));
        model = model.input(
            "vm_exit_cycles",
            VM_EXIT_CYCLES,
            format!(
                "{VM_EXIT_SOURCE}; the request's notification and its completion interrupt ({h})"
            ),
        );
    }
    let per_fault = Model {
        value: cycles / ghz.value + read_us * 1e3,
        formula: format!(
            "{formula}) cycles / {:.2} GHz + read {read_us} µs",
            ghz.value
        ),
        ..model.figure("core_ghz", ghz)
    };
    match m.metric.as_str() {
        "per_fault" | "per_page" => Ok(per_fault),
        "per_byte" => Ok(per_fault.scaled(1.0 / page, &format!("/ {page} B"))),
        _ => Err(crate::answer::unmodelled(m)),
    }
}
