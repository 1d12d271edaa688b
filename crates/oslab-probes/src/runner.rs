//! Runs selected probes one after another: checks what each needs, catches panics, stops cleanly
//! on Ctrl-C, and reports every probe's results to a [`Sink`] as soon as it finishes.
//!
//! With several repetitions the suite runs that many times over, interleaved (every probe's
//! first repetition, then every probe's second, ...), so that each repetition of a probe sees
//! the machine at a different time: the repetitions are the independent replicates that
//! comparisons between runs rest on.
//!
//! Then, while the retry budget lasts, probes with a noisy result are measured again, a pass at a
//! time (so the new attempts are interleaved with each other, minutes after the first): for each
//! measurement the best-supported attempt is kept (`ok` over `noisy`, then the narrower interval)
//! and the number of attempts is recorded.
//!
//! Every attempt is watched for competing work ([`crate::contention`]): results measured while other
//! work took the cpus are marked noisy with the reason, and measured again like any noisy result.
//! The core's speed ([`crate::contention::core_speed`]) is checked before every attempt: when it
//! varied over the run, the run carries a warning saying by how much.

use crate::contention::{core_speed, Snapshot};
use crate::gate::SLOWER;
use crate::harness::HarnessConfig;
use crate::probe::{unmet, Context, Need, Probe, ProbeError};
use oslab_core::catalog::Entry;
use oslab_core::machine::{Environment, Warning};
use oslab_core::model::{Cause, Measurement, Status, OTHER_WORK};
use serde_json::Map;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

/// Receives progress and results (the CLI draws a progress bar and stores; tests collect).
pub trait Sink {
    /// A probe is about to run.
    fn started(&mut self, _probe: &Probe, _index: usize, _total: usize) {}
    /// A probe finished (or was skipped / failed).
    fn finished(&mut self, _probe: &Probe, _results: &[Measurement]) {}
    /// A probe with noisy results is measured again (`attempt` 2, 3, ...).
    fn retrying(&mut self, _probe: &Probe, _attempt: u32) {}
}

/// Two sinks, each told everything (the CLI's bar, and its session storing the results).
impl<A: Sink, B: Sink> Sink for (A, B) {
    fn started(&mut self, probe: &Probe, index: usize, total: usize) {
        self.0.started(probe, index, total);
        self.1.started(probe, index, total);
    }
    fn finished(&mut self, probe: &Probe, results: &[Measurement]) {
        self.0.finished(probe, results);
        self.1.finished(probe, results);
    }
    fn retrying(&mut self, probe: &Probe, attempt: u32) {
        self.0.retrying(probe, attempt);
        self.1.retrying(probe, attempt);
    }
}

/// Attempts at most per probe (the first included).
pub const MAX_ATTEMPTS: u32 = 3;

/// A sink that ignores everything.
pub struct Silent;
impl Sink for Silent {}

