//! A lock profile recorded from a live program, as a program the simulator runs. A watch of the
//! program (`oslab shuffle --monitor-only -- CMD`) stores, each interval, every thread's lock-wait
//! share and the lock it waited on (its futex word). The profile keeps the threads that contend
//! (those that waited on a lock, without the ones that wait all along), each on the lock it
//! waited on most, and each lock's mean wait; the simulated program has the same threads on the
//! same locks, and each lock's work outside it is calibrated, on one socket, so that its threads
//! wait as much as they did live. What the recording cannot tell, the length of a critical
//! section, is the simulation's `--critical`.

use super::simulate::{simulate, Assignment, Costs, DaemonSettings, LockProgram, SimulatedMachine};
use super::{Grouping, WAITS_ALL_ALONG};
use oslab_core::model::TimelineEvent;
use std::collections::BTreeMap;

/// Threads on locks, with the waits recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// Per contending thread: its lock (0..locks) and its mean lock-wait share.
    pub threads: Vec<(usize, f64)>,
    /// Locks.
    pub locks: usize,
    /// Threads left out: those that never waited on a lock, and those that waited all along.
    pub left_out: usize,
    /// Intervals recorded.
    pub intervals: usize,
}

impl Profile {
    /// The profile in a watch's timeline (its "lock wait" intervals).
    pub fn from_timeline(events: &[TimelineEvent]) -> Result<Profile, String> {
        let mut waits: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        let mut words: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
        let mut intervals = 0;
        for e in events.iter().filter(|e| e.track == "lock wait") {
            intervals += 1;
            if let Some(t) = e.args.get("threads").and_then(|t| t.as_object()) {
                for (tid, f) in t {
                    if let Some(f) = f
                        .as_f64()
                        .filter(|f| f.is_finite() && (0.0..=1.0).contains(f))
                    {
                        waits.entry(tid.clone()).or_default().push(f);
                    }
                }
            }
            if let Some(l) = e.args.get("locks").and_then(|l| l.as_object()) {
                for (tid, w) in l {
                    if let Some(w) = w.as_str() {
                        *words
                            .entry(tid.clone())
                            .or_default()
                            .entry(w.into())
                            .or_default() += 1;
                    }
                }
            }
        }
        if intervals == 0 {
            return Err(
                "no lock-wait intervals: record one with `oslab shuffle --monitor-only -- CMD`"
                    .into(),
            );
        }
        if words.is_empty() {
            return Err(
                "the recording names no lock (recorded before locks were kept, or by a method that cannot see them): record again with `oslab shuffle --monitor-only --method ebpf -- CMD`"
                    .into(),
            );
        }
        let mut ids: BTreeMap<String, usize> = BTreeMap::new();
        let mut threads = Vec::new();
        let mut left_out = 0;
        for (tid, w) in &waits {
            let mean = w.iter().sum::<f64>() / w.len() as f64;
            // The lock it waited on most (ties: the lowest word, so a profile is deterministic).
            let word = words.get(tid).and_then(|c| {
                c.iter()
                    .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
                    .map(|(w, _)| w.clone())
            });
            match word {
                Some(word) if mean > 0.0 && mean < WAITS_ALL_ALONG => {
                    let next = ids.len();
                    let lock = *ids.entry(word).or_insert(next);
                    threads.push((lock, mean));
                }
                _ => left_out += 1,
            }
        }
        if threads.len() < 2 {
            return Err(format!(
                "{} thread(s) contended for a lock in the recording: a profile needs at least 2",
                threads.len()
            ));
        }
        Ok(Profile {
            locks: ids.len(),
            threads,
            left_out,
            intervals,
        })
    }

    /// In a line: its threads and locks, each lock's waiting, what was left out.
    pub fn describe(&self) -> String {
        let per_lock: Vec<String> = self
            .per_lock()
            .iter()
            .map(|(n, w)| format!("{n} threads waiting {:.0}%", w * 100.0))
            .collect();
        format!(
            "{} contending threads on {} locks ({}), {} left out (never waited on a lock, or waited all along), {} intervals",
            self.threads.len(),
            self.locks,
            per_lock.join(", "),
            self.left_out,
            self.intervals
        )
    }

    /// Each lock's threads and their mean wait.
    pub fn per_lock(&self) -> Vec<(usize, f64)> {
        (0..self.locks)
            .map(|l| {
                let w: Vec<f64> = self
                    .threads
                    .iter()
                    .filter(|t| t.0 == l)
                    .map(|t| t.1)
                    .collect();
                (w.len(), w.iter().sum::<f64>() / w.len().max(1) as f64)
            })
            .collect()
    }

    /// The program to simulate: critical sections of `critical` ns, `iterations` acquisitions per
    /// thread, each lock's outside work calibrated to its recorded wait.
    pub fn program(&self, critical: f64, iterations: u64, costs: Costs) -> LockProgram {
        let outside = self
            .per_lock()
            .iter()
            .map(|&(n, wait)| calibrate(n, wait, critical, costs))
            .collect();
        LockProgram {
            name: "recorded".into(),
            threads: self.threads.len(),
            locks: self.locks,
            critical,
            spread: 0.0,
            noncritical: critical,
            iterations,
            phase: None,
            recorded: Some(Assignment {
                lock_of: self.threads.iter().map(|t| t.0).collect(),
                outside,
            }),
        }
    }
}

