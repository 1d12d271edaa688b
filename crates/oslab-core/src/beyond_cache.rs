//! Whether a bandwidth figure's arrays lie beyond the caches (STREAM's rule: each array at least
//! 4x the last-level cache), judged by the run's own latency curve where it has one. A probe can
//! only ask sysfs, and in a virtual machine sysfs often claims a cache far larger than the one
//! that serves the cpu (480 MiB claimed, memory latency from 16 MiB): 341 MiB arrays were marked
//! "partly the cache's" although the curve showed memory from 16 MiB. The opposite happens too (a
//! guest told of a small cache on a host with a large one), so the curve can mark as well as
//! clear.

use crate::catalog::{id, metric};
use crate::model::Measurement;

/// The context key of a bandwidth figure partly from a cache, and its value.
pub const MARK: &str = "level";
/// See [`MARK`].
pub const PARTLY_CACHE: &str = "working set under 4x the LLC";

/// The latency curve's memory plateau is believed only when it reads at least this share of the
/// idle memory latency (a curve that ended inside a cache is not memory).
const MEMORY_SHARE: f64 = 0.5;

/// What every note on a working set under 4x a cache says.
pub const UNDER: &str = "under 4x the";

/// The note's clause on `what` ("arrays", "chain") under 4x the cache sysfs claims.
pub fn under_claimed(what: &str, bytes: usize, claimed: usize, most: usize) -> String {
    format!(
        "{what} of {} MiB, {UNDER} {} MiB last-level cache sysfs claims: some accesses may hit it (a full run allows up to {} MiB)",
        bytes >> 20,
        claimed >> 20,
        most >> 20
    )
}

/// What the curve of one repetition says: the largest working set still in a cache, and the
/// smallest already in memory.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reach {
    /// The last cache plateau's largest working set (bytes): the cache holds at least this.
    pub cached: f64,
    /// The first size of the chunked chase beyond it (bytes): the cache holds less.
    pub memory: f64,
}

/// The reach of the caches the chunked chase of `ms` (one repetition) found, if it reached
/// memory: the first size beyond the last cache plateau whose latency is the memory's (at least
/// half the idle memory latency). Not merely the first size beyond it: a point partly cached sits
/// near that threshold (16 MiB read 72.5 ns one run, 75 the next, against 74.65), and the judgement
/// must not flip with it between identical runs.
pub fn reach(ms: &[&Measurement]) -> Option<Reach> {
    let chunk = |m: &&&Measurement| m.probe == id::MEMORY_LATENCY_CHUNK && m.summary.is_some();
    let median = |m: &Measurement| m.summary.as_ref().map(|s| s.median);
    let cached = ms
        .iter()
        .filter(chunk)
        .filter(|m| m.metric == metric::LEVEL_SIZE)
        .filter_map(|m| median(m))
        .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v))))?;
    let idle = ms
        .iter()
        .filter(chunk)
        .find(|m| m.metric == metric::LEVEL_LATENCY && m.param_text("level") == "memory")
        .and_then(|m| median(m))?;
    let memory = ms
        .iter()
        .filter(chunk)
        .filter(|m| m.metric == metric::PER_LOAD)
        .filter_map(|m| Some((m.params.get("size")?.as_f64()?, median(m)?)))
        .filter(|&(size, latency)| size > cached && latency >= MEMORY_SHARE * idle)
        .map(|(size, _)| size)
        .min_by(f64::total_cmp)?;
    Some(Reach { cached, memory })
}

/// Each repetition of a run's measurements `ms` with the reach its curve found, where it found
/// one.
pub fn reaches(ms: &[Measurement]) -> Vec<(u32, Reach)> {
    let mut repetitions: Vec<u32> = ms.iter().map(|m| m.repetition).collect();
    repetitions.sort_unstable();
    repetitions.dedup();
    repetitions
        .into_iter()
        .filter_map(|r| {
            let one: Vec<&Measurement> = ms.iter().filter(|m| m.repetition == r).collect();
            Some((r, reach(&one)?))
        })
        .collect()
}

