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
    /// Runs whose costs were not used, and why (an emulated cpu's).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub set_aside: Vec<String>,
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
                "{} ({}, {})",
                self.from.join(", "),
                crate::units::counted(self.pairs.len(), "cpu pair"),
                crate::units::counted(self.memory.len(), "memory cell")
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
    /// Its threads' cpus, thread 0 first: one per core while its cores last, then their
    /// siblings.
    pub cpus: Vec<usize>,
    /// The NUMA nodes it should allocate from: those of its cpus (one, bound; several,
    /// interleaved).
    pub memory: Vec<usize>,
    /// The domain it was given ("package 1", "node 2", "L3 of cpus 0-7", "part 1 of 2 of
    /// package 0").
    pub domain: String,
    /// The packages its cpus lie in.
    pub packages: Vec<usize>,
}

/// Where every rank and thread goes, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// The policy it follows.
    pub policy: Policy,
    /// Every rank's place, in rank order.
    pub ranks: Vec<Rank>,
    /// Cores that hold more than one thread (0 while ranks x threads fit one per core).
    pub shared_cores: usize,
    /// What the plan rests on and what it could not use, one sentence each.
    pub notes: Vec<String>,
}

/// A core as placement sees it: its allowed cpus, and the domains it lies in.
#[derive(Debug, Clone)]
struct Core {
    cpus: Vec<usize>,
    /// Its kind (0 the most capable: P cores before E cores).
    kind: usize,
    package: usize,
    node: usize,
    die: usize,
    /// The first cpu of its last-level cache instance.
    llc: usize,
}

/// The allowed cpus as cores (told apart by package, die and core: Linux repeats core ids per
/// die), hidden siblings joined (by-cost), in the machine's order: package, node, die, cache.
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
                kind: first.map_or(0, |c| c.kind),
                package: first.map_or(0, |c| c.package),
                node: first.map_or(0, |c| c.node),
                die: first.map_or(0, |c| c.die),
                llc: llc_of(cpus[0]),
                cpus,
            }
        })
        .collect();
    out.sort_by_key(|c| (c.kind, c.package, c.node, c.die, c.llc, c.cpus[0]));
    out
}

/// What one rank takes: `threads` cpus, each on a core of its own ([`Fit::Distinct`]: there
/// are cores enough for every thread of every rank), else on whole cores of its own
/// ([`Fit::WholeCores`]: siblings too, no core shared with another rank), else on any cpus
/// ([`Fit::Cpus`]: a core may hold two ranks' threads).
#[derive(Debug, Clone, Copy)]
struct Need {
    threads: usize,
    fit: Fit,
}

/// How tightly ranks must fit (see [`Need`]).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fit {
    Distinct,
    WholeCores,
    Cpus,
}

impl Need {
    /// How many ranks fit in `cores` (taken in order).
    fn fits(&self, cores: &[Core]) -> usize {
        match self.fit {
            Fit::Distinct => cores.len() / self.threads,
            Fit::Cpus => cores.iter().map(|c| c.cpus.len()).sum::<usize>() / self.threads,
            Fit::WholeCores => {
                let (mut fit, mut cpus) = (0, 0);
                for c in cores {
                    cpus += c.cpus.len();
                    if cpus >= self.threads {
                        (fit, cpus) = (fit + 1, 0);
                    }
                }
                fit
            }
        }
    }

    /// The fewest cores from the start of `cores` that hold one rank (whole-core fits).
    fn least(&self, cores: &[Core]) -> Option<usize> {
        if self.fit == Fit::Distinct {
            return (cores.len() >= self.threads).then_some(self.threads);
        }
        let mut cpus = 0;
        cores
            .iter()
            .position(|c| {
                cpus += c.cpus.len();
                cpus >= self.threads
            })
            .map(|i| i + 1)
    }
}