/// The work outside the lock (ns) at which `n` threads of one lock, alone on one socket, wait
/// `wait` of their time: bisection on its logarithm (wait falls as outside work grows) between
/// 1/100 and 10,000 critical sections.
fn calibrate(n: usize, wait: f64, critical: f64, costs: Costs) -> f64 {
    let waited = |outside: f64| {
        let w = LockProgram {
            name: "calibration".into(),
            threads: n,
            locks: 1,
            critical,
            spread: 0.0,
            noncritical: outside,
            iterations: 2_000,
            phase: None,
            recorded: None,
        };
        let m = SimulatedMachine {
            sockets: 1,
            cores: n.max(1),
        };
        let d = DaemonSettings {
            shuffle: false,
            interval: 2e8,
            threshold: 1.0,
            grouping: Grouping::LockTime,
        };
        simulate(m, costs, &w, d, 1, &|| false).map_or(0.0, |r| r.lock_fraction)
    };
    let (mut lo, mut hi) = ((critical * 0.01).ln(), (critical * 1e4).ln());
    for _ in 0..20 {
        let mid = (lo + hi) / 2.0;
        if waited(mid.exp()) > wait {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    ((lo + hi) / 2.0).exp()
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_core::model::EventKind;
    use oslab_core::params;

    fn interval(threads: &[(&str, f64)], locks: &[(&str, &str)]) -> TimelineEvent {
        let t: serde_json::Map<String, serde_json::Value> = threads
            .iter()
            .map(|(k, v)| (k.to_string(), (*v).into()))
            .collect();
        let l: serde_json::Map<String, serde_json::Value> = locks
            .iter()
            .map(|(k, v)| (k.to_string(), (*v).into()))
            .collect();
        TimelineEvent {
            track: "lock wait".into(),
            kind: EventKind::Interval,
            start_ns: 0.0,
            dur_ns: 2e8,
            args: params! {"lock_fraction" => 0.5, "threads" => t, "locks" => l},
        }
    }

    #[test]
    fn a_recording_becomes_threads_on_their_locks_with_their_waits() {
        let events = vec![
            interval(
                &[
                    ("10", 0.6),
                    ("11", 0.4),
                    ("12", 0.2),
                    ("13", 0.1),
                    ("1", 1.0),
                    ("14", 0.0),
                ],
                &[
                    ("10", "0xa"),
                    ("11", "0xa"),
                    ("12", "0xb"),
                    ("13", "0xb"),
                    ("1", "0xc"),
                ],
            ),
            interval(
                &[
                    ("10", 0.4),
                    ("11", 0.6),
                    ("12", 0.2),
                    ("13", 0.3),
                    ("1", 1.0),
                ],
                &[],
            ),
        ];
        let p = Profile::from_timeline(&events).unwrap();
        // The joiner (waits all along) and the thread that never waited are left out.
        assert_eq!(p.left_out, 2);
        assert_eq!(p.locks, 2);
        let per = p.per_lock();
        assert_eq!(per.len(), 2);
        let (hot, cool) = if per[0].1 > per[1].1 {
            (per[0], per[1])
        } else {
            (per[1], per[0])
        };
        assert_eq!((hot.0, cool.0), (2, 2));
        assert!(
            (hot.1 - 0.5).abs() < 1e-9 && (cool.1 - 0.2).abs() < 1e-9,
            "{per:?}"
        );
    }

    #[test]
    fn the_calibrated_program_waits_as_the_recording_did() {
        let p = Profile {
            threads: vec![(0, 0.5), (0, 0.5), (0, 0.5), (0, 0.5), (1, 0.15), (1, 0.15)],
            locks: 2,
            left_out: 0,
            intervals: 10,
        };
        let costs = Costs::default();
        let program = p.program(5_000.0, 2_000, costs);
        let outside = &program.recorded.as_ref().unwrap().outside;
        for (lock, want) in [(0usize, 0.5), (1, 0.15)] {
            let n = p.threads.iter().filter(|t| t.0 == lock).count();
            let got = simulate(
                SimulatedMachine {
                    sockets: 1,
                    cores: n,
                },
                costs,
                &LockProgram {
                    threads: n,
                    locks: 1,
                    noncritical: outside[lock],
                    recorded: None,
                    ..program.clone()
                },
                DaemonSettings {
                    shuffle: false,
                    interval: 2e8,
                    threshold: 1.0,
                    grouping: Grouping::LockTime,
                },
                1,
                &|| false,
            )
            .unwrap()
            .lock_fraction;
            assert!((got - want).abs() < 0.03, "lock {lock}: {got} for {want}");
        }
    }

    #[test]
    fn a_recording_without_locks_or_contenders_is_refused_with_the_reason() {
        assert!(Profile::from_timeline(&[])
            .unwrap_err()
            .contains("no lock-wait intervals"));
        let no_words = [interval(&[("10", 0.5), ("11", 0.5)], &[])];
        assert!(Profile::from_timeline(&no_words)
            .unwrap_err()
            .contains("names no lock"));
        let one = [interval(&[("10", 0.5)], &[("10", "0xa")])];
        assert!(Profile::from_timeline(&one)
            .unwrap_err()
            .contains("at least 2"));
    }
}
