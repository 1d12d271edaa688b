//! Load-to-use latency over working-set size, by dependent pointer chasing.
//!
//! A chain of pointers, one element per cache line at a random offset inside it, is walked with
//! `p = *p`: every load depends on the previous one, so the time per load is the latency of the
//! level the working set lives in. Three chain orders:
//! - `random`: one Sattolo cycle over every line of the buffer (defeats prefetchers; large sets
//!   add page walks, TLB misses included);
//! - `chunk`: random within chunks of [`TLB_CHUNK`] bytes, chunks in order (cache/DRAM latency
//!   with few TLB misses, so the difference to `random` is the TLB's share);
//! - `sequential`: lines in address order (what prefetchers are built for).
//!
//! Pages are 4 KiB (MADV_NOHUGEPAGE) so the TLB share is the same on every machine; the page size
//! actually used is recorded. Points that break monotonicity (a larger working set read faster)
//! are measured again before anything is derived from the curve.
//!
//! The `chunk` sweep reports the cache levels its plateaus show ([`crate::levels`]) beside the
//! sizes sysfs claims, and the memory level's *idle latency* the way Intel MLC and multichase
//! measure it, with the prefetchers defeated: one element per 256 bytes, so consecutive elements
//! never share a 128-byte pair (the adjacent-line prefetcher fetches the pair's other line, which
//! a one-per-line chain would use later) and the order is random within 256 KiB chunks, chunks in
//! random order (no stride for the streamers to follow, few TLB misses). The `random` sweep
//! reports the TLB reach: the last size at which it still reads like a `chunk` chain of the same
//! size timed interleaved with it.

use crate::buffer::{Buffer, Pages};
use crate::levels;
use crate::probe::{Context, Probe, ProbeError};
use oslab_core::catalog::{self};

use oslab_core::model::{Cause, Measurement, Status, Unit};
use oslab_core::params;
use oslab_core::stats::{SplitMix64, Summary};

/// The latency probes.
pub const PROBES: &[Probe] = &[
    Probe {
        entry: &catalog::MEMORY_LATENCY_CHUNK,
        needs: &[],
        cost: 15.0,
        plan: None,
        run: |cx, me| sweep(cx, me.id, Order::Chunk),
    },
    Probe {
        entry: &catalog::MEMORY_LATENCY_RANDOM,
        needs: &[],
        cost: 15.0,
        plan: None,
        run: |cx, me| sweep(cx, me.id, Order::Random),
    },
    Probe {
        entry: &catalog::MEMORY_LATENCY_SEQUENTIAL,
        needs: &[],
        cost: 10.0,
        plan: None,
        run: |cx, me| sweep(cx, me.id, Order::Sequential),
    },
];

/// Chunk size of the `chunk` order: 64 pages of 4 KiB, the reach of a typical first-level data TLB.
pub const TLB_CHUNK: usize = 256 << 10;

const LINE: usize = 64;

/// Element spacing of the idle-latency chain: two 128-byte pairs, so no two elements share one.
pub const IDLE_SPACING: usize = 256;

/// Share of the suite's per-measurement budget one point of a latency sweep gets: a dependent
/// chase is steady, and a sweep has dozens of points.
const POINT_BUDGET: f64 = 0.25;

/// A point this much slower than the next larger working set is measured again.
const NON_MONOTONE: f64 = 1.10;

/// The random curve is this much above the chunked one once the TLB no longer covers the set.
const TLB_RISE: f64 = 1.15;

/// Largest working set at which the TLB reach is looked for: beyond every first-level data TLB
/// (a few hundred 4 KiB pages; second-level ones a few thousand).
const TLB_SEARCH_MAX: usize = 16 << 20;

/// How the chain visits the lines.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Order {
    /// One random cycle over all lines.
    Random,
    /// Random within TLB-reach chunks, chunks in order.
    Chunk,
    /// Address order.
    Sequential,
}

impl Order {
    fn name(self) -> &'static str {
        match self {
            Order::Random => "random",
            Order::Chunk => "chunk",
            Order::Sequential => "sequential",
        }
    }
}

