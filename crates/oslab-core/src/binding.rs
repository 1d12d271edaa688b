//! Where each rank and thread of a parallel program should run: a plan from the machine's
//! topology and, where they were measured, its costs (core-to-core hand-over, the NUMA matrix),
//! and the lines numactl, srun, OpenMP and likwid-pin take to put them there.

use crate::catalog::id;
use crate::cpuset::CpuSet;
use crate::model::Measurement;
use crate::topology::Topology;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How ranks are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Ranks side by side on neighbouring cores from the first package on: the least traffic
    /// between ranks, one package's memory bandwidth.
    Compact,
    /// One rank per package, else per NUMA node, else per L3 (the coarsest domain there are
    /// enough of): each rank its own caches and memory controller.
    Spread,
    /// As spread, on the measured costs: cpus the hand-over latency shows sharing a core count
    /// as one, each rank's threads the cores nearest each other, memory where it measured fastest.
    ByCost,
}

/// A pair of cpus far faster to hand a line between than the others of its topology class is
/// taken as two hardware threads of one core the topology does not show (a VM's vCPUs on host
/// SMT siblings: 7.6 and 8.4 ns against a median of 65 ns for the "shared L3" pairs of a 16-vCPU
/// KVM guest, 2026-11-28). Real siblings on bare metal read 0.1-0.3x of the L3 pairs too.
pub const HIDDEN_SMT_SHARE: f64 = 0.35;

/// What was measured that placement can use.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Costs {
    /// One-way cache-line hand-over latency (ns) of each measured cpu pair, lower cpu first.
    pub pairs: BTreeMap<(usize, usize), f64>,
    /// Idle latency (ns) of each memory node from each cpu node: (cpu node, memory node).
    pub memory: BTreeMap<(usize, usize), f64>,
    /// The runs they are from, in words ("core-to-core of run 12").
    pub from: Vec<String>,
}

impl Costs {
    /// `t` with the cpu pairs these costs show sharing a core the topology says they do not
    /// ([`hidden_siblings`]: a host's SMT pair a guest hides) made siblings of one core, for
    /// what places threads by the topology's cores (shuffle, cpuman) as bind does by cost.
    pub fn with_hidden_siblings(&self, t: &Topology) -> Topology {
        let mut out = t.clone();
        for h in hidden_siblings(&self.pairs, |a, b| t.pair_class(a, b)) {
            let (Some(a), Some(b)) = (out.cpu(h.cpus.0).cloned(), out.cpu(h.cpus.1).cloned())
            else {
                continue;
            };
            let siblings: CpuSet = a.smt_siblings.iter().chain(b.smt_siblings.iter()).collect();
            for c in out.cpus.iter_mut().filter(|c| siblings.contains(c.id)) {
                (c.package, c.die, c.core) = (a.package, a.die, a.core);
                c.smt_siblings = siblings.clone();
            }
        }
        out
    }

    /// The costs in measurements of `c2c.latency` and `numa.matrix` (others are ignored).
    pub fn from_measurements(ms: &[Measurement]) -> Costs {
        let mut costs = Costs::default();
        let param = |m: &Measurement, k: &str| m.params.get(k).and_then(|v| v.as_u64());
        for m in ms.iter().filter(|m| m.status.has_value()) {
            let Some(median) = m.summary.as_ref().map(|s| s.median) else {
                continue;
            };
            match (m.probe.as_str(), m.metric.as_str()) {
                (id::C2C_LATENCY, _) => {
                    if let (Some(a), Some(b)) = (param(m, "from"), param(m, "to")) {
                        let key = (a.min(b) as usize, a.max(b) as usize);
                        costs.pairs.insert(key, median);
                    }
                }
                (id::NUMA_MATRIX, "latency") => {
                    if let (Some(c), Some(n)) = (param(m, "cpu_node"), param(m, "mem_node")) {
                        costs.memory.insert((c as usize, n as usize), median);
                    }
                }
                _ => {}
            }
        }
        costs
    }

