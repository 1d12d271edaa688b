//! A CPU-manager timeline as a Paraver trace (BSC): `.prv` (records), `.pcf` (names of states and
//! events) and `.row` (names of CPUs and threads). Each job is an application with one task whose
//! threads are the job's thread slots; a thread's "run" spans become Running states on their CPU,
//! allocation changes an event (type 90000001, value = processors) on the job's first thread.
//!
//! A simulated run records no thread spans, only each allocation (its processors and, for a
//! policy that pins, which cpus): its thread i runs on the allocation's cpu i from that change to
//! the next (or the job's end), the simulator's own placement. A policy that does not pin (native)
//! has no cpu per thread in the model: its threads are in a state of their own, "time-shared (cpu
//! not modelled)", on no cpu.

use oslab_core::model::{EventKind, TimelineEvent};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Event type of allocation changes.
pub const ALLOCATION_EVENT: u64 = 90_000_001;

/// The three files' contents.
#[derive(Debug, Clone, PartialEq)]
pub struct Paraver {
    /// The trace.
    pub prv: String,
    /// State and event names.
    pub pcf: String,
    /// Resource and thread names.
    pub row: String,
}

fn arg_u64(e: &TimelineEvent, key: &str) -> Option<u64> {
    e.args.get(key).and_then(|v| v.as_u64())
}

/// The most cpus a trace names: the largest machine a simulation takes (`--cpus`). A timeline
/// naming a cpu beyond it (a hostile file) is refused: its row file would list every cpu up to
/// it (an 8 GiB allocation once).
pub const MAX_CPUS: usize = 1 << 20;

/// Builds the trace from a timeline; `started` is the run's ISO 8601 start (for the header),
/// `cpus` the machine's CPU count. None when the timeline has no thread spans; an error when it
/// names a cpu beyond [`MAX_CPUS`].
pub fn paraver(
    timeline: &[TimelineEvent],
    started: &str,
    cpus: usize,
    host: &str,
) -> Result<Option<Paraver>, String> {
    let recorded: Vec<&TimelineEvent> = timeline
        .iter()
        .filter(|e| e.kind == EventKind::Run)
        .collect();
    let derived = if recorded.is_empty() {
        spans_from_allocations(timeline)?
    } else {
        Vec::new()
    };
    let runs: Vec<&TimelineEvent> = recorded.into_iter().chain(&derived).collect();
    if runs.is_empty() {
        return Ok(None);
    }
    if let Some(cpu) = runs
        .iter()
        .filter_map(|e| arg_u64(e, "cpu"))
        .find(|&c| c >= MAX_CPUS as u64)
    {
        return Err(format!(
            "the timeline names cpu {cpu}, beyond the {MAX_CPUS} cpus any run of oslab has"
        ));
    }
    // Applications: every job seen, with its thread count and name.
    let mut jobs: BTreeMap<u64, (usize, String)> = BTreeMap::new();
    for e in timeline.iter().chain(&derived) {
        if let Some(job) = arg_u64(e, "job") {
            let entry = jobs.entry(job).or_insert((1, format!("job {job}")));
            if let Some(slot) = arg_u64(e, "slot") {
                entry.0 = entry.0.max(slot as usize + 1);
            }
            if e.kind == EventKind::Running || e.kind == EventKind::Alloc {
                entry.1 = e.track.clone();
            }
        }
    }
    let appl: BTreeMap<u64, usize> = jobs.keys().enumerate().map(|(i, &j)| (j, i + 1)).collect();
    let ncpus = runs
        .iter()
        .filter_map(|e| arg_u64(e, "cpu"))
        .map(|c| c as usize + 1)
        .max()
        .unwrap_or(1)
        .max(cpus);
    let end = timeline
        .iter()
        .map(|e| (e.start_ns + e.dur_ns).round() as u64)
        .max()
        .unwrap_or(0);
    let mut records: Vec<(u64, String)> = Vec::new();
    for e in &runs {
        let Some(job) = arg_u64(e, "job") else {
            continue;
        };
        // Paraver's cpu 0 is "no cpu": a thread the model time-shares without placing it.
        let (cpu, state) = match arg_u64(e, "cpu") {
            Some(cpu) => (cpu + 1, RUNNING),
            None => (0, TIME_SHARED),
        };
        let slot = arg_u64(e, "slot").unwrap_or(0) + 1;
        let (b, f) = (
            e.start_ns.round() as u64,
            (e.start_ns + e.dur_ns).round() as u64,
        );
        records.push((
            b,
            format!("1:{cpu}:{}:1:{slot}:{b}:{f}:{state}", appl[&job]),
        ));
    }
    for e in timeline.iter().filter(|e| e.kind == EventKind::Alloc) {
        let (Some(job), Some(threads)) = (arg_u64(e, "job"), arg_u64(e, "threads")) else {
            continue;
        };
        let t = e.start_ns.round() as u64;
        records.push((
            t,
            format!("2:0:{}:1:1:{t}:{ALLOCATION_EVENT}:{threads}", appl[&job]),
        ));
    }
    records.sort_by_key(|r| r.0);
    let apps: Vec<String> = jobs.values().map(|(t, _)| format!("1({t}:1)")).collect();
    let mut prv = format!(
        "#Paraver ({}):{end}_ns:1({ncpus}):{}:{}\n",
        header_date(started),
        jobs.len(),
        apps.join(":")
    );
    for (_, r) in records {
        prv.push_str(&r);
        prv.push('\n');
    }
    let pcf = format!(
        "DEFAULT_OPTIONS\n\nLEVEL               THREAD\nUNITS               NANOSEC\n\n\
         STATES\n0    Idle\n{RUNNING}    Running\n{TIME_SHARED}    Time-shared (cpu not modelled)\n\n\
         EVENT_TYPE\n0    {ALLOCATION_EVENT}    Processors allocated by the oslab CPU manager\n"
    );
    let mut row = format!("LEVEL CPU SIZE {ncpus}\n");
    for c in 0..ncpus {
        let _ = writeln!(row, "cpu {c}");
    }
    let _ = write!(row, "\nLEVEL NODE SIZE 1\n{host}\n\n");
    let threads: usize = jobs.values().map(|(t, _)| t).sum();
    let _ = writeln!(row, "LEVEL THREAD SIZE {threads}");
    for (name, t) in jobs.values().map(|(t, n)| (n, t)) {
        for s in 0..*t {
            let _ = writeln!(row, "{name} thread {s}");
        }
    }
    Ok(Some(Paraver { prv, pcf, row }))
}

