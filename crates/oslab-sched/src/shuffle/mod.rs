//! Shuffling : watch a multithreaded process's lock waits; when they pass a threshold, group
//! the threads and pin each group's threads to CPUs of one last-level-cache domain. Two
//! groupings ([`Grouping`]): the threads of one lock together (the lock is the futex word each
//! waits on), or, as the paper does, threads sorted by lock time and cut into as many groups as
//! there are domains (threads with similar lock times together). A thread moves only when its group's domain changes, so a new
//! order inside a domain costs nothing; a shuffle is an interval in which a thread moved. Threads
//! created later are placed at the next interval; threads that exit are dropped. Every affinity
//! changed is restored at the end.

pub mod eval;
pub mod live;
pub mod lockbench;
pub mod locks;
pub mod profile;
pub mod simulate;
pub mod study;

use locks::{Monitor, MonitorError, ThreadWait};
use oslab_core::affinity::{get_affinity, set_affinity};
use oslab_core::catalog::id;
use oslab_core::model::{judged, EventKind, Judge, Measurement, TimelineEvent, Unit};
use oslab_core::{params, pending, CpuSet, Topology};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The CPUs of `allowed`, grouped by last-level cache (by package when caches are unknown), in
/// CPU order.
pub fn domains(topology: &Topology, allowed: &CpuSet) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    for cpu in allowed.iter() {
        let llc = topology
            .caches_of(cpu)
            .into_iter()
            .max_by_key(|c| c.level)
            .map(|c| c.cpus.clone());
        let same = |other: usize| match &llc {
            Some(set) => set.contains(other),
            None => topology.cpu(other).map(|c| c.package) == topology.cpu(cpu).map(|c| c.package),
        };
        match out.iter_mut().find(|d| same(d[0])) {
            Some(d) => d.push(cpu),
            None => out.push(vec![cpu]),
        }
    }
    out
}

/// How much better (summed over groups, max minus min lock-wait fraction) a new grouping must
/// gather similar lock times than the present one before threads are moved for it.
pub const REGROUP_MARGIN: f64 = 0.10;

/// How the daemon groups threads. The default is the paper's (001, lock time); grouping by lock
/// is oslab's, to choose where locks are contended alike: on a recorded lockbench profile (two
/// mutexes) the paper's grouping gained nothing (-2.2% to +2.0%) and grouping by lock 8.5-10.3%
/// at 2-8 sockets (docs/shuffle-simulation.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Grouping {
    /// The threads of one lock (futex word) share a cache domain, as many as it has cpus; threads
    /// whose lock is unknown fill the emptiest domains.
    Lock,
    /// The paper's: sorted by lock-wait fraction and cut into one group per domain. It cannot
    /// tell two locks contended alike apart.
    #[default]
    LockTime,
}

impl Grouping {
    /// Its name, as `--grouping` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Grouping::Lock => "lock",
            Grouping::LockTime => "lock-time",
        }
    }
}

impl std::str::FromStr for Grouping {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "lock" => Ok(Grouping::Lock),
            "lock-time" => Ok(Grouping::LockTime),
            _ => Err(format!("{s:?}: expected lock or lock-time")),
        }
    }
}

/// A regrouping: threads cut into groups of similar lock time, most lock-bound first, at most
/// one group per domain.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// Thread groups, one per domain used.
    pub groups: Vec<Vec<i32>>,
    /// The process's lock-wait fraction that triggered it.
    pub lock_fraction: f64,
}

/// The process's lock-wait fraction: time waited over time observed, summed over its threads.
pub fn lock_fraction(waits: &[ThreadWait]) -> f64 {
    let (w, n) = waits.iter().fold((0.0, 0.0), |a, t| {
        (a.0 + t.waited.min(t.observed), a.1 + t.observed)
    });
    if n <= 0.0 {
        0.0
    } else {
        w / n
    }
}

/// Decides a regrouping, or None when lock waits stay below `threshold` (a fraction of thread
/// time) or there is nothing to place.
pub fn decide(waits: &[ThreadWait], domains: usize, threshold: f64) -> Option<Decision> {
    let fraction = lock_fraction(waits);
    if fraction < threshold || waits.is_empty() || domains == 0 {
        return None;
    }
    let mut sorted: Vec<&ThreadWait> = waits.iter().collect();
    sorted.sort_by(|a, b| {
        b.fraction()
            .total_cmp(&a.fraction())
            .then(a.tid.cmp(&b.tid))
    });
    let per = sorted.len().div_ceil(domains.min(sorted.len()));
    Some(Decision {
        groups: sorted
            .chunks(per)
            .map(|c| c.iter().map(|t| t.tid).collect())
            .collect(),
        lock_fraction: fraction,
    })
}