/// A level of the machine placement balances ranks over, outermost first.
type Level = (&'static str, fn(&Core) -> usize);

const LEVELS: [Level; 5] = [
    ("kind", |c| c.kind),
    ("package", |c| c.package),
    ("node", |c| c.node),
    ("die", |c| c.die),
    ("L3", |c| c.llc),
];

/// The domain a group of cores is, in words.
fn label(name: &str, key: usize, cores: &[Core]) -> String {
    match name {
        "kind" => match key {
            0 => "the most capable cores".to_string(),
            k => format!("cores of kind {k} (0 the most capable)"),
        },
        "L3" => format!(
            "L3 of cpus {}",
            cores
                .iter()
                .flat_map(|c| c.cpus.iter().copied())
                .collect::<CpuSet>()
        ),
        _ => format!("{name} {key}"),
    }
}

/// `ranks` shares of `weights` (cores) in proportion, none above its `caps` (the ranks that fit
/// in it); none when they do not add up to `ranks`. Largest remainders first; among equal
/// ones, the group with fewer ranks, then the earlier.
fn apportion(ranks: usize, weights: &[usize], caps: &[usize]) -> Option<Vec<usize>> {
    let total: usize = weights.iter().sum::<usize>().max(1);
    let exact: Vec<f64> = weights
        .iter()
        .map(|&w| ranks as f64 * w as f64 / total as f64)
        .collect();
    let mut given: Vec<usize> = exact
        .iter()
        .zip(caps)
        .map(|(&e, &cap)| (e.floor() as usize).min(cap))
        .collect();
    while given.iter().sum::<usize>() < ranks {
        let next = (0..given.len())
            .filter(|&g| given[g] < caps[g])
            .max_by(|&a, &b| {
                let left = |g: usize| exact[g] - given[g] as f64;
                left(a)
                    .total_cmp(&left(b))
                    .then(given[b].cmp(&given[a]))
                    .then(b.cmp(&a))
            })?;
        given[next] += 1;
    }
    Some(given)
}

/// `ranks` given to groups in order, each as many as fit (`caps`); none when they do not.
fn fill(ranks: usize, caps: &[usize]) -> Option<Vec<usize>> {
    let mut left = ranks;
    let given: Vec<usize> = caps
        .iter()
        .map(|&cap| {
            let n = cap.min(left);
            left -= n;
            n
        })
        .collect();
    (left == 0).then_some(given)
}

/// `ranks` ranks placed on `cores`: balanced over the groups of each level in turn (a group
/// gets ranks in proportion to its cores, never more than fit in it), each rank within one
/// group where one holds it; (its domain, its cpus) in rank order. None when the fit asked for
/// cannot hold them.
fn spread(
    cores: &[Core],
    ranks: usize,
    levels: &[Level],
    need: Need,
    domain: &str,
) -> Option<Vec<(String, Vec<usize>)>> {
    let Some(((name, key), deeper)) = levels.split_first() else {
        return blocks(cores, ranks, need, false, domain);
    };
    let mut groups: Vec<(usize, Vec<Core>)> = Vec::new();
    for c in cores {
        match groups.iter_mut().find(|(k, _)| *k == key(c)) {
            Some((_, g)) => g.push(c.clone()),
            None => groups.push((key(c), vec![c.clone()])),
        }
    }
    if groups.len() < 2 {
        return spread(cores, ranks, deeper, need, domain);
    }
    let weights: Vec<usize> = groups.iter().map(|(_, g)| g.len()).collect();
    let caps: Vec<usize> = groups.iter().map(|(_, g)| need.fits(g)).collect();
    // Kinds are filled the most capable first (ranks on E cores only once the P cores are
    // full); the other levels share ranks in proportion to their cores.
    let shared = match *name {
        "kind" => fill(ranks, &caps),
        _ => apportion(ranks, &weights, &caps),
    };
    let Some(given) = shared else {
        // Ranks of unlike cores run at the pace of their slowest: a looser fit of like cores
        // comes first (the caller tries it), before ranks span kinds.
        if *name == "kind" {
            return None;
        }
        // The groups cannot hold the ranks on their own: ranks span them.
        return blocks(cores, ranks, need, false, domain);
    };
    let mut out = Vec::new();
    for ((k, g), n) in groups.iter().zip(given) {
        if n > 0 {
            out.extend(spread(g, n, deeper, need, &label(name, *k, g))?);
        }
    }
    Some(out)
}

/// `ranks` ranks on consecutive cores of `cores`, (domain, cpus) each. On whole cores: as few
/// each as hold a rank when `packed`, else the cores shared out evenly (a rank's threads on the
/// first of its share). On any cpus: `threads` consecutive cpus each, core by core.
fn blocks(
    cores: &[Core],
    ranks: usize,
    need: Need,
    packed: bool,
    domain: &str,
) -> Option<Vec<(String, Vec<usize>)>> {
    let name = |r: usize| match ranks {
        1 => domain.to_string(),
        _ => format!("part {} of {} of {domain}", r + 1, ranks),
    };
    if need.fit == Fit::Cpus {
        let cpus: Vec<usize> = cores.iter().flat_map(|c| c.cpus.iter().copied()).collect();
        if cpus.len() < ranks * need.threads {
            return None;
        }
        return Some(
            cpus.chunks(need.threads)
                .take(ranks)
                .enumerate()
                .map(|(r, chunk)| {
                    let mine: Vec<Core> = cores
                        .iter()
                        .map(|c| Core {
                            cpus: c
                                .cpus
                                .iter()
                                .copied()
                                .filter(|x| chunk.contains(x))
                                .collect(),
                            ..c.clone()
                        })
                        .filter(|c| !c.cpus.is_empty())
                        .collect();
                    (name(r), threads_on(&mine, need.threads))
                })
                .collect(),
        );
    }
    // Shared out evenly, as hwloc-distrib shares them: rank r's cores end at r+1 n-ths of
    // the whole, rounded down; where a share is too small for a rank, as few as hold one.
    let n = cores.len();
    let even: Vec<&[Core]> = (0..ranks)
        .map(|r| &cores[r * n / ranks..(r + 1) * n / ranks])
        .collect();
    if !packed && even.iter().all(|share| need.fits(share) >= 1) {
        return Some(
            even.iter()
                .enumerate()
                .map(|(r, share)| (name(r), threads_on(share, need.threads)))
                .collect(),
        );
    }
    let mut out = Vec::new();
    let mut rest = cores;
    for r in 0..ranks {
        let mut size = need.least(rest)?;
        if !packed {
            let even = rest.len() / (ranks - r);
            while size < even && need.fits(&rest[size + 1..]) >= ranks - r - 1 {
                size += 1;
            }
        }
        out.push((name(r), threads_on(&rest[..size], need.threads)));
        rest = &rest[size..];
    }
    Some(out)
}

/// The cpus a rank's threads take from its cores: the first cpu of each core in order, then
/// the second of each, and so on: distinct cores before siblings.
fn threads_on(cores: &[Core], threads: usize) -> Vec<usize> {
    let widest = cores.iter().map(|c| c.cpus.len()).max().unwrap_or(0);
    (0..widest)
        .flat_map(|i| cores.iter().filter_map(move |c| c.cpus.get(i).copied()))
        .take(threads)
        .collect()
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
    #[error("{ranks} ranks x {threads} threads need {need} cpus; this process may use {have} ({allowed}): at most {ranks} x {} or {} x {threads} fit", have / ranks, have / threads)]
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
/// `allowed` cpus of `t`: every rank its `threads` cpus, no cpu twice, on cores of their own
/// while there are cores enough; spread balances ranks over packages, then nodes, dies and
/// last-level caches, each rank within one domain where one holds it.
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
    if ranks == 0 || threads == 0 {
        return Err(PlanError::Zero);
    }
    let need = ranks * threads;
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
        for why in &costs.set_aside {
            notes.push(format!("set aside: {why}"));
        }
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
            "{} measured to share a core the topology does not show (--policy by-cost keeps them apart)",
            crate::units::counted(hidden.len(), "cpu pair")
        ));
    }
    let all = cores(t, allowed, if by_cost { &hidden } else { &[] });
    let place = |fit: Fit| {
        let need = Need { threads, fit };
        match policy {
            Policy::Compact => blocks(&all, ranks, need, true, "the machine"),
            Policy::Spread | Policy::ByCost => spread(&all, ranks, &LEVELS, need, "the machine"),
        }
    };
    // The tightest fit that holds every rank: a core a thread while there are cores enough,
    // else whole cores a rank, else any cpus (ranks x threads <= cpus always holds then).
    let first = if need <= all.len() {
        Fit::Distinct
    } else {
        Fit::WholeCores
    };
    let kinds = {
        let mut k: Vec<usize> = all.iter().map(|c| c.kind).collect();
        k.dedup();
        k.len()
    };
    let strict = place(first)
        .or_else(|| place(Fit::WholeCores))
        .or_else(|| place(Fit::Cpus));
    if kinds > 1 {
        notes.push(match strict {
            Some(_) => format!("cores of {kinds} kinds (P and E cores): each rank on cores of one kind, the most capable first"),
            None => format!("cores of {kinds} kinds (P and E cores): no fit keeps each rank to one kind; ranks span them and run at the pace of their slowest cores"),
        });
    }
    let any = Need {
        threads,
        fit: Fit::Cpus,
    };
    let placed = strict
        .or_else(|| blocks(&all, ranks, any, true, "the machine"))
        .expect("ranks x threads fit the allowed cpus");
    let node_of = |cpu: usize| t.cpu(cpu).map_or(0, |c| c.node);
    let ranks: Vec<Rank> = placed
        .into_iter()
        .enumerate()
        .map(|(rank, (domain, cpus))| {
            let mut local: Vec<usize> = cpus.iter().map(|&c| node_of(c)).collect();
            local.sort_unstable();
            local.dedup();
            let local = usable_memory(t, local);
            let memory = match (by_cost, local.as_slice()) {
                (true, [one]) => vec![fastest_memory(costs, *one).unwrap_or(*one)],
                _ => local,
            };
            let mut packages: Vec<usize> = cpus
                .iter()
                .filter_map(|&c| t.cpu(c).map(|x| x.package))
                .collect();
            packages.sort_unstable();
            packages.dedup();
            Rank {
                rank,
                cpus,
                memory,
                domain,
                packages,
            }
        })
        .collect();
    let shared_cores = all
        .iter()
        .filter(|c| {
            c.cpus
                .iter()
                .filter(|x| ranks.iter().any(|r| r.cpus.contains(x)))
                .count()
                > 1
        })
        .count();
    if shared_cores > 0 {
        notes.push(format!(
            "{need} threads on {} cores: {} two threads or more (SMT siblings)",
            all.len(),
            match shared_cores {
                1 => "1 core holds".to_string(),
                n => format!("{n} cores hold"),
            }
        ));
    }
    for n in t.nodes.iter().filter(|n| n.cpus.is_empty()) {
        let what = [
            n.kind
                .as_deref()
                .map(|k| crate::text::printable(k).to_string()),
            n.memory.map(crate::units::bytes),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", ");
        notes.push(format!(
            "node {} ({}) has memory and no cpus: no rank's memory is put there; `numactl --preferred={}` (or --membind) in a rank's line uses it",
            n.id,
            match what.is_empty() {
                true => "memory only".to_string(),
                false => what,
            },
            n.id
        ));
    }
    Ok(Plan {
        policy,
        ranks,
        shared_cores,
        notes,
    })
}

