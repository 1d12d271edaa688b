//! The cpu-list language users type: `0-3,8`, `0-15:2`, `all`, `node:1`, `socket:0`,
//! `core-sibling-of:0` (the hardware threads of cpu 0's core), joined by commas: a
//! [`CpuSet`] resolved against the machine's topology.

use crate::cpuset::{shown, CpuListError, CpuSet, SYNTAX};
use crate::topology::Topology;

impl CpuSet {
    /// Parses a cpu list with topology keywords, resolved against `topo`. Every named CPU must be
    /// online.
    pub fn parse(s: &str, topo: &Topology) -> Result<CpuSet, CpuListError> {
        let err = |reason: String| CpuListError {
            input: shown(s),
            reason,
        };
        let online = topo.online();
        let mut set = CpuSet::new();
        for part in s.split(',').map(str::trim) {
            if part.is_empty() {
                return Err(err(format!("empty item; {SYNTAX}")));
            }
            let keyword = part
                .split_once(':')
                .filter(|(k, _)| k.chars().next().is_some_and(|c| c.is_ascii_alphabetic()));
            let items = match (part, keyword) {
                ("all", _) => online.clone(),
                (_, Some((key, arg))) => {
                    let n: usize = arg
                        .trim()
                        .parse()
                        .map_err(|_| err(format!("{arg:?} after {key}: is not a number")))?;
                    resolve_keyword(key, n, topo).map_err(err)?
                }
                _ => CpuSet::parse_list(part).map_err(|e| err(e.reason))?,
            };
            set.extend(items.iter());
        }
        if let Some(bad) = set.iter().find(|c| !online.contains(*c)) {
            return Err(err(format!(
                "cpu {bad} is not online (online cpus: {})",
                online.to_list()
            )));
        }
        Ok(set)
    }
}

fn resolve_keyword(key: &str, n: usize, topo: &Topology) -> Result<CpuSet, String> {
    match key {
        "node" => topo
            .nodes
            .iter()
            .find(|node| node.id == n)
            .map(|node| node.cpus.clone())
            .ok_or_else(|| {
                let ids: Vec<String> = topo.nodes.iter().map(|x| x.id.to_string()).collect();
                format!(
                    "NUMA node {n} does not exist (nodes here: {})",
                    ids.join(",")
                )
            }),
        "socket" | "package" => {
            let s: CpuSet = topo
                .cpus
                .iter()
                .filter(|c| c.package == n)
                .map(|c| c.id)
                .collect();
            if s.is_empty() {
                Err(format!(
                    "socket {n} does not exist (this machine has {}, numbered from 0)",
                    crate::units::counted(topo.packages(), "socket")
                ))
            } else {
                Ok(s)
            }
        }
        "core-sibling-of" => topo.cpu(n).map(|c| c.smt_siblings.clone()).ok_or_else(|| {
            format!(
                "cpu {n} is not online (online cpus: {})",
                topo.online().to_list()
            )
        }),
        other => Err(format!(
            "unknown keyword {other:?}; use node:N, socket:N or core-sibling-of:N"
        )),
    }
}