/// Threads of one lock together: each lock's threads, the most waited-for lock first, go to the
/// domain with the most free cpus (`sizes`), as many as it has free, the rest to the next such
/// domain; threads whose lock is unknown fill the emptiest domains last. Groups come in domain
/// order, empty ones left out. None below `threshold` or with nothing to place.
pub fn decide_by_lock(waits: &[ThreadWait], sizes: &[usize], threshold: f64) -> Option<Decision> {
    let fraction = lock_fraction(waits);
    if fraction < threshold || waits.is_empty() || sizes.is_empty() {
        return None;
    }
    let mut by_lock: BTreeMap<u64, (f64, Vec<i32>)> = BTreeMap::new();
    let mut unknown = Vec::new();
    for w in waits {
        match w.lock {
            Some(l) => {
                let e = by_lock.entry(l).or_default();
                e.0 += w.waited;
                e.1.push(w.tid);
            }
            None => unknown.push(w.tid),
        }
    }
    let mut locks: Vec<(f64, Vec<i32>)> = by_lock.into_values().collect();
    locks.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut groups: Vec<Vec<i32>> = vec![Vec::new(); sizes.len()];
    let free = |groups: &[Vec<i32>], k: usize| sizes[k] as i64 - groups[k].len() as i64;
    let emptiest = |groups: &[Vec<i32>]| {
        (0..sizes.len())
            .max_by_key(|&k| (free(groups, k), std::cmp::Reverse(k)))
            .expect("a domain")
    };
    for (_, mut tids) in locks {
        tids.sort_unstable();
        while !tids.is_empty() {
            let k = emptiest(&groups);
            // A full machine takes the rest where it is least crowded.
            let take = free(&groups, k).max(1) as usize;
            let rest = tids.split_off(take.min(tids.len()));
            groups[k].extend(tids);
            tids = rest;
        }
    }
    unknown.sort_unstable();
    for t in unknown {
        let k = emptiest(&groups);
        groups[k].push(t);
    }
    groups.retain(|g| !g.is_empty());
    Some(Decision {
        groups,
        lock_fraction: fraction,
    })
}

/// A thread pinned to a cpu of a domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Move {
    /// The thread.
    pub tid: i32,
    /// Index of its domain.
    pub domain: usize,
    /// Its cpu there.
    pub cpu: usize,
}

/// Where the threads placed so far are. A regrouping moves a thread only when its group lands on
/// another domain: a new order of lock times inside a domain moves nothing (hysteresis).
#[derive(Debug, Clone, Default)]
pub struct Pinning {
    at: BTreeMap<i32, Move>,
}

impl Pinning {
    /// The moves that put `d`'s groups on `domains`. Each group, most lock-bound first, takes the
    /// free domain that already holds most of its threads (the lowest index on a tie); a thread
    /// whose domain changes goes to the least-used cpu of its new domain.
    pub fn plan(&self, d: &Decision, domains: &[Vec<usize>]) -> Vec<Move> {
        let mut free: Vec<bool> = vec![true; domains.len()];
        let mut target: BTreeMap<i32, usize> = BTreeMap::new();
        for g in &d.groups {
            let held = |k: usize| g.iter().filter(|t| self.domain_of(**t) == Some(k)).count();
            let Some(k) = (0..domains.len())
                .filter(|&k| free[k])
                .max_by_key(|&k| (held(k), std::cmp::Reverse(k)))
            else {
                break;
            };
            free[k] = false;
            target.extend(g.iter().map(|&t| (t, k)));
        }
        // Threads that stay keep their cpus; newcomers fill the least-used ones.
        let mut used: BTreeMap<usize, usize> = BTreeMap::new();
        for (tid, m) in &self.at {
            if target.get(tid) == Some(&m.domain) {
                *used.entry(m.cpu).or_default() += 1;
            }
        }
        let mut moves = Vec::new();
        for (&tid, &k) in &target {
            if self.domain_of(tid) == Some(k) {
                continue;
            }
            let cpu = *domains[k]
                .iter()
                .min_by_key(|c| (used.get(c).copied().unwrap_or(0), **c))
                .expect("a domain has cpus");
            *used.entry(cpu).or_default() += 1;
            moves.push(Move {
                tid,
                domain: k,
                cpu,
            });
        }
        moves
    }

    /// Records a move that was carried out.
    pub fn moved(&mut self, m: Move) {
        self.at.insert(m.tid, m);
    }

    /// The domain thread `tid` is pinned to, if placed.
    pub fn domain_of(&self, tid: i32) -> Option<usize> {
        self.at.get(&tid).map(|m| m.domain)
    }