/// The nodes of `local` this process may allocate from (those the topology lists: an offline
/// node, or one a cpuset keeps away, is not there); when none is, the listed nodes with cpus
/// nearest to them by the firmware's distances (all with cpus when there are none).
fn usable_memory(t: &Topology, local: Vec<usize>) -> Vec<usize> {
    let listed = |n: &usize| t.nodes.iter().any(|x| x.id == *n);
    let usable: Vec<usize> = local.iter().copied().filter(listed).collect();
    if !usable.is_empty() || t.nodes.is_empty() {
        return usable;
    }
    let distance = |to: usize| {
        local
            .iter()
            .filter_map(|&from| {
                let row = &t.nodes.iter().find(|n| n.id == from)?.distances;
                let col = t.nodes.iter().position(|n| n.id == to)?;
                row.get(col).copied()
            })
            .min()
            .unwrap_or(u32::MAX)
    };
    let with_cpus: Vec<usize> = t
        .nodes
        .iter()
        .filter(|n| !n.cpus.is_empty())
        .map(|n| n.id)
        .collect();
    let best = with_cpus
        .iter()
        .map(|&n| distance(n))
        .min()
        .unwrap_or(u32::MAX);
    with_cpus
        .into_iter()
        .filter(|&n| distance(n) == best)
        .collect()
}

