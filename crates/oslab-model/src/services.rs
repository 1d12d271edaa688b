//! The services programs call, composed from the run's own simpler figures (consistency
//! checks): a pipe's round trip from the pipe switch probe's mechanism, and a cached file's read
//! bandwidth from a system call and a copy; and the file cache's capacity from what the kernel
//! said was free for it when the probe began (a cross-check).

use crate::answer::Source;
use crate::answer::{Figure, Model, NoModel, Outcome};
use crate::run::{measured, param, Run};
use oslab_core::catalog::{id, metric};
use oslab_core::model::Measurement;

pub(crate) fn model(run: &Run, m: &Measurement) -> Outcome {
    match (m.probe.as_str(), m.metric.as_str()) {
        (id::IPC_PIPE, metric::ROUND_TRIP) => pipe_round_trip(run, m),
        (id::FS_CACHED_READ, metric::BANDWIDTH) => cached_read(run, m),
        (id::FS_CACHE_SIZE, metric::CAPACITY) => cache_capacity(m),
        _ => Err(crate::answer::unmodelled(m)),
    }
}

/// A 1-byte round trip over two pipes to a thread is the pipe switch probe's round trip: on one
/// cpu two switches and two transfers (a write and a read each), across cpus two wake-ups
/// (each its transfer included).
fn pipe_round_trip(run: &Run, m: &Measurement) -> Outcome {
    let placement = param(&m.params, "placement").unwrap_or_default();
    let same = |p: &serde_json::Map<String, serde_json::Value>| {
        param(p, "placement").as_deref() == Some(placement.as_str())
    };
    let pipe = id::SWITCH_THREAD_PIPE;
    if placement == "same-cpu" {
        let switch = measured(run, m, pipe, metric::SWITCH, same)?;
        let transfer = measured(run, m, pipe, metric::TRANSFER, same)?;
        Ok(Model::composed(
            "two switches, two transfers",
            2.0 * (switch.value + transfer.value),
            format!(
                "2 x ({:.0} ns switch + {:.0} ns transfer)",
                switch.value, transfer.value
            ),
        )
        .figure("switch_ns", &switch)
        .figure("transfer_ns", &transfer))
    } else {
        let wakeup = measured(run, m, pipe, metric::WAKEUP, same)?;
        Ok(Model::composed(
            "two wake-ups",
            2.0 * wakeup.value,
            format!("2 x {:.0} ns wake-up (its transfer included)", wakeup.value),
        )
        .figure("wakeup_ns", &wakeup))
    }
}

/// A block read from the page cache is a system call and a copy of the block; through a
/// mapping, the copy alone. The copy runs at the single-thread copy bandwidth the sweep measured
/// at the working set nearest the file's (the sweep counts a copied byte twice, read and
/// written: a copy moves its bytes at half its figure).
fn cached_read(run: &Run, m: &Measurement) -> Outcome {
    let block = crate::run::number(&m.params, "block_bytes")
        .ok_or_else(|| NoModel("no block size".into()))?;
    let file = crate::run::number(&m.params, "file_mib").unwrap_or(64.0) * 1048576.0;
    let copies: Vec<(f64, &Measurement)> = run
        .all(id::BANDWIDTH_SWEEP, metric::BANDWIDTH, |p| {
            param(p, "kernel").as_deref() == Some("copy")
                && param(p, "stores").as_deref() != Some("nontemporal")
        })
        .filter_map(|c| Some((crate::run::number(&c.params, "size")?, c)))
        .collect();
    let (size, copy) = copies
        .iter()
        .min_by(|a, b| {
            (a.0.ln() - file.ln())
                .abs()
                .total_cmp(&(b.0.ln() - file.ln()).abs())
        })
        .ok_or_else(|| {
            NoModel(format!(
                "needs {} copy measured in the same run (oslab run {})",
                id::BANDWIDTH_SWEEP,
                id::BANDWIDTH_SWEEP
            ))
        })?;
    let gbps = copy.summary.as_ref().map_or(f64::NAN, |s| s.median);
    let copy = Figure::new(
        gbps,
        Source::run(format!(
            "{} copy at {}",
            id::BANDWIDTH_SWEEP,
            oslab_core::units::bytes(*size as u64)
        )),
    );
    let copy_ns = block / (gbps / 2.0);
    match param(&m.params, "method").as_deref() {
        Some("read") => {
            let call = measured(run, m, id::SYSCALL_READ_DEVZERO, metric::PER_CALL, |p| {
                param(p, "cache").as_deref() == Some("hot")
            })?;
            Ok(Model::composed(
                "a read(2) and a copy",
                block / (call.value + copy_ns),
                format!(
                    "{block:.0} B / ({:.0} ns read(2) + {block:.0} B at {:.1} GB/s, half the copy figure)",
                    call.value,
                    gbps / 2.0
                ),
            )
            .figure("syscall_ns", &call)
            .figure("copy_gbps", &copy))
        }
        _ => Ok(Model::composed(
            "a copy",
            block / copy_ns,
            format!(
                "{block:.0} B at {:.1} GB/s, half the copy figure",
                gbps / 2.0
            ),
        )
        .figure("copy_gbps", &copy)),
    }
}

/// The page cache can grow into the memory the kernel says is available (free memory and what
/// it can reclaim), and under a memory cgroup into what the group's anonymous memory leaves:
/// the lesser, as the probe read them before its file grew.
fn cache_capacity(m: &Measurement) -> Outcome {
    let count = |key: &str| m.context.get(key).and_then(serde_json::Value::as_f64);
    let available = count("mem_available_bytes")
        .filter(|a| *a > 0.0)
        .ok_or_else(|| NoModel("MemAvailable was not read".into()))?;
    let mut model = match count("cgroup_cache_room_bytes") {
        Some(room) if room < available => Model::spec(
            "the memory cgroup's room",
            room,
            format!(
                "{} the cgroup's limit leaves beside its anonymous memory",
                oslab_core::units::bytes(room as u64)
            ),
        )
        .input(
            "cgroup_cache_room_bytes",
            room,
            "kernel: memory.max less memory.stat anon",
        ),
        _ => Model::spec(
            "the memory available",
            available,
            format!(
                "MemAvailable {}",
                oslab_core::units::bytes(available as u64)
            ),
        ),
    }
    .input(
        "mem_available_bytes",
        available,
        "kernel: /proc/meminfo MemAvailable",
    );
    model.kind = oslab_core::ModelKind::Reference;
    Ok(model)
}
