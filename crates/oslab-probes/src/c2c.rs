//! Core-to-core latency: how long a cache line takes to go from one cpu to another. Two threads,
//! pinned to the two cpus, hand one line back and forth with compare-and-swap: the first moves the
//! counter from even to odd, the second from odd to even, each spinning until the other's write
//! arrives. A round trip is two hand-overs; the one-way latency is half a round trip (the method
//! of the core-to-core latency tools users compare with). The line is aligned and alone in its
//! 128-byte pair, so the adjacent-line prefetcher drags nothing else along.
//!
//! `c2c.latency` measures the measuring cpu and its peer in the suite; [`matrix`] measures every
//! pair of a cpu list (or a sample of the pairs on big machines) for `oslab c2c`.

use crate::harness::check_interrupt;
use crate::probe::{Context, Probe, ProbeError};
use oslab_core::catalog::{self, Entry};
use oslab_core::model::{judged, Judge, Measurement, Unit};
use oslab_core::pace::Pace;
use oslab_core::{params, CpuSet, Topology};
use oslab_os::affinity::AffinityGuard;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// The probe.
pub const PROBES: &[Probe] = &[Probe {
    entry: &catalog::C2C_LATENCY,
    needs: &[crate::probe::Need::PeerCpu],
    cost: 1.0,
    plan: Some(plan),
    run: suite,
}];

/// The line the two threads hand over, alone in its 128-byte pair.
#[repr(C, align(128))]
struct Line {
    counter: AtomicU64,
    _pad: [u8; 120],
}

/// How long to measure one pair: bursts of `round_trips` until `time` is spent, at least
/// [`MIN_BURSTS`] and at most [`MAX_BURSTS`] of them.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Time to spend on the pair.
    pub time: std::time::Duration,
    /// Round trips per burst (a sample).
    pub round_trips: u64,
}

/// Fewest samples per pair.
pub const MIN_BURSTS: usize = 15;
/// Most samples per pair.
pub const MAX_BURSTS: usize = 201;

impl Budget {
    /// The harness's time per measurement, 1000 round trips per sample.
    pub fn of(config: &crate::HarnessConfig) -> Budget {
        Budget {
            time: config.budget,
            round_trips: 1000,
        }
    }
}

fn plan(cx: &Context) -> crate::probe::Plan {
    let n = cx.allowed.len();
    let what = match cx.peer_cpu {
        Some(peer) => format!(
            "cpu {} and cpu {peer} ({}); `oslab c2c` measures all {}",
            cx.cpu,
            cx.topology.pair_class(cx.cpu, peer),
            oslab_core::units::counted(n * (n - 1) / 2, "pair")
        ),
        None => "nothing: needs a second cpu".into(),
    };
    crate::probe::Plan { what, work: 1.0 }
}

fn suite(cx: &Context, _: &'static Entry) -> Result<Vec<Measurement>, ProbeError> {
    let peer = cx
        .peer_cpu
        .ok_or_else(|| ProbeError::Unsupported("needs a second cpu".into()))?;
    Ok(vec![pair(
        cx.topology,
        cx.cpu,
        peer,
        Budget::of(&cx.harness.config),
    )?])
}

/// The one-way latency from `a` to `b` (and back: the line makes the round trip), measured by
/// two threads pinned to them.
pub fn pair(
    topology: &Topology,
    a: usize,
    b: usize,
    budget: Budget,
) -> Result<Measurement, ProbeError> {
    let samples = ping_pong(a, b, budget)?;
    Ok(latency(
        (a, b),
        &topology.pair_class(a, b),
        &samples,
        budget.round_trips,
    ))
}

