//! The measuring clock, as data: its source (fenced TSC reads where the TSC is invariant,
//! `clock_gettime` otherwise), its rate and how that was found. `oslab-os` reads it.
//!
//! The one choice to know: a sample is bracketed by `Ticks::start` (`lfence; rdtsc`) and
//! `Ticks::stop` (`rdtscp; lfence`), so no earlier instruction leaks into the interval and no later
//! one starts before the stop read. The TSC frequency comes from cpuid leaf 0x15 when the CPU
//! reports it, else it is calibrated against `CLOCK_MONOTONIC_RAW` and the calibration error is kept.

use serde::{Deserialize, Serialize};

/// Which counter a [`Clock`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The time-stamp counter (x86 `rdtsc`, aarch64 `cntvct_el0`).
    Tsc,
    /// `clock_gettime(CLOCK_MONOTONIC_RAW)`, one tick per nanosecond.
    Monotonic,
}

/// How the tick frequency was obtained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FreqMethod {
    /// cpuid leaf 0x15 (crystal clock x ratio).
    Cpuid15,
    /// aarch64 `cntfrq_el0`.
    Cntfrq,
    /// Calibrated against `CLOCK_MONOTONIC_RAW` over the given interval.
    Calibrated {
        /// Length of the calibration interval in milliseconds.
        interval_ms: f64,
    },
    /// The clock counts nanoseconds itself.
    Nanoseconds,
}

/// A calibrated clock. Cheap to copy; reads are `#[inline(always)]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Clock {
    /// Counter read.
    pub source: Source,
    /// Ticks per nanosecond (the TSC frequency in GHz for [`Source::Tsc`]).
    pub ticks_per_ns: f64,
    /// How `ticks_per_ns` was obtained.
    pub method: FreqMethod,
    /// Relative error bound of `ticks_per_ns`, in parts per million.
    pub error_ppm: f64,
    /// Whether the TSC is invariant (constant rate, runs in deep C-states).
    pub invariant_tsc: bool,
    /// Why the TSC was not used, when it was not.
    pub fallback_reason: Option<String>,
}

impl Clock {
    /// A clock on `CLOCK_MONOTONIC_RAW`, for machines whose TSC cannot be trusted.
    pub fn monotonic(reason: String, invariant_tsc: bool) -> Clock {
        Clock {
            source: Source::Monotonic,
            ticks_per_ns: 1.0,
            method: FreqMethod::Nanoseconds,
            error_ppm: 0.0,
            invariant_tsc,
            fallback_reason: Some(reason),
        }
    }

    /// Converts ticks to nanoseconds.
    pub fn ticks_to_ns(&self, ticks: f64) -> f64 {
        ticks / self.ticks_per_ns
    }

    /// TSC cycles per nanosecond, when the clock is the TSC (else `None`: we have no cycle rate).
    pub fn cycles_per_ns(&self) -> Option<f64> {
        (self.source == Source::Tsc).then_some(self.ticks_per_ns)
    }

    /// A one-line description, e.g. "TSC 2.700001 GHz (calibrated over 200 ms, ±3 ppm)".
    pub fn describe(&self) -> String {
        match (&self.source, &self.method) {
            (Source::Monotonic, _) => format!(
                "clock_gettime(CLOCK_MONOTONIC_RAW) ({})",
                self.fallback_reason.as_deref().unwrap_or("fallback")
            ),
            (Source::Tsc, FreqMethod::Calibrated { interval_ms }) => format!(
                "TSC {:.6} GHz (calibrated against CLOCK_MONOTONIC_RAW over {:.0} ms, ±{:.1} ppm)",
                self.ticks_per_ns, interval_ms, self.error_ppm
            ),
            (Source::Tsc, m) => format!(
                "TSC {:.6} GHz (from {:?}; calibration differs by {:.1} ppm)",
                self.ticks_per_ns, m, self.error_ppm
            ),
        }
    }
}
