//! Time slices (a "context tracker"): N busy processes pinned to one CPU, each recording
//! the periods it ran against the shared clock. Merged, the periods show who ran when: each hand-
//! over from one process to another is a context switch (its duration is the gap between them),
//! and each process's uninterrupted stretch is a time slice. The kernel's own count of switches on
//! that CPU (the sched:sched_switch tracepoint) is read beside ours where perf permits.

use crate::child::{Child, SharedPage};
use crate::harness::check_interrupt;
use crate::probe::ProbeError;
use oslab_core::model::{judged, Judge};
use oslab_core::model::{EventKind, Measurement, TimelineEvent, Unit};
use oslab_core::reason::Unavailable;
use oslab_core::text::{Block, Doc, Table};
use oslab_core::units::value;
use oslab_core::{params, Clock, CpuSet, Status};
use oslab_os::clock::Ticks;
use oslab_os::perf::{self, Counter};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Scheduling class of the processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum SchedClass {
    /// SCHED_OTHER (the fair class).
    Other,
    /// SCHED_RR at priority 1 (round-robin with a fixed slice; needs privilege).
    #[cfg_attr(feature = "clap", value(name = "rr"))]
    RoundRobin,
}

impl SchedClass {
    /// Name used in parameters.
    pub fn name(self) -> &'static str {
        match self {
            SchedClass::Other => "other",
            SchedClass::RoundRobin => "rr",
        }
    }
}

/// Gaps each process can record; more are counted but not kept.
const CAPACITY: usize = 1 << 14;
/// Words of the shared header: ready count, go time, end time.
const HEADER: usize = 4;

/// One process's view: its first and last read and its inactive gaps, in clock ticks.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessRecord {
    /// Index of the process (0..N).
    pub index: usize,
    /// Its pid.
    pub pid: i32,
    /// First read after the start signal.
    pub start: u64,
    /// Last read.
    pub end: u64,
    /// Gaps above the threshold: (last read before, first read after).
    pub gaps: Vec<(u64, u64)>,
}

/// What a recording of N processes gives.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// Each process.
    pub processes: Vec<ProcessRecord>,
    /// The common start, in ticks.
    pub origin: u64,
    /// Context switches on the CPU counted by the kernel over the recording, or why not.
    pub kernel_switches: Result<u64, Unavailable>,
    /// The quantum the kernel reports for the processes (sched_rr_get_interval), in ns.
    pub rr_interval_ns: Option<f64>,
}