/// A pointer chain over its own buffer, with a cursor that only ever points into it.
pub struct Chain {
    buf: Buffer,
    cursor: *const usize,
    /// [`STARTS`] slots evenly spaced along the cycle, for parallel chases.
    starts: Vec<*const usize>,
}

/// Positions on one chain, for [`Chain::walk_parallel`]; they cannot outlive it.
pub struct Cursors<'a, const K: usize>(
    pub(crate) [*const usize; K],
    std::marker::PhantomData<&'a Chain>,
);

/// Evenly spaced starting points kept per chain: parallel chases use 1, 2, 4, 8 or 16 of them.
pub const STARTS: usize = 16;

impl Chain {
    /// Maps `size` bytes and links one element per line in `order`. Each element sits at a random
    /// 8-byte offset inside its line, so the chain does not favour one cache bank or set.
    pub fn new(size: usize, order: Order, pages: Pages, seed: u64) -> Result<Chain, ProbeError> {
        Chain::in_buffer(Buffer::new(size, pages)?, order, seed)
    }

    /// Links a chain in `buf` (first touch happens here, so bind the buffer before).
    pub fn in_buffer(buf: Buffer, order: Order, seed: u64) -> Result<Chain, ProbeError> {
        Chain::spaced(buf, order, LINE, seed)
    }

    /// Links one element per `spacing` bytes (a multiple of the line) of `buf` in `order`, each at
    /// a random line of its block and a random 8-byte offset in that line. With a spacing above the
    /// line, the chunks of the `Chunk` order are visited in random order too.
    pub fn spaced(
        buf: Buffer,
        order: Order,
        spacing: usize,
        seed: u64,
    ) -> Result<Chain, ProbeError> {
        let spacing = spacing.max(LINE) / LINE * LINE;
        let elements = (buf.len() / spacing).max(1);
        let mut rng = SplitMix64(seed);
        let mut visit: Vec<usize> = try_collect(elements, 0..elements)?;
        match order {
            Order::Sequential => {}
            Order::Random => sattolo(&mut visit, &mut rng),
            Order::Chunk => {
                let per_chunk = (TLB_CHUNK / spacing).max(1);
                for chunk in visit.chunks_mut(per_chunk) {
                    shuffle(chunk, &mut rng);
                }
                if spacing > LINE {
                    // The chunks in random order: shuffle their starts, then copy them out.
                    let n = visit.len().div_ceil(per_chunk);
                    let mut order: Vec<usize> = try_collect(n, 0..n)?;
                    shuffle(&mut order, &mut rng);
                    let copied = order.iter().flat_map(|&c| {
                        visit[c * per_chunk..((c + 1) * per_chunk).min(visit.len())]
                            .iter()
                            .copied()
                    });
                    visit = try_collect(visit.len(), copied)?;
                }
            }
        }
        let base = buf.ptr() as usize;
        // In place: the element numbers become their addresses (no second list of that size).
        for e in visit.iter_mut() {
            *e = base + *e * spacing + rng.below(spacing / LINE) * LINE + rng.below(LINE / 8) * 8;
        }
        Ok(Chain::link(buf, &visit))
    }

    /// Links one element every `stride` bytes of `buf`, in address order (the classic size x
    /// stride table). Strides below 8 bytes are raised to 8.
    pub fn strided(buf: Buffer, stride: usize) -> Result<Chain, ProbeError> {
        let stride = stride.max(8);
        let base = buf.ptr() as usize;
        let n = (buf.len() / stride).max(1);
        let slots = try_collect(n, (0..n).map(|i| base + i * stride))?;
        Ok(Chain::link(buf, &slots))
    }

