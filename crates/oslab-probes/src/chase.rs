//! More pointer-chasing views of the memory hierarchy: the size x stride table, the same
//! random chain on 4 KiB, transparent-huge and hugetlb pages, and parallel chases that show how
//! many misses the core keeps in flight (memory-level parallelism).

use crate::buffer::{Buffer, Pages};
use crate::memory::{Chain, Order, IDLE_SPACING};
use crate::probe::{Context, Probe, ProbeError};
use oslab_core::catalog::{self, Entry};
use oslab_core::model::{judged, Judge};
use oslab_core::model::{Measurement, Status, Unit};
use oslab_core::params;

/// The probes.
pub const PROBES: &[Probe] = &[
    Probe {
        entry: &catalog::MEMORY_LATENCY_STRIDE,
        needs: &[],
        cost: 10.0,
        plan: None,
        run: stride_table,
    },
    Probe {
        entry: &catalog::MEMORY_LATENCY_PAGES,
        needs: &[],
        cost: 20.0,
        plan: None,
        run: page_modes,
    },
    Probe {
        entry: &catalog::MEMORY_LATENCY_PARALLEL,
        needs: &[],
        cost: 7.0,
        plan: None,
        run: parallel,
    },
];

/// Strides of the table: a word, a line, two lines (adjacent-line prefetch), a page, and large
/// strides that defeat every prefetcher and touch a new page each time.
pub const STRIDES: [usize; 9] = [
    8,
    64,
    128,
    256,
    4 << 10,
    64 << 10,
    1 << 20,
    4 << 20,
    16 << 20,
];

/// Table sizes: powers of four from 4 KiB up to `max`.
pub fn table_sizes(max: usize) -> Vec<usize> {
    (6..=20)
        .map(|k| 1usize << (2 * k))
        .filter(|&s| s >= 4096 && s <= max)
        .collect()
}

fn stride_table(cx: &Context, me: &'static Entry) -> Result<Vec<Measurement>, ProbeError> {
    let harness = cx.harness.scaled(0.1);
    let max = cx.memory_budget().min(512 << 20);
    let mut out = Vec::new();
    for size in table_sizes(max) {
        let mut buf = Some(Buffer::new(size, Pages::Small)?);
        for stride in STRIDES.into_iter().filter(|&s| size / s >= 2) {
            let mut chain = Chain::strided(buf.take().expect("buffer returned"), stride)?;
            chain.walk((size / stride).min(1 << 20) as u64);
            let t = harness.raw(&mut |n| chain.walk(n))?;
            let p = params! {
                "size" => size,
                "stride" => stride,
                "cpu" => cx.cpu,
            };
            out.push(
                cx.measurement(me.id, p, "per_load", &t)
                    .found("pages", chain.buffer().pages_used()),
            );
            buf = Some(chain.into_buffer());
        }
    }
    Ok(out)
}

fn page_modes(cx: &Context, me: &'static Entry) -> Result<Vec<Measurement>, ProbeError> {
    let harness = cx.harness.scaled(0.5);
    // At most 256 MiB: 4 KiB pages there miss every TLB (65,536 pages against 1,500-3,000
    // second-level entries) while 2 MiB pages fit (128); the 1 GiB chains the memory budget
    // allowed took 5 s of the default suite to link for the same comparison.
    let max = cx.memory_budget().clamp(16 << 20, 256 << 20);
    let mut out = Vec::new();
    for size in [max / 4, max] {
        for pages in [Pages::Small, Pages::Transparent, Pages::Hugetlb] {
            let p = params! {"size" => size, "order" => "random", "asked" => pages.name(), "cpu" => cx.cpu};
            let buf = match Buffer::new(size, pages) {
                Ok(b) => b,
                Err(ProbeError::Unsupported(why)) => {
                    out.push(Measurement::not_taken(
                        me.id,
                        p,
                        "per_load",
                        Unit::Ns,
                        Status::Skipped(why),
                    ));
                    continue;
                }
                Err(e) => return Err(e),
            };
            let mut chain = Chain::in_buffer(buf, Order::Random, size as u64)?;
            // Linking touched every page; a random walk over a set beyond the caches reaches its
            // steady state (caches and TLB missing) within thousands of loads, not a full pass.
            chain.walk((size / 64).min(1 << 18) as u64);
            let t = harness.raw(&mut |n| chain.walk(n))?;
            out.push(
                cx.measurement(me.id, p, "per_load", &t)
                    .found("pages", chain.buffer().pages_used()),
            );
        }
    }
    Ok(out)
}

