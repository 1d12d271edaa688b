//! A command oslab starts (`shuffle -- CMD`, shuffle-eval's workloads, cpuman's jobs) and every
//! process it starts in turn, ended as a whole on every path:
//! - the command leads a process group of its own ([`Tree::contain`]), so its children, which
//!   stay in that group, are signalled with it;
//! - ending it ([`Tree::end`]) sends SIGTERM to the group, waits a grace period, then sends
//!   SIGKILL to whatever is left: a command that ignores SIGINT and SIGTERM does not outlive us;
//! - a guard process ([`Tree::watch`]) holds the read end of a pipe whose only write end is ours.
//!   When oslab ends in any way, SIGKILL included, the kernel closes that end; the guard sees
//!   end-of-file and kills the group (SIGTERM, a grace period, SIGKILL). An oslab that ends the
//!   group itself tells the guard to stand down first.
//!
//! A child that leaves the group (`setsid`, a double-forking daemon) escapes all of this, as it
//! escapes a shell's job control; a cgroup would hold it, where the host lets us make one.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// How long a group is given between SIGTERM and SIGKILL.
pub const GRACE: Duration = Duration::from_secs(2);

/// A started command's process group and its guard.
pub struct Tree {
    pgid: i32,
    /// The guard's pid and our (only) write end of its pipe.
    guard: Option<(i32, OwnedFd)>,
}

