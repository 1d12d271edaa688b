//! Memory bandwidth: STREAM's four kernels plus plain read and write, with plain and
//! non-temporal stores, on one thread and on 1..N pinned threads; read:write mixes; and bandwidth
//! over working-set size, where each cache level shows as a plateau.
//!
//! Reported as STREAM counts bytes (each array once), best-of-N beside the median; for plain
//! stores also the traffic the memory system really carries (write-allocate reads the
//! destination first).

use crate::buffer::Pages;
use crate::kernels::{self, Kernel, Stores, UNIT};
use crate::memory::sweep_sizes;
use crate::probe::{Context, Plan, Probe, ProbeError};
use crate::stream::{gbps, team, Arrays, Reps};
use oslab_core::beyond_cache::{under_claimed, MARK, PARTLY_CACHE, UNDER};
use oslab_core::catalog::{self, Entry};
use oslab_core::model::{judged, Judge};
use oslab_core::model::{Measurement, Unit};
use oslab_core::params;
use oslab_core::Topology;
use serde_json::{Map, Value};

/// The bandwidth probes.
pub const PROBES: &[Probe] = &[
    Probe {
        entry: &catalog::BANDWIDTH_STREAM,
        needs: &[],
        cost: 10.0,
        plan: None,
        run: single,
    },
    Probe {
        entry: &catalog::BANDWIDTH_THREADS,
        needs: &[],
        cost: 10.0,
        plan: Some(plan_threads),
        run: threads,
    },
    Probe {
        entry: &catalog::BANDWIDTH_MIX,
        needs: &[],
        cost: 7.0,
        plan: Some(plan_mixes),
        run: mixes,
    },
    Probe {
        entry: &catalog::BANDWIDTH_SWEEP,
        needs: &[],
        cost: 45.0,
        plan: None,
        run: sweep,
    },
];

const MIB: usize = 1 << 20;

/// Bytes per array for RAM bandwidth: at least 4x the last-level cache (STREAM's rule), within
/// the memory budget (see [`Context::memory_budget`]). The note says when the rule cannot hold.
pub fn array_bytes(topology: &Topology, memory_max: usize) -> (usize, Option<String>) {
    let llc = topology.last_level_cache().map(|c| c.size as usize);
    let want = llc.map_or(256 * MIB, |l| 4 * l).max(32 * MIB);
    let cap = (memory_max / 3 / MIB).max(1) * MIB;
    let bytes = want.min(cap);
    let note = match llc {
        Some(l) if bytes < 4 * l => Some(under_claimed("arrays", bytes, l, (1usize << 30) / 3)),
        None => {
            Some("no last-level cache size known; arrays of 256 MiB assumed large enough".into())
        }
        _ => None,
    };
    (bytes, note)
}

fn reps(cx: &Context) -> Reps {
    Reps {
        min: 5,
        max: 20,
        budget: cx.harness.config.budget,
    }
}

/// The measurements of one kernel's repetitions: STREAM-counted bandwidth (median, with the
/// best repetition in the note as STREAM reports it) and, when it differs, hardware traffic.
pub fn bandwidth_measurements(
    id: &str,
    mut params: Map<String, Value>,
    kernel: Kernel,
    stores: Stores,
    seconds: &[f64],
    elems: usize,
    note: Option<&str>,
) -> Vec<Measurement> {
    params.insert("kernel".into(), kernel.name().into());
    params.insert("stores".into(), stores.name().into());
    if let Some(r) = kernel.ratio() {
        params.insert("read_write".into(), r.into());
    }
    let stream = gbps(seconds, (kernel.stream_bytes() * elems) as f64);
    let best = stream.iter().cloned().fold(f64::NAN, f64::max);
    let mut text = format!(
        "best {best:.2} GB/s (STREAM's figure); STREAM bytes: {} per element",
        kernel.stream_bytes()
    );
    if stores == Stores::Memcpy {
        text.push_str("; libc memcpy chooses its own stores (non-temporal above a size threshold)");
    }
    if let Some(n) = note {
        text = format!("{text}; {n}");
    }
    let mut out = vec![judged(
        id,
        params.clone(),
        "bandwidth",
        Unit::GBps,
        &stream,
        Some(text),
        Judge::Median,
    )];
    if note.is_some_and(|n| n.contains(UNDER)) {
        out[0].context.insert(MARK.into(), PARTLY_CACHE.into());
    }
    if let Some(hw) = kernel
        .hardware_bytes(stores)
        .filter(|&h| h != kernel.stream_bytes() as f64)
    {
        let samples = gbps(seconds, hw * elems as f64);
        let why = format!(
            "traffic incl. write-allocate: {hw} bytes per element ({} STREAM counts)",
            kernel.stream_bytes()
        );
        out.push(judged(
            id,
            params,
            "hw_bandwidth",
            Unit::GBps,
            &samples,
            Some(why),
            Judge::Median,
        ));
    }
    out
}