/// State of a thread on its cpu.
const RUNNING: u64 = 1;
/// State of a simulated thread the model time-shares without a cpu of its own.
const TIME_SHARED: u64 = 2;

/// The most thread spans derived from a simulation's allocations: beyond it the trace would be
/// gigabytes (a 1024-cpu simulation of 10,000 jobs), more than Paraver opens.
pub const MAX_DERIVED_SPANS: usize = 5_000_000;

/// Thread spans from a simulated run's allocation changes: each allocation's threads from it to
/// the job's next change or its end, on the allocation's cpus when it names them.
fn spans_from_allocations(timeline: &[TimelineEvent]) -> Result<Vec<TimelineEvent>, String> {
    let mut allocs: BTreeMap<u64, Vec<&TimelineEvent>> = BTreeMap::new();
    let mut ends: BTreeMap<u64, f64> = BTreeMap::new();
    for e in timeline {
        let Some(job) = arg_u64(e, "job") else {
            continue;
        };
        match e.kind {
            EventKind::Alloc => allocs.entry(job).or_default().push(e),
            EventKind::Running => {
                ends.insert(job, e.start_ns + e.dur_ns);
            }
            _ => {}
        }
    }
    let last = timeline
        .iter()
        .map(|e| e.start_ns + e.dur_ns)
        .fold(0.0, f64::max);
    let mut spans = Vec::new();
    for (job, mut changes) in allocs {
        changes.sort_by(|a, b| a.start_ns.total_cmp(&b.start_ns));
        let end = ends.get(&job).copied().unwrap_or(last);
        for (k, change) in changes.iter().enumerate() {
            let until = changes.get(k + 1).map_or(end, |next| next.start_ns);
            let threads = arg_u64(change, "threads").unwrap_or(0) as usize;
            let cpus: Vec<Option<u64>> = match change.args.get("cpus").and_then(|c| c.as_array()) {
                Some(list) if !list.is_empty() => list.iter().map(|c| c.as_u64()).collect(),
                _ => vec![None; threads],
            };
            if until <= change.start_ns || cpus.is_empty() {
                continue;
            }
            if spans.len() + cpus.len() > MAX_DERIVED_SPANS {
                return Err(format!(
                    "the simulation's allocations make over {MAX_DERIVED_SPANS} thread spans, more than a trace Paraver opens; simulate fewer jobs or cpus"
                ));
            }
            for (slot, cpu) in cpus.into_iter().enumerate() {
                let mut args = serde_json::Map::new();
                args.insert("job".into(), job.into());
                args.insert("slot".into(), (slot as u64).into());
                if let Some(cpu) = cpu {
                    args.insert("cpu".into(), cpu.into());
                }
                spans.push(TimelineEvent {
                    track: change.track.clone(),
                    kind: EventKind::Run,
                    start_ns: change.start_ns,
                    dur_ns: until - change.start_ns,
                    args,
                });
            }
        }
    }
    Ok(spans)
}

