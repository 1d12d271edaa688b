//! System call cost: raw `syscall` instructions that no library can cache or short-circuit, the
//! vDSO path beside its raw-syscall twin, and tiny I/O on /dev/zero and /dev/null. Each is measured
//! hot (back to back in a batch) and cold (each call timed alone after evicting the caches by
//! reading a buffer larger than them; see `eviction_buffer` for machines with a huge LLC).

use crate::probe::{Context, Probe, ProbeError};
use oslab_core::catalog::{self};
use oslab_core::model::Measurement;
use oslab_core::params;
use oslab_os::clock::Ticks;
use std::hint::black_box;
use std::os::fd::AsRawFd;

/// The syscall probes.
pub const PROBES: &[Probe] = &[
    Probe {
        entry: &catalog::SYSCALL_GETPID,
        needs: &[],
        cost: 2.5,
        plan: None,
        run: |cx, me| syscall_cost(cx, me.id, &|| raw0(libc::SYS_getpid)),
    },
    Probe {
        entry: &catalog::SYSCALL_GETPPID,
        needs: &[],
        cost: 2.5,
        plan: None,
        run: |cx, me| {
            let extra = injected_work();
            let mut ms = syscall_cost(cx, me.id, &|| {
                crate::contention::add_chains(extra);
                raw0(libc::SYS_getppid)
            })?;
            if extra > 0 {
                ms.iter_mut().for_each(|m| m.note_before(format!("{extra} passes of dependent adds added to every call ({INJECT_VAR}): a change injected on purpose")));
            }
            Ok(ms)
        },
    },
    Probe {
        entry: &catalog::SYSCALL_TIME_VDSO,
        needs: &[],
        cost: 2.5,
        plan: None,
        // SAFETY: time(NULL) only returns a value.
        run: |cx, me| {
            syscall_cost(cx, me.id, &|| unsafe {
                libc::time(std::ptr::null_mut()) as i64
            })
        },
    },
    Probe {
        entry: &catalog::SYSCALL_TIME_RAW,
        needs: &[],
        cost: 2.5,
        plan: None,
        run: |cx, me| syscall_cost(cx, me.id, &raw_time),
    },
    Probe {
        entry: &catalog::SYSCALL_READ_DEVZERO,
        needs: &[],
        cost: 2.5,
        plan: None,
        run: |cx, me| {
            let f = std::fs::File::open("/dev/zero")
                .map_err(|e| ProbeError::Unsupported(format!("cannot open /dev/zero: {e}")))?;
            let fd = f.as_raw_fd();
            let mut byte = [0u8; 1];
            let buf = byte.as_mut_ptr() as usize;
            // SAFETY: buf points at one writable byte that outlives the probe.
            syscall_cost(cx, me.id, &move || unsafe {
                libc::read(fd, buf as *mut libc::c_void, 1) as i64
            })
        },
    },
    Probe {
        entry: &catalog::SYSCALL_WRITE_DEVNULL,
        needs: &[],
        cost: 2.5,
        plan: None,
        run: |cx, me| {
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/null")
                .map_err(|e| ProbeError::Unsupported(format!("cannot open /dev/null: {e}")))?;
            let fd = f.as_raw_fd();
            // SAFETY: the buffer is a static byte.
            syscall_cost(cx, me.id, &move || unsafe {
                libc::write(fd, b"x".as_ptr() as *const libc::c_void, 1) as i64
            })
        },
    },
];

/// Names a known amount of extra work for getppid's calls (passes of
/// [`crate::contention::add_chains`], about a cycle each): the change `scripts/false-alarms`
/// injects to check that `oslab compare` finds one. Unset or 0 in every real run.
pub const INJECT_VAR: &str = "OSLAB_INJECT_GETPPID_WORK";

/// The passes of extra work asked for through [`INJECT_VAR`] (at most 100,000).
fn injected_work() -> u64 {
    std::env::var(INJECT_VAR)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(0, |n| n.min(100_000))
}

#[inline(always)]
fn raw0(nr: libc::c_long) -> i64 {
    // SAFETY: argument-less syscalls that only return a value.
    unsafe { libc::syscall(nr) as i64 }
}

#[cfg(target_arch = "x86_64")]
fn raw_time() -> i64 {
    // SAFETY: time(NULL) as a raw syscall only returns a value.
    unsafe { libc::syscall(libc::SYS_time, 0usize) as i64 }
}

#[cfg(not(target_arch = "x86_64"))]
fn raw_time() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer (architectures without SYS_time use clock_gettime).
    unsafe { libc::syscall(libc::SYS_clock_gettime, libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as i64
}

/// Largest eviction buffer: reading more than this per sample would make cold runs too slow.
const MAX_FLUSH_BYTES: u64 = 64 << 20;

fn syscall_cost(
    cx: &Context,
    id: &str,
    call: &dyn Fn() -> i64,
) -> Result<Vec<Measurement>, ProbeError> {
    if call() < 0 {
        return Err(ProbeError::os(id));
    }
    let hot = cx.harness.batched(&mut |n| {
        for _ in 0..n {
            black_box(call());
        }
    })?;
    let mut out = vec![cx.measurement(
        id,
        params! {"cache" => "hot", "cpu" => cx.cpu},
        "per_call",
        &hot,
    )];

    let (flush, evicted, note) = eviction_buffer(cx);
    let [cold] = cx.harness.each::<1>(&mut |clock, out| {
        evict(&flush);
        let a = clock.start();
        black_box(call());
        out[0] = clock.stop().wrapping_sub(a);
        Ok(true)
    })?;
    let mut m = cx.measurement(
        id,
        params! {"cache" => "cold", "cpu" => cx.cpu, "evicted" => evicted},
        "per_call",
        &cold,
    );
    if let Some(n) = note {
        m.note_before(n);
    }
    out.push(m);
    Ok(out)
}

/// A buffer that evicts the caches of the measuring CPU: twice their total size when that fits
/// under the cap; otherwise four times the private levels only, so "cold" stays well defined
/// (private caches and TLB cold, last level warm) instead of evicting a random part of a huge LLC.
fn eviction_buffer(cx: &Context) -> (Vec<u8>, &'static str, Option<String>) {
    let caches = cx.topology.caches_of(cx.cpu);
    let smt = cx
        .topology
        .cpu(cx.cpu)
        .map(|c| c.smt_siblings.clone())
        .unwrap_or_default();
    let total: u64 = caches.iter().map(|c| c.size).sum();
    let private: u64 = caches
        .iter()
        .filter(|c| c.cpus.is_subset(&smt))
        .map(|c| c.size)
        .sum();
    if 2 * total <= MAX_FLUSH_BYTES {
        return (vec![1u8; (2 * total).max(1 << 20) as usize], "all", None);
    }
    let size = (4 * private).clamp(1 << 20, MAX_FLUSH_BYTES);
    let note = format!(
        "caches total {} MiB, too much to evict per call: cold means private caches and TLB evicted ({} MiB read), last level warm",
        total >> 20,
        size >> 20
    );
    (vec![1u8; size as usize], "private", Some(note))
}

/// Reads one byte per cache line of `buf`, evicting what was cached before.
fn evict(buf: &[u8]) {
    let mut sum = 0u8;
    for chunk in buf.chunks(64) {
        sum = sum.wrapping_add(chunk[0]);
    }
    black_box(sum);
}
