//! The relations a machine's figures obey across each other, checked after every run and on
//! `show`: a figure that breaks one measured something other than what its name says (a chase
//! that ran from a cache, a stamp from another clock), so it is a failure with the relation in
//! its reason, never a number and never merely noisy. docs/relations.md lists them.
//!
//! A relation is broken only beyond doubt: the two figures' intervals lie apart, on the wrong
//! side, by more than [`MARGIN`] (two honest figures that merely overlap are left alone).

use crate::catalog::{id, metric};
use crate::model::{Measurement, Status, Unit};

/// How far beyond the other figure's interval one must lie to break a relation: different
/// methods (a chunked chase against a random one) differ by this much honestly.
pub const MARGIN: f64 = 0.10;

/// The margin when either figure was measured while other work took its cpu: the load moves
/// between two probes measured seconds apart, which neither's interval holds (beside `stress-ng
/// --cpu 2` a process switch read 0.90x the thread switch, each interval within 2%).
pub const CONTENDED_MARGIN: f64 = 0.25;

/// One relation, for the documentation and the tests.
pub struct Relation {
    /// Its name, as a failure's reason quotes it.
    pub name: &'static str,
    /// Why the machine obeys it.
    pub why: &'static str,
}

const LEVELS: Relation = Relation {
    name: "each cache level no faster than the one before it",
    why: "a load that misses a level goes on to the next: L1 <= L2 <= L3 <= memory latency",
};
const LOADED: Relation = Relation {
    name: "loaded latency no lower than idle memory latency",
    why: "traffic from other cpus only queues a load behind theirs; a loaded chase faster than the idle one ran from a cache",
};
const SWITCHES: Relation = Relation {
    name: "a process switch no cheaper than a thread switch",
    why: "switching processes is switching threads plus an address-space change (same mechanism, same placement)",
};
const FORK_EXEC: Relation = Relation {
    name: "fork and exec no cheaper than fork",
    why: "fork+exec does a fork's work and then an exec's",
};
const PEAK: Relation = Relation {
    name: "memory bandwidth no higher than the memory's peak",
    why: "the bus cannot move more than channels x rate x width; more came from a cache",
};
const COPY: Relation = Relation {
    name: "data through the kernel no faster than one thread copies it",
    why: "a pipe, a socket or a read(2) copies each byte at least once, as a copy loop does; the fastest copy this run measured (bandwidth.sweep, which counts a copied byte twice) bounds them",
};
const RUN: Relation = Relation {
    name: "one operation no longer than the run",
    why: "a per-operation time longer than the whole run was timed with two clocks, or not at all",
};

/// Every relation, in the order they are checked.
pub const RELATIONS: &[Relation] = &[LEVELS, LOADED, SWITCHES, FORK_EXEC, PEAK, COPY, RUN];

/// A figure that breaks a relation: its index, and the reason its status will give.
type Broken = Vec<(usize, String)>;

/// Holds a run's figures to the contract: a value that cannot be (negative, zero-cost, a median
/// outside its interval) fails ([`Measurement::check_possible`]), a bandwidth is the memory's or
/// partly a cache's as the run's own latency curve says ([`crate::beyond_cache`]), then every
/// figure that breaks
/// a relation is failed, with the relation and both figures in its reason; each repetition of a
/// run is checked on its own. `wall_ns` is how long the run took, when known.
pub fn check(ms: &mut [Measurement], wall_ns: Option<f64>) {
    ms.iter_mut().for_each(Measurement::check_possible);
    crate::beyond_cache::rejudge(ms);
    let mut repetitions: Vec<u32> = ms.iter().map(|m| m.repetition).collect();
    repetitions.sort_unstable();
    repetitions.dedup();
    let mut broken = Broken::new();
    for r in repetitions {
        let one: Vec<(usize, &Measurement)> = ms
            .iter()
            .enumerate()
            .filter(|(_, m)| m.repetition == r)
            .collect();
        levels(&one, &mut broken);
        loaded(&one, &mut broken);
        switches(&one, &mut broken);
        fork_exec(&one, &mut broken);
        peak(&one, &mut broken);
        copied(&one, &mut broken);
        if let Some(wall) = wall_ns {
            longer_than_run(&one, wall, &mut broken);
        }
    }
    for (i, why) in broken {
        if ms[i].status.has_value() {
            ms[i].status = Status::Failed(why);
        }
    }
}

/// A figure's interval (low, median, high), when it has a value.
fn interval(m: &Measurement) -> Option<(f64, f64, f64)> {
    let s = m.summary.as_ref().filter(|_| m.status.has_value())?;
    Some((s.ci_low.min(s.median), s.median, s.ci_high.max(s.median)))
}

