//! The machine's shape read from sysfs: cpus, cores, packages, caches and NUMA nodes.
//!
//! Everything is read below a root directory (normally `/sys/devices/system`), so tests describe
//! machines this one is not (two sockets, four NUMA nodes) with a directory of small files.

use crate::cpuset::CpuSet;
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};

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

impl Hmat {
    /// Reads `node_dir/access0/initiators`, if the kernel made it.
    fn read(node_dir: &Path) -> Option<Hmat> {
        let dir = node_dir.join("access0/initiators");
        let mut initiators: Vec<usize> = fs::read_dir(&dir)
            .ok()?
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.strip_prefix("node")?.parse().ok())
            .collect();
        initiators.sort_unstable();
        let figure = |name: &str| {
            read_string(&dir.join(name))
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|v| *v > 0)
        };
        Some(Hmat {
            initiators,
            read_latency_ns: figure("read_latency"),
            write_latency_ns: figure("write_latency"),
            read_bandwidth_mbs: figure("read_bandwidth"),
            write_bandwidth_mbs: figure("write_bandwidth"),
        })
    }
}

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
    /// Reads the running machine.
    pub fn read() -> Result<Topology, TopologyError> {
        Topology::read_from(Path::new("/sys/devices/system"))
    }

    /// Reads a machine described below `root` (a copy of `/sys/devices/system`).
    pub fn read_from(root: &Path) -> Result<Topology, TopologyError> {
        let online = read_cpuset(&root.join("cpu/online"))?;
        let node_of = read_node_membership(root)?;
        let mut cpus = Vec::new();
        let mut caches: Vec<Cache> = Vec::new();
        for id in online.iter() {
            let dir = root.join(format!("cpu/cpu{id}"));
            let topo = dir.join("topology");
            let package = read_num_or(&topo.join("physical_package_id"), 0)?;
            let die = read_num_or(&topo.join("die_id"), 0)?;
            let core = read_num_or(&topo.join("core_id"), id)?;
            let smt_siblings = read_cpuset(&topo.join("thread_siblings_list"))
                .unwrap_or_else(|_| CpuSet::single(id));
            cpus.push(Cpu {
                id,
                package,
                die,
                core,
                node: node_of.get(&id).copied().unwrap_or(0),
                smt_siblings,
            });
            for cache in read_caches(&dir.join("cache"))? {
                if !caches
                    .iter()
                    .any(|c| c.level == cache.level && c.kind == cache.kind && c.cpus == cache.cpus)
                {
                    caches.push(cache);
                }
            }
        }
        caches.sort_by_key(|c| (c.level, c.kind as u8, c.cpus.first().unwrap_or(0)));
        let nodes = read_nodes(root, &online)?;
        Ok(Topology {
            cpus,
            caches,
            nodes,
        })
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
        let mut c: Vec<(usize, usize)> = self.cpus.iter().map(|c| (c.package, c.core)).collect();
        c.sort_unstable();
        c.dedup();
        c.len()
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

fn read_string(path: &Path) -> Result<String, TopologyError> {
    fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|source| TopologyError::Read {
            path: path.to_path_buf(),
            source,
        })
}

fn read_cpuset(path: &Path) -> Result<CpuSet, TopologyError> {
    let s = read_string(path)?;
    CpuSet::parse_list(&s).map_err(|_| TopologyError::Parse {
        path: path.to_path_buf(),
        content: s,
    })
}

