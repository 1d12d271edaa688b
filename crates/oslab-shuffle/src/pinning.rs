//! Threads pinned to their group's domain, every affinity changed remembered and restored.

use super::decision::{Decision, Move, REGROUP_MARGIN};
use super::locks::ThreadWait;
use std::collections::BTreeMap;

/// Where the threads placed so far are. A regrouping moves a thread only when its group lands on
/// another domain: a new order of lock times inside a domain moves nothing (hysteresis).
#[derive(Debug, Clone, Default)]
pub struct Pinning {
    at: BTreeMap<i32, Move>,
}

impl Pinning {
    /// The moves that put `d`'s groups on `domains`. Each group takes the free domain that
    /// already holds most of its threads (the lowest index on a tie), the groups already placed
    /// first (then most lock-bound first): a newcomer group takes a free domain instead of one
    /// a placed group holds (a main thread back from its joins once moved 3 threads for 1). A
    /// thread whose domain changes goes to the least-used cpu of its new domain, a core's second
    /// thread only once every core of it has one.
    pub fn plan(&self, d: &Decision, domains: &[Vec<usize>]) -> Vec<Move> {
        let mut free: Vec<bool> = vec![true; domains.len()];
        let mut target: BTreeMap<i32, usize> = BTreeMap::new();
        let placed = |g: &Vec<i32>| g.iter().filter(|t| self.domain_of(**t).is_some()).count();
        let mut order: Vec<&Vec<i32>> = d.groups.iter().collect();
        order.sort_by_key(|g| std::cmp::Reverse(placed(g)));
        for g in order {
            let held = |k: usize| g.iter().filter(|t| self.domain_of(**t) == Some(k)).count();
            let Some(k) = (0..domains.len())
                .filter(|&k| free[k])
                .max_by_key(|&k| (held(k), std::cmp::Reverse(k)))
            else {
                break;
            };
            free[k] = false;
            target.extend(g.iter().map(|&t| (t, k)));
        }
        // Threads that stay keep their cpus; newcomers fill the least-used ones.
        let mut used: BTreeMap<usize, usize> = BTreeMap::new();
        for (tid, m) in &self.at {
            if target.get(tid) == Some(&m.domain) {
                *used.entry(m.cpu).or_default() += 1;
            }
        }
        let mut moves = Vec::new();
        for (&tid, &k) in &target {
            if self.domain_of(tid) == Some(k) {
                continue;
            }
            // The least used, the first in the domain's placement order on a tie (a core's
            // second thread only once every core has one).
            let (_, &cpu) = domains[k]
                .iter()
                .enumerate()
                .min_by_key(|(i, c)| (used.get(c).copied().unwrap_or(0), *i))
                .expect("a domain has cpus");
            *used.entry(cpu).or_default() += 1;
            moves.push(Move {
                tid,
                domain: k,
                cpu,
            });
        }
        moves
    }

    /// Records a move that was carried out.
    pub fn moved(&mut self, m: Move) {
        self.at.insert(m.tid, m);
    }

    /// The domain thread `tid` is pinned to, if placed.
    pub fn domain_of(&self, tid: i32) -> Option<usize> {
        self.at.get(&tid).map(|m| m.domain)
    }

    /// `d`, or the grouping the threads already have when `d` does not gather similar lock times
    /// clearly better: by [`REGROUP_MARGIN`] of summed within-group spread, and by more than
    /// noise could make it (two `noise`, the smoothed shares' interval-to-interval spread, per
    /// group). Lock times of threads that contend alike differ only by noise from one interval to
    /// the next: regrouping on every reordering moved threads nearly every interval in a 4-socket
    /// guest (23 of 25; with a fixed margin, 182 of 251 in an emulated one), each move costing
    /// the caches it leaves.
    pub fn keep_unless_better(&self, d: Decision, waits: &[ThreadWait], noise: f64) -> Decision {
        let Some(kept) = self.grouping(waits) else {
            return d; // a thread not placed yet: place it
        };
        let fraction: BTreeMap<i32, f64> = waits.iter().map(|w| (w.tid, w.fraction())).collect();
        let spread = |groups: &[Vec<i32>]| -> f64 {
            groups
                .iter()
                .map(|g| {
                    let f = g.iter().filter_map(|t| fraction.get(t).copied());
                    let (lo, hi) = f.fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
                    if hi >= lo {
                        hi - lo
                    } else {
                        0.0
                    }
                })
                .sum()
        };
        let margin = REGROUP_MARGIN.max(2.0 * noise * d.groups.len() as f64);
        if spread(&kept) - spread(&d.groups) < margin {
            Decision { groups: kept, ..d }
        } else {
            d
        }
    }

    /// The groups `waits`' threads are pinned in now, by domain; None while one is not placed.
    pub fn grouping(&self, waits: &[ThreadWait]) -> Option<Vec<Vec<i32>>> {
        let mut current: BTreeMap<usize, Vec<i32>> = BTreeMap::new();
        for w in waits {
            current
                .entry(self.domain_of(w.tid)?)
                .or_default()
                .push(w.tid);
        }
        Some(current.into_values().collect())
    }

    /// Forgets threads that are gone.
    pub fn retain(&mut self, alive: impl Fn(i32) -> bool) {
        self.at.retain(|t, _| alive(*t));
    }

    /// Forgets every thread.
    pub fn clear(&mut self) {
        self.at.clear();
    }
}
