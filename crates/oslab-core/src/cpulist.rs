//! CPU sets and the cpu-list language users type: `0-3,8`, `0-15:2`, `all`, `node:1`, `socket:0`,
//! `core-sibling-of:0` (the hardware threads of cpu 0's core), joined by commas.

use crate::topology::Topology;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;

/// A set of logical CPU numbers, kept sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct CpuSet(BTreeSet<usize>);

/// A cpu list that could not be understood or names CPUs this machine lacks.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid cpu list {input:?}: {reason}")]
pub struct CpuListError {
    /// What the user typed.
    pub input: String,
    /// What is wrong and how to fix it.
    pub reason: String,
}

/// What the user typed, short enough to echo: a 100k-character list is not repeated whole.
fn shown(s: &str) -> String {
    crate::text::shortened(s, 60)
}

const SYNTAX: &str =
    "expected e.g. \"0-3,8\", \"0-15:2\", \"all\", \"node:1\", \"socket:0\", \"core-sibling-of:0\"";

impl CpuSet {
    /// The empty set.
    pub fn new() -> CpuSet {
        CpuSet::default()
    }

    /// A set of one CPU.
    pub fn single(cpu: usize) -> CpuSet {
        std::iter::once(cpu).collect()
    }

    /// Parses the kernel's numeric list format ("0-3,8"), without topology keywords.
    pub fn parse_list(s: &str) -> Result<CpuSet, CpuListError> {
        let err = |reason: String| CpuListError {
            input: shown(s),
            reason,
        };
        let mut set = CpuSet::new();
        let s = s.trim();
        if s.is_empty() {
            return Ok(set);
        }
        for part in s.split(',') {
            let part = part.trim();
            let (range, stride) = match part.split_once(':') {
                Some((r, st)) => (
                    r,
                    st.parse::<usize>()
                        .ok()
                        .filter(|&v| v > 0)
                        .ok_or_else(|| err(format!("bad stride {st:?} in {part:?}; {SYNTAX}")))?,
                ),
                None => (part, 1),
            };
            let num = |t: &str| {
                t.trim()
                    .parse::<usize>()
                    .map_err(|_| err(format!("{t:?} is not a cpu number; {SYNTAX}")))
            };
            let (lo, hi) = match range.split_once('-') {
                Some((a, b)) => (num(a)?, num(b)?),
                None => {
                    let v = num(range)?;
                    (v, v)
                }
            };
            if lo > hi {
                return Err(err(format!(
                    "range {range:?} runs backwards; write {hi}-{lo}"
                )));
            }
            if hi >= 1 << 16 {
                return Err(err(format!(
                    "cpu {hi} is beyond any machine Linux supports"
                )));
            }
            set.0.extend((lo..=hi).step_by(stride));
        }
        Ok(set)
    }

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
            set.0.extend(items.0);
        }
        if let Some(bad) = set.iter().find(|c| !online.contains(*c)) {
            return Err(err(format!(
                "cpu {bad} is not online (online cpus: {})",
                online.to_list()
            )));
        }
        Ok(set)
    }

    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: usize) -> bool {
        self.0.contains(&cpu)
    }

    /// Number of CPUs.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Smallest CPU.
    pub fn first(&self) -> Option<usize> {
        self.0.iter().next().copied()
    }

    /// CPUs in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().copied()
    }

    /// Adds a CPU.
    pub fn insert(&mut self, cpu: usize) {
        self.0.insert(cpu);
    }

    /// CPUs in both sets.
    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        self.0.intersection(&other.0).copied().collect()
    }

    /// Whether every CPU of `self` is in `other`.
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.0.is_subset(&other.0)
    }

    /// The compact kernel format: "0-3,8".
    pub fn to_list(&self) -> String {
        let mut out = Vec::new();
        let mut iter = self.0.iter().copied().peekable();
        while let Some(start) = iter.next() {
            let mut end = start;
            while iter.peek() == Some(&(end + 1)) {
                end = iter.next().unwrap_or(end);
            }
            out.push(if start == end {
                start.to_string()
            } else {
                format!("{start}-{end}")
            });
        }
        out.join(",")
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

impl FromIterator<usize> for CpuSet {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        CpuSet(iter.into_iter().collect())
    }
}

impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_list())
    }
}

impl From<CpuSet> for String {
    fn from(s: CpuSet) -> String {
        s.to_list()
    }
}

impl TryFrom<String> for CpuSet {
    type Error = CpuListError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        CpuSet::parse_list(&s)
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