/// What a run produced.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Every measurement, in order.
    pub measurements: Vec<Measurement>,
    /// Whether the user stopped the run before the end.
    pub interrupted: bool,
    /// Probes left with noisy results that the retry budget had no time to measure again.
    pub not_retried: Vec<&'static str>,
    /// Probes whose kept results were measured while other work competed, with why.
    pub contended: Vec<(&'static str, String)>,
    /// The core's speed before every attempt, in billions of integer additions a second.
    pub core_speeds: Vec<f64>,
    /// Probe runs the run planned (probes x repetitions), retries not counted.
    pub planned: usize,
    /// The share of the measuring cpu the hypervisor took (steal time) during every attempt.
    pub steals: Vec<f64>,
    /// Every attempt measured while other work competed, with why, in order: the source of
    /// [`Outcome::contended`] (the why was read back out of the results' notes).
    contended_attempts: Vec<(&'static str, String)>,
}

/// Probe id of what the run measured of its host: how often the measuring core ran at full
/// speed, and the steal time (a shared VM's most telling figures, compared between instances).
pub const HOST: &str = oslab_core::catalog::id::HOST;

/// Fewest probe runs (probes x repetitions) a run has host rows from: fewer checks say little
/// about how often a shared core runs slow. Retries are not counted, so whether a run has host
/// rows does not depend on whether a probe was noisy (of two identical runs of 9 probe runs, the
/// one with a retry had them and `compare` found rows on one side only).
pub const HOST_MIN_CHECKS: usize = 10;

/// The why of the host rows' missing model.
const HOST_NO_MODEL: &str = "a property of the host and its other tenants, not of the machine";

impl Outcome {
    /// The warnings stored with the run: probes that ran while other work competed, and a core
    /// whose speed varied over the run.
    pub fn warnings(&self) -> Vec<Warning> {
        self.contention()
            .into_iter()
            .chain(self.core_speed())
            .collect()
    }

    /// The note on probes left noisy that the retries had no time for, if any.
    pub fn not_retried_note(&self, config: &crate::HarnessConfig) -> Option<String> {
        (!self.not_retried.is_empty()).then(|| format!(
            "note: {} with noisy results not measured again, the time for retries being spent (at most {} s, within the suite's {} s): {}",
            oslab_core::units::counted(self.not_retried.len(), "probe"),
            config.retry_budget.as_secs_f64(),
            config.suite_target.as_secs_f64(),
            self.not_retried.join(", ")
        ))
    }

    fn contention(&self) -> Option<Warning> {
        let (_, why) = self.contended.first()?;
        let probes: Vec<&str> = self.contended.iter().map(|(p, _)| *p).collect();
        Some(Warning::new(
            "contention",
            format!(
                "{} ran while other work competed ({why}): {}; their results are marked noisy (contention)",
                oslab_core::units::counted(probes.len(), "probe"),
                probes.join(", ")
            ),
            "stop other work on this machine (or pin it away with --cpu), then measure again",
        ))
    }

    /// The host rows ([`HOST`]): the core's speed at each check relative to the fastest check
    /// (how often it ran at full speed is in the note), and the steal share of each attempt.
    /// None for fewer than [`HOST_MIN_CHECKS`] planned probe runs (a run of a few probes).
    pub fn host(&self) -> Vec<Measurement> {
        use oslab_core::model::{judged, Judge, Unit};
        if self.planned < HOST_MIN_CHECKS || self.core_speeds.is_empty() {
            return Vec::new();
        }
        let fastest = self.core_speeds.iter().copied().fold(0.0, f64::max);
        let relative: Vec<f64> = self.core_speeds.iter().map(|s| s / fastest).collect();
        let full = relative.iter().filter(|&&r| r >= 1.0 - SLOWER).count();
        let slowed: Vec<f64> = relative
            .iter()
            .copied()
            .filter(|&r| r < 1.0 - SLOWER)
            .collect();
        let typical = match oslab_core::stats::Summary::new(&slowed) {
            Some(s) => format!(
                "; slowed, it ran at {:.0}% of full speed (median)",
                100.0 * s.median
            ),
            None => String::new(),
        };
        let note = format!(
            "a fixed loop timed before every probe attempt, relative to the fastest of the run: {full} of {} checks ({:.0}%) at full speed (within {:.0}% of the fastest){typical}",
            relative.len(),
            100.0 * full as f64 / relative.len() as f64,
            100.0 * SLOWER
        );
        let mut speed = judged(
            HOST,
            Map::new(),
            "core_speed",
            Unit::Ratio,
            &relative,
            Some(note),
            Judge::Subject,
        );
        let mut steal = judged(
            HOST,
            Map::new(),
            "steal",
            Unit::Share,
            &self.steals,
            Some("share of the measuring cpu's time the hypervisor gave to others (/proc/stat steal), per probe attempt".into()),
            Judge::Subject,
        );
        for m in [&mut speed, &mut steal] {
            m.no_model = Some(HOST_NO_MODEL.into());
        }
        [speed, steal]
            .into_iter()
            .filter(|m| m.summary.is_some())
            .collect()
    }

    fn core_speed(&self) -> Option<Warning> {
        let fastest = self.core_speeds.iter().copied().fold(0.0, f64::max);
        let slowest = self
            .core_speeds
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        let slowed = |s: &&f64| **s < fastest * (1.0 - SLOWER);
        let checks = self.core_speeds.iter().filter(slowed).count();
        if checks == 0 {
            return None;
        }
        Some(Warning::new(
            "core-speed",
            format!(
                "the measuring core's speed varied over the run: a fixed loop of integer additions, timed before every probe, ran at {slowest:.1} to {fastest:.1} billion a second (the slowest {:.0}% of the fastest; more than {:.0}% slower at {checks} of {} checks): another guest on the same physical core or a clock change slowed part of the run; samples taken while it ran slow are left out of most measurements (not of bandwidth passes), but set-up, caches and memory traffic still vary",
                100.0 * slowest / fastest,
                100.0 * SLOWER,
                self.core_speeds.len(),
            ),
            "measure on a core of its own (no shared SMT sibling) at a fixed clock; compare runs as groups of several (`oslab compare 1,3,5 2,4,6`), whose band widens to their drift",
        ))
    }
}

/// Runs `probes` in order, `repetitions` times over (at least once), then measures noisy ones
/// again while the harness's retry budget lasts, and never past the suite's time target (one per
/// repetition).
pub fn run(
    probes: &[&'static Probe],
    repetitions: u32,
    cx: &Context,
    sink: &mut dyn Sink,
) -> Outcome {
    let started = Instant::now();
    let mut outcome = Outcome::default();
    // Per probe and repetition: its results and what one attempt cost.
    let mut done: Vec<(&'static Probe, Vec<Measurement>, Duration)> = Vec::new();
    let total = probes.len() * repetitions.max(1) as usize;
    outcome.planned = total;
    for line in cx.harness.config.describe() {
        detail(&line);
    }
    'passes: for repetition in 1..=repetitions.max(1) {
        for probe in probes {
            sink.started(probe, done.len(), total);
            let began = Instant::now();
            let Some(mut results) = attempt(probe, cx, &mut outcome) else {
                outcome.interrupted = true;
                break 'passes;
            };
            for m in &mut results {
                m.repetition = repetition;
            }
            sink.finished(probe, &results);
            detail(&format!(
                "{} (repetition {repetition}) took {:.2} s: {}",
                probe.id(),
                began.elapsed().as_secs_f64(),
                statuses(&results)
            ));
            done.push((probe, results, began.elapsed()));
        }
    }
    if !outcome.interrupted {
        let budget = retry_budget(&cx.harness.config, repetitions, started.elapsed());
        outcome.interrupted = retry_noisy(&mut done, cx, sink, budget, &mut outcome);
        outcome.not_retried = done
            .iter()
            .filter(|(_, r, _)| r.iter().any(|m| m.status.is_noisy() && m.attempts == 1))
            .map(|(p, _, _)| p.id())
            .collect();
        let mut named = std::collections::HashSet::new();
        outcome.not_retried.retain(|p| named.insert(*p));
    }
    // A probe whose kept results are contended, with the why of its last contended attempt.
    outcome.contended = done
        .iter()
        .filter(|(_, r, _)| r.iter().any(|m| m.status.is_contended()))
        .filter_map(|(p, _, _)| {
            let (_, why) = outcome
                .contended_attempts
                .iter()
                .rev()
                .find(|(id, _)| *id == p.id())?;
            Some((p.id(), why.clone()))
        })
        .collect();
    // A probe contended in several repetitions is named once.
    let mut named = std::collections::HashSet::new();
    outcome.contended.retain(|(p, _)| named.insert(*p));
    outcome.measurements = done.into_iter().flat_map(|(_, r, _)| r).collect();
    // Every measurement gets its prediction from the machine model, read now on the measuring
    // cpu (the core clock is measured there) with everything the run measured at hand.
    let spec = crate::spec::read(cx.fingerprint, cx.cpu, cx.options.memory.as_deref());
    oslab_model::predict(&spec, &mut outcome.measurements);
    // The host rows have no model by nature, said as such (after the model, which would say
    // it has none for them yet).
    let host = outcome.host();
    outcome.measurements.extend(host);
    outcome
}

/// Says a decision of the runner's (`-v`).
fn detail(message: &str) {
    oslab_core::notices::detail("harness", message);
}

/// How many of `results` are ok, noisy (by cause), skipped and failed, in words.
fn statuses(results: &[Measurement]) -> String {
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for m in results {
        let key = match &m.status {
            Status::Noisy(why) => format!("noisy ({why})"),
            s => s.word().to_string(),
        };
        *counts.entry(key).or_default() += 1;
    }
    let parts: Vec<String> = counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
    parts.join(", ")
}

/// Time left for retries after the passes took `elapsed`: the retry budget, but never past the
/// suite's time target (one per repetition).
fn retry_budget(config: &HarnessConfig, repetitions: u32, elapsed: Duration) -> Duration {
    let target = config.suite_target * repetitions.max(1);
    config.retry_budget.min(target.saturating_sub(elapsed))
}

/// The note of a result measured across a stop of oslab.
const STOPPED_NOTE: &str =
    "oslab was stopped (SIGSTOP, Ctrl-Z) while measuring it: the pause is in its samples; measure again";

/// Starts the note of a result measured while other work competed.
const CONTENDED: &str = "measured while the machine was busy: ";

/// One attempt at a probe: its results, or `None` when the user stopped us. Results measured
/// while other work competed are marked noisy, saying why. The core's speed before it goes to
/// `host`, with the steal time during it.
fn attempt(probe: &Probe, cx: &Context, host: &mut Outcome) -> Option<Vec<Measurement>> {
    host.core_speeds.push(core_speed());
    let stops = oslab_os::signals::continued();
    let before = Snapshot::take();
    let mut results = match run_one(probe, cx) {
        Ok(r) => r,
        Err(ProbeError::Interrupted) => return None,
        Err(ProbeError::Unsupported(why)) => vec![whole_probe(probe, Status::Skipped(why))],
        Err(ProbeError::Failed(why)) => vec![whole_probe(probe, Status::Failed(why))],
    };
    let competed = before
        .zip(Snapshot::take())
        .and_then(|(a, b)| a.until(&b, cx.cpu));
    if let Some(c) = &competed {
        host.steals.push(c.steal);
    }
    if let Some(c) = &competed {
        // Recorded whether or not it counts as contention: a comparison tells one load from
        // another by it, busy on both sides.
        let cpus = (c.other_work() * 10.0).round() / 10.0;
        for m in results.iter_mut().filter(|m| m.status.has_value()) {
            m.context.insert(OTHER_WORK.into(), cpus.into());
        }
    }
    let contended = competed.and_then(|c| c.for_probe(probe.id()).reason());
    if oslab_os::signals::continued() != stops {
        // A stop (SIGSTOP, Ctrl-Z) is in these samples: it is neither the machine's cost nor
        // other work's, and says so (a 10 s stop read as `contention`).
        for m in results.iter_mut().filter(|m| m.status.has_value()) {
            m.status = Status::Noisy(Cause::Stopped);
            m.note = Some(match m.note.take() {
                Some(n) => format!("{STOPPED_NOTE}; {n}"),
                None => STOPPED_NOTE.to_string(),
            });
        }
    } else if let Some(why) = contended {
        host.contended_attempts.push((probe.id(), why.clone()));
        for m in results.iter_mut().filter(|m| m.status.has_value()) {
            m.status = Status::Noisy(Cause::Contention);
            m.note = Some(match m.note.take() {
                Some(n) => format!("{CONTENDED}{why}; {n}"),
                None => format!("{CONTENDED}{why}"),
            });
        }
    }
    mark_slowed(&mut results);
    Some(results)
}

/// Results whose samples were all kept though the core ran slow around most of them (another
/// guest on its physical core, a clock change) are, like results measured under contention, not
/// `ok`: they are noisy, and measured again while the retry budget lasts.
fn mark_slowed(results: &mut [Measurement]) {
    for m in results.iter_mut() {
        if m.status == Status::Ok && m.slowed_core() {
            m.status = Status::Noisy(Cause::SlowedCore);
        }
    }
}

/// Passes over the probes with noisy results, cheapest first, while the budget allows another
/// attempt of that probe. Returns whether the user stopped us.
fn retry_noisy(
    done: &mut [(&'static Probe, Vec<Measurement>, Duration)],
    cx: &Context,
    sink: &mut dyn Sink,
    budget: Duration,
    host: &mut Outcome,
) -> bool {
    let started = Instant::now();
    for attempt_no in 2..=MAX_ATTEMPTS {
        let mut order: Vec<usize> = (0..done.len())
            .filter(|&i| done[i].1.iter().any(|m| m.status.is_noisy()))
            .collect();
        order.sort_by_key(|&i| done[i].2);
        for i in order {
            let (probe, ref mut kept, cost) = done[i];
            let left = budget.saturating_sub(started.elapsed());
            if cost > left {
                detail(&format!(
                    "{} not measured again (attempt {attempt_no}): it takes {:.2} s, {:.2} s of the retry budget left",
                    probe.id(),
                    cost.as_secs_f64(),
                    left.as_secs_f64()
                ));
                continue;
            }
            sink.retrying(probe, attempt_no);
            let Some(again) = attempt(probe, cx, host) else {
                return true;
            };
            merge_attempt(kept, again, attempt_no);
            detail(&format!(
                "{} measured again (attempt {attempt_no}), the better supported kept: {}",
                probe.id(),
                statuses(kept)
            ));
        }
    }
    false
}

/// Keeps, for each measurement of `kept`, the better supported of it and the same measurement
/// (probe, params, metric) in `again`; every matched measurement records `attempt` attempts.
/// A probe with figures derived from its others (cache levels from the latency curve, fork's
/// cost per MiB from its sweep: a summary without samples of its own) is kept or replaced whole:
/// "L3 latency" once read 9.75 ns from one attempt's points beside another attempt's curve,
/// which put L3 at 17-31 ns.
pub fn merge_attempt(kept: &mut Vec<Measurement>, again: Vec<Measurement>, attempt: u32) {
    let repetition = kept.first().map_or(1, |m| m.repetition);
    let derived = |ms: &[Measurement]| {
        ms.iter()
            .any(|m| m.summary.is_some() && m.samples.is_none())
    };
    if derived(kept) || derived(&again) {
        let whole = |ms: &[Measurement]| {
            let rank: u32 = ms.iter().map(|m| u32::from(support(m).0)).sum();
            let width: f64 = ms
                .iter()
                .map(|m| support(m).1)
                .filter(|w| w.is_finite())
                .sum();
            (rank, width)
        };
        let (new, old) = (whole(&again), whole(kept));
        if new.0 > old.0 || (new.0 == old.0 && new.1 > old.1) {
            *kept = again;
        }
        for m in kept.iter_mut() {
            m.repetition = repetition;
            m.attempts = attempt;
        }
        return;
    }
    for mut new in again {
        new.repetition = repetition;
        let Some(old) = kept
            .iter_mut()
            .find(|m| m.probe == new.probe && m.metric == new.metric && m.params == new.params)
        else {
            continue;
        };
        let better = support(&new) > support(old);
        if better {
            *old = new;
        }
        old.attempts = attempt;
    }
}

/// How well a result is supported: measured beats not, `ok` beats `noisy`, then the narrower
/// relative interval.
fn support(m: &Measurement) -> (u8, f64) {
    let rank = match m.status {
        Status::Ok => 3,
        Status::Noisy(_) => 2,
        Status::Failed(_) => 1,
        Status::Skipped(_) => 0,
    };
    let width = m.summary.as_ref().map_or(f64::INFINITY, |s| {
        (s.ci_high - s.ci_low) / s.median.abs().max(f64::MIN_POSITIVE)
    });
    (rank, -width)
}

/// Why a probe cannot run here at all (`PeerCpu` only limits parts, so it never gates).
pub fn gate(probe: &Probe, environment: &Environment, peer_cpu: Option<usize>) -> Option<String> {
    probe
        .needs
        .iter()
        .filter(|n| **n != Need::PeerCpu)
        .find_map(|n| unmet(*n, environment, peer_cpu))
}

fn run_one(probe: &Probe, cx: &Context) -> Result<Vec<Measurement>, ProbeError> {
    if let Some(why) = gate(probe, cx.environment, cx.peer_cpu) {
        return Err(ProbeError::Unsupported(why));
    }
    match catch_unwind(AssertUnwindSafe(|| (probe.run)(cx, probe.entry))) {
        Ok(Ok(r)) => match off_catalog(probe.entry, &r) {
            Some(why) => Err(ProbeError::Failed(format!("a bug in oslab: {why}"))),
            None => Ok(marked_if_slowed(r)),
        },
        Ok(Err(e)) => Err(e),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(ProbeError::Failed(format!("panicked: {msg}")))
        }
    }
}

/// Rows measured with the test-only slowdown on say so: a release binary honours the variable
/// (the tests and scripts/false-alarms run it), so the run must never pass it off as the machine.
fn marked_if_slowed(mut rows: Vec<Measurement>) -> Vec<Measurement> {
    let extra = crate::harness::extra_work();
    if extra > 0 {
        for m in &mut rows {
            m.note_before(format!(
                "every timed body ran {} times ({}={extra}): a slowdown made on purpose, not the machine's",
                extra + 1,
                crate::harness::EXTRA_WORK_VAR
            ));
        }
    }
    rows
}

/// The first of `results` that is not what the catalog says `entry` measures: another probe's
/// id, a metric it does not list, or a unit other than its metric's.
pub fn off_catalog(entry: &Entry, results: &[Measurement]) -> Option<String> {
    results.iter().find_map(|m| {
        let metric = entry.metric(&m.metric);
        if m.probe != entry.id {
            Some(format!(
                "{} returned a measurement under the id {:?}",
                entry.id, m.probe
            ))
        } else if metric.is_none() {
            Some(format!(
                "{} returned the metric {:?}, which the catalog does not list",
                entry.id, m.metric
            ))
        } else {
            metric.filter(|x| x.unit != m.unit).map(|x| {
                format!(
                    "{} returned {} in {:?}; the catalog says {:?}",
                    entry.id, m.metric, m.unit, x.unit
                )
            })
        }
    })
}

fn whole_probe(probe: &Probe, status: Status) -> Measurement {
    Measurement::not_taken(probe.id(), Map::new(), "-", probe.entry.unit, status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_core::model::Unit;
    use oslab_core::params;
    use oslab_core::stats::Summary;

    fn m(k: usize, status: Status, samples: &[f64]) -> Measurement {
        let mut m = Measurement::not_taken("p.x", params! {"k" => k}, "t", Unit::Ns, status);
        m.summary = Summary::new(samples);
        m.samples = Some(samples.to_vec());
        m
    }

    #[test]
    fn a_measurement_off_its_probes_catalog_entry_is_named() {
        use oslab_core::catalog::{self, id, metric};
        let entry = &catalog::SYSCALL_GETPPID;
        let ok = |probe: &str, metric: &str, unit| {
            Measurement::not_taken(probe, params! {}, metric, unit, Status::Ok)
        };
        let own = ok(id::SYSCALL_GETPPID, metric::PER_CALL, Unit::Ns);
        assert_eq!(off_catalog(entry, std::slice::from_ref(&own)), None);
        for (wrong, says) in [
            (
                ok(id::SYSCALL_GETPID, metric::PER_CALL, Unit::Ns),
                "under the id",
            ),
            (
                ok(id::SYSCALL_GETPPID, "per_cal", Unit::Ns),
                "does not list",
            ),
            (
                ok(id::SYSCALL_GETPPID, metric::PER_CALL, Unit::Cycles),
                "the catalog says",
            ),
        ] {
            let why = off_catalog(entry, &[own.clone(), wrong]).unwrap();
            assert!(why.contains(says), "{why}");
        }
    }

    #[test]
    fn a_core_that_slowed_during_the_run_is_named_in_a_warning() {
        let steady = Outcome {
            core_speeds: vec![5.5, 5.0, 5.3],
            ..Outcome::default()
        };
        assert!(steady.warnings().is_empty());
        let shared = Outcome {
            core_speeds: vec![5.5, 5.4, 3.2, 3.3, 5.5],
            ..Outcome::default()
        };
        let w = shared.warnings();
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].kind, "core-speed");
        let m = &w[0].message;
        assert!(
            m.contains("3.2 to 5.5 billion") && m.contains("58% of the fastest"),
            "{m}"
        );
        assert!(m.contains("slower at 2 of 5 checks)"), "{m}");
    }

    #[test]
    fn the_host_s_interference_is_a_measured_figure() {
        let few = Outcome {
            core_speeds: vec![5.5, 5.0, 5.3],
            planned: 3,
            ..Outcome::default()
        };
        assert!(few.host().is_empty(), "three checks tell little");
        // Nine probe runs and a retry: ten checks, still no host rows (a retry must not add rows).
        let retried = Outcome {
            core_speeds: vec![5.5; 10],
            planned: 9,
            ..Outcome::default()
        };
        assert!(retried.host().is_empty());
        let shared = Outcome {
            planned: 10,
            core_speeds: vec![5.5, 5.4, 2.75, 3.3, 5.5, 5.45, 5.5, 5.5, 5.5, 5.5],
            steals: vec![0.0, 0.1, 0.3, 0.0, 0.0],
            ..Outcome::default()
        };
        let host = shared.host();
        let speed = host.iter().find(|m| m.metric == "core_speed").unwrap();
        let s = speed.summary.as_ref().unwrap();
        assert!(s.max <= 1.0 && (s.min - 0.5).abs() < 1e-9, "{s:?}");
        let note = speed.note.as_deref().unwrap();
        assert!(
            note.contains("8 of 10 checks (80%) at full speed"),
            "{note}"
        );
        assert!(
            note.contains("slowed, it ran at 55% of full speed"),
            "{note}"
        );
        let steal = host.iter().find(|m| m.metric == "steal").unwrap();
        assert_eq!(steal.summary.as_ref().unwrap().n, 5);
        assert!(host.iter().all(|m| m.probe == HOST && m.no_model.is_some()));
    }

    #[test]
    fn a_result_measured_on_a_slowed_core_is_noisy() {
        let tight = [4.0, 4.1, 4.0, 4.05, 3.95, 4.0];
        let mut results = vec![m(0, Status::Ok, &tight), m(1, Status::Ok, &tight)];
        results[0].note = Some(format!("probe note; {}", crate::gate::all_kept(9, 10)));
        results[1].note = Some("3 of 10 samples left out".into());
        mark_slowed(&mut results);
        assert_eq!(results[0].status, Status::Noisy(Cause::SlowedCore));
        assert_eq!(results[1].status, Status::Ok);
    }

    #[test]
    fn retries_never_run_past_the_suites_time_target() {
        let quick = HarnessConfig::quick(); // 1.5 s of retries, 15 s target
        let s = Duration::from_secs_f64;
        assert_eq!(retry_budget(&quick, 1, s(10.0)), s(1.5));
        assert_eq!(retry_budget(&quick, 1, s(14.0)), s(1.0));
        assert_eq!(retry_budget(&quick, 1, s(25.0)), Duration::ZERO);
        // Three repetitions: three targets.
        assert_eq!(retry_budget(&quick, 3, s(44.5)), s(0.5));
    }

    #[test]
    fn a_retry_keeps_the_better_supported_result_and_counts_attempts() {
        let wide = [1.0, 5.0, 2.0, 9.0, 3.0, 7.0];
        let tight = [4.0, 4.1, 4.0, 4.05, 3.95, 4.0];
        let mut kept = vec![
            m(0, Status::Noisy(Cause::Spread), &wide),
            m(1, Status::Ok, &tight),
        ];
        let again = vec![
            m(0, Status::Ok, &tight),
            m(1, Status::Noisy(Cause::Spread), &wide),
            m(2, Status::Ok, &tight), // not in the first attempt: ignored
        ];
        merge_attempt(&mut kept, again, 2);
        assert_eq!(kept.len(), 2);
        assert_eq!((kept[0].status.clone(), kept[0].attempts), (Status::Ok, 2));
        assert_eq!(kept[0].summary.as_ref().unwrap().median, 4.0);
        assert_eq!((kept[1].status.clone(), kept[1].attempts), (Status::Ok, 2));
        // Equal status: the narrower interval wins.
        let mut kept = vec![m(0, Status::Noisy(Cause::Spread), &wide)];
        merge_attempt(
            &mut kept,
            vec![m(
                0,
                Status::Noisy(Cause::Spread),
                &[1.0, 9.0, 1.0, 9.0, 1.0, 30.0],
            )],
            3,
        );
        assert_eq!(kept[0].summary.as_ref().unwrap().max, 9.0);
        assert_eq!(kept[0].attempts, 3);
    }

    #[test]
    fn a_probe_with_derived_figures_is_kept_or_replaced_whole() {
        let wide = [1.0, 5.0, 2.0, 9.0, 3.0, 7.0];
        let tight = [4.0, 4.1, 4.0, 4.05, 3.95, 4.0];
        let derived = |v: f64| {
            let mut d = m(9, Status::Ok, &[v]);
            d.samples = None;
            d
        };
        // The second attempt's curve is better on the whole: its derived row comes with it.
        let mut kept = vec![
            m(0, Status::Noisy(Cause::Spread), &wide),
            m(1, Status::Ok, &tight),
            derived(1.0),
        ];
        let again = vec![
            m(0, Status::Ok, &tight),
            m(1, Status::Ok, &tight),
            derived(2.0),
        ];
        merge_attempt(&mut kept, again, 2);
        assert_eq!(kept[2].summary.as_ref().unwrap().median, 2.0);
        assert!(kept
            .iter()
            .all(|m| m.attempts == 2 && m.status == Status::Ok));
        // Worse on the whole: nothing of it is taken, not even its one better row.
        let again = vec![
            m(0, Status::Noisy(Cause::Spread), &wide),
            m(1, Status::Noisy(Cause::Spread), &wide),
            derived(3.0),
        ];
        merge_attempt(&mut kept, again, 3);
        assert_eq!(kept[2].summary.as_ref().unwrap().median, 2.0);
        assert_eq!(kept[0].status, Status::Ok);
    }
}