/// The one-way latency of a pair from its bursts (ns per hand-over), judged as every median is.
fn latency((a, b): (usize, usize), class: &str, samples: &[f64], round_trips: u64) -> Measurement {
    let mut m = judged(
        catalog::id::C2C_LATENCY,
        params! {"from" => a, "to" => b, "class" => class},
        "one_way",
        Unit::Ns,
        samples,
        Some(format!(
            "half of a compare-and-swap round trip (a locked read-modify-write, as core-to-core-latency's CAS test; a hand-over by plain loads and stores, as rigtorp's c2clat makes it, reads 10-25% lower); {} samples of {round_trips} round trips",
            samples.len(),
        )),
        Judge::Median,
    );
    m.batch = Some(round_trips * 2);
    m
}

/// Per burst, the time of one hand-over in ns.
fn ping_pong(a: usize, b: usize, budget: Budget) -> Result<Vec<f64>, ProbeError> {
    let line = Box::new(Line {
        counter: AtomicU64::new(0),
        _pad: [0; 120],
    });
    let stop = AtomicBool::new(false);
    // The measuring thread pins itself first; the responder starts on the same cpu (it inherits
    // the affinity, and a real-time priority), so the measuring thread waits, blocked, until the
    // responder has moved to its own cpu: spinning before that would never let it run.
    let _pin = AffinityGuard::pin_current(&CpuSet::single(a))
        .map_err(|e| ProbeError::Failed(e.to_string()))?;
    let (placed, on_cpu) = std::sync::mpsc::channel::<Result<(), String>>();
    std::thread::scope(|s| {
        let line = &*line;
        let stop = &stop;
        let responder = s.spawn(move || -> Result<(), ProbeError> {
            let pin = AffinityGuard::pin_current(&CpuSet::single(b)).map_err(|e| e.to_string());
            let _ = placed.send(pin.as_ref().map(|_| ()).map_err(Clone::clone));
            let _pin = pin.map_err(ProbeError::Failed)?;
            for i in 0.. {
                let (odd, even) = (2 * i + 1, 2 * i + 2);
                while line
                    .counter
                    .compare_exchange(odd, even, Ordering::AcqRel, Ordering::Relaxed)
                    .is_err()
                {
                    if stop.load(Ordering::Relaxed) {
                        return Ok(());
                    }
                    std::hint::spin_loop();
                }
            }
            Ok(())
        });
        let measured = (|| -> Result<Vec<f64>, ProbeError> {
            on_cpu
                .recv()
                .map_err(|_| ProbeError::Failed("the responding thread did not start".into()))?
                .map_err(ProbeError::Failed)?;
            let mut out = Vec::with_capacity(MIN_BURSTS);
            let began = Instant::now();
            // The first burst warms up (both threads running, the line in place); not kept.
            for burst in 0.. {
                check_interrupt()?;
                let spent = began.elapsed() >= budget.time;
                if out.len() >= MAX_BURSTS || (out.len() >= MIN_BURSTS && spent) {
                    break;
                }
                let t = Instant::now();
                for k in 0..budget.round_trips {
                    let i = burst * budget.round_trips + k;
                    let (even, odd) = (2 * i, 2 * i + 1);
                    while line
                        .counter
                        .compare_exchange(even, odd, Ordering::AcqRel, Ordering::Relaxed)
                        .is_err()
                    {
                        if responder.is_finished() {
                            return Err(ProbeError::Failed("the responding thread stopped".into()));
                        }
                        std::hint::spin_loop();
                    }
                }
                let ns = t.elapsed().as_nanos() as f64;
                if burst > 0u64 {
                    out.push(ns / (2 * budget.round_trips) as f64);
                }
            }
            Ok(out)
        })();
        stop.store(true, Ordering::Relaxed);
        let answered = responder
            .join()
            .map_err(|_| ProbeError::Failed("the responding thread panicked".into()))?;
        let out = measured?;
        answered?;
        Ok(out)
    })
}

