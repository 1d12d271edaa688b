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
                waited: 0.0,
                observed: 0.0,
            });
            w.observed += 1.0;
            w.waited += f64::from(u8::from(is_futex_wait(&line)));
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
}
