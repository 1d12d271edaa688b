//! A contended-lock workload with a fixed amount of work, for the shuffler to act on (threads
//! that share a lock benefit from sharing a cache): T threads, K mutexes, thread i uses lock
//! i mod K, each acquisition holding the lock for a while and working outside it for a while.

use oslab_core::reason::BadValue;
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

/// The benchmark's shape: T threads, K mutexes, thread i uses lock i mod K.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct Lockbench {
    /// Threads.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 4,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=4096)))]
    pub threads: usize,
    /// Mutexes (1 = a single hot lock).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 2,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=4096)))]
    pub locks: usize,
    /// Work inside the lock per acquisition, in microseconds.
    #[cfg_attr(feature = "clap", arg(long = "critical-us", value_name = "CRITICAL_US",
        default_value = "2", value_parser = micros))]
    pub critical: Duration,
    /// Work outside the lock per acquisition, in microseconds.
    #[cfg_attr(feature = "clap", arg(long = "noncritical-us", value_name = "NONCRITICAL_US",
        default_value = "2", value_parser = micros))]
    pub noncritical: Duration,
    /// Acquisitions per thread (a fixed amount of work, so time is the result).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 20000,
        value_parser = clap::value_parser!(u64).range(1..)))]
    pub iterations: u64,
}

/// A number of microseconds, not negative.
#[cfg(feature = "clap")]
fn micros(s: &str) -> Result<Duration, BadValue> {
    s.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map(|v| Duration::from_secs_f64(v / 1e6))
        .ok_or_else(|| BadValue(format!("{s:?}: a non-negative number of microseconds")))
}

/// Spins for about `d`, touching `data` so the lock's cache line and its data move with it.
fn work(d: Duration, data: &mut u64) {
    let end = Instant::now() + d;
    while Instant::now() < end {
        *data = data.wrapping_mul(6364136223846793005).wrapping_add(1);
    }
}

/// A lock alone in its cache lines (two, for the adjacent-line prefetcher): locks that shared a
/// line would contend with each other through it.
#[repr(align(128))]
struct Line(Mutex<u64>);

/// Runs it; returns the seconds from just before the threads start to the last one's end.
pub fn run(b: &Lockbench) -> Result<f64, BadValue> {
    let locks: Arc<Vec<Line>> =
        Arc::new((0..b.locks.max(1)).map(|_| Line(Mutex::new(0))).collect());
    let start = Arc::new(Barrier::new(b.threads + 1));
    let handles: Vec<_> = (0..b.threads)
        .map(|i| {
            let (locks, start, b) = (Arc::clone(&locks), Arc::clone(&start), *b);
            std::thread::spawn(move || {
                let lock = &locks[i % locks.len()].0;
                let mut own = i as u64;
                start.wait();
                for _ in 0..b.iterations {
                    {
                        let mut shared = lock.lock().unwrap_or_else(|p| p.into_inner());
                        work(b.critical, &mut shared);
                    }
                    work(b.noncritical, &mut own);
                }
            })
        })
        .collect();
    // The clock starts before the threads may: no work happens outside the measured time.
    let t = Instant::now();
    start.wait();
    for h in handles {
        h.join()
            .map_err(|_| "a benchmark thread panicked".to_string())?;
    }
    Ok(t.elapsed().as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_amount_of_work_takes_at_least_its_critical_sections() {
        let b = Lockbench {
            threads: 3,
            locks: 1,
            critical: Duration::from_micros(20),
            noncritical: Duration::ZERO,
            iterations: 100,
        };
        // One lock serialises 300 critical sections of 20 µs each.
        assert!(run(&b).unwrap() >= 300.0 * 20e-6);
    }
}