    /// `d`, or the grouping the threads already have when `d` does not gather similar lock times
    /// clearly better (by [`REGROUP_MARGIN`] of summed within-group spread). Lock times of
    /// threads that contend alike differ only by noise from one interval to the next: regrouping
    /// on every reordering moved threads nearly every interval in a 4-socket guest (23 of 25),
    /// each move costing the caches it leaves.
    pub fn keep_unless_better(&self, d: Decision, waits: &[ThreadWait]) -> Decision {
        let mut current: BTreeMap<usize, Vec<i32>> = BTreeMap::new();
        for w in waits {
            match self.domain_of(w.tid) {
                Some(k) => current.entry(k).or_default().push(w.tid),
                None => return d, // a thread not placed yet: place it
            }
        }
        let fraction: BTreeMap<i32, f64> = waits.iter().map(|w| (w.tid, w.fraction())).collect();
        let spread = |groups: &[Vec<i32>]| -> f64 {
            groups
                .iter()
                .map(|g| {
                    let f = g.iter().filter_map(|t| fraction.get(t).copied());
                    let (lo, hi) = f.fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
                    if hi >= lo {
                        hi - lo
                    } else {
                        0.0
                    }
                })
                .sum()
        };
        let kept: Vec<Vec<i32>> = current.into_values().collect();
        if spread(&kept) - spread(&d.groups) < REGROUP_MARGIN {
            Decision { groups: kept, ..d }
        } else {
            d
        }
    }

    /// Forgets threads that are gone.
    pub fn retain(&mut self, alive: impl Fn(i32) -> bool) {
        self.at.retain(|t, _| alive(*t));
    }

    /// Forgets every thread.
    pub fn clear(&mut self) {
        self.at.clear();
    }
}

/// What the daemon did, for its summary line and the store.
#[derive(Debug, Clone, Default)]
pub struct WatchSummary {
    /// Intervals monitored.
    pub intervals: u32,
    /// Shuffles performed: intervals in which at least one thread changed domain.
    pub shuffles: u32,
    /// Lock fraction of each interval.
    pub lock_fractions: Vec<f64>,
    /// Lock fraction before the first shuffle (mean), and after it (mean).
    pub before: Option<f64>,
    /// After the first shuffle.
    pub after: Option<f64>,
    /// The daemon's CPU time / the target's CPU time over the run.
    pub overhead: Option<f64>,
    /// Threads whose affinity was restored at the end.
    pub restored: usize,
}

/// How a process was watched, as its stored measurements say.
#[derive(Debug, Clone)]
pub struct Setting {
    /// The process.
    pub pid: i32,
    /// Cache domains it may use.
    pub domains: usize,
    /// Lock-wait share that triggers a shuffle.
    pub threshold: f64,
    /// Daemon interval.
    pub interval: Duration,
    /// Measured and decided, but moved nothing.
    pub monitor_only: bool,
    /// How lock waits were measured, in words.
    pub method: String,
    /// How threads were grouped.
    pub grouping: Grouping,
}

/// Probe id of a watch's measurements.
pub const PROBE: &str = id::SHUFFLE;

impl WatchSummary {
    fn one_domain(s: &Setting) -> Option<&'static str> {
        (s.domains < 2).then_some(
            "the target may use one cache domain only: regrouping cannot separate anything on this machine",
        )
    }

    /// The watch as measurements: lock-wait share per interval, shuffles, before/after, overhead.
    pub fn measurements(&self, s: &Setting) -> Vec<Measurement> {
        let base = params! {
            "pid" => s.pid,
            "domains" => s.domains,
            "threshold" => s.threshold,
            "interval_ms" => s.interval.as_millis() as u64,
            "mode" => if s.monitor_only { "monitor-only" } else { "shuffle" },
            "method" => if s.method.starts_with("eBPF") { "ebpf" } else { "proxy" },
            "grouping" => s.grouping.name(),
        };
        let single = |metric: &str, unit: Unit, v: f64, note: &str| {
            judged(
                PROBE,
                base.clone(),
                metric,
                unit,
                &[v],
                Some(note.into()),
                Judge::Subject,
            )
        };
        let per_interval = format!("per interval; method: {}", s.method);
        let mut ms = vec![judged(
            PROBE,
            base.clone(),
            "lock_fraction",
            Unit::Share,
            &self.lock_fractions,
            Some(per_interval),
            Judge::Median,
        )];
        let applied = Self::one_domain(s).unwrap_or("placements applied");
        ms.push(single(
            "shuffles",
            Unit::Count,
            f64::from(self.shuffles),
            applied,
        ));
        let optional = [
            (
                "lock_before",
                self.before,
                "mean lock-wait fraction before the first shuffle",
            ),
            (
                "lock_after",
                self.after,
                "mean lock-wait fraction after the first shuffle",
            ),
            (
                "overhead",
                self.overhead,
                "the daemon's CPU time / the target's CPU time",
            ),
        ];
        for (metric, v, note) in optional {
            if let Some(v) = v {
                ms.push(single(metric, Unit::Ratio, v, note));
            }
        }
        ms
    }

    /// The watch in a few lines.
    pub fn text(&self, s: &Setting) -> String {
        let pct = |v: Option<f64>| v.map_or("-".into(), |v| format!("{:.1}%", v * 100.0));
        format!(
            "shuffle summary: {} intervals, {} shuffles, lock wait {} before / {} after, daemon overhead {}, {} affinities restored\nmethod: {}; grouped by {}\n{}",
            self.intervals,
            self.shuffles,
            pct(self.before),
            pct(self.after),
            pct(self.overhead),
            self.restored,
            s.method,
            match s.grouping {
                Grouping::Lock => "lock (the futex word each thread waits on)",
                Grouping::LockTime => "lock time (similar lock-wait shares together)",
            },
            Self::one_domain(s).unwrap_or("")
        )
    }
}