/// "2026-11-21T10:04:05Z" as Paraver's "21/11/26 at 10:04".
fn header_date(iso: &str) -> String {
    let d = |a: usize, b: usize| iso.get(a..b).unwrap_or("00");
    format!(
        "{}/{}/{} at {}:{}",
        d(8, 10),
        d(5, 7),
        d(2, 4),
        d(11, 13),
        d(14, 16)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(track: &str, kind: &str, start: f64, dur: f64, args: serde_json::Value) -> TimelineEvent {
        TimelineEvent {
            track: track.into(),
            kind: kind.into(),
            start_ns: start,
            dur_ns: dur,
            args: args.as_object().cloned().unwrap_or_default(),
        }
    }

    #[test]
    fn thread_spans_become_states_and_allocations_events() {
        let tl = vec![
            ev(
                "job 7 swim",
                "alloc",
                0.0,
                0.0,
                json!({"job": 7, "threads": 2}),
            ),
            ev(
                "cpu 1",
                "run",
                100.0,
                50.0,
                json!({"job": 7, "slot": 1, "cpu": 1}),
            ),
            ev(
                "cpu 0",
                "run",
                0.0,
                80.0,
                json!({"job": 7, "slot": 0, "cpu": 0}),
            ),
            ev(
                "cpu 0",
                "run",
                90.0,
                10.0,
                json!({"job": 9, "slot": 0, "cpu": 0}),
            ),
            ev("job 7 swim", "running", 0.0, 150.0, json!({"job": 7})),
        ];
        let p = paraver(&tl, "2026-11-21T10:04:05Z", 2, "host")
            .unwrap()
            .unwrap();
        let lines: Vec<&str> = p.prv.lines().collect();
        // Two applications: job 7 with 2 threads, job 9 with 1.
        assert_eq!(
            lines[0],
            "#Paraver (21/11/26 at 10:04):150_ns:1(2):2:1(2:1):1(1:1)"
        );
        // Records in time order, CPUs and threads 1-based.
        assert_eq!(lines[1], "1:1:1:1:1:0:80:1");
        assert_eq!(lines[2], "2:0:1:1:1:0:90000001:2");
        assert_eq!(lines[3], "1:1:2:1:1:90:100:1");
        assert_eq!(lines[4], "1:2:1:1:2:100:150:1");
        // Every record has the fields its type needs.
        for l in &lines[1..] {
            let n = l.split(':').count();
            assert!(n == 8, "{l}");
        }
        assert!(p.row.contains("LEVEL THREAD SIZE 3"));
        assert!(p.row.contains("job 7 swim thread 1"));
        assert!(p.pcf.contains("90000001"));
        assert!(paraver(&tl[..1], "x", 2, "h").unwrap().is_none());
        // A hostile timeline naming a cpu no machine has is refused, not allocated for.
        let mut huge = tl.clone();
        for e in huge.iter_mut().filter(|e| e.args.contains_key("cpu")) {
            e.args.insert("cpu".into(), json!(1u64 << 40));
        }
        let e = paraver(&huge, "x", 2, "h").unwrap_err();
        assert!(e.contains("beyond"), "{e}");
    }

    #[test]
    fn a_simulated_run_is_traced_from_its_allocations() {
        // Job 1 (pinned): 2 threads on cpus 4 and 5, then 1 on cpu 6, ends at 300.
        // Job 2 (native, unpinned): 3 threads and no cpus, ends at 200.
        let tl = vec![
            ev(
                "job 1 swim",
                "alloc",
                0.0,
                0.0,
                json!({"job": 1, "threads": 2, "cpus": [4, 5]}),
            ),
            ev(
                "job 2 bt",
                "alloc",
                50.0,
                0.0,
                json!({"job": 2, "threads": 3, "cpus": []}),
            ),
            ev(
                "job 1 swim",
                "alloc",
                100.0,
                0.0,
                json!({"job": 1, "threads": 1, "cpus": [6]}),
            ),
            ev("job 1 swim", "running", 0.0, 300.0, json!({"job": 1})),
            ev("job 2 bt", "running", 50.0, 150.0, json!({"job": 2})),
        ];
        let p = paraver(&tl, "2026-11-21T10:04:05Z", 0, "sim")
            .unwrap()
            .unwrap();
        let states: Vec<&str> = p.prv.lines().filter(|l| l.starts_with("1:")).collect();
        assert_eq!(
            states,
            [
                "1:5:1:1:1:0:100:1",
                "1:6:1:1:2:0:100:1",
                "1:0:2:1:1:50:200:2",
                "1:0:2:1:2:50:200:2",
                "1:0:2:1:3:50:200:2",
                "1:7:1:1:1:100:300:1",
            ]
        );
        assert!(p
            .prv
            .starts_with("#Paraver (21/11/26 at 10:04):300_ns:1(7):2:1(2:1):1(3:1)"));
        assert!(p.pcf.contains("Time-shared (cpu not modelled)"));
        assert!(p.row.contains("LEVEL THREAD SIZE 5"));
        // Allocations without the jobs' spans: each runs to the last event (the last
        // allocation, of no length, is no span).
        let p = paraver(&tl[..3], "x", 0, "sim").unwrap().unwrap();
        let states: Vec<&str> = p.prv.lines().filter(|l| l.starts_with("1:")).collect();
        assert_eq!(states.len(), 5, "{states:?}");
        assert!(states.contains(&"1:0:2:1:3:50:100:2"), "{states:?}");
    }
}
