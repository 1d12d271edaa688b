//! The machine's topology as hwloc's XML (version 2): what `lstopo --input`, `hwloc-calc
//! --input`, Slurm and MPI libraries read. Objects nest by their cpus (Machine, Package,
//! caches, Core, PU; a Group where a NUMA node covers part of one), each NUMA node a memory
//! child of the object whose cpus are its own; the SLIT distances as a latency matrix.

use crate::markup::escape;
use oslab_core::cpuset::CpuSet;
use oslab_core::topology::{CacheKind, Topology};
use std::fmt::Write;

/// One object of the tree.
struct Object {
    /// hwloc's type name ("Package", "L3Cache", "L1iCache", "Core", "PU", "Group").
    kind: String,
    /// Outer before inner among objects of the same cpus.
    rank: u8,
    os_index: Option<usize>,
    cpus: CpuSet,
    /// Attributes beyond the common ones, in order.
    extra: Vec<(&'static str, String)>,
    children: Vec<usize>,
    /// NUMA nodes attached here (indexes into the topology's nodes).
    memory: Vec<usize>,
}

/// A cpu or node set as hwloc writes it: hexadecimal, 32 bits a word, most significant first,
/// words joined by commas ("0x00000003", "0x00000001,0xffffffff").
pub fn hex_set(ids: impl Iterator<Item = usize>) -> String {
    let ids: Vec<usize> = ids.collect();
    let words = ids.iter().max().map_or(1, |m| m / 32 + 1);
    let mut w = vec![0u32; words];
    for i in ids {
        w[i / 32] |= 1 << (i % 32);
    }
    let parts: Vec<String> = w.iter().rev().map(|x| format!("0x{x:08x}")).collect();
    parts.join(",")
}

/// The objects with cpus, outer first: packages, groups for nodes no other object matches,
/// caches, cores, cpus.
fn objects(t: &Topology) -> Vec<Object> {
    let obj = |kind: &str, rank, os_index, cpus: CpuSet, extra| Object {
        kind: kind.to_string(),
        rank,
        os_index,
        cpus,
        extra,
        children: vec![],
        memory: vec![],
    };
    let mut out = Vec::new();
    let mut packages: Vec<usize> = t.cpus.iter().map(|c| c.package).collect();
    packages.sort_unstable();
    packages.dedup();
    for p in packages {
        let cpus = t
            .cpus
            .iter()
            .filter(|c| c.package == p)
            .map(|c| c.id)
            .collect();
        out.push(obj("Package", 1, Some(p), cpus, vec![]));
        // Dies where a package has several (core ids repeat in each, as Linux numbers them).
        let mut dies: Vec<usize> = t
            .cpus
            .iter()
            .filter(|c| c.package == p)
            .map(|c| c.die)
            .collect();
        dies.sort_unstable();
        dies.dedup();
        if dies.len() > 1 {
            for d in dies {
                let cpus = t
                    .cpus
                    .iter()
                    .filter(|c| c.package == p && c.die == d)
                    .map(|c| c.id)
                    .collect();
                out.push(obj("Die", 3, Some(d), cpus, vec![]));
            }
        }
    }
    for c in &t.caches {
        let (kind, cache_type) = match (c.level, c.kind) {
            (1, CacheKind::Instruction) => ("L1iCache".to_string(), 2),
            (l, CacheKind::Instruction) => (format!("L{l}iCache"), 2),
            (l, CacheKind::Data) => (format!("L{l}Cache"), 1),
            (l, CacheKind::Unified) => (format!("L{l}Cache"), 0),
        };
        // Larger levels outside smaller ones; an instruction cache inside its data twin.
        let rank = 10 - c.level.min(5) + u8::from(cache_type == 2);
        let extra = vec![
            ("cache_size", c.size.to_string()),
            ("depth", c.level.to_string()),
            ("cache_linesize", c.line.unwrap_or(0).to_string()),
            ("cache_associativity", c.ways.unwrap_or(0).to_string()),
            ("cache_type", cache_type.to_string()),
        ];
        out.push(obj(&kind, rank, None, c.cpus.clone(), extra));
    }
    for cpus in t.cores_among(&t.online()) {
        let core = t.cpu(cpus[0]).map(|c| c.core);
        out.push(obj("Core", 20, core, cpus.into_iter().collect(), vec![]));
    }
    for c in &t.cpus {
        out.push(obj("PU", 30, Some(c.id), CpuSet::single(c.id), vec![]));
    }
    // A node with cpus no object has exactly (a sub-NUMA cluster) gets a Group of them, as
    // hwloc makes one.
    for n in t.nodes.iter().filter(|n| !n.cpus.is_empty()) {
        if !out.iter().any(|o| o.cpus == n.cpus) {
            out.push(obj("Group", 2, None, n.cpus.clone(), vec![]));
        }
    }
    out
}

/// The topology as an hwloc v2 XML document, with what oslab measured of it (`costs`) as
/// distance matrices of its own.
pub fn xml(
    t: &Topology,
    host: &str,
    costs: &oslab_core::binding::Costs,
    allowed: &Allowed,
) -> String {
    let mut objs = objects(t);
    objs.sort_by(|a, b| b.cpus.len().cmp(&a.cpus.len()).then(a.rank.cmp(&b.rank)));
    let all = t.online();
    let mut tree = vec![Object {
        kind: "Machine".into(),
        rank: 0,
        os_index: Some(0),
        cpus: all.clone(),
        extra: vec![],
        children: vec![],
        memory: vec![],
    }];
    for o in objs {
        // The innermost object placed so far that holds all its cpus (placed outer first).
        let parent = (0..tree.len())
            .rev()
            .find(|&i| o.cpus.is_subset(&tree[i].cpus))
            .unwrap_or(0);
        tree.push(o);
        let me = tree.len() - 1;
        tree[parent].children.push(me);
    }
    for (i, n) in t.nodes.iter().enumerate() {
        let home = match n.cpus.is_empty() {
            true => 0,
            false => (0..tree.len())
                .rev()
                .find(|&j| tree[j].kind != "PU" && n.cpus.is_subset(&tree[j].cpus))
                .map(|j| {
                    // The outermost object of exactly those cpus (a Package before its L3).
                    (1..=j).find(|&k| tree[k].cpus == tree[j].cpus).unwrap_or(j)
                })
                .unwrap_or(0),
        };
        tree[home].memory.push(i);
    }
    let mut gp = 0usize;
    let mut body = String::new();
    let allowed_sets = (
        hex_set(allowed.0.iter()),
        match &allowed.1 {
            Some(n) => hex_set(n.iter()),
            None => nodeset(t, &all, true),
        },
    );
    write_object(t, &tree, 0, 1, &mut gp, host, &allowed_sets, &mut body);
    let mut doc = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n<topology version=\"2.0\">\n",
    );
    doc.push_str(&body);
    doc.push_str(&distances(t));
    doc.push_str(&measured(t, costs));
    doc.push_str("</topology>\n");
    doc
}

