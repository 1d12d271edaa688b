//! Waiting on many descriptors: select, poll and epoll_wait over 10, 100 and 1,000 descriptors
//! that are all ready (eventfds holding a count), per call, with a zero timeout (lmbench's
//! lat_select selects on files, which are always ready). select's kernel walks every descriptor
//! up to the highest, poll's every entry it is given; epoll_wait hands back the ready list it
//! keeps.
//!
//! The descriptors need room: the soft limit on open files is raised toward the hard one for
//! the probe and put back after; a count the hard limit does not allow is skipped with it, and
//! select, which takes descriptors below FD_SETSIZE (1,024) only, skips what reaches past that.

use crate::probe::{Context, Probe, ProbeError};
use oslab_core::catalog::{self, metric, Entry};
use oslab_core::model::{Measurement, Status, Unit};
use oslab_core::params;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The descriptor counts measured.
pub const COUNTS: [usize; 3] = [10, 100, 1000];

/// The poll probes.
pub const PROBES: &[Probe] = &[
    Probe {
        entry: &catalog::POLL_SELECT,
        needs: &[],
        cost: 1.0,
        plan: None,
        run: |cx, me| waiting(cx, me, Call::Select),
    },
    Probe {
        entry: &catalog::POLL_POLL,
        needs: &[],
        cost: 1.0,
        plan: None,
        run: |cx, me| waiting(cx, me, Call::Poll),
    },
    Probe {
        entry: &catalog::POLL_EPOLL,
        needs: &[],
        cost: 1.0,
        plan: None,
        run: |cx, me| waiting(cx, me, Call::Epoll),
    },
];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Call {
    Select,
    Poll,
    Epoll,
}

/// The soft limit on open files raised to at least `want` (never above the hard limit) while
/// this lives; put back on drop.
struct FileLimit {
    before: libc::rlimit,
}

impl FileLimit {
    /// The limit raised; Err(the hard limit) when it is below `want`.
    fn raise(want: u64) -> Result<FileLimit, u64> {
        // SAFETY: plain data, filled by getrlimit.
        let mut before: libc::rlimit = unsafe { std::mem::zeroed() };
        // SAFETY: a valid buffer.
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut before) };
        if before.rlim_max < want {
            return Err(before.rlim_max);
        }
        let raised = libc::rlimit {
            rlim_cur: before.rlim_cur.max(want),
            rlim_max: before.rlim_max,
        };
        // SAFETY: a valid limit, within the hard one.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) };
        Ok(FileLimit { before })
    }
}

impl Drop for FileLimit {
    fn drop(&mut self) {
        // SAFETY: the limit that was there.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &self.before) };
    }
}

/// `n` eventfds, each readable (holding a count of 1).
fn ready(n: usize) -> Result<Vec<OwnedFd>, ProbeError> {
    (0..n)
        .map(|_| {
            // SAFETY: plain syscall; the descriptor is owned from here on.
            let fd = unsafe { libc::eventfd(1, libc::EFD_CLOEXEC) };
            if fd < 0 {
                return Err(ProbeError::os("eventfd"));
            }
            // SAFETY: just returned to us.
            Ok(unsafe { OwnedFd::from_raw_fd(fd) })
        })
        .collect()
}