/// Whether `smaller` lies clearly below `larger`: its whole interval, widened by [`MARGIN`]
/// ([`CONTENDED_MARGIN`] when either was measured under contention), under the other's.
fn clearly_below(smaller: &Measurement, larger: &Measurement) -> bool {
    let margin = if smaller.status.is_contended() || larger.status.is_contended() {
        CONTENDED_MARGIN
    } else {
        MARGIN
    };
    match (interval(smaller), interval(larger)) {
        (Some((_, _, hi)), Some((lo, _, _))) => hi * (1.0 + margin) < lo,
        _ => false,
    }
}

/// The reason a figure breaks `relation`: what it read, against what.
fn reason(relation: &Relation, read: String, against: String) -> String {
    format!(
        "impossible: breaks '{}': {read} against {against}",
        relation.name
    )
}

/// A figure's median with its unit.
fn shown(m: &Measurement) -> String {
    m.summary
        .as_ref()
        .map_or_else(String::new, |s| crate::units::value(s.median, m.unit))
}

/// The figures of one repetition with a value, of `probe` and `metric`, that `keep` keeps.
fn find<'a>(
    ms: &[(usize, &'a Measurement)],
    probe: &str,
    metric: &str,
    keep: impl Fn(&Measurement) -> bool,
) -> Vec<(usize, &'a Measurement)> {
    ms.iter()
        .copied()
        .filter(|(_, m)| m.probe == probe && m.metric == metric && interval(m).is_some())
        .filter(|(_, m)| keep(m))
        .collect()
}

/// The chunked chase's level latencies, in the order a load meets them.
fn level_latencies<'a>(ms: &[(usize, &'a Measurement)]) -> Vec<(usize, &'a Measurement)> {
    let order = |m: &Measurement| match m.param_text("level").as_str() {
        "L1" => Some(1),
        "L2" => Some(2),
        "L3" => Some(3),
        "memory" => Some(9),
        _ => None,
    };
    let mut levels = find(ms, id::MEMORY_LATENCY_CHUNK, metric::LEVEL_LATENCY, |m| {
        order(m).is_some()
    });
    levels.sort_by_key(|(_, m)| order(m));
    levels
}

fn levels(ms: &[(usize, &Measurement)], broken: &mut Broken) {
    for pair in level_latencies(ms).windows(2) {
        let ((_, nearer), (i, farther)) = (pair[0], pair[1]);
        if clearly_below(farther, nearer) {
            let against = format!("{} latency {}", nearer.param_text("level"), shown(nearer));
            broken.push((i, reason(&LEVELS, shown(farther), against)));
        }
    }
}

fn loaded(ms: &[(usize, &Measurement)], broken: &mut Broken) {
    let levels = level_latencies(ms);
    let Some(&(_, idle)) = levels
        .iter()
        .find(|(_, m)| m.param_text("level") == "memory")
    else {
        return;
    };
    for (i, m) in find(ms, id::MEMORY_LATENCY_LOADED, metric::PER_LOAD, |_| true) {
        if clearly_below(m, idle) {
            let against = format!("idle memory latency {}", shown(idle));
            broken.push((i, reason(&LOADED, shown(m), against)));
        }
    }
}

/// The figures of `larger` that lie clearly below their counterpart of `smaller` (the same
/// value of `key`) break `relation`.
fn ordered(
    ms: &[(usize, &Measurement)],
    (smaller, larger, metric, key): (&str, &str, &str, &str),
    relation: &Relation,
    broken: &mut Broken,
) {
    for (i, big) in find(ms, larger, metric, |_| true) {
        let same = |m: &Measurement| m.param_text(key) == big.param_text(key);
        if let Some(&(_, small)) = find(ms, smaller, metric, same).first() {
            if clearly_below(big, small) {
                let against = format!("{smaller} {}", shown(small));
                broken.push((i, reason(relation, shown(big), against)));
            }
        }
    }
}

fn switches(ms: &[(usize, &Measurement)], broken: &mut Broken) {
    for (_, thread, process) in crate::catalog::SWITCH_PAIRS {
        ordered(
            ms,
            (thread, process, metric::SWITCH, "placement"),
            &SWITCHES,
            broken,
        );
    }
}

fn fork_exec(ms: &[(usize, &Measurement)], broken: &mut Broken) {
    let pair = (
        id::TASK_FORK,
        id::TASK_FORK_EXEC,
        metric::ROUND_TRIP,
        "touched_mib",
    );
    ordered(ms, pair, &FORK_EXEC, broken);
}