/// The working set a figure was measured over, as its probe's parameters name it: a latency
/// curve's or a bandwidth sweep's `size`, a bandwidth's arrays.
pub fn working_set(m: &Measurement) -> Option<f64> {
    m.params
        .get("size")
        .and_then(|v| v.as_f64())
        .or_else(|| footprint(m))
}

/// The working set of a figure a cache may serve: a bandwidth's arrays, a NUMA cell's chain.
fn footprint(m: &Measurement) -> Option<f64> {
    match (m.probe.as_str(), m.metric.as_str()) {
        (id::NUMA_MATRIX, metric::LATENCY) => m.params.get("size")?.as_f64(),
        // Every bandwidth of one measurement (what the program moved, what the hardware did)
        // has the same arrays: one footprint, one verdict.
        (_, metric::BANDWIDTH | metric::HW_BANDWIDTH) => m
            .params
            .get("array_bytes")
            .or_else(|| m.context.get("array_bytes"))?
            .as_f64(),
        _ => None,
    }
}

/// Marks or clears each bandwidth figure (and NUMA cell latency) of `ms` by its repetition's curve: arrays of 4x the
/// size at which the curve reaches memory are beyond the cache whatever sysfs claims; arrays
/// under 4x what the curve shows cached are partly the cache's. Between the two, the probe's
/// judgement (by sysfs) stands.
pub fn rejudge(ms: &mut [Measurement]) {
    for (r, reach) in reaches(ms) {
        for m in ms.iter_mut().filter(|m| m.repetition == r) {
            let Some(bytes) = footprint(m) else { continue };
            let what = match m.metric != metric::LATENCY {
                true => "arrays",
                false => "a chain",
            };
            let marked = m.context.get(MARK).and_then(|v| v.as_str()) == Some(PARTLY_CACHE);
            let mib = |b: f64| b / f64::from(1 << 20);
            if marked && bytes >= 4.0 * reach.memory {
                m.context.remove(MARK);
                replace_clause(m, &format!(
                    "{what} of {:.0} MiB, over 4x the {:.0} MiB at which this run's latency curve reaches memory: the figure is the memory's (sysfs claims a larger last-level cache than serves this cpu)",
                    mib(bytes),
                    mib(reach.memory)
                ));
            } else if !marked && bytes < 4.0 * reach.cached {
                m.context.insert(MARK.into(), PARTLY_CACHE.into());
                replace_clause(m, &format!(
                    "{what} of {:.0} MiB, {UNDER} {:.0} MiB this run's latency curve shows cached: some accesses hit a cache",
                    mib(bytes),
                    mib(reach.cached)
                ));
            }
        }
    }
}

