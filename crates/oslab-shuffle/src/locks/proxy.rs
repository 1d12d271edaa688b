//! The proxy method, for when eBPF may not be loaded: every `period`, each thread's
//! `/proc/PID/task/TID/syscall` says which system call it is blocked in and with which arguments;
//! the fraction of samples that find a thread blocked in a futex wait op estimates its lock-wait
//! fraction. It works for any process whose threads we may read, at a cost that grows with the
//! thread count and a resolution of one sample period.

use super::{threads, MonitorError, ThreadWait};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// What this method measures, for every result it produces.
pub const METHOD: &str =
    "proxy: sampling /proc/PID/task/TID/syscall for futex wait ops (fraction of samples)";

/// futex(2) operations that wait: FUTEX_WAIT, FUTEX_LOCK_PI, FUTEX_WAIT_BITSET,
/// FUTEX_WAIT_REQUEUE_PI, FUTEX_LOCK_PI2 (the op with the PRIVATE and CLOCK flags masked).
const WAIT_OPS: [u64; 5] = [0, 6, 9, 11, 13];
const FUTEX_CMD_MASK: u64 = !(128 | 256);

/// Reading another user's syscall file needs ptrace access: without it nothing can be measured.
/// A process that has just exited (a zombie) refuses it too: that one is gone, not denied.
fn denied(pid: i32, e: std::io::Error) -> MonitorError {
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .and_then(|(_, r)| r.trim_start().chars().next())
        });
    match state {
        None | Some('Z') | Some('X') => MonitorError::Gone(pid),
        Some(_) => MonitorError::Denied {
            pid,
            why: format!("/proc/{pid}/task/*/syscall: {e}"),
        },
    }
}

/// Fails when the threads of `pid` may not be sampled.
pub fn check_access(pid: i32) -> Result<(), MonitorError> {
    match std::fs::read_to_string(format!("/proc/{pid}/syscall")) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Err(denied(pid, e)),
        _ => Ok(()),
    }
}

/// Whether a `/proc/.../syscall` line shows a thread blocked in a futex wait.
pub fn is_futex_wait(syscall_line: &str) -> bool {
    futex_wait_address(syscall_line).is_some()
}

/// The futex word a thread waits on (its lock), when its syscall line is a futex wait op.
pub fn futex_wait_address(syscall_line: &str) -> Option<u64> {
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
    let mut f = syscall_line.split_whitespace();
    // "running" or "-1 ..." is not in a system call.
    let nr = f.next()?.parse::<i64>().ok()?;
    if nr != libc::SYS_futex {
        return None;
    }
    let uaddr = hex(f.next()?)?;
    let op = hex(f.next()?)?;
    WAIT_OPS.contains(&(op & FUTEX_CMD_MASK)).then_some(uaddr)
}

/// Samples the threads of `pid` every `period` for `interval`. Threads that appear are sampled
/// from then on; threads that exit are kept with what was seen.
pub fn sample(
    pid: i32,
    interval: Duration,
    period: Duration,
) -> Result<Vec<ThreadWait>, MonitorError> {
    let mut seen: BTreeMap<i32, ThreadWait> = BTreeMap::new();
    // Samples of each thread found waiting on each futex word.
    let mut on: BTreeMap<(i32, u64), u32> = BTreeMap::new();
    let mut refused = None;
    let end = Instant::now() + interval;
    loop {
        let tids = threads(pid)?;
        for tid in tids {
            let line = match std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/syscall")) {
                Ok(l) => l,
                // Access was checked at the start: losing it means the thread is exiting.
                Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                    refused = Some(e);
                    continue;
                }
                Err(_) => continue, // the thread exited between the listing and the read
            };
            let w = seen.entry(tid).or_insert(ThreadWait {
                tid,
                waited: 0.0,
                observed: 0.0,
                lock: None,
            });
            w.observed += 1.0;
            if let Some(uaddr) = futex_wait_address(&line) {
                w.waited += 1.0;
                *on.entry((tid, uaddr)).or_default() += 1;
            }
        }
        let now = Instant::now();
        if now >= end {
            break;
        }
        if oslab_os::signals::sleep_unless_stopped(period.min(end - now)) {
            return Err(MonitorError::Stopped);
        }
    }
    // Each thread's lock: the word it was found waiting on most.
    let mut most: BTreeMap<i32, u32> = BTreeMap::new();
    for (&(tid, uaddr), &n) in &on {
        if n > *most.get(&tid).unwrap_or(&0) {
            most.insert(tid, n);
            if let Some(w) = seen.get_mut(&tid) {
                w.lock = Some(uaddr);
            }
        }
    }
    match refused {
        Some(e) if seen.is_empty() => Err(denied(pid, e)),
        _ => Ok(seen.into_values().collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(
            futex_wait_address(&format!("{nr} 0x7f0a10 0x80 0x2 0x0 0x0 0x0 0x7ffd 0x7f11")),
            Some(0x7f0a10)
        );
    }
}