fn single(cx: &Context, me: &'static Entry) -> Result<Vec<Measurement>, ProbeError> {
    kernels::available()?;
    let (bytes, note) = array_bytes(cx.topology, cx.memory_budget());
    let arrays = Arrays::new(bytes, Pages::Default)?;
    let mut jobs = vec![(Kernel::Read, Stores::Plain)];
    for k in [Kernel::Write].iter().chain(&Kernel::STREAM) {
        jobs.extend(k.store_kinds().iter().map(|&s| (*k, s)));
    }
    let times = team(&[cx.cpu], &arrays, &jobs, reps(cx))?;
    let base = params! {
        "threads" => 1,
        "cpus" => cx.cpu.to_string(),
        "array_bytes" => arrays.bytes,
    };
    let pages = arrays.d.pages_used();
    Ok(jobs
        .iter()
        .zip(&times)
        .flat_map(|(&(k, s), t)| {
            let ms = bandwidth_measurements(
                me.id,
                base.clone(),
                k,
                s,
                t,
                arrays.bytes / 8,
                note.as_deref(),
            );
            ms.into_iter().map(|m| m.found("pages", pages.as_str()))
        })
        .collect())
}

/// CPUs in the order threads are added: one per core (packages interleaved), then the SMT
/// siblings, restricted to `allowed`.
pub fn thread_order(topology: &Topology, allowed: &oslab_core::CpuSet) -> Vec<usize> {
    let mut cpus: Vec<_> = topology
        .cpus
        .iter()
        .filter(|c| allowed.contains(c.id))
        .collect();
    // Rank of each cpu among its core's siblings (0 = first thread of the core).
    let rank = |c: &oslab_core::topology::Cpu| c.smt_siblings.iter().filter(|&s| s < c.id).count();
    let core_index = |c: &oslab_core::topology::Cpu| {
        let mut cores: Vec<_> = topology
            .cpus
            .iter()
            .filter(|o| o.package == c.package && rank(o) == 0)
            .map(|o| o.core)
            .collect();
        cores.sort_unstable();
        cores.dedup();
        cores.iter().position(|&k| k == c.core).unwrap_or(0)
    };
    cpus.sort_by_key(|c| (rank(c), core_index(c), c.package, c.id));
    cpus.into_iter().map(|c| c.id).collect()
}

/// Thread counts to try: powers of two up to the core count, the core count, and all CPUs.
pub fn thread_counts(cores: usize, cpus: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..)
        .map(|b| 1usize << b)
        .take_while(|&t| t < cores)
        .collect();
    v.extend([cores, cpus]);
    v.retain(|&t| t >= 1 && t <= cpus);
    v.sort_unstable();
    v.dedup();
    v
}

/// Read:write ratios of the mixes, as MLC's bandwidth matrix offers them.
const MIXES: [(u8, u8); 5] = [(1, 0), (3, 1), (2, 1), (1, 1), (0, 1)];

