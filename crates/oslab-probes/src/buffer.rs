//! Anonymous memory with an explicit page size, and what the kernel really gave us.
//!
//! Latency and bandwidth depend on the page size (TLB reach, page walks), so every memory probe
//! asks for one and records the one it got: THP is only a hint, and hugetlb needs pages reserved.

use crate::error::ProbeError;

/// The page size a buffer asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pages {
    /// 4 KiB pages (MADV_NOHUGEPAGE).
    Small,
    /// Transparent huge pages (MADV_HUGEPAGE on a 2 MiB-aligned range).
    Transparent,
    /// Reserved huge pages (MAP_HUGETLB); needs /proc/sys/vm/nr_hugepages > 0.
    Hugetlb,
    /// Whatever the system's THP setting gives (as an ordinary program would get).
    Default,
}

impl Pages {
    /// Name used in parameters.
    pub fn name(self) -> &'static str {
        match self {
            Pages::Small => "4k",
            Pages::Transparent => "thp",
            Pages::Hugetlb => "hugetlb",
            Pages::Default => "default",
        }
    }
}

const HUGE: usize = 2 << 20;

/// A page of no access at each end of a buffer's mapping, so that no neighbour merges with it.
const GUARD: usize = 4096;

/// The memory this process may still use, in bytes: MemAvailable from /proc/meminfo, or less
/// where its memory cgroup allows less (in a 1 GiB container the suite was OOM-killed, sized by
/// the host's memory).
pub fn available_memory() -> Option<u64> {
    let host = mem_available()?;
    Some(oslab_os::cgroup::memory_headroom().map_or(host, |c| c.min(host)))
}

/// MemAvailable from /proc/meminfo, in bytes: free memory and what the kernel can reclaim.
pub fn mem_available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
}

/// Private anonymous memory, unmapped on drop. Pages are not touched here: the first write
/// decides where they live (first touch).
pub struct Buffer {
    map: *mut u8,
    map_len: usize,
    ptr: *mut u8,
    len: usize,
    pages: Pages,
}

// SAFETY: the buffer owns its mapping; callers synchronise access to its contents.
unsafe impl Send for Buffer {}
// SAFETY: as above; shared references only hand out the raw pointer.
unsafe impl Sync for Buffer {}

/// Pages sampled per buffer to tell where its pages are.
const SAMPLE_PAGES: usize = 64;

impl Buffer {
    /// Page addresses spread over a buffer, for placement queries.
    pub fn sample_pages(&self) -> Vec<*mut u8> {
        let pages = self.len() / 4096;
        let step = (pages / SAMPLE_PAGES).max(1);
        (0..pages)
            .step_by(step)
            .map(|p| self.ptr().wrapping_add(p * 4096))
            .collect()
    }

    /// Where its pages are, node by node ("node0 50%, node1 50%"), on a machine of several
    /// nodes: a team's first touch places them by thread, and a reader should see where it did.
    pub fn nodes(&self, topology: &oslab_core::Topology) -> Option<String> {
        if topology.nodes.len() < 2 {
            return None;
        }
        use oslab_os::numa::Numa;
        let status = oslab_os::numa::LinuxNuma::new(topology)
            .where_are(&self.sample_pages())
            .ok()?;
        let mut per: std::collections::BTreeMap<i32, usize> = Default::default();
        for s in status.iter().filter(|&&s| s >= 0) {
            *per.entry(*s).or_default() += 1;
        }
        let n = status.len().max(1) as f64;
        Some(
            per.iter()
                .map(|(node, c)| format!("node{node} {:.0}%", 100.0 * *c as f64 / n))
                .collect::<Vec<_>>()
                .join(", "),
        )
    }