/// What `oslab c2c` asks: which pairs, how long on each.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct Request {
    /// The cpus whose pairs to measure (a list like "0-7,16" or "node:0"; default: every cpu we
    /// may use).
    #[cfg_attr(feature = "clap", arg(long, value_name = "LIST"))]
    pub cpus: Option<String>,
    /// Measure at most N pairs (every topology class first, then pairs spread over the rest).
    /// Default: as many as fit in about a minute (15 s with --quick), every pair on a small
    /// machine; the output says when pairs were sampled.
    #[cfg_attr(feature = "clap", arg(long, value_name = "N",
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000)))]
    pub sample: Option<usize>,
    /// Shorter budgets per pair.
    #[cfg_attr(feature = "clap", arg(long))]
    pub quick: bool,
}

/// The cpus whose pairs `oslab c2c` measures: the cpu list `list` (a list like "0-7,16" or
/// "node:0"), else every cpu in `allowed`; at least two, all in `allowed`.
fn chosen_cpus(
    list: Option<&str>,
    topology: &Topology,
    allowed: &CpuSet,
) -> Result<CpuSet, String> {
    let cpus = match list {
        Some(list) => CpuSet::parse(list, topology)
            .map_err(|e| format!("--cpus {}: {e}", oslab_core::text::shortened(list, 60)))?,
        None => allowed.clone(),
    };
    if let Some(outside) = cpus.iter().find(|&c| !allowed.contains(c)) {
        return Err(format!(
            "--cpus: cpu {outside} is not in our affinity mask ({})",
            allowed.to_list()
        ));
    }
    if cpus.len() < 2 {
        return Err(format!(
            "core-to-core latency needs two cpus; {} has {}",
            cpus.to_list(),
            cpus.len()
        ));
    }
    Ok(cpus)
}

/// What `oslab c2c` will measure: which pairs, for how long each, until when.
pub struct Chosen {
    /// The pairs, in the order they are measured.
    pub pairs: Vec<(usize, usize)>,
    /// How many pairs `cpus` has in all.
    pub total: usize,
    /// The time on each pair.
    pub budget: Budget,
    /// Without `--sample`: the time target, which holds however slow a pair turns out (an
    /// emulated cpu).
    pub deadline: Option<std::time::Duration>,
}

impl Chosen {
    /// Seconds the pairs take at their budget.
    pub fn seconds(&self) -> f64 {
        self.pairs.len() as f64 * self.budget.time.as_secs_f64().max(0.01)
    }
}

impl Request {
    /// The budgets `--quick` asks for.
    pub fn pace(&self) -> Pace {
        Pace::of(self.quick)
    }

    /// The pairs of `cpus` to measure: `--sample` of them, or without it a big machine's pairs
    /// (2016 for 64 cpus) sampled to what fits the time a suite allows (every topology class
    /// first, then pairs spread over the rest).
    /// Refused with why when the cpus asked for are not ours or fewer than two
    /// ([`chosen_cpus`]).
    pub fn chosen(&self, topology: &Topology, allowed: &CpuSet) -> Result<Chosen, String> {
        let cpus = &chosen_cpus(self.cpus.as_deref(), topology, allowed)?;
        let budget = Budget::of(&crate::HarnessConfig::suite(self.pace()));
        let per_pair = budget.time.as_secs_f64().max(0.01);
        let target = default_seconds(self.pace());
        let fits = ((target / per_pair) as usize).max(2);
        let (pairs, total) = pairs(topology, cpus, self.sample.or(Some(fits)));
        let deadline = self
            .sample
            .is_none()
            .then(|| std::time::Duration::from_secs_f64(target));
        Ok(Chosen {
            pairs,
            total,
            budget,
            deadline,
        })
    }
}

/// How long `oslab c2c` without `--sample` may take: pairs beyond it are sampled.
pub fn default_seconds(pace: Pace) -> f64 {
    match pace {
        Pace::Quick => 15.0,
        Pace::Full => 60.0,
    }
}