    /// Writes the cycle `slots[0] -> slots[1] -> ... -> slots[0]` into the buffer.
    fn link(buf: Buffer, slots: &[usize]) -> Chain {
        for i in 0..slots.len() {
            // SAFETY: every slot is an aligned usize inside the mapping.
            unsafe { *(slots[i] as *mut usize) = slots[(i + 1) % slots.len()] };
        }
        let starts = (0..STARTS)
            .map(|k| slots[k * slots.len() / STARTS] as *const usize)
            .collect();
        Chain {
            buf,
            cursor: slots[0] as *const usize,
            starts,
        }
    }

    /// `K` cursors evenly spaced on the cycle (K divides [`STARTS`]).
    pub fn cursors<const K: usize>(&self) -> Cursors<'_, K> {
        Cursors(
            std::array::from_fn(|k| self.starts[k * STARTS / K]),
            std::marker::PhantomData,
        )
    }

    /// Follows `K` independent cursors `n` steps each. Their loads can overlap: this is what
    /// memory-level parallelism measures.
    pub fn walk_parallel<const K: usize>(&self, cursors: &mut Cursors<'_, K>, n: u64) {
        for _ in 0..n {
            for p in cursors.0.iter_mut() {
                // SAFETY: cursors come from `cursors` of this chain and follow its links.
                *p = unsafe { std::ptr::read_volatile(*p) } as *const usize;
            }
        }
    }

    /// Gives the buffer back (to link another chain in it).
    pub fn into_buffer(self) -> Buffer {
        self.buf
    }

    /// The buffer the chain lives in.
    pub fn buffer(&self) -> &Buffer {
        &self.buf
    }

    /// Follows the chain `n` times.
    pub fn walk(&mut self, n: u64) {
        // SAFETY: the cursor starts at a slot of our buffer and every slot links to another.
        self.cursor = unsafe { chase(self.cursor, n) };
    }

    /// Offset of the cursor from the start of the buffer.
    pub fn position(&self) -> usize {
        self.cursor as usize - self.buf.ptr() as usize
    }
}

/// Follows the chain `n` times from `p`; returns where it stopped.
///
/// # Safety
/// `p` must point at a slot of a live chain.
#[inline(never)]
unsafe fn chase(mut p: *const usize, n: u64) -> *const usize {
    for _ in 0..n {
        // SAFETY: by the contract, p points at a chain slot inside a live mapping.
        p = unsafe { std::ptr::read_volatile(p) } as *const usize;
    }
    p
}

/// Sattolo's algorithm: a uniformly random permutation that is a single cycle.
fn sattolo(v: &mut [usize], rng: &mut SplitMix64) {
    for i in (1..v.len()).rev() {
        let j = rng.below(i);
        v.swap(i, j);
    }
}

/// Fisher-Yates shuffle.
fn shuffle<T>(v: &mut [T], rng: &mut SplitMix64) {
    for i in (1..v.len()).rev() {
        let j = rng.below(i + 1);
        v.swap(i, j);
    }
}

/// `items` (`n` of them) in a vector, or a probe failure when the memory for it cannot be had: a
/// vector that cannot grow aborts the process (under `ulimit -v` a chain's index of a large
/// working set ended the whole run).
pub(crate) fn try_collect<T>(
    n: usize,
    items: impl Iterator<Item = T>,
) -> Result<Vec<T>, ProbeError> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| {
        ProbeError::Failed(format!(
            "cannot allocate {} for the chain's index (a memory limit: ulimit -v?)",
            oslab_core::units::bytes((n * std::mem::size_of::<T>()) as u64)
        ))
    })?;
    v.extend(items);
    Ok(v)
}

