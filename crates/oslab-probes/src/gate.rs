//! The core-speed gate: samples taken while the measuring core ran slow are left out.
//!
//! On a shared host the measuring core's speed changes under a probe: another guest on its SMT
//! sibling halves the integer throughput for a millisecond at a time, many times a second, and a
//! busy phase can last seconds. A sample's distribution is then a mixture of a fast and a slow
//! mode whose weights change from one measurement to the next, and its median jumps between the
//! modes. So the harness times a fixed loop of integer additions (about a microsecond) between
//! rounds of samples, and a round counts only when the checks on both sides of it ran within
//! [`SLOWER`] of the fastest check the harness has seen. What is measured is then the cost on a
//! core running at its full speed; how many samples were left out is said in the result's note.

use oslab_core::model::SLOWED_CORE;
use oslab_core::Clock;
use oslab_os::clock::Ticks;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How much slower than the fastest check a check may run and still count as full speed (the
/// runner's check before every probe uses the same margin).
pub const SLOWER: f64 = 0.15;

/// Loop passes (four additions each) per check: about a microsecond.
const PASSES: u64 = 2_000;

/// Untimed passes before each check.
const WARM_PASSES: u64 = 200;

/// The fastest check seen, in ticks, shared by a harness and the harnesses scaled from it.
#[derive(Debug, Clone)]
pub struct Fastest(Arc<AtomicU64>);

impl Default for Fastest {
    fn default() -> Self {
        Fastest(Arc::new(AtomicU64::new(f64::INFINITY.to_bits())))
    }
}

impl Fastest {
    fn see(&self, ticks: f64) {
        // Positive floats order like their bits.
        self.0.fetch_min(ticks.to_bits(), Ordering::Relaxed);
    }

    fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }
}

/// The checks of one measurement: check, round, check, round, ..., check.
pub struct Gate<'a> {
    clock: &'a Clock,
    fastest: &'a Fastest,
    checks: Vec<f64>,
}

impl<'a> Gate<'a> {
    /// A gate with no check taken yet.
    pub fn new(clock: &'a Clock, fastest: &'a Fastest) -> Gate<'a> {
        Gate {
            clock,
            fastest,
            checks: Vec::new(),
        }
    }

    /// Times one check; call it before the first round and after every round.
    pub fn check(&mut self) {
        // The round before may have evicted the loop's code from every cache (a chase over a
        // gigabyte): fetching it from memory would cost a tenth of a check. A short untimed run
        // brings it back, so only the core's speed is timed.
        crate::contention::add_chains(WARM_PASSES);
        let a = self.clock.start();
        crate::contention::add_chains(PASSES);
        let ticks = self.clock.stop().wrapping_sub(a) as f64;
        self.fastest.see(ticks);
        self.checks.push(ticks);
    }

    /// Forgets the last check, so the round just taken (a sample found invalid) and the next one
    /// count as one, between the check before the first and the check after the second.
    pub fn forget_last(&mut self) {
        self.checks.pop();
    }

    /// The rounds (0-based, in order) with a full-speed check on both sides.
    pub fn full_speed(&self) -> Vec<usize> {
        full_speed(&self.checks, self.fastest.get())
    }

    /// The rounds to keep of `rounds` taken, and a note when some or all of them ran slow: the
    /// full-speed rounds when there are at least `min` of them, else every round.
    pub fn verdict(&self, rounds: usize, min: usize) -> (Vec<usize>, Option<String>) {
        let fast: Vec<usize> = self
            .full_speed()
            .into_iter()
            .filter(|&r| r < rounds)
            .collect();
        if fast.len() == rounds {
            (fast, None)
        } else if fast.len() >= min.min(rounds).max(1) {
            let note = format!(
                "{} of {rounds} samples left out: the core ran more than {:.0}% below its full speed around them",
                rounds - fast.len(),
                100.0 * SLOWER
            );
            (fast, Some(note))
        } else if (rounds - fast.len()) * 2 < rounds {
            // Too few left without them, but a minority: the median stands on the full-speed
            // samples, so the figure is not a slowed core's (2 slow of 50 dropped fork's row
            // from comparisons).
            let note = format!(
                "{} of {rounds} samples ran with the core more than {:.0}% below its full speed; kept, as too few are left without them, and the median stands on the others",
                rounds - fast.len(),
                100.0 * SLOWER
            );
            ((0..rounds).collect(), Some(note))
        } else {
            let note = all_kept(rounds - fast.len(), rounds);
            ((0..rounds).collect(), Some(note))
        }
    }
}

