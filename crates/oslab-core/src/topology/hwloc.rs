//! hwloc's XML read back into a [`Topology`](super::Topology) (`lstopo --of xml`, `oslab info
//! --hwloc`): for planning a machine one is not on (`oslab bind --topology FILE`). Only what a
//! plan needs is read: PUs with their core, die and package, caches with their PUs, NUMA nodes
//! with theirs and their distances. oslab-report writes it.

use super::{CacheKind, Topology};
use crate::cpuset::CpuSet;

/// The machine an hwloc XML describes, and its host name when the file gives one.
pub fn read(xml: &str) -> Result<(Topology, Option<String>), String> {
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
    let mut rest = xml;
    while let Some(at) = rest.find('<') {
        let end = rest[at..].find('>').ok_or("a tag is not closed")? + at;
        let tag = &rest[at + 1..end];
        let body_start = end + 1;
        rest = &rest[body_start..];
        let attrs = attributes(tag);
        let get = |k: &str| attrs.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        if tag.starts_with("object ") {
            let open = Open {
                kind: get("type").unwrap_or_default().to_string(),
                os_index: get("os_index").and_then(|v| v.parse().ok()),
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
                cpus.push(super::Cpu {
                    id,
                    package: up("Package").unwrap_or(0),
                    die: up("Die").unwrap_or(0),
                    core: up("Core").unwrap_or(id),
                    node: 0,
                    smt_siblings: CpuSet::new(),
                });
                pus.push(id);
            }
            "NUMANode" => nodes.push(super::Node {
                id: o.os_index.ok_or("a NUMANode without os_index")?,
                cpus: attr("cpuset").map_or_else(CpuSet::new, |s| parse_hex_set(&s)),
                memory: attr("local_memory").and_then(|m| m.parse().ok()),
                distances: Vec::new(),
                hmat: None,
                hmat_table: vec![],
            }),
            kind if kind.starts_with('L') && kind.ends_with("Cache") => {
                let level = kind[1..2]
                    .parse()
                    .map_err(|_| format!("cache type {kind}"))?;
                caches.push(super::Cache {
                    level,
                    kind: match &kind[2..3] {
                        "i" => CacheKind::Instruction,
                        "d" => CacheKind::Data,
                        _ => CacheKind::Unified,
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
                for c in cpus.iter_mut().filter(|c| siblings.contains(c.id)) {
                    c.smt_siblings = siblings.clone();
                }
            }
            _ => {}
        }
        if let Some(parent) = stack.last_mut() {
            parent.pus.append(&mut pus);
        }
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
        });
    }
    nodes.sort_by_key(|n| n.id);
    for c in &mut cpus {
        c.node = nodes
            .iter()
            .find(|n| n.cpus.contains(c.id))
            .map_or(0, |n| n.id);
    }
    if let Some((indexes, values)) = distances.filter(|(i, v)| v.len() == i.len() * i.len()) {
        for (row, n) in indexes.iter().enumerate() {
            if let Some(node) = nodes.iter_mut().find(|x| x.id == *n) {
                node.distances = values[row * indexes.len()..(row + 1) * indexes.len()].to_vec();
            }
        }
    }
    caches.sort_by_key(|c| (c.level, c.cpus.iter().next()));
    Ok((
        Topology {
            cpus,
            caches,
            nodes,
        },
        host,
    ))
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

/// A cpu or node set in hwloc's hexadecimal words (as oslab-report's `hex_set` writes them).
pub fn parse_hex_set(s: &str) -> CpuSet {
    let words: Vec<&str> = s.split(',').collect();
    let mut set = CpuSet::new();
    for (i, w) in words.iter().rev().enumerate() {
        let bits = u32::from_str_radix(w.trim().trim_start_matches("0x"), 16).unwrap_or(0);
        (0..32)
            .filter(|b| bits & (1 << b) != 0)
            .for_each(|b| set.insert(i * 32 + b));
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_and_files_that_are_not_a_machine() {
        let set = parse_hex_set("0x00000001,0x00000003");
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
        let (t, host) = read(xml).unwrap();
        assert_eq!(host.as_deref(), Some("big"));
        assert_eq!(t.cpus.len(), 4);
        assert_eq!((t.cpus[2].package, t.cpus[2].core), (1, 5));
        assert_eq!(t.cpus[2].smt_siblings.iter().collect::<Vec<_>>(), [0, 2]);
        assert_eq!(t.caches[0].size, 33554432);
        assert_eq!(t.caches[0].ways, Some(16));
        assert_eq!(t.nodes[0].memory, Some(1024));
    }
}