/// The pairs of `cpus` (each unordered pair once), or when there are more than `sample`, a
/// sample of them in the order they are to be measured (a deadline keeps the first): one pair of
/// every distance class first, on cpus not yet used where it can, then rounds of a round-robin
/// tournament, each pairing every cpu once: every cpu is measured once before any twice (a
/// sorted sample cut by the deadline measured 14 pairs, 13 of them from cpu 0 or 1).
pub fn pairs(
    topology: &Topology,
    cpus: &CpuSet,
    sample: Option<usize>,
) -> (Vec<(usize, usize)>, usize) {
    let list: Vec<usize> = cpus.iter().collect();
    let mut all = Vec::new();
    for (i, &a) in list.iter().enumerate() {
        for &b in &list[i + 1..] {
            all.push((a, b));
        }
    }
    let total = all.len();
    let Some(n) = sample.filter(|&n| n < total) else {
        return (all, total);
    };
    let mut chosen: Vec<(usize, usize)> = Vec::new();
    let mut used = std::collections::BTreeSet::new();
    let mut classes: Vec<String> = Vec::new();
    for fresh in [true, false] {
        for &(a, b) in &all {
            let c = topology.pair_class(a, b);
            let unused = !used.contains(&a) && !used.contains(&b);
            if !classes.contains(&c) && chosen.len() < n && (unused || !fresh) {
                classes.push(c);
                chosen.push((a, b));
                used.extend([a, b]);
            }
        }
    }
    // Then in laps: a pair joins lap L only while both its cpus are in fewer than L pairs.
    let mut taken: std::collections::HashSet<(usize, usize)> = chosen.iter().copied().collect();
    let mut count: std::collections::HashMap<usize, usize> = Default::default();
    for &(a, b) in &chosen {
        *count.entry(a).or_default() += 1;
        *count.entry(b).or_default() += 1;
    }
    let mut lap = 1;
    while chosen.len() < n {
        for p in round_robin(&list) {
            if chosen.len() == n {
                break;
            }
            let room = |c: usize| count.get(&c).copied().unwrap_or(0) < lap;
            if !taken.contains(&p) && room(p.0) && room(p.1) {
                taken.insert(p);
                chosen.push(p);
                *count.entry(p.0).or_default() += 1;
                *count.entry(p.1).or_default() += 1;
            }
        }
        lap += 1;
    }
    (chosen, total)
}

/// Every pair of `cpus` once, in rounds that pair each cpu once (the circle method: one cpu
/// stays, the others turn); with an odd count one cpu sits out each round.
fn round_robin(cpus: &[usize]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let n = cpus.len() + cpus.len() % 2; // a bye when odd
    let at = move |i: usize| cpus.get(i).copied();
    (0..n.saturating_sub(1)).flat_map(move |round| {
        let turning = n - 1;
        let seat = move |k: usize| (round + k) % turning;
        std::iter::once((seat(0), n - 1))
            .chain((1..n / 2).map(move |k| (seat(k), (round + turning - k) % turning)))
            .filter_map(move |(i, j)| match (at(i), at(j)) {
                (Some(a), Some(b)) => Some((a.min(b), a.max(b))),
                _ => None,
            })
    })
}