/// The nodes with cpus among `cpus` (at the machine: every node).
fn nodeset(t: &Topology, cpus: &CpuSet, machine: bool) -> String {
    let near = |n: &&oslab_core::topology::Node| machine || n.cpus.iter().any(|c| cpus.contains(c));
    hex_set(t.nodes.iter().filter(near).map(|n| n.id))
}

/// What this process may use, as hwloc's root object says it (`allowed_cpuset`,
/// `allowed_nodeset`): its cpus, and its cpuset's memory nodes when restricted (None: every
/// node).
pub type Allowed = (CpuSet, Option<CpuSet>);

#[allow(clippy::too_many_arguments)]
fn write_object(
    t: &Topology,
    tree: &[Object],
    i: usize,
    depth: usize,
    gp: &mut usize,
    host: &str,
    allowed: &(String, String),
    out: &mut String,
) {
    let o = &tree[i];
    let pad = "  ".repeat(depth);
    let cpus = hex_set(o.cpus.iter());
    let nodes = nodeset(t, &o.cpus, i == 0);
    *gp += 1;
    let _ = write!(out, "{pad}<object type=\"{}\"", o.kind);
    if let Some(x) = o.os_index {
        let _ = write!(out, " os_index=\"{x}\"");
    }
    let _ = write!(
        out,
        " cpuset=\"{cpus}\" complete_cpuset=\"{cpus}\"{} nodeset=\"{nodes}\" complete_nodeset=\"{nodes}\"{} gp_index=\"{gp}\"",
        if i == 0 { format!(" allowed_cpuset=\"{}\"", allowed.0) } else { String::new() },
        if i == 0 { format!(" allowed_nodeset=\"{}\"", allowed.1) } else { String::new() },
    );
    for (k, v) in &o.extra {
        let _ = write!(out, " {k}=\"{}\"", escape(v));
    }
    out.push_str(">\n");
    if i == 0 {
        let _ = writeln!(out, "{pad}  <info name=\"Backend\" value=\"oslab\"/>");
        let _ = writeln!(
            out,
            "{pad}  <info name=\"HostName\" value=\"{}\"/>",
            escape(host)
        );
    }
    // Memory children first, as hwloc writes them.
    for &n in &o.memory {
        let node = &t.nodes[n];
        let node_cpus = hex_set(node.cpus.iter());
        *gp += 1;
        let _ = writeln!(
            out,
            "{pad}  <object type=\"NUMANode\" os_index=\"{}\" cpuset=\"{node_cpus}\" complete_cpuset=\"{node_cpus}\" nodeset=\"{ns}\" complete_nodeset=\"{ns}\" gp_index=\"{gp}\" local_memory=\"{}\"{subtype}/>",
            node.id,
            node.memory.unwrap_or(0),
            ns = hex_set(std::iter::once(node.id)),
            subtype = node
                .kind
                .as_ref()
                .map(|k| format!(" subtype=\"{}\"", escape(k)))
                .unwrap_or_default(),
        );
    }
    for &c in &o.children {
        write_object(t, tree, c, depth + 1, gp, host, allowed, out);
    }
    let _ = writeln!(out, "{pad}</object>");
}

