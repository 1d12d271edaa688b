//! The NUMA matrix: for every (cpu node, memory node) pair, STREAM bandwidth (four kernels and
//! their average, as NUMA bandwidth tables report it) with a thread per core of the cpu node, and idle latency
//! from one of its CPUs; memory bound to the memory node before first touch and its placement
//! checked afterwards. Memory-only nodes (CXL, HBM) are columns without a row.

use crate::bandwidth::{bandwidth_measurements, thread_order};
use crate::buffer::{Buffer, Pages};
use crate::kernels::{self, Kernel, Stores};
use crate::memory::{idle_chase_bytes, Chain, Order, IDLE_SPACING};
use crate::probe::{Context, Probe, ProbeError};
use crate::stream::{gbps, team, Arrays, Reps};
use oslab_core::beyond_cache::{under_claimed, MARK, PARTLY_CACHE};
use oslab_core::catalog::{self, id};
use oslab_core::model::{judged, Judge};
use oslab_core::model::{Measurement, Status, Unit};
use oslab_core::topology::{HMAT_BANDWIDTH, HMAT_LATENCY};
use oslab_core::{params, CpuSet};
use oslab_os::affinity::set_affinity;
use oslab_os::numa::{fraction_on, LinuxNuma, Numa, NumaNode};
use serde_json::{Map, Value};

/// The NUMA probe.
pub const PROBES: &[Probe] = &[Probe {
    entry: &catalog::NUMA_MATRIX,
    needs: &[],
    cost: 10.0,
    plan: Some(plan),
    run: |cx, _me| matrix(cx, &LinuxNuma::new(cx.topology)),
}];

const PROBE: &str = id::NUMA_MATRIX;

fn plan(cx: &Context) -> crate::probe::Plan {
    let nodes = &cx.topology.nodes;
    let rows = nodes
        .iter()
        .filter(|n| n.cpus.iter().any(|c| cx.allowed.contains(c)))
        .count();
    let columns = nodes.iter().filter(|n| n.memory != Some(0)).count();
    let mut distances: Vec<u32> = nodes.iter().flat_map(|n| n.distances.clone()).collect();
    distances.sort_unstable();
    distances.dedup();
    let cells = rows * columns;
    if cx.options.whole_matrix {
        return crate::probe::Plan {
            what: format!("all {rows} x {columns} cells"),
            work: cells as f64,
        };
    }
    let target = cx.harness.config.suite_target / 4;
    // A cell takes about ten measurement budgets (four kernels at least five times, a chase).
    let fit = (target.as_secs_f64() / (10.0 * cx.harness.config.budget.as_secs_f64())) as usize;
    crate::probe::Plan {
        what: format!(
            "{rows} x {columns} = {cells} cells: one of each distance ({}) first, the rest within {:.0} s; `oslab numa` measures all",
            distances.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
            target.as_secs_f64()
        ),
        work: cells.min(fit.max(distances.len())) as f64,
    }
}