/// Working-set sizes: powers of two from 4 KiB to `max`, plus points just below and above each
/// cache size so every plateau and step shows.
pub fn sweep_sizes(max: usize, cache_sizes: &[u64]) -> Vec<usize> {
    let mut sizes: Vec<usize> = (12..=40)
        .map(|b| 1usize << b)
        .take_while(|&s| s <= max)
        .collect();
    for &c in cache_sizes {
        for f in [0.75, 1.5] {
            let s = ((c as f64 * f) as usize / 4096).max(1) * 4096;
            if s >= 4096 && s <= max {
                sizes.push(s);
            }
        }
    }
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

/// Largest working set of a latency sweep: twice the largest claimed cache, at least 256 MiB
/// (memory latency is flat well before), within the memory budget.
fn sweep_max(cx: &Context) -> usize {
    let llc = cx.cache_sizes().into_iter().max().unwrap_or(0) as usize;
    let wanted = (2 * llc).max(256 << 20);
    cx.memory_budget()
        .min(1 << (usize::BITS - 1 - wanted.leading_zeros()))
}

fn sweep(cx: &Context, id: &str, order: Order) -> Result<Vec<Measurement>, ProbeError> {
    let max = sweep_max(cx);
    let caches = cx.cache_sizes();
    let harness = cx.harness.scaled(POINT_BUDGET);
    let point = |size: usize| -> Result<Measurement, ProbeError> {
        let mut chain = Chain::new(size, order, Pages::Small, size as u64)?;
        // A walk so caches hold what fits (linking already touched every page); bounded, as
        // beyond a million lines nothing fits anyway.
        chain.walk((size / LINE).min(1 << 20) as u64);
        let t = harness.raw(&mut |n| chain.walk(n))?;
        let params = params! {
            "size" => size,
            "order" => order.name(),
            "cpu" => cx.cpu,
        };
        Ok(cx
            .measurement(id, params, "per_load", &t)
            .found("pages", chain.buffer().pages_used()))
    };
    let mut out = sweep_sizes(max, &caches)
        .into_iter()
        .map(point)
        .collect::<Result<Vec<_>, _>>()?;
    remeasure_non_monotone(&mut out, point)?;
    match order {
        // Few TLB misses in this order, so its steps are the caches'.
        Order::Chunk => {
            let levels = detected_levels(cx, id, &out);
            out.extend(levels);
            out.push(idle_latency(cx, id)?);
        }
        Order::Random => out.extend(tlb_reach(cx, id)?),
        Order::Sequential => {}
    }
    Ok(out)
}

/// (size, median) of the measured points of a curve.
fn points(curve: &[Measurement]) -> Vec<(usize, f64)> {
    curve
        .iter()
        .filter(|m| m.status.has_value() && m.metric == "per_load")
        .filter_map(|m| {
            Some((
                m.params["size"].as_u64()? as usize,
                m.summary.as_ref()?.median,
            ))
        })
        .collect()
}

/// Measures again (up to twice) every point slower than the next larger working set by more than
/// [`NON_MONOTONE`]: noise only ever adds time, so the faster of the attempts is kept.
fn remeasure_non_monotone(
    curve: &mut [Measurement],
    point: impl Fn(usize) -> Result<Measurement, ProbeError>,
) -> Result<(), ProbeError> {
    let median = |m: &Measurement| m.summary.as_ref().map_or(f64::NAN, |s| s.median);
    for attempt in 2..=3 {
        let suspects: Vec<usize> = (0..curve.len().saturating_sub(1))
            .filter(|&i| median(&curve[i]) > NON_MONOTONE * median(&curve[i + 1]))
            .collect();
        if suspects.is_empty() {
            break;
        }
        for i in suspects {
            let size = curve[i].params["size"].as_u64().unwrap_or(0) as usize;
            let mut again = point(size)?;
            let faster = median(&again).total_cmp(&median(&curve[i])).is_lt();
            if !faster {
                again = curve[i].clone();
            }
            again.attempts = attempt;
            again.note_before(format!(
                "measured {attempt} times: it read slower than the next larger working set; the fastest attempt is kept"
            ));
            curve[i] = again;
        }
    }
    Ok(())
}

/// A plateau whose points differ by more than this factor is no flat level: its latency depends
/// on where in it one measures (a --quick run's "L3" read 15.6 ns from points of 12 to 26 ns and
/// was `ok`).
const FLAT: f64 = 1.5;

/// The cache levels the curve shows, each with its size range and latency, beside the size sysfs
/// claims for the level it matches.
fn detected_levels(cx: &Context, id: &str, curve: &[Measurement]) -> Vec<Measurement> {
    let claimed = cx.topology.caches_of(cx.cpu);
    let sizes: Vec<u64> = claimed.iter().map(|c| c.size).collect();
    let found = levels::without_cache_edges(levels::plateaus(&points(curve)), &sizes);
    let caches = found.iter().filter(|l| l.first_out.is_some());
    let matched = match_claims(caches.clone(), &sizes);
    let mut out = Vec::new();
    for (k, level) in found.iter().enumerate() {
        let Some(first_out) = level.first_out else {
            continue; // the memory level: its latency is the idle chase's
        };
        let claim = matched[k].map(|j| claimed[j]);
        // A plateau no claimed cache matches is named by its place ("level 4"): sysfs may hide a
        // level (a VM's host cache) or a plateau may be a TLB's reach, not a cache.
        let name = claim.map_or_else(|| format!("level {}", k + 1), |c| format!("L{}", c.level));
        let p = params! {"level" => name, "order" => "chunk", "cpu" => cx.cpu};
        let range = format!(
            "plateau from {} to {} ({} points); {} is the first size off it",
            oslab_core::units::bytes(level.first_in as u64),
            oslab_core::units::bytes(level.last_in as u64),
            level.points.len(),
            oslab_core::units::bytes(first_out as u64)
        );
        let what = match claim {
            Some(c) => format!(
                "{range}; {}",
                claim_note(c.level, c.size, level.last_in, first_out)
            ),
            None => format!("{range}; sysfs reports no cache level that matches it"),
        };
        let mut size = Measurement::not_taken(id, p.clone(), "level_size", Unit::Bytes, Status::Ok);
        size.summary = Summary::new(&[level.last_in as f64]);
        size.note = Some(what.clone());
        if let Some(c) = claim {
            size = size.found("claimed_bytes", c.size);
        }
        out.push(size);
        let mut lat = Measurement::not_taken(id, p, "level_latency", Unit::Ns, Status::Ok);
        lat.summary = Summary::new(&level.points);
        lat.cycles = lat
            .summary
            .as_ref()
            .and_then(|s| Some(s.median * cx.harness.clock.cycles_per_ns()?));
        lat.note = Some(format!("median of the plateau's points; {what}"));
        let (lo, hi) = level
            .points
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
        // Judged as every figure is, on the interval shown (the points' spread about their
        // median): an L2 of 4.5 ns -0.2/+30% read `ok` where a plateau within 1.5x was flat.
        let wide = lat.summary.as_ref().is_some_and(|s| {
            s.is_noisy_at_scale(oslab_core::stats::NoiseRule::default(), s.median.abs())
        });
        if hi > FLAT * lo {
            lat.status = Status::Noisy(Cause::Spread);
            lat.note_before(format!(
                "noisy: the plateau's points range from {lo:.1} to {hi:.1} ns ({:.1}x): no flat level (the cache's share of this cpu changed during the sweep, or the level is a slope)",
                hi / lo
            ));
        } else if wide {
            lat.status = Status::Noisy(Cause::Spread);
            lat.note_before(format!(
                "noisy: the plateau's points ({lo:.2} to {hi:.2} ns) spread wider than 10% of their median: the level's latency depends on where in it one measures"
            ));
        }
        out.push(lat);
    }
    out
}

/// For each detected cache level (in size order), the index of the claimed size it matches: the
/// nearest on a log scale to where the plateau ends, never reusing or going back. Levels of
/// `found` beyond the claims match nothing.
fn match_claims<'a>(
    found: impl Iterator<Item = &'a levels::Level>,
    claimed: &[u64],
) -> Vec<Option<usize>> {
    let mut next = 0;
    found
        .map(|l| {
            let edge = ((l.last_in as f64) * l.first_out.unwrap_or(l.last_in) as f64).sqrt();
            let j = (next..claimed.len()).min_by(|&a, &b| {
                let d = |j: usize| ((claimed[j] as f64) / edge).ln().abs();
                d(a).total_cmp(&d(b))
            })?;
            next = j + 1;
            Some(j)
        })
        .collect()
}

