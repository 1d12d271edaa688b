//! A set of logical CPU numbers, and its plain list form (`0-3,8`, `0-15:2`); the words that
//! name cpus by the machine's topology (`node:1`) are [`crate::cpulist`]'s.

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
pub(crate) fn shown(s: &str) -> String {
    crate::text::shortened(s, 60)
}

pub(crate) const SYNTAX: &str =
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

impl Extend<usize> for CpuSet {
    fn extend<I: IntoIterator<Item = usize>>(&mut self, iter: I) {
        self.0.extend(iter);
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