/// Puts `clause` in place of the note's clause on the working set's size ([`under_claimed`], or
/// an earlier judgement; a note's clauses are separated by "; "), or after the note.
fn replace_clause(m: &mut Measurement, clause: &str) {
    let note = m.note.take().unwrap_or_default();
    let mut parts: Vec<&str> = note
        .split("; ")
        .filter(|p| !p.is_empty() && !p.contains(UNDER) && !p.contains("over 4x the"))
        .collect();
    parts.push(clause);
    m.note = Some(parts.join("; "));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{measured as m, Unit};
    use crate::params;

    /// A curve with a cache up to `cached` MiB and memory from the next point, and a
    /// bandwidth row of `arrays` MiB, marked as sysfs judged it.
    fn run(cached: u64, memory_latency: f64, arrays: u64, marked: bool) -> Vec<Measurement> {
        let mib = 1u64 << 20;
        let mut bw = m(
            id::BANDWIDTH_STREAM,
            metric::BANDWIDTH,
            params! {"array_bytes" => arrays * mib},
            13.0,
        );
        bw.unit = Unit::GBps;
        bw.note = Some(format!(
            "best 13.2 GB/s; {}",
            under_claimed("arrays", (arrays * mib) as usize, 480 << 20, 341 << 20)
        ));
        if marked {
            bw.context.insert(MARK.into(), PARTLY_CACHE.into());
        }
        vec![
            m(
                id::MEMORY_LATENCY_CHUNK,
                metric::LEVEL_SIZE,
                params! {"level" => "L3"},
                (cached * mib) as f64,
            ),
            m(
                id::MEMORY_LATENCY_CHUNK,
                metric::PER_LOAD,
                params! {"size" => cached * mib},
                33.0,
            ),
            m(
                id::MEMORY_LATENCY_CHUNK,
                metric::PER_LOAD,
                params! {"size" => 2 * cached * mib},
                memory_latency,
            ),
            m(
                id::MEMORY_LATENCY_CHUNK,
                metric::LEVEL_LATENCY,
                params! {"level" => "memory"},
                147.0,
            ),
            bw,
        ]
    }

    #[test]
    fn arrays_beyond_where_the_curve_reaches_memory_are_the_memorys_whatever_sysfs_claims() {
        let mut ms = run(8, 92.0, 341, true);
        rejudge(&mut ms);
        let bw = &ms[4];
        assert!(!bw.context.contains_key(MARK), "{:?}", bw.context);
        // A NUMA cell's arrays are found while measuring, not a parameter: judged the same.
        let mut ms = run(8, 92.0, 341, true);
        let size = ms[4].params.remove("array_bytes").unwrap();
        ms[4].probe = id::NUMA_MATRIX.into();
        ms[4].context.insert("array_bytes".into(), size);
        rejudge(&mut ms);
        assert!(!ms[4].context.contains_key(MARK), "{:?}", ms[4].context);
        let note = bw.note.as_deref().unwrap();
        assert!(
            note.starts_with("best 13.2 GB/s; arrays of 341 MiB, over 4x the 16 MiB"),
            "{note}"
        );
        assert!(!note.contains("sysfs claims:"), "{note}");
    }

    #[test]
    fn arrays_a_cache_holds_a_quarter_of_are_marked_and_a_doubtful_curve_changes_nothing() {
        // The curve shows 64 MiB cached; 128 MiB arrays are under 4x that.
        let mut ms = run(64, 92.0, 128, false);
        rejudge(&mut ms);
        assert_eq!(ms[4].context[MARK], PARTLY_CACHE);
        assert!(
            ms[4]
                .note
                .as_deref()
                .unwrap()
                .contains("under 4x the 64 MiB this run's latency curve shows cached"),
            "{:?}",
            ms[4].note
        );
        // Between the two bounds, sysfs's judgement stands.
        let mut ms = run(8, 92.0, 48, true);
        rejudge(&mut ms);
        assert_eq!(ms[4].context[MARK], PARTLY_CACHE);
        // A curve that ended in a cache (30 ns beside 147 ns idle) says nothing.
        let mut ms = run(8, 30.0, 341, true);
        rejudge(&mut ms);
        assert_eq!(ms[4].context[MARK], PARTLY_CACHE);
    }

    #[test]
    fn a_partly_cached_point_near_the_threshold_does_not_flip_the_judgement() {
        // Two identical runs: the point after the 8 MiB plateau reads just under, then just
        // over, half the idle memory latency; a point at 32 MiB is the memory's in both. The
        // 341 MiB arrays are the memory's in both (before: sysfs's mark in the first).
        for first in [72.5, 75.0] {
            let mut ms = run(8, first, 341, true);
            ms.insert(
                4,
                m(
                    id::MEMORY_LATENCY_CHUNK,
                    metric::PER_LOAD,
                    params! {"size" => 32u64 << 20},
                    140.0,
                ),
            );
            rejudge(&mut ms);
            assert!(!ms[5].context.contains_key(MARK), "{first}: {:?}", ms[5]);
        }
    }
}