fn read_num_or(path: &Path, default: usize) -> Result<usize, TopologyError> {
    match fs::read_to_string(path) {
        Err(_) => Ok(default),
        Ok(s) => {
            // Some kernels report -1 for an unknown package or core.
            let t = s.trim();
            match t.parse::<i64>() {
                Ok(v) if v >= 0 => Ok(v as usize),
                Ok(_) => Ok(default),
                Err(_) => Err(TopologyError::Parse {
                    path: path.to_path_buf(),
                    content: t.to_string(),
                }),
            }
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

fn read_caches(dir: &Path) -> Result<Vec<Cache>, TopologyError> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(Vec::new()); // no cache information exposed (some VMs, some arm boards)
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with("index") {
            continue;
        }
        let p = entry.path();
        let level: u8 = read_num_or(&p.join("level"), 0)? as u8;
        let kind = match read_string(&p.join("type"))?.as_str() {
            "Data" => CacheKind::Data,
            "Instruction" => CacheKind::Instruction,
            _ => CacheKind::Unified,
        };
        let size_text = read_string(&p.join("size"))?;
        let size = parse_size(&size_text).ok_or_else(|| TopologyError::Parse {
            path: p.join("size"),
            content: size_text,
        })?;
        let opt = |f: &str| {
            fs::read_to_string(p.join(f))
                .ok()
                .and_then(|s| s.trim().parse::<u32>().ok())
        };
        out.push(Cache {
            level,
            kind,
            size,
            line: opt("coherency_line_size"),
            ways: opt("ways_of_associativity"),
            cpus: read_cpuset(&p.join("shared_cpu_list"))?,
        });
    }
    Ok(out)
}

fn node_dirs(root: &Path) -> Vec<usize> {
    let mut ids: Vec<usize> = fs::read_dir(root.join("node"))
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let n = e.file_name().to_string_lossy().to_string();
                    n.strip_prefix("node").and_then(|d| d.parse().ok())
                })
                .collect()
        })
        .unwrap_or_default();
    ids.sort_unstable();
    ids
}

fn read_node_membership(
    root: &Path,
) -> Result<std::collections::HashMap<usize, usize>, TopologyError> {
    let mut map = std::collections::HashMap::new();
    for id in node_dirs(root) {
        for cpu in read_cpuset(&root.join(format!("node/node{id}/cpulist")))?.iter() {
            map.insert(cpu, id);
        }
    }
    Ok(map)
}

