//! The timing harness: it owns batch sizing, warm-up, interleaving, overhead subtraction and the
//! time budget, so probes only say what one iteration is.
//!
//! The one choice to know: bodies measured together are *interleaved* round by round, each round
//! also timing an empty loop of the same length. Drift from a noisy host then hits every body and
//! its overhead alike, and paired differences between bodies (call cost per extra argument, switch
//! minus transfer) stay meaningful. Rounds taken while the core ran slow are left out
//! ([`crate::gate`]).

use crate::error::ProbeError;
use crate::gate::{self, Fastest, Gate};
use oslab_core::model::join_notes;
use oslab_core::pace::Pace;
use oslab_core::Clock;
use oslab_os::clock::Ticks;
use oslab_os::signals;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// How much time and how many samples a measurement may take.
#[derive(Debug, Clone)]
pub struct HarnessConfig {
    /// Time to spend sampling one body (after warm-up); the harness stops at the budget once it has
    /// `min_samples`, and never runs past four times the budget.
    pub budget: Duration,
    /// Samples wanted at least.
    pub min_samples: usize,
    /// Samples taken at most.
    pub max_samples: usize,
    /// Target duration of one batch; at least 1000 clock reads long.
    pub target_batch: Duration,
    /// Warm-up time per body.
    pub warmup: Duration,
    /// `--quick`'s pace: the probes' shorter sweeps and fewer points (decided here, once,
    /// never guessed from another budget).
    pub pace: Pace,
    /// Largest working set the memory probes sweep to, in bytes.
    pub memory_max: usize,
    /// Time the runner may spend measuring noisy results again at the end of a run.
    pub retry_budget: Duration,
    /// Time a pass over the whole suite aims to stay within (the set-up before it excluded): the
    /// retries get no more than what is left of it.
    pub suite_target: Duration,
    /// Seconds one unit of a probe's cost (timer.rdtsc's) takes under these budgets, timed on a
    /// 2-vCPU guest: `--plan`'s estimate of a probe is its cost times this, so adding a probe
    /// adds its own time instead of lowering every other probe's estimate.
    pub seconds_per_cost: f64,
    /// Extra runs of every batched body inside its timed region: a real slowdown of
    /// (1 + extra) times that comparisons must catch. Zero unless the test-only environment
    /// variable `OSLAB_TEST_EXTRA_WORK` sets it.
    pub extra_work: u32,
}

/// The test-only slowdown's variable (see [`HarnessConfig::extra_work`]).
pub const EXTRA_WORK_VAR: &str = "OSLAB_TEST_EXTRA_WORK";

