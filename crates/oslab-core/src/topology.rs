//! The machine's shape, as data: cpus, cores, packages, caches and NUMA nodes.
//!
//! `oslab-os`'s `topology` reads it from sysfs, below any root directory (normally
//! `/sys/devices/system`), so tests describe machines this one is not (two sockets, four NUMA
//! nodes) with a directory of small files.

use crate::cpuset::CpuSet;

pub mod acpi_hmat;
pub mod hwloc;

use serde::{Deserialize, Serialize};

use std::path::PathBuf;

/// Errors reading the topology.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// A file that must exist could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file held something we cannot parse.
    #[error("unexpected content in {path}: {content:?}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What it held.
        content: String,
    },
}

/// One logical CPU (hardware thread).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cpu {
    /// Logical CPU number.
    pub id: usize,
    /// Physical package (socket) id.
    pub package: usize,
    /// Die id within the package (0 where the kernel gives none; an AMD CCD, a Xeon die).
    #[serde(default)]
    pub die: usize,
    /// Core id within the package.
    pub core: usize,
    /// NUMA node (0 when the kernel exposes none).
    pub node: usize,
    /// Hardware threads on the same core, including this one.
    pub smt_siblings: CpuSet,
    /// Its kind of core, 0 the most capable (Intel's P cores, an Arm big core), 1 the next (E
    /// cores, LITTLE), ...: 0 on a machine of one kind.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub kind: usize,
}

fn is_zero(k: &usize) -> bool {
    *k == 0
}

/// Kind of cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheKind {
    /// Data cache.
    Data,
    /// Instruction cache.
    Instruction,
    /// Unified cache.
    Unified,
}

/// One cache instance, shared by `cpus`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cache {
    /// Level (1, 2, 3, ...).
    pub level: u8,
    /// Data, instruction or unified.
    pub kind: CacheKind,
    /// Size in bytes.
    pub size: u64,
    /// Line size in bytes, when known.
    pub line: Option<u32>,
    /// Associativity, when known.
    pub ways: Option<u32>,
    /// CPUs sharing this instance.
    pub cpus: CpuSet,
}

/// One NUMA node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    /// Node id.
    pub id: usize,
    /// CPUs of the node.
    pub cpus: CpuSet,
    /// Memory of the node in bytes, when known.
    pub memory: Option<u64>,
    /// SLIT distances to every node, in node-id order (10 = local).
    pub distances: Vec<u32>,
    /// What the firmware's HMAT says of this node's memory, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hmat: Option<Hmat>,
    /// What the firmware's whole table says of this node's memory from every initiator, one
    /// entry each (root reads `/sys/firmware/acpi/tables/HMAT`; empty where it was not read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hmat_table: Vec<Hmat>,
    /// The kind of its memory where something says: hwloc's subtype (`HBM`, `MCDRAM`, `NVM`,
    /// `CXL-DRAM`), or the kernel's memory tier relative to the cpus' memory (`slower tier`,
    /// `faster tier`). None: plain memory, or not said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

impl Node {
    /// The firmware's figures for this node's memory from cpu node `initiator`: the whole table's
    /// pair where it was read, else the kernel's when that initiator is among the best.
    pub fn hmat_from(&self, initiator: usize) -> Option<&Hmat> {
        self.hmat_table
            .iter()
            .find(|h| h.initiators == [initiator])
            .or_else(|| {
                self.hmat
                    .as_ref()
                    .filter(|h| h.initiators.contains(&initiator))
            })
    }
}

/// The memory performance the firmware's Heterogeneous Memory Attribute Table gives for one
/// memory node, as the kernel exposes it (`nodeN/access0/initiators`: from its best-performing
/// initiators, Documentation/admin-guide/mm/numaperf.rst). A figure the table leaves out is None.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hmat {
    /// The initiator nodes those figures are from.
    pub initiators: Vec<usize>,
    /// Read latency in ns.
    pub read_latency_ns: Option<u64>,
    /// Write latency in ns.
    pub write_latency_ns: Option<u64>,
    /// Read bandwidth in MB/s.
    pub read_bandwidth_mbs: Option<u64>,
    /// Write bandwidth in MB/s.
    pub write_bandwidth_mbs: Option<u64>,
}

/// The context key of a NUMA matrix cell's read latency as the HMAT gives it (ns).
pub const HMAT_LATENCY: &str = "hmat_read_latency_ns";