fn read_nodes(root: &Path, online: &CpuSet) -> Result<Vec<Node>, TopologyError> {
    let ids = node_dirs(root);
    if ids.is_empty() {
        return Ok(vec![Node {
            id: 0,
            cpus: online.clone(),
            memory: None,
            distances: vec![10],
            hmat: None,
        }]);
    }
    let mut nodes = Vec::new();
    for id in ids {
        let dir = root.join(format!("node/node{id}"));
        let cpus = read_cpuset(&dir.join("cpulist"))?;
        let distances = read_string(&dir.join("distance"))
            .map(|s| {
                s.split_whitespace()
                    .filter_map(|d| d.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        let memory = fs::read_to_string(dir.join("meminfo")).ok().and_then(|m| {
            m.lines()
                .find(|l| l.contains("MemTotal:"))
                .and_then(|l| l.split_whitespace().rev().nth(1)?.parse::<u64>().ok())
                .map(|kb| kb * 1024)
        });
        nodes.push(Node {
            hmat: Hmat::read(&dir),
            id,
            cpus,
            memory,
            distances,
        });
    }
    Ok(nodes)
}

/// Writes a fake sysfs tree describing `packages` x `cores` x `threads` CPUs spread over `nodes`
/// NUMA nodes, for unit tests of rules over machine shapes (domains, thread orders, cpu lists,
/// up to hundreds of cpus) that must run in milliseconds. It stays because a guest boot cannot
/// give that; reading a real kernel's tree is tested in guests with those shapes
/// (`crates/oslab/tests/vm.rs`, `scripts/vm`).
pub fn write_fake_sysfs(
    root: &Path,
    packages: usize,
    cores: usize,
    threads: usize,
    nodes: usize,
) -> std::io::Result<()> {
    let total = packages * cores * threads;
    let w = |p: PathBuf, s: String| -> std::io::Result<()> {
        fs::create_dir_all(p.parent().unwrap_or(Path::new("/")))?;
        fs::write(p, s + "\n")
    };
    w(root.join("cpu/online"), format!("0-{}", total - 1))?;
    // Linux numbering: first thread of every core, then second threads.
    let id_of = |pkg: usize, core: usize, t: usize| t * packages * cores + pkg * cores + core;
    for pkg in 0..packages {
        for core in 0..cores {
            let sibs: CpuSet = (0..threads).map(|t| id_of(pkg, core, t)).collect();
            let pkg_cpus: CpuSet = (0..cores)
                .flat_map(|c| (0..threads).map(move |t| id_of(pkg, c, t)))
                .collect();
            for t in 0..threads {
                let id = id_of(pkg, core, t);
                let d = root.join(format!("cpu/cpu{id}"));
                w(d.join("topology/physical_package_id"), pkg.to_string())?;
                w(d.join("topology/core_id"), core.to_string())?;
                w(d.join("topology/thread_siblings_list"), sibs.to_list())?;
                let caches = [
                    (1, "Data", "48K", sibs.to_list()),
                    (1, "Instruction", "32K", sibs.to_list()),
                    (2, "Unified", "2048K", sibs.to_list()),
                    (3, "Unified", "32768K", pkg_cpus.to_list()),
                ];
                for (i, (level, kind, size, shared)) in caches.iter().enumerate() {
                    let c = d.join(format!("cache/index{i}"));
                    w(c.join("level"), level.to_string())?;
                    w(c.join("type"), kind.to_string())?;
                    w(c.join("size"), size.to_string())?;
                    w(c.join("coherency_line_size"), "64".into())?;
                    w(c.join("shared_cpu_list"), shared.clone())?;
                }
            }
        }
    }
    for n in 0..nodes {
        let cpus: CpuSet = (0..total)
            .filter(|&c| (c % (packages * cores)) * nodes / (packages * cores) == n)
            .collect();
        let d = root.join(format!("node/node{n}"));
        w(d.join("cpulist"), cpus.to_list())?;
        let dist: Vec<String> = (0..nodes)
            .map(|m| if m == n { "10".into() } else { "21".into() })
            .collect();
        w(d.join("distance"), dist.join(" "))?;
        w(
            d.join("meminfo"),
            format!("Node {n} MemTotal:       8388608 kB"),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpus_on_other_nodes_are_told_apart_by_package_and_distance() {
        // 2 packages of 2 cores, 4 nodes: each package split in two (sub-NUMA clusters).
        let dir = tempfile::tempdir().unwrap();
        write_fake_sysfs(dir.path(), 2, 2, 1, 4).unwrap();
        let t = Topology::read_from(dir.path()).unwrap();
        assert_eq!(t.distance_class(0, 1), "other NUMA node");
        assert_eq!(
            t.pair_class(0, 1),
            "same package, other NUMA node (SLIT distance 21)"
        );
        assert_eq!(t.pair_class(0, 2), "other package (SLIT distance 21)");
        // Within a node, the classes are distance_class's.
        let dir = tempfile::tempdir().unwrap();
        write_fake_sysfs(dir.path(), 1, 2, 2, 1).unwrap();
        let t = Topology::read_from(dir.path()).unwrap();
        assert_eq!(t.pair_class(0, 2), t.distance_class(0, 2));
        assert_eq!(t.pair_class(0, 2), "SMT sibling");
    }

    #[test]
    fn reads_this_machine() {
        let t = Topology::read().expect("sysfs readable");
        assert!(!t.cpus.is_empty());
        assert!(t.cores() >= 1 && t.packages() >= 1);
        assert!(!t.nodes.is_empty());
        assert_eq!(t.online().len(), t.cpus.len());
        for c in &t.caches {
            assert!(c.size >= 1024, "cache {c:?} implausibly small");
        }
    }

    #[test]
    fn reads_a_fake_two_socket_machine() {
        let dir = tempfile::tempdir().unwrap();
        write_fake_sysfs(dir.path(), 2, 4, 2, 2).unwrap();
        let t = Topology::read_from(dir.path()).unwrap();
        assert_eq!(t.cpus.len(), 16);
        assert_eq!((t.packages(), t.cores()), (2, 8));
        assert_eq!(t.nodes.len(), 2);
        assert_eq!(t.nodes[1].distances, vec![21, 10]);
        assert_eq!(t.nodes[0].memory, Some(8 << 30));
        // cpu 0 and 8 are SMT siblings; 0 and 1 share L3; 0 and 4 are on different packages.
        assert_eq!(t.distance_rank(0, 8), 1);
        assert_eq!(t.distance_rank(0, 1), 3);
        assert_eq!(t.distance_rank(0, 4), 5);
        assert_eq!(t.last_level_cache().unwrap().size, 32 << 20);
        assert_eq!(t.caches.iter().filter(|c| c.level == 3).count(), 2);
        assert_eq!(t.shape(), "2 sockets x 4 cores x 2 threads, 2 NUMA nodes");
    }

    #[test]
    fn missing_root_is_a_clear_error() {
        let err = Topology::read_from(Path::new("/nonexistent/sys")).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/sys/cpu/online"));
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("48K"), Some(48 << 10));
        assert_eq!(parse_size("491520K"), Some(491_520 << 10));
        assert_eq!(parse_size("2M"), Some(2 << 20));
        assert_eq!(parse_size("x"), None);
    }
}
