//! A process that outlives oslab to put back what it changed. The record ([`crate::pending`])
//! survives SIGKILL, but before this only the next oslab command read it: a sysctl stayed
//! changed, a target's threads stayed pinned, until someone ran oslab again. So the first time
//! an oslab records a change, it forks a guard that holds the read end of a pipe whose only
//! write end is ours; when oslab ends in any way the kernel closes that end, and the guard starts
//! the command the CLI registered (`oslab restore --after PID`), which waits for this oslab to be
//! gone and restores what it left. After a clean end there is nothing left to restore: it says
//! nothing.

use std::ffi::CString;
use std::sync::{Once, OnceLock};

/// The program and arguments (before `--after PID`) that restore; set by the CLI only, so a
/// library's tests never start one.
static COMMAND: OnceLock<(CString, Vec<CString>)> = OnceLock::new();

/// Registers how to restore: `program` (e.g. `/proc/self/exe`) started with `args` followed by
/// `--after PID`.
pub fn register(program: &str, args: &[&str]) {
    let c = |s: &str| CString::new(s).expect("no NUL in the restore command");
    let _ = COMMAND.set((c(program), args.iter().map(|a| c(a)).collect()));
}

/// Starts the guard, once per process, when a command is registered. A guard that cannot be
/// started leaves the next oslab to restore (as before); it is not an error.
pub(crate) fn ensure_started() {
    static START: Once = Once::new();
    START.call_once(|| {
        if let Some((program, args)) = COMMAND.get() {
            let _ = start(program, args);
        }
    });
}

fn start(program: &CString, args: &[CString]) -> std::io::Result<()> {
    let after = [
        CString::new("--after").unwrap(),
        CString::new(std::process::id().to_string()).unwrap(),
    ];
    let argv: Vec<*const libc::c_char> = args
        .iter()
        .chain(&after)
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    // SAFETY: guard runs only async-signal-safe calls, then execs or exits.
    let (_, write) = crate::tree::fork_watching(|read| unsafe { guard(read, program, &argv) })?;
    // Our write end stays open as long as this process: its closing is the signal.
    std::mem::forget(write);
    Ok(())
}

/// The guard: out of oslab's process group and deaf to the signals that end oslab, with the
/// pipe as its standard input and /dev/null as its output (its error output stays oslab's, to
/// say what it restored); at end-of-file it becomes the restore command.
///
/// # Safety
/// Called in a forked child of a multithreaded process: async-signal-safe calls only.
unsafe fn guard(read: i32, program: &CString, argv: &[*const libc::c_char]) -> ! {
    libc::setpgid(0, 0);
    for sig in crate::signals::ENDING {
        libc::signal(sig, libc::SIG_IGN);
    }
    libc::dup2(read, 0);
    let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
    libc::dup2(null, 1);
    // Every other descriptor closed: a held store, lock or pipe must not outlive oslab.
    libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
    let mut byte = 0u8;
    loop {
        match libc::read(0, (&mut byte as *mut u8).cast(), 1) {
            n if n < 0 && *libc::__errno_location() == libc::EINTR => continue,
            0 | -1 => break,
            _ => {}
        }
    }
    libc::dup2(1, 0);
    // The restore command handles these signals itself; ignored ones would stay ignored.
    for sig in crate::signals::ENDING {
        libc::signal(sig, libc::SIG_DFL);
    }
    libc::execv(program.as_ptr(), argv.as_ptr());
    libc::_exit(127)
}

/// Waits, up to `limit`, until process `pid` is gone (a zombie counts as gone: it changes
/// nothing any more); whether it is.
pub fn wait_gone(pid: u32, limit: std::time::Duration) -> bool {
    let end = std::time::Instant::now() + limit;
    loop {
        if !pid_alive(pid) {
            return true;
        }
        if std::time::Instant::now() >= end {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Whether process `pid` exists and is not a zombie ([`oslab_files::processes::alive`]).
pub fn pid_alive(pid: u32) -> bool {
    oslab_files::processes::alive(i64::from(pid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zombie_is_gone_a_live_process_is_not() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Not reaped yet: a zombie once it has exited.
        assert!(wait_gone(pid, std::time::Duration::from_secs(5)));
        child.wait().unwrap();
        assert!(!pid_alive(pid));
        assert!(pid_alive(std::process::id()));
        assert!(!wait_gone(
            std::process::id(),
            std::time::Duration::from_millis(20)
        ));
    }
}
