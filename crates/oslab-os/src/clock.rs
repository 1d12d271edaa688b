//! The clock read: the fenced TSC (or CLOCK_MONOTONIC_RAW), its detection and calibration.

use oslab_core::clock::{Clock, FreqMethod, Source};
use std::time::Duration;

/// Detects the best clock and calibrates it, spending at most `calibration` doing so.
pub fn detect(calibration: Duration) -> Clock {
    let invariant = tsc_is_invariant();
    if !arch::HAS_COUNTER {
        return Clock::monotonic("no cycle counter on this architecture".into(), false);
    }
    if !invariant {
        return Clock::monotonic(
            "TSC is not invariant (no constant_tsc/nonstop_tsc): its rate may change".into(),
            false,
        );
    }
    let calibrated = calibrate(calibration);
    match arch::nominal_frequency_ghz() {
        Some((ghz, method)) => {
            // Keep the nominal value but report how far calibration is from it.
            let err = ((calibrated.0 - ghz) / ghz).abs() * 1e6;
            Clock {
                source: Source::Tsc,
                ticks_per_ns: ghz,
                method,
                error_ppm: err.max(calibrated.1),
                invariant_tsc: true,
                fallback_reason: None,
            }
        }
        None => Clock {
            source: Source::Tsc,
            ticks_per_ns: calibrated.0,
            method: FreqMethod::Calibrated {
                interval_ms: calibration.as_secs_f64() * 1e3,
            },
            error_ppm: calibrated.1,
            invariant_tsc: true,
            fallback_reason: None,
        },
    }
}

/// Reading the clock an interval is timed by (the TSC, fenced, or CLOCK_MONOTONIC_RAW).
pub trait Ticks {
    /// Reads the clock at the start of an interval (no earlier instruction leaks in).
    fn start(&self) -> u64;
    /// Reads the clock at the end of an interval (all earlier instructions have completed).
    fn stop(&self) -> u64;
}

impl Ticks for Clock {
    #[inline(always)]
    fn start(&self) -> u64 {
        match self.source {
            Source::Tsc => arch::read_start(),
            Source::Monotonic => monotonic_raw_ns(),
        }
    }

    #[inline(always)]
    fn stop(&self) -> u64 {
        match self.source {
            Source::Tsc => arch::read_stop(),
            Source::Monotonic => monotonic_raw_ns(),
        }
    }
}

/// `CLOCK_MONOTONIC_RAW` in nanoseconds.
#[inline(always)]
pub fn monotonic_raw_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC_RAW)
}

/// `CLOCK_MONOTONIC` in nanoseconds (the clock of the kernel's timestamps and bpf_ktime_get_ns).
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

