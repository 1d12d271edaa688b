//! Timer read overhead: what it costs to ask "what time is it?" by each method a benchmark might use.
//! Each read is measured in a tight batch (throughput of back-to-back reads, as a measuring loop
//! pays it), with the empty loop subtracted.

use crate::probe::{Context, Probe, ProbeError};
use oslab_core::model::{Measurement, Unit};
use oslab_core::params;
use std::hint::black_box;

/// The timer probes.
pub const PROBES: &[Probe] = &[
    Probe {
        id: "timer.rdtsc",
        about: "rdtsc, unfenced (may overlap neighbouring instructions)",
        unit: Unit::Ns,
        needs: &[],
        cost: 1.0,
        plan: None,
        run: |cx| read_cost(cx, "timer.rdtsc", arch::rdtsc, None),
    },
    Probe {
        id: "timer.rdtscp",
        about: "rdtscp (waits for earlier instructions)",
        unit: Unit::Ns,
        needs: &[],
        cost: 1.0,
        plan: None,
        run: |cx| read_cost(cx, "timer.rdtscp", arch::rdtscp, None),
    },
    Probe {
        id: "timer.lfence-rdtsc",
        about: "lfence; rdtsc; lfence (fully ordered read, what oslab itself uses)",
        unit: Unit::Ns,
        needs: &[],
        cost: 1.0,
        plan: None,
        run: |cx| read_cost(cx, "timer.lfence-rdtsc", arch::lfence_rdtsc, None),
    },
    Probe {
        id: "timer.cpuid-rdtsc",
        about: "cpuid; rdtsc (a serializing read; cpuid traps to a hypervisor)",
        unit: Unit::Ns,
        needs: &[],
        cost: 1.0,
        plan: None,
        run: |cx| {
            let note = oslab_core::machine::hypervisor().map(|h| {
                format!("under {h}: cpuid causes a VM exit, so this mostly measures the hypervisor")
            });
            read_cost(cx, "timer.cpuid-rdtsc", arch::cpuid_rdtsc, note)
        },
    },
    Probe {
        id: "timer.clock_gettime",
        about: "clock_gettime(CLOCK_MONOTONIC) through the vDSO",
        unit: Unit::Ns,
        needs: &[],
        cost: 1.0,
        plan: None,
        run: |cx| read_cost(cx, "timer.clock_gettime", gettime_vdso, None),
    },
    Probe {
        id: "timer.clock_gettime.syscall",
        about: "clock_gettime(CLOCK_MONOTONIC) as a real system call",
        unit: Unit::Ns,
        needs: &[],
        cost: 1.0,
        plan: None,
        run: |cx| read_cost(cx, "timer.clock_gettime.syscall", gettime_syscall, None),
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
    pub use oslab_core::clock::arch::{cpuid_rdtsc, lfence_rdtsc, rdtsc, rdtscp};

    #[cfg(not(target_arch = "x86_64"))]
    pub fn rdtsc() -> u64 {
        oslab_core::clock::arch::read_start()
    }
    #[cfg(not(target_arch = "x86_64"))]
    pub use {rdtsc as cpuid_rdtsc, rdtsc as lfence_rdtsc, rdtsc as rdtscp};
}