    /// Maps `len` bytes (rounded up to the page size) asking for `pages`.
    pub fn new(len: usize, pages: Pages) -> Result<Buffer, ProbeError> {
        let len = len.max(1).next_multiple_of(4096);
        // Hugetlb pages are reserved at mmap time (no MAP_NORESERVE: without a reservation a
        // touch would raise SIGBUS instead of mmap failing cleanly).
        // Other mappings get a guard page at each end: without one, the kernel merged adjacent
        // anonymous buffers (a bandwidth kernel's arrays) into one mapping, and the huge pages
        // smaps gives for it were every array's ("thp 190%" of one).
        let guard = match pages {
            Pages::Hugetlb => 0,
            _ => GUARD,
        };
        let (map_len, extra) = match pages {
            Pages::Hugetlb => (len.next_multiple_of(HUGE), libc::MAP_HUGETLB),
            Pages::Transparent => (
                len.next_multiple_of(HUGE) + HUGE + 2 * guard,
                libc::MAP_NORESERVE,
            ),
            _ => (len + 2 * guard, libc::MAP_NORESERVE),
        };
        // SAFETY: anonymous private mapping, no address hint.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | extra,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            let err = std::io::Error::last_os_error();
            return Err(match pages {
                Pages::Hugetlb => ProbeError::Unsupported(format!(
                    "no hugetlb pages for {} MiB ({err}); reserve some: echo N > /proc/sys/vm/nr_hugepages",
                    map_len >> 20
                )),
                _ => ProbeError::Failed(format!("cannot map {} MiB: {err}", map_len >> 20)),
            });
        }
        let map = map as *mut u8;
        for at in [0, map_len - guard].into_iter().filter(|_| guard > 0) {
            // SAFETY: a page of our own fresh mapping. Should it fail, the buffer works all the
            // same; only smaps may then count a neighbour's pages with its own.
            unsafe {
                libc::mprotect(
                    map.wrapping_add(at) as *mut libc::c_void,
                    guard,
                    libc::PROT_NONE,
                )
            };
        }
        let inner = map.wrapping_add(guard);
        let ptr = match pages {
            Pages::Transparent => inner.wrapping_add(inner.align_offset(HUGE)),
            _ => inner,
        };
        let advice = match pages {
            Pages::Small => Some(libc::MADV_NOHUGEPAGE),
            Pages::Transparent => Some(libc::MADV_HUGEPAGE),
            _ => None,
        };
        if let Some(advice) = advice {
            // SAFETY: advising our own fresh mapping. A refusal shows in `pages_used`.
            unsafe { libc::madvise(ptr as *mut libc::c_void, len, advice) };
        }
        Ok(Buffer {
            map,
            map_len,
            ptr,
            len,
            pages,
        })
    }

    /// Start of the usable range (4 KiB-aligned; 2 MiB-aligned for huge pages).
    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// Usable length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer is empty (never: lengths are rounded up to a page).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The page size asked for.
    pub fn requested(&self) -> Pages {
        self.pages
    }

    /// Writes one byte per 4 KiB page so every page is present.
    pub fn touch(&self) {
        for off in (0..self.len).step_by(4096) {
            // SAFETY: inside our mapping.
            unsafe { self.ptr.add(off).write_volatile(0) };
        }
    }

    /// Bytes of this buffer backed by huge pages, from /proc/self/smaps (AnonHugePages and
    /// hugetlb), or None when smaps is unreadable.
    pub fn huge_bytes(&self) -> Option<u64> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let (lo, hi) = (self.ptr as usize, self.ptr as usize + self.len);
        Some(huge_bytes_in(&smaps, lo, hi))
    }

    /// What the buffer is really backed by, e.g. "4k", "thp 100%", "hugetlb 2M".
    pub fn pages_used(&self) -> String {
        match self.huge_bytes() {
            None => format!("{} (unverified: smaps unreadable)", self.pages.name()),
            Some(_) if self.pages == Pages::Hugetlb => "hugetlb".into(),
            Some(0) => "4k".into(),
            Some(h) => format!("thp {:.0}%", 100.0 * h as f64 / self.len as f64),
        }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: our mapping.
        unsafe { libc::munmap(self.map as *mut libc::c_void, self.map_len) };
    }
}

/// Sums the huge-page fields of the smaps entries that overlap `[lo, hi)`.
fn huge_bytes_in(smaps: &str, lo: usize, hi: usize) -> u64 {
    let mut inside = false;
    let mut kib = 0u64;
    for line in smaps.lines() {
        if let Some((range, _)) = line.split_once(' ') {
            if let Some((a, b)) = range.split_once('-') {
                if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                {
                    inside = a < hi && b > lo;
                    continue;
                }
            }
        }
        if !inside {
            continue;
        }
        let mut f = line.split_whitespace();
        if let (Some(key), Some(v)) = (f.next(), f.next()) {
            if matches!(
                key,
                "AnonHugePages:" | "Private_Hugetlb:" | "Shared_Hugetlb:"
            ) {
                kib += v.parse::<u64>().unwrap_or(0);
            }
        }
    }
    kib * 1024
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smaps_fields_are_summed_for_overlapping_mappings_only() {
        let smaps = "\
7f0000000000-7f0000400000 rw-p 00000000 00:00 0
Size:               4096 kB
AnonHugePages:      2048 kB
7f0000400000-7f0000800000 rw-p 00000000 00:00 0
AnonHugePages:      4096 kB
Private_Hugetlb:       0 kB
";
        assert_eq!(
            huge_bytes_in(smaps, 0x7f00_0000_0000, 0x7f00_0040_0000),
            2048 * 1024
        );
        assert_eq!(
            huge_bytes_in(smaps, 0x7f00_0000_0000, 0x7f00_0080_0000),
            6144 * 1024
        );
        assert_eq!(huge_bytes_in(smaps, 0x1000, 0x2000), 0);
    }

    #[test]
    fn buffers_side_by_side_stay_mappings_of_their_own() {
        // Three arrays as a bandwidth kernel maps them: each its own mapping, so that smaps'
        // huge pages for it are its own (merged, one array read "thp 190%").
        let bufs: Vec<Buffer> = (0..3)
            .map(|_| Buffer::new(4 << 20, Pages::Default).unwrap())
            .collect();
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        for b in &bufs {
            b.touch();
            let (lo, hi) = (b.ptr() as usize, b.ptr() as usize + b.len());
            let own = maps.lines().find_map(|l| {
                let (a, z) = l.split_whitespace().next()?.split_once('-')?;
                let (a, z) = (
                    usize::from_str_radix(a, 16).ok()?,
                    usize::from_str_radix(z, 16).ok()?,
                );
                (a <= lo && lo < z).then_some((a, z))
            });
            assert_eq!(own, Some((lo, hi)), "{maps}");
        }
    }

    #[test]
    fn small_pages_are_small_and_huge_are_aligned() {
        let b = Buffer::new(8 << 20, Pages::Small).unwrap();
        b.touch();
        assert_eq!(b.pages_used(), "4k");
        let t = Buffer::new(8 << 20, Pages::Transparent).unwrap();
        assert_eq!(t.ptr() as usize % HUGE, 0);
        t.touch();
        // THP may be disabled system-wide; what we report must match smaps either way.
        let used = t.pages_used();
        assert!(used == "4k" || used.starts_with("thp "), "{used}");
    }
}
