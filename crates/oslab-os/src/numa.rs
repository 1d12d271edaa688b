//! NUMA placement through a narrow interface: which nodes exist, bind a range of memory to one
//! node before first touch (mbind MPOL_BIND with MF_STRICT), and ask where pages really are
//! (move_pages in query mode). [`LinuxNuma`] makes the raw syscalls; machines of several nodes
//! are tested in QEMU guests (`scripts/vm`, `crates/oslab/tests/vm.rs`).

use oslab_core::topology::Topology;
use oslab_core::CpuSet;
use std::io;

/// A NUMA node as the matrix sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct NumaNode {
    /// Node id.
    pub id: usize,
    /// Its CPUs (empty for memory-only nodes: CXL, HBM).
    pub cpus: CpuSet,
    /// Its memory in bytes, when known.
    pub memory: Option<u64>,
    /// SLIT distances to every node, in node order.
    pub distances: Vec<u32>,
}

/// What the NUMA experiments need from the system.
pub trait Numa: Sync {
    /// The nodes.
    fn nodes(&self) -> Vec<NumaNode>;
    /// Binds `[ptr, ptr+len)` (page-aligned, not yet touched) to `node`, strictly.
    fn bind(&self, ptr: *mut u8, len: usize, node: usize) -> io::Result<()>;
    /// The node of each page at `pages` (addresses inside touched mappings); a negative value is
    /// an errno (e.g. -ENOENT: not present).
    fn where_are(&self, pages: &[*mut u8]) -> io::Result<Vec<i32>>;
    /// What kind of system this is, for notes ("linux", "fake").
    fn kind(&self) -> &'static str;
    /// The memory nodes this process may use when a cpuset restricts them (None: all).
    fn mems_allowed(&self) -> Option<CpuSet> {
        None
    }
}

/// This process's memory nodes, from /proc/self/status (`Mems_allowed_list`), when it names
/// fewer than `nodes` has.
fn mems_allowed_here(nodes: &[NumaNode]) -> Option<CpuSet> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Mems_allowed_list:"))?
        .trim();
    let set = CpuSet::parse_list(list).ok()?;
    nodes.iter().any(|n| !set.contains(n.id)).then_some(set)
}

/// The real system.
pub struct LinuxNuma {
    nodes: Vec<NumaNode>,
}

impl LinuxNuma {
    /// Nodes from the topology.
    pub fn new(topology: &Topology) -> LinuxNuma {
        LinuxNuma {
            nodes: topology
                .nodes
                .iter()
                .map(|n| NumaNode {
                    id: n.id,
                    cpus: n.cpus.clone(),
                    memory: n.memory,
                    distances: n.distances.clone(),
                })
                .collect(),
        }
    }
}

const MPOL_BIND: libc::c_ulong = 2;
const MPOL_MF_STRICT: libc::c_ulong = 1;
/// Bits in the node masks we pass (more than any machine has nodes).
const MASK_BITS: usize = 1024;

impl Numa for LinuxNuma {
    fn nodes(&self) -> Vec<NumaNode> {
        self.nodes.clone()
    }

    fn bind(&self, ptr: *mut u8, len: usize, node: usize) -> io::Result<()> {
        if node >= MASK_BITS {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let mut mask = [0u64; MASK_BITS / 64];
        mask[node / 64] |= 1 << (node % 64);
        // SAFETY: mbind on a range the caller owns; the mask outlives the call. The kernel
        // ignores the last bit of maxnode (a historic off-by-one), hence +1.
        let r = unsafe {
            libc::syscall(
                libc::SYS_mbind,
                ptr as libc::c_ulong,
                len as libc::c_ulong,
                MPOL_BIND,
                mask.as_ptr(),
                (MASK_BITS + 1) as libc::c_ulong,
                MPOL_MF_STRICT,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    fn where_are(&self, pages: &[*mut u8]) -> io::Result<Vec<i32>> {
        move_pages(pages, None)
    }

    fn kind(&self) -> &'static str {
        "linux"
    }

    fn mems_allowed(&self) -> Option<CpuSet> {
        mems_allowed_here(&self.nodes)
    }
}

/// MPOL_MF_MOVE: move the pages only this process maps.
const MPOL_MF_MOVE: libc::c_int = 2;

/// Moves the pages at `pages` (addresses inside this process's touched mappings) to `node`
/// with move_pages(2); returns each page's node after the call (a negative value is an errno:
/// a page not present, or one the kernel could not move).
pub fn move_to(pages: &[*mut u8], node: usize) -> io::Result<Vec<i32>> {
    move_pages(pages, Some(node as i32))
}

/// move_pages(2) on this process: to `node`, or without one only where each page is.
fn move_pages(pages: &[*mut u8], node: Option<i32>) -> io::Result<Vec<i32>> {
    let nodes = node.map(|n| vec![n; pages.len()]);
    let mut status = vec![0i32; pages.len()];
    // SAFETY: every array has `count` entries; without nodes (query mode) the kernel only reads
    // page tables, with them it moves pages of this process only.
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            0,
            pages.len() as libc::c_ulong,
            pages.as_ptr(),
            nodes.as_ref().map_or(std::ptr::null(), |n| n.as_ptr()),
            status.as_mut_ptr(),
            if node.is_some() { MPOL_MF_MOVE } else { 0 },
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(status)
}

/// Fraction of `pages` that `numa` reports on `node` (pages not present count as misplaced).
pub fn fraction_on(numa: &dyn Numa, pages: &[*mut u8], node: usize) -> io::Result<f64> {
    if pages.is_empty() {
        return Ok(1.0);
    }
    let status = numa.where_are(pages)?;
    Ok(status.iter().filter(|&&s| s == node as i32).count() as f64 / pages.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(len: usize) -> *mut u8 {
        // SAFETY: a fresh anonymous mapping (leaked by the tests; small).
        unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            ) as *mut u8
        }
    }

    #[test]
    fn real_binding_to_node_0_places_pages_there() {
        let topo = crate::topology::read().unwrap();
        let numa = LinuxNuma::new(&topo);
        let node = numa.nodes()[0].id;
        let len = 64 * 4096;
        let p = map(len);
        numa.bind(p, len, node).unwrap();
        let pages: Vec<*mut u8> = (0..64).map(|i| p.wrapping_add(i * 4096)).collect();
        // Not touched yet: not present.
        assert!(numa
            .where_are(&pages)
            .unwrap()
            .iter()
            .all(|&s| s == -libc::ENOENT));
        for &q in &pages {
            // SAFETY: inside the mapping.
            unsafe { q.write_volatile(1) };
        }
        assert_eq!(fraction_on(&numa, &pages, node).unwrap(), 1.0);
        // A node that does not exist is refused, not silently ignored.
        assert!(numa.bind(p, len, 1000).is_err());
        // Moving pages to the node they are on leaves them there.
        let status = move_to(&pages, node).unwrap();
        assert!(status.iter().all(|&s| s == node as i32), "{status:?}");
    }
}