/// How the plateau's end compares with the claimed size, in words.
fn claim_note(level: u8, claimed: u64, last_in: usize, first_out: usize) -> String {
    let c = claimed as usize;
    let claim = format!(
        "sysfs claims L{level} = {}",
        oslab_core::units::bytes(claimed)
    );
    if c >= last_in / 2 && c <= first_out * 2 {
        format!("{claim}: agrees")
    } else if c > first_out {
        format!(
            "{claim}, but latency rises from {}: only part of it serves this cpu (a virtual machine's share of a shared cache is often far smaller than the cache it reports)",
            oslab_core::units::bytes(first_out as u64)
        )
    } else {
        format!(
            "{claim}, but the plateau goes on to {}: the next level is about as fast, or a larger cache serves this cpu",
            oslab_core::units::bytes(last_in as u64)
        )
    }
}

/// The working set of the idle-latency chase (and of the loaded one, which must chase the same
/// memory to be compared with it): 16x the last-level cache sysfs claims, at least 256 MiB, at
/// most 1 GiB (256 MiB with `--quick`: the set is built in a second), within half the memory
/// available.
pub fn idle_chase_bytes(cx: &Context) -> usize {
    let llc = cx.cache_sizes().into_iter().max().unwrap_or(0) as usize;
    let available = crate::buffer::available_memory().map_or(usize::MAX, |a| a as usize / 2);
    let most = if cx.harness.config.pace.is_quick() {
        256 << 20
    } else {
        1 << 30
    };
    (16 * llc)
        .clamp(256 << 20, most)
        .min(available)
        .max(16 << 20)
}

