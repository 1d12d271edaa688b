//! The machine's shape read from sysfs (below any root, so tests describe machines this one is not).

use oslab_core::cpuset::CpuSet;
use oslab_core::topology::{
    parse_size, Cache, CacheKind, Cpu, Hmat, Node, Topology, TopologyError,
};
use std::fs;
use std::path::{Path, PathBuf};

/// Reads `node_dir/access0/initiators`, if the kernel made it.
fn read_hmat(node_dir: &Path) -> Option<Hmat> {
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

/// Reads the running machine, with the firmware's whole HMAT where root can read it.
pub fn read() -> Result<Topology, TopologyError> {
    let mut t = read_from(Path::new("/sys/devices/system"))?;
    // Without the table (not root, no HMAT, or one refused) each node keeps the kernel's
    // figures from its best initiators, which say so.
    if let Ok(bytes) = fs::read("/sys/firmware/acpi/tables/HMAT") {
        if let Ok(table) = oslab_core::topology::acpi_hmat::HmatTable::parse(&bytes) {
            let _ = table.attach(&mut t.nodes);
        }
    }
    Ok(t)
}

/// Reads a machine described below `root` (a copy of `/sys/devices/system`).
pub fn read_from(root: &Path) -> Result<Topology, TopologyError> {
    let online = online_cpus(root)?;
    let node_of = read_node_membership(root)?;
    let mut cpus = Vec::new();
    let mut caches: Vec<Cache> = Vec::new();
    for id in online.iter() {
        let dir = root.join(format!("cpu/cpu{id}"));
        let topo = dir.join("topology");
        let package = read_num_or(&topo.join("physical_package_id"), 0)?;
        let die = read_num_or(&topo.join("die_id"), 0)?;
        let core = read_num_or(&topo.join("core_id"), id)?;
        let smt_siblings =
            read_cpuset(&topo.join("thread_siblings_list")).unwrap_or_else(|_| CpuSet::single(id));
        cpus.push(Cpu {
            id,
            package,
            die,
            core,
            node: node_of.get(&id).copied().unwrap_or(0),
            smt_siblings,
            kind: 0,
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
    mark_kinds(root, &mut cpus);
    let nodes = read_nodes(root, &online)?;
    Ok(Topology {
        cpus,
        caches,
        nodes,
    })
}

/// The online cpus: `cpu/online`, else (a copy of sysfs that left it out, an old kernel) the
/// present ones, else every `cpuN` directory.
fn online_cpus(root: &Path) -> Result<CpuSet, TopologyError> {
    let first = read_cpuset(&root.join("cpu/online"));
    if first.is_ok() {
        return first;
    }
    if let Ok(present) = read_cpuset(&root.join("cpu/present")) {
        return Ok(present);
    }
    let listed: CpuSet = fs::read_dir(root.join("cpu"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.strip_prefix("cpu")?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    match listed.is_empty() {
        true => first,
        false => Ok(listed),
    }
}

/// Each cpu's kind (0 the most capable): Intel's hybrid parts list their P cores under the
/// `cpu_core` PMU and their E cores under `cpu_atom` (beside `root`, a copy of
/// `/sys/devices/system`); elsewhere a cpu's `cpu_capacity` (Arm's big and LITTLE) ranks them.
fn mark_kinds(root: &Path, cpus: &mut [Cpu]) {
    let devices = root.parent().unwrap_or(root);
    let atoms = read_cpuset(&devices.join("cpu_atom/cpus"));
    if let (Ok(atoms), Ok(_)) = (atoms, read_cpuset(&devices.join("cpu_core/cpus"))) {
        for c in cpus.iter_mut().filter(|c| atoms.contains(c.id)) {
            c.kind = 1;
        }
        return;
    }
    let capacity = |id: usize| read_num_or(&root.join(format!("cpu/cpu{id}/cpu_capacity")), 0).ok();
    let mut levels: Vec<usize> = cpus.iter().filter_map(|c| capacity(c.id)).collect();
    levels.sort_unstable_by(|a, b| b.cmp(a));
    levels.dedup();
    if levels.len() < 2 {
        return;
    }
    for c in cpus.iter_mut() {
        if let Some(cap) = capacity(c.id) {
            c.kind = levels.iter().position(|&l| l == cap).unwrap_or(0);
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

/// The kernel's memory tier of each node (`memory_tiering/memory_tierN/nodelist`, beside
/// `system/` under `devices/`): a higher tier is slower memory (CXL, persistent memory).
fn memory_tiers(root: &Path) -> std::collections::HashMap<usize, u32> {
    let mut tiers = std::collections::HashMap::new();
    let Some(dir) = root.parent().map(|d| d.join("virtual/memory_tiering")) else {
        return tiers;
    };
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(tier) = name
            .strip_prefix("memory_tier")
            .and_then(|t| t.parse().ok())
        else {
            continue;
        };
        if let Ok(nodes) = read_cpuset(&entry.path().join("nodelist")) {
            for node in nodes.iter() {
                tiers.insert(node, tier);
            }
        }
    }
    tiers
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
            hmat_table: vec![],
            kind: None,
        }]);
    }
    let mut nodes = Vec::new();
    let tiers = memory_tiers(root);
    // The cpus' memory sets the reference tier; the kernel's default for DRAM is tier 4.
    let reference = ids
        .iter()
        .find(|&&id| {
            read_cpuset(&root.join(format!("node/node{id}/cpulist"))).is_ok_and(|c| !c.is_empty())
        })
        .and_then(|id| tiers.get(id).copied())
        .unwrap_or(4);
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
            hmat: read_hmat(&dir),
            hmat_table: vec![],
            kind: tiers.get(&id).and_then(|&t| match t.cmp(&reference) {
                std::cmp::Ordering::Greater => Some("slower tier".to_string()),
                std::cmp::Ordering::Less => Some("faster tier".to_string()),
                std::cmp::Ordering::Equal => None,
            }),
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
    use std::path::Path;

    #[test]
    fn cpus_on_other_nodes_are_told_apart_by_package_and_distance() {
        // 2 packages of 2 cores, 4 nodes: each package split in two (sub-NUMA clusters).
        let dir = tempfile::tempdir().unwrap();
        write_fake_sysfs(dir.path(), 2, 2, 1, 4).unwrap();
        let t = read_from(dir.path()).unwrap();
        assert_eq!(t.distance_class(0, 1), "other NUMA node");
        assert_eq!(
            t.pair_class(0, 1),
            "same package, other NUMA node (SLIT distance 21)"
        );
        assert_eq!(t.pair_class(0, 2), "other package (SLIT distance 21)");
        // Within a node, the classes are distance_class's.
        let dir = tempfile::tempdir().unwrap();
        write_fake_sysfs(dir.path(), 1, 2, 2, 1).unwrap();
        let t = read_from(dir.path()).unwrap();
        assert_eq!(t.pair_class(0, 2), t.distance_class(0, 2));
        assert_eq!(t.pair_class(0, 2), "SMT sibling");
    }

    #[test]
    fn reads_this_machine() {
        let t = read().expect("sysfs readable");
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
        let t = read_from(dir.path()).unwrap();
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
    fn a_slower_memory_tier_is_named_on_its_node() {
        // A CPU-less node in a higher memory tier (CXL or persistent memory added as kmem).
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("system");
        write_fake_sysfs(&root, 1, 2, 1, 1).unwrap();
        let far = root.join("node/node1");
        std::fs::create_dir_all(&far).unwrap();
        std::fs::write(far.join("cpulist"), "\n").unwrap();
        std::fs::write(far.join("distance"), "20 10\n").unwrap();
        for (tier, nodes) in [("memory_tier4", "0"), ("memory_tier22", "1")] {
            let d = dir.path().join("virtual/memory_tiering").join(tier);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("nodelist"), format!("{nodes}\n")).unwrap();
        }
        let t = read_from(&root).unwrap();
        let kinds: Vec<Option<&str>> = t.nodes.iter().map(|n| n.kind.as_deref()).collect();
        assert_eq!(kinds, [None, Some("slower tier")]);
    }

    #[test]
    fn missing_root_is_a_clear_error() {
        let err = read_from(Path::new("/nonexistent/sys")).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/sys/cpu/online"));
    }

    #[test]
    fn a_huge_list_is_not_echoed_whole() {
        let huge = "1,".repeat(50_000) + "x";
        let e = CpuSet::parse_list(&huge).unwrap_err().to_string();
        assert!(
            e.len() < 300 && e.contains("100001 characters"),
            "{}",
            &e[..e.len().min(400)]
        );
    }

    fn fake(packages: usize, cores: usize, threads: usize, nodes: usize) -> Topology {
        let dir = tempfile::tempdir().unwrap();
        write_fake_sysfs(dir.path(), packages, cores, threads, nodes).unwrap();
        read_from(dir.path()).unwrap()
    }

    #[test]
    fn numeric_lists_round_trip() {
        let s = CpuSet::parse_list("0-3,8,10-11").unwrap();
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(s.to_list(), "0-3,8,10-11");
        assert_eq!(CpuSet::parse_list("0-7:2").unwrap().to_list(), "0,2,4,6");
        assert!(CpuSet::parse_list("").unwrap().is_empty());
    }

    #[test]
    fn bad_lists_say_what_is_wrong() {
        let e = CpuSet::parse_list("3-1").unwrap_err();
        assert!(e.reason.contains("backwards"), "{e}");
        let e = CpuSet::parse_list("a").unwrap_err();
        assert!(e.to_string().contains("not a cpu number"), "{e}");
        assert!(CpuSet::parse_list("0-3:0").is_err());
        assert!(CpuSet::parse_list("99999").is_err());
    }

    #[test]
    fn keywords_resolve_against_topology() {
        let t = fake(2, 4, 2, 2);
        assert_eq!(
            CpuSet::parse("socket:1", &t).unwrap().to_list(),
            "4-7,12-15"
        );
        assert_eq!(CpuSet::parse("node:0", &t).unwrap().to_list(), "0-3,8-11");
        assert_eq!(
            CpuSet::parse("core-sibling-of:1", &t).unwrap().to_list(),
            "1,9"
        );
        assert_eq!(
            CpuSet::parse("node:1,0", &t).unwrap().to_list(),
            "0,4-7,12-15"
        );
        assert_eq!(CpuSet::parse("all", &t).unwrap().len(), 16);
    }

    #[test]
    fn keyword_errors_name_what_exists() {
        let t = fake(1, 2, 1, 1);
        let e = CpuSet::parse("node:3", &t).unwrap_err();
        assert!(e.reason.contains("nodes here: 0"), "{e}");
        let e = CpuSet::parse("socket:2", &t).unwrap_err();
        assert!(e.reason.contains("1 socket"), "{e}");
        let e = CpuSet::parse("5", &t).unwrap_err();
        assert!(e.reason.contains("not online"), "{e}");
        let e = CpuSet::parse("cache:1", &t).unwrap_err();
        assert!(e.reason.contains("unknown keyword"), "{e}");
        assert!(CpuSet::parse("0,,1", &t).is_err());
    }
}

#[cfg(test)]
mod dumps {
    use super::*;

    /// A copy of sysfs without `cpu/online` (as many dumps are) still reads, and an Intel hybrid
    /// part's cpu_core / cpu_atom lists make its E cores kind 1.
    #[test]
    fn a_dump_without_online_reads_and_hybrid_kinds_are_marked() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("devices/system");
        write_fake_sysfs(&root, 1, 4, 1, 1).unwrap();
        std::fs::remove_file(root.join("cpu/online")).unwrap();
        let t = read_from(&root).unwrap();
        assert_eq!(t.cpus.len(), 4);
        assert!(t.cpus.iter().all(|c| c.kind == 0));
        for (pmu, list) in [("cpu_core", "0-1"), ("cpu_atom", "2-3")] {
            let d = dir.path().join("devices").join(pmu);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("cpus"), format!("{list}\n")).unwrap();
        }
        let t = read_from(&root).unwrap();
        let kinds: Vec<usize> = t.cpus.iter().map(|c| c.kind).collect();
        assert_eq!(kinds, [0, 0, 1, 1]);
    }
}