/// The memory's peak a bandwidth row's model read (an input of its prediction), when known.
fn peak_gbps(m: &Measurement) -> Option<f64> {
    m.prediction.as_ref()?.inputs.get("peak_gbps")?.as_f64()
}

fn peak(ms: &[(usize, &Measurement)], broken: &mut Broken) {
    let memory = [
        id::BANDWIDTH_STREAM,
        id::BANDWIDTH_THREADS,
        id::BANDWIDTH_MIX,
        id::NUMA_MATRIX,
    ];
    for &(i, m) in ms {
        if !memory.contains(&m.probe.as_str()) || m.unit != Unit::GBps {
            continue;
        }
        if let (Some((lo, _, _)), Some(peak)) = (interval(m), peak_gbps(m)) {
            if lo > peak * (1.0 + MARGIN) {
                let against =
                    format!("a peak of {peak:.2} GB/s (the arrays were partly in a cache)");
                broken.push((i, reason(&PEAK, shown(m), against)));
            }
        }
    }
}

/// The services' bandwidths (the IPC streams, the file cache's reads) against the fastest
/// single-thread copy of the run.
fn copied(ms: &[(usize, &Measurement)], broken: &mut Broken) {
    let copy = find(ms, id::BANDWIDTH_SWEEP, metric::BANDWIDTH, |m| {
        m.param_text("kernel") == "copy"
    });
    let Some(&(_, fastest)) = copy.iter().max_by(|a, b| {
        let median = |m: &Measurement| interval(m).map_or(0.0, |(_, med, _)| med);
        median(a.1).total_cmp(&median(b.1))
    }) else {
        return;
    };
    let services = [id::IPC_PIPE, id::IPC_UNIX, id::IPC_TCP, id::FS_CACHED_READ];
    for &(i, m) in ms {
        if services.contains(&m.probe.as_str()) && m.metric == metric::BANDWIDTH {
            // Faster than the fastest copy: this figure lies clearly above it.
            if clearly_below(fastest, m) {
                let against = format!("the fastest copy, {}", shown(fastest));
                broken.push((i, reason(&COPY, shown(m), against)));
            }
        }
    }
}

