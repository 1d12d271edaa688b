//! Processor mapping: which CPUs each job's allocation is. Jobs keep a stable, contiguous set
//! (consecutive in placement order: same node, same package, neighbouring cores), and a change
//! of allocation moves as little as possible: a shrinking job keeps the first of its CPUs, a
//! growing one takes the free CPUs nearest to those it has, a new one the tightest free block
//! (fewest nodes, then shortest span). More processors allocated than exist (each running job
//! holds at least one) shares the least-used CPUs.

use oslab_core::reason::BadValue;
use oslab_core::topology::Topology;
use oslab_core::CpuSet;
use std::collections::BTreeMap;

/// The cpus a live run manages, in placement order: those `list` names ("0-7", "node:0"), which
/// must be within `allowed`, or all of `allowed`.
pub fn managed(
    topology: &Topology,
    allowed: &CpuSet,
    list: Option<&str>,
) -> Result<Vec<(usize, usize)>, BadValue> {
    let set = match list {
        Some(list) => {
            let set = CpuSet::parse(list, topology).map_err(|e| format!("--cpus: {e}"))?;
            if !set.is_subset(allowed) {
                return Err(
                    format!("--cpus {set} is not within the cpus we may use ({allowed})").into(),
                );
            }
            set
        }
        None => allowed.clone(),
    };
    let order = placement_order(topology, &set);
    match order.is_empty() {
        true => Err("no online cpu to manage".into()),
        false => Ok(order),
    }
}

/// The L2 size of `cpu` (1 MiB when sysfs does not say), for the stencil's grid.
pub fn l2_bytes(topology: &Topology, cpu: usize) -> u64 {
    topology
        .caches_of(cpu)
        .iter()
        .find(|c| c.level == 2)
        .map_or(1 << 20, |c| c.size)
}

/// CPUs in placement order with their NUMA node: by node, package, core, then SMT sibling, so
/// that a run of consecutive entries shares as much as the machine allows.
pub fn placement_order(topology: &Topology, allowed: &CpuSet) -> Vec<(usize, usize)> {
    let mut cpus: Vec<_> = topology
        .cpus
        .iter()
        .filter(|c| allowed.contains(c.id))
        .map(|c| {
            let first_sibling = c.smt_siblings.first().unwrap_or(c.id);
            let thread = c.smt_siblings.iter().position(|s| s == c.id).unwrap_or(0);
            // Siblings after every first thread: fill cores before doubling up on one.
            (
                (c.node, thread, c.package, c.core, first_sibling),
                (c.id, c.node),
            )
        })
        .collect();
    cpus.sort();
    cpus.into_iter().map(|(_, v)| v).collect()
}

/// The new mapping: `wanted` (job id, processors) in priority order, `previous` each job's CPUs
/// before. `order` comes from [`placement_order`]. Cost O(jobs x P log P): the simulator calls it
/// on 1024-CPU machines.
pub fn map(
    order: &[(usize, usize)],
    previous: &BTreeMap<u64, Vec<usize>>,
    wanted: &[(u64, usize)],
) -> BTreeMap<u64, Vec<usize>> {
    let mut pos_of = vec![usize::MAX; order.iter().map(|&(c, _)| c + 1).max().unwrap_or(0)];
    for (p, &(c, _)) in order.iter().enumerate() {
        pos_of[c] = p;
    }
    let node = |p: usize| order[p].1;
    let mut users = vec![0usize; order.len()];
    let mut out: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    // 1. Everyone keeps what it can of its previous CPUs that no earlier job kept (sets
    //    shared while jobs outnumbered the CPUs are dealt out again).
    for &(id, n) in wanted {
        let kept: Vec<usize> = previous
            .get(&id)
            .into_iter()
            .flatten()
            .filter_map(|&c| pos_of.get(c).copied().filter(|&p| p != usize::MAX))
            .filter(|&p| users[p] == 0)
            .take(n)
            .collect();
        for &p in &kept {
            users[p] += 1;
        }
        out.insert(id, kept);
    }
    // 2. Those that need more take free CPUs, then shared ones (least used first).
    let mut mine_mask = vec![false; order.len()];
    for &(id, n) in wanted {
        let mut mine = out.remove(&id).unwrap_or_default();
        mine.iter().for_each(|&p| mine_mask[p] = true);
        while mine.len() < n.min(order.len()) {
            let need = n.min(order.len()) - mine.len();
            let least = (0..order.len())
                .filter(|&p| !mine_mask[p])
                .map(|p| users[p])
                .min()
                .unwrap_or(0);
            let mut candidates: Vec<usize> = (0..order.len())
                .filter(|&p| users[p] == least && !mine_mask[p])
                .collect();
            let pick: Vec<usize> = if mine.is_empty() {
                tightest_block(&candidates, need.min(candidates.len()), node)
            } else {
                // Nearest to what it has, on its nodes first.
                let mut have = mine.clone();
                have.sort_unstable();
                // Its nodes as a set: a Vec's `contains` made this O(P x CPUs held), 77 s per
                // reallocation at a million CPUs.
                let mut on_node = vec![false; order.iter().map(|o| o.1 + 1).max().unwrap_or(0)];
                have.iter().for_each(|&m| on_node[node(m)] = true);
                let key = |p: usize| {
                    let i = have.partition_point(|&m| m < p);
                    let d = [i.checked_sub(1), Some(i)]
                        .into_iter()
                        .flatten()
                        .filter_map(|j| have.get(j))
                        .map(|&m| m.abs_diff(p))
                        .min()
                        .unwrap_or(usize::MAX);
                    (!on_node[node(p)], d, p)
                };
                candidates.sort_by_key(|&p| key(p));
                candidates.truncate(need);
                candidates
            };
            for p in pick {
                users[p] += 1;
                mine_mask[p] = true;
                mine.push(p);
            }
        }
        mine.iter().for_each(|&p| mine_mask[p] = false);
        mine.sort_unstable();
        out.insert(id, mine);
    }
    out.into_iter()
        .map(|(id, ps)| (id, ps.into_iter().map(|p| order[p].0).collect()))
        .collect()
}