fn mixes(cx: &Context, me: &'static Entry) -> Result<Vec<Measurement>, ProbeError> {
    kernels::available()?;
    let order = thread_order(cx.topology, &cx.allowed);
    let (bytes, note) = array_bytes(cx.topology, cx.memory_budget());
    let mix = |(reads, writes): (u8, u8)| Kernel::Mix { reads, writes };
    let plain: Vec<(Kernel, Stores)> = MIXES.iter().map(|&m| (mix(m), Stores::Plain)).collect();
    let mut all = plain.clone();
    all.extend(
        MIXES
            .iter()
            .filter(|m| m.1 > 0)
            .map(|&m| (mix(m), Stores::NonTemporal)),
    );
    let mut out = Vec::new();
    let one = [cx.cpu];
    let teams = [(&one[..], &plain), (&order[..], &all)];
    // Fourteen jobs: half the other bandwidth probes' time each, to stay within a few seconds
    // (passes are short enough that 20 still fit, and 10 gave an interval as wide as the range).
    let reps = Reps {
        min: 2,
        max: 20,
        budget: cx.harness.config.budget / 2,
    };
    for (cpus, jobs) in teams {
        let arrays = Arrays::new(bytes, Pages::Default)?;
        let times = team(cpus, &arrays, jobs, reps)?;
        let list: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
        let base = params! {
            "threads" => cpus.len(),
            "cpus" => list.join(","),
            "array_bytes" => arrays.bytes,
        };
        // What the kernel gave the arrays moves the mixes as it moves the others (THP off read
        // as 5 mixes 6-9% slower, with nothing said of their pages).
        let pages = arrays.d.pages_used();
        for (&(k, s), secs) in jobs.iter().zip(&times) {
            let ms = bandwidth_measurements(
                me.id,
                base.clone(),
                k,
                s,
                secs,
                arrays.bytes / 8,
                note.as_deref(),
            );
            out.extend(ms.into_iter().map(|m| m.found("pages", pages.as_str())));
        }
    }
    Ok(out)
}

/// The cpus teams are drawn from, in order, and how many cores they hold.
fn team_cpus(cx: &Context) -> (Vec<usize>, usize) {
    let order = thread_order(cx.topology, &cx.allowed);
    let mut cores: Vec<_> = order
        .iter()
        .filter_map(|&id| cx.topology.cpu(id))
        .map(|c| (c.package, c.core))
        .collect();
    cores.sort_unstable();
    cores.dedup();
    let n = cores.len();
    (order, n)
}

fn plan_threads(cx: &Context) -> Plan {
    let (order, cores) = team_cpus(cx);
    let counts = thread_counts(cores, order.len());
    let list: Vec<String> = counts.iter().map(usize::to_string).collect();
    Plan {
        what: format!(
            "teams of {} threads (doubling to the {cores} cores, then all): a thread per core, sockets in turn, then SMT siblings",
            list.join(", ")
        ),
        work: counts.len() as f64 / 2.0 * team_share(counts.len()),
    }
}

/// The share of a measurement budget each of `teams` gets: past four teams (on more than eight
/// cores) they share four budgets, so that the sweep's time stays within twice what it is on a
/// two-cpu machine however many cpus there are.
fn team_share(teams: usize) -> f64 {
    (4.0 / teams as f64).min(1.0)
}

fn plan_mixes(cx: &Context) -> Plan {
    Plan {
        what: format!(
            "{} read:write mixes on 1 thread and on all {} cpus",
            MIXES.len(),
            cx.allowed.len()
        ),
        work: 1.0,
    }
}