    /// Whether anything placement can use was measured.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty() && self.memory.is_empty()
    }

    /// Where the costs are from, in words (`host`: the machine they were looked up for).
    pub fn describe(&self, host: &str) -> String {
        match self.from.is_empty() {
            true => format!("none stored for {host}"),
            false => format!(
                "{} ({} cpu pairs, {} memory cells)",
                self.from.join(", "),
                self.pairs.len(),
                self.memory.len()
            ),
        }
    }
}

/// Two cpus the hand-over latency shows sharing a core the topology says they do not.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HiddenSibling {
    /// The two cpus, lower first.
    pub cpus: (usize, usize),
    /// Their one-way latency, ns.
    pub ns: f64,
    /// The topology class they are in.
    pub class: String,
    /// That class's median over the measured pairs, ns.
    pub class_ns: f64,
}

/// The pairs of `pairs` at most [`HIDDEN_SMT_SHARE`] of their class's median (`class` names a
/// pair's topology class), in classes that are not SMT siblings and with at least 4 pairs
/// measured (a median of fewer says little).
pub fn hidden_siblings(
    pairs: &BTreeMap<(usize, usize), f64>,
    class: impl Fn(usize, usize) -> String,
) -> Vec<HiddenSibling> {
    let mut classes: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (&(a, b), &ns) in pairs {
        classes.entry(class(a, b)).or_default().push(ns);
    }
    let medians: BTreeMap<String, f64> = classes
        .into_iter()
        .filter(|(class, v)| v.len() >= 4 && class != "SMT sibling" && class != "same cpu")
        .filter_map(|(class, mut v)| {
            v.sort_by(f64::total_cmp);
            Some((class, crate::stats::median(&v)?))
        })
        .collect();
    pairs
        .iter()
        .filter_map(|(&cpus, &ns)| {
            let class = class(cpus.0, cpus.1);
            let class_ns = *medians.get(&class)?;
            (ns <= HIDDEN_SMT_SHARE * class_ns).then_some(HiddenSibling {
                cpus,
                ns,
                class,
                class_ns,
            })
        })
        .collect()
}

/// One rank's place.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rank {
    /// Its number, from 0.
    pub rank: usize,
    /// Its threads' cpus, thread 0 first (one core each while there are cores enough).
    pub cpus: Vec<usize>,
    /// The memory node it should allocate from.
    pub memory: usize,
    /// The domain it was given ("package 1", "node 2", "L3 of cpus 0-7", "the machine").
    pub domain: String,
}

/// Where every rank and thread goes, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// The policy it follows.
    pub policy: Policy,
    /// Every rank's place, in rank order.
    pub ranks: Vec<Rank>,
    /// Cores shared by more than one thread (0 while ranks x threads fit one per core).
    pub shared_cores: usize,
    /// What the plan rests on and what it could not use, one sentence each.
    pub notes: Vec<String>,
}

/// A core as placement sees it: its cpus, and the domains it lies in.
#[derive(Debug, Clone)]
struct Core {
    cpus: Vec<usize>,
    package: usize,
    node: usize,
    /// The first cpu of its last-level cache instance.
    llc: usize,
}

/// The allowed cpus as cores, hidden siblings joined when `join` (by-cost), in domain order.
fn cores(t: &Topology, allowed: &CpuSet, join: &[HiddenSibling]) -> Vec<Core> {
    let llc_level = t.last_level_cache().map(|c| c.level);
    let llc_of = |cpu: usize| {
        t.caches
            .iter()
            .find(|c| Some(c.level) == llc_level && c.cpus.contains(cpu))
            .and_then(|c| c.cpus.first())
            .unwrap_or(0)
    };
    let mut groups = t.cores_among(allowed);
    for h in join {
        let (a, b) = h.cpus;
        let ia = groups.iter().position(|g| g.contains(&a));
        let ib = groups.iter().position(|g| g.contains(&b));
        if let (Some(ia), Some(ib)) = (ia, ib) {
            if ia != ib {
                let moved = groups.remove(ia.max(ib));
                groups[ia.min(ib)].extend(moved);
            }
        }
    }
    let mut out: Vec<Core> = groups
        .into_iter()
        .map(|mut cpus| {
            cpus.sort_unstable();
            let first = t.cpu(cpus[0]);
            Core {
                package: first.map_or(0, |c| c.package),
                node: first.map_or(0, |c| c.node),
                llc: llc_of(cpus[0]),
                cpus,
            }
        })
        .collect();
    out.sort_by_key(|c| (c.package, c.node, c.llc, c.cpus[0]));
    out
}