/// Runs `n` busy processes on `cpu` for `duration` under `policy`; gaps longer than `threshold`
/// ticks are recorded. The caller must not run on `cpu` (it waits, then reaps).
pub fn record(
    clock: &Clock,
    cpu: usize,
    n: usize,
    duration: Duration,
    policy: SchedClass,
    threshold: u64,
) -> Result<Schedule, ProbeError> {
    let words = HEADER + n * (3 + 2 * CAPACITY);
    let shared = SharedPage::with_len(words * 8)?;
    // Built before fork: the child may not allocate.
    let set = oslab_os::placement::cpu_set_t(&CpuSet::single(cpu));
    let rr = libc::sched_param { sched_priority: 1 };
    let mut children = Vec::with_capacity(n);
    for k in 0..n {
        let base = HEADER + k * (3 + 2 * CAPACITY);
        let sh = &shared;
        children.push(Child::fork(|| {
            // SAFETY: raw syscalls on ourselves with data prepared before fork.
            unsafe {
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
                if policy == SchedClass::RoundRobin {
                    libc::sched_setscheduler(0, libc::SCHED_RR, &rr);
                }
            }
            sh.word64(0).fetch_add(1, Ordering::SeqCst);
            let mut go = 0;
            while go == 0 || clock.start() < go {
                go = sh.word64(1).load(Ordering::SeqCst);
                std::hint::spin_loop();
            }
            let end = sh.word64(2).load(Ordering::SeqCst);
            let start = clock.start();
            let mut last = start;
            let mut count = 0usize;
            while last < end {
                let now = clock.start();
                if now.wrapping_sub(last) > threshold {
                    if count < CAPACITY {
                        sh.word64(base + 3 + 2 * count)
                            .store(last, Ordering::Relaxed);
                        sh.word64(base + 4 + 2 * count)
                            .store(now, Ordering::Relaxed);
                    }
                    count += 1;
                }
                last = now;
            }
            sh.word64(base + 1).store(start, Ordering::Relaxed);
            sh.word64(base + 2).store(last, Ordering::Relaxed);
            sh.word64(base).store(count as u64, Ordering::SeqCst);
        })?);
    }
    // Wait until every process is pinned and spinning, then start them together.
    let waited = Instant::now();
    while shared.word64(0).load(Ordering::SeqCst) < n as u64 {
        check_interrupt()?;
        if waited.elapsed() > Duration::from_secs(10) {
            return Err(ProbeError::Failed(
                "the processes did not start within 10 s".into(),
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let ticks = |d: Duration| (d.as_nanos() as f64 * clock.ticks_per_ns) as u64;
    let origin = clock.start() + ticks(Duration::from_millis(20));
    shared
        .word64(2)
        .store(origin + ticks(duration), Ordering::SeqCst);
    shared.word64(1).store(origin, Ordering::SeqCst);
    let counter = switch_counter(cpu);
    while clock.start() < origin {
        std::hint::spin_loop();
    }
    if let Ok(c) = &counter {
        let _ = c.start();
    }
    let rr_interval_ns = children.first().and_then(|c| rr_interval_ns(c.pid()));
    let until = Instant::now() + duration;
    while Instant::now() < until {
        check_interrupt()?; // dropping the children kills and reaps them
        std::thread::sleep(Duration::from_millis(5).min(until - Instant::now()));
    }
    let kernel_switches =
        counter.and_then(|c| c.stop().map_err(|e| Unavailable(perf::explain(&e))));
    let mut processes = Vec::with_capacity(n);
    for (k, child) in children.into_iter().enumerate() {
        let pid = child.pid();
        let status = child.wait()?;
        if status != 0 {
            return Err(ProbeError::Failed(format!(
                "process {k} (pid {pid}) ended with wait status {status}"
            )));
        }
        let base = HEADER + k * (3 + 2 * CAPACITY);
        let count = shared.word64(base).load(Ordering::SeqCst) as usize;
        let gaps = (0..count.min(CAPACITY))
            .map(|i| {
                (
                    shared.word64(base + 3 + 2 * i).load(Ordering::Relaxed),
                    shared.word64(base + 4 + 2 * i).load(Ordering::Relaxed),
                )
            })
            .collect();
        processes.push(ProcessRecord {
            index: k,
            pid,
            start: shared.word64(base + 1).load(Ordering::Relaxed),
            end: shared.word64(base + 2).load(Ordering::Relaxed),
            gaps,
        });
    }
    Ok(Schedule {
        processes,
        origin,
        kernel_switches,
        rr_interval_ns,
    })
}

fn switch_counter(cpu: usize) -> Result<Counter, Unavailable> {
    let id = perf::tracepoint_id("sched", "sched_switch")
        .map_err(|e| format!("sched:sched_switch: {e}"))?;
    Counter::open_cpu(perf::TYPE_TRACEPOINT, id, cpu).map_err(|e| Unavailable(perf::explain(&e)))
}

/// A stretch one process held the CPU (ticks).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slice {
    /// Process index.
    pub proc: usize,
    /// First read of the stretch.
    pub start: u64,
    /// Last read of the stretch.
    pub end: u64,
}

/// Merges the processes' active periods into the CPU's schedule: consecutive periods of the same
/// process (only interrupts between them) form one slice.
pub fn schedule(processes: &[ProcessRecord]) -> Vec<Slice> {
    let mut periods: Vec<Slice> = Vec::new();
    for p in processes {
        let mut from = p.start;
        for &(a, b) in &p.gaps {
            periods.push(Slice {
                proc: p.index,
                start: from,
                end: a,
            });
            from = b;
        }
        periods.push(Slice {
            proc: p.index,
            start: from,
            end: p.end,
        });
    }
    periods.sort_by_key(|s| s.start);
    let mut slices: Vec<Slice> = Vec::new();
    for p in periods {
        match slices.last_mut() {
            Some(last) if last.proc == p.proc => last.end = last.end.max(p.end),
            _ => slices.push(p),
        }
    }
    slices
}

/// Per switch: (from, to, switch ns, slice ns of `from`), for the per-switch table.
pub fn switches(clock: &Clock, slices: &[Slice]) -> Vec<(usize, usize, f64, f64)> {
    slices
        .windows(2)
        .map(|w| {
            (
                w[0].proc,
                w[1].proc,
                clock.ticks_to_ns(w[1].start.saturating_sub(w[0].end) as f64),
                clock.ticks_to_ns(w[0].end.saturating_sub(w[0].start) as f64),
            )
        })
        .collect()
}

/// The schedule as timeline events: one track per process, a "running" span per slice, shifted
/// by `offset_ns` (so several recordings can share a timeline).
pub fn timeline(
    clock: &Clock,
    rec: &Schedule,
    slices: &[Slice],
    offset_ns: f64,
) -> Vec<TimelineEvent> {
    let n = rec.processes.len();
    slices
        .iter()
        .map(|s| {
            let p = &rec.processes[s.proc];
            TimelineEvent {
                track: format!("{n} procs: process {} (pid {})", s.proc, p.pid),
                kind: EventKind::Running,
                start_ns: offset_ns + clock.ticks_to_ns(s.start.saturating_sub(rec.origin) as f64),
                dur_ns: clock.ticks_to_ns(s.end.saturating_sub(s.start) as f64),
                args: params! {"n" => rec.processes.len()},
            }
        })
        .collect()
}

/// Our hand-overs must be at least this share of the kernel's switches on the cpu for a gap to
/// be a switch (a few switches to a kworker or to idle are allowed).
const SWITCHES_AGREE: f64 = 0.9;

/// Measurements of one recording: slice lengths, switch durations, switch counts (ours and the
/// kernel's), and the round-robin interval the kernel reports under SCHED_RR.
pub fn summarise(
    id: &str,
    clock: &Clock,
    rec: &Schedule,
    policy: SchedClass,
    cpu: usize,
) -> Vec<Measurement> {
    let n = rec.processes.len();
    let slices = schedule(&rec.processes);
    let sw = switches(clock, &slices);
    let base = params! {"procs" => n, "policy" => policy.name(), "cpu" => cpu};
    let mut out = Vec::new();
    // The first and last slice are cut by the recording's edges: keep the complete ones.
    let complete: Vec<f64> = sw.iter().skip(1).map(|s| s.3).collect();
    let gaps: Vec<f64> = sw.iter().map(|s| s.2).collect();
    // The figure is the median slice (and switch): noisy, with its reason, when the recording
    // cannot pin it down (a median of 80 us with an interval of 0-210 ms was printed `ok`). The
    // spread itself is in the table and the timeline.
    let mut slice = judged(
        id,
        base.clone(),
        "slice",
        Unit::Ns,
        &complete,
        None,
        Judge::Median,
    );
    let mut switch = judged(
        id,
        base.clone(),
        "switch",
        Unit::Ns,
        &gaps,
        None,
        Judge::Median,
    );
    if policy == SchedClass::RoundRobin {
        slice.prediction = rec.rr_interval_ns.map(|v| {
            oslab_core::Prediction::new(
                v,
                "sched_rr_get_interval (the round-robin quantum)",
                params! {},
            )
        });
    }
    // A gap between two of our processes is one switch only when nothing else ran in it: the
    // kernel's count of switches on the cpu says so (a gap of 5-8 ms that held other tasks was
    // printed as a switch while the kernel counted 8x ours).
    let ours = sw.len() as f64;
    if switch.summary.is_some() {
        let doubt = match &rec.kernel_switches {
            Ok(k) if ours >= SWITCHES_AGREE * *k as f64 => None,
            Ok(k) => Some(format!(
                "the kernel counted {k} switches on the cpu against our {ours:.0} hand-overs: other tasks ran between ours, so a gap is not one switch"
            )),
            Err(why) => Some(format!(
                "without the kernel's count of switches ({why}) a gap cannot be told from other tasks' time"
            )),
        };
        if let Some(why) = doubt {
            switch.status = Status::Skipped(why);
        }
    }
    for m in [&mut slice, &mut switch] {
        if m.summary.is_none() {
            m.status = Status::Skipped(if n < 2 {
                "one process: nothing to switch to".into()
            } else {
                "no switch seen in the recording (make it longer)".into()
            });
        }
    }
    out.push(slice);
    out.push(switch);
    let mut count = judged(
        id,
        base.clone(),
        "switches",
        Unit::Count,
        &[ours],
        None,
        Judge::Subject,
    );
    match &rec.kernel_switches {
        Ok(k) => {
            count.prediction = Some(oslab_core::Prediction {
                kind: oslab_core::ModelKind::Reference,
                ..oslab_core::Prediction::new(*k as f64, "sched:sched_switch events on the cpu over the same interval (the kernel's count; it also counts switches to other tasks and to idle)", params! {})
            });
            count.note = Some(format!(
                "{ours:.0} hand-overs between our processes seen, the kernel counted {k} switches on the cpu"
            ));
        }
        Err(why) => count.note = Some(format!("kernel count unavailable: {why}")),
    }
    out.push(count);
    out
}

/// The round-robin quantum of process `pid`, in ns.
fn rr_interval_ns(pid: libc::pid_t) -> Option<f64> {
    // SAFETY: fills a timespec.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointer.
    if unsafe { libc::sched_rr_get_interval(pid, &mut ts) } != 0 {
        return None;
    }
    Some(ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64).filter(|&v| v > 0.0)
}

/// What `oslab timeslice` asks besides the cpu (which the session resolves).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct Options {
    /// Number of processes (default: 2, 3, 4 and 5, one recording each).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "N", conflicts_with = "sweep")
    )]
    pub procs: Option<usize>,
    /// Run N = 1..K processes, one recording each, to see how the slice changes with N.
    #[cfg_attr(feature = "clap", arg(long, value_name = "K"))]
    pub sweep: Option<usize>,
    /// Length of each recording, e.g. 1s.
    #[cfg_attr(feature = "clap", arg(long, value_name = "TIME", value_parser = oslab_core::units::parse_duration, default_value = "1s"))]
    pub duration: Duration,
    /// Scheduling class of the processes.
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value_t = SchedClass::Other))]
    pub policy: SchedClass,
    /// Gap threshold, as for `oslab activity`.
    #[cfg_attr(feature = "clap", arg(long, value_name = "T"))]
    pub threshold: Option<String>,
    /// Print every switch (default: the first 20 per recording).
    #[cfg_attr(feature = "clap", arg(long))]
    pub all: bool,
}

