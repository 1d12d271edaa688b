//! The shared page between the CPU manager and one cooperative job: the manager publishes how
//! many threads the job may run and on which CPUs; the job reports each outer iteration's time
//! and thread count. A memfd mapped by both (inherited by the job across exec), so nothing is
//! left in the file system when either dies.
//!
//! The assignment is a seqlock (odd generation = being written): the job reads it only at
//! iteration boundaries and retries if it raced a write. Reports go into a ring the job fills
//! before it bumps `done`, so the manager, polling every few ms, never misses one unless it fell
//! 64 iterations behind (it then reads what the ring still holds).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};

/// CPUs an assignment can name.
pub const MAX_CPUS: usize = 1024;
const RING: usize = 64;
const MAGIC: u64 = 0x6f73_6c61_6263_706d; // "oslabcpm"

#[repr(C)]
struct Shared {
    magic: AtomicU64,
    generation: AtomicU64,
    threads: AtomicU64,
    stop: AtomicU64,
    mask: [AtomicU64; MAX_CPUS / 64],
    done: AtomicU64,
    total: AtomicU64,
    baseline: AtomicU64,
    baseline_iterations: AtomicU64,
    reports: [[AtomicU64; 2]; RING],
}

/// One outer iteration as the job reported it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Report {
    /// Its index (0-based).
    pub index: u64,
    /// Wall time in ns.
    pub ns: u64,
    /// Threads it ran with.
    pub threads: usize,
}

/// Either side of the shared page.
pub struct Channel {
    shared: *mut Shared,
    fd: OwnedFd,
}

// SAFETY: every field of Shared is atomic; the mapping lives as long as the Channel.
unsafe impl Send for Channel {}
// SAFETY: as above.
unsafe impl Sync for Channel {}

impl Channel {
    /// Creates a channel (manager side). The fd is close-on-exec; the manager clears that flag
    /// for the one child that should inherit it.
    pub fn create() -> io::Result<Channel> {
        // SAFETY: a NUL-terminated name and valid flags.
        let fd = unsafe { libc::memfd_create(c"oslab-cpuman".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a new descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: our fd; the size of the structure.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), std::mem::size_of::<Shared>() as i64) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let ch = Channel::map(fd)?;
        ch.s().magic.store(MAGIC, Ordering::Release);
        Ok(ch)
    }

