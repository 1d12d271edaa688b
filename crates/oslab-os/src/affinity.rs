//! Placement guards: pin a thread or raise it to SCHED_FIFO, and put things back when the guard
//! drops (normal return, `?`, panic unwinding, or a Ctrl-C turned into an early return).

use oslab_core::cpuset::CpuSet;
use std::io;

/// Errors changing placement.
#[derive(Debug, thiserror::Error)]
pub enum PlacementError {
    /// The kernel refused for lack of privilege.
    #[error("{what}: permission denied ({hint})")]
    Permission {
        /// What was attempted.
        what: String,
        /// How to get the privilege.
        hint: &'static str,
    },
    /// The request was invalid (e.g. CPUs outside the cpuset).
    #[error("{what}: {source}")]
    Os {
        /// What was attempted.
        what: String,
        /// The OS error.
        source: io::Error,
    },
}

/// The CPUs thread `tid` may run on (0 = the calling thread).
pub fn get_affinity(tid: libc::pid_t) -> io::Result<CpuSet> {
    // SAFETY: zeroed cpu_set_t is valid; the kernel writes at most its size.
    let mut raw: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: raw is a valid cpu_set_t of the size passed.
    let rc = unsafe { libc::sched_getaffinity(tid, std::mem::size_of_val(&raw), &mut raw) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((0..libc::CPU_SETSIZE as usize)
        .filter(|&c| {
            // SAFETY: c is below CPU_SETSIZE.
            unsafe { libc::CPU_ISSET(c, &raw) }
        })
        .collect())
}

/// Sets the CPUs thread `tid` may run on (0 = the calling thread).
pub fn set_affinity(tid: libc::pid_t, set: &CpuSet) -> io::Result<()> {
    let raw = crate::placement::cpu_set_t(set);
    // SAFETY: raw is a valid cpu_set_t of the size passed.
    let rc = unsafe { libc::sched_setaffinity(tid, std::mem::size_of_val(&raw), &raw) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// This thread's affinity widened to the isolated cpus where the kernel (and any cpuset) allows
/// them: isolcpus keeps them out of every process's default mask, yet they are where a
/// measurement is quietest. Returns (allowed, isolated); the affinity is left widened.
pub fn widened_to_isolated(allowed: CpuSet) -> (CpuSet, CpuSet) {
    let isolated = crate::placement::isolated();
    if isolated.iter().all(|c| allowed.contains(c)) {
        return (allowed, isolated);
    }
    let wide: CpuSet = allowed.iter().chain(isolated.iter()).collect();
    // The kernel keeps what the cpuset permits of it; the rest stays as it was.
    if set_affinity(0, &wide).is_err() {
        return (allowed, isolated);
    }
    let now = get_affinity(0).unwrap_or(allowed);
    (now, isolated)
}

/// The calling thread's kernel thread id.
pub fn gettid() -> libc::pid_t {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// The CPU the calling thread runs on right now.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu has no preconditions.
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(c as usize)
}

/// Pins a thread to a set of CPUs and restores its previous mask on drop.
#[derive(Debug)]
pub struct AffinityGuard {
    tid: libc::pid_t,
    previous: CpuSet,
}

impl AffinityGuard {
    /// Pins the calling thread to `set`.
    pub fn pin_current(set: &CpuSet) -> Result<AffinityGuard, PlacementError> {
        AffinityGuard::pin(gettid(), set)
    }

    /// Pins thread `tid` to `set`.
    pub fn pin(tid: libc::pid_t, set: &CpuSet) -> Result<AffinityGuard, PlacementError> {
        let what = || format!("pinning thread {tid} to cpus {set}");
        let previous = get_affinity(tid).map_err(|source| PlacementError::Os {
            what: what(),
            source,
        })?;
        set_affinity(tid, set).map_err(|source| match source.raw_os_error() {
            Some(libc::EPERM) => PlacementError::Permission {
                what: what(),
                hint: "run as the thread's owner or with CAP_SYS_NICE",
            },
            _ => PlacementError::Os {
                what: what(),
                source,
            },
        })?;
        Ok(AffinityGuard { tid, previous })
    }

    /// The mask that will be restored.
    pub fn previous(&self) -> &CpuSet {
        &self.previous
    }
}

impl Drop for AffinityGuard {
    fn drop(&mut self) {
        // The thread may have exited: nothing to restore then.
        let _ = set_affinity(self.tid, &self.previous);
    }
}

/// Sets the calling thread's scheduling policy (e.g. SCHED_FIFO) and restores the old one on drop.
#[derive(Debug)]
pub struct SchedGuard {
    tid: libc::pid_t,
    policy: libc::c_int,
    priority: libc::c_int,
}

impl SchedGuard {
    /// Raises the calling thread to SCHED_FIFO at `priority` (1..=99).
    pub fn fifo(priority: i32) -> Result<SchedGuard, PlacementError> {
        SchedGuard::set(libc::SCHED_FIFO, priority)
    }

    /// Puts the calling thread in the normal (fair) class, SCHED_OTHER. Needs no privilege.
    pub fn normal() -> Result<SchedGuard, PlacementError> {
        SchedGuard::set(libc::SCHED_OTHER, 0)
    }

    /// Sets the calling thread to `policy` (SCHED_FIFO, SCHED_RR, SCHED_OTHER) at `priority`.
    pub fn set(policy: libc::c_int, priority: i32) -> Result<SchedGuard, PlacementError> {
        let tid = gettid();
        // SAFETY: querying our own scheduling state has no preconditions.
        let old_policy = unsafe { libc::sched_getscheduler(tid) };
        let mut param = libc::sched_param { sched_priority: 0 };
        // SAFETY: param is a valid out-pointer.
        unsafe { libc::sched_getparam(tid, &mut param) };
        let new = libc::sched_param {
            sched_priority: priority,
        };
        // SAFETY: new is a valid sched_param.
        if unsafe { libc::sched_setscheduler(tid, policy, &new) } != 0 {
            let source = io::Error::last_os_error();
            let what = format!("raising thread {tid} to real-time priority {priority}");
            return Err(match source.raw_os_error() {
                Some(libc::EPERM) => PlacementError::Permission {
                    what,
                    // SAFETY: geteuid has no preconditions.
                    hint: match unsafe { libc::geteuid() } {
                        // Root refused: its cpu cgroup has no real-time time, or it is root in
                        // a user namespace only.
                        0 => "refused to root: the cpu cgroup grants no real-time time (cpu.rt_runtime_us is 0 under CONFIG_RT_GROUP_SCHED: give it some, or run outside that cgroup), or this is root in a user namespace only",
                        _ => "run as root, grant CAP_SYS_NICE, or raise RLIMIT_RTPRIO",
                    },
                },
                _ => PlacementError::Os { what, source },
            });
        }
        Ok(SchedGuard {
            tid,
            policy: old_policy.max(0),
            priority: param.sched_priority,
        })
    }
}

impl Drop for SchedGuard {
    fn drop(&mut self) {
        let p = libc::sched_param {
            sched_priority: self.priority,
        };
        // SAFETY: p is valid; failure leaves the thread real-time, which only we are.
        unsafe { libc::sched_setscheduler(self.tid, self.policy, &p) };
    }
}

/// Whether the calling thread could switch to SCHED_FIFO (checked by trying, then undoing).
pub fn fifo_permitted() -> bool {
    std::thread::spawn(|| SchedGuard::fifo(1).is_ok())
        .join()
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pin_and_restore() {
        std::thread::spawn(|| {
            let before = get_affinity(0).unwrap();
            let first = before.first().unwrap();
            {
                let _g = AffinityGuard::pin_current(&CpuSet::single(first)).unwrap();
                assert_eq!(get_affinity(0).unwrap(), CpuSet::single(first));
                assert_eq!(current_cpu(), Some(first));
            }
            assert_eq!(get_affinity(0).unwrap(), before);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn restored_after_panic() {
        let handle = std::thread::spawn(|| {
            let before = get_affinity(0).unwrap();
            let r = std::panic::catch_unwind(|| {
                let _g =
                    AffinityGuard::pin_current(&CpuSet::single(before.first().unwrap())).unwrap();
                panic!("probe failed");
            });
            assert!(r.is_err());
            get_affinity(0).unwrap() == before
        });
        assert!(handle.join().unwrap());
    }

    #[test]
    fn pinning_outside_the_machine_is_an_error() {
        let err = AffinityGuard::pin_current(&CpuSet::single(4000)).unwrap_err();
        assert!(err.to_string().contains("4000"), "{err}");
    }

    #[test]
    fn normal_guard_needs_no_privilege() {
        std::thread::spawn(|| {
            let g = SchedGuard::normal().unwrap();
            // SAFETY: querying our own policy.
            assert_eq!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_OTHER);
            drop(g);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn threads_and_children_of_a_fifo_thread_measure_in_its_class() {
        // A run's peers (c2c's responder, switch partners, fork children, bandwidth workers) are
        // made by the measuring thread and inherit its class: oslab never asks
        // SCHED_RESET_ON_FORK, so one run's figures share one set of conditions.
        std::thread::spawn(|| {
            let Ok(_g) = SchedGuard::fifo(1) else {
                return; // not permitted here: nothing to inherit
            };
            // SAFETY: querying our own policy.
            let policy = || unsafe { libc::sched_getscheduler(0) };
            assert_eq!(std::thread::spawn(policy).join().unwrap(), libc::SCHED_FIFO);
            // SAFETY: the child only queries its policy and exits; the parent reaps it.
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                // SAFETY: as above.
                unsafe { libc::_exit(i32::from(policy() != libc::SCHED_FIFO)) };
            }
            let mut status = 0;
            // SAFETY: waiting for our own child.
            assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
            assert!(
                libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
                "{status}"
            );
        })
        .join()
        .unwrap();
    }

    #[test]
    fn fifo_guard_restores_policy() {
        std::thread::spawn(|| {
            // SAFETY: querying our own policy.
            let before = unsafe { libc::sched_getscheduler(0) };
            match SchedGuard::fifo(1) {
                Ok(g) => {
                    // SAFETY: as above.
                    assert_eq!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_FIFO);
                    drop(g);
                }
                Err(PlacementError::Permission { .. }) => {} // not root: nothing to restore
                Err(e) => panic!("{e}"),
            }
            // SAFETY: as above.
            assert_eq!(unsafe { libc::sched_getscheduler(0) }, before);
        })
        .join()
        .unwrap();
    }
}