/// The SLIT distances between NUMA nodes, as hwloc's latency matrix from the OS.
fn distances(t: &Topology) -> String {
    let n = t.nodes.len();
    if n < 2 || t.nodes.iter().any(|x| x.distances.len() != n) {
        return String::new();
    }
    let ids: Vec<usize> = t.nodes.iter().map(|x| x.id).collect();
    let values: Vec<u64> = t
        .nodes
        .iter()
        .flat_map(|x| x.distances.iter().map(|d| u64::from(*d)))
        .collect();
    // kind 5: from the OS (1), meaning latency (4).
    matrix("NUMANode", 5, "NUMALatency", &ids, &values)
}

/// What oslab measured, as hwloc distance matrices from the user (kind 6: from the user (2),
/// meaning latency (4)), in ns: `oslab:MemoryLatency` between the nodes with cpus where every
/// pair was measured (`numa`), `oslab:CoreToCore` between the PUs where every pair was
/// (`c2c`: 0 from a PU to itself). A matrix with a pair missing is left out: hwloc's are whole.
fn measured(t: &Topology, costs: &oslab_core::binding::Costs) -> String {
    let mut out = String::new();
    let nodes: Vec<usize> = t
        .nodes
        .iter()
        .filter(|n| !n.cpus.is_empty())
        .map(|n| n.id)
        .collect();
    let memory: Option<Vec<u64>> = nodes
        .iter()
        .flat_map(|a| nodes.iter().map(move |b| (*a, *b)))
        .map(|k| costs.memory.get(&k).map(|ns| ns.round() as u64))
        .collect();
    if let Some(values) = memory.filter(|_| nodes.len() >= 2) {
        out += &matrix("NUMANode", 6, "oslab:MemoryLatency", &nodes, &values);
    }
    let pus: Vec<usize> = t.online().iter().collect();
    let pairs: Option<Vec<u64>> = pus
        .iter()
        .flat_map(|a| pus.iter().map(move |b| (*a, *b)))
        .map(|(a, b)| match a == b {
            true => Some(0),
            false => costs
                .pairs
                .get(&(a.min(b), a.max(b)))
                .map(|ns| ns.round() as u64),
        })
        .collect();
    if let Some(values) = pairs.filter(|_| pus.len() >= 2) {
        out += &matrix("PU", 6, "oslab:CoreToCore", &pus, &values);
    }
    out
}

