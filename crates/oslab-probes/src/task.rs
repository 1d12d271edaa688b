//! Task creation: processes (fork, vfork, posix_spawn, fork+exec) and threads (pthread,
//! std::thread). Each event is timed alone; creation latency (until the creating call returns in
//! the parent) and the full round trip (until the child has exited and been reaped, or joined) are
//! reported separately.

use crate::child::{wait_pid, NopProgram};
use crate::harness::Event;
use crate::probe::{Context, Probe, ProbeError};
use oslab_core::model::{Measurement, Unit};
use oslab_core::params;
use oslab_core::Clock;

/// The task-creation probes.
pub const PROBES: &[Probe] = &[
    Probe {
        id: "task.fork",
        about: "fork + _exit + waitpid: creation (parent side) and round trip",
        unit: Unit::Ns,
        needs: &[],
        run: |cx| two_phase(cx, "task.fork", &mut fork_once),
    },
    Probe {
        id: "task.vfork",
        about: "vfork (clone CLONE_VM|CLONE_VFORK) + _exit + waitpid",
        unit: Unit::Ns,
        needs: &[],
        run: |cx| {
            let mut stack = vec![0u8; 64 * 1024];
            let mut ms = two_phase(cx, "task.vfork", &mut |clock, out| {
                vfork_once(clock, out, &mut stack)
            })?;
            ms[0].note = Some("CLONE_VFORK suspends the parent until the child exits, so creation includes the child's life".into());
            Ok(ms)
        },
    },
    Probe {
        id: "task.posix_spawn",
        about: "posix_spawn of a static do-nothing program + waitpid",
        unit: Unit::Ns,
        needs: &[],
        run: |cx| {
            let prog = NopProgram::create()?;
            let mut ms = two_phase(cx, "task.posix_spawn", &mut |clock, out| {
                spawn_once(clock, out, &prog)
            })?;
            ms[0].note = Some("glibc's posix_spawn uses CLONE_VM|CLONE_VFORK: it returns once the child has exec'd".into());
            Ok(ms)
        },
    },
    Probe {
        id: "task.fork-exec",
        about: "fork + execve of a static do-nothing program + waitpid",
        unit: Unit::Ns,
        needs: &[],
        run: |cx| {
            let prog = NopProgram::create()?;
            two_phase(cx, "task.fork-exec", &mut |clock, out| {
                fork_exec_once(clock, out, &prog)
            })
        },
    },
    Probe {
        id: "task.pthread",
        about: "pthread_create + pthread_join of an empty thread",
        unit: Unit::Ns,
        needs: &[],
        run: |cx| two_phase(cx, "task.pthread", &mut pthread_once),
    },
    Probe {
        id: "task.std-thread",
        about: "std::thread::spawn + join of an empty closure",
        unit: Unit::Ns,
        needs: &[],
        run: |cx| two_phase(cx, "task.std-thread", &mut std_thread_once),
    },
];

/// Runs an event that writes (creation, round trip) ticks and reports both.
fn two_phase(
    cx: &Context,
    id: &str,
    event: &mut Event<'_, 2>,
) -> Result<Vec<Measurement>, ProbeError> {
    // Fork copies page tables: give back heap that earlier probes freed (glibc keeps it), so the
    // parent is as small as it can be whatever ran before.
    // SAFETY: malloc_trim only releases free memory.
    unsafe { libc::malloc_trim(0) };
    let [create, round] = cx.harness.each::<2>(event)?;
    // Creating a process copies the parent's page tables: say how big the parent was.
    let rss = parent_rss_mib();
    let p = || params! {"cpu" => cx.cpu, "parent_rss_mib" => rss};
    Ok(vec![
        cx.measurement(id, p(), "create", &create),
        cx.measurement(id, p(), "round_trip", &round),
    ])
}

/// Resident set size of this process in MiB (0 when /proc is unreadable), rounded to 0.1.
fn parent_rss_mib() -> f64 {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<f64>().ok())
        .unwrap_or(0.0);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as f64;
    (pages * page / (1 << 20) as f64 * 10.0).round() / 10.0
}

/// Waits for child `pid`, checks it exited cleanly, and records (creation, round trip) from the
/// start `t0` and creation-return `t1` ticks.
fn reap(
    clock: &Clock,
    pid: libc::pid_t,
    what: &str,
    [t0, t1]: [u64; 2],
    out: &mut [u64; 2],
) -> Result<bool, ProbeError> {
    let status = wait_pid(pid)?;
    let t2 = clock.stop();
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        return Err(ProbeError::Failed(format!(
            "{what}: child ended with status {status:#x}"
        )));
    }
    *out = [t1 - t0, t2 - t0];
    Ok(true)
}