/// The test-only slowdown (see [`HarnessConfig::extra_work`]); rows measured under it are marked
/// and the run warns.
pub(crate) fn extra_work() -> u32 {
    std::env::var(EXTRA_WORK_VAR)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

impl HarnessConfig {
    /// The default suite: about 0.17 s per measurement (its interval comes from 20 blocks of
    /// it; a noisy one is measured again later in the run), about a minute on 2 cores.
    pub fn full() -> HarnessConfig {
        HarnessConfig {
            budget: Duration::from_millis(170),
            min_samples: 50,
            max_samples: 20_000,
            target_batch: Duration::from_micros(50),
            warmup: Duration::from_millis(30),
            pace: Pace::Full,
            memory_max: 1 << 30,
            retry_budget: Duration::from_secs(4),
            suite_target: Duration::from_secs(56),
            seconds_per_cost: 0.2,
            extra_work: extra_work(),
        }
    }

    /// The budgets of the default suite, or of `--quick`.
    pub fn suite(pace: Pace) -> HarnessConfig {
        match pace {
            Pace::Quick => HarnessConfig::quick(),
            Pace::Full => HarnessConfig::full(),
        }
    }

    /// `--quick`: about 0.07 s per measurement, about 15 s on 2 cores.
    pub fn quick() -> HarnessConfig {
        HarnessConfig {
            budget: Duration::from_millis(70),
            min_samples: 20,
            max_samples: 5_000,
            target_batch: Duration::from_micros(30),
            warmup: Duration::from_millis(10),
            pace: Pace::Quick,
            memory_max: 64 << 20,
            retry_budget: Duration::from_millis(1500),
            suite_target: Duration::from_secs(15),
            seconds_per_cost: 0.066,
            extra_work: extra_work(),
        }
    }

    /// The budgets in words (`-v`).
    pub fn describe(&self) -> [String; 2] {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let pace = match self.pace {
            Pace::Quick => "--quick",
            Pace::Full => "full",
        };
        [
            format!(
                "{pace} budgets: {:.0} ms a measurement, {}-{} samples, batches of {:.0} µs, {:.0} ms warm-up",
                ms(self.budget),
                self.min_samples,
                self.max_samples,
                ms(self.target_batch) * 1e3,
                ms(self.warmup),
            ),
            format!(
                "{pace} budgets: working sets up to {}, retries within {:.1} s, a pass in {} s",
                oslab_core::units::bytes(self.memory_max as u64),
                self.retry_budget.as_secs_f64(),
                self.suite_target.as_secs()
            ),
        ]
    }
}

/// Per-iteration samples of one body, in ns, with what was subtracted.
#[derive(Debug, Clone, Default)]
pub struct Timing {
    /// Per-iteration times in ns, overhead removed.
    pub samples: Vec<f64>,
    /// Iterations per sample.
    pub batch: u64,
    /// Overhead subtracted per iteration, in ns.
    pub overhead_ns: f64,
    /// How it was measured, when that needs saying.
    pub note: Option<String>,
}

impl Timing {
    /// A timing derived from this one by mapping every sample (e.g. round trip -> one switch).
    pub fn map(&self, f: impl Fn(f64) -> f64) -> Timing {
        Timing {
            samples: self.samples.iter().map(|&x| f(x)).collect(),
            ..self.clone()
        }
    }

    /// Puts `text` before the note (see [`Measurement::note_before`]).
    ///
    /// [`Measurement::note_before`]: oslab_core::model::Measurement::note_before
    pub fn note_before(&mut self, text: impl Into<String>) {
        self.note = Some(join_notes(text.into(), self.note.take()));
    }

    /// Median sample, if any.
    pub fn median(&self) -> Option<f64> {
        oslab_core::stats::median(&self.samples)
    }
}

/// The empty loop subtracted from batched bodies: the same counted loop with nothing inside.
#[inline(never)]
fn empty_loop(n: u64) {
    for i in 0..n {
        black_box(i);
    }
}

/// A self-timed event: runs once, writes `K` durations in ticks, returns `Ok(false)` to drop
/// an invalid sample.
pub type Event<'a, const K: usize> =
    dyn FnMut(&Clock, &mut [u64; K]) -> Result<bool, ProbeError> + 'a;

/// The harness. Create one per run; it measures its own clock-read overhead on creation.
pub struct Harness {
    /// The clock.
    pub clock: Clock,
    /// Budgets.
    pub config: HarnessConfig,
    /// Median cost of a back-to-back start/stop pair, in ticks.
    pub read_overhead_ticks: f64,
    /// The fastest core-speed check seen (shared with the harnesses scaled from this one).
    fastest: Fastest,
}

impl Harness {
    /// Builds a harness and measures the clock-read overhead.
    pub fn new(clock: Clock, config: HarnessConfig) -> Harness {
        let mut reads: Vec<f64> = (0..2001)
            .map(|_| {
                let a = clock.start();
                let b = clock.stop();
                b.wrapping_sub(a) as f64
            })
            .collect();
        reads.sort_by(f64::total_cmp);
        Harness {
            read_overhead_ticks: reads[reads.len() / 2],
            clock,
            config,
            fastest: Fastest::default(),
        }
    }

    /// The same harness (clock, overhead) with a budget scaled by `factor`, for probes that
    /// take many points and need fewer samples per point.
    pub fn scaled(&self, factor: f64) -> Harness {
        let mut config = self.config.clone();
        config.budget = config.budget.mul_f64(factor);
        config.warmup = config.warmup.mul_f64(factor);
        config.min_samples = ((config.min_samples as f64 * factor).ceil() as usize).max(5);
        Harness {
            clock: self.clock.clone(),
            config,
            read_overhead_ticks: self.read_overhead_ticks,
            fastest: self.fastest.clone(),
        }
    }

    /// Clock-read overhead in ns.
    pub fn read_overhead_ns(&self) -> f64 {
        self.clock.ticks_to_ns(self.read_overhead_ticks)
    }

    #[inline(always)]
    fn time(&self, body: &mut dyn FnMut(u64), n: u64) -> f64 {
        let a = self.clock.start();
        body(n);
        for _ in 0..self.config.extra_work {
            body(n);
        }
        let b = self.clock.stop();
        b.wrapping_sub(a) as f64
    }

    fn target_ticks(&self) -> f64 {
        let target = self.clock.ticks_per_ns * self.config.target_batch.as_nanos() as f64;
        target.max(1000.0 * self.read_overhead_ticks)
    }

    /// Iterations per batch so one batch lasts about the target (bounded in time: never more
    /// than ~50 ms of sizing, never more than 2^30 iterations).
    fn size_batch(&self, body: &mut dyn FnMut(u64)) -> Result<u64, ProbeError> {
        let target = self.target_ticks();
        let started = Instant::now();
        let mut n: u64 = 1;
        loop {
            check_interrupt()?;
            // Best of three, so one interruption does not shrink the batch.
            let t = (0..3).map(|_| self.time(body, n)).fold(f64::MAX, f64::min);
            if t >= target || n >= 1 << 30 || started.elapsed() > Duration::from_millis(50) {
                return Ok(n);
            }
            let grow = if t > 0.0 {
                (target / t).clamp(1.1, 8.0)
            } else {
                8.0
            };
            n = ((n as f64 * grow).ceil() as u64).max(n + 1);
        }
    }

    /// Measures one body that runs `n` iterations per call, with the empty loop subtracted.
    pub fn batched(&self, body: &mut dyn FnMut(u64)) -> Result<Timing, ProbeError> {
        Ok(self.interleaved(&mut [body])?.remove(0))
    }

    /// Measures several bodies round-robin, each with its own batch size and its own interleaved
    /// empty-loop overhead. Sample `i` of every body comes from the same round.
    pub fn interleaved(
        &self,
        bodies: &mut [&mut dyn FnMut(u64)],
    ) -> Result<Vec<Timing>, ProbeError> {
        self.collect(bodies, true)
    }

    /// Measures a body with only the clock-read overhead subtracted (for the loop probe, whose
    /// subject is the empty loop itself).
    pub fn raw(&self, body: &mut dyn FnMut(u64)) -> Result<Timing, ProbeError> {
        Ok(self.raw_interleaved(&mut [body])?.remove(0))
    }

    /// Several bodies round-robin as in [`Harness::interleaved`], with only the clock-read
    /// overhead subtracted (bodies whose own loop is the work, like a pointer chase).
    pub fn raw_interleaved(
        &self,
        bodies: &mut [&mut dyn FnMut(u64)],
    ) -> Result<Vec<Timing>, ProbeError> {
        self.collect(bodies, false)
    }

    fn collect(
        &self,
        bodies: &mut [&mut dyn FnMut(u64)],
        subtract_empty: bool,
    ) -> Result<Vec<Timing>, ProbeError> {
        let k = bodies.len();
        let mut batches = Vec::with_capacity(k);
        for body in bodies.iter_mut() {
            batches.push(self.size_batch(*body)?);
        }
        // Warm-up: caches, branch predictors, page tables, frequency.
        let warm = Instant::now();
        while warm.elapsed() < self.config.warmup {
            for (body, &n) in bodies.iter_mut().zip(&batches) {
                self.time(*body, n);
            }
            check_interrupt()?;
        }
        let mut raw: Vec<Vec<f64>> = vec![Vec::new(); k];
        let mut empty: Vec<Vec<f64>> = vec![Vec::new(); k];
        let budget = self.config.budget * k as u32;
        let mut gate = Gate::new(&self.clock, &self.fastest);
        let start = Instant::now();
        gate.check();
        loop {
            for i in 0..k {
                raw[i].push(self.time(bodies[i], batches[i]));
                if subtract_empty {
                    empty[i].push(self.time(&mut empty_loop, batches[i]));
                }
            }
            gate.check();
            check_interrupt()?;
            // A difference from an empty loop is judged whole: its parts' intervals say
            // too little of it to stop early.
            let series: &[Vec<f64>] = if subtract_empty { &[] } else { &raw };
            if self.enough(raw[0].len(), start.elapsed(), budget, &gate, series) {
                break;
            }
        }
        let (rounds, note) = gate.verdict(raw[0].len(), self.config.min_samples);
        for series in raw.iter_mut().chain(empty.iter_mut()) {
            gate::keep(series, &rounds);
        }
        Ok((0..k)
            .map(|i| {
                let n = batches[i] as f64;
                let overhead_ticks = if subtract_empty {
                    oslab_core::stats::median(&empty[i]).unwrap_or(0.0)
                } else {
                    self.read_overhead_ticks
                };
                Timing {
                    samples: raw[i]
                        .iter()
                        .map(|&t| self.clock.ticks_to_ns(t - overhead_ticks) / n)
                        .collect(),
                    batch: batches[i],
                    overhead_ns: self.clock.ticks_to_ns(overhead_ticks) / n,
                    note: note.clone(),
                }
            })
            .collect())
    }

    /// Whether sampling may stop after `taken` rounds: at the sample cap; past the budget with
    /// enough rounds at full speed, or with none at all (the core stayed slow, and its slow phases
    /// last far longer than waiting could); past a quarter as much again with enough rounds of any
    /// speed; past four times the budget in any case; and early, once every one of `series`
    /// knows its median to [`EARLY_PRECISION`] ([`Harness::precise_early`]).
    fn enough(
        &self,
        taken: usize,
        elapsed: Duration,
        budget: Duration,
        gate: &Gate,
        series: &[Vec<f64>],
    ) -> bool {
        let min = self.config.min_samples;
        self.precise_early(taken, elapsed, budget, gate, series)
            || taken >= self.config.max_samples
            || elapsed >= budget * 4
            || (elapsed >= budget.mul_f64(1.25) && taken >= min)
            // Counting full-speed rounds walks every check: every 16th round is often enough.
            || (elapsed >= budget && taken >= min && taken.is_multiple_of(16) && {
                let fast = gate.full_speed().len();
                fast >= min || fast == 0
            })
    }

    /// Whether sampling may stop before the budget: past [`EARLY_SHARE`] of it, with twice the
    /// minimum rounds, every round at full speed, and every series' median known to
    /// [`EARLY_PRECISION`] (its interval from the blocks of its samples, as its summary's). A
    /// steady probe gives its time back; a noisy one still gets all of it.
    fn precise_early(
        &self,
        taken: usize,
        elapsed: Duration,
        budget: Duration,
        gate: &Gate,
        series: &[Vec<f64>],
    ) -> bool {
        !series.is_empty()
            && taken.is_multiple_of(16)
            && taken >= 2 * self.config.min_samples
            && elapsed >= budget.mul_f64(EARLY_SHARE)
            && gate.full_speed().len() >= taken
            && series.iter().all(|v| {
                oslab_core::stats::Summary::new(v)
                    .and_then(|s| s.relative_interval())
                    .is_some_and(|r| r <= EARLY_PRECISION)
            })
    }

    /// Measures events that time themselves: `body` runs one event and writes `K` durations in
    /// ticks (e.g. creation and round trip of one fork). The clock-read overhead is subtracted.
    /// A body may return `Ok(false)` to drop a sample it knows is invalid.
    pub fn each<const K: usize>(&self, body: &mut Event<'_, K>) -> Result<[Timing; K], ProbeError> {
        let mut out: [Vec<f64>; K] = std::array::from_fn(|_| Vec::new());
        let mut ticks = [0u64; K];
        let mut dropped = 0usize;
        for _ in 0..2 {
            body(&self.clock, &mut ticks)?; // warm-up
        }
        let mut gate = Gate::new(&self.clock, &self.fastest);
        let start = Instant::now();
        gate.check();
        loop {
            check_interrupt()?;
            let valid = body(&self.clock, &mut ticks)?;
            gate.check();
            if valid {
                for (series, &t) in out.iter_mut().zip(&ticks) {
                    series.push(self.clock.ticks_to_ns(t as f64 - self.read_overhead_ticks));
                }
            } else {
                // An invalid event leaves no sample: its round merges with the next one.
                gate.forget_last();
                dropped += 1;
            }
            if self.enough(
                out[0].len(),
                start.elapsed(),
                self.config.budget,
                &gate,
                &out,
            ) {
                break;
            }
        }
        let (rounds, slow) = gate.verdict(out[0].len(), self.config.min_samples);
        for series in out.iter_mut() {
            gate::keep(series, &rounds);
        }
        let note = match dropped {
            0 => slow,
            n => Some(join_notes(format!("{n} invalid samples dropped"), slow)),
        };
        Ok(out.map(|samples| Timing {
            samples,
            batch: 1,
            overhead_ns: self.read_overhead_ns(),
            note: note.clone(),
        }))
    }
}

/// How well a measurement's median must be known for it to stop before its budget: ±1%, half
/// the ±2% an `ok` figure's interval may span, the rest left for the extra looks (one every 16
/// rounds) and for the drift a shorter window sees less of.
pub const EARLY_PRECISION: f64 = 0.01;

/// The least share of its budget a measurement spends before it may stop for precision: drift
/// between bursts needs time to show in the interval.
pub const EARLY_SHARE: f64 = 0.4;

/// Returns `Err(Interrupted)` once the user has asked us to stop.
pub fn check_interrupt() -> Result<(), ProbeError> {
    if signals::interrupted() {
        Err(ProbeError::Interrupted)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn harness() -> Harness {
        let mut cfg = HarnessConfig::quick();
        cfg.budget = Duration::from_millis(30);
        Harness::new(oslab_os::clock::detect(Duration::from_millis(20)), cfg)
    }

    #[inline(never)]
    fn spin(n: u64) {
        let mut x = 1u64;
        for i in 0..n * 40 {
            x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
        black_box(x);
    }

    #[test]
    fn batched_work_scales_with_its_size() {
        let h = harness();
        let t = h
            .interleaved(&mut [&mut |n| spin(n), &mut |n| spin(2 * n)])
            .unwrap();
        let (a, b) = (t[0].median().unwrap(), t[1].median().unwrap());
        assert!(
            a > 0.0 && b / a > 1.6 && b / a < 2.5,
            "spin x1 {a} ns, x2 {b} ns"
        );
        assert_eq!(t[0].samples.len(), t[1].samples.len());
        assert!(t[0].samples.len() >= h.config.min_samples);
    }

    #[test]
    fn sampling_stops_at_the_budget_with_enough_full_speed_rounds_or_none() {
        let h = harness(); // 20 samples at least
        let (budget, fastest) = (h.config.budget, Fastest::default());
        let gate = |checks: &[f64]| Gate::new(&h.clock, &fastest).with_checks(checks);
        let at = |t: f64| budget.mul_f64(t);
        // 32 rounds, all slow against a fastest check of 100 ticks: waiting is hopeless.
        let mut slow = vec![300.0; 33];
        slow[0] = 100.0;
        assert!(h.enough(32, at(1.0), budget, &gate(&slow), &[]));
        // A few at full speed: worth a quarter more time, then every sample is kept.
        let mut few = slow.clone();
        few[..6].fill(100.0);
        assert!(!h.enough(32, at(1.0), budget, &gate(&few), &[]));
        assert!(h.enough(32, at(1.25), budget, &gate(&few), &[]));
        // Enough at full speed: done at the budget, not before.
        let fast = vec![100.0; 33];
        assert!(!h.enough(32, at(0.9), budget, &gate(&fast), &[]));
        assert!(h.enough(32, at(1.0), budget, &gate(&fast), &[]));
    }

    #[test]
    fn a_steady_measurement_stops_early_and_a_noisy_one_takes_its_budget() {
        let h = harness(); // 20 samples at least
        let (budget, fastest) = (h.config.budget, Fastest::default());
        let fast = Gate::new(&h.clock, &fastest).with_checks(&[100.0; 65]);
        let at = |t: f64| budget.mul_f64(t);
        // 64 rounds within 0.2% of each other: known to ±1% at half the budget.
        let steady: Vec<f64> = (0..64).map(|i| 1000.0 + (i % 5) as f64).collect();
        assert!(h.enough(64, at(0.5), budget, &fast, std::slice::from_ref(&steady)));
        // Not before its share of the budget, nor with too few rounds.
        assert!(!h.enough(64, at(0.3), budget, &fast, std::slice::from_ref(&steady)));
        assert!(!h.enough(32, at(0.5), budget, &fast, &[steady[..32].to_vec()]));
        // Spread over ±30%: it takes the whole budget.
        let noisy: Vec<f64> = (0..64)
            .map(|i| 1000.0 * (0.7 + 0.6 * ((i * 37 % 64) as f64 / 64.0)))
            .collect();
        assert!(!h.enough(64, at(0.5), budget, &fast, &[steady, noisy]));
        // Rounds on a slowed core: never early.
        let mut checks = vec![100.0; 65];
        checks[10] = 300.0;
        let slowed = Gate::new(&h.clock, &fastest).with_checks(&checks);
        let steady: Vec<f64> = (0..64).map(|i| 1000.0 + (i % 5) as f64).collect();
        assert!(!h.enough(64, at(0.5), budget, &slowed, &[steady]));
    }

    #[test]
    fn empty_body_costs_about_nothing() {
        let h = harness();
        let t = h.batched(&mut |n| empty_loop(n)).unwrap();
        let m = t.median().unwrap();
        assert!(
            m.abs() < 1.0,
            "empty loop minus itself = {m} ns per iteration"
        );
    }

    #[test]
    fn each_subtracts_read_overhead_and_drops_invalid() {
        let h = harness();
        let mut i = 0;
        let [t] = h
            .each::<1>(&mut |clock, out| {
                i += 1;
                let a = clock.start();
                std::thread::sleep(Duration::from_micros(100));
                out[0] = clock.stop() - a;
                Ok(i % 5 != 0)
            })
            .unwrap();
        let m = t.median().unwrap();
        assert!(
            (100_000.0..5_000_000.0).contains(&m),
            "sleep(100us) measured {m} ns"
        );
        assert!(t.note.unwrap().contains("dropped"));
    }
}
