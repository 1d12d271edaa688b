//! The firmware's Heterogeneous Memory Attribute Table read from its bytes (ACPI 6.3, 5.2.27,
//! as `/sys/firmware/acpi/tables/HMAT` gives it): the latency and bandwidth of every
//! initiator-target pair, where the kernel's sysfs says them only from each memory's best
//! initiators. A table that is short, inconsistent or of an unknown revision is refused with the
//! reason; nothing is guessed.

use super::{Hmat, Node};
use std::collections::BTreeMap;

/// Why a table was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HmatError {
    /// Not an HMAT, or its header is short or wrong.
    #[error("not an HMAT: {0}")]
    Header(String),
    /// A structure inside runs past its end or the table's.
    #[error("the table's structure at byte {0} is cut short")]
    Truncated(usize),
    /// A revision whose units this does not know.
    #[error("HMAT revision {0}: only revisions 1 and 2 are known")]
    Revision(u8),
    /// The table's proximity domains are not the kernel's node numbers.
    #[error("the table's proximity domains are not the kernel's node numbers ({0})")]
    Domains(String),
}

/// The figures of one initiator-target pair, in ns and MB/s (None where the table gives none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Figures {
    read_latency: Option<u64>,
    write_latency: Option<u64>,
    read_bandwidth: Option<u64>,
    write_bandwidth: Option<u64>,
    // Access figures apply to reads and writes where the table gives neither apart.
    access_latency: Option<u64>,
    access_bandwidth: Option<u64>,
}

/// Every memory-level pair the table gives, by (initiator domain, target domain).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HmatTable {
    pairs: BTreeMap<(u32, u32), Figures>,
}

const HEADER: usize = 36;
/// The header, then four reserved bytes.
const FIRST_STRUCTURE: usize = HEADER + 4;
const LOCALITY: u16 = 1;
const LOCALITY_HEADER: usize = 32;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

impl HmatTable {
    /// Reads a table's bytes.
    pub fn parse(bytes: &[u8]) -> Result<HmatTable, HmatError> {
        if bytes.get(..4) != Some(b"HMAT".as_slice()) {
            return Err(HmatError::Header("its signature is not HMAT".into()));
        }
        let length = u32_at(bytes, 4).unwrap_or(0) as usize;
        if length < FIRST_STRUCTURE || length > bytes.len() {
            return Err(HmatError::Header(format!(
                "its length {length} does not fit the {} bytes read",
                bytes.len()
            )));
        }
        let table = &bytes[..length];
        if table.iter().fold(0u8, |s, b| s.wrapping_add(*b)) != 0 {
            return Err(HmatError::Header("its checksum is wrong".into()));
        }
        let revision = table[8];
        if !(1..=2).contains(&revision) {
            return Err(HmatError::Revision(revision));
        }
        let mut out = HmatTable::default();
        let mut at = FIRST_STRUCTURE;
        while at < length {
            let (Some(kind), Some(size)) = (u16_at(table, at), u32_at(table, at + 4)) else {
                return Err(HmatError::Truncated(at));
            };
            let size = size as usize;
            let Some(structure) = table.get(at..at.saturating_add(size)).filter(|_| size >= 8)
            else {
                return Err(HmatError::Truncated(at));
            };
            if kind == LOCALITY {
                out.read_locality(structure, revision)
                    .ok_or(HmatError::Truncated(at))?;
            }
            at += size;
        }
        Ok(out)
    }

    /// One System Locality Latency and Bandwidth Information structure; None when it is short.
    fn read_locality(&mut self, s: &[u8], revision: u8) -> Option<()> {
        if s.len() < LOCALITY_HEADER {
            return None;
        }
        let (hierarchy, data_type) = (s[8] & 0x0f, s[9]);
        let initiators = u32_at(s, 12)? as usize;
        let targets = u32_at(s, 16)? as usize;
        let base = u64_at(s, 24)?;
        let lists = initiators
            .checked_add(targets)?
            .checked_mul(4)?
            .checked_add(LOCALITY_HEADER)?;
        let end = lists.checked_add(initiators.checked_mul(targets)?.checked_mul(2)?)?;
        if end > s.len() {
            return None;
        }
        // Caches on the memory side (levels 1-3) are not the memory itself.
        if hierarchy != 0 {
            return Some(());
        }
        let domain = |list: usize, i: usize| u32_at(s, LOCALITY_HEADER + 4 * (list + i));
        for i in 0..initiators {
            for t in 0..targets {
                let entry = u16_at(s, lists + 2 * (i * targets + t))?;
                let Some(value) = normalized(entry, base, data_type, revision) else {
                    continue;
                };
                let figures = self
                    .pairs
                    .entry((domain(0, i)?, domain(initiators, t)?))
                    .or_default();
                let slot = match data_type {
                    0 => &mut figures.access_latency,
                    1 => &mut figures.read_latency,
                    2 => &mut figures.write_latency,
                    3 => &mut figures.access_bandwidth,
                    4 => &mut figures.read_bandwidth,
                    5 => &mut figures.write_bandwidth,
                    _ => continue,
                };
                *slot = Some(value);
            }
        }
        Some(())
    }

