//! Loaded latency, the bandwidth-latency curve of Intel MLC: the idle-latency chase (prefetchers
//! defeated, see [`crate::memory`]) on the measuring cpu while every other cpu we may use streams
//! through memory of its own, pausing between 4 KiB blocks. The pause falls from "no loaders"
//! (the idle point) to none at all, so the traffic rises; at each step the chase's latency and the
//! loaders' bandwidth are measured over the same interval. Two kinds of traffic: reads only, and
//! reads and writes 1:1 (plain stores).

use crate::buffer::{Buffer, Pages};
use crate::kernels::{self, Kernel, Stores, MIX_BLOCK};
use crate::memory::{Chain, Order, IDLE_SPACING};
use crate::probe::{Context, Need, Plan, Probe, ProbeError};
use oslab_core::catalog::{self, Entry};
use oslab_core::model::{Measurement, Status, Unit};
use oslab_core::{params, CpuSet, Summary};
use oslab_os::affinity::set_affinity;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The probe.
pub const PROBES: &[Probe] = &[Probe {
    entry: &catalog::MEMORY_LATENCY_LOADED,
    needs: &[Need::PeerCpu],
    cost: 10.0,
    plan: Some(plan),
    run,
}];

/// Pauses between a loader's blocks, in iterations of an empty loop (about a cycle each),
/// lightest load first; `None` is the idle point (no loaders).
const PAUSES: [Option<u64>; 5] = [None, Some(20_000), Some(2_000), Some(200), Some(0)];
const QUICK_PAUSES: [Option<u64>; 3] = [None, Some(2_000), Some(0)];

/// The traffic the loaders make.
#[derive(Clone, Copy)]
enum Traffic {
    Read,
    Mixed,
}

impl Traffic {
    fn name(self) -> &'static str {
        match self {
            Traffic::Read => "read",
            Traffic::Mixed => "read:write 1:1",
        }
    }

    fn kernel(self) -> Kernel {
        match self {
            Traffic::Read => Kernel::Read,
            Traffic::Mixed => Kernel::Mix {
                reads: 1,
                writes: 1,
            },
        }
    }
}

/// The loaders' pauses, the idle point first.
fn pauses(cx: &Context) -> &'static [Option<u64>] {
    if cx.harness.config.pace.is_quick() {
        &QUICK_PAUSES
    } else {
        &PAUSES
    }
}

fn plan(cx: &Context) -> Plan {
    let loaders = cx.allowed.iter().filter(|&c| c != cx.cpu).count();
    Plan {
        what: format!(
            "a chase on cpu {} while {} {} at {} intensities",
            cx.cpu,
            oslab_core::units::counted(loaders, "other cpu"),
            if loaders == 1 { "streams" } else { "stream" },
            pauses(cx).len() - 1
        ),
        work: 1.0,
    }
}

fn run(cx: &Context, me: &'static Entry) -> Result<Vec<Measurement>, ProbeError> {
    kernels::available()?;
    let loaders: Vec<usize> = cx.allowed.iter().filter(|&c| c != cx.cpu).collect();
    if loaders.is_empty() {
        return Err(ProbeError::Unsupported(
            "needs a second cpu to load memory from".into(),
        ));
    }
    let quick = cx.harness.config.pace.is_quick();
    // The idle chase's memory: loaded latency is compared with idle, so both chase the same
    // working set (a 32 MiB chase read 99 ns loaded beside 140 ns idle from 256 MiB).
    let size = crate::memory::idle_chase_bytes(cx);
    let mut chain = Chain::spaced(
        Buffer::new(size, Pages::Small)?,
        Order::Chunk,
        IDLE_SPACING,
        size as u64,
    )?;
    chain.walk((size / IDLE_SPACING).min(1 << 18) as u64);
    // Each loader streams two buffers of its own, well beyond the caches it could share.
    let loader_bytes = ((cx.memory_budget() / 4 / loaders.len()).clamp(8 << 20, 128 << 20)
        / (2 * MIX_BLOCK))
        * (2 * MIX_BLOCK);
    let traffics: &[Traffic] = if quick {
        &[Traffic::Read]
    } else {
        &[Traffic::Read, Traffic::Mixed]
    };
    let pauses = pauses(cx);
    let harness = cx.harness.scaled(0.5);
    let mut out = Vec::new();
    for &traffic in traffics {
        let points = with_loaders(&loaders, loader_bytes, traffic, |load| {
            pauses
                .iter()
                .map(|&pause| {
                    load.set(pause);
                    let (before, t) = (load.moved(), Instant::now());
                    let timing = harness.raw(&mut |n| chain.walk(n))?;
                    let gbps =
                        (load.moved() - before) as f64 / t.elapsed().as_nanos().max(1) as f64;
                    Ok((pause, timing, gbps))
                })
                .collect::<Result<Vec<_>, ProbeError>>()
        })?;
        for (pause, timing, gbps) in points {
            let p = params! {
                "traffic" => traffic.name(),
                "pause" => pause.map_or("idle".to_string(), |p| p.to_string()),
                "loaders" => if pause.is_some() { loaders.len() } else { 0 },
                "size" => size,
                "cpu" => cx.cpu,
            };
            out.push(cx.measurement(me.id, p.clone(), "per_load", &timing));
            if pause.is_none() {
                continue; // the idle point: nothing loads memory
            }
            let mut bw = Measurement::not_taken(me.id, p, "load_bandwidth", Unit::GBps, Status::Ok);
            bw.summary = Summary::new(&[gbps]);
            bw.note = Some(format!(
                "what {} moved while the chase was timed, STREAM counting",
                oslab_core::units::counted(loaders.len(), "loader thread")
            ));
            out.push(bw);
        }
    }
    Ok(out)
}