/// The cpus of process `pid` and its lock monitor, or why it cannot be watched (and, unless
/// `monitor_only`, moved): checked before anything starts, not half way.
pub fn prepare(
    pid: i32,
    monitor_only: bool,
    method: locks::Choice,
) -> Result<(CpuSet, Monitor), String> {
    let allowed =
        get_affinity(pid).map_err(|e| format!("cannot read the affinity of {pid}: {e}"))?;
    if !monitor_only {
        // Setting it to what it is fails now when we may not move its threads.
        set_affinity(pid, &allowed).map_err(|e| {
            format!(
                "may not change the affinity of process {pid}: {e} (another user's process: run as its owner or root, or use --monitor-only)"
            )
        })?;
    }
    let monitor = Monitor::open(pid, method).map_err(|e| e.to_string())?;
    Ok((allowed, monitor))
}

/// The shuffling loop over one process.
pub struct Daemon {
    pid: i32,
    monitor: Monitor,
    domains: Vec<Vec<usize>>,
    threshold: f64,
    interval: Duration,
    monitor_only: bool,
    originals: BTreeMap<i32, CpuSet>,
    pinning: Pinning,
    /// Decisions and lock fractions as a timeline (track "shuffle").
    pub timeline: Vec<TimelineEvent>,
    summary: WatchSummary,
    start: Instant,
    /// Intervals measured before the first shuffle.
    first_shuffle: Option<usize>,
    /// Whether original affinities are written down for the next oslab (see [`Daemon::recording`]).
    recording: bool,
    /// Each thread's lock-wait fraction, smoothed over intervals (see [`smooth`]).
    smoothed: BTreeMap<i32, Smoothed>,
    /// How threads are grouped.
    grouping: Grouping,
    /// Each thread's lock as last seen: a thread that did not wait in an interval keeps it.
    locks: BTreeMap<i32, u64>,
}

/// Weight of the newest interval in a thread's smoothed lock-wait fraction. One interval's
/// fraction of a thread is noisy (0 to 0.7 from one 200 ms interval to the next for threads
/// contending alike, seen in a 4-socket guest); the grouping follows the smoothed one.
pub const SMOOTHING: f64 = 0.5;

/// A thread waiting this share of its time or more waits all along (joins, conditions): no
/// placement shortens it.
pub const WAITS_ALL_ALONG: f64 = 0.99;

/// A thread found waiting all along is left out until its smoothed share falls below this: one
/// interval's sampling noise (a joined main thread read 0.97) moved it between groups, and each
/// move was counted as a regrouping (8 of 9 "shuffles" of a steady lockbench).
pub const RUNS_AGAIN: f64 = 0.9;

/// A thread's smoothed lock-wait share, and whether it is left out as waiting all along.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Smoothed {
    /// The share, smoothed over intervals ([`SMOOTHING`]).
    pub fraction: f64,
    /// Found waiting all along and not yet running again ([`WAITS_ALL_ALONG`], [`RUNS_AGAIN`]).
    pub waiting: bool,
}

/// The waits the grouping decides on: each thread's fraction smoothed over intervals, and
/// without threads that have waited all along (a thread blocked in `pthread_join` or on a
/// condition runs nowhere: where it sits does not matter, and its 100% would pull a real lock
/// contender into its group). A contender starved for one interval, or seen waiting in every
/// sample of a sampled method, gets the lock later: its smoothed fraction drops below
/// [`RUNS_AGAIN`].
pub fn smooth(waits: &[ThreadWait], smoothed: &mut BTreeMap<i32, Smoothed>) -> Vec<ThreadWait> {
    smoothed.retain(|tid, _| waits.iter().any(|w| w.tid == *tid));
    waits
        .iter()
        .filter_map(|w| {
            let f = w.fraction();
            let s = smoothed
                .entry(w.tid)
                .and_modify(|s| s.fraction = SMOOTHING * f + (1.0 - SMOOTHING) * s.fraction)
                .or_insert(Smoothed {
                    fraction: f,
                    waiting: false,
                });
            s.waiting = match s.waiting {
                true => s.fraction >= RUNS_AGAIN,
                false => s.fraction >= WAITS_ALL_ALONG,
            };
            (!s.waiting).then_some(ThreadWait {
                tid: w.tid,
                waited: s.fraction * w.observed,
                observed: w.observed,
                lock: w.lock,
            })
        })
        .collect()
}

impl Daemon {
    /// A daemon for the process `monitor` watches, over `domains`. `monitor_only` measures and
    /// decides but never moves.
    pub fn new(
        monitor: Monitor,
        domains: Vec<Vec<usize>>,
        threshold: f64,
        interval: Duration,
        monitor_only: bool,
    ) -> Daemon {
        Daemon {
            pid: monitor.pid(),
            monitor,
            domains,
            threshold,
            interval,
            monitor_only,
            originals: BTreeMap::new(),
            pinning: Pinning::default(),
            timeline: Vec::new(),
            summary: WatchSummary::default(),
            start: Instant::now(),
            first_shuffle: None,
            recording: false,
            smoothed: BTreeMap::new(),
            grouping: Grouping::default(),
            locks: BTreeMap::new(),
        }
    }

