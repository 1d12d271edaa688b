//! How long each thread of a live process waits for user-space locks.
//!
//! User-space locks (pthread mutexes, Rust's Mutex, most language runtimes) sleep in the `futex`
//! system call when contended, so a thread blocked in a futex *wait* operation is waiting for a
//! lock (or a condition variable: the workload decides). `perf lock` only sees kernel locks.
//!
//! Two methods, and every result names the one that produced it:
//! - [`bpf`]: an eBPF program on `syscalls:sys_enter_futex`/`sys_exit_futex` (and the futex2
//!   wait calls) sums each thread's wait time in the kernel, filtered by the target's tgid. Exact
//!   to the nanosecond, costs two tracepoint hits per wait. Needs CAP_BPF + CAP_PERFMON (root).
//! - [`proxy`]: sampling `/proc/PID/task/TID/syscall`; needs only read access to the process.
//!
//! [`Monitor::open`] with [`Choice::Auto`] tries eBPF and falls back to the proxy, saying why.

pub mod bpf;
pub mod proxy;

use oslab_core::reason::BadValue;
use oslab_core::reason::Unavailable;
use std::time::Duration;

/// One thread over one interval.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadWait {
    /// Thread id.
    pub tid: i32,
    /// Time spent waiting, in the method's unit (nanoseconds for eBPF, samples for the proxy).
    pub waited: f64,
    /// Time observed, in the same unit.
    pub observed: f64,
    /// The lock it waited for most in the interval (the futex word's address), when it waited.
    pub lock: Option<u64>,
}

impl ThreadWait {
    /// Fraction of the interval spent waiting for locks (0..1).
    pub fn fraction(&self) -> f64 {
        if self.observed <= 0.0 {
            0.0
        } else {
            (self.waited / self.observed).min(1.0)
        }
    }
}

/// Why monitoring stopped, or could not start.
#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    /// The process has exited.
    #[error("process {0} has exited")]
    Gone(i32),
    /// The user asked us to stop during an interval: it is not measured whole.
    #[error("stopped during an interval")]
    Stopped,
    /// We may not read its threads' state.
    #[error("cannot read the threads of process {pid}: {why} (run as the same user or root)")]
    Denied {
        /// The pid.
        pid: i32,
        /// The error.
        why: String,
    },
    /// eBPF was asked for and cannot be used.
    #[error("the eBPF lock monitor cannot start: {0}")]
    Bpf(Unavailable),
}

/// The thread ids of `pid`, or why not.
pub fn threads(pid: i32) -> Result<Vec<i32>, MonitorError> {
    if ended(pid) {
        return Err(MonitorError::Gone(pid));
    }
    let dir = format!("/proc/{pid}/task");
    let entries = std::fs::read_dir(&dir).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => MonitorError::Gone(pid),
        _ => MonitorError::Denied {
            pid,
            why: e.to_string(),
        },
    })?;
    let mut tids: Vec<i32> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    Ok(tids)
}

/// Whether process `pid` has exited but is not yet reaped (a zombie has no threads left to
/// watch, and may stay one for as long as its parent lives).
fn ended(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with(['Z', 'X']))
        })
        .unwrap_or(false)
}

/// Which method to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// eBPF when it loads, else the proxy (and say why).
    Auto,
    /// eBPF or an error.
    Ebpf,
    /// The sampling proxy.
    Proxy,
}

impl std::str::FromStr for Choice {
    type Err = BadValue;
    fn from_str(s: &str) -> Result<Self, BadValue> {
        match s {
            "auto" => Ok(Choice::Auto),
            "ebpf" | "bpf" => Ok(Choice::Ebpf),
            "proxy" => Ok(Choice::Proxy),
            _ => Err(format!("{s:?}: expected auto, ebpf or proxy").into()),
        }
    }
}

enum How {
    Ebpf(bpf::FutexWaits),
    Proxy,
}