impl Options {
    /// The process counts to record, or why they cannot be (also when the scheduling class
    /// asked for is not permitted here).
    pub fn counts(&self) -> Result<Vec<usize>, Unavailable> {
        if self.policy == SchedClass::RoundRobin && !oslab_os::affinity::fifo_permitted() {
            return Err("--policy rr needs permission for real-time scheduling (root, CAP_SYS_NICE or an RLIMIT_RTPRIO)".into());
        }
        let counts: Vec<usize> = match (self.procs, self.sweep) {
            (Some(0), _) | (_, Some(0)) => return Err("--procs/--sweep must be at least 1".into()),
            (Some(n), _) => vec![n],
            (None, Some(k)) => (1..=k).collect(),
            (None, None) => vec![2, 3, 4, 5],
        };
        if counts.iter().any(|&n| n > 256) {
            return Err("at most 256 processes".into());
        }
        Ok(counts)
    }

    /// Switches listed per recording.
    pub fn shown(&self) -> usize {
        if self.all {
            usize::MAX
        } else {
            20
        }
    }
}

/// A sweep over process counts, one recording each (`oslab timeslice`).
pub struct Sweep<'a> {
    /// The cpu the processes share.
    pub cpu: usize,
    /// Process counts, one recording each.
    pub counts: Vec<usize>,
    /// Length of each recording.
    pub duration: Duration,
    /// Their scheduling class.
    pub class: SchedClass,
    /// The gap threshold.
    pub threshold: &'a crate::activity::Threshold,
    /// Switches listed per recording.
    pub shown: usize,
}