    /// Whether the table gives no pair at all.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The pairs reaching memory domain `target`, by initiator, as the kernel would say them.
    fn to(&self, target: u32) -> Vec<Hmat> {
        self.pairs
            .iter()
            .filter(|((_, t), _)| *t == target)
            .map(|((i, _), f)| Hmat {
                initiators: vec![*i as usize],
                read_latency_ns: f.read_latency.or(f.access_latency),
                write_latency_ns: f.write_latency.or(f.access_latency),
                read_bandwidth_mbs: f.read_bandwidth.or(f.access_bandwidth),
                write_bandwidth_mbs: f.write_bandwidth.or(f.access_bandwidth),
            })
            .collect()
    }

    /// Gives each node every pair that reaches its memory (`Node::hmat_table`), once the table's
    /// proximity domains are shown to be the kernel's node numbers: every domain is a node, and
    /// where the kernel says a node's figures from its best initiators, the table's pair says the
    /// same. Otherwise the nodes are left as they were and the reason returned.
    pub fn attach(&self, nodes: &mut [Node]) -> Result<(), HmatError> {
        let ids: Vec<usize> = nodes.iter().map(|n| n.id).collect();
        if let Some((i, t)) = self
            .pairs
            .keys()
            .find(|(i, t)| !ids.contains(&(*i as usize)) || !ids.contains(&(*t as usize)))
        {
            return Err(HmatError::Domains(format!(
                "domain {} is no node",
                if ids.contains(&(*i as usize)) { t } else { i }
            )));
        }
        let per_node: Vec<Vec<Hmat>> = nodes.iter().map(|n| self.to(n.id as u32)).collect();
        for (node, table) in nodes.iter().zip(&per_node) {
            let Some(kernel) = &node.hmat else { continue };
            for i in &kernel.initiators {
                let pair = table.iter().find(|h| h.initiators == [*i]);
                if pair.map(|h| h.read_latency_ns) != Some(kernel.read_latency_ns) {
                    return Err(HmatError::Domains(format!(
                        "node {i} to node {}: the kernel says read {:?} ns, the table {:?}",
                        node.id,
                        kernel.read_latency_ns,
                        pair.and_then(|h| h.read_latency_ns)
                    )));
                }
            }
        }
        for (node, table) in nodes.iter_mut().zip(per_node) {
            node.hmat_table = table;
        }
        Ok(())
    }
}