/// The context key of a NUMA matrix cell's read bandwidth as the HMAT gives it (MB/s).
pub const HMAT_BANDWIDTH: &str = "hmat_read_bandwidth_mbs";

/// The whole machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    /// Online CPUs, by id.
    pub cpus: Vec<Cpu>,
    /// Distinct cache instances, by level then first CPU.
    pub caches: Vec<Cache>,
    /// NUMA nodes (one synthetic node 0 with every CPU when the kernel has no NUMA support).
    pub nodes: Vec<Node>,
}

impl Topology {
    /// `packages` x `nodes_per` nodes x `cores_per` cores x `smt` threads, cpus numbered core by
    /// core across the machine first (as Linux numbers a two-socket SMT server: siblings last),
    /// one L3 per node: a machine no host here is, for tests and examples.
    pub fn synthetic(packages: usize, nodes_per: usize, cores_per: usize, smt: usize) -> Topology {
        let cores = packages * nodes_per * cores_per;
        let mut cpus = Vec::new();
        for t in 0..smt {
            for core in 0..cores {
                let siblings: CpuSet = (0..smt).map(|s| s * cores + core).collect();
                cpus.push(Cpu {
                    id: t * cores + core,
                    package: core / (nodes_per * cores_per),
                    die: 0,
                    core,
                    node: core / cores_per,
                    smt_siblings: siblings,
                    kind: 0,
                });
            }
        }
        let nodes = packages * nodes_per;
        let node_cpus =
            |n: usize| -> CpuSet { cpus.iter().filter(|c| c.node == n).map(|c| c.id).collect() };
        let caches = (0..nodes)
            .map(|n| Cache {
                level: 3,
                kind: CacheKind::Unified,
                size: 32 << 20,
                line: Some(64),
                ways: None,
                cpus: node_cpus(n),
            })
            .collect();
        let nodes = (0..nodes)
            .map(|n| Node {
                id: n,
                cpus: node_cpus(n),
                memory: None,
                distances: vec![],
                hmat: None,
                hmat_table: vec![],
                kind: None,
            })
            .collect();
        Topology {
            cpus,
            caches,
            nodes,
        }
    }

    /// Every online CPU.
    pub fn online(&self) -> CpuSet {
        self.cpus.iter().map(|c| c.id).collect()
    }

    /// The CPU with this id, if online.
    pub fn cpu(&self, id: usize) -> Option<&Cpu> {
        self.cpus.iter().find(|c| c.id == id)
    }

    /// Number of packages (sockets).
    pub fn packages(&self) -> usize {
        let mut p: Vec<usize> = self.cpus.iter().map(|c| c.package).collect();
        p.sort_unstable();
        p.dedup();
        p.len()
    }

    /// Number of physical cores.
    pub fn cores(&self) -> usize {
        let mut c: Vec<(usize, usize, usize)> = self
            .cpus
            .iter()
            .map(|c| (c.package, c.die, c.core))
            .collect();
        c.sort_unstable();
        c.dedup();
        c.len()
    }

    /// The cpus of `cpus` grouped by the physical core they are threads of, in (package, die, core)
    /// order, each group ascending: what places one thread per core.
    pub fn cores_among(&self, cpus: &CpuSet) -> Vec<Vec<usize>> {
        // Linux repeats core ids in each die of a package (an Opteron 6174's two dies).
        let mut by_core: std::collections::BTreeMap<(usize, usize, usize), Vec<usize>> =
            Default::default();
        for c in self.cpus.iter().filter(|c| cpus.contains(c.id)) {
            by_core
                .entry((c.package, c.die, c.core))
                .or_default()
                .push(c.id);
        }
        by_core
            .into_values()
            .map(|mut v| {
                v.sort_unstable();
                v
            })
            .collect()
    }

    /// The machine's shape in words: sockets, cores, threads and NUMA nodes (those without cpus
    /// counted apart), e.g. "2 sockets x 4 cores x 2 threads, 2 NUMA nodes". Two machines of one
    /// shape can be compared measurement by measurement; two of different shapes cannot.
    pub fn shape(&self) -> String {
        let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        let (packages, cores) = (self.packages().max(1), self.cores().max(1));
        let cpuless = self.nodes.iter().filter(|n| n.cpus.is_empty()).count();
        let mut s = format!(
            "{} x {} x {}, {}",
            plural(packages, "socket"),
            plural(cores / packages, "core"),
            plural(self.cpus.len() / cores, "thread"),
            plural(self.nodes.len().max(1), "NUMA node")
        );
        if cpuless > 0 {
            s += &format!(" ({cpuless} without cpus)");
        }
        s
    }