/// Idle memory latency with the prefetchers defeated (see the module docs), over a working set
/// far beyond the last-level cache: 16 times the largest claimed cache, at least 256 MiB and at
/// most 1 GiB (256 MiB with `--quick`), within half the memory available ([`idle_chase_bytes`]).
fn idle_latency(cx: &Context, id: &str) -> Result<Measurement, ProbeError> {
    let size = idle_chase_bytes(cx);
    let mut chain = Chain::spaced(
        crate::buffer::Buffer::new(size, Pages::Small)?,
        Order::Chunk,
        IDLE_SPACING,
        size as u64,
    )?;
    chain.walk((size / IDLE_SPACING).min(1 << 18) as u64);
    let t = cx
        .harness
        .scaled(2.0 * POINT_BUDGET)
        .raw(&mut |n| chain.walk(n))?;
    let p = params! {"level" => "memory", "order" => "chunk", "spacing" => IDLE_SPACING, "size" => size, "cpu" => cx.cpu};
    let mut m = cx.measurement(id, p, "level_latency", &t);
    let why = "idle latency with prefetchers defeated (as Intel MLC and multichase measure it): one element per 256 B, so no two share a 128-byte pair and the adjacent-line prefetcher fetches nothing the chain uses; random order within 256 KiB chunks and of the chunks, so the streamers find no stride and the TLB rarely misses";
    m.note_before(why);
    Ok(m)
}