    /// Groups threads as `g` says.
    pub fn grouping(mut self, g: Grouping) -> Daemon {
        self.grouping = g;
        self
    }

    /// Writes each thread's original affinity to the pending record before its first move, so
    /// that the next oslab puts it back if this one is killed: for a process we did not start
    /// (one we started dies with us, and its threads with it).
    pub fn recording(mut self, on: bool) -> Daemon {
        self.recording = on;
        self
    }

    /// One interval: measure, decide, move what needs moving. Returns the status line.
    pub fn step(&mut self) -> Result<String, MonitorError> {
        let mut waits = self.monitor.measure(self.interval)?;
        self.summary.intervals += 1;
        self.locks.retain(|t, _| waits.iter().any(|w| w.tid == *t));
        for w in &mut waits {
            match w.lock {
                Some(l) => {
                    self.locks.insert(w.tid, l);
                }
                None => w.lock = self.locks.get(&w.tid).copied(),
            }
        }
        let considered = smooth(&waits, &mut self.smoothed);
        // The process's lock wait is its contenders': a thread waiting all along (in
        // pthread_join) would count as lock wait that no placement can shorten.
        let contenders: Vec<ThreadWait> = waits
            .iter()
            .filter(|w| considered.iter().any(|c| c.tid == w.tid))
            .cloned()
            .collect();
        let left_out = waits.len() - contenders.len();
        let fraction = lock_fraction(&contenders);
        self.summary.lock_fractions.push(fraction);
        let t = self.start.elapsed().as_nanos() as f64;
        let per_thread: serde_json::Map<String, serde_json::Value> = waits
            .iter()
            .map(|w| (w.tid.to_string(), w.fraction().into()))
            .collect();
        // The lock each thread waited on (its futex word), so a recording is a lock profile
        // the simulator can run (`shuffle simulate --profile`).
        let locks: serde_json::Map<String, serde_json::Value> = waits
            .iter()
            .filter_map(|w| Some((w.tid.to_string(), format!("{:#x}", w.lock?).into())))
            .collect();
        self.timeline.push(TimelineEvent {
            track: "lock wait".into(),
            kind: EventKind::Interval,
            start_ns: t - self.interval.as_nanos() as f64,
            dur_ns: self.interval.as_nanos() as f64,
            args: params! {"lock_fraction" => fraction, "threads" => per_thread, "locks" => locks},
        });
        let mut moved = 0;
        // Above the threshold this interval, grouped by the smoothed lock times.
        let sizes: Vec<usize> = self.domains.iter().map(Vec::len).collect();
        let decision = (fraction >= self.threshold)
            .then(|| match self.grouping {
                Grouping::Lock => decide_by_lock(&considered, &sizes, 0.0),
                // Regrouped only when clearly better: similar lock times differ by noise.
                Grouping::LockTime => decide(&considered, self.domains.len(), 0.0)
                    .map(|d| self.pinning.keep_unless_better(d, &considered)),
            })
            .flatten();
        if let Some(d) = decision {
            let d = Decision {
                lock_fraction: fraction,
                ..d
            };
            let moves = self.pinning.plan(&d, &self.domains);
            if !moves.is_empty() && !self.monitor_only {
                // Originals are written down before the first move of a thread, so that the
                // next oslab puts them back even if this one is killed.
                let fresh: Vec<(i32, CpuSet)> = moves
                    .iter()
                    .filter(|m| !self.originals.contains_key(&m.tid))
                    .filter_map(|m| Some((m.tid, get_affinity(m.tid).ok()?)))
                    .collect();
                if self.recording && !fresh.is_empty() {
                    let _ = pending::record_affinities(&pending::default_file(), &fresh);
                }
                self.originals.extend(fresh);
                for m in moves {
                    if !self.originals.contains_key(&m.tid) {
                        continue; // exited since the sample
                    }
                    if set_affinity(m.tid, &CpuSet::single(m.cpu)).is_ok() {
                        self.pinning.moved(m);
                        moved += 1;
                    }
                }
                if moved > 0 {
                    self.summary.shuffles += 1;
                    self.first_shuffle
                        .get_or_insert(self.summary.lock_fractions.len());
                }
            }
            let groups: Vec<String> = d
                .groups
                .iter()
                .map(|g| {
                    g.iter()
                        .map(|t| t.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .collect();
            self.timeline.push(TimelineEvent {
                track: "shuffle".into(),
                kind: if self.monitor_only {
                    EventKind::Decision
                } else {
                    EventKind::Shuffle
                },
                start_ns: t,
                dur_ns: 0.0,
                args: params! {"lock_fraction" => fraction, "groups" => groups, "moves" => moved},
            });
        }
        // Threads that exited are dropped without error.
        if let Ok(alive) = locks::threads(self.pid) {
            self.pinning.retain(|tid| alive.contains(&tid));
            self.originals.retain(|tid, _| alive.contains(tid));
        }
        let waiting_all_along = if left_out > 0 {
            format!(" ({left_out} waiting all along, left out)")
        } else {
            String::new()
        };
        Ok(format!(
            "interval {}: {} threads{waiting_all_along}, lock wait {:.1}% (threshold {:.0}%), {} moved, {} shuffles",
            self.summary.intervals,
            waits.len(),
            fraction * 100.0,
            self.threshold * 100.0,
            moved,
            self.summary.shuffles
        ))
    }

    /// Puts back the affinity of every thread we moved that still exists.
    pub fn restore(&mut self) -> usize {
        let mut n = 0;
        for (tid, set) in std::mem::take(&mut self.originals) {
            if set_affinity(tid, &set).is_ok() {
                n += 1;
            }
        }
        if self.recording {
            let _ = pending::forget_affinities(&pending::default_file());
        }
        self.pinning.clear();
        n
    }

    /// The summary so far; `restored` is filled by [`Daemon::finish`].
    pub fn finish(
        mut self,
        daemon_cpu_s: f64,
        target_cpu_s: Option<f64>,
    ) -> (WatchSummary, Vec<TimelineEvent>) {
        self.summary.restored = self.restore();
        let fr = &self.summary.lock_fractions;
        let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
        // The interval that led to the first shuffle counts as "before".
        let k = self.first_shuffle.unwrap_or(fr.len()).min(fr.len());
        self.summary.before = mean(&fr[..k]);
        self.summary.after = mean(&fr[k..]);
        self.summary.overhead = target_cpu_s.filter(|t| *t > 0.0).map(|t| daemon_cpu_s / t);
        (self.summary, self.timeline)
    }
}

/// How a watch ended.
#[derive(Debug)]
pub struct Watched {
    /// What the daemon did.
    pub summary: WatchSummary,
    /// Its decisions.
    pub timeline: Vec<TimelineEvent>,
    /// Whether `stop` asked us to stop (Ctrl-C) before the target ended.
    pub interrupted: bool,
}

/// Runs `daemon` until the target ends (`child`, when we started it, exits; or its pid is gone)
/// or `stop()` says so; prints each interval's status with `status`. Every affinity changed is
/// restored before returning, also on error.
pub fn watch(
    mut daemon: Daemon,
    mut child: Option<&mut std::process::Child>,
    stop: &dyn Fn() -> bool,
    status: &mut dyn FnMut(&str),
) -> Result<Watched, MonitorError> {
    let pid = daemon.pid;
    let own0 = own_cpu_seconds();
    let target0 = process_cpu_seconds(pid);
    let mut target_cpu = target0;
    let mut interrupted = false;
    loop {
        if stop() {
            interrupted = true;
            break;
        }
        if let Some(c) = child.as_deref_mut() {
            if !matches!(c.try_wait(), Ok(None)) {
                break;
            }
        }
        // Gone, or a zombie another process has not reaped: nothing left to watch.
        if matches!(locks::threads(pid), Err(MonitorError::Gone(_))) {
            break;
        }
        match daemon.step() {
            Ok(line) => status(&line),
            Err(MonitorError::Gone(_)) => break,
            Err(e) => {
                daemon.restore();
                return Err(e);
            }
        }
        target_cpu = process_cpu_seconds(pid).or(target_cpu);
    }
    let used = match (target0, target_cpu) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    let (summary, timeline) = daemon.finish(own_cpu_seconds() - own0, used);
    Ok(Watched {
        summary,
        timeline,
        interrupted,
    })
}

/// CPU seconds the calling process has used.
pub fn own_cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct we pass.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// CPU seconds a process has used (user + system), from /proc/PID/stat.
pub fn process_cpu_seconds(pid: i32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Some(ticks as f64 / hz)
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_core::topology::write_fake_sysfs;

    fn w(tid: i32, waiting: u32) -> ThreadWait {
        ThreadWait {
            tid,
            waited: f64::from(waiting),
            observed: 100.0,
            lock: None,
        }
    }

    fn on(lock: u64, tid: i32, waiting: u32) -> ThreadWait {
        ThreadWait {
            lock: Some(lock),
            ..w(tid, waiting)
        }
    }

    #[test]
    fn the_threads_of_one_lock_share_a_domain_however_alike_their_waits() {
        // Two locks contended alike, their threads interleaved: the time grouping cannot tell
        // them apart, the lock grouping puts each lock's threads on a socket of its own.
        let waits = [
            on(0xa, 1, 30),
            on(0xb, 2, 31),
            on(0xa, 3, 32),
            on(0xb, 4, 29),
        ];
        let d = decide_by_lock(&waits, &[4, 4], 0.1).unwrap();
        assert_eq!(d.groups, [vec![1, 3], vec![2, 4]]);
        // Below the threshold nothing happens.
        assert!(decide_by_lock(&waits, &[4, 4], 0.5).is_none());
        // A lock with more threads than a domain has cpus spills into the next; the most
        // waited-for lock is placed first; a thread of no known lock fills the emptiest domain.
        let waits = [
            on(0xa, 1, 50),
            on(0xa, 2, 50),
            on(0xa, 3, 50),
            on(0xb, 4, 10),
            w(5, 0),
        ];
        let d = decide_by_lock(&waits, &[2, 2, 2], 0.1).unwrap();
        assert_eq!(d.groups, [vec![1, 2], vec![3, 5], vec![4]]);
        // One domain takes everyone.
        let d = decide_by_lock(&waits, &[2], 0.1).unwrap();
        assert_eq!(d.groups.len(), 1);
        assert_eq!(d.groups[0].len(), 5);
    }

    fn topo(packages: usize, cores: usize, threads: usize) -> Topology {
        let dir = tempfile::tempdir().unwrap();
        write_fake_sysfs(dir.path(), packages, cores, threads, packages).unwrap();
        Topology::read_from(dir.path()).unwrap()
    }

    #[test]
    fn four_l3_domains_with_smt() {
        let t = topo(4, 4, 2);
        let d = domains(&t, &t.online());
        assert_eq!(d.len(), 4);
        assert!(d.iter().all(|x| x.len() == 8));
    }

    #[test]
    fn grouping_follows_smoothed_waits_without_threads_blocked_all_interval() {
        let mut s = BTreeMap::new();
        let first = smooth(&[w(1, 100), w(2, 60), w(3, 20)], &mut s);
        assert_eq!(first.iter().map(|t| t.tid).collect::<Vec<_>>(), vec![2, 3]);
        let second = smooth(&[w(1, 100), w(2, 20), w(3, 60)], &mut s);
        let f: Vec<f64> = second.iter().map(ThreadWait::fraction).collect();
        assert!(
            (f[0] - 0.4).abs() < 1e-9 && (f[1] - 0.4).abs() < 1e-9,
            "{f:?}"
        );
        // Starved for one interval (smoothed 0.7): still counted.
        assert_eq!(smooth(&[w(1, 100), w(2, 100), w(3, 60)], &mut s).len(), 2);
        // A thread that is gone is forgotten.
        smooth(&[w(2, 10)], &mut s);
        assert_eq!(s.keys().copied().collect::<Vec<_>>(), vec![2]);
    }

    #[test]
    fn a_thread_waiting_all_along_stays_out_through_an_interval_of_noise() {
        let mut s = BTreeMap::new();
        let tids = |v: Vec<ThreadWait>| v.iter().map(|t| t.tid).collect::<Vec<_>>();
        // The main thread (1) joins; one interval it reads 97% (sampling noise): still out.
        assert_eq!(tids(smooth(&[w(1, 100), w(2, 50)], &mut s)), vec![2]);
        assert_eq!(tids(smooth(&[w(1, 97), w(2, 50)], &mut s)), vec![2]);
        assert_eq!(tids(smooth(&[w(1, 99), w(2, 50)], &mut s)), vec![2]);
        // Running again for real: back in.
        smooth(&[w(1, 60), w(2, 50)], &mut s);
        assert_eq!(tids(smooth(&[w(1, 60), w(2, 50)], &mut s)), vec![1, 2]);
    }

    #[test]
    fn threads_stay_grouped_until_a_new_grouping_is_clearly_better() {
        let d = vec![vec![0, 1], vec![2, 3]];
        let mut p = Pinning::default();
        let first = decide(&[w(1, 42), w(2, 40), w(3, 38), w(4, 36)], 2, 0.1).unwrap();
        for m in p.plan(&first, &d) {
            p.moved(m);
        }
        // Noise reorders alike threads: nothing moves.
        let noisy = [w(1, 36), w(2, 41), w(3, 43), w(4, 39)];
        let kept = p.keep_unless_better(decide(&noisy, 2, 0.1).unwrap(), &noisy);
        assert!(p.plan(&kept, &d).is_empty(), "{kept:?}");
        // Two clearly different lock times: regrouped.
        let apart = [w(1, 80), w(2, 10), w(3, 78), w(4, 12)];
        let new = p.keep_unless_better(decide(&apart, 2, 0.1).unwrap(), &apart);
        assert_eq!(new.groups, vec![vec![1, 3], vec![4, 2]]);
        assert!(!p.plan(&new, &d).is_empty());
        // A thread not placed yet is placed.
        let newcomer = [w(1, 40), w(2, 40), w(3, 40), w(4, 40), w(5, 40)];
        let d5 = decide(&newcomer, 2, 0.1).unwrap();
        assert_eq!(p.keep_unless_better(d5.clone(), &newcomer), d5);
    }

    #[test]
    fn domains_follow_the_last_level_cache() {
        // 2 sockets x 8 cores x SMT: one L3 per socket, 16 cpus each.
        let t = topo(2, 8, 2);
        let d = domains(&t, &t.online());
        assert_eq!(d.len(), 2);
        assert!(d.iter().all(|x| x.len() == 16));
        // Only part of the machine allowed: only its domains count.
        let some = CpuSet::parse("0-3", &t).unwrap();
        assert_eq!(domains(&t, &some).len(), 1);
    }

    #[test]
    fn below_the_threshold_nothing_moves() {
        assert!(decide(&[w(1, 2), w(2, 3)], 2, 0.10).is_none());
        assert!(decide(&[], 2, 0.0).is_none());
    }

    fn place(p: &mut Pinning, d: &Decision, domains: &[Vec<usize>]) -> Vec<Move> {
        let moves = p.plan(d, domains);
        moves.iter().for_each(|m| p.moved(*m));
        moves
    }

    #[test]
    fn similar_lock_times_share_a_domain_most_bound_first() {
        // Four domains of two cpus (e.g. 4 L3 domains), eight threads.
        let d: Vec<Vec<usize>> = (0..4).map(|k| vec![2 * k, 2 * k + 1]).collect();
        let waits: Vec<ThreadWait> = [5, 80, 10, 75, 40, 45, 0, 2]
            .iter()
            .enumerate()
            .map(|(i, &x)| w(100 + i as i32, x))
            .collect();
        let dec = decide(&waits, d.len(), 0.10).unwrap();
        assert_eq!(
            dec.groups,
            vec![
                vec![101, 103],
                vec![105, 104],
                vec![102, 100],
                vec![107, 106]
            ]
        );
        assert!((dec.lock_fraction - 257.0 / 800.0).abs() < 1e-12);
        let mut p = Pinning::default();
        let moves = place(&mut p, &dec, &d);
        assert_eq!(moves.len(), 8);
        let cpu_of = |tid| moves.iter().find(|m| m.tid == tid).unwrap().cpu;
        assert_eq!((cpu_of(101), cpu_of(103)), (0, 1));
        assert_eq!((cpu_of(107), cpu_of(106)), (7, 6));
    }

    #[test]
    fn a_new_order_inside_a_domain_moves_nothing() {
        let d: Vec<Vec<usize>> = vec![vec![0, 1], vec![2, 3]];
        let mut p = Pinning::default();
        let first = decide(&[w(1, 80), w(2, 70), w(3, 20), w(4, 10)], 2, 0.1).unwrap();
        assert_eq!(place(&mut p, &first, &d).len(), 4);
        // 2 now waits more than 1, and 4 more than 3: same groups, nothing moves.
        let swapped = decide(&[w(1, 70), w(2, 80), w(3, 10), w(4, 20)], 2, 0.1).unwrap();
        assert!(p.plan(&swapped, &d).is_empty());
        // The groups trade places in the order: each keeps its domain, nothing moves.
        let flipped = decide(&[w(1, 10), w(2, 20), w(3, 80), w(4, 70)], 2, 0.1).unwrap();
        assert_eq!(flipped.groups[0], vec![3, 4]);
        assert!(p.plan(&flipped, &d).is_empty());
        // 2 and 3 trade groups: only they move, each to the cpu the other left.
        let traded = decide(&[w(1, 80), w(3, 70), w(2, 20), w(4, 10)], 2, 0.1).unwrap();
        let moves = place(&mut p, &traded, &d);
        let mut moved: Vec<(i32, usize)> = moves.iter().map(|m| (m.tid, m.cpu)).collect();
        moved.sort();
        assert_eq!(moved, vec![(2, 2), (3, 1)]);
        // A thread that is gone is forgotten; a newcomer is placed on the least-used cpu.
        p.retain(|t| t != 4);
        let again = decide(&[w(1, 80), w(3, 70), w(2, 20), w(5, 10)], 2, 0.1).unwrap();
        let moves = p.plan(&again, &d);
        assert_eq!(
            moves,
            vec![Move {
                tid: 5,
                domain: 1,
                cpu: 3
            }]
        );
    }

    #[test]
    fn more_domains_than_threads_uses_as_many_as_needed_and_wraps_cpus() {
        let d: Vec<Vec<usize>> = vec![vec![0], vec![1], vec![2]];
        let dec = decide(&[w(1, 50), w(2, 40)], d.len(), 0.1).unwrap();
        assert_eq!(dec.groups.len(), 2);
        let one = vec![vec![4, 5]];
        let dec = decide(&[w(1, 50), w(2, 40), w(3, 30)], 1, 0.1).unwrap();
        let moves = Pinning::default().plan(&dec, &one);
        let cpus: Vec<(i32, usize)> = moves.iter().map(|m| (m.tid, m.cpu)).collect();
        assert_eq!(cpus, vec![(1, 4), (2, 5), (3, 4)]);
    }

    #[test]
    fn our_own_cpu_time_is_readable() {
        let s = process_cpu_seconds(std::process::id() as i32).unwrap();
        assert!(s >= 0.0);
        assert!(process_cpu_seconds(i32::MAX).is_none());
    }
}