/// What a sweep recorded.
pub struct Swept {
    /// Slice, switch and count per recording.
    pub measurements: Vec<Measurement>,
    /// Who ran when, the recordings one after another.
    pub timeline: Vec<TimelineEvent>,
    /// The switches of each recording and, over several counts, the medians by count.
    pub doc: Doc,
    /// Whether Ctrl-C stopped it (what completed is kept).
    pub interrupted: bool,
}

/// Records every count of the sweep in turn. The caller should wait on another cpu.
pub fn sweep(clock: &Clock, s: &Sweep) -> Result<Swept, ProbeError> {
    let mut measurements = Vec::new();
    let mut timeline = Vec::new();
    let mut doc = vec![Block::Text(format!("threshold: {}", s.threshold.how))];
    let mut interrupted = false;
    let mut offset = 0.0;
    let mut summary = Table::new(&["procs", "slice", "switch", "switches"], &[0, 1, 2, 3]);
    for &n in &s.counts {
        let rec = match record(clock, s.cpu, n, s.duration, s.class, s.threshold.ticks) {
            Ok(r) => r,
            Err(ProbeError::Interrupted) => {
                interrupted = true;
                break;
            }
            Err(e) => return Err(e),
        };
        let slices = schedule(&rec.processes);
        let switches = switches(clock, &slices);
        timeline.extend(self::timeline(clock, &rec, &slices, offset));
        offset += s.duration.as_nanos() as f64 * 1.05;
        let ms = summarise(
            oslab_core::catalog::id::TIMESLICE,
            clock,
            &rec,
            s.class,
            s.cpu,
        );
        doc.push(Block::Text(format!(
            "\n{} on cpu {} ({}):",
            oslab_core::units::counted(n, "process"),
            s.cpu,
            s.class.name()
        )));
        // The gap between two of ours is a switch only when nothing else ran in it: the
        // measurement says whether the kernel's count allows calling it one.
        let mut table = Table::new(&["from", "to", "gap", "slice"], &[0, 1, 2, 3]);
        let limit = s.shown;
        for (from, to, sw, slice) in switches.iter().take(limit) {
            table.row(vec![
                from.to_string(),
                to.to_string(),
                value(*sw, Unit::Ns),
                value(*slice, Unit::Ns),
            ]);
        }
        match switches.is_empty() {
            true => doc.push(Block::Text(
                "  no hand-over between our processes was seen".into(),
            )),
            false => doc.push(Block::Table(table)),
        }
        if let Some(why) = ms
            .iter()
            .find(|m| m.metric == "switch")
            .and_then(|m| m.status.reason())
        {
            doc.push(Block::Text(format!("  switch: {why}")));
        }
        if switches.len() > limit {
            doc.push(Block::Text(format!(
                "  ... {} more (--all)",
                switches.len() - limit
            )));
        }
        let median = |metric: &str| {
            ms.iter()
                .find(|m| m.metric == metric && m.status.has_value())
                .and_then(|m| m.summary.as_ref())
                .map_or("-".to_string(), |s| value(s.median, Unit::Ns))
        };
        summary.row(vec![
            n.to_string(),
            median("slice"),
            median("switch"),
            switches.len().to_string(),
        ]);
        measurements.extend(ms);
    }
    if summary.rows.len() > 1 {
        doc.push(Block::Text(
            "\nslice and switch by number of processes (medians):".into(),
        ));
        doc.push(Block::Table(summary));
    }
    Ok(Swept {
        measurements,
        timeline,
        doc,
        interrupted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proc(index: usize, start: u64, end: u64, gaps: &[(u64, u64)]) -> ProcessRecord {
        ProcessRecord {
            index,
            pid: 100 + index as i32,
            start,
            end,
            gaps: gaps.to_vec(),
        }
    }

    #[test]
    fn interrupts_stay_inside_a_slice_and_handovers_are_switches() {
        // 0 runs 0..100 (a 2-tick interrupt at 40), 1 runs 103..200, 0 runs 204..300.
        let p0 = proc(0, 0, 300, &[(40, 42), (100, 204)]);
        let p1 = proc(1, 103, 200, &[]);
        let s = schedule(&[p0, p1]);
        assert_eq!(
            s,
            [
                Slice {
                    proc: 0,
                    start: 0,
                    end: 100
                },
                Slice {
                    proc: 1,
                    start: 103,
                    end: 200
                },
                Slice {
                    proc: 0,
                    start: 204,
                    end: 300
                }
            ]
        );
        let clock = Clock::monotonic("test".into(), false);
        let sw = switches(&clock, &s);
        assert_eq!(sw, [(0, 1, 3.0, 100.0), (1, 0, 4.0, 97.0)]);
    }

    /// Two processes taking turns with slices of the given lengths (ticks), 3 ticks apart.
    fn turns(slices: &[u64]) -> Schedule {
        let mut gaps = [Vec::new(), Vec::new()];
        let mut t = 0;
        let mut ends = [0u64; 2];
        for (k, len) in slices.iter().enumerate() {
            let (me, other) = (k % 2, 1 - k % 2);
            t += len;
            gaps[me].push((t, t + 3 + slices.get(k + 1).copied().unwrap_or(0)));
            ends[me] = t;
            t += 3;
            ends[other] = ends[other].max(t);
        }
        let end = t + 10;
        Schedule {
            processes: (0..2)
                .map(|i| proc(i, if i == 0 { 0 } else { slices[0] + 3 }, end, &gaps[i]))
                .collect(),
            origin: 0,
            kernel_switches: Err("test".into()),
            rr_interval_ns: None,
        }
    }

    #[test]
    fn a_median_slice_the_recording_cannot_pin_down_is_noisy_with_its_reason() {
        let clock = Clock::monotonic("test".into(), false);
        let slice = |rec: &Schedule| {
            summarise("timeslice", &clock, rec, SchedClass::Other, 0)
                .into_iter()
                .find(|m| m.metric == "slice")
                .unwrap()
        };
        // Steady slices: ok.
        let steady = slice(&turns(&[4000; 40]));
        assert!(
            steady.status.has_value() && !steady.status.is_noisy(),
            "{steady:?}"
        );
        // Slices from 80 to 210,000 ticks: the median is anywhere; noisy, and says why.
        let wild: Vec<u64> = (0..40).map(|k| [80, 210_000, 5_000, 90][k % 4]).collect();
        let m = slice(&turns(&wild));
        assert!(m.status.is_noisy(), "{m:?}");
        assert!(m.note.as_deref().unwrap_or("").contains("noisy:"), "{m:?}");
    }

    #[test]
    fn a_switch_is_reported_only_when_the_kernel_counted_as_many() {
        let clock = Clock::monotonic("test".into(), false);
        let switch = |rec: &Schedule| {
            summarise("timeslice", &clock, rec, SchedClass::Other, 0)
                .into_iter()
                .find(|m| m.metric == "switch")
                .unwrap()
        };
        let mut rec = turns(&[4000; 40]);
        let ours = switches(&clock, &schedule(&rec.processes)).len() as u64;
        rec.kernel_switches = Ok(ours + 1);
        assert!(switch(&rec).status.has_value(), "{:?}", switch(&rec));
        // Eight times ours: other tasks ran in the gaps.
        rec.kernel_switches = Ok(ours * 8);
        let m = switch(&rec);
        assert!(
            matches!(&m.status, Status::Skipped(w) if w.contains("other tasks ran")),
            "{m:?}"
        );
        // No count at all: the gap cannot be told from other tasks' time.
        rec.kernel_switches = Err("perf_event_paranoid 3".into());
        let m = switch(&rec);
        assert!(
            matches!(&m.status, Status::Skipped(w) if w.contains("perf_event_paranoid 3")),
            "{m:?}"
        );
    }
}