/// An entry times the base unit in ns or MB/s, as the kernel normalizes it (revision 1 in tenths,
/// revision 2's latencies in ps); None for "not given" (0 or 0xffff) or an overflow.
fn normalized(entry: u16, base: u64, data_type: u8, revision: u8) -> Option<u64> {
    if entry == 0 || entry == u16::MAX {
        return None;
    }
    let value = u64::from(entry).checked_mul(base)?;
    let value = match (revision, data_type) {
        (1, _) => value.div_ceil(10),
        (_, 0..=2) => value.div_ceil(1000),
        _ => value,
    };
    Some(value).filter(|v| *v > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpuset::CpuSet;

    /// A table of one memory-level structure per data type given: `(data_type, base, entries by
    /// initiator then target)`, revision 2.
    fn table(initiators: &[u32], targets: &[u32], structures: &[(u8, u64, Vec<u16>)]) -> Vec<u8> {
        let mut b = b"HMAT".to_vec();
        b.extend([0; 4]); // length, below
        b.push(2); // revision
        b.push(0); // checksum, below
        b.extend([0; HEADER - 10 + 4]);
        for (data_type, base, entries) in structures {
            let mut s = Vec::new();
            s.extend(LOCALITY.to_le_bytes());
            s.extend([0; 2]);
            let size = LOCALITY_HEADER + 4 * (initiators.len() + targets.len()) + 2 * entries.len();
            s.extend((size as u32).to_le_bytes());
            s.extend([0, *data_type, 0, 0]);
            s.extend((initiators.len() as u32).to_le_bytes());
            s.extend((targets.len() as u32).to_le_bytes());
            s.extend([0; 4]);
            s.extend(base.to_le_bytes());
            for d in initiators.iter().chain(targets) {
                s.extend(d.to_le_bytes());
            }
            for e in entries {
                s.extend(e.to_le_bytes());
            }
            b.extend(s);
        }
        let length = b.len() as u32;
        b[4..8].copy_from_slice(&length.to_le_bytes());
        summed(b)
    }

    /// The table with its checksum made right again.
    fn summed(mut b: Vec<u8>) -> Vec<u8> {
        b[9] = 0;
        b[9] = 0u8.wrapping_sub(b.iter().fold(0u8, |s, x| s.wrapping_add(*x)));
        b
    }

    fn node(id: usize, kernel: Option<(usize, u64)>) -> Node {
        Node {
            id,
            cpus: CpuSet::default(),
            memory: None,
            distances: vec![],
            hmat: kernel.map(|(i, ns)| Hmat {
                initiators: vec![i],
                read_latency_ns: Some(ns),
                write_latency_ns: Some(ns),
                read_bandwidth_mbs: None,
                write_bandwidth_mbs: None,
            }),
            hmat_table: vec![],
            kind: None,
        }
    }

    /// QEMU's hmat guest (scripts/vm hmat): two initiators, three memories; latencies in ps
    /// with a base of 1000 (so entries in ns), bandwidth in MB/s.
    fn guest() -> Vec<u8> {
        table(
            &[0, 1],
            &[0, 1, 2],
            &[
                (0, 1000, vec![80, 140, 250, 140, 80, 320]),
                (3, 1, vec![20480, 10240, 8192, 10240, 20480, 5120]),
            ],
        )
    }

    #[test]
    fn every_pair_is_given_to_the_memory_it_reaches() {
        let t = HmatTable::parse(&guest()).unwrap();
        let mut nodes = vec![
            node(0, Some((0, 80))),
            node(1, Some((1, 80))),
            node(2, Some((0, 250))),
        ];
        t.attach(&mut nodes).unwrap();
        let far = &nodes[2].hmat_table;
        assert_eq!(far.len(), 2);
        assert_eq!(far[1].initiators, [1]);
        assert_eq!(far[1].read_latency_ns, Some(320));
        assert_eq!(
            far[1].write_latency_ns,
            Some(320),
            "access applies to writes"
        );
        assert_eq!(far[1].read_bandwidth_mbs, Some(5120));
        assert_eq!(nodes[0].hmat_from(1).unwrap().read_latency_ns, Some(140));
    }

    #[test]
    fn a_read_figure_wins_over_the_access_one_whatever_their_order() {
        let b = table(&[0], &[0], &[(1, 1000, vec![70]), (0, 1000, vec![90])]);
        let mut nodes = vec![node(0, None)];
        HmatTable::parse(&b).unwrap().attach(&mut nodes).unwrap();
        let h = &nodes[0].hmat_table[0];
        assert_eq!(
            (h.read_latency_ns, h.write_latency_ns),
            (Some(70), Some(90))
        );
    }

    #[test]
    fn pairs_not_given_and_caches_are_left_out() {
        let b = table(&[0], &[0, 1], &[(0, 1000, vec![0, 0xffff])]);
        assert!(HmatTable::parse(&b).unwrap().is_empty());
        // The same structure at cache level 1.
        let mut cache = table(&[0], &[0], &[(0, 1000, vec![5])]);
        assert!(!HmatTable::parse(&cache).unwrap().is_empty());
        cache[FIRST_STRUCTURE + 8] = 1;
        assert!(HmatTable::parse(&summed(cache)).unwrap().is_empty());
    }

    #[test]
    fn domains_that_are_not_the_kernels_nodes_are_refused() {
        let t = HmatTable::parse(&guest()).unwrap();
        let mut two = vec![node(0, None), node(1, None)];
        assert!(matches!(t.attach(&mut two), Err(HmatError::Domains(_))));
        // The kernel's best initiator of node 2 reads 250 ns; a table saying 320 is not its.
        let mut swapped = vec![node(0, None), node(1, None), node(2, Some((1, 250)))];
        let e = t.attach(&mut swapped).unwrap_err();
        assert!(e.to_string().contains("node 1 to node 2"), "{e}");
        assert!(swapped.iter().all(|n| n.hmat_table.is_empty()));
    }

    #[test]
    fn a_hostile_or_cut_table_is_an_error_never_a_panic() {
        let good = guest();
        let first = u32_at(&good, FIRST_STRUCTURE + 4).unwrap() as usize;
        let whole = [FIRST_STRUCTURE, FIRST_STRUCTURE + first, good.len()];
        for cut in 0..good.len() {
            let mut b = good[..cut].to_vec();
            if b.len() >= 10 {
                b[4..8].copy_from_slice(&(cut as u32).to_le_bytes());
                b = summed(b);
            }
            // Only a cut between structures leaves a table (of fewer pairs).
            assert_eq!(
                HmatTable::parse(&b).is_ok(),
                whole.contains(&cut),
                "cut at {cut}"
            );
        }
        let mut bad_sum = good.clone();
        bad_sum[9] ^= 1;
        assert_eq!(
            HmatTable::parse(&bad_sum),
            Err(HmatError::Header("its checksum is wrong".into()))
        );
        // Counts that overflow or point past the structure, a structure shorter than its header.
        for (at, value) in [(12, u32::MAX), (16, u32::MAX), (16, 4), (4, 7)] {
            let mut b = good.clone();
            let at = FIRST_STRUCTURE + at;
            b[at..at + 4].copy_from_slice(&value.to_le_bytes());
            assert!(HmatTable::parse(&summed(b)).is_err(), "{at} = {value}");
        }
        let mut rev = good;
        rev[8] = 3;
        assert_eq!(HmatTable::parse(&summed(rev)), Err(HmatError::Revision(3)));
    }
}