/// Splits `cores` into the domains of the coarsest level with at least `ranks` of them (package,
/// node, L3), else of the finest level; with each domain's name.
fn domains(cores: &[Core], ranks: usize) -> Vec<(String, Vec<Core>)> {
    type Key = fn(&Core) -> usize;
    let levels: [(&str, Key); 3] = [
        ("package", |c| c.package),
        ("node", |c| c.node),
        ("L3", |c| c.llc),
    ];
    let split = |key: Key, name: &str| {
        let mut d: BTreeMap<usize, Vec<Core>> = BTreeMap::new();
        for c in cores {
            d.entry(key(c)).or_default().push(c.clone());
        }
        d.into_iter()
            .map(|(k, cs)| {
                let label = match name {
                    "L3" => format!(
                        "L3 of cpus {}",
                        cs.iter()
                            .flat_map(|c| c.cpus.iter().copied())
                            .collect::<CpuSet>()
                    ),
                    _ => format!("{name} {k}"),
                };
                (label, cs)
            })
            .collect::<Vec<_>>()
    };
    let all: Vec<Vec<(String, Vec<Core>)>> = levels.iter().map(|(n, k)| split(*k, n)).collect();
    all.iter()
        .find(|d| d.len() >= ranks)
        .or_else(|| all.iter().max_by_key(|d| d.len()))
        .cloned()
        .unwrap_or_default()
}

/// The cpus `threads` threads take from `cores`: one per core in order while there are cores
/// enough, else every cpu of each core in turn. By cost, each next core is the one nearest (by
/// the measured hand-over latency) to the cores already taken.
fn take(cores: &mut Vec<Core>, threads: usize, costs: Option<&Costs>) -> Vec<usize> {
    let mut chosen: Vec<Core> = Vec::new();
    let one_each = cores.len() >= threads;
    let mut cpus = Vec::new();
    while cpus.len() < threads && !cores.is_empty() {
        let next = match (costs, chosen.is_empty()) {
            (Some(costs), false) => nearest(cores, &chosen, costs),
            _ => 0,
        };
        let core = cores.remove(next);
        let want = if one_each { 1 } else { threads - cpus.len() };
        cpus.extend(core.cpus.iter().take(want));
        chosen.push(core);
    }
    cpus
}

/// The index of the core in `cores` whose worst measured latency to `chosen` is lowest (a core
/// with no measured pair counts as average).
fn nearest(cores: &[Core], chosen: &[Core], costs: &Costs) -> usize {
    let pair = |a: usize, b: usize| costs.pairs.get(&(a.min(b), a.max(b))).copied();
    let known: Vec<f64> = costs.pairs.values().copied().collect();
    let typical = known.iter().sum::<f64>() / known.len().max(1) as f64;
    let worst = |c: &Core| {
        chosen
            .iter()
            .map(|x| pair(c.cpus[0], x.cpus[0]).unwrap_or(typical))
            .fold(0.0, f64::max)
    };
    (0..cores.len())
        .min_by(|&i, &j| worst(&cores[i]).total_cmp(&worst(&cores[j])))
        .unwrap_or(0)
}

/// The threads each of `ranks` ranks gets when the user names none: the allowed cores shared
/// out (at least 1).
pub fn threads_per_rank(t: &Topology, allowed: &CpuSet, ranks: usize) -> usize {
    (t.cores_among(allowed).len() / ranks.max(1)).max(1)
}

/// Why a plan cannot be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// No ranks or no threads asked for.
    #[error("--ranks and --threads must be at least 1")]
    Zero,
    #[error("{ranks} ranks x {threads} threads need {need} cpus; this process may use {have} ({allowed})")]
    /// More threads than cpus.
    TooMany {
        /// Ranks asked for.
        ranks: usize,
        /// Threads per rank asked for.
        threads: usize,
        /// Cpus they need.
        need: usize,
        /// Cpus this process may use.
        have: usize,
        /// Those cpus as a list.
        allowed: String,
    },
}

