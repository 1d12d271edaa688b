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
//! actually used is recorded. The `chunk` sweep also reports the cache levels its plateaus show
//! ([`crate::levels`]) beside the sizes sysfs claims.

use crate::buffer::{Buffer, Pages};
use crate::levels;
use crate::probe::{Context, Probe, ProbeError};
use oslab_core::model::{Measurement, Prediction, Status, Unit};
use oslab_core::params;
use oslab_core::stats::{SplitMix64, Summary};

/// The latency probes.
pub const PROBES: &[Probe] = &[
    Probe {
        id: "memory.latency.random",
        about: "load-to-use latency vs working-set size, fully random chain (TLB misses included)",
        unit: Unit::Ns,
        needs: &[],
        run: |cx| sweep(cx, "memory.latency.random", Order::Random),
    },
    Probe {
        id: "memory.latency.chunk",
        about:
            "load-to-use latency vs working-set size, random within 256 KiB chunks (few TLB misses)",
        unit: Unit::Ns,
        needs: &[],
        run: |cx| sweep(cx, "memory.latency.chunk", Order::Chunk),
    },
    Probe {
        id: "memory.latency.sequential",
        about:
            "load-to-use latency vs working-set size, lines in address order (prefetch-friendly)",
        unit: Unit::Ns,
        needs: &[],
        run: |cx| sweep(cx, "memory.latency.sequential", Order::Sequential),
    },
];

/// Chunk size of the `chunk` order: 64 pages of 4 KiB, the reach of a typical first-level data TLB.
pub const TLB_CHUNK: usize = 256 << 10;

const LINE: usize = 64;

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
        Ok(Chain::in_buffer(Buffer::new(size, pages)?, order, seed))
    }

    /// Links a chain in `buf` (first touch happens here, so bind the buffer before).
    pub fn in_buffer(buf: Buffer, order: Order, seed: u64) -> Chain {
        let lines = buf.len() / LINE;
        let mut rng = SplitMix64(seed);
        let mut visit: Vec<usize> = (0..lines).collect();
        match order {
            Order::Sequential => {}
            Order::Random => sattolo(&mut visit, &mut rng),
            Order::Chunk => {
                for chunk in visit.chunks_mut((TLB_CHUNK / LINE).max(1)) {
                    shuffle(chunk, &mut rng);
                }
            }
        }
        let base = buf.ptr() as usize;
        let slots: Vec<usize> = visit
            .iter()
            .map(|&l| base + l * LINE + rng.below(LINE / 8) * 8)
            .collect();
        Chain::link(buf, &slots)
    }

    /// Links one element every `stride` bytes of `buf`, in address order (the seed's size x
    /// stride table). Strides below 8 bytes are raised to 8.
    pub fn strided(buf: Buffer, stride: usize) -> Chain {
        let stride = stride.max(8);
        let base = buf.ptr() as usize;
        let slots: Vec<usize> = (0..(buf.len() / stride).max(1))
            .map(|i| base + i * stride)
            .collect();
        Chain::link(buf, &slots)
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
fn shuffle(v: &mut [usize], rng: &mut SplitMix64) {
    for i in (1..v.len()).rev() {
        let j = rng.below(i + 1);
        v.swap(i, j);
    }
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

fn sweep(cx: &Context, id: &str, order: Order) -> Result<Vec<Measurement>, ProbeError> {
    let max = cx.memory_budget();
    let caches = cx.cache_sizes();
    let mut out = Vec::new();
    for size in sweep_sizes(max, &caches) {
        let mut chain = Chain::new(size, order, Pages::Small, size as u64)?;
        // One full walk (bounded) so pages are present and caches hold what fits.
        chain.walk((size / LINE).min(1 << 22) as u64);
        let t = cx.harness.raw(&mut |n| chain.walk(n))?;
        let params = params! {
            "size" => size,
            "order" => order.name(),
            "pages" => chain.buffer().pages_used(),
            "cpu" => cx.cpu,
        };
        out.push(cx.measurement(id, params, "per_load", &t));
    }
    if order == Order::Chunk {
        // Few TLB misses in this order, so its steps are the caches'.
        out.extend(detected_levels(cx, id, &out));
    }
    Ok(out)
}

/// The cache levels the curve shows, each beside the size sysfs claims for that level.
fn detected_levels(cx: &Context, id: &str, curve: &[Measurement]) -> Vec<Measurement> {
    let points: Vec<(usize, f64)> = curve
        .iter()
        .filter(|m| m.status.has_value())
        .filter_map(|m| {
            Some((
                m.params["size"].as_u64()? as usize,
                m.summary.as_ref()?.median,
            ))
        })
        .collect();
    let claimed = cx.topology.caches_of(cx.cpu);
    let mut out = Vec::new();
    for (k, level) in levels::plateaus(&points).iter().enumerate() {
        let name = match level.first_out {
            None => "memory".to_string(),
            Some(_) => format!("{}", k + 1),
        };
        let claim = claimed.get(k).filter(|_| level.first_out.is_some());
        let mut p = params! {"level" => name, "order" => "chunk", "cpu" => cx.cpu};
        if let Some(c) = claim {
            p.insert("claimed_bytes".into(), serde_json::json!(c.size));
        }
        let what = match (level.first_out, claim) {
            (Some(out), Some(c)) => format!(
                "plateau of {} points; {} is the last size on it, {} the first beyond; sysfs claims L{} = {} bytes",
                level.points.len(), level.last_in, out, c.level, c.size
            ),
            (Some(out), None) => format!(
                "plateau of {} points; {} is the last size on it, {} the first beyond; sysfs claims no such level",
                level.points.len(), level.last_in, out
            ),
            (None, _) => format!("last plateau ({} points): memory", level.points.len()),
        };
        if level.first_out.is_some() {
            let mut size =
                Measurement::not_taken(id, p.clone(), "level_size", Unit::Bytes, Status::Ok);
            size.summary = Summary::new(&[level.last_in as f64]);
            size.prediction = claim.map(|c| Prediction {
                value: c.size as f64,
                model: format!("the L{} size sysfs reports", c.level),
                inputs: params! {"claimed_bytes" => c.size, "level" => c.level},
            });
            size.note = Some(what.clone());
            out.push(size);
        }
        let mut lat = Measurement::not_taken(id, p, "level_latency", Unit::Ns, Status::Ok);
        lat.summary = Summary::new(&level.points);
        lat.cycles = lat
            .summary
            .as_ref()
            .and_then(|s| Some(s.median * cx.harness.clock.cycles_per_ns()?));
        lat.note = Some(format!("median of the plateau's per-size medians; {what}"));
        out.push(lat);
    }
    out
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