/// Lock-wait measurement of one process, by one method.
pub struct Monitor {
    pid: i32,
    how: How,
    fallback: Option<String>,
}

impl Monitor {
    /// Starts measuring `pid` by `choice`. Fails when the process does not exist or may not be
    /// read, or when eBPF was required and cannot load.
    pub fn open(pid: i32, choice: Choice) -> Result<Monitor, MonitorError> {
        threads(pid)?;
        let proxy = || proxy::check_access(pid).map(|_| How::Proxy);
        let (how, fallback) = match choice {
            Choice::Proxy => (proxy()?, None),
            Choice::Ebpf => (
                How::Ebpf(bpf::FutexWaits::attach(pid).map_err(MonitorError::Bpf)?),
                None,
            ),
            Choice::Auto => match bpf::FutexWaits::attach(pid) {
                Ok(b) => (How::Ebpf(b), None),
                Err(why) => (proxy()?, Some(format!("eBPF unavailable ({why})"))),
            },
        };
        Ok(Monitor { pid, how, fallback })
    }

    /// The process watched.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// What the measurements are, for every result.
    pub fn method(&self) -> String {
        let m = match self.how {
            How::Ebpf(_) => bpf::METHOD,
            How::Proxy => proxy::METHOD,
        };
        match &self.fallback {
            Some(why) => format!("{m}; {why}"),
            None => m.to_string(),
        }
    }

    /// Why eBPF is not in use when it was preferred.
    pub fn fallback(&self) -> Option<&str> {
        self.fallback.as_deref()
    }

