//! The daemon: each interval it reads the lock waits, smooths them, decides and pins; the loop
//! that watches a target until it ends or we are stopped.

use super::decision::{decide, decide_by_lock, lock_fraction, Decision, Grouping};
use super::locks::{Monitor, MonitorError, ThreadWait};
use super::pinning::Pinning;
use super::summary::WatchSummary;
use oslab_core::model::{EventKind, TimelineEvent};
use oslab_core::{params, CpuSet};
use oslab_os::affinity::{get_affinity, set_affinity};
use oslab_os::pending;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// The cpus of process `pid` and its lock monitor, or why it cannot be watched (and, unless
/// `monitor_only`, moved): checked before anything starts, not half way.
pub fn prepare(
    pid: i32,
    monitor_only: bool,
    method: super::locks::Choice,
) -> Result<(CpuSet, Monitor), String> {
    let allowed = get_affinity(pid).map_err(|e| match e.raw_os_error() {
        Some(libc::ESRCH) => format!("no process {pid}: it has ended, or never ran"),
        _ => format!("cannot read the affinity of {pid}: {e}"),
    })?;
    if !monitor_only {
        // Setting it to what it is fails now when we may not move its threads.
        set_affinity(pid, &allowed).map_err(|e| {
            let why = match e.raw_os_error() {
                Some(libc::EPERM) => "another user's process: run as its owner or root, or use --monitor-only",
                Some(libc::EINVAL) => "a kernel thread, or a task whose cpus the kernel fixes: nothing can move it; use --monitor-only",
                _ => "use --monitor-only to watch without moving it",
            };
            format!("may not change the affinity of process {pid}: {e} ({why})")
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
    /// Each moved thread's start time: a thread id reused by a later thread is not ours to set.
    started: BTreeMap<i32, u64>,
    /// The target as it was when watching began: its pid reused by another process ends it.
    identity: Option<pending::Thread>,
    pinning: Pinning,
    /// The target's threads when we first pinned one: a thread that appears later with one of
    /// our pins was made by a pinned thread and inherited it.
    before_pins: Option<BTreeSet<i32>>,
    /// Every cpu a thread was pinned to.
    pinned_cpus: BTreeSet<usize>,
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
    /// Whether the last interval called for regrouping placed threads and was not obeyed
    /// ([`Daemon::confirmed`]).
    regroup_called: bool,
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
    /// How far an interval's share lands from the smoothed one, smoothed the same way: the
    /// noise the grouping must not follow.
    pub jitter: f64,
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
                .and_modify(|s| {
                    s.jitter = SMOOTHING * (f - s.fraction).abs() + (1.0 - SMOOTHING) * s.jitter;
                    s.fraction = SMOOTHING * f + (1.0 - SMOOTHING) * s.fraction;
                })
                .or_insert(Smoothed {
                    fraction: f,
                    jitter: 0.0,
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

/// How much the smoothed shares of `threads` move from one interval to the next by noise alone:
/// their mean jitter, shrunk as the smoothing shrinks a reading's noise (by sqrt(a / (2 - a))).
pub fn smoothed_noise(threads: &[ThreadWait], smoothed: &BTreeMap<i32, Smoothed>) -> f64 {
    let jitters: Vec<f64> = threads
        .iter()
        .filter_map(|t| smoothed.get(&t.tid).map(|s| s.jitter))
        .collect();
    let mean = jitters.iter().sum::<f64>() / jitters.len().max(1) as f64;
    mean * (SMOOTHING / (2.0 - SMOOTHING)).sqrt()
}

/// The waits of threads that share their lock with another thread of the process (as each
/// thread's lock was last seen, `locks`), and of threads whose lock is unknown. A futex word only
/// one thread ever waits on is no lock they contend for: a main thread in `pthread_join` waits on
/// its child's id, and placing it near nobody shortens nothing (back from its joins as the
/// workers ended, it once took a domain and counted a shuffle).
pub fn sharing_a_lock(waits: &[ThreadWait], locks: &BTreeMap<i32, u64>) -> Vec<ThreadWait> {
    waits
        .iter()
        .filter(|w| match w.lock {
            Some(l) => locks.iter().any(|(t, x)| *x == l && *t != w.tid),
            None => true,
        })
        .cloned()
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
        let pid = monitor.pid();
        Daemon {
            pid,
            monitor,
            domains,
            threshold,
            interval,
            monitor_only,
            originals: BTreeMap::new(),
            started: BTreeMap::new(),
            identity: pending::Thread::now(pid),
            pinning: Pinning::default(),
            before_pins: None,
            pinned_cpus: BTreeSet::new(),
            timeline: Vec::new(),
            summary: WatchSummary::default(),
            start: Instant::now(),
            first_shuffle: None,
            recording: false,
            smoothed: BTreeMap::new(),
            grouping: Grouping::default(),
            locks: BTreeMap::new(),
            regroup_called: false,
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

    /// `d`, if it regroups placed threads only when the interval before called for a regrouping
    /// too; else the grouping they have. With the noise margin alone a steady lockbench of 8
    /// alike threads was still regrouped 3 times in 147 intervals, each at one interval's
    /// reading; a real change in contention lasts.
    fn confirmed(&mut self, d: Decision, waits: &[ThreadWait]) -> Decision {
        let kept = self.pinning.grouping(waits);
        let regroups = kept.is_some() && !self.pinning.plan(&d, &self.domains).is_empty();
        self.regroup_called = regroups && !self.regroup_called;
        match (kept, self.regroup_called) {
            (Some(groups), true) => Decision { groups, ..d },
            _ => d,
        }
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
                Grouping::Lock => {
                    decide_by_lock(&sharing_a_lock(&considered, &self.locks), &sizes, 0.0)
                }
                // Regrouped only when clearly better, two intervals running: similar lock
                // times differ by noise.
                Grouping::LockTime => {
                    let noise = smoothed_noise(&considered, &self.smoothed);
                    decide(&considered, self.domains.len(), 0.0)
                        .map(|d| self.pinning.keep_unless_better(d, &considered, noise))
                        .map(|d| self.confirmed(d, &considered))
                }
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
                if self.before_pins.is_none() {
                    self.before_pins = super::locks::threads(self.pid)
                        .ok()
                        .map(|t| t.into_iter().collect());
                }
                if self.recording && !fresh.is_empty() {
                    let _ = pending::record_affinities(&pending::default_file(), &fresh);
                }
                for (tid, _) in &fresh {
                    if let Some(t) = pending::Thread::now(*tid) {
                        self.started.insert(*tid, t.start);
                    }
                }
                self.originals.extend(fresh);
                for m in moves {
                    if !self.originals.contains_key(&m.tid) {
                        continue; // exited since the sample
                    }
                    if set_affinity(m.tid, &CpuSet::single(m.cpu)).is_ok() {
                        self.pinned_cpus.insert(m.cpu);
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
        if let Ok(alive) = super::locks::threads(self.pid) {
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

    /// Puts back the affinity of every thread we moved that still exists, and of every thread
    /// made since by a thread we had pinned (it inherited the pin).
    pub fn restore(&mut self) -> usize {
        let mut n = 0;
        if let Some(before) = &self.before_pins {
            let alive: Vec<(i32, CpuSet)> = super::locks::threads(self.pid)
                .unwrap_or_default()
                .into_iter()
                .filter_map(|t| Some((t, get_affinity(t).ok()?)))
                .collect();
            let pins = &self.pinned_cpus;
            for (tid, set) in inherited_pins(&alive, &self.originals, before, pins, self.pid) {
                if set_affinity(tid, &set).is_ok() {
                    n += 1;
                }
            }
        }
        for (tid, set) in std::mem::take(&mut self.originals) {
            let same =
                pending::Thread::now(tid).map(|t| t.start) == self.started.get(&tid).copied();
            if same && set_affinity(tid, &set).is_ok() {
                n += 1;
            }
        }
        self.started.clear();
        if self.recording {
            let _ = pending::forget_affinities(&pending::default_file());
        }
        self.pinning.clear();
        n
    }

    /// Whether the target is still the process watching began with (not gone, its pid not
    /// reused by another).
    pub fn target_is_same(&self) -> bool {
        self.identity.is_some() && pending::Thread::now(self.pid) == self.identity
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

/// The threads to give back an affinity they inherited from a thread we pinned, and what to
/// give them: threads not there when we first pinned (`before`), not moved by us, sitting on a
/// single cpu we pinned a thread to. They get the process's own original (its main thread's,
/// `pid`), else the affinity most of the moved threads had.
fn inherited_pins(
    alive: &[(i32, CpuSet)],
    originals: &BTreeMap<i32, CpuSet>,
    before: &BTreeSet<i32>,
    pins: &BTreeSet<usize>,
    pid: i32,
) -> Vec<(i32, CpuSet)> {
    let mut counts: HashMap<&CpuSet, usize> = HashMap::new();
    for set in originals.values() {
        *counts.entry(set).or_default() += 1;
    }
    let Some(original) = originals
        .get(&pid)
        .or_else(|| counts.into_iter().max_by_key(|(_, n)| *n).map(|(s, _)| s))
    else {
        return Vec::new();
    };
    alive
        .iter()
        .filter(|(tid, set)| {
            !before.contains(tid)
                && !originals.contains_key(tid)
                && set.len() == 1
                && set.iter().all(|c| pins.contains(&c))
        })
        .map(|(tid, _)| (*tid, original.clone()))
        .collect()
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
        // Gone, a zombie another process has not reaped, or its pid now another process's:
        // nothing left to watch.
        let gone = |daemon: &Daemon| {
            matches!(super::locks::threads(pid), Err(MonitorError::Gone(_)))
                || !daemon.target_is_same()
        };
        if gone(&daemon) {
            break;
        }
        match daemon.step() {
            Ok(line) => status(&line),
            // A target that ends within an interval may fail its measurement with an error of
            // its own (no such process): that is its end, and what was measured is kept.
            Err(MonitorError::Gone(_)) => break,
            Err(_) if gone(&daemon) => break,
            // Ctrl-C inside an interval: that interval is dropped, not acted on.
            Err(MonitorError::Stopped) => {
                interrupted = true;
                break;
            }
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
    use std::sync::mpsc;

    #[test]
    fn a_target_whose_pid_another_process_took_is_no_longer_watched() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let monitor = Monitor::open(pid, super::super::locks::Choice::Proxy).unwrap();
        let mut daemon = Daemon::new(monitor, vec![vec![0]], 0.1, Duration::from_millis(50), true);
        assert!(daemon.target_is_same());
        // The same pid, started at another time: another process.
        let mut reused = daemon.identity.unwrap();
        reused.start += 1;
        daemon.identity = Some(reused);
        assert!(!daemon.target_is_same());
        let w = watch(daemon, None, &|| false, &mut |_| {}).unwrap();
        assert_eq!(w.summary.intervals, 0);
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn a_thread_made_by_a_pinned_thread_gets_the_original_back() {
        let pid = std::process::id() as i32;
        let full = get_affinity(oslab_os::affinity::gettid()).unwrap();
        let first = full.iter().next().unwrap();
        let before: BTreeSet<i32> = super::super::locks::threads(pid)
            .unwrap()
            .into_iter()
            .collect();
        let (to_a, a_rx) = mpsc::channel::<()>();
        let (tids_tx, tids) = mpsc::channel::<i32>();
        // A is "pinned by us" before it makes B; B inherits the pin.
        let a = std::thread::spawn(move || {
            let me = oslab_os::affinity::gettid();
            tids_tx.send(me).unwrap();
            a_rx.recv().unwrap();
            let b = std::thread::spawn({
                let tids_tx = tids_tx.clone();
                move || {
                    tids_tx.send(oslab_os::affinity::gettid()).unwrap();
                    std::thread::sleep(Duration::from_millis(500));
                }
            });
            b.join().unwrap();
        });
        let a_tid = tids.recv().unwrap();
        let mut before = before;
        before.insert(a_tid);
        set_affinity(a_tid, &CpuSet::single(first)).unwrap();
        to_a.send(()).unwrap();
        let b_tid = tids.recv().unwrap();
        let alive: Vec<(i32, CpuSet)> = super::super::locks::threads(pid)
            .unwrap()
            .into_iter()
            .filter_map(|t| Some((t, get_affinity(t).ok()?)))
            .collect();
        assert!(alive.contains(&(b_tid, CpuSet::single(first))), "{alive:?}");
        let originals = BTreeMap::from([(a_tid, full.clone())]);
        let pins = BTreeSet::from([first]);
        let back = inherited_pins(&alive, &originals, &before, &pins, pid);
        assert!(back.contains(&(b_tid, full.clone())), "{back:?}");
        assert!(back.iter().all(|(t, _)| *t != a_tid), "{back:?}");
        a.join().unwrap();
    }
}
