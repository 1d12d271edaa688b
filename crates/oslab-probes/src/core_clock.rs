//! The core clock, measured: a chain of dependent integer multiplies runs at one per three cycles
//! on every x86 core oslab knows (and a chain of adds at one per cycle on Arm), so operations per
//! nanosecond give the frequency the core runs at now (turbo, power state and a hypervisor's cap
//! included), which the TSC's constant rate is not. Multiplies, not adds: recent Intel cores
//! (Golden Cove and later) execute some chained add-immediates at rename, several per cycle.

use std::time::Instant;

/// Operations per burst: about half a millisecond at 3 GHz, long enough that the clock read is
/// negligible, short enough that a preemption spoils few bursts.
const OPS: u64 = 500_000;
/// Cycles per operation of the chain: `imul r64, r64` latency on x86, `add` on aarch64.
const CYCLES_PER_OP: f64 = if cfg!(target_arch = "x86_64") {
    3.0
} else {
    1.0
};
/// Bursts; the median is kept.
const BURSTS: usize = 21;
/// Operations per loop iteration (the loop's own branch runs beside the chain).
const UNROLL: u64 = 100;

/// The measured core clock.
#[derive(Debug, Clone, PartialEq)]
pub struct CoreClock {
    /// Median of the bursts, GHz.
    pub ghz: f64,
    /// Interquartile range of the bursts over the median.
    pub spread: f64,
    /// Bursts measured.
    pub bursts: usize,
}

impl CoreClock {
    /// Measures the clock of the cpu the calling thread runs on (pin it first). None where no
    /// dependent-add loop is written for this architecture.
    pub fn measure() -> Option<CoreClock> {
        let mut ghz: Vec<f64> = (0..BURSTS)
            .filter_map(|_| {
                let t = Instant::now();
                dependent_chain(OPS / UNROLL)?;
                Some(OPS as f64 * CYCLES_PER_OP / t.elapsed().as_nanos().max(1) as f64)
            })
            .collect();
        ghz.sort_by(f64::total_cmp);
        let at = |q: f64| ghz[((ghz.len() - 1) as f64 * q).round() as usize];
        (!ghz.is_empty()).then(|| CoreClock {
            ghz: at(0.5),
            spread: (at(0.75) - at(0.25)) / at(0.5),
            bursts: ghz.len(),
        })
    }

    /// How it was measured, for a model's sources.
    pub fn describe(&self) -> String {
        format!(
            "measured: {} bursts of {} dependent {}, median {:.3} GHz, IQR {:.1}% of it",
            self.bursts,
            OPS,
            if cfg!(target_arch = "x86_64") {
                "multiplies (3 cycles each)"
            } else {
                "adds"
            },
            self.ghz,
            100.0 * self.spread
        )
    }
}

/// Runs `iterations` x 100 dependent operations.
#[inline(never)]
fn dependent_chain(iterations: u64) -> Option<()> {
    #[cfg(target_arch = "x86_64")]
    {
        let mut x: u64 = 3;
        let mut n = iterations.max(1);
        // SAFETY: only multiplies and decrements registers we own.
        unsafe {
            std::arch::asm!(
                "2:",
                ".rept 100",
                "imul {x}, {x}",
                ".endr",
                "dec {n}",
                "jnz 2b",
                x = inout(reg) x,
                n = inout(reg) n,
                options(nomem, nostack),
            );
        }
        std::hint::black_box((x, n));
        Some(())
    }
    #[cfg(target_arch = "aarch64")]
    {
        let mut x: u64 = 0;
        let mut n = iterations.max(1);
        // SAFETY: only adds to and decrements registers we own.
        unsafe {
            std::arch::asm!(
                "2:",
                ".rept 100",
                "add {x}, {x}, #1",
                ".endr",
                "subs {n}, {n}, #1",
                "b.ne 2b",
                x = inout(reg) x,
                n = inout(reg) n,
                options(nomem, nostack),
            );
        }
        std::hint::black_box((x, n));
        Some(())
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = iterations;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_core_clock_is_a_plausible_frequency() {
        let c = CoreClock::measure().expect("x86-64 and aarch64 have a chain");
        // Any core of the last twenty years, slowed by a hypervisor or not.
        assert!((0.3..8.0).contains(&c.ghz), "{c:?}");
        assert_eq!(c.bursts, BURSTS);
        assert!(c.describe().contains("dependent"));
    }
}
