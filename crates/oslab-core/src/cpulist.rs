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
                    "socket {n} does not exist (this machine has {} socket(s), numbered from 0)",
                    topo.packages()
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
#[cfg(test)]
mod tests {
    use super::*;

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
    use crate::topology::write_fake_sysfs;

    fn fake(packages: usize, cores: usize, threads: usize, nodes: usize) -> Topology {
        let dir = tempfile::tempdir().unwrap();
        write_fake_sysfs(dir.path(), packages, cores, threads, nodes).unwrap();
        Topology::read_from(dir.path()).unwrap()
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
