//! The NUMA matrix: for every (cpu node, memory node) pair, STREAM bandwidth (four kernels and
//! their average, as NUMA bandwidth tables report it) with a thread per core of the cpu node, and idle latency
//! from one of its CPUs; memory bound to the memory node before first touch and its placement
//! checked afterwards. Memory-only nodes (CXL, HBM) are columns without a row.

use crate::bandwidth::{bandwidth_measurements, thread_order};
use crate::buffer::{Buffer, Pages};
use crate::kernels::{self, Kernel, Stores};
use crate::memory::{Chain, Order};
use crate::probe::{Context, Probe, ProbeError};
use crate::stream::{gbps, team, Arrays, Reps};
use oslab_core::affinity::set_affinity;
use oslab_core::model::{judged, Judge};
use oslab_core::model::{Measurement, Status, Unit};
use oslab_core::numa::{fraction_on, LinuxNuma, Numa, NumaNode};
use oslab_core::{params, CpuSet};
use serde_json::{Map, Value};

/// The NUMA probe.
pub const PROBES: &[Probe] = &[Probe {
    id: "numa.matrix",
    about: "cpu node x memory node: STREAM bandwidth (4 kernels and average) and idle latency, memory bound with mbind",
    unit: Unit::GBps,
    needs: &[],
    run: |cx| matrix(cx, &LinuxNuma::new(cx.topology)),
}];

const PROBE: &str = "numa.matrix";
/// Pages sampled per buffer to verify placement.
const SAMPLE_PAGES: usize = 64;

/// Runs every cell of the matrix on `numa`.
pub fn matrix(cx: &Context, numa: &dyn Numa) -> Result<Vec<Measurement>, ProbeError> {
    kernels::available().map_err(ProbeError::Unsupported)?;
    let nodes = numa.nodes();
    let mem_nodes: Vec<&NumaNode> = nodes.iter().filter(|n| n.memory != Some(0)).collect();
    let cpu_nodes: Vec<(&NumaNode, Vec<usize>)> = nodes
        .iter()
        .filter_map(|n| {
            let cpus = one_per_core(cx, &n.cpus);
            (!cpus.is_empty()).then_some((n, cpus))
        })
        .collect();
    if cpu_nodes.is_empty() {
        return Err(ProbeError::Unsupported(
            "no NUMA node has a cpu in our affinity mask".into(),
        ));
    }
    let mut notes = Vec::new();
    if nodes.len() == 1 {
        notes.push("1x1 matrix: this machine has one NUMA node".to_string());
    }
    if numa.balancing() == Some(true) {
        notes.push(
            "kernel.numa_balancing is on: the kernel may move pages during the measurement (sysctl kernel.numa_balancing=0)"
                .to_string(),
        );
    }
    let note = (!notes.is_empty()).then(|| notes.join("; "));
    let mut out = Vec::new();
    for (cpu_node, cpus) in &cpu_nodes {
        for mem in &mem_nodes {
            let distance = cpu_node.distances.get(mem.id).copied();
            let base = params! {
                "cpu_node" => cpu_node.id,
                "mem_node" => mem.id,
                "distance" => distance.map_or(Value::Null, Value::from),
                "numa" => numa.kind(),
            };
            match cell(cx, numa, cpus, mem.id, base.clone(), note.as_deref()) {
                Ok(ms) => out.extend(ms),
                Err(ProbeError::Interrupted) => return Err(ProbeError::Interrupted),
                Err(e) => {
                    let status = match e {
                        ProbeError::Unsupported(why) => Status::Skipped(why),
                        other => Status::Failed(other.to_string()),
                    };
                    out.push(Measurement::not_taken(
                        PROBE,
                        base,
                        "bandwidth",
                        Unit::GBps,
                        status,
                    ));
                }
            }
        }
    }
    Ok(out)
}

/// The CPUs of `set` we may use, one per core.
fn one_per_core(cx: &Context, set: &CpuSet) -> Vec<usize> {
    let mut seen = Vec::new();
    thread_order(cx.topology, &cx.allowed)
        .into_iter()
        .filter(|&c| set.contains(c))
        .filter(|&c| {
            let core = cx.topology.cpu(c).map(|x| (x.package, x.core));
            let new = !seen.contains(&core);
            seen.push(core);
            new
        })
        .collect()
}

/// Page addresses spread over a buffer, for placement queries.
fn sample_pages(buf: &Buffer) -> Vec<*mut u8> {
    let pages = buf.len() / 4096;
    let step = (pages / SAMPLE_PAGES).max(1);
    (0..pages)
        .step_by(step)
        .map(|p| buf.ptr().wrapping_add(p * 4096))
        .collect()
}

/// Where `buf`'s pages are, node by node ("node0 50%, node1 50%"), on a machine of several
/// nodes: a team's first touch places them by thread, and a reader should see where it did.
pub fn nodes_of(topology: &oslab_core::Topology, buf: &Buffer) -> Option<String> {
    if topology.nodes.len() < 2 {
        return None;
    }
    let status = LinuxNuma::new(topology)
        .where_are(&sample_pages(buf))
        .ok()?;
    let mut per: std::collections::BTreeMap<i32, usize> = Default::default();
    for s in status.iter().filter(|&&s| s >= 0) {
        *per.entry(*s).or_default() += 1;
    }
    let n = status.len().max(1) as f64;
    Some(
        per.iter()
            .map(|(node, c)| format!("node{node} {:.0}%", 100.0 * *c as f64 / n))
            .collect::<Vec<_>>()
            .join(", "),
    )
}