    /// The largest data or unified cache level present, with the size of one instance.
    pub fn last_level_cache(&self) -> Option<&Cache> {
        self.caches
            .iter()
            .filter(|c| c.kind != CacheKind::Instruction)
            .max_by_key(|c| (c.level, c.size))
    }

    /// The data/unified caches that `cpu` uses, from L1 up.
    pub fn caches_of(&self, cpu: usize) -> Vec<&Cache> {
        self.caches
            .iter()
            .filter(|c| c.kind != CacheKind::Instruction && c.cpus.contains(cpu))
            .collect()
    }

    /// How far apart two CPUs are, in words: "same cpu", "SMT sibling", "shared L2", "shared L3",
    /// "same package", "other package", or "other NUMA node" whatever they share.
    pub fn distance_class(&self, a: usize, b: usize) -> &'static str {
        let other_node = match (self.cpu(a), self.cpu(b)) {
            (Some(x), Some(y)) => x.node != y.node,
            _ => false,
        };
        match self.distance_rank(a, b) {
            _ if other_node => "other NUMA node",
            0 => "same cpu",
            1 => "SMT sibling",
            2 => "shared L2",
            3 => "shared L3",
            4 => "same package",
            _ => "other package",
        }
    }

    /// [`Topology::distance_class`], with cpus on other NUMA nodes told apart by package and SLIT
    /// distance: "same package, other NUMA node (SLIT distance 11)" (sub-NUMA clusters), "other
    /// package (SLIT distance 21)". One class for every cross-node pair mixed distances of 16
    /// and 32 on an 8-node machine.
    pub fn pair_class(&self, a: usize, b: usize) -> String {
        let class = self.distance_class(a, b);
        if class != "other NUMA node" {
            return class.to_string();
        }
        let same_package =
            matches!((self.cpu(a), self.cpu(b)), (Some(x), Some(y)) if x.package == y.package);
        let distance = match self.node_distance(a, b) {
            0 => String::new(),
            d => format!(" (SLIT distance {d})"),
        };
        match same_package {
            true => format!("same package, other NUMA node{distance}"),
            false => format!("other package{distance}"),
        }
    }

    /// The SLIT distance between the nodes of cpus `a` and `b` (10 on one node), 0 when either
    /// is unknown.
    pub fn node_distance(&self, a: usize, b: usize) -> u32 {
        let (Some(ca), Some(cb)) = (self.cpu(a), self.cpu(b)) else {
            return 0;
        };
        let mut ids: Vec<usize> = self.nodes.iter().map(|n| n.id).collect();
        ids.sort_unstable();
        let to = ids.iter().position(|&id| id == cb.node);
        let from = self.nodes.iter().find(|n| n.id == ca.node);
        match (from, to) {
            (Some(n), Some(i)) => n.distances.get(i).copied().unwrap_or(0),
            _ => 0,
        }
    }

    /// How far apart two CPUs are, as a rank: 0 same CPU, 1 SMT sibling, 2 share L2, 3 share the
    /// last-level cache, 4 same package, 5 other package. Bigger means more state lost on a move.
    pub fn distance_rank(&self, a: usize, b: usize) -> u8 {
        if a == b {
            return 0;
        }
        let (Some(ca), Some(cb)) = (self.cpu(a), self.cpu(b)) else {
            return 5;
        };
        if ca.smt_siblings.contains(b) {
            return 1;
        }
        let shared_level = self
            .caches_of(a)
            .iter()
            .filter(|c| c.cpus.contains(b))
            .map(|c| c.level)
            .min();
        match shared_level {
            Some(l) if l <= 2 => 2,
            Some(_) => 3,
            None if ca.package == cb.package => 4,
            None => 5,
        }
    }
}

/// Parses a sysfs size such as "48K", "2048K", "32M".
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1u64 << 10),
        'M' | 'm' => (&s[..s.len() - 1], 1 << 20),
        'G' | 'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok().map(|n| n * mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("48K"), Some(48 << 10));
        assert_eq!(parse_size("491520K"), Some(491_520 << 10));
        assert_eq!(parse_size("2M"), Some(2 << 20));
        assert_eq!(parse_size("x"), None);
    }
}