/// Every pair of `pairs` measured, in order, and whether Ctrl-C stopped it (what was measured
/// before is kept).
pub fn matrix(
    topology: &Topology,
    pairs: &[(usize, usize)],
    budget: Budget,
    deadline: Option<std::time::Instant>,
) -> Result<(Vec<Measurement>, bool), ProbeError> {
    let mut out = Vec::new();
    for &(a, b) in pairs {
        // Pairs come in sample order (every class first): stopping at the deadline keeps them.
        if deadline.is_some_and(|d| std::time::Instant::now() >= d) && out.len() >= 2 {
            break;
        }
        match pair(topology, a, b, budget) {
            Ok(m) => out.push(m),
            Err(ProbeError::Interrupted) => return Ok((out, true)),
            Err(e) => return Err(e),
        }
    }
    Ok((out, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_whose_bursts_disagree_is_noisy_with_its_reason() {
        let steady: Vec<f64> = (0..40).map(|k| 60.0 + (k % 3) as f64 * 0.1).collect();
        let m = latency((0, 1), "other core", &steady, 1000);
        assert!(m.status.has_value() && !m.status.is_noisy(), "{m:?}");
        // Half the bursts with the vcpus on one host core, half across sockets.
        let split: Vec<f64> = (0..40)
            .map(|k| if k % 2 == 0 { 25.0 } else { 220.0 })
            .collect();
        let m = latency((0, 1), "other core", &split, 1000);
        assert!(m.status.is_noisy(), "{m:?}");
        assert!(m.note.as_deref().unwrap_or("").contains("noisy:"), "{m:?}");
    }

    fn fake(packages: usize, cores: usize, threads: usize) -> (tempfile::TempDir, Topology) {
        let dir = tempfile::tempdir().unwrap();
        oslab_os::topology::write_fake_sysfs(dir.path(), packages, cores, threads, packages)
            .unwrap();
        let t = oslab_os::topology::read_from(dir.path()).unwrap();
        (dir, t)
    }

    #[test]
    fn pairs_of_a_fake_four_cpu_machine_fall_into_their_classes() {
        // 2 packages x 1 core x 2 threads: cpus 0,1 are the first threads, 2,3 their siblings.
        let (_d, t) = fake(2, 1, 2);
        let (all, total) = pairs(&t, &t.online(), None);
        assert_eq!(total, 6);
        assert_eq!(all.len(), 6);
        let classes: Vec<&str> = all.iter().map(|&(a, b)| t.distance_class(a, b)).collect();
        assert_eq!(
            classes.iter().filter(|c| **c == "SMT sibling").count(),
            2,
            "{classes:?}"
        );
        assert_eq!(
            classes.iter().filter(|c| **c == "other NUMA node").count(),
            4,
            "{classes:?}"
        );
    }

    #[test]
    fn a_sample_keeps_every_class_and_says_how_many_pairs_there_were() {
        let (_d, t) = fake(2, 4, 2);
        let (chosen, total) = pairs(&t, &t.online(), Some(5));
        assert_eq!(total, 16 * 15 / 2);
        assert!(chosen.len() <= 5 && chosen.len() >= 3, "{chosen:?}");
        let classes: std::collections::BTreeSet<&str> = chosen
            .iter()
            .map(|&(a, b)| t.distance_class(a, b))
            .collect();
        for c in ["SMT sibling", "shared L3", "other NUMA node"] {
            assert!(classes.contains(c), "{c} missing from {classes:?}");
        }
    }

    #[test]
    fn a_sample_covers_every_cpu_once_before_any_twice() {
        // 64 cpus in 8 nodes, 32 pairs: each cpu exactly once (a sorted sample was a star).
        let (_d, t) = fake(8, 8, 1);
        let (chosen, _) = pairs(&t, &t.online(), Some(32));
        let mut seen = std::collections::BTreeMap::<usize, usize>::new();
        for &(a, b) in &chosen {
            *seen.entry(a).or_default() += 1;
            *seen.entry(b).or_default() += 1;
        }
        assert_eq!(seen.len(), 64, "{chosen:?}");
        assert!(seen.values().all(|&n| n == 1), "{seen:?}");
        // The rounds hold every pair once.
        let cpus: Vec<usize> = (0..7).collect();
        let all: std::collections::BTreeSet<(usize, usize)> = round_robin(&cpus).collect();
        assert_eq!(all.len(), 21);
        assert!(all.iter().all(|(a, b)| a < b));
    }

    #[test]
    fn the_line_is_alone_in_its_pair() {
        assert_eq!(std::mem::align_of::<Line>(), 128);
        assert_eq!(std::mem::size_of::<Line>(), 128);
    }
}