/// One `distances2` matrix over objects of `kind` by os index, `values` row by row.
fn matrix(kind: &str, flags: u8, name: &str, ids: &[usize], values: &[u64]) -> String {
    let indexes: String = ids.iter().map(|x| format!("{x} ")).collect();
    let values: String = values.iter().map(|v| format!("{v} ")).collect();
    format!(
        "  <distances2 type=\"{kind}\" nbobjs=\"{}\" kind=\"{flags}\" name=\"{name}\" indexing=\"os\">\n    <indexes length=\"{}\">{indexes}</indexes>\n    <u64values length=\"{}\">{values}</u64values>\n  </distances2>\n",
        ids.len(),
        indexes.len(),
        values.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_are_hwlocs_32_bit_words() {
        assert_eq!(hex_set([0, 1].into_iter()), "0x00000003");
        assert_eq!(hex_set([0, 32].into_iter()), "0x00000001,0x00000001");
        assert_eq!(hex_set(std::iter::empty()), "0x00000000");
        let back =
            oslab_core::topology::hwloc::parse_hex_set(&hex_set([0, 1, 32].into_iter())).unwrap();
        assert_eq!(back.iter().collect::<Vec<_>>(), [0, 1, 32]);
    }

    #[test]
    fn a_machine_written_as_hwlocs_xml_reads_back_as_itself() {
        let mut t = Topology::synthetic(2, 2, 3, 2);
        for n in &mut t.nodes {
            n.distances = (0..4).map(|m| if m == n.id { 10 } else { 21 }).collect();
        }
        // What was measured rides along as matrices of oslab's own, which reading leaves out.
        let mut costs = oslab_core::binding::Costs::default();
        for a in 0..4 {
            for b in 0..4 {
                costs
                    .memory
                    .insert((a, b), if a == b { 90.0 } else { 140.0 });
            }
        }
        let cpus: Vec<usize> = t.online().iter().collect();
        for a in &cpus {
            for b in cpus.iter().filter(|b| *b > a) {
                costs.pairs.insert((*a, *b), 60.0);
            }
        }
        let allowed: Allowed = (t.online(), None);
        let doc = xml(&t, "node7", &costs, &allowed);
        assert!(doc.contains("oslab:MemoryLatency") && doc.contains("oslab:CoreToCore"));
        let read = oslab_core::topology::hwloc::read(&doc).unwrap();
        let back = read.topology;
        assert_eq!(read.host.as_deref(), Some("node7"));
        assert_eq!(read.allowed, t.online());
        assert_eq!(back.cpus, t.cpus);
        let sets = |t: &Topology| t.nodes.iter().map(|n| n.cpus.clone()).collect::<Vec<_>>();
        assert_eq!(sets(&back), sets(&t));
        assert_eq!(back.nodes[0].distances, t.nodes[0].distances);
        let l3 = |t: &Topology| {
            t.caches
                .iter()
                .filter(|c| c.level == 3)
                .map(|c| c.cpus.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(l3(&back), l3(&t));
        // A plan for the machine read back: a rank per package, each thread on its own core.
        let all = back.online();
        let costs = oslab_core::binding::Costs::default();
        let spread = oslab_core::binding::Policy::Spread;
        let plan = oslab_core::binding::plan(&back, &all, 2, Some(6), spread, &costs).unwrap();
        for (r, rank) in plan.ranks.iter().enumerate() {
            assert!(
                rank.cpus.iter().all(|c| back.cpu(*c).unwrap().package == r),
                "{plan:?}"
            );
        }
    }
}