/// The memory node measured fastest from cpu node `node`, when it beats the local node by more
/// than [`REAL_DIFFERENCE`] (a closer figure is within what two runs of one machine differ by:
/// 157 vs 158 ns sent a guest's memory to the other socket).
fn fastest_memory(costs: &Costs, node: usize) -> Option<usize> {
    let local = *costs.memory.get(&(node, node))?;
    costs
        .memory
        .iter()
        .filter(|((c, _), &ns)| *c == node && ns < local * (1.0 - REAL_DIFFERENCE))
        .min_by(|a, b| a.1.total_cmp(b.1))
        .map(|((_, m), _)| *m)
}

/// How much faster another node's memory must measure than the local one's to be chosen.
pub const REAL_DIFFERENCE: f64 = 0.10;

/// The lines that put a plan in place, for `program` (its words, shell-quoted here).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lines {
    /// One `numactl` line per rank.
    pub numactl: Vec<String>,
    /// One `srun` line for the whole job (masks and memory in rank order).
    pub srun: String,
    /// One `srun` line for every node of an allocation of like nodes: the plan's ranks on each
    /// (`--ntasks-per-node`; the masks apply to each node's local ranks), the step's cpus its
    /// own (`--exclusive`).
    pub srun_per_node: String,
    /// The OpenMP environment of each rank.
    pub openmp: Vec<String>,
    /// One `likwid-pin` line per rank.
    pub likwid_pin: Vec<String>,
    /// Open MPI's `mpirun` with `--map-by ppr:N:package:pe=T` when every package holds as
    /// many ranks of whole distinct cores; else none (the wrapper places any plan).
    pub openmpi: Vec<String>,
    /// Intel MPI's `mpirun` with each rank's mask in `I_MPI_PIN_DOMAIN`.
    pub intel_mpi: String,
    /// One `hwloc-bind` line per rank (OS indexes).
    pub hwloc_bind: Vec<String>,
    /// A POSIX shell script that binds the rank it runs as (by its local rank, as Slurm, Open
    /// MPI and Intel MPI give it) and its memory, then runs the program it is given.
    pub wrapper: String,
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
    let nodes = |r: &Rank| r.memory.iter().copied().collect::<CpuSet>().to_list();
    // srun binds a task's memory to one node each (map_mem), or to its cpus' nodes (local).
    let mem_bind = match plan.ranks.iter().all(|r| r.memory.len() == 1) {
        true => format!(
            "map_mem:{}",
            plan.ranks.iter().map(nodes).collect::<Vec<_>>().join(",")
        ),
        false => "local".to_string(),
    };
    Lines {
        numactl: plan
            .ranks
            .iter()
            .map(|r| {
                format!(
                    "numactl --physcpubind={} --{}={} -- {program}",
                    list(&r.cpus),
                    if r.memory.len() == 1 { "membind" } else { "interleave" },
                    nodes(r)
                )
            })
            .collect(),
        srun: format!(
            "srun --ntasks={} --cpus-per-task={threads} --cpu-bind=mask_cpu:{} --mem-bind={mem_bind} {program}",
            plan.ranks.len(),
            masks.join(","),
        ),
        srun_per_node: format!(
            "srun --ntasks-per-node={} --cpus-per-task={threads} --exclusive --cpu-bind=mask_cpu:{} --mem-bind={mem_bind} {program}",
            plan.ranks.len(),
            masks.join(","),
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
        openmpi: per_package(plan)
            .map(|n| {
                format!(
                    "mpirun -np {} --map-by ppr:{n}:package:pe={threads} --bind-to core {program}",
                    plan.ranks.len()
                )
            })
            .into_iter()
            .collect(),
        intel_mpi: format!(
            "I_MPI_PIN_DOMAIN='[{}]' mpirun -np {} {program}",
            masks
                .iter()
                .map(|m| m.trim_start_matches("0x"))
                .collect::<Vec<_>>()
                .join(","),
            plan.ranks.len()
        ),
        hwloc_bind: plan
            .ranks
            .iter()
            .map(|r| {
                let pus: Vec<String> = r.cpus.iter().map(|c| format!("pu:{c}")).collect();
                let mem: Vec<String> = r.memory.iter().map(|n| format!("node:{n}")).collect();
                format!(
                    "hwloc-bind -p {} --membind {} -- {program}",
                    pus.join(" "),
                    mem.join(" ")
                )
            })
            .collect(),
        wrapper: wrapper(plan),
    }
}

