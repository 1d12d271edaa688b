//! hwloc's XML read back into a [`Topology`](super::Topology) (`lstopo --of xml`, `oslab info
//! --hwloc`): for planning a machine one is not on (`oslab bind --topology FILE`). Only what a
//! plan needs is read: PUs with their core, die and package, caches with their PUs, NUMA nodes
//! with theirs and their distances. oslab-report writes it.

use super::{CacheKind, Topology};
use crate::cpuset::CpuSet;
use std::collections::HashMap;

/// The largest cpu (PU) index read, exclusive: Linux's own limit (`CONFIG_NR_CPUS` is at most
/// 8,192), with room. A file naming a larger one is refused, never allocated for.
pub const MAX_CPU_INDEX: usize = 16_384;

/// The largest NUMA node index read, exclusive (Linux's `MAX_NUMNODES` is at most 1,024).
pub const MAX_NODE_INDEX: usize = 1_024;

/// The most objects of any kind read (a 16,384-PU machine has far fewer than this).
const MAX_OBJECTS: usize = 1 << 20;

/// A machine as an hwloc XML describes it.
#[derive(Debug, Clone)]
pub struct Described {
    /// Its topology: the PUs hwloc lists (online ones), its caches and NUMA nodes.
    pub topology: Topology,
    /// Its host name, when the file gives one.
    pub host: Option<String>,
    /// The cpus the process that wrote it could use (the root's `allowed_cpuset`; all when
    /// absent): a cgroup's cpuset, cpus taken offline.
    pub allowed: crate::cpuset::CpuSet,
    /// The memory nodes it could use (the root's `allowed_nodeset`), when fewer than all.
    pub allowed_nodes: Option<crate::cpuset::CpuSet>,
}

