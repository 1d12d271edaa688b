//! The decision: the cache domains, and which group of threads goes to which domain given their
//! lock waits (by lock, or by lock time as the paper does).

use super::locks::ThreadWait;
use oslab_core::reason::BadValue;
use oslab_core::{CpuSet, Topology};
use std::collections::BTreeMap;

/// The CPUs of `allowed`, grouped by last-level cache (by package when caches are unknown), each
/// domain in placement order: one thread per core first, then the cores' second threads.
pub fn domains(topology: &Topology, allowed: &CpuSet) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    for cpu in allowed.iter() {
        let llc = topology
            .caches_of(cpu)
            .into_iter()
            .max_by_key(|c| c.level)
            .map(|c| c.cpus.clone());
        let same = |other: usize| match &llc {
            Some(set) => set.contains(other),
            None => topology.cpu(other).map(|c| c.package) == topology.cpu(cpu).map(|c| c.package),
        };
        match out.iter_mut().find(|d| same(d[0])) {
            Some(d) => d.push(cpu),
            None => out.push(vec![cpu]),
        }
    }
    // Within a domain, one thread of every core before any core's second: threads placed in
    // this order share no core while whole cores are idle (whatever the cpu numbering: QEMU
    // numbers siblings next to each other, Linux on hardware a core's first threads first).
    for d in &mut out {
        d.sort_by_key(|&c| {
            let cpu = topology.cpu(c);
            let thread = cpu.and_then(|x| x.smt_siblings.iter().position(|s| s == c));
            (thread.unwrap_or(0), cpu.map(|x| (x.package, x.core)), c)
        });
    }
    out
}

/// How much better (summed over groups, max minus min lock-wait fraction) a new grouping must
/// gather similar lock times than the present one before threads are moved for it.
pub const REGROUP_MARGIN: f64 = 0.10;

/// How the daemon groups threads. The default is the paper's (001, lock time); grouping by lock
/// is oslab's, to choose where locks are contended alike: on a recorded lockbench profile (two
/// mutexes) the paper's grouping gained nothing (-2.2% to +2.0%) and grouping by lock 8.5-10.3%
/// at 2-8 sockets (docs/shuffle-simulation.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Grouping {
    /// The threads of one lock (futex word) share a cache domain, as many as it has cpus; threads
    /// whose lock is unknown fill the emptiest domains.
    Lock,
    /// The paper's: sorted by lock-wait fraction and cut into one group per domain. It cannot
    /// tell two locks contended alike apart.
    #[default]
    LockTime,
}

impl Grouping {
    /// Its name, as `--grouping` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Grouping::Lock => "lock",
            Grouping::LockTime => "lock-time",
        }
    }
}

impl std::str::FromStr for Grouping {
    type Err = BadValue;
    fn from_str(s: &str) -> Result<Self, BadValue> {
        match s {
            "lock" => Ok(Grouping::Lock),
            "lock-time" => Ok(Grouping::LockTime),
            _ => Err(format!("{s:?}: expected lock or lock-time").into()),
        }
    }
}

/// A regrouping: threads cut into groups of similar lock time, most lock-bound first, at most
/// one group per domain.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// Thread groups, one per domain used.
    pub groups: Vec<Vec<i32>>,
    /// The process's lock-wait fraction that triggered it.
    pub lock_fraction: f64,
}

/// The process's lock-wait fraction: time waited over time observed, summed over its threads.
pub fn lock_fraction(waits: &[ThreadWait]) -> f64 {
    let (w, n) = waits.iter().fold((0.0, 0.0), |a, t| {
        (a.0 + t.waited.min(t.observed), a.1 + t.observed)
    });
    if n <= 0.0 {
        0.0
    } else {
        w / n
    }
}

/// Decides a regrouping, or None when lock waits stay below `threshold` (a fraction of thread
/// time) or there is nothing to place.
pub fn decide(waits: &[ThreadWait], domains: usize, threshold: f64) -> Option<Decision> {
    let fraction = lock_fraction(waits);
    if fraction < threshold || waits.is_empty() || domains == 0 {
        return None;
    }
    let mut sorted: Vec<&ThreadWait> = waits.iter().collect();
    sorted.sort_by(|a, b| {
        b.fraction()
            .total_cmp(&a.fraction())
            .then(a.tid.cmp(&b.tid))
    });
    let per = sorted.len().div_ceil(domains.min(sorted.len()));
    Some(Decision {
        groups: sorted
            .chunks(per)
            .map(|c| c.iter().map(|t| t.tid).collect())
            .collect(),
        lock_fraction: fraction,
    })
}

/// Threads of one lock together: each lock's threads, the most waited-for lock first, go to the
/// domain with the most free cpus (`sizes`), as many as it has free, the rest to the next such
/// domain; threads whose lock is unknown fill the emptiest domains last. Groups come in domain
/// order, empty ones left out. None below `threshold` or with nothing to place.
pub fn decide_by_lock(waits: &[ThreadWait], sizes: &[usize], threshold: f64) -> Option<Decision> {
    let fraction = lock_fraction(waits);
    if fraction < threshold || waits.is_empty() || sizes.is_empty() {
        return None;
    }
    let mut by_lock: BTreeMap<u64, (f64, Vec<i32>)> = BTreeMap::new();
    let mut unknown = Vec::new();
    for w in waits {
        match w.lock {
            Some(l) => {
                let e = by_lock.entry(l).or_default();
                e.0 += w.waited;
                e.1.push(w.tid);
            }
            None => unknown.push(w.tid),
        }
    }
    let mut locks: Vec<(f64, Vec<i32>)> = by_lock.into_values().collect();
    locks.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut groups: Vec<Vec<i32>> = vec![Vec::new(); sizes.len()];
    let free = |groups: &[Vec<i32>], k: usize| sizes[k] as i64 - groups[k].len() as i64;
    let emptiest = |groups: &[Vec<i32>]| {
        (0..sizes.len())
            .max_by_key(|&k| (free(groups, k), std::cmp::Reverse(k)))
            .expect("a domain")
    };
    for (_, mut tids) in locks {
        tids.sort_unstable();
        while !tids.is_empty() {
            let k = emptiest(&groups);
            // A full machine takes the rest where it is least crowded.
            let take = free(&groups, k).max(1) as usize;
            let rest = tids.split_off(take.min(tids.len()));
            groups[k].extend(tids);
            tids = rest;
        }
    }
    unknown.sort_unstable();
    for t in unknown {
        let k = emptiest(&groups);
        groups[k].push(t);
    }
    groups.retain(|g| !g.is_empty());
    Some(Decision {
        groups,
        lock_fraction: fraction,
    })
}

/// A thread pinned to a cpu of a domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Move {
    /// The thread.
    pub tid: i32,
    /// Index of its domain.
    pub domain: usize,
    /// Its cpu there.
    pub cpu: usize,
}
