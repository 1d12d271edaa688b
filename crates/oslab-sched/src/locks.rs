//! How long each thread of a live process waits for user-space locks.
//!
//! User-space locks (pthread mutexes, Rust's Mutex, most language runtimes) sleep in the `futex`
//! system call when contended, so a thread blocked in a futex *wait* operation is waiting for a
//! lock (or a condition variable, which the caller's workload decides). `perf lock` only sees
//! kernel locks.
//!
//! The method here is sampling: every `period`, each thread's `/proc/PID/task/TID/syscall` says
//! which system call it is blocked in and with which arguments; the fraction of samples a thread
//! spends blocked in a futex wait op estimates its lock-wait fraction. It needs no BPF and works
//! for any process we may ptrace-read, at a sampling cost that grows with the thread count. An
//! eBPF method (summing wait time per thread in the kernel at sys_enter/exit_futex) would be
//! exact; it is not built yet, and every result says which method produced it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Which measurement produced the lock times.
pub const METHOD: &str =
    "sampling /proc/PID/task/TID/syscall for futex wait ops (a proxy: eBPF is not built)";

/// futex(2) operations that wait: FUTEX_WAIT, FUTEX_LOCK_PI, FUTEX_WAIT_BITSET,
/// FUTEX_WAIT_REQUEUE_PI, FUTEX_LOCK_PI2 (the op with the PRIVATE and CLOCK flags masked).
const WAIT_OPS: [u64; 5] = [0, 6, 9, 11, 13];
const FUTEX_CMD_MASK: u64 = !(128 | 256);

/// One thread over one interval.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadWait {
    /// Thread id.
    pub tid: i32,
    /// Samples taken of it.
    pub samples: u32,
    /// Samples that found it blocked in a futex wait.
    pub waiting: u32,
}

impl ThreadWait {
    /// Fraction of the interval spent waiting for locks (0..1).
    pub fn fraction(&self) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            f64::from(self.waiting) / f64::from(self.samples)
        }
    }
}

/// Why monitoring stopped.
#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    /// The process has exited.
    #[error("process {0} has exited")]
    Gone(i32),
    /// We may not read its threads' state.
    #[error("cannot read the threads of process {pid}: {why} (run as the same user or root)")]
    Denied {
        /// The pid.
        pid: i32,
        /// The error.
        why: String,
    },
}

/// The thread ids of `pid`, or why not.
pub fn threads(pid: i32) -> Result<Vec<i32>, MonitorError> {
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

/// Whether a `/proc/.../syscall` line shows a thread blocked in a futex wait.
pub fn is_futex_wait(syscall_line: &str) -> bool {
    let mut f = syscall_line.split_whitespace();
    let Some(nr) = f.next().and_then(|n| n.parse::<i64>().ok()) else {
        return false; // "running" or "-1 ..." (not in a system call)
    };
    if nr != libc::SYS_futex {
        return false;
    }
    let _uaddr = f.next();
    let op = f
        .next()
        .and_then(|o| u64::from_str_radix(o.trim_start_matches("0x"), 16).ok());
    op.is_some_and(|op| WAIT_OPS.contains(&(op & FUTEX_CMD_MASK)))
}

/// Samples the threads of `pid` every `period` for `interval`. Threads that appear are sampled
/// from then on; threads that exit are kept with what was seen.
pub fn sample(
    pid: i32,
    interval: Duration,
    period: Duration,
) -> Result<Vec<ThreadWait>, MonitorError> {
    let mut seen: BTreeMap<i32, ThreadWait> = BTreeMap::new();
    let end = Instant::now() + interval;
    loop {
        let tids = threads(pid)?;
        for tid in tids {
            let Ok(line) = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/syscall"))
            else {
                continue; // the thread exited between the listing and the read
            };
            let w = seen.entry(tid).or_insert(ThreadWait {
                tid,
                samples: 0,
                waiting: 0,
            });
            w.samples += 1;
            w.waiting += u32::from(is_futex_wait(&line));
        }
        let now = Instant::now();
        if now >= end {
            break;
        }
        std::thread::sleep(period.min(end - now));
    }
    Ok(seen.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn syscall_lines_are_classified() {
        let nr = libc::SYS_futex;
        assert!(is_futex_wait(&format!(
            "{nr} 0x7f0000 0x80 0x2 0x0 0x0 0x0 0x7ffd 0x7f11"
        )));
        assert!(is_futex_wait(&format!(
            "{nr} 0x7f0000 0x189 0x0 0x0 0x0 0xffffffff 0x7ffd 0x7f11"
        )));
        assert!(!is_futex_wait(&format!(
            "{nr} 0x7f0000 0x81 0x1 0x0 0x0 0x0 0x7ffd 0x7f11"
        ))); // wake
        assert!(!is_futex_wait("running"));
        assert!(!is_futex_wait(
            "0 0x3 0x7ffd 0x1000 0x0 0x0 0x0 0x7ffd 0x7f11"
        )); // read
        assert!(!is_futex_wait("-1 0x7ffd 0x7f11"));
    }

    #[test]
    fn a_thread_blocked_on_a_held_mutex_is_seen_waiting() {
        let lock = Arc::new(Mutex::new(()));
        let held = lock.lock().unwrap();
        let l2 = Arc::clone(&lock);
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            tx.send(oslab_core::affinity::gettid()).unwrap();
            let _g = l2.lock().unwrap();
        });
        let tid = rx.recv().unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let pid = std::process::id() as i32;
        let waits = sample(pid, Duration::from_millis(100), Duration::from_millis(5)).unwrap();
        drop(held);
        waiter.join().unwrap();
        let w = waits.iter().find(|w| w.tid == tid).unwrap();
        assert!(w.samples >= 10 && w.fraction() > 0.9, "{w:?}");
        // The sampling thread itself is busy reading /proc, never in a futex wait.
        let me = oslab_core::affinity::gettid();
        assert_eq!(
            waits.iter().find(|w| w.tid == me).map(|w| w.waiting),
            Some(0)
        );
        assert!(matches!(threads(i32::MAX), Err(MonitorError::Gone(_))));
    }
}