/// The machine an hwloc XML describes.
pub fn read(xml: &str) -> Result<Described, String> {
    /// An open object: its type, os_index and attributes, and the PUs found under it.
    struct Open {
        kind: String,
        os_index: Option<usize>,
        attrs: Vec<(String, String)>,
        pus: Vec<usize>,
    }
    let mut stack: Vec<Open> = Vec::new();
    let mut cpus: Vec<super::Cpu> = Vec::new();
    let mut caches = Vec::new();
    let mut nodes: Vec<super::Node> = Vec::new();
    let mut host = None;
    let mut distances: Option<(Vec<usize>, Vec<u32>)> = None;
    let mut slit = false;
    let mut seen_root = false;
    let mut closed = false;
    let mut kinds: Vec<CpuSet> = Vec::new();
    let mut root_allowed: Option<(Option<String>, Option<String>)> = None;
    let mut by_id: HashMap<usize, usize> = HashMap::new();
    let mut objects = 0usize;
    let mut rest = xml;
    let index = |v: Option<&str>, what: &str, max: usize| -> Result<Option<usize>, String> {
        match v {
            None => Ok(None),
            Some(v) => match v.parse::<usize>() {
                Ok(i) if i < max => Ok(Some(i)),
                _ => Err(format!(
                    "{what} os_index {:?} is not below {max}, the largest oslab reads",
                    crate::text::shortened(v, 24)
                )),
            },
        }
    };
    while let Some(at) = rest.find('<') {
        let end = rest[at..].find('>').ok_or("a tag is not closed")? + at;
        let tag = &rest[at + 1..end];
        let body_start = end + 1;
        rest = &rest[body_start..];
        let attrs = attributes(tag);
        let get = |k: &str| attrs.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        if tag.starts_with("topology") {
            seen_root = true;
            continue;
        }
        if tag == "/topology" {
            closed = true;
            continue;
        }
        if tag.starts_with("object ") {
            objects += 1;
            if objects > MAX_OBJECTS || stack.len() > 64 {
                return Err(format!(
                    "more than {MAX_OBJECTS} objects, or nested more than 64 deep: not a machine oslab plans for"
                ));
            }
            // hwloc 1.x wrote "Socket" for a package and "Cache" with a depth.
            let kind = match get("type").unwrap_or_default() {
                "Socket" => "Package".to_string(),
                "Cache" => format!(
                    "L{}{}Cache",
                    get("depth").unwrap_or("?"),
                    match get("cache_type") {
                        Some("1") => "d",
                        Some("2") => "i",
                        _ => "",
                    }
                ),
                k => k.to_string(),
            };
            let max = match kind.as_str() {
                "PU" => MAX_CPU_INDEX,
                "NUMANode" => MAX_NODE_INDEX,
                _ => usize::MAX,
            };
            if root_allowed.is_none() {
                root_allowed = Some((
                    get("allowed_cpuset").map(str::to_string),
                    get("allowed_nodeset").map(str::to_string),
                ));
            }
            let open = Open {
                os_index: match max {
                    usize::MAX => get("os_index").and_then(|v| v.parse().ok()),
                    _ => index(get("os_index"), &kind, max)?,
                },
                kind,
                attrs: attrs.clone(),
                pus: Vec::new(),
            };
            stack.push(open);
            if !tag.ends_with('/') {
                continue;
            }
        } else if tag.starts_with("info ") {
            if get("name") == Some("HostName") {
                host = get("value").map(str::to_string);
            }
            continue;
        } else if tag.starts_with("cpukind") {
            // hwloc lists kinds from the most energy-efficient to the most capable.
            if let Some(set) = get("cpuset") {
                kinds.push(parse_hex_set(set)?);
            }
            continue;
        } else if tag.starts_with("distances2") {
            // The firmware's node distances (kind from the OS, bit 1), not a matrix a user
            // added (oslab's measured ones, in ns) nor one between other objects.
            let kind: u32 = get("kind").and_then(|k| k.parse().ok()).unwrap_or(0);
            slit = get("type") == Some("NUMANode") && kind & 1 == 1 && distances.is_none();
            continue;
        } else if (tag.starts_with("indexes") || tag.starts_with("u64values")) && slit {
            let text = &rest[..rest.find('<').unwrap_or(rest.len())];
            let d = distances.get_or_insert_with(Default::default);
            let numbers = text
                .split_whitespace()
                .filter_map(|v| v.parse::<u64>().ok());
            match tag.starts_with("indexes") {
                true => d.0 = numbers.map(|v| v as usize).collect(),
                false => d.1 = numbers.map(|v| v as u32).collect(),
            }
            continue;
        } else if tag != "/object" {
            continue;
        }
        // An object ends: a PU becomes a cpu of its core, die and package; a cache and a node
        // take the PUs under them.
        let o = stack.pop().ok_or("an </object> closes nothing")?;
        let attr = |k: &str| o.attrs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let mut pus = o.pus;
        match o.kind.as_str() {
            "PU" => {
                let id = o.os_index.ok_or("a PU without os_index")?;
                let up = |kind: &str| {
                    stack
                        .iter()
                        .rev()
                        .find(|s| s.kind == kind)
                        .and_then(|s| s.os_index)
                };
                if by_id.insert(id, cpus.len()).is_some() {
                    return Err(format!("PU {id} appears twice"));
                }
                cpus.push(super::Cpu {
                    id,
                    package: up("Package").unwrap_or(0),
                    die: up("Die").unwrap_or(0),
                    core: up("Core").unwrap_or(id),
                    node: 0,
                    smt_siblings: CpuSet::new(),
                    kind: 0,
                });
                pus.push(id);
            }
            "NUMANode" => nodes.push(super::Node {
                id: o.os_index.ok_or("a NUMANode without os_index")?,
                cpus: match attr("cpuset") {
                    Some(s) => parse_hex_set(&s)?,
                    None => CpuSet::new(),
                },
                memory: attr("local_memory").and_then(|m| m.parse().ok()),
                distances: Vec::new(),
                hmat: None,
                hmat_table: vec![],
                kind: attr("subtype").map(|k| crate::text::shortened(&k, 24)),
            }),
            kind if kind.starts_with('L') && kind.ends_with("Cache") => {
                // "L2Cache", "L1dCache", "L1iCache": a level digit, then an optional kind.
                let middle = &kind[1..kind.len() - "Cache".len()];
                let mut chars = middle.chars();
                let level = chars
                    .next()
                    .and_then(|c| c.to_digit(10))
                    .filter(|l| (1..=5).contains(l))
                    .ok_or_else(|| format!("cache type {:?}", crate::text::shortened(kind, 24)))?
                    as u8;
                caches.push(super::Cache {
                    level,
                    kind: match chars.as_str() {
                        "i" => CacheKind::Instruction,
                        "d" => CacheKind::Data,
                        "" => CacheKind::Unified,
                        _ => {
                            return Err(format!(
                                "cache type {:?}",
                                crate::text::shortened(kind, 24)
                            ))
                        }
                    },
                    size: attr("cache_size").and_then(|v| v.parse().ok()).unwrap_or(0),
                    line: attr("cache_linesize").and_then(|v| v.parse().ok()),
                    ways: attr("cache_associativity")
                        .and_then(|v| v.parse().ok())
                        .filter(|w| *w > 0),
                    cpus: pus.iter().copied().collect(),
                });
            }
            "Core" => {
                let siblings: CpuSet = pus.iter().copied().collect();
                for id in &pus {
                    if let Some(c) = by_id.get(id).map(|&i| &mut cpus[i]) {
                        c.smt_siblings = siblings.clone();
                    }
                }
            }
            _ => {}
        }
        if let Some(parent) = stack.last_mut() {
            parent.pus.append(&mut pus);
        }
    }
    if !seen_root {
        return Err("no <topology> element: not hwloc's XML".into());
    }
    if !stack.is_empty() || !closed {
        // lstopo refuses such a file too; planning it would plan a smaller machine.
        return Err("the file ends inside its objects: cut short?".into());
    }
    if cpus.is_empty() {
        return Err("no PU objects: not hwloc's XML of a machine".into());
    }
    cpus.sort_by_key(|c| c.id);
    if nodes.is_empty() {
        nodes.push(super::Node {
            id: 0,
            cpus: cpus.iter().map(|c| c.id).collect(),
            memory: None,
            distances: vec![10],
            hmat: None,
            hmat_table: vec![],
            kind: None,
        });
    }
    nodes.sort_by_key(|n| n.id);
    if nodes.windows(2).any(|w| w[0].id == w[1].id) {
        return Err("a NUMA node appears twice".into());
    }
    let node_of: HashMap<usize, usize> = nodes
        .iter()
        .rev()
        .flat_map(|n| n.cpus.iter().map(move |c| (c, n.id)))
        .collect();
    for c in &mut cpus {
        c.node = node_of.get(&c.id).copied().unwrap_or(0);
    }
    if let Some((indexes, values)) = distances.filter(|(i, v)| v.len() == i.len() * i.len()) {
        for (row, n) in indexes.iter().enumerate() {
            if let Some(node) = nodes.iter_mut().find(|x| x.id == *n) {
                node.distances = values[row * indexes.len()..(row + 1) * indexes.len()].to_vec();
            }
        }
    }
    caches.sort_by_key(|c| (c.level, c.cpus.iter().next()));
    // Kind 0 the most capable: hwloc's last.
    for (rank, set) in kinds.iter().rev().enumerate() {
        for c in cpus.iter_mut().filter(|c| set.contains(c.id)) {
            c.kind = rank;
        }
    }
    let (allowed, allowed_nodes) = root_allowed.unwrap_or_default();
    let online: crate::cpuset::CpuSet = cpus.iter().map(|c| c.id).collect();
    let allowed = match allowed {
        Some(set) => parse_hex_set(&set)?.intersection(&online),
        None => online,
    };
    let allowed_nodes = match allowed_nodes {
        Some(set) => Some(parse_hex_set(&set)?).filter(|s| nodes.iter().any(|n| !s.contains(n.id))),
        None => None,
    };
    if allowed.is_empty() {
        return Err("its allowed_cpuset holds none of its PUs".into());
    }
    Ok(Described {
        topology: Topology {
            cpus,
            caches,
            nodes,
        },
        host,
        allowed,
        allowed_nodes,
    })
}