    /// Opens the channel a manager passed as `fd` (job side).
    pub fn open_fd(fd: RawFd) -> io::Result<Channel> {
        // SAFETY: stat is plain data; fstat on any number is safe and fails for a closed one.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the descriptor was handed to us to own (and is open: fstat succeeded).
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        if (st.st_size as usize) < std::mem::size_of::<Shared>() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "fd {} is not an oslab cpuman channel (too small)",
                    fd.as_raw_fd()
                ),
            ));
        }
        let ch = Channel::map(fd)?;
        if ch.s().magic.load(Ordering::Acquire) != MAGIC {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("fd {} is not an oslab cpuman channel", ch.fd()),
            ));
        }
        Ok(ch)
    }

    fn map(fd: OwnedFd) -> io::Result<Channel> {
        // SAFETY: a shared mapping of a file at least this long.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                std::mem::size_of::<Shared>(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Channel {
            shared: p as *mut Shared,
            fd,
        })
    }

    fn s(&self) -> &Shared {
        // SAFETY: mapped for our lifetime; all fields atomic (zero is valid).
        unsafe { &*self.shared }
    }

    /// The descriptor (to pass to the job).
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Manager: from the next iteration on, run `threads` threads; pin them to `cpus` in order
    /// (thread k on cpus[k mod len]), or leave them unpinned when `cpus` is empty.
    pub fn publish(&self, threads: usize, cpus: &[usize]) {
        let s = self.s();
        s.generation.fetch_add(1, Ordering::AcqRel); // odd: writing
        s.threads.store(threads.max(1) as u64, Ordering::Relaxed);
        let mut words = [0u64; MAX_CPUS / 64];
        for &c in cpus.iter().filter(|&&c| c < MAX_CPUS) {
            words[c / 64] |= 1 << (c % 64);
        }
        for (w, v) in s.mask.iter().zip(words) {
            w.store(v, Ordering::Relaxed);
        }
        s.generation.fetch_add(1, Ordering::Release); // even: done
    }

    /// Job: the current assignment (threads, cpus).
    pub fn assignment(&self) -> (usize, Vec<usize>) {
        let s = self.s();
        loop {
            let g1 = s.generation.load(Ordering::Acquire);
            if g1 % 2 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let threads = s.threads.load(Ordering::Relaxed).max(1) as usize;
            let cpus: Vec<usize> = s
                .mask
                .iter()
                .enumerate()
                .flat_map(|(i, w)| {
                    let v = w.load(Ordering::Relaxed);
                    (0..64)
                        .filter(move |b| v & (1 << b) != 0)
                        .map(move |b| i * 64 + b)
                })
                .collect();
            if s.generation.load(Ordering::Acquire) == g1 {
                return (threads, cpus);
            }
        }
    }

    /// Manager: ask the job to stop at its next iteration boundary.
    pub fn request_stop(&self) {
        self.s().stop.store(1, Ordering::Release);
    }

    /// Job: whether the manager asked it to stop.
    pub fn stop_requested(&self) -> bool {
        self.s().stop.load(Ordering::Acquire) != 0
    }

    /// Manager: run iterations 1 to `iterations` (after the warm-up) with `threads` threads,
    /// the SelfAnalyzer's baseline (0 threads: no baseline).
    pub fn set_baseline(&self, threads: usize, iterations: u64) {
        self.s().baseline.store(threads as u64, Ordering::Release);
        self.s()
            .baseline_iterations
            .store(iterations.max(1), Ordering::Release);
    }

    /// Both sides: how many iterations the baseline takes (1 when none was set).
    pub fn baseline_iterations(&self) -> u64 {
        self.s().baseline_iterations.load(Ordering::Acquire).max(1)
    }

    /// Job: the baseline thread count (0 = none).
    pub fn baseline(&self) -> usize {
        self.s().baseline.load(Ordering::Acquire) as usize
    }

    /// Job: the number of iterations it will run.
    pub fn set_total(&self, n: u64) {
        self.s().total.store(n, Ordering::Release);
    }

    /// Iterations the job said it will run (0 before it started).
    pub fn total(&self) -> u64 {
        self.s().total.load(Ordering::Acquire)
    }

    /// Job: iteration `done` took `ns` with `threads` threads.
    pub fn report(&self, ns: u64, threads: usize) {
        let s = self.s();
        let i = s.done.load(Ordering::Relaxed);
        let slot = &s.reports[(i as usize) % RING];
        slot[0].store(ns, Ordering::Relaxed);
        slot[1].store(threads as u64, Ordering::Relaxed);
        s.done.store(i + 1, Ordering::Release);
    }

    /// Manager: reports of iterations `seen..` (those still in the ring), and the new `seen`.
    pub fn reports_since(&self, seen: u64) -> (Vec<Report>, u64) {
        let s = self.s();
        let done = s.done.load(Ordering::Acquire);
        let from = seen.max(done.saturating_sub(RING as u64));
        let reports = (from..done)
            .map(|i| {
                let slot = &s.reports[(i as usize) % RING];
                Report {
                    index: i,
                    ns: slot[0].load(Ordering::Relaxed),
                    threads: slot[1].load(Ordering::Relaxed) as usize,
                }
            })
            .collect();
        (reports, done)
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        // SAFETY: our mapping, of this size.
        unsafe {
            libc::munmap(
                self.shared as *mut libc::c_void,
                std::mem::size_of::<Shared>(),
            )
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignments_and_reports_cross_the_shared_page() {
        let manager = Channel::create().unwrap();
        // The job side maps the same memory through a duplicate of the descriptor.
        // SAFETY: dup of our own fd.
        let dup = unsafe { libc::dup(manager.fd()) };
        let job = Channel::open_fd(dup).unwrap();
        manager.publish(3, &[2, 5, 700]);
        assert_eq!(job.assignment(), (3, vec![2, 5, 700]));
        manager.publish(2, &[]);
        assert_eq!(job.assignment(), (2, vec![]));
        job.set_total(100);
        for i in 0..70u64 {
            job.report(1000 + i, 2);
        }
        assert_eq!(manager.total(), 100);
        let (r, seen) = manager.reports_since(0);
        // 70 reports, the ring keeps the last 64.
        assert_eq!(seen, 70);
        assert_eq!(r.len(), 64);
        assert_eq!(r[0].index, 6);
        assert_eq!(r.last().unwrap().ns, 1069);
        let (r, _) = manager.reports_since(68);
        assert_eq!(r.len(), 2);
        assert!(!job.stop_requested());
        manager.request_stop();
        assert!(job.stop_requested());
    }

    #[test]
    fn anything_else_is_refused() {
        // SAFETY: opening /dev/null read-only.
        let fd = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY) };
        assert!(Channel::open_fd(fd).is_err());
        assert!(Channel::open_fd(-1).is_err());
    }
}