/// The note of a measurement that kept all its `rounds` though `slow` of them ran slow.
pub(crate) fn all_kept(slow: usize, rounds: usize) -> String {
    format!(
        "the core ran more than {:.0}% below its full speed around {slow} of {rounds} samples, {SLOWED_CORE}",
        100.0 * SLOWER
    )
}

#[cfg(test)]
impl Gate<'_> {
    /// A gate whose checks took these ticks (the fastest is `fastest`'s).
    pub(crate) fn with_checks(mut self, checks: &[f64]) -> Self {
        checks.iter().for_each(|&c| self.fastest.see(c));
        self.checks = checks.to_vec();
        self
    }
}

/// Rounds between consecutive `checks` (in ticks) whose two checks both ran within [`SLOWER`] of
/// `fastest`.
fn full_speed(checks: &[f64], fastest: f64) -> Vec<usize> {
    let limit = fastest / (1.0 - SLOWER);
    (0..checks.len().saturating_sub(1))
        .filter(|&r| checks[r] <= limit && checks[r + 1] <= limit)
        .collect()
}

/// Keeps the samples of `rounds` (0-based indices, increasing) in `series`.
pub fn keep(series: &mut Vec<f64>, rounds: &[usize]) {
    *series = rounds
        .iter()
        .filter_map(|&r| series.get(r).copied())
        .collect();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_counts_only_with_full_speed_checks_on_both_sides() {
        // Checks 100, 100, 200, 100, 110, 100 ticks: rounds 1 and 2 border the slow check.
        let checks = [100.0, 100.0, 200.0, 100.0, 110.0, 100.0];
        assert_eq!(full_speed(&checks, 100.0), vec![0, 3, 4]);
        // Against a faster reference, every check is slow.
        assert!(full_speed(&checks, 50.0).is_empty());
        assert!(full_speed(&[100.0], 100.0).is_empty());
    }

    #[test]
    fn slow_rounds_are_left_out_and_said_unless_too_many() {
        let clock = oslab_os::clock::detect(std::time::Duration::from_millis(20));
        let fastest = Fastest::default();
        let mut gate = Gate::new(&clock, &fastest);
        gate.checks = vec![100.0, 100.0, 300.0, 100.0, 100.0];
        fastest.see(100.0);
        let (kept, note) = gate.verdict(4, 2);
        assert_eq!(kept, vec![0, 3]);
        assert!(note.unwrap().contains("2 of 4 samples left out"));
        let (kept, note) = gate.verdict(4, 3);
        assert_eq!(kept, vec![0, 1, 2, 3]);
        assert!(note.unwrap().ends_with(SLOWED_CORE));
        // One slow round of four, too few left without it: kept, and not a slowed core's figure.
        gate.checks = vec![100.0, 100.0, 100.0, 100.0, 300.0];
        let (kept, note) = gate.verdict(4, 4);
        assert_eq!(kept, vec![0, 1, 2, 3]);
        let note = note.unwrap();
        assert!(
            note.starts_with("1 of 4 samples") && !note.contains(SLOWED_CORE),
            "{note}"
        );
        gate.checks = vec![100.0; 5];
        assert_eq!(gate.verdict(4, 4), (vec![0, 1, 2, 3], None));
        let mut series = vec![1.0, 2.0, 3.0, 4.0];
        keep(&mut series, &[0, 3]);
        assert_eq!(series, vec![1.0, 4.0]);
    }

    #[test]
    fn a_live_check_is_plausible() {
        let clock = oslab_os::clock::detect(std::time::Duration::from_millis(20));
        let fastest = Fastest::default();
        // A shared host may slow the core for seconds: batches of checks, each judged against
        // the fastest of all, until one has a round between two full-speed checks.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
        let found = loop {
            let mut gate = Gate::new(&clock, &fastest);
            for _ in 0..50 {
                gate.check();
            }
            if !gate.full_speed().is_empty() {
                break true;
            }
            if std::time::Instant::now() > deadline {
                break false;
            }
        };
        // 8,000 additions: more than 100 ns on any core (80 a ns), less than 10 ms.
        let ns = clock.ticks_to_ns(fastest.get());
        assert!((100.0..1e7).contains(&ns), "a check took {ns} ns");
        if !found {
            oslab_testkit::skip("the host slowed the core for 3 s: no two checks in a row ran within 15% of the fastest");
        }
    }
}