impl Tree {
    /// Makes the process `cmd` starts lead a process group of its own, and die when the calling
    /// thread dies ([`crate::signals::die_with_parent`]). Terminal signals then reach oslab
    /// alone, which ends the group itself.
    pub fn contain(cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        crate::signals::die_with_parent(cmd);
        // SAFETY: setpgid is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setpgid(0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }

    /// Watches the group led by `leader` (started after [`Tree::contain`]): starts its guard. If
    /// no guard can be started the group is still ended by [`Tree::end`] and on drop, but not if
    /// oslab is killed.
    pub fn watch(leader: i32) -> Tree {
        Tree {
            pgid: leader,
            guard: start_guard(leader).ok(),
        }
    }

    /// Whether no process of the group is left (a zombie leader not yet reaped counts).
    pub fn is_empty(&self) -> bool {
        // SAFETY: signal 0 only checks that the group exists.
        unsafe { libc::kill(-self.pgid, 0) != 0 }
    }

    /// Ends the group: SIGTERM, then up to `grace` for it to empty (`leader_reaped` reaps the
    /// leader, our child, without blocking and says whether it is gone), then SIGKILL to the rest.
    /// The caller reaps the leader afterwards (it is dead by then).
    pub fn end(mut self, grace: Duration, mut leader_reaped: impl FnMut() -> bool) {
        self.signal(libc::SIGTERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if leader_reaped() && self.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.signal(libc::SIGKILL);
        self.stand_down();
    }

    /// [`Tree::end`] for a group led by our child `leader`, which is then reaped.
    pub fn end_child(
        self,
        leader: &mut std::process::Child,
        grace: Duration,
    ) -> std::io::Result<std::process::ExitStatus> {
        self.end(grace, || leader.try_wait().map_or(true, |s| s.is_some()));
        leader.wait()
    }

    fn signal(&self, sig: i32) {
        // SAFETY: signalling the group of a child we started.
        unsafe { libc::kill(-self.pgid, sig) };
    }

    /// Tells the guard the group is ours to end, and reaps it.
    fn stand_down(&mut self) {
        if let Some((pid, pipe)) = self.guard.take() {
            // SAFETY: a one-byte write to our pipe; waiting for our own child.
            unsafe {
                libc::write(pipe.as_raw_fd(), b"x".as_ptr().cast(), 1);
                drop(pipe);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
        }
    }
}

/// Runs `cmd` to its end as a contained, watched group: while it runs, `stop` is asked every
/// 50 ms, and when it says so the group is ended ([`Tree::end_child`]: SIGTERM, a grace period,
/// SIGKILL); what the command left running in its group is ended when it exits.
pub fn run_contained(
    cmd: &mut std::process::Command,
    stop: impl Fn() -> bool,
) -> std::io::Result<std::process::ExitStatus> {
    Tree::contain(cmd);
    let mut child = cmd.spawn()?;
    let tree = Tree::watch(child.id() as i32);
    loop {
        if let Some(status) = child.try_wait()? {
            tree.end(Duration::from_millis(200), || true);
            return Ok(status);
        }
        if stop() {
            return tree.end_child(&mut child, GRACE);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Drop for Tree {
    /// Whatever is left of the group is killed (an error path that did not end it).
    fn drop(&mut self) {
        if self.guard.is_some() {
            self.signal(libc::SIGKILL);
            self.stand_down();
        }
    }
}

/// Forks the guard of group `pgid`; returns its pid and the pipe's write end.
fn start_guard(pgid: i32) -> std::io::Result<(i32, OwnedFd)> {
    // SAFETY: guard runs only async-signal-safe calls and never returns.
    fork_watching(|read| unsafe { guard(read, pgid) })
}

/// Forks a process that runs `child` with the read end of a pipe whose only write end is ours,
/// returned with its pid: when this process ends in any way, SIGKILL included, the kernel
/// closes that end and the child reads end-of-file. The two guards (of a process group, and of
/// the settings to restore) are both made here.
///
/// `child` runs in a forked child of a multithreaded process: async-signal-safe calls only;
/// the child ends when it returns.
pub(crate) fn fork_watching(child: impl FnOnce(i32)) -> std::io::Result<(i32, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both are fresh descriptors of ours.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: the child runs `child`, which the caller keeps to async-signal-safe calls.
    match unsafe { libc::fork() } {
        -1 => Err(std::io::Error::last_os_error()),
        0 => {
            child(read.as_raw_fd());
            // SAFETY: _exit is async-signal-safe; a child that returns ends here.
            unsafe { libc::_exit(127) }
        }
        pid => Ok((pid, write)),
    }
}

/// The guard: out of oslab's group and deaf to terminal signals, holding only the pipe's read
/// end; a byte means stand down, end-of-file means oslab is gone: end the group.
///
/// # Safety
/// Called in a forked child of a multithreaded process: async-signal-safe calls only.
unsafe fn guard(read: i32, pgid: i32) -> ! {
    libc::setpgid(0, 0);
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
        libc::signal(sig, libc::SIG_IGN);
    }
    // Every other descriptor closed: our copy of the write end (or one of another guard's
    // pipe) would keep the pipe open, and a held store or pipe would outlive oslab.
    libc::dup2(read, 0);
    libc::syscall(libc::SYS_close_range, 1u32, u32::MAX, 0u32);
    let mut byte = 0u8;
    loop {
        match libc::read(0, (&mut byte as *mut u8).cast(), 1) {
            1 => libc::_exit(0),
            n if n < 0 && *libc::__errno_location() == libc::EINTR => continue,
            _ => break,
        }
    }
    libc::kill(-pgid, libc::SIGTERM);
    // Up to the grace period, gone as soon as the group is.
    let tick = libc::timespec {
        tv_sec: 0,
        tv_nsec: 10_000_000,
    };
    for _ in 0..GRACE.as_millis() / 10 {
        if libc::kill(-pgid, 0) != 0 {
            libc::_exit(0);
        }
        libc::nanosleep(&tick, std::ptr::null_mut());
    }
    libc::kill(-pgid, libc::SIGKILL);
    libc::_exit(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shell that ignores SIGTERM and starts a grandchild that ignores it too; returns the
    /// shell and the grandchild's pid.
    fn stubborn() -> (std::process::Child, i32) {
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", "trap '' TERM INT; sleep 300 & echo $!; wait"])
            .stdout(std::process::Stdio::piped());
        Tree::contain(&mut cmd);
        let mut child = cmd.spawn().unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        (child, line.trim().parse().unwrap())
    }

    #[test]
    fn a_contained_command_runs_to_its_end_or_is_ended_when_asked() {
        let mut done = std::process::Command::new("sh");
        done.args(["-c", "exit 3"]);
        assert_eq!(run_contained(&mut done, || false).unwrap().code(), Some(3));
        let started = Instant::now();
        let mut stubborn = std::process::Command::new("sh");
        stubborn.args(["-c", "trap '' TERM INT; sleep 300"]);
        let asked = Instant::now() + Duration::from_millis(200);
        let status = run_contained(&mut stubborn, || Instant::now() > asked).unwrap();
        assert!(!status.success());
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{:?}",
            started.elapsed()
        );
    }

    fn alive(pid: i32) -> bool {
        // A zombie (reparented to init, not yet reaped) is as good as gone.
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit_once(") ")
                .is_some_and(|(_, r)| !r.starts_with('Z'))
        })
    }

    fn gone_within(pid: i32, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if !alive(pid) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    #[test]
    fn a_command_that_ignores_sigterm_is_ended_with_its_children() {
        let (mut child, grandchild) = stubborn();
        let tree = Tree::watch(child.id() as i32);
        assert!(alive(grandchild));
        let t = Instant::now();
        tree.end_child(&mut child, Duration::from_millis(300))
            .unwrap();
        assert!(gone_within(grandchild, Duration::from_secs(2)));
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    }

    #[test]
    fn the_guard_ends_the_group_when_its_owner_dies_without_ending_it() {
        let (mut child, grandchild) = stubborn();
        let tree = Tree::watch(child.id() as i32);
        // What SIGKILL of oslab does to the pipe: our write end closes without a byte.
        let (guard, pipe) = {
            let mut t = tree;
            t.guard.take().unwrap()
        };
        drop(pipe);
        assert!(gone_within(grandchild, GRACE + Duration::from_secs(3)));
        child.wait().unwrap();
        // SAFETY: reaping our own child.
        unsafe { libc::waitpid(guard, std::ptr::null_mut(), 0) };
    }
}