fn waiting(cx: &Context, me: &'static Entry, call: Call) -> Result<Vec<Measurement>, ProbeError> {
    let mut out = Vec::new();
    // A curve of points: half the budget each.
    let harness = cx.harness.scaled(0.5);
    let counts: &[usize] = match cx.harness.config.pace {
        oslab_core::pace::Pace::Quick => &[10, 1000],
        _ => &COUNTS,
    };
    for &n in counts {
        let p = || params! {"fds" => n, "ready" => n};
        let skip = |why: String| {
            Measurement::not_taken(me.id, p(), metric::PER_CALL, Unit::Ns, Status::Skipped(why))
        };
        // Room for the descriptors and those the process already holds (and a few to spare).
        let open = std::fs::read_dir("/proc/self/fd").map_or(64, |d| d.count()) as u64;
        let _limit = match FileLimit::raise(n as u64 + open + 8) {
            Ok(l) => l,
            Err(hard) => {
                out.push(skip(format!(
                    "the hard limit on open files (ulimit -Hn) is {hard}: below {n} descriptors and those already open"
                )));
                continue;
            }
        };
        let fds = ready(n)?;
        let highest = fds.iter().map(|f| f.as_raw_fd()).max().unwrap_or(0);
        if call == Call::Select && highest >= libc::FD_SETSIZE as i32 {
            out.push(skip(format!(
                "select takes descriptors below FD_SETSIZE ({}); these reach {highest}",
                libc::FD_SETSIZE
            )));
            continue;
        }
        let mut wrong = None;
        let timing = match call {
            Call::Select => {
                // SAFETY: plain data, zero is an empty set.
                let mut all: libc::fd_set = unsafe { std::mem::zeroed() };
                for f in &fds {
                    // SAFETY: a descriptor below FD_SETSIZE (checked above).
                    unsafe { libc::FD_SET(f.as_raw_fd(), &mut all) };
                }
                harness.batched(&mut |k| {
                    for _ in 0..k {
                        let mut set = all;
                        let mut zero = libc::timeval {
                            tv_sec: 0,
                            tv_usec: 0,
                        };
                        // SAFETY: valid sets and timeout.
                        let got = unsafe {
                            libc::select(
                                highest + 1,
                                &mut set,
                                std::ptr::null_mut(),
                                std::ptr::null_mut(),
                                &mut zero,
                            )
                        };
                        if got != n as i32 {
                            wrong.get_or_insert(got);
                        }
                    }
                })?
            }
            Call::Poll => {
                let mut entries: Vec<libc::pollfd> = fds
                    .iter()
                    .map(|f| libc::pollfd {
                        fd: f.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    })
                    .collect();
                harness.batched(&mut |k| {
                    for _ in 0..k {
                        // SAFETY: a valid array of its length.
                        let got = unsafe {
                            libc::poll(entries.as_mut_ptr(), entries.len() as libc::nfds_t, 0)
                        };
                        if got != n as i32 {
                            wrong.get_or_insert(got);
                        }
                    }
                })?
            }
            Call::Epoll => {
                // SAFETY: plain syscall.
                let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
                if ep < 0 {
                    return Err(ProbeError::os("epoll_create1"));
                }
                // SAFETY: just returned to us.
                let ep = unsafe { OwnedFd::from_raw_fd(ep) };
                for f in &fds {
                    let mut ev = libc::epoll_event {
                        events: libc::EPOLLIN as u32,
                        u64: f.as_raw_fd() as u64,
                    };
                    // SAFETY: valid descriptors and event.
                    if unsafe {
                        libc::epoll_ctl(ep.as_raw_fd(), libc::EPOLL_CTL_ADD, f.as_raw_fd(), &mut ev)
                    } != 0
                    {
                        return Err(ProbeError::os("epoll_ctl"));
                    }
                }
                let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; n];
                harness.batched(&mut |k| {
                    for _ in 0..k {
                        // SAFETY: a valid array of n events.
                        let got = unsafe {
                            libc::epoll_wait(ep.as_raw_fd(), events.as_mut_ptr(), n as i32, 0)
                        };
                        if got != n as i32 {
                            wrong.get_or_insert(got);
                        }
                    }
                })?
            }
        };
        if let Some(got) = wrong {
            return Err(ProbeError::Failed(format!(
                "{n} ready descriptors, but a call reported {got}"
            )));
        }
        let mut m = cx.measurement(me.id, p(), metric::PER_CALL, &timing);
        m.note_before(format!(
            "{n} eventfds, all readable, zero timeout; the call returns all {n}"
        ));
        out.push(m);
    }
    Ok(out)
}