/// Where `ranks` ranks of `threads` threads each (None: [`threads_per_rank`]) go on the
/// `allowed` cpus of `t`.
pub fn plan(
    t: &Topology,
    allowed: &CpuSet,
    ranks: usize,
    threads: Option<usize>,
    policy: Policy,
    costs: &Costs,
) -> Result<Plan, PlanError> {
    let threads = threads.unwrap_or_else(|| threads_per_rank(t, allowed, ranks));
    let have = t.cpus.iter().filter(|c| allowed.contains(c.id)).count();
    let need = ranks * threads;
    if ranks == 0 || threads == 0 {
        return Err(PlanError::Zero);
    }
    if need > have {
        return Err(PlanError::TooMany {
            ranks,
            threads,
            need,
            have,
            allowed: allowed.to_list(),
        });
    }
    let mut notes = Vec::new();
    let by_cost = policy == Policy::ByCost;
    let hidden = hidden_siblings(&costs.pairs, |a, b| t.pair_class(a, b));
    if by_cost {
        if costs.is_empty() {
            notes.push("no measured costs in the store (`oslab c2c`, `oslab numa` measure them): placed by topology alone".to_string());
        }
        for h in &hidden {
            notes.push(format!(
                "cpus {} and {} hand a line over in {:.1} ns ({:.2}x the {:.0} ns of other {} pairs): taken as one core",
                h.cpus.0, h.cpus.1, h.ns, h.ns / h.class_ns, h.class_ns, h.class
            ));
        }
    } else if !hidden.is_empty() {
        notes.push(format!(
            "{} cpu pair(s) measured to share a core the topology does not show (--policy by-cost keeps them apart)",
            hidden.len()
        ));
    }
    let all = cores(t, allowed, if by_cost { &hidden } else { &[] });
    let core_count = all.len();
    let mut domains = match policy {
        Policy::Compact => vec![("the machine".to_string(), all)],
        Policy::Spread | Policy::ByCost => domains(&all, ranks),
    };
    let measured = by_cost.then_some(costs);
    let mut placed = Vec::new();
    for rank in 0..ranks {
        let d = rank % domains.len();
        // A domain short of cores lends the next ones.
        let mut cpus = take(&mut domains[d].1, threads, measured);
        let mut k = 1;
        while cpus.len() < threads && k < domains.len() {
            let more = threads - cpus.len();
            let d2 = (d + k) % domains.len();
            cpus.extend(take(&mut domains[d2].1, more, measured));
            k += 1;
        }
        placed.push((rank, domains[d].0.clone(), cpus));
    }
    let node_of = |cpu: usize| t.cpu(cpu).map_or(0, |c| c.node);
    let ranks: Vec<Rank> = placed
        .into_iter()
        .map(|(rank, domain, cpus)| {
            let local = majority(cpus.iter().map(|&c| node_of(c)));
            let memory = match measured {
                Some(c) => fastest_memory(c, local).unwrap_or(local),
                None => local,
            };
            Rank {
                rank,
                cpus,
                memory,
                domain,
            }
        })
        .collect();
    let shared_cores = need.saturating_sub(core_count.min(need));
    if shared_cores > 0 {
        notes.push(format!(
            "{need} threads on {core_count} cores: some share a core with an SMT sibling"
        ));
    }
    Ok(Plan {
        policy,
        ranks,
        shared_cores,
        notes,
    })
}

fn majority(nodes: impl Iterator<Item = usize>) -> usize {
    let mut count: BTreeMap<usize, usize> = BTreeMap::new();
    for n in nodes {
        *count.entry(n).or_default() += 1;
    }
    count
        .into_iter()
        .max_by_key(|&(n, c)| (c, std::cmp::Reverse(n)))
        .map_or(0, |(n, _)| n)
}

/// The memory node with the lowest measured latency from cpu node `node`.
fn fastest_memory(costs: &Costs, node: usize) -> Option<usize> {
    costs
        .memory
        .iter()
        .filter(|((c, _), _)| *c == node)
        .min_by(|a, b| a.1.total_cmp(b.1))
        .map(|((_, m), _)| *m)
}