/// A tag's attributes: `name="value"` pairs, entities undone.
fn attributes(tag: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = tag;
    while let Some(eq) = rest.find("=\"") {
        let name = rest[..eq]
            .rsplit(' ')
            .next()
            .unwrap_or_default()
            .to_string();
        let after = &rest[eq + 2..];
        let Some(close) = after.find('"') else { break };
        let value = after[..close]
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&amp;", "&");
        out.push((name, value));
        rest = &after[close + 1..];
    }
    out
}

/// A cpu or node set in hwloc's hexadecimal words (as oslab-report's `hex_set` writes them),
/// of cpus below [`MAX_CPU_INDEX`]; hwloc's infinite sets (`0xf...f,` leading) read as their
/// words alone.
pub fn parse_hex_set(s: &str) -> Result<CpuSet, String> {
    let words: Vec<&str> = s.split(',').collect();
    let mut set = CpuSet::new();
    for (i, w) in words.iter().rev().enumerate() {
        let bits = u32::from_str_radix(w.trim().trim_start_matches("0x"), 16).unwrap_or(0);
        if bits != 0 && i * 32 >= MAX_CPU_INDEX {
            return Err(format!(
                "a cpuset reaches past cpu {MAX_CPU_INDEX}, the largest oslab reads"
            ));
        }
        (0..32)
            .filter(|b| bits & (1 << b) != 0)
            .for_each(|b| set.insert(i * 32 + b));
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_and_files_that_are_not_a_machine() {
        let set = parse_hex_set("0x00000001,0x00000003").unwrap();
        assert_eq!(set.iter().collect::<Vec<_>>(), [0, 1, 32]);
        assert!(read("<topology></topology>").is_err());
        assert!(read("<topology><object type=\"PU\"").is_err());
    }

    #[test]
    fn hwlocs_own_form_is_read() {
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x0000000f">
    <info name="HostName" value="big"/>
    <object type="Package" os_index="1" cpuset="0x0000000f">
      <object type="L3Cache" cache_size="33554432" depth="3" cache_linesize="64" cache_associativity="16" cache_type="0">
        <object type="Core" os_index="5" cpuset="0x00000005">
          <object type="PU" os_index="0" cpuset="0x00000001"/>
          <object type="PU" os_index="2" cpuset="0x00000004"/>
        </object>
        <object type="Core" os_index="6" cpuset="0x0000000a">
          <object type="PU" os_index="1" cpuset="0x00000002"/>
          <object type="PU" os_index="3" cpuset="0x00000008"/>
        </object>
      </object>
    </object>
    <object type="NUMANode" os_index="0" cpuset="0x0000000f" local_memory="1024"/>
  </object>
</topology>"#;
        let Described {
            topology: t, host, ..
        } = read(xml).unwrap();
        assert_eq!(host.as_deref(), Some("big"));
        assert_eq!(t.cpus.len(), 4);
        assert_eq!((t.cpus[2].package, t.cpus[2].core), (1, 5));
        assert_eq!(t.cpus[2].smt_siblings.iter().collect::<Vec<_>>(), [0, 2]);
        assert_eq!(t.caches[0].size, 33554432);
        assert_eq!(t.caches[0].ways, Some(16));
        assert_eq!(t.nodes[0].memory, Some(1024));
    }

    /// A two-package machine with SMT, caches and two nodes, as lstopo writes one.
    const MACHINE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x0000000f">
    <object type="Package" os_index="0" cpuset="0x00000005">
      <object type="NUMANode" os_index="0" cpuset="0x00000005" local_memory="1024"/>
      <object type="L2Cache" cache_size="1048576" depth="2" cache_linesize="64">
        <object type="L1dCache" cache_size="32768" depth="1" cache_linesize="64">
          <object type="Core" os_index="0" cpuset="0x00000005">
            <object type="PU" os_index="0" cpuset="0x00000001"/>
            <object type="PU" os_index="2" cpuset="0x00000004"/>
          </object>
        </object>
      </object>
    </object>
    <object type="Package" os_index="1" cpuset="0x0000000a">
      <object type="NUMANode" os_index="1" cpuset="0x0000000a" local_memory="1024"/>
      <object type="Core" os_index="0" cpuset="0x0000000a">
        <object type="PU" os_index="1" cpuset="0x00000002"/>
        <object type="PU" os_index="3" cpuset="0x00000008"/>
      </object>
    </object>
  </object>
  <distances2 type="NUMANode" nbobjs="2" kind="5" indexing="os">
    <indexes length="4">0 1 </indexes>
    <u64values length="8">10 21 21 10 </u64values>
  </distances2>
</topology>
"#;

    #[test]
    fn a_memory_only_node_keeps_its_kind_and_a_plan_names_it() {
        let xml = MACHINE.replacen(
            "  </object>\n  <distances2",
            "    <object type=\"NUMANode\" os_index=\"2\" cpuset=\"0x0\" local_memory=\"17179869184\" subtype=\"MCDRAM\"/>\n  </object>\n  <distances2",
            1,
        );
        let t = read(&xml).unwrap().topology;
        let hbm = t.nodes.iter().find(|n| n.id == 2).unwrap();
        assert_eq!(
            (hbm.kind.as_deref(), hbm.cpus.is_empty()),
            (Some("MCDRAM"), true)
        );
        let p = crate::binding::plan(
            &t,
            &t.online(),
            2,
            Some(2),
            crate::binding::Policy::Spread,
            &crate::binding::Costs::default(),
        )
        .unwrap();
        // Ranks keep their memory on their own nodes; the plan says where the MCDRAM is.
        assert!(p.ranks.iter().all(|r| r.memory != [2]), "{p:?}");
        assert!(
            p.notes
                .iter()
                .any(|n| n.starts_with("node 2 (MCDRAM, 16 GiB) has memory and no cpus")),
            "{:?}",
            p.notes
        );
    }

    #[test]
    fn indexes_past_the_limits_are_refused_not_allocated() {
        assert!(read(MACHINE).is_ok());
        for (from, to) in [
            (r#"PU" os_index="3""#, r#"PU" os_index="4000000000""#),
            (
                r#"PU" os_index="3""#,
                r#"PU" os_index="18446744073709551615""#,
            ),
            (r#"NUMANode" os_index="1""#, r#"NUMANode" os_index="99999""#),
        ] {
            let e = read(&MACHINE.replacen(from, to, 1)).unwrap_err();
            assert!(e.contains("the largest oslab reads"), "{e}");
        }
        let wide = format!("0x1{}", ",0x00000000".repeat(1_000_000));
        let e = read(&MACHINE.replacen(
            "0x0000000a\" local_memory",
            &format!("{wide}\" local_memory"),
            1,
        ))
        .unwrap_err();
        assert!(e.contains("past cpu"), "{e}");
        let e = read(&MACHINE.replacen("L1dCache", "L\u{e9}Cache", 1)).unwrap_err();
        assert!(e.contains("cache type"), "{e}");
        let e = read(&MACHINE.replacen(r#"os_index="2""#, r#"os_index="0""#, 1)).unwrap_err();
        assert!(e.contains("twice"), "{e}");
    }

    #[test]
    fn a_file_cut_short_is_refused_as_lstopo_refuses_it() {
        // Cut at each line boundary before the end: never a smaller machine.
        let ends: Vec<usize> = MACHINE.match_indices('\n').map(|(i, _)| i + 1).collect();
        for &cut in &ends[..ends.len() - 1] {
            assert!(
                read(&MACHINE[..cut]).is_err(),
                "cut at {cut}: {}",
                &MACHINE[..cut]
            );
        }
    }

    /// Every truncation and every character replaced by each of a few that matter to the
    /// parser: an answer or a refusal, never a panic (as the HMAT reader's test does).
    #[test]
    fn no_input_makes_the_reader_panic() {
        let chars: Vec<(usize, char)> = MACHINE.char_indices().collect();
        for &(i, _) in &chars {
            let _ = read(&MACHINE[..i]);
        }
        for &(i, c) in &chars {
            for with in ['<', '>', '"', '/', '=', '0', '9', ' ', 'L', '\u{e9}'] {
                let mut s = String::with_capacity(MACHINE.len() + 2);
                s.push_str(&MACHINE[..i]);
                s.push(with);
                s.push_str(&MACHINE[i + c.len_utf8()..]);
                if let Ok(Described { topology: t, .. }) = read(&s) {
                    // What reads is a machine a plan can be made for.
                    assert!(t.cpus.iter().all(|c| c.id < MAX_CPU_INDEX));
                    let _ = t.online();
                }
            }
        }
    }

    #[test]
    fn time_is_linear_in_the_machine() {
        // 16,000 cores of one PU each, one package: read in well under a second (it took
        // minutes when each core searched every cpu).
        let mut xml = String::from("<topology version=\"2.0\"><object type=\"Machine\" os_index=\"0\"><object type=\"Package\" os_index=\"0\">");
        for i in 0..16_000 {
            xml.push_str(&format!("<object type=\"Core\" os_index=\"{i}\"><object type=\"PU\" os_index=\"{i}\"/></object>"));
        }
        xml.push_str("</object></object></topology>");
        let t0 = std::time::Instant::now();
        let t = read(&xml).unwrap().topology;
        assert_eq!(t.cpus.len(), 16_000);
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            t0.elapsed()
        );
    }

    #[test]
    fn what_the_writer_could_not_use_is_read() {
        let d = read(&MACHINE.replacen(
            r#"<object type="Machine" os_index="0" cpuset="0x0000000f">"#,
            r#"<object type="Machine" os_index="0" cpuset="0x0000000f" allowed_cpuset="0x00000002" allowed_nodeset="0x00000002">"#,
            1,
        ))
        .unwrap();
        assert_eq!(d.allowed.iter().collect::<Vec<_>>(), [1]);
        assert_eq!(d.allowed_nodes.unwrap().iter().collect::<Vec<_>>(), [1]);
        let d = read(MACHINE).unwrap();
        assert_eq!(d.allowed.len(), 4);
        assert!(d.allowed_nodes.is_none());
    }

    #[test]
    fn cpu_kinds_are_read_the_most_capable_first() {
        let xml = MACHINE.replacen(
            "</topology>",
            "<cpukind cpuset=\"0x0000000a\" forced_efficiency=\"0\"><info name=\"CoreType\" value=\"IntelAtom\"/></cpukind>\n<cpukind cpuset=\"0x00000005\" forced_efficiency=\"1\"><info name=\"CoreType\" value=\"IntelCore\"/></cpukind>\n</topology>",
            1,
        );
        let t = read(&xml).unwrap().topology;
        let kinds: Vec<usize> = t.cpus.iter().map(|c| c.kind).collect();
        assert_eq!(kinds, [0, 1, 0, 1]);
    }
}