#[inline(always)]
fn clock_ns(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the call cannot fail for these clock ids.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One (counter, monotonic ns) pair taken as close together as we can, with the uncertainty of the
/// pairing (the counter ticks spent around the clock_gettime call), from the best of a few tries.
fn paired_reading() -> (u64, u64, u64) {
    let mut best = (0, 0, u64::MAX);
    for _ in 0..16 {
        let a = arch::read_start();
        let ns = monotonic_raw_ns();
        let b = arch::read_stop();
        if b.wrapping_sub(a) < best.2 {
            best = (a + (b - a) / 2, ns, b - a);
        }
    }
    best
}

/// Calibrates the counter against CLOCK_MONOTONIC_RAW; returns (ticks per ns, error bound in ppm).
/// Bounded in time: it never waits for "enough" stability.
fn calibrate(interval: Duration) -> (f64, f64) {
    let interval = interval.max(Duration::from_millis(5));
    let (t0, n0, u0) = paired_reading();
    std::thread::sleep(interval);
    let (t1, n1, u1) = paired_reading();
    let ticks = t1.wrapping_sub(t0) as f64;
    let ns = n1.saturating_sub(n0).max(1) as f64;
    let ghz = ticks / ns;
    // Each pairing is uncertain by half its bracket; CLOCK_MONOTONIC_RAW itself by ~1 ns per read.
    let err_ticks = (u0 + u1) as f64 / 2.0 + 2.0 * ghz;
    (ghz, err_ticks / ticks * 1e6)
}

/// Whether the CPU says its TSC is invariant (cpuid 0x80000007 EDX bit 8, or Linux's
/// constant_tsc + nonstop_tsc flags, which a hypervisor may set without passing the cpuid bit).
pub fn tsc_is_invariant() -> bool {
    if arch::cpuid_invariant_tsc() {
        return true;
    }
    let flags = crate::cpuinfo::flags();
    flags.iter().any(|f| f == "constant_tsc") && flags.iter().any(|f| f == "nonstop_tsc")
}

/// Architecture-specific counter access.
#[cfg(target_arch = "x86_64")]
pub mod arch {
    use super::FreqMethod;
    use std::arch::x86_64::{__cpuid, __rdtscp, _mm_lfence, _rdtsc};

    /// Whether this architecture has a cycle counter we know how to read.
    pub const HAS_COUNTER: bool = true;

    /// `lfence; rdtsc`.
    #[inline(always)]
    pub fn read_start() -> u64 {
        // SAFETY: lfence and rdtsc are available on every x86_64 CPU.
        unsafe {
            _mm_lfence();
            _rdtsc()
        }
    }

    /// `rdtscp; lfence`.
    #[inline(always)]
    pub fn read_stop() -> u64 {
        let mut aux = 0u32;
        // SAFETY: rdtscp is checked for by the probes that need it alone; every CPU with an
        // invariant TSC has it.
        unsafe {
            let t = __rdtscp(&mut aux);
            _mm_lfence();
            t
        }
    }

    /// Plain `rdtsc` (no fence).
    #[inline(always)]
    pub fn rdtsc() -> u64 {
        // SAFETY: rdtsc exists on every x86_64 CPU.
        unsafe { _rdtsc() }
    }

    /// `rdtscp` alone (waits for earlier instructions, later ones may start).
    #[inline(always)]
    pub fn rdtscp() -> u64 {
        let mut aux = 0u32;
        // SAFETY: see `read_stop`.
        unsafe { __rdtscp(&mut aux) }
    }

    /// `lfence; rdtsc; lfence`.
    #[inline(always)]
    pub fn lfence_rdtsc() -> u64 {
        // SAFETY: lfence and rdtsc are available on every x86_64 CPU.
        unsafe {
            _mm_lfence();
            let t = _rdtsc();
            _mm_lfence();
            t
        }
    }

    /// `cpuid; rdtsc` as classic measurement code serializes reads.
    #[inline(always)]
    pub fn cpuid_rdtsc() -> u64 {
        // SAFETY: cpuid leaf 0 and rdtsc exist on every x86_64 CPU.
        unsafe {
            let _ = __cpuid(0);
            _rdtsc()
        }
    }

    /// Raw cpuid, for the environment report.
    pub fn cpuid(leaf: u32, subleaf: u32) -> (u32, u32, u32, u32) {
        // cpuid is always available on x86_64; unsupported leaves return zeros or the highest
        // leaf's data, which callers check against the max leaf.
        let r = std::arch::x86_64::__cpuid_count(leaf, subleaf);
        (r.eax, r.ebx, r.ecx, r.edx)
    }

    pub(super) fn cpuid_invariant_tsc() -> bool {
        let (max_ext, ..) = cpuid(0x8000_0000, 0);
        max_ext >= 0x8000_0007 && cpuid(0x8000_0007, 0).3 & (1 << 8) != 0
    }

    /// TSC frequency from cpuid leaf 0x15, when the CPU fills it in (KVM guests get zeros).
    pub(super) fn nominal_frequency_ghz() -> Option<(f64, FreqMethod)> {
        let (max, ..) = cpuid(0, 0);
        if max < 0x15 {
            return None;
        }
        let (den, num, crystal_hz, _) = cpuid(0x15, 0);
        if den == 0 || num == 0 || crystal_hz == 0 {
            return None;
        }
        Some((
            crystal_hz as f64 * num as f64 / den as f64 / 1e9,
            FreqMethod::Cpuid15,
        ))
    }
}

/// Architecture-specific counter access.
#[cfg(target_arch = "aarch64")]
pub mod arch {
    use super::FreqMethod;

    /// Whether this architecture has a cycle counter we know how to read.
    pub const HAS_COUNTER: bool = true;

    /// `isb; mrs cntvct_el0`.
    #[inline(always)]
    pub fn read_start() -> u64 {
        let v: u64;
        // SAFETY: cntvct_el0 is readable from EL0 on Linux.
        unsafe { std::arch::asm!("isb", "mrs {v}, cntvct_el0", v = out(reg) v) };
        v
    }

    /// `isb; mrs cntvct_el0; isb`.
    #[inline(always)]
    pub fn read_stop() -> u64 {
        let v: u64;
        // SAFETY: as above.
        unsafe { std::arch::asm!("isb", "mrs {v}, cntvct_el0", "isb", v = out(reg) v) };
        v
    }

    pub(super) fn cpuid_invariant_tsc() -> bool {
        true // the generic timer runs at a constant rate by architecture
    }

    pub(super) fn nominal_frequency_ghz() -> Option<(f64, FreqMethod)> {
        let f: u64;
        // SAFETY: cntfrq_el0 is readable from EL0.
        unsafe { std::arch::asm!("mrs {f}, cntfrq_el0", f = out(reg) f) };
        (f > 0).then(|| (f as f64 / 1e9, FreqMethod::Cntfrq))
    }
}

/// Fallback for architectures without a known counter.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub mod arch {
    use super::FreqMethod;
    /// Whether this architecture has a cycle counter we know how to read.
    pub const HAS_COUNTER: bool = false;
    /// Monotonic nanoseconds.
    pub fn read_start() -> u64 {
        super::monotonic_raw_ns()
    }
    /// Monotonic nanoseconds.
    pub fn read_stop() -> u64 {
        super::monotonic_raw_ns()
    }
    pub(super) fn cpuid_invariant_tsc() -> bool {
        false
    }
    pub(super) fn nominal_frequency_ghz() -> Option<(f64, FreqMethod)> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibrated_clock_agrees_with_monotonic_time() {
        let clock = detect(Duration::from_millis(50));
        let (t0, n0) = (clock.start(), monotonic_raw_ns());
        std::thread::sleep(Duration::from_millis(30));
        let (t1, n1) = (clock.stop(), monotonic_raw_ns());
        let measured = clock.ticks_to_ns((t1 - t0) as f64);
        let reference = (n1 - n0) as f64;
        assert!(
            (measured / reference - 1.0).abs() < 0.01,
            "clock says {measured} ns, CLOCK_MONOTONIC_RAW {reference} ns"
        );
        assert!(clock.ticks_per_ns > 0.01 && clock.ticks_per_ns < 10.0);
        assert!(clock.error_ppm >= 0.0 && clock.error_ppm < 10_000.0);
    }

    #[test]
    fn monotonic_fallback_counts_nanoseconds() {
        let clock = Clock::monotonic("test".into(), false);
        let a = clock.start();
        std::thread::sleep(Duration::from_millis(2));
        let b = clock.stop();
        assert!(clock.ticks_to_ns((b - a) as f64) >= 2e6);
        assert!(clock.cycles_per_ns().is_none());
        assert!(clock.describe().contains("MONOTONIC_RAW"));
    }
}