/// The loaders' controls: how long they pause between blocks (None: they wait), and what they
/// have moved so far.
struct Load<'a> {
    pause: &'a AtomicU64,
    moved: &'a AtomicU64,
}

/// `pause` value meaning "do not load".
const IDLE: u64 = u64::MAX;

impl Load<'_> {
    /// Sets the pause (None: the loaders wait) and lets them settle into it.
    fn set(&self, pause: Option<u64>) {
        self.pause.store(pause.unwrap_or(IDLE), Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(5));
    }

    fn moved(&self) -> u64 {
        self.moved.load(Ordering::Relaxed)
    }
}

/// Runs `f` with a loader thread on each of `cpus`, each streaming `traffic` through buffers of
/// its own (first touched on its cpu) as the [`Load`] says; the loaders stop when `f` returns.
fn with_loaders<T>(
    cpus: &[usize],
    bytes: usize,
    traffic: Traffic,
    f: impl FnOnce(&Load) -> Result<T, ProbeError>,
) -> Result<T, ProbeError> {
    let moved = AtomicU64::new(0);
    let pause = AtomicU64::new(IDLE);
    let stop = AtomicBool::new(false);
    let ready = AtomicU64::new(0);
    std::thread::scope(|s| {
        let (moved, pause, stop, ready) = (&moved, &pause, &stop, &ready);
        for &cpu in cpus {
            s.spawn(move || {
                let placed = set_affinity(0, &CpuSet::single(cpu)).is_ok();
                let buffers = (
                    Buffer::new(bytes, Pages::Default),
                    Buffer::new(bytes, Pages::Default),
                );
                let (Ok(x), Ok(d)) = buffers else {
                    ready.fetch_add(1, Ordering::SeqCst);
                    return;
                };
                // SAFETY: fresh buffers of `bytes`, f64-aligned; first touch places them here.
                unsafe {
                    std::slice::from_raw_parts_mut(x.ptr() as *mut f64, bytes / 8).fill(1.0);
                    std::slice::from_raw_parts_mut(d.ptr() as *mut f64, bytes / 8).fill(0.0);
                }
                ready.fetch_add(1, Ordering::SeqCst);
                let step = 2 * MIX_BLOCK;
                let mut at = 0;
                while placed && !stop.load(Ordering::Relaxed) {
                    let p = pause.load(Ordering::Relaxed);
                    if p == IDLE {
                        std::thread::sleep(Duration::from_micros(200));
                        continue;
                    }
                    // SAFETY: kernels checked available; [at, at + step) lies inside both
                    // page-aligned buffers, so the range is UNIT-aligned.
                    unsafe {
                        kernels::run(
                            traffic.kernel(),
                            Stores::Plain,
                            d.ptr().add(at) as *mut f64,
                            x.ptr().add(at) as *const f64,
                            x.ptr().add(at) as *const f64,
                            step,
                        )
                    };
                    moved.fetch_add(step as u64, Ordering::Relaxed);
                    at = (at + step) % bytes;
                    for i in 0..p {
                        std::hint::black_box(i);
                    }
                }
            });
        }
        // The loaders first touch their buffers before anything is timed.
        while ready.load(Ordering::SeqCst) < cpus.len() as u64 {
            std::thread::sleep(Duration::from_millis(1));
        }
        let result = f(&Load { pause, moved });
        stop.store(true, Ordering::Relaxed);
        result
    })
}
