//! Timer read overhead: what it costs to ask "what time is it?" by each method a benchmark might use.
//! Each read is measured in a tight batch (throughput of back-to-back reads, as a measuring loop
//! pays it), with the empty loop subtracted.

use crate::probe::{Context, Probe, ProbeError};
use oslab_core::catalog::{self};
use oslab_core::model::Measurement;
use oslab_core::params;
use std::hint::black_box;

/// The timer probes.
pub const PROBES: &[Probe] = &[
    Probe {
        entry: &catalog::TIMER_RDTSC,
        needs: &[],
        cost: 1.0,
        plan: None,
        run: |cx, me| read_cost(cx, me.id, arch::rdtsc, None),
    },
    Probe {
        entry: &catalog::TIMER_RDTSCP,
        needs: &[],
        cost: 1.0,
        plan: None,
        run: |cx, me| read_cost(cx, me.id, arch::rdtscp, None),
    },
    Probe {
        entry: &catalog::TIMER_LFENCE_RDTSC,
        needs: &[],
        cost: 1.0,
        plan: None,
        run: |cx, me| read_cost(cx, me.id, arch::lfence_rdtsc, None),
    },
    Probe {
        entry: &catalog::TIMER_CPUID_RDTSC,
        needs: &[],
        cost: 1.0,
        plan: None,
        run: |cx, me| {
            let note = oslab_os::machine::hypervisor().map(|h| {
                format!("under {h}: cpuid causes a VM exit, so this mostly measures the hypervisor")
            });
            read_cost(cx, me.id, arch::cpuid_rdtsc, note)
        },
    },
    Probe {
        entry: &catalog::TIMER_CLOCK_GETTIME,
        needs: &[],
        cost: 1.0,
        plan: None,
        run: |cx, me| read_cost(cx, me.id, gettime_vdso, None),
    },
    Probe {
        entry: &catalog::TIMER_CLOCK_GETTIME_SYSCALL,
        needs: &[],
        cost: 1.0,
        plan: None,
        run: |cx, me| read_cost(cx, me.id, gettime_syscall, None),
    },
];

fn read_cost(
    cx: &Context,
    id: &str,
    read: fn() -> u64,
    note: Option<String>,
) -> Result<Vec<Measurement>, ProbeError> {
    let mut t = cx.harness.batched(&mut |n| {
        for _ in 0..n {
            black_box(read());
        }
    })?;
    if let Some(n) = note {
        t.note_before(n);
    }
    Ok(vec![cx.measurement(
        id,
        params! {"cpu" => cx.cpu},
        "per_read",
        &t,
    )])
}

#[inline(always)]
fn timespec_ns(ts: &libc::timespec) -> u64 {
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[inline(always)]
fn gettime_vdso() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    timespec_ns(&ts)
}

#[inline(always)]
fn gettime_syscall() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer; the raw syscall bypasses the vDSO.
    unsafe { libc::syscall(libc::SYS_clock_gettime, libc::CLOCK_MONOTONIC, &mut ts) };
    timespec_ns(&ts)
}

/// Counter reads per architecture (aarch64 has one counter; its variants all read it).
mod arch {
    #[cfg(target_arch = "x86_64")]
    pub use oslab_os::clock::arch::{cpuid_rdtsc, lfence_rdtsc, rdtsc, rdtscp};

    #[cfg(not(target_arch = "x86_64"))]
    pub fn rdtsc() -> u64 {
        oslab_os::clock::arch::read_start()
    }
    #[cfg(not(target_arch = "x86_64"))]
    pub use {rdtsc as cpuid_rdtsc, rdtsc as lfence_rdtsc, rdtsc as rdtscp};
}