/// One reallocation, as live runs and the simulator both do it: the policy's counts for `views`
/// on `cpus` processors, and the mapping updated from them (a policy that does not pin leaves it
/// empty; counts that did not change leave it as it is).
pub fn reallocate(
    policy: &mut dyn crate::policy::Policy,
    views: &[crate::policy::JobView],
    order: &[(usize, usize)],
    mapping: &mut BTreeMap<u64, Vec<usize>>,
) -> Vec<usize> {
    let allocs = policy.allocate(views, order.len());
    let same = views.iter().zip(&allocs).all(|(v, &a)| v.alloc == a);
    // Jobs that shared a cpu while they outnumbered the cpus are dealt out again once they fit,
    // though their counts stay the same (3 jobs on 2 cpus, one ends: the two left kept sharing
    // cpu 0 while cpu 1 idled).
    let fits = views.len() <= order.len();
    if policy.pins() && (!same || (fits && space_shared(mapping).is_err())) {
        let wanted: Vec<(u64, usize)> =
            views.iter().zip(&allocs).map(|(v, &a)| (v.id, a)).collect();
        *mapping = map(order, mapping, &wanted);
    }
    // Space sharing is the premise of every pinning policy: a cpu given to two jobs is a bug
    // in the policy, never a result to report.
    if policy.pins() && fits {
        if let Err(e) = space_shared(mapping) {
            panic!("policy {} broke space sharing: {e}", policy.name());
        }
    }
    allocs
}

/// Whether no cpu is in two jobs' sets; the first that is, when one is.
pub fn space_shared(mapping: &BTreeMap<u64, Vec<usize>>) -> Result<(), BadValue> {
    let mut owner: BTreeMap<usize, u64> = BTreeMap::new();
    for (&id, cpus) in mapping {
        for &c in cpus {
            if let Some(other) = owner.insert(c, id) {
                return Err(format!("cpu {c} given to jobs {other} and {id}").into());
            }
        }
    }
    Ok(())
}