/// Where the fully random chain leaves the chunked one: the reach of the first-level data TLB
/// (Calibrator's method). At each size from one chunk up, both chains are timed interleaved,
/// round by round in one burst, so the host's drift between two sweeps never enters the ratio.
/// None when the chains never part within the sizes the memory budget allows.
fn tlb_reach(cx: &Context, id: &str) -> Result<Option<Measurement>, ProbeError> {
    let limit = TLB_SEARCH_MAX.min(cx.memory_budget() / 2);
    let harness = cx.harness.scaled(POINT_BUDGET);
    let (mut chunk, mut random) = (Vec::new(), Vec::new());
    // Quarter octaves, in whole pages: a TLB's entries are rarely a power of two (96, 1536).
    let sizes = (0..)
        .map(|q| (TLB_CHUNK as f64 * 2f64.powf(q as f64 / 4.0) / 4096.0).round() as usize * 4096)
        .take_while(|&s| s <= limit);
    for size in sizes {
        let mut r = Chain::new(size, Order::Random, Pages::Small, size as u64)?;
        let mut c = Chain::new(size, Order::Chunk, Pages::Small, size as u64)?;
        let warm = (size / LINE).min(1 << 20) as u64;
        r.walk(warm);
        c.walk(warm);
        let t = harness.raw_interleaved(&mut [&mut |n| r.walk(n), &mut |n| c.walk(n)])?;
        if let (Some(tr), Some(tc)) = (t[0].median(), t[1].median()) {
            random.push((size, tr));
            chunk.push((size, tc));
        }
        // Found once a later size confirms the departure: larger sets add nothing to it.
        if levels::departure(&chunk, &random, TLB_RISE).is_some_and(|(_, off)| off < size) {
            break;
        }
    }
    let Some((last, first_off)) = levels::departure(&chunk, &random, TLB_RISE) else {
        return Ok(None);
    };
    let ratios: Vec<String> = random
        .iter()
        .zip(&chunk)
        .map(|(r, c)| format!("{} {:.2}", oslab_core::units::bytes(r.0 as u64), r.1 / c.1))
        .collect();
    let mut m = Measurement::not_taken(
        id,
        params! {"order" => "random", "pages" => "4k", "cpu" => cx.cpu},
        "tlb_reach",
        Unit::Bytes,
        Status::Ok,
    );
    m.summary = Summary::new(&[last as f64]);
    // The reach lies between the two sizes (a quarter octave apart): shown as that interval,
    // so two runs that flip between neighbouring sizes are seen to agree.
    let mut m = m.found(
        "departs",
        format!(
            "between {} and {}",
            oslab_core::units::bytes(last as u64),
            oslab_core::units::bytes(first_off as u64)
        ),
    );
    m.note = Some(format!(
        "the random chain reads like the chunked one up to {} and over {:.0}% slower from {} on: beyond that the first-level data TLB misses (about {} pages of 4 KiB covered); random / chunked, timed interleaved at each size: {}",
        oslab_core::units::bytes(last as u64),
        100.0 * (TLB_RISE - 1.0),
        oslab_core::units::bytes(first_off as u64),
        last / 4096,
        ratios.join(", ")
    ));
    Ok(Some(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cycle_len(chain: &mut Chain) -> usize {
        let start = chain.position();
        let mut n = 0;
        loop {
            chain.walk(1);
            n += 1;
            if chain.position() == start {
                return n;
            }
        }
    }

    #[test]
    fn every_order_is_one_cycle_over_every_line() {
        for order in [Order::Random, Order::Chunk, Order::Sequential] {
            let mut chain = Chain::new(1 << 20, order, Pages::Small, 42).unwrap();
            assert_eq!(cycle_len(&mut chain), (1 << 20) / LINE, "{order:?}");
        }
    }

    #[test]
    fn chunk_order_stays_inside_its_chunk() {
        let mut chain = Chain::new(4 * TLB_CHUNK, Order::Chunk, Pages::Small, 7).unwrap();
        let mut chunk_changes = 0;
        let mut last = chain.position() / TLB_CHUNK;
        for _ in 0..(4 * TLB_CHUNK / LINE) {
            chain.walk(1);
            let c = chain.position() / TLB_CHUNK;
            chunk_changes += usize::from(c != last);
            last = c;
        }
        assert_eq!(
            chunk_changes, 4,
            "the walk should enter each chunk once per cycle"
        );
    }

    #[test]
    fn sizes_cover_the_range_and_the_cache_edges() {
        let s = sweep_sizes(1 << 30, &[48 << 10, 2 << 20]);
        assert_eq!(s[0], 4096);
        assert_eq!(*s.last().unwrap(), 1 << 30);
        assert!(s.contains(&(36 << 10)) && s.contains(&(3 << 20)));
        assert!(s.windows(2).all(|w| w[0] < w[1]));
    }
}