fn bind(numa: &dyn Numa, buf: &Buffer, node: usize) -> Result<(), ProbeError> {
    numa.bind(buf.ptr(), buf.len(), node).map_err(|e| {
        ProbeError::Unsupported(format!("cannot bind memory to node {node} (mbind): {e}"))
    })
}

fn cell(
    cx: &Context,
    numa: &dyn Numa,
    cpus: &[usize],
    mem: usize,
    base: Map<String, Value>,
    note: Option<&str>,
) -> Result<Vec<Measurement>, ProbeError> {
    // Bandwidth: bind, then each thread first-touches its slice (the policy places it).
    let (bytes, size_note) = crate::bandwidth::array_bytes(cx.topology, cx.memory_budget());
    let arrays = Arrays::new(bytes, Pages::Default)?;
    for buf in arrays.buffers() {
        bind(numa, buf, mem)?;
    }
    let jobs: Vec<(Kernel, Stores)> = Kernel::STREAM.iter().map(|&k| (k, Stores::Plain)).collect();
    let reps = Reps {
        min: 5,
        max: 20,
        budget: cx.harness.config.budget,
    };
    let times = team(cpus, &arrays, &jobs, reps)?;
    let mut placed = 1.0f64;
    for buf in arrays.buffers() {
        placed = placed.min(placement(numa, buf, mem)?);
    }
    let mut params = base.clone();
    params.insert("threads".into(), cpus.len().into());
    let notes: Vec<&str> = [note, size_note.as_deref()].into_iter().flatten().collect();
    let joined = notes.join("; ");
    let note = (!joined.is_empty()).then_some(joined.as_str());
    let elems = arrays.bytes / 8;
    let mut out = Vec::new();
    for (&(k, s), secs) in jobs.iter().zip(&times) {
        let ms = bandwidth_measurements(PROBE, params.clone(), k, s, secs, elems, note);
        out.extend(ms.into_iter().filter(|m| m.metric == "bandwidth"));
    }
    // The reported figure: the average of the four kernels, repetition by repetition.
    let per_kernel: Vec<Vec<f64>> = jobs
        .iter()
        .zip(&times)
        .map(|(&(k, _), secs)| gbps(secs, (k.stream_bytes() * elems) as f64))
        .collect();
    let reps_done = per_kernel.iter().map(Vec::len).min().unwrap_or(0);
    let avg: Vec<f64> = (0..reps_done)
        .map(|r| per_kernel.iter().map(|v| v[r]).sum::<f64>() / per_kernel.len() as f64)
        .collect();
    let mut p = params.clone();
    p.insert("kernel".into(), "average".into());
    p.insert("stores".into(), Stores::Plain.name().into());
    out.push(judged(
        PROBE,
        p,
        "bandwidth",
        Unit::GBps,
        &avg,
        Some("mean of copy, scale, add and triad per repetition".into()),
        Judge::Median,
    ));
    let found = format!("{:.0}%", placed * 100.0);
    for m in &mut out {
        m.context.insert("placed".into(), found.as_str().into());
    }
    if placed < 0.99 {
        for m in &mut out {
            m.status = Status::Failed(format!(
                "only {:.0}% of the sampled pages are on node {mem}",
                placed * 100.0
            ));
        }
    }
    drop(arrays);
    out.push(latency(cx, numa, cpus[0], mem, base, note)?);
    Ok(out)
}

fn placement(numa: &dyn Numa, buf: &Buffer, node: usize) -> Result<f64, ProbeError> {
    fraction_on(numa, &sample_pages(buf), node)
        .map_err(|e| ProbeError::Failed(format!("move_pages (query): {e}")))
}

/// Idle latency: a chunk-random chain bound to `mem`, walked from `cpu`.
fn latency(
    cx: &Context,
    numa: &dyn Numa,
    cpu: usize,
    mem: usize,
    mut params: Map<String, Value>,
    note: Option<&str>,
) -> Result<Measurement, ProbeError> {
    let size = (cx.memory_budget() / 4).clamp(16 << 20, 256 << 20);
    let buf = Buffer::new(size, Pages::Small)?;
    bind(numa, &buf, mem)?;
    let result = std::thread::scope(|s| {
        s.spawn(|| {
            set_affinity(0, &CpuSet::single(cpu))
                .map_err(|e| ProbeError::Failed(format!("cannot pin to cpu {cpu}: {e}")))?;
            let mut chain = Chain::in_buffer(buf, Order::Chunk, size as u64);
            let placed = placement(numa, chain.buffer(), mem)?;
            chain.walk((size / 64) as u64);
            let t = cx.harness.raw(&mut |n| chain.walk(n))?;
            Ok::<_, ProbeError>((t, placed))
        })
        .join()
        .unwrap_or_else(|_| Err(ProbeError::Failed("latency thread panicked".into())))
    });
    let (t, placed) = result?;
    params.insert("cpu".into(), cpu.into());
    params.insert("size".into(), size.into());
    params.insert("order".into(), "chunk".into());
    let mut m = cx
        .measurement(PROBE, params, "latency", &t)
        .found("placed", format!("{:.0}%", placed * 100.0));
    if let Some(n) = note {
        m.note = Some(match m.note.take() {
            Some(old) => format!("{old}; {n}"),
            None => n.to_string(),
        });
    }
    if placed < 0.99 {
        m.status = Status::Failed(format!(
            "only {:.0}% of the sampled pages are on node {mem}",
            placed * 100.0
        ));
    }
    Ok(m)
}