/// 1 to 16 chases at once over the idle-latency chain itself (the same size, spacing, order and
/// seed), so the one-chase point is the idle latency measured again and the misses in flight
/// are counted against it. (A chain of one element per line read 108-112 ns beside idle latency
/// 144-149: the adjacent-line prefetcher fetched half its misses.)
fn parallel(cx: &Context, me: &'static Entry) -> Result<Vec<Measurement>, ProbeError> {
    let size = crate::memory::idle_chase_bytes(cx);
    let chain = Chain::spaced(
        Buffer::new(size, Pages::Small)?,
        Order::Chunk,
        IDLE_SPACING,
        size as u64,
    )?;
    let harness = cx.harness.scaled(0.5);
    let mut out = Vec::new();
    let mut single = None;
    for k in [1usize, 2, 4, 8, 16] {
        let t = match k {
            1 => chase_k::<1>(&harness, &chain),
            2 => chase_k::<2>(&harness, &chain),
            4 => chase_k::<4>(&harness, &chain),
            8 => chase_k::<8>(&harness, &chain),
            _ => chase_k::<16>(&harness, &chain),
        }?;
        // One iteration advances every cursor once: k loads.
        let t = t.map(|ns| ns / k as f64);
        let p = params! {"size" => size, "order" => "chunk", "spacing" => IDLE_SPACING, "chases" => k, "cpu" => cx.cpu};
        let m = cx.measurement(me.id, p.clone(), "per_load", &t);
        let median = m.summary.as_ref().map(|s| s.median);
        out.push(m);
        let Some(one) = *single.get_or_insert(median) else {
            continue;
        };
        let mlp: Vec<f64> = t.samples.iter().map(|s| one / s).collect();
        out.push(judged(
            me.id,
            p,
            "parallelism",
            Unit::Count,
            &mlp,
            Some(oslab_core::model::join_notes(
                "single-chase latency / time per load with this many chases: misses in flight"
                    .into(),
                t.note.clone(),
            )),
            Judge::Median,
        ));
    }
    Ok(out)
}

fn chase_k<const K: usize>(
    harness: &crate::Harness,
    chain: &Chain,
) -> Result<crate::Timing, ProbeError> {
    let mut cursors = chain.cursors::<K>();
    chain.walk_parallel(&mut cursors, 1 << 14);
    harness.raw(&mut |n| chain.walk_parallel(&mut cursors, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_sizes_are_powers_of_four() {
        assert_eq!(table_sizes(1 << 20), [4096, 16384, 65536, 262144, 1 << 20]);
        assert!(table_sizes(2048).is_empty());
    }

    #[test]
    fn a_strided_chain_visits_every_stride_in_order() {
        let buf = Buffer::new(1 << 16, Pages::Small).unwrap();
        let mut chain = Chain::strided(buf, 4096).unwrap();
        let mut seen = Vec::new();
        for _ in 0..16 {
            seen.push(chain.position());
            chain.walk(1);
        }
        assert_eq!(seen, (0..16).map(|i| i * 4096).collect::<Vec<_>>());
        assert_eq!(chain.position(), 0);
    }

    #[test]
    fn parallel_cursors_start_evenly_spaced_and_stay_on_the_cycle() {
        let chain = Chain::new(1 << 20, Order::Sequential, Pages::Small, 1).unwrap();
        let mut c = chain.cursors::<4>();
        let base = chain.buffer().ptr() as usize;
        let starts: Vec<usize> = c.0.iter().map(|&p| (p as usize - base) / 64).collect();
        assert_eq!(starts, [0, 4096, 8192, 12288]);
        chain.walk_parallel(&mut c, 10);
        let after: Vec<usize> = c.0.iter().map(|&p| (p as usize - base) / 64).collect();
        assert_eq!(after, [10, 4106, 8202, 12298]);
    }
}
