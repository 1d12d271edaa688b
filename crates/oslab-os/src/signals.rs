//! Ctrl-C, SIGTERM and every other signal that ends a process ([`ENDING`]) become a flag that measuring loops poll, so an interrupted run unwinds
//! normally: guards restore affinity and sysctls, children are reaped and what completed is stored.
//! A second signal never skips that (`timeout` sends SIGTERM to the process and then to its group,
//! so two arrive at once): it only sets [`hurry`], which tells code that waits for a measurement
//! to stop waiting. SIGKILL is the way to end oslab without restoring.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static HURRY: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    if INTERRUPTED.swap(true, Ordering::SeqCst) {
        // The user insists: stop waiting for measurements, but still restore what we changed.
        HURRY.store(true, Ordering::SeqCst);
    }
    SIGNAL.store(sig, Ordering::SeqCst);
}

/// The signals whose default action ends a process and that a person or a system sends to stop
/// one: a hang-up (an ssh session lost), Ctrl-C, Ctrl-\\, SIGTERM, the user signals and an alarm.
/// Each ends oslab the way SIGTERM does (SIGPIPE is ignored by Rust programs: a write to a
/// closed pipe is an error there, handled where it happens).
pub const ENDING: [libc::c_int; 7] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
];

/// How many times this process was continued after a stop (SIGSTOP, Ctrl-Z): a measurement
/// that spans one holds the pause, which is no contention.
static CONTINUED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

extern "C" fn on_continue(_: libc::c_int) {
    CONTINUED.fetch_add(1, Ordering::SeqCst);
}

/// How many times this process has been continued after a stop so far (see [`install`]).
pub fn continued() -> u64 {
    CONTINUED.load(Ordering::SeqCst)
}

/// Installs the handlers of [`ENDING`], and one that counts continuations after a stop.
/// Idempotent.
pub fn install() {
    // SAFETY: on_continue only touches an atomic.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_continue as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        sa.sa_flags = libc::SA_RESTART;
        libc::sigaction(libc::SIGCONT, &sa, std::ptr::null_mut());
    }
    for sig in ENDING {
        // SAFETY: on_signal only touches atomics and async-signal-safe calls.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = libc::SA_RESTART;
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Whether the user asked us to stop.
#[inline]
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// Whether a second signal came: skip waiting for measurements (never skip restoring).
#[inline]
pub fn hurry() -> bool {
    HURRY.load(Ordering::Relaxed)
}

/// The signal that interrupted us, if any.
pub fn signal() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The exit status of a process the signal stopped, as shells report one: 128 + the signal
/// (130 for Ctrl-C, 143 for SIGTERM; 130 when stopped from code).
pub fn exit_status() -> u8 {
    128 + signal().unwrap_or(libc::SIGINT) as u8
}

/// Sleeps for `d`, or less when the user asks us to stop meanwhile (a shuffle interval of 120 s
/// or a manager tick of a day once held Ctrl-C for all of it); whether it was cut short.
pub fn sleep_unless_stopped(d: std::time::Duration) -> bool {
    let end = std::time::Instant::now() + d;
    while let Some(left) = end.checked_duration_since(std::time::Instant::now()) {
        if interrupted() {
            return true;
        }
        std::thread::sleep(left.min(std::time::Duration::from_millis(20)));
    }
    interrupted()
}

/// Sets the flag as a signal would (for tests and for stopping from code).
pub fn request_stop() {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Makes the process `cmd` starts die when the calling thread (a manager, a daemon) dies, even by
/// SIGKILL, so nothing we started is left running, orphaned, after us. Start long-lived children
/// from a thread that lives as long as the process (the kernel signals when that *thread* exits).
pub fn die_with_parent(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: getpid is async-signal-safe; the value is read before the fork.
    let parent = unsafe { libc::getpid() };
    // SAFETY: between fork and exec only async-signal-safe calls (prctl, getppid, _exit).
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // The parent may have died before prctl: then nobody will signal us.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}