    /// Each thread's lock waits over the next `interval`. Threads that appear are counted from
    /// then on; threads that exit keep what was seen.
    pub fn measure(&mut self, interval: Duration) -> Result<Vec<ThreadWait>, MonitorError> {
        match &mut self.how {
            How::Ebpf(b) => b.measure(self.pid, interval),
            // 40 samples per interval: 2.5% resolution at a cost well under 1% of a core.
            How::Proxy => proxy::sample(
                self.pid,
                interval,
                (interval / 40).max(Duration::from_millis(1)),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    fn root() -> bool {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() == 0 }
    }

    /// A thread blocked on a held mutex, and one spinning, measured by `choice`.
    fn blocked_and_spinning(choice: Choice) -> (Monitor, ThreadWait, ThreadWait) {
        let lock = Arc::new(Mutex::new(()));
        let held = lock.lock().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let (l2, tx2) = (Arc::clone(&lock), tx.clone());
        let waiter = std::thread::spawn(move || {
            tx2.send(oslab_os::affinity::gettid()).unwrap();
            let _g = l2.lock().unwrap();
        });
        let s2 = Arc::clone(&stop);
        let spinner = std::thread::spawn(move || {
            tx.send(oslab_os::affinity::gettid()).unwrap();
            while !s2.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        });
        let (a, b) = (rx.recv().unwrap(), rx.recv().unwrap());
        let pid = std::process::id() as i32;
        let mut m = Monitor::open(pid, choice).unwrap();
        std::thread::sleep(Duration::from_millis(30));
        let waits = m.measure(Duration::from_millis(200)).unwrap();
        drop(held);
        stop.store(true, Ordering::Relaxed);
        waiter.join().unwrap();
        spinner.join().unwrap();
        let find = |tid| waits.iter().find(|w| w.tid == tid).cloned().unwrap();
        // The two threads registered in either order.
        let (w, s) = if find(a).fraction() > find(b).fraction() {
            (find(a), find(b))
        } else {
            (find(b), find(a))
        };
        (m, w, s)
    }

    /// Whether BPF programs can be attached here (root and tracefs); skips the test if not.
    fn bpf_can_load() -> bool {
        if !root() {
            oslab_testkit::skip("loading BPF needs root");
            return false;
        }
        if !std::path::Path::new("/sys/kernel/tracing/events/syscalls").is_dir() {
            oslab_testkit::skip("the syscall tracepoints need tracefs at /sys/kernel/tracing (scripts/test mounts it)");
            return false;
        }
        true
    }

    #[test]
    #[ignore = "loading BPF needs root and tracefs (CI runs it as root)"]
    fn ebpf_times_a_blocked_thread_to_the_interval_and_a_spinning_one_to_zero() {
        if !bpf_can_load() {
            return;
        }
        let (m, w, s) = blocked_and_spinning(Choice::Ebpf);
        assert!(m.method().starts_with("eBPF"), "{}", m.method());
        assert!(m.fallback().is_none());
        // The wait began before the interval: counted from the interval's start (in progress).
        assert!(w.fraction() > 0.95, "{w:?}");
        assert!((w.observed - 200e6).abs() < 50e6, "{w:?}");
        assert_eq!(s.waited, 0.0, "{s:?}");
    }

    #[test]
    fn the_proxy_sees_the_same_threads() {
        let (m, w, s) = blocked_and_spinning(Choice::Proxy);
        assert!(m.method().starts_with("proxy"));
        assert!(w.fraction() > 0.9 && w.observed >= 10.0, "{w:?}");
        assert!(s.fraction() < 0.1, "{s:?}");
    }

    #[test]
    fn auto_prefers_ebpf_when_it_loads() {
        let m = Monitor::open(std::process::id() as i32, Choice::Auto).unwrap();
        if root() && std::path::Path::new("/sys/kernel/tracing/events/syscalls").is_dir() {
            assert!(m.method().starts_with("eBPF"), "{}", m.method());
        } else {
            assert!(m.method().starts_with("proxy") && m.fallback().is_some());
        }
    }

    #[test]
    #[ignore = "loading BPF needs root and tracefs (CI runs it as root)"]
    fn ebpf_measures_a_thread_that_waits_half_the_time() {
        if !bpf_can_load() {
            return;
        }
        // 20 ms asleep on a condition variable (a futex wait that times out), 20 ms spinning.
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let s2 = Arc::clone(&stop);
        let t = std::thread::spawn(move || {
            tx.send(oslab_os::affinity::gettid()).unwrap();
            let (m, cv) = (Mutex::new(()), std::sync::Condvar::new());
            while !s2.load(Ordering::Relaxed) {
                let g = m.lock().unwrap();
                drop(cv.wait_timeout(g, Duration::from_millis(20)).unwrap());
                let t0 = std::time::Instant::now();
                while t0.elapsed() < Duration::from_millis(20) {
                    std::hint::spin_loop();
                }
            }
        });
        let tid = rx.recv().unwrap();
        let mut m = Monitor::open(std::process::id() as i32, Choice::Ebpf).unwrap();
        let waits = m.measure(Duration::from_millis(400)).unwrap();
        stop.store(true, Ordering::Relaxed);
        t.join().unwrap();
        let w = waits.iter().find(|w| w.tid == tid).unwrap();
        assert!((0.3..0.7).contains(&w.fraction()), "{w:?}");
    }

    #[test]
    #[ignore = "loading BPF needs root and tracefs (CI runs it as root)"]
    fn ebpf_on_a_process_that_never_waits_then_exits() {
        if !bpf_can_load() {
            return;
        }
        // A child sleeping in a futex-free way, then gone: ended by us once measured (a child
        // that ended itself after 0.2 s was gone before a busy machine had loaded the program).
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let mut m = Monitor::open(child.id() as i32, Choice::Ebpf).unwrap();
        let waits = m.measure(Duration::from_millis(50)).unwrap();
        assert!(waits.iter().all(|w| w.waited == 0.0), "{waits:?}");
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(matches!(
            m.measure(Duration::from_millis(50)),
            Err(MonitorError::Gone(_))
        ));
        assert!(matches!(
            Monitor::open(i32::MAX, Choice::Auto),
            Err(MonitorError::Gone(_))
        ));
        assert_eq!("bpf".parse::<Choice>(), Ok(Choice::Ebpf));
        assert!("x".parse::<Choice>().is_err());
    }
}