/// `need` consecutive `candidates` (sorted positions of an order sorted by node) that span the
/// fewest nodes, then the shortest stretch of the order.
fn tightest_block(candidates: &[usize], need: usize, node: impl Fn(usize) -> usize) -> Vec<usize> {
    if need == 0 {
        return Vec::new();
    }
    let best = candidates
        .windows(need)
        .min_by_key(|w| (node(w[need - 1]) - node(w[0]), w[need - 1] - w[0], w[0]))
        .unwrap_or(candidates);
    best.to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_os::topology::write_fake_sysfs;

    fn two_nodes() -> Vec<(usize, usize)> {
        (0..8).map(|c| (c, c / 4)).collect()
    }

    fn prev(entries: &[(u64, &[usize])]) -> BTreeMap<u64, Vec<usize>> {
        entries.iter().map(|(id, c)| (*id, c.to_vec())).collect()
    }

    #[test]
    fn new_jobs_get_a_block_on_one_node_and_shrinking_jobs_keep_their_first_cpus() {
        let order = two_nodes();
        let m = map(&order, &prev(&[(1, &[0, 1, 2, 3])]), &[(1, 2), (2, 4)]);
        assert_eq!(m[&1], [0, 1]);
        // 2,3 are free but 4..7 is a whole node: the new job takes that.
        assert_eq!(m[&2], [4, 5, 6, 7]);
        // A third job of 2 fits in the gap job 1 left.
        let m = map(&order, &m, &[(1, 2), (2, 4), (3, 2)]);
        assert_eq!(
            (m[&1].clone(), m[&2].clone(), m[&3].clone()),
            (vec![0, 1], vec![4, 5, 6, 7], vec![2, 3])
        );
    }

    #[test]
    fn growing_jobs_take_the_nearest_free_cpus_and_nothing_else_moves() {
        let order = two_nodes();
        let before = prev(&[(1, &[2, 3]), (2, &[6, 7])]);
        let m = map(&order, &before, &[(1, 4), (2, 2)]);
        assert_eq!(m[&1], [0, 1, 2, 3]);
        assert_eq!(m[&2], [6, 7]);
        // Growing past its node spills to the nearest cpus of the other.
        let m = map(&order, &m, &[(1, 6), (2, 2)]);
        assert_eq!(m[&1], [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn more_processors_than_exist_share_the_least_used() {
        let order: Vec<(usize, usize)> = vec![(0, 0), (1, 0)];
        let m = map(&order, &BTreeMap::new(), &[(1, 1), (2, 1), (3, 1)]);
        assert_eq!(m[&1], [0]);
        assert_eq!(m[&2], [1]);
        assert_eq!(m[&3].len(), 1);
        // A request beyond the machine gets the machine.
        let m = map(&order, &BTreeMap::new(), &[(1, 5)]);
        assert_eq!(m[&1], [0, 1]);
        // Once jobs fit again, none keeps a cpu it shared: 1 and 3 both had cpu 0.
        let shared = prev(&[(1, &[0]), (2, &[1]), (3, &[0])]);
        let m = map(&order, &shared, &[(1, 1), (3, 1)]);
        assert_eq!(space_shared(&m), Ok(()), "{m:?}");
        assert_eq!(m[&1], [0]);
    }

    #[test]
    fn jobs_that_shared_a_cpu_are_dealt_out_again_once_they_fit() {
        use crate::policy::{Equip, JobView};
        let order: Vec<(usize, usize)> = vec![(0, 0), (1, 0)];
        let view = |id, alloc| JobView {
            id,
            request: 4,
            alloc,
            speedup: None,
        };
        let mut mapping = BTreeMap::new();
        let three = [view(1, 0), view(2, 0), view(3, 0)];
        assert_eq!(
            reallocate(&mut Equip, &three, &order, &mut mapping),
            [1, 1, 1]
        );
        // Job 2 ends; the two left keep a count of 1 each, on cpus of their own now.
        mapping.remove(&2);
        let two = [view(1, 1), view(3, 1)];
        assert_eq!(reallocate(&mut Equip, &two, &order, &mut mapping), [1, 1]);
        assert_eq!(space_shared(&mapping), Ok(()), "{mapping:?}");
    }

    #[test]
    fn the_order_fills_cores_and_nodes_before_smt_siblings() {
        let dir = tempfile::tempdir().unwrap();
        // 2 packages x 2 cores x 2 threads, one node per package.
        write_fake_sysfs(dir.path(), 2, 2, 2, 2).unwrap();
        let topo = oslab_os::topology::read_from(dir.path()).unwrap();
        let order = placement_order(&topo, &topo.online());
        assert_eq!(order.len(), 8);
        // Node by node; within a node every core's first thread before any sibling.
        let nodes: Vec<usize> = order.iter().map(|&(_, n)| n).collect();
        assert_eq!(nodes, [0, 0, 0, 0, 1, 1, 1, 1]);
        let core = |c: usize| {
            let cpu = topo.cpu(c).unwrap();
            (cpu.package, cpu.core)
        };
        assert_ne!(core(order[0].0), core(order[1].0), "{order:?}");
        assert_eq!(core(order[2].0), core(order[0].0), "{order:?}");
    }
}