fn threads(cx: &Context, me: &'static Entry) -> Result<Vec<Measurement>, ProbeError> {
    kernels::available()?;
    let (order, cores) = team_cpus(cx);
    let (bytes, note) = array_bytes(cx.topology, cx.memory_budget());
    let jobs = [
        (Kernel::Read, Stores::Plain),
        (Kernel::Copy, Stores::Plain),
        (Kernel::Triad, Stores::Plain),
        (Kernel::Triad, Stores::NonTemporal),
    ];
    let mut out = Vec::new();
    let counts = thread_counts(cores, order.len());
    let reps = Reps {
        budget: reps(cx).budget.mul_f64(team_share(counts.len())),
        ..reps(cx)
    };
    for t in counts {
        // Fresh arrays per team, so each thread first-touches (and places) its own slice.
        let arrays = Arrays::new(bytes, Pages::Default)?;
        let cpus = &order[..t];
        let times = team(cpus, &arrays, &jobs, reps)?;
        let list: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
        let base = params! {
            "threads" => t,
            "cpus" => list.join(","),
            "array_bytes" => arrays.bytes,
        };
        let pages = arrays.d.pages_used();
        let nodes = arrays.d.nodes(cx.topology);
        for (&(k, s), secs) in jobs.iter().zip(&times) {
            let ms = bandwidth_measurements(
                me.id,
                base.clone(),
                k,
                s,
                secs,
                arrays.bytes / 8,
                note.as_deref(),
            );
            out.extend(ms.into_iter().map(|m| {
                let m = m.found("pages", pages.as_str());
                match &nodes {
                    Some(n) => m.found("nodes", n.as_str()),
                    None => m,
                }
            }));
        }
    }
    Ok(out)
}

fn sweep(cx: &Context, me: &'static Entry) -> Result<Vec<Measurement>, ProbeError> {
    kernels::available()?;
    let caches = cx.cache_sizes();
    // Past a quarter of the memory budget the curve is flat (RAM): stop there.
    let max = cx.memory_budget() / 4;
    let harness = cx.harness.scaled(0.25);
    let kernels = [Kernel::Read, Kernel::Write, Kernel::Copy, Kernel::Triad];
    let mut out = Vec::new();
    for size in sweep_sizes(max, &caches) {
        for kernel in kernels {
            // The working set is all arrays the kernel touches together.
            let per_array = (size / kernel.arrays() / UNIT) * UNIT;
            if per_array == 0 {
                continue;
            }
            let arrays = Arrays::new(per_array, Pages::Default)?;
            let one = (per_array / 8) * kernel.stream_bytes();
            arrays.first_touch();
            let t = harness.raw(&mut |n| {
                for _ in 0..n {
                    // SAFETY: AVX checked above; the arrays hold per_array bytes each.
                    unsafe {
                        kernels::run(
                            kernel,
                            Stores::Plain,
                            arrays.d.ptr() as *mut f64,
                            arrays.x.ptr() as *const f64,
                            arrays.y.ptr() as *const f64,
                            per_array,
                        )
                    }
                }
            })?;
            let samples: Vec<f64> = t.samples.iter().map(|ns| one as f64 / ns).collect();
            let params = params! {
                "size" => per_array * kernel.arrays(),
                "kernel" => kernel.name(),
                "stores" => Stores::Plain.name(),
                "cpu" => cx.cpu,
            };
            out.push(judged(
                me.id,
                params,
                "bandwidth",
                Unit::GBps,
                &samples,
                Some(oslab_core::model::join_notes(
                    format!("{} passes per sample; STREAM byte counting", t.batch),
                    t.note.clone(),
                )),
                Judge::Median,
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_os::topology::write_fake_sysfs;

    #[test]
    fn threads_fill_cores_before_smt_siblings() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        write_fake_sysfs(dir, 2, 2, 2, 1).unwrap();
        let topo = oslab_os::topology::read_from(dir).unwrap();
        let order = thread_order(&topo, &topo.online());
        // 8 cpus: 2 packages x 2 cores x 2 threads. First one thread per core, packages alternating.
        let first: Vec<_> = order[..4].iter().map(|&c| topo.cpu(c).unwrap()).collect();
        assert!(
            first
                .iter()
                .all(|c| c.smt_siblings.iter().all(|s| s >= c.id)),
            "{order:?}"
        );
        assert_ne!(first[0].package, first[1].package, "{order:?}");
        assert_eq!(order.len(), 8);
    }

    #[test]
    fn thread_counts_double_then_cover_cores_and_smt() {
        assert_eq!(thread_counts(6, 12), [1, 2, 4, 6, 12]);
        assert_eq!(thread_counts(1, 1), [1]);
        assert_eq!(thread_counts(2, 2), [1, 2]);
    }
}