fn fork_once(clock: &Clock, out: &mut [u64; 2]) -> Result<bool, ProbeError> {
    let t0 = clock.start();
    // SAFETY: the child only calls _exit.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: async-signal-safe.
        unsafe { libc::_exit(0) };
    }
    let t1 = clock.stop();
    if pid < 0 {
        return Err(ProbeError::os("fork"));
    }
    reap(clock, pid, "fork", [t0, t1], out)
}

extern "C" fn exit_now(_: *mut libc::c_void) -> libc::c_int {
    // SAFETY: async-signal-safe; the vfork child shares our memory and must touch nothing.
    unsafe { libc::_exit(0) }
}

fn vfork_once(clock: &Clock, out: &mut [u64; 2], stack: &mut [u8]) -> Result<bool, ProbeError> {
    // The stack grows down: pass its 16-byte aligned top.
    let top = (stack.as_mut_ptr() as usize + stack.len()) & !15;
    let t0 = clock.start();
    // SAFETY: the child runs exit_now on its own stack and exits; CLONE_VFORK suspends us until then.
    let pid = unsafe {
        libc::clone(
            exit_now,
            top as *mut libc::c_void,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            std::ptr::null_mut(),
        )
    };
    let t1 = clock.stop();
    if pid < 0 {
        return Err(ProbeError::os("clone(CLONE_VM|CLONE_VFORK)"));
    }
    reap(clock, pid, "vfork", [t0, t1], out)
}

fn spawn_once(clock: &Clock, out: &mut [u64; 2], prog: &NopProgram) -> Result<bool, ProbeError> {
    let argv = [
        prog.cpath.as_ptr() as *mut libc::c_char,
        std::ptr::null_mut(),
    ];
    let envp = [std::ptr::null_mut::<libc::c_char>()];
    let mut pid: libc::pid_t = 0;
    let t0 = clock.start();
    // SAFETY: argv/envp are NULL-terminated arrays of valid C strings.
    let rc = unsafe {
        libc::posix_spawn(
            &mut pid,
            prog.cpath.as_ptr(),
            std::ptr::null(),
            std::ptr::null(),
            argv.as_ptr(),
            envp.as_ptr(),
        )
    };
    let t1 = clock.stop();
    if rc != 0 {
        return Err(ProbeError::Failed(format!(
            "posix_spawn: {}",
            std::io::Error::from_raw_os_error(rc)
        )));
    }
    reap(clock, pid, "posix_spawn", [t0, t1], out)
}

fn fork_exec_once(
    clock: &Clock,
    out: &mut [u64; 2],
    prog: &NopProgram,
) -> Result<bool, ProbeError> {
    let argv = [prog.cpath.as_ptr(), std::ptr::null()];
    let envp = [std::ptr::null::<libc::c_char>()];
    let t0 = clock.start();
    // SAFETY: the child only calls execve and _exit.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: async-signal-safe; arrays are NULL-terminated.
        unsafe {
            libc::execve(prog.cpath.as_ptr(), argv.as_ptr(), envp.as_ptr());
            libc::_exit(127);
        }
    }
    let t1 = clock.stop();
    if pid < 0 {
        return Err(ProbeError::os("fork"));
    }
    reap(clock, pid, "fork+exec", [t0, t1], out)
}

extern "C" fn empty_thread(_: *mut libc::c_void) -> *mut libc::c_void {
    std::ptr::null_mut()
}

fn pthread_once(clock: &Clock, out: &mut [u64; 2]) -> Result<bool, ProbeError> {
    // SAFETY: pthread_t is plain data.
    let mut tid: libc::pthread_t = unsafe { std::mem::zeroed() };
    let t0 = clock.start();
    // SAFETY: empty_thread is a valid start routine; default attributes.
    let rc = unsafe {
        libc::pthread_create(
            &mut tid,
            std::ptr::null(),
            empty_thread,
            std::ptr::null_mut(),
        )
    };
    let t1 = clock.stop();
    if rc != 0 {
        return Err(ProbeError::Failed(format!(
            "pthread_create: {}",
            std::io::Error::from_raw_os_error(rc)
        )));
    }
    // SAFETY: tid is a joinable thread we created.
    let rc = unsafe { libc::pthread_join(tid, std::ptr::null_mut()) };
    let t2 = clock.stop();
    if rc != 0 {
        return Err(ProbeError::Failed(format!(
            "pthread_join: {}",
            std::io::Error::from_raw_os_error(rc)
        )));
    }
    *out = [t1 - t0, t2 - t0];
    Ok(true)
}

fn std_thread_once(clock: &Clock, out: &mut [u64; 2]) -> Result<bool, ProbeError> {
    let t0 = clock.start();
    let handle = std::thread::Builder::new()
        .spawn(|| {})
        .map_err(|e| ProbeError::Failed(format!("std::thread::spawn: {e}")))?;
    let t1 = clock.stop();
    handle
        .join()
        .map_err(|_| ProbeError::Failed("empty thread panicked".into()))?;
    let t2 = clock.stop();
    *out = [t1 - t0, t2 - t0];
    Ok(true)
}