/// The lines that put a plan in place, for `program` (its words, shell-quoted here).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lines {
    /// One `numactl` line per rank.
    pub numactl: Vec<String>,
    /// One `srun` line for the whole job (masks and memory in rank order).
    pub srun: String,
    /// The OpenMP environment of each rank.
    pub openmp: Vec<String>,
    /// One `likwid-pin` line per rank.
    pub likwid_pin: Vec<String>,
}

/// A cpu list as the hexadecimal mask srun's `mask_cpu` takes ("0xf0" for cpus 4-7).
pub fn hex_mask(cpus: &[usize]) -> String {
    let top = cpus.iter().copied().max().unwrap_or(0);
    let digits: String = (0..=top / 4)
        .rev()
        .map(|d| {
            let nibble = (0..4)
                .filter(|b| cpus.contains(&(d * 4 + b)))
                .fold(0u32, |acc, b| acc | (1 << b));
            char::from_digit(nibble, 16).unwrap_or('0')
        })
        .collect();
    format!("0x{digits}")
}

/// The lines for `plan` that run `program` (or the word PROGRAM when none was given).
pub fn lines(plan: &Plan, program: &[String]) -> Lines {
    let program = match program {
        [] => "PROGRAM".to_string(),
        words => words
            .iter()
            .map(|w| crate::text::shell_word(w))
            .collect::<Vec<_>>()
            .join(" "),
    };
    let list = |cpus: &[usize]| cpus.iter().copied().collect::<CpuSet>().to_list();
    let threads = plan.ranks.first().map_or(1, |r| r.cpus.len());
    let masks: Vec<String> = plan.ranks.iter().map(|r| hex_mask(&r.cpus)).collect();
    let mems: Vec<String> = plan.ranks.iter().map(|r| r.memory.to_string()).collect();
    Lines {
        numactl: plan
            .ranks
            .iter()
            .map(|r| {
                format!(
                    "numactl --physcpubind={} --membind={} -- {program}",
                    list(&r.cpus),
                    r.memory
                )
            })
            .collect(),
        srun: format!(
            "srun --ntasks={} --cpus-per-task={threads} --cpu-bind=mask_cpu:{} --mem-bind=map_mem:{} {program}",
            plan.ranks.len(),
            masks.join(","),
            mems.join(",")
        ),
        openmp: plan
            .ranks
            .iter()
            .map(|r| {
                let places: Vec<String> = r.cpus.iter().map(|c| format!("{{{c}}}")).collect();
                format!(
                    "OMP_NUM_THREADS={} OMP_PLACES='{}' OMP_PROC_BIND=close",
                    r.cpus.len(),
                    places.join(",")
                )
            })
            .collect(),
        likwid_pin: plan
            .ranks
            .iter()
            .map(|r| {
                let cpus: Vec<String> = r.cpus.iter().map(usize::to_string).collect();
                format!("likwid-pin -c {} {program}", cpus.join(","))
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(packages: usize, nodes_per: usize, cores_per: usize, smt: usize) -> Topology {
        Topology::synthetic(packages, nodes_per, cores_per, smt)
    }

    /// `ranks` x `threads` on every cpu of `t`, by topology alone.
    fn plan_on(
        t: &Topology,
        ranks: usize,
        threads: usize,
        policy: Policy,
    ) -> Result<Plan, PlanError> {
        plan(
            t,
            &t.online(),
            ranks,
            Some(threads),
            policy,
            &Costs::default(),
        )
    }

    fn package_of(t: &Topology, cpu: usize) -> usize {
        t.cpu(cpu).unwrap().package
    }

    fn core_of(t: &Topology, cpu: usize) -> (usize, usize) {
        let c = t.cpu(cpu).unwrap();
        (c.package, c.core)
    }

    #[test]
    fn spread_puts_one_rank_per_package_and_each_thread_on_its_own_core() {
        let t = machine(2, 1, 4, 2);
        let p = plan_on(&t, 2, 4, Policy::Spread).unwrap();
        assert_eq!(p.ranks.len(), 2);
        for (r, rank) in p.ranks.iter().enumerate() {
            assert!(rank.cpus.iter().all(|&c| package_of(&t, c) == r), "{p:?}");
            let mut cores: Vec<_> = rank.cpus.iter().map(|&c| core_of(&t, c)).collect();
            cores.dedup();
            assert_eq!(cores.len(), 4, "{p:?}");
            assert_eq!(rank.memory, r);
        }
        assert_eq!(p.shared_cores, 0);
        let l = lines(&p, &["./a.out".into(), "x y".into()]);
        assert_eq!(
            l.numactl[1],
            "numactl --physcpubind=4-7 --membind=1 -- ./a.out 'x y'"
        );
        assert_eq!(
            l.srun,
            "srun --ntasks=2 --cpus-per-task=4 --cpu-bind=mask_cpu:0xf,0xf0 --mem-bind=map_mem:0,1 ./a.out 'x y'"
        );
        assert_eq!(
            l.openmp[0],
            "OMP_NUM_THREADS=4 OMP_PLACES='{0},{1},{2},{3}' OMP_PROC_BIND=close"
        );
        assert_eq!(l.likwid_pin[1], "likwid-pin -c 4,5,6,7 ./a.out 'x y'");
    }

    #[test]
    fn sub_numa_clusters_get_a_rank_per_node_when_there_are_more_ranks_than_packages() {
        let t = machine(2, 2, 2, 1);
        let p = plan_on(&t, 4, 2, Policy::Spread).unwrap();
        let nodes: Vec<usize> = p.ranks.iter().map(|r| r.memory).collect();
        assert_eq!(nodes, [0, 1, 2, 3]);
        assert!(p.ranks.iter().all(|r| r.domain.starts_with("node ")));
    }

    #[test]
    fn compact_fills_the_first_package_and_siblings_only_when_cores_run_out() {
        let t = machine(2, 1, 4, 2);
        let p = plan_on(&t, 2, 2, Policy::Compact).unwrap();
        assert_eq!(p.ranks[0].cpus, [0, 1]);
        assert_eq!(p.ranks[1].cpus, [2, 3]);
        let p = plan_on(&t, 2, 8, Policy::Spread).unwrap();
        assert_eq!(p.shared_cores, 8);
        assert_eq!(p.ranks[0].cpus, [0, 8, 1, 9, 2, 10, 3, 11]);
        let err = plan_on(&t, 3, 8, Policy::Spread).unwrap_err();
        assert!(err.to_string().contains("need 24 cpus"), "{err}");
    }

    #[test]
    fn by_cost_keeps_measured_siblings_apart_and_takes_the_fastest_memory() {
        let t = machine(1, 1, 8, 1);
        let mut costs = Costs::default();
        for a in 0..8 {
            for b in a + 1..8 {
                costs.pairs.insert((a, b), 60.0 + (b - a) as f64);
            }
        }
        costs.pairs.insert((0, 1), 8.0);
        costs.memory.insert((0, 0), 90.0);
        let hidden = hidden_siblings(&costs.pairs, |a, b| t.pair_class(a, b));
        assert_eq!(hidden.len(), 1);
        assert_eq!(hidden[0].cpus, (0, 1));
        let p = plan(&t, &t.online(), 1, Some(4), Policy::ByCost, &costs).unwrap();
        assert!(!p.ranks[0].cpus.contains(&1), "{p:?}");
        assert!(p.notes.iter().any(|n| n.contains("cpus 0 and 1")), "{p:?}");
        let plain = plan(&t, &t.online(), 1, Some(4), Policy::Spread, &costs).unwrap();
        assert_eq!(plain.ranks[0].cpus, [0, 1, 2, 3]);
        // For shuffle and cpuman, the topology with the pair made one core.
        let merged = costs.with_hidden_siblings(&t);
        assert_eq!(merged.cpu(1).unwrap().core, merged.cpu(0).unwrap().core);
        assert!(merged.cpu(0).unwrap().smt_siblings.contains(1));
        assert_eq!(merged.cores(), t.cores() - 1);
    }

    #[test]
    fn masks_are_srun_hex() {
        assert_eq!(hex_mask(&[0]), "0x1");
        assert_eq!(hex_mask(&[4, 5, 6, 7]), "0xf0");
        assert_eq!(hex_mask(&[64]), "0x10000000000000000");
    }
}