fn longer_than_run(ms: &[(usize, &Measurement)], wall_ns: f64, broken: &mut Broken) {
    for &(i, m) in ms {
        // CPU time summed over a job's threads honestly exceeds the wall time (4 threads for
        // 10 s: 40 s), and a simulation's hours pass in a second of the run: the relation
        // holds wall-clock figures.
        if m.metric.contains("cpu_time") || m.simulated() {
            continue;
        }
        if m.unit == Unit::Ns && interval(m).is_some_and(|(_, median, _)| median > wall_ns) {
            let against = format!("a run of {}", crate::units::value(wall_ns, Unit::Ns));
            broken.push((i, reason(&RUN, shown(m), against)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::measured as m;
    use crate::model::Cause;
    use crate::params;

    fn failed(ms: &[Measurement]) -> Vec<(String, String)> {
        ms.iter()
            .filter_map(|m| match &m.status {
                Status::Failed(why) => Some((m.probe.clone(), why.clone())),
                _ => None,
            })
            .collect()
    }

    fn level(name: &str, v: f64) -> Measurement {
        m(
            "memory.latency.chunk",
            "level_latency",
            params! {"level" => name},
            v,
        )
    }

    #[test]
    fn an_honest_run_breaks_nothing() {
        let mut ms = vec![
            level("L1", 1.2),
            level("L2", 4.4),
            level("L3", 11.0),
            level("memory", 140.0),
            m(
                "memory.latency.loaded",
                "per_load",
                params! {"traffic" => "read"},
                150.0,
            ),
            // Within the margin of idle: two methods, honestly close.
            m(
                "memory.latency.loaded",
                "per_load",
                params! {"traffic" => "none"},
                132.0,
            ),
            m(
                "switch.thread.pipe",
                "switch",
                params! {"placement" => "same-cpu"},
                550.0,
            ),
            m(
                "switch.process.pipe",
                "switch",
                params! {"placement" => "same-cpu"},
                690.0,
            ),
            m("task.fork", "round_trip", params! {}, 26_000.0),
            m("task.fork-exec", "round_trip", params! {}, 28_000.0),
        ];
        check(&mut ms, Some(15e9));
        assert_eq!(failed(&ms), vec![]);
    }

    #[test]
    fn each_relation_broken_fails_the_figure_that_breaks_it_with_the_relation() {
        let gbps = |probe: &str, v: f64, peak: f64| {
            let mut b = m(probe, "bandwidth", params! {"kernel" => "read"}, v);
            b.unit = Unit::GBps;
            let mut inputs = serde_json::Map::new();
            inputs.insert("peak_gbps".into(), peak.into());
            let p = crate::model::Prediction::new(peak, "memory peak", inputs);
            b.prediction = Some(p);
            b
        };
        let cases: Vec<(Vec<Measurement>, &str, usize)> = vec![
            (
                vec![level("L1", 1.2), level("L2", 0.6)],
                "memory.latency.chunk",
                0,
            ),
            (
                vec![level("L3", 11.0), level("memory", 9.0)],
                "memory.latency.chunk",
                0,
            ),
            (
                vec![
                    level("memory", 136.8),
                    m(
                        "memory.latency.loaded",
                        "per_load",
                        params! {"traffic" => "read"},
                        14.09,
                    ),
                ],
                "memory.latency.loaded",
                1,
            ),
            (
                vec![
                    m(
                        "switch.thread.futex",
                        "switch",
                        params! {"placement" => "same-cpu"},
                        4200.0,
                    ),
                    m(
                        "switch.process.futex",
                        "switch",
                        params! {"placement" => "same-cpu"},
                        1700.0,
                    ),
                ],
                "switch.process.futex",
                2,
            ),
            (
                vec![
                    m("task.fork", "round_trip", params! {}, 60_000.0),
                    m("task.fork-exec", "round_trip", params! {}, 20_000.0),
                ],
                "task.fork-exec",
                3,
            ),
            (
                vec![gbps("bandwidth.stream", 85.0, 51.2)],
                "bandwidth.stream",
                4,
            ),
            (
                vec![
                    {
                        let mut c = m(
                            "bandwidth.sweep",
                            "bandwidth",
                            params! {"kernel" => "copy", "size" => 4096},
                            300.0,
                        );
                        c.unit = Unit::GBps;
                        c
                    },
                    {
                        let mut r = m(
                            "fs.cached-read",
                            "bandwidth",
                            params! {"method" => "read", "block_bytes" => 65536},
                            900.0,
                        );
                        r.unit = Unit::GBps;
                        r
                    },
                ],
                "fs.cached-read",
                5,
            ),
            (
                vec![m("switch.oneshot", "switch", params! {}, 313.7e9)],
                "switch.oneshot",
                6,
            ),
        ];
        for (mut ms, probe, relation) in cases {
            check(&mut ms, Some(60e9));
            let failed = failed(&ms);
            assert_eq!(failed.len(), 1, "{probe}: {failed:?}");
            assert_eq!(failed[0].0, probe);
            assert!(
                failed[0].1.contains(RELATIONS[relation].name),
                "{probe}: {}",
                failed[0].1
            );
        }
        // Beside a peak it does not reach, bandwidth is left alone.
        let mut ok = vec![gbps("bandwidth.stream", 40.0, 51.2)];
        check(&mut ok, None);
        assert_eq!(failed(&ok), vec![]);
        // CPU time of a job's threads together may exceed the run (120 s on 4 cpus in 44 s).
        let mut ok = vec![m("cpuman.job", "cpu_time", params! {}, 120e9)];
        check(&mut ok, Some(44e9));
        assert_eq!(failed(&ok), vec![]);
        // A simulation's makespan (1.505 s of simulated time in a run of 411 µs) is not timed
        // by the run's clock; the same figure timed by it is impossible.
        let makespan = |p| m("cpuman.run", "makespan", p, 1.505e9);
        let mut ok = vec![makespan(
            params! {crate::model::CLOCK => crate::model::SIMULATED},
        )];
        check(&mut ok, Some(411.2e3));
        assert_eq!(failed(&ok), vec![]);
        let mut bad = vec![makespan(params! {})];
        check(&mut bad, Some(411.2e3));
        assert_eq!(failed(&bad).len(), 1);
    }

    #[test]
    fn figures_measured_under_contention_are_held_with_the_wider_margin() {
        let pair = |process: f64, contended: bool| {
            let mut ms = vec![
                m(
                    "switch.thread.pipe",
                    "switch",
                    params! {"placement" => "same-cpu"},
                    855.0,
                ),
                m(
                    "switch.process.pipe",
                    "switch",
                    params! {"placement" => "same-cpu"},
                    process,
                ),
            ];
            if contended {
                ms.iter_mut()
                    .for_each(|m| m.status = Status::Noisy(Cause::Contention));
            }
            check(&mut ms, None);
            failed(&ms).len()
        };
        // 0.87x the thread switch: beyond the quiet margin, within the contended one.
        assert_eq!(pair(740.0, false), 1);
        assert_eq!(pair(740.0, true), 0);
        // Far below, contention or not, it breaks.
        assert_eq!(pair(500.0, true), 1);
    }
}