/// Runs every cell of the matrix on `numa`.
pub fn matrix(cx: &Context, numa: &dyn Numa) -> Result<Vec<Measurement>, ProbeError> {
    kernels::available()?;
    let nodes = numa.nodes();
    // A cpuset may restrict the memory nodes (Slurm, containers: cpuset.mems): binding to one
    // outside fails, so those columns are said skipped, with the cpuset's list.
    let mems = numa.mems_allowed();
    let allowed = |n: &NumaNode| mems.as_ref().is_none_or(|m| m.contains(n.id));
    let mem_nodes: Vec<&NumaNode> = nodes
        .iter()
        .filter(|n| n.memory != Some(0) && allowed(n))
        .collect();
    let excluded: Vec<Measurement> = nodes
        .iter()
        .filter(|n| n.memory != Some(0) && !allowed(n))
        .map(|n| {
            let why = format!(
                "memory node {} is outside this process's cpuset (its memory nodes: {}, as cpuset.mems or a batch system set them): nothing can be bound there",
                n.id,
                mems.as_ref().map_or(String::new(), |m| m.to_string())
            );
            Measurement::not_taken(
                PROBE,
                params! {"mem_node" => n.id, "numa" => numa.kind()},
                "bandwidth",
                Unit::GBps,
                Status::Skipped(why),
            )
        })
        .collect();
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
    // Automatic NUMA balancing leaves memory bound with MPOL_BIND where it is (it moves such
    // pages only when mbind asks with MPOL_F_NUMA_BALANCING), and the threads are pinned: it
    // needs no switching off here; the placement check after each cell would show a move.
    let note = (nodes.len() == 1).then(|| "1x1 matrix: this machine has one NUMA node".to_string());
    let cells: Vec<Cell> = cpu_nodes
        .iter()
        .enumerate()
        .flat_map(|(r, (n, _))| {
            mem_nodes.iter().enumerate().map(move |(c, m)| Cell {
                row: r,
                column: c,
                distance: n.distances.get(m.id).copied(),
                local: n.id == m.id,
            })
        })
        .collect();
    let (order, classes) = cell_order(&cells);
    // In the suite the matrix gets a quarter of the suite's time: past its distance classes it
    // stops there (a matrix grows with the square of the nodes); `oslab numa` measures it all.
    let deadline = (!cx.options.whole_matrix).then(|| cx.harness.config.suite_target / 4);
    let started = std::time::Instant::now();
    let mut out = Vec::new();
    let mut measured = 0;
    for (i, &k) in order.iter().enumerate() {
        let spent = started.elapsed();
        let per_cell = spent / (i.max(1) as u32);
        if i >= classes && deadline.is_some_and(|d| spent + per_cell > d) {
            break;
        }
        measured += 1;
        let Cell {
            row,
            column,
            distance,
            ..
        } = cells[k];
        let (cpu_node, cpus) = (&cpu_nodes[row].0, &cpu_nodes[row].1);
        let mem = mem_nodes[column];
        let base = params! {
            "cpu_node" => cpu_node.id,
            "mem_node" => mem.id,
            "distance" => distance.map_or(Value::Null, Value::from),
            "numa" => numa.kind(),
        };
        match cell(cx, numa, cpus, mem.id, base.clone(), note.as_deref()) {
            Ok(ms) => out.extend(
                ms.into_iter()
                    .map(|m| with_hmat(m, cx, cpu_node.id, mem.id)),
            ),
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
    out.extend(excluded);
    // Row by row, as a matrix reads, whatever order the cells were measured in.
    let node = |m: &Measurement, key: &str| m.params.get(key).and_then(Value::as_u64);
    out.sort_by_key(|m| (node(m, "cpu_node"), node(m, "mem_node")));
    if measured < cells.len() {
        let sampled = sampled_note(measured, cells.len(), deadline.unwrap_or_default());
        for m in &mut out {
            m.note = Some(oslab_core::model::join_notes(
                sampled.clone(),
                m.note.take(),
            ));
        }
    }
    Ok(out)
}

/// What a sampled matrix says on each of its rows.
fn sampled_note(measured: usize, cells: usize, target: std::time::Duration) -> String {
    format!(
        "sampled: {measured} of {cells} cells in the suite's {:.0} s for the matrix, every distance first; `oslab numa` measures every cell",
        target.as_secs_f64()
    )
}

/// A cell of the matrix: a cpu node's row, a memory node's column.
#[derive(Debug, Clone, Copy)]
pub struct Cell {
    /// Index of the cpu node among the rows.
    pub row: usize,
    /// Index of the memory node among the columns.
    pub column: usize,
    /// Their SLIT distance.
    pub distance: Option<u32>,
    /// Whether the memory is the cpu node's own.
    pub local: bool,
}

/// The order the cells are measured in, and how many of the first must be measured however
/// long they take: one cell of each distance (the nearest first), then the rest of the local
/// cells, then the others row by row.
pub fn cell_order(cells: &[Cell]) -> (Vec<usize>, usize) {
    let mut order: Vec<usize> = Vec::new();
    let mut seen: Vec<Option<u32>> = Vec::new();
    let mut by_distance: Vec<usize> = (0..cells.len()).collect();
    by_distance.sort_by_key(|&k| (!cells[k].local, cells[k].distance, k));
    for k in by_distance {
        if !seen.contains(&cells[k].distance) {
            seen.push(cells[k].distance);
            order.push(k);
        }
    }
    let classes = order.len();
    let diagonal = (0..cells.len()).filter(|&k| cells[k].local);
    let rest: Vec<usize> = diagonal.chain(0..cells.len()).collect();
    for k in rest {
        if !order.contains(&k) {
            order.push(k);
        }
    }
    (order, classes)
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
    out.push(average(&params, &per_kernel));
    let found = format!("{:.0}%", placed * 100.0);
    for m in &mut out {
        m.context.insert("placed".into(), found.as_str().into());
        // The arrays' size, for the judgement by the run's own latency curve (not a parameter:
        // a cell is the same cell whatever the budget made its arrays).
        m.context.insert("array_bytes".into(), arrays.bytes.into());
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
    out.push(latency(cx, numa, cpus[0], mem, base)?);
    Ok(out)
}

fn placement(numa: &dyn Numa, buf: &Buffer, node: usize) -> Result<f64, ProbeError> {
    fraction_on(numa, &buf.sample_pages(), node)
        .map_err(|e| ProbeError::Failed(format!("move_pages (query): {e}")))
}

/// The working set of a cell's latency chase: the idle chase's ([`idle_chase_bytes`]), at
/// most 256 MiB (a machine of 8 nodes has 64 cells to build it in), within the memory budget.
/// It was 16 MiB with `--quick`: a cache on servers with 32 to 105 MiB of L3.
fn chase_bytes(cx: &Context) -> usize {
    idle_chase_bytes(cx).min(256 << 20).min(cx.memory_budget())
}

/// Idle latency as the suite measures it ([`IDLE_SPACING`]: prefetchers defeated), the chain
/// bound to `mem` and walked from `cpu`; marked partly a cache's when the budget kept the chain
/// under 4x the last-level cache sysfs claims (the run's own curve may clear it:
/// [`oslab_core::beyond_cache`]).
fn latency(
    cx: &Context,
    numa: &dyn Numa,
    cpu: usize,
    mem: usize,
    mut params: Map<String, Value>,
) -> Result<Measurement, ProbeError> {
    let size = chase_bytes(cx);
    let buf = Buffer::new(size, Pages::Small)?;
    bind(numa, &buf, mem)?;
    let result = std::thread::scope(|s| {
        s.spawn(|| {
            set_affinity(0, &CpuSet::single(cpu))
                .map_err(|e| ProbeError::Failed(format!("cannot pin to cpu {cpu}: {e}")))?;
            let mut chain = Chain::spaced(buf, Order::Chunk, IDLE_SPACING, size as u64)?;
            let placed = placement(numa, chain.buffer(), mem)?;
            chain.walk((size / IDLE_SPACING) as u64);
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
    let llc = cx.cache_sizes().into_iter().max().unwrap_or(0) as usize;
    let mut why = vec![format!(
        "a chain of {} MiB, one element per {IDLE_SPACING} B, random in chunks (as the idle memory latency)",
        size >> 20
    )];
    if size < 4 * llc {
        why.push(under_claimed("a chain", size, llc, 256 << 20));
        m.context.insert(MARK.into(), PARTLY_CACHE.into());
    }
    m.note_before(why.join("; "));
    if placed < 0.99 {
        m.status = Status::Failed(format!(
            "only {:.0}% of the sampled pages are on node {mem}",
            placed * 100.0
        ));
    }
    Ok(m)
}

/// A cell's figure: the mean of its kernels' bandwidths, repetition by repetition, judged as
/// every median is.
fn average(params: &serde_json::Map<String, Value>, per_kernel: &[Vec<f64>]) -> Measurement {
    let reps_done = per_kernel.iter().map(Vec::len).min().unwrap_or(0);
    let avg: Vec<f64> = (0..reps_done)
        .map(|r| per_kernel.iter().map(|v| v[r]).sum::<f64>() / per_kernel.len() as f64)
        .collect();
    let mut p = params.clone();
    p.insert("kernel".into(), "average".into());
    p.insert("stores".into(), Stores::Plain.name().into());
    judged(
        PROBE,
        p,
        "bandwidth",
        Unit::GBps,
        &avg,
        Some("mean of copy, scale, add and triad per repetition".into()),
        Judge::Median,
    )
}

/// The firmware's HMAT figures for memory node `mem` from cpu node `cpu`, in the cell's context
/// where the firmware gives them (`Node::hmat_from`).
fn with_hmat(m: Measurement, cx: &Context, cpu: usize, mem: usize) -> Measurement {
    let Some(h) = cx
        .topology
        .nodes
        .iter()
        .find(|n| n.id == mem)
        .and_then(|n| n.hmat_from(cpu))
    else {
        return m;
    };
    let mut m = m;
    for (key, v) in [
        (HMAT_LATENCY, h.read_latency_ns),
        (HMAT_BANDWIDTH, h.read_bandwidth_mbs),
    ] {
        if let Some(v) = v {
            m = m.found(key, v);
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_whose_repetitions_disagree_is_noisy_with_its_reason() {
        let params = params! {"cpu_node" => 0, "mem_node" => 1};
        let steady = vec![vec![20.0, 20.1, 19.9, 20.05, 20.0, 19.95, 20.02]; 4];
        let m = average(&params, &steady);
        assert!(m.status.has_value() && !m.status.is_noisy(), "{m:?}");
        // Another guest streamed beside every other repetition.
        let shared: Vec<Vec<f64>> = (0..4)
            .map(|_| {
                (0..7)
                    .map(|r| if r % 2 == 0 { 20.0 } else { 6.0 })
                    .collect()
            })
            .collect();
        let m = average(&params, &shared);
        assert!(m.status.is_noisy(), "{m:?}");
        assert!(m.note.as_deref().unwrap_or("").contains("noisy:"), "{m:?}");
    }

    #[test]
    fn every_distance_comes_first_then_the_local_cells() {
        // Four nodes in a ring (10/16/22) and a memory-only node at 28: 4 rows x 5 columns.
        let ring = [
            [10, 16, 22, 16, 28],
            [16, 10, 16, 22, 28],
            [22, 16, 10, 16, 28],
            [16, 22, 16, 10, 28],
        ];
        let cells: Vec<Cell> = (0..4)
            .flat_map(|r| {
                (0..5).map(move |c| Cell {
                    row: r,
                    column: c,
                    distance: Some(ring[r][c]),
                    local: r == c,
                })
            })
            .collect();
        let (order, classes) = cell_order(&cells);
        assert_eq!(classes, 4);
        let first: Vec<u32> = order[..4]
            .iter()
            .map(|&k| cells[k].distance.unwrap())
            .collect();
        assert_eq!(first, [10, 16, 22, 28]);
        assert!(order[4..7].iter().all(|&k| cells[k].local), "{order:?}");
        let mut all = order.clone();
        all.sort_unstable();
        assert_eq!(all, (0..20).collect::<Vec<_>>());
    }
}