/// Ranks per package when every package of the plan holds as many, each rank of one package
/// on distinct cores (what Open MPI's `ppr:N:package:pe=T` lays out).
fn per_package(plan: &Plan) -> Option<usize> {
    if plan.shared_cores > 0 {
        return None;
    }
    let mut count: BTreeMap<usize, usize> = BTreeMap::new();
    for r in &plan.ranks {
        match r.packages.as_slice() {
            [one] => *count.entry(*one).or_default() += 1,
            _ => return None,
        }
    }
    let n = *count.values().next()?;
    count.values().all(|&c| c == n).then_some(n)
}

/// The per-rank wrapper ([`Lines::wrapper`]).
fn wrapper(plan: &Plan) -> String {
    let mut s = String::from(
        "#!/bin/sh\n# Written by oslab bind: binds the local rank it runs as, then runs \"$@\".\n\
         r=${SLURM_LOCALID:-${OMPI_COMM_WORLD_LOCAL_RANK:-${MPI_LOCALRANKID:-}}}\n\
         case \"$r\" in\n",
    );
    for r in &plan.ranks {
        let cpus = r.cpus.iter().copied().collect::<CpuSet>().to_list();
        let places: Vec<String> = r.cpus.iter().map(|c| format!("{{{c}}}")).collect();
        let nodes = r.memory.iter().copied().collect::<CpuSet>().to_list();
        let mem = if r.memory.len() == 1 {
            "membind"
        } else {
            "interleave"
        };
        s += &format!(
            "{}) export OMP_NUM_THREADS={} OMP_PLACES='{}' OMP_PROC_BIND=close\n   exec numactl --physcpubind={cpus} --{mem}={nodes} -- \"$@\" ;;\n",
            r.rank,
            r.cpus.len(),
            places.join(",")
        );
    }
    s += &format!(
        "*) echo \"bind.sh: local rank '$r' is not one of the plan's 0-{}\" >&2; exit 1 ;;\nesac\n",
        plan.ranks.len().saturating_sub(1)
    );
    s
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
            assert_eq!(rank.memory, [r]);
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
            l.srun_per_node,
            "srun --ntasks-per-node=2 --cpus-per-task=4 --exclusive --cpu-bind=mask_cpu:0xf,0xf0 --mem-bind=map_mem:0,1 ./a.out 'x y'"
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
        let nodes: Vec<Vec<usize>> = p.ranks.iter().map(|r| r.memory.clone()).collect();
        assert_eq!(nodes, [[0], [1], [2], [3]]);
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
        // Distinct cores first, then their siblings.
        assert_eq!(p.ranks[0].cpus, [0, 1, 2, 3, 8, 9, 10, 11]);
        let err = plan_on(&t, 3, 8, Policy::Spread).unwrap_err();
        assert!(
            err.to_string().contains("need 24 cpus")
                && err.to_string().contains("at most 3 x 5 or 2 x 8 fit"),
            "{err}"
        );
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

    /// A machine of `packages` x `dies` x `cores` x `smt`, a node per die (or per package),
    /// each die its own L3, core ids repeating in each die as Linux numbers them.
    fn shaped(
        packages: usize,
        dies: usize,
        cores: usize,
        smt: usize,
        node_per_die: bool,
    ) -> Topology {
        let mut t = Topology::synthetic(1, 1, 1, 1);
        let per_pkg = dies * cores;
        let all = packages * per_pkg;
        t.cpus.clear();
        for thread in 0..smt {
            for k in 0..all {
                let (p, d, c) = (k / per_pkg, k % per_pkg / cores, k % cores);
                t.cpus.push(crate::topology::Cpu {
                    id: thread * all + k,
                    package: p,
                    die: d,
                    core: c,
                    node: if node_per_die { p * dies + d } else { p },
                    smt_siblings: (0..smt).map(|s| s * all + k).collect(),
                    kind: 0,
                });
            }
        }
        let of = |f: &dyn Fn(&crate::topology::Cpu) -> bool| -> CpuSet {
            t.cpus.iter().filter(|c| f(c)).map(|c| c.id).collect()
        };
        let node_count = if node_per_die {
            packages * dies
        } else {
            packages
        };
        let nodes: Vec<crate::topology::Node> = (0..node_count)
            .map(|n| crate::topology::Node {
                id: n,
                cpus: of(&|c| c.node == n),
                memory: None,
                distances: vec![],
                hmat: None,
                hmat_table: vec![],
                kind: None,
            })
            .collect();
        let caches: Vec<crate::topology::Cache> = (0..packages * dies)
            .map(|pd| crate::topology::Cache {
                level: 3,
                kind: crate::topology::CacheKind::Unified,
                size: 32 << 20,
                line: Some(64),
                ways: None,
                cpus: of(&|c| c.package * dies + c.die == pd),
            })
            .collect();
        (t.nodes, t.caches) = (nodes, caches);
        t
    }

    /// What every plan must hold (issue 86): each rank its `threads` cpus, no cpu twice, only
    /// allowed cpus, distinct cores while there are cores enough, every package used when there
    /// are ranks enough (spread), memory on the rank's own nodes.
    fn holds(
        t: &Topology,
        allowed: &CpuSet,
        ranks: usize,
        threads: usize,
        policy: Policy,
    ) -> Result<(), String> {
        let p = plan(t, allowed, ranks, Some(threads), policy, &Costs::default())
            .map_err(|e| format!("no plan: {e}"))?;
        let shape = format!("{ranks}x{threads} {policy:?}");
        let mut seen = CpuSet::new();
        for r in &p.ranks {
            if r.cpus.len() != threads {
                return Err(format!(
                    "{shape}: rank {} has {} cpus",
                    r.rank,
                    r.cpus.len()
                ));
            }
            for &c in &r.cpus {
                if !allowed.contains(c) || seen.contains(c) {
                    return Err(format!("{shape}: cpu {c} disallowed or taken twice: {p:?}"));
                }
                seen.insert(c);
            }
            let mut nodes: Vec<usize> = r.cpus.iter().map(|&c| t.cpu(c).unwrap().node).collect();
            nodes.sort_unstable();
            nodes.dedup();
            if r.memory != nodes {
                return Err(format!(
                    "{shape}: rank {} memory {:?}, cpus on {nodes:?}",
                    r.rank, r.memory
                ));
            }
        }
        let cores = t.cores_among(allowed).len();
        if ranks * threads <= cores && p.shared_cores > 0 {
            return Err(format!(
                "{shape}: {} shared cores with {cores} free: {p:?}",
                p.shared_cores
            ));
        }
        let packages: std::collections::BTreeSet<usize> = t
            .cpus
            .iter()
            .filter(|c| allowed.contains(c.id))
            .map(|c| c.package)
            .collect();
        let used: std::collections::BTreeSet<usize> =
            seen.iter().map(|c| t.cpu(c).unwrap().package).collect();
        if policy == Policy::Spread && ranks >= packages.len() && used.len() < packages.len() {
            return Err(format!("{shape}: packages {used:?} of {packages:?} used"));
        }
        Ok(())
    }

    #[test]
    fn every_rank_gets_its_cpus_on_every_shape() {
        let mut shapes = Vec::new();
        for (pk, di, co, sm, npd) in [
            (2, 1, 8, 2, false),  // Xeon 2S with hyperthreads (the empty ranks)
            (2, 1, 18, 2, false), // Skylake 2x6140
            (2, 2, 6, 1, true),   // Opteron 6174: two dies a package, core ids repeated
            (2, 4, 8, 2, true),   // EPYC-like: dies with their own L3 and node (NPS4)
            (2, 12, 8, 2, false), // EPYC 9654: 12 CCDs a package, one node a package
            (1, 4, 16, 4, true),  // KNL SNC4
            (4, 1, 4, 2, false),  // the 4s-smt guest
            (2, 1, 4, 1, false),  // the 2s guest
            (1, 1, 3, 2, false),
            (3, 1, 5, 1, false), // odd counts
        ] {
            shapes.push((
                format!("{pk}p x {di}d x {co}c x {sm}t"),
                shaped(pk, di, co, sm, npd),
            ));
        }
        let mut tried = 0;
        for (name, t) in &shapes {
            let cores = t.cores();
            let cpus = t.cpus.len();
            let all = t.online();
            // A cgroup that took the first and last core away (and one sibling).
            let limited: CpuSet = all
                .iter()
                .filter(|c| ![0, cpus - 1, cpus / 2].contains(c))
                .collect();
            for allowed in [&all, &limited] {
                let have = t.cpus.iter().filter(|c| allowed.contains(c.id)).count();
                for ranks in [1, 2, 3, 4, 8, 16] {
                    // Filling the cores, filling the cpus, and a few threads each.
                    for threads in [cores / ranks, have / ranks, 1, 2] {
                        if threads == 0 || ranks * threads > have {
                            continue;
                        }
                        for policy in [Policy::Spread, Policy::Compact] {
                            tried += 1;
                            if let Err(e) = holds(t, allowed, ranks, threads, policy) {
                                panic!("{name}: {e}");
                            }
                        }
                    }
                }
            }
        }
        assert!(tried > 300, "{tried}");
    }

    #[test]
    fn filling_a_node_matches_hwloc_distrib() {
        // 2 x 8 cores x 2 threads, 4 ranks x 8 threads: each rank 4 cores and their siblings,
        // two ranks a package (hwloc-distrib --single 4, srun -m block:cyclic -c 8).
        let t = shaped(2, 1, 8, 2, false);
        let p = plan_on(&t, 4, 8, Policy::Spread).unwrap();
        let cpus: Vec<Vec<usize>> = p.ranks.iter().map(|r| r.cpus.clone()).collect();
        assert_eq!(cpus[0], [0, 1, 2, 3, 16, 17, 18, 19]);
        assert_eq!(cpus[3], [12, 13, 14, 15, 28, 29, 30, 31]);
        // EPYC 2 x 96 cores, 4 ranks x 16: two ranks a package, never all on the first.
        let t = shaped(2, 12, 8, 2, false);
        let p = plan_on(&t, 4, 16, Policy::Spread).unwrap();
        let pk: Vec<usize> = p.ranks.iter().map(|r| package_of(&t, r.cpus[0])).collect();
        assert_eq!(pk, [0, 0, 1, 1]);
        // Opteron 6174: 24 cores, 48 with the dies told apart.
        let t = shaped(2, 2, 6, 1, true);
        assert_eq!(t.cores(), 24);
        let p = plan_on(&t, 4, 6, Policy::Spread).unwrap();
        let nodes: Vec<Vec<usize>> = p.ranks.iter().map(|r| r.memory.clone()).collect();
        assert_eq!(nodes, [[0], [1], [2], [3]]);
        // A rank across two nodes interleaves its memory.
        let t = shaped(1, 2, 4, 1, true);
        let p = plan_on(&t, 1, 8, Policy::Spread).unwrap();
        assert_eq!(p.ranks[0].memory, [0, 1]);
        let l = lines(&p, &[]);
        assert!(
            l.numactl[0].contains("--interleave=0-1"),
            "{}",
            l.numactl[0]
        );
        assert!(l.srun.contains("--mem-bind=local"), "{}", l.srun);
    }

    /// An i7-1370P: 6 P cores with two threads, 8 E cores with one (cpus 0-11, 12-19).
    fn hybrid() -> Topology {
        let mut t = shaped(1, 1, 14, 1, false);
        t.cpus.clear();
        for core in 0..6 {
            for thread in 0..2 {
                t.cpus.push(crate::topology::Cpu {
                    id: core * 2 + thread,
                    package: 0,
                    die: 0,
                    core,
                    node: 0,
                    smt_siblings: [core * 2, core * 2 + 1].into_iter().collect(),
                    kind: 0,
                });
            }
        }
        for e in 0..8 {
            t.cpus.push(crate::topology::Cpu {
                id: 12 + e,
                package: 0,
                die: 0,
                core: 6 + e,
                node: 0,
                smt_siblings: CpuSet::single(12 + e),
                kind: 1,
            });
        }
        t.nodes[0].cpus = t.online();
        t.caches.clear();
        t
    }

    #[test]
    fn ranks_keep_to_one_kind_of_core() {
        let t = hybrid();
        let kind = |c: usize| t.cpu(c).unwrap().kind;
        // 2 x 7: one rank on the P cores (six of them and a sibling), one on seven E cores; the
        // old plan gave rank 0 six P cores and an E core.
        let p = plan_on(&t, 2, 7, Policy::Spread).unwrap();
        for r in &p.ranks {
            let kinds: std::collections::BTreeSet<usize> =
                r.cpus.iter().map(|&c| kind(c)).collect();
            assert_eq!(kinds.len(), 1, "{p:?}");
        }
        assert_eq!(kind(p.ranks[0].cpus[0]), 0);
        assert!(p.notes.iter().any(|n| n.contains("one kind")), "{p:?}");
        // One rank of one thread takes a P core.
        let p = plan_on(&t, 1, 1, Policy::Spread).unwrap();
        assert_eq!(kind(p.ranks[0].cpus[0]), 0, "{p:?}");
        // Every shape still holds the invariants.
        for ranks in [1, 2, 3, 4, 8] {
            for threads in [1, 2, 20 / ranks] {
                if ranks * threads <= 20 {
                    holds(&t, &t.online(), ranks, threads, Policy::Spread).unwrap();
                }
            }
        }
    }
}
