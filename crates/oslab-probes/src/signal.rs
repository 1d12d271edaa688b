//! Signals, as lmbench's lat_sig measures them: a handler installed (sigaction), a signal sent to
//! oneself and caught, and a protection fault caught (a write to a read-only page; the handler
//! makes it writable and the write completes).
//!
//! The signal is SIGURG, which oslab uses for nothing else (its SIGUSR1 and SIGUSR2 end a run),
//! sent to the measuring thread itself (tgkill): in a process of several threads, kill(getpid())
//! may be delivered to another. Every handler installed is the one that was there again after.

use crate::probe::{Context, Probe, ProbeError};
use oslab_core::catalog::{self, metric, Entry};
use oslab_core::model::Measurement;
use oslab_core::params;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The signal probes.
pub const PROBES: &[Probe] = &[
    Probe {
        entry: &catalog::SIGNAL_INSTALL,
        needs: &[],
        cost: 1.0,
        plan: None,
        run: install,
    },
    Probe {
        entry: &catalog::SIGNAL_CATCH,
        needs: &[],
        cost: 1.0,
        plan: None,
        run: catch,
    },
    Probe {
        entry: &catalog::SIGNAL_PROTECTION_FAULT,
        needs: &[],
        cost: 1.0,
        plan: None,
        run: protection_fault,
    },
];

/// The signal sent and caught.
const SIGNAL: libc::c_int = libc::SIGURG;

/// Signals caught by [`count`].
static CAUGHT: AtomicUsize = AtomicUsize::new(0);

extern "C" fn count(_: libc::c_int) {
    CAUGHT.fetch_add(1, Ordering::Relaxed);
}

/// The page the protection-fault handler makes writable again (0: none).
static PAGE: AtomicUsize = AtomicUsize::new(0);

extern "C" fn unprotect(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    let page = PAGE.load(Ordering::Relaxed);
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    if page != 0 && addr >= page && addr < page + 4096 {
        // SAFETY: our own page; mprotect is async-signal-safe.
        unsafe {
            libc::mprotect(
                page as *mut libc::c_void,
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
            )
        };
    } else {
        // A fault of anything else: the default action, at once (the write is retried).
        // SAFETY: async-signal-safe.
        unsafe { libc::signal(libc::SIGSEGV, libc::SIG_DFL) };
    }
}

/// A handler installed for `sig` while this lives; the one before it is put back on drop.
struct Installed {
    sig: libc::c_int,
    before: libc::sigaction,
}

impl Installed {
    fn new(sig: libc::c_int, action: &libc::sigaction) -> Result<Installed, ProbeError> {
        // SAFETY: plain data, zero is valid.
        let mut before: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: valid action structures.
        if unsafe { libc::sigaction(sig, action, &mut before) } != 0 {
            return Err(ProbeError::os("sigaction"));
        }
        Ok(Installed { sig, before })
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        // SAFETY: the action that was there before.
        unsafe { libc::sigaction(self.sig, &self.before, std::ptr::null_mut()) };
    }
}

/// An action running `handler` (a plain one, or one taking siginfo when `info`).
fn action(handler: usize, info: bool) -> libc::sigaction {
    // SAFETY: plain data, zero is valid.
    let mut a: libc::sigaction = unsafe { std::mem::zeroed() };
    a.sa_sigaction = handler;
    a.sa_flags = if info { libc::SA_SIGINFO } else { 0 };
    // SAFETY: a valid set to empty.
    unsafe { libc::sigemptyset(&mut a.sa_mask) };
    a
}

fn install(cx: &Context, me: &'static Entry) -> Result<Vec<Measurement>, ProbeError> {
    let act = action(count as extern "C" fn(libc::c_int) as usize, false);
    let _back = Installed::new(SIGNAL, &act)?;
    let mut failed = false;
    let timing = cx.harness.batched(&mut |n| {
        for _ in 0..n {
            // SAFETY: a valid action; the old one is not asked for.
            failed |= unsafe { libc::sigaction(SIGNAL, &act, std::ptr::null_mut()) } != 0;
        }
    })?;
    if failed {
        return Err(ProbeError::os("sigaction"));
    }
    let mut m = cx.measurement(
        me.id,
        params! {"signal" => "SIGURG"},
        metric::PER_CALL,
        &timing,
    );
    m.note_before("sigaction of a handler, the old action not asked for (lat_sig install)");
    Ok(vec![m])
}

fn catch(cx: &Context, me: &'static Entry) -> Result<Vec<Measurement>, ProbeError> {
    let _back = Installed::new(
        SIGNAL,
        &action(count as extern "C" fn(libc::c_int) as usize, false),
    )?;
    // SAFETY: plain syscalls.
    let (pid, tid) = unsafe { (libc::getpid(), libc::gettid()) };
    CAUGHT.store(0, Ordering::Relaxed);
    let mut sent = 0usize;
    let timing = cx.harness.batched(&mut |n| {
        for _ in 0..n {
            // SAFETY: a signal to this thread, whose handler only counts.
            unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, SIGNAL) };
        }
        sent += n as usize;
    })?;
    let caught = CAUGHT.load(Ordering::Relaxed);
    if caught != sent {
        return Err(ProbeError::Failed(format!(
            "{sent} signals sent, {caught} caught: a signal was lost or caught elsewhere"
        )));
    }
    let mut m = cx.measurement(
        me.id,
        params! {"signal" => "SIGURG"},
        metric::PER_CALL,
        &timing,
    );
    m.note_before("tgkill to this thread, caught by a handler that counts it (lat_sig catch)");
    Ok(vec![m])
}

fn protection_fault(cx: &Context, me: &'static Entry) -> Result<Vec<Measurement>, ProbeError> {
    // SAFETY: an anonymous private page of our own.
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if page == libc::MAP_FAILED {
        return Err(ProbeError::os("mmap"));
    }
    struct Unmap(*mut libc::c_void);
    impl Drop for Unmap {
        fn drop(&mut self) {
            PAGE.store(0, Ordering::Relaxed);
            // SAFETY: our mapping.
            unsafe { libc::munmap(self.0, 4096) };
        }
    }
    let _unmap = Unmap(page);
    PAGE.store(page as usize, Ordering::Relaxed);
    let handler = unprotect as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void);
    let _back = Installed::new(libc::SIGSEGV, &action(handler as usize, true))?;
    let word = page as *mut u64;
    let timing = cx.harness.batched(&mut |n| {
        for i in 0..n {
            // SAFETY: our page; the write faults, the handler unprotects, the write completes.
            unsafe {
                libc::mprotect(page, 4096, libc::PROT_READ);
                std::ptr::write_volatile(word, i);
            }
        }
    })?;
    let mut m = cx.measurement(
        me.id,
        params! {"signal" => "SIGSEGV"},
        metric::PER_FAULT,
        &timing,
    );
    m.note_before("mprotect read-only, a write faults, the SIGSEGV handler mprotects it writable and the write completes: both mprotect calls included (lat_sig prot)");
    Ok(vec![m])
}
