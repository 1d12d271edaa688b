//! Activity of a busy process (an activity tracker): a pinned loop reads the clock back to back;
//! a gap between two reads longer than a threshold is a period the loop did not run (a timer
//! tick, an IPI, another task, the hypervisor). The threshold is chosen from the loop's own
//! distribution of gaps, and the periods are summarised: inferred tick frequency, interruptions
//! by size, CPU time lost, beside the kernel's interrupt counts for the CPU.

use crate::harness::check_interrupt;
use crate::probe::{Context, Probe, ProbeError};
use oslab_core::catalog::{self};
use oslab_core::model::{judged, EventKind, Judge, Measurement, TimelineEvent, Unit};
use oslab_core::reason::BadValue;
use oslab_core::{params, Clock, Status};
use oslab_os::clock::Ticks;
use oslab_os::interrupts;
use std::time::{Duration, Instant};

/// The suite's short activity probe (`oslab activity` records longer and keeps the timeline).
pub const PROBES: &[Probe] = &[Probe {
    entry: &catalog::ACTIVITY_NOISE,
    needs: &[],
    cost: 1.0,
    plan: None,
    run: |cx, me| {
        let duration = cx.harness.config.budget * 2;
        let threshold = Threshold::calibrate(&cx.harness.clock, Duration::from_millis(20));
        let rec = record(
            &cx.harness.clock,
            threshold.ticks,
            Limit::Duration(duration),
        )?;
        if rec.interrupted {
            return Err(ProbeError::Interrupted); // the suite stops; a partial probe is not kept
        }
        Ok(summarise(cx, me.id, &rec, &threshold, None))
    },
}];

/// How the gap threshold was chosen.
#[derive(Debug, Clone)]
pub struct Threshold {
    /// The threshold in clock ticks.
    pub ticks: u64,
    /// In words, with the figures it came from.
    pub how: String,
}

impl Threshold {
    /// The threshold a user gave (cycles, "2000", or a time, "3us"), or one chosen from the
    /// loop's own back-to-back reads.
    pub fn from_arg(given: Option<&str>, clock: &Clock) -> Result<Threshold, BadValue> {
        Ok(match given {
            Some(t) => {
                let given = Threshold::given_ns(
                    clock,
                    oslab_core::units::parse_threshold_ns(t, clock.ticks_per_ns)?,
                );
                // Below the loop's own read-to-read time every read is a gap: the recording
                // would grow by the read (2.6 GB in 48 s) and say nothing of interruptions.
                let loop_ticks = Threshold::read_to_read(clock, Duration::from_millis(10));
                if given.ticks < 2 * loop_ticks {
                    return Err(format!(
                        "--threshold {t:?}: below twice this loop's own read-to-read time ({:.1} ns): every read would count as an interruption",
                        clock.ticks_to_ns(loop_ticks as f64)
                    ).into());
                }
                given
            }
            None => Threshold::calibrate(clock, std::time::Duration::from_millis(50)),
        })
    }

    /// The median ticks between back-to-back reads over `window`.
    fn read_to_read(clock: &Clock, window: Duration) -> u64 {
        back_to_back(clock, window).quantile(0.5)
    }

    /// Measures back-to-back reads for `window` and puts the threshold well above the loop's own
    /// jitter (cache and TLB misses) and well below real interruptions (microseconds): the larger
    /// of 4 x the 99.9th percentile and 20 x the median.
    pub fn calibrate(clock: &Clock, window: Duration) -> Threshold {
        let gaps = back_to_back(clock, window);
        let (p50, p99, p999) = (
            gaps.quantile(0.5),
            gaps.quantile(0.99),
            gaps.quantile(0.999),
        );
        let ticks = (4 * p999).max(20 * p50).max(1);
        let ns = |t: u64| clock.ticks_to_ns(t as f64);
        Threshold {
            ticks,
            how: format!(
                "max(4 x p99.9, 20 x p50) of {} back-to-back reads (p50 {:.1} ns, p99 {:.1} ns, p99.9 {:.1} ns) = {:.0} ns",
                gaps.reads,
                ns(p50),
                ns(p99),
                ns(p999),
                ns(ticks)
            ),
        }
    }

    /// A threshold the user gave, in ns.
    pub fn given_ns(clock: &Clock, ns: f64) -> Threshold {
        Threshold {
            ticks: (ns * clock.ticks_per_ns).round().max(1.0) as u64,
            how: format!("given: {ns:.0} ns"),
        }
    }
}

/// Back-to-back read gaps counted by length in ticks: 16 KiB that stay in the cache and the
/// TLB. The 8 MiB of gaps once kept here took a TLB miss every 512 reads where THP was off
/// (2,048 in 2^20 reads, above the 1 in 1,000 that sets p99.9): the threshold measured its
/// own buffer, 350 ns with THP and 870-7,800 ns without.
struct Gaps {
    counts: Vec<u32>,
    reads: u64,
}

impl Gaps {
    /// Gaps this long or longer share the last count.
    const LONGEST: usize = 4095;

    /// The `p` quantile in ticks.
    fn quantile(&self, p: f64) -> u64 {
        let rank = ((self.reads.saturating_sub(1)) as f64 * p) as u64;
        let mut seen = 0u64;
        for (ticks, &c) in self.counts.iter().enumerate() {
            seen += u64::from(c);
            if seen > rank {
                return ticks as u64;
            }
        }
        Self::LONGEST as u64
    }
}

/// Ticks between back-to-back reads of the clock for `window` (at most 2^20 of them).
fn back_to_back(clock: &Clock, window: Duration) -> Gaps {
    let mut gaps = Gaps {
        counts: vec![0; Gaps::LONGEST + 1],
        reads: 0,
    };
    let end = Instant::now() + window;
    let mut last = clock.start();
    while gaps.reads < (1 << 20) {
        let now = clock.start();
        let gap = (now.wrapping_sub(last) as usize).min(Gaps::LONGEST);
        gaps.counts[gap] += 1;
        gaps.reads += 1;
        last = now;
        if gaps.reads.is_multiple_of(4096) && Instant::now() >= end {
            break;
        }
    }
    gaps
}

/// The most inactive periods one recording keeps (64 MiB): a recording that reaches it ends
/// there, its span the time it covered.
pub const MAX_GAPS: usize = 1 << 22;

/// When to stop recording.
#[derive(Debug, Clone, Copy)]
pub enum Limit {
    /// After this long.
    Duration(Duration),
    /// After this many inactive periods (or 60 s, whichever comes first).
    Samples(usize),
}

/// What `oslab activity` asks besides the cpu (which the session resolves).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct Options {
    /// How long to record, e.g. 2s, 500ms.
    #[cfg_attr(feature = "clap", arg(long, value_name = "TIME", value_parser = oslab_core::units::parse_duration, default_value = "2s", conflicts_with = "samples"))]
    pub duration: Duration,
    /// Stop after this many inactive periods instead (at most 60 s).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub samples: Option<usize>,
    /// Gap threshold: clock cycles ("2000") or a time ("3us", "800ns"). Default: chosen from the
    /// loop's own back-to-back reads.
    #[cfg_attr(feature = "clap", arg(long, value_name = "T"))]
    pub threshold: Option<String>,
}

impl Options {
    /// When to stop recording, or why the request cannot be.
    pub fn limit(&self) -> Result<Limit, BadValue> {
        match self.samples {
            Some(0) => Err("--samples must be at least 1".into()),
            Some(n) => Ok(Limit::Samples(n)),
            None => Ok(Limit::Duration(self.duration)),
        }
    }
}

/// What the loop saw: its span and the gaps (start, end) in clock ticks.
#[derive(Debug, Clone)]
pub struct Recording {
    /// First read.
    pub start: u64,
    /// Last read.
    pub end: u64,
    /// Inactive periods: (last read before, first read after).
    pub gaps: Vec<(u64, u64)>,
    /// Clock reads made.
    pub reads: u64,
    /// Interrupt counts of the CPU (delta over the recording), when readable.
    pub interrupts: Vec<(String, u64)>,
    /// Stopped early by Ctrl-C / SIGTERM: what was recorded until then.
    pub interrupted: bool,
}

/// Runs the busy loop on the calling thread (pin it first) until `limit`, or until the user
/// stops us (then the recording so far comes back, marked interrupted).
pub fn record(clock: &Clock, threshold: u64, limit: Limit) -> Result<Recording, ProbeError> {
    let cpu = oslab_os::affinity::current_cpu();
    let before = cpu.map(interrupts::snapshot);
    let (max_time, max_gaps) = match limit {
        Limit::Duration(d) => (d, MAX_GAPS),
        Limit::Samples(n) => (Duration::from_secs(60), n.min(MAX_GAPS)),
    };
    let max_ticks = (max_time.as_nanos() as f64 * clock.ticks_per_ns) as u64;
    // Room for the usual periods made and touched before the loop: a vector grown inside it
    // copies itself (and faults its new pages in) where a gap is being timed.
    let mut gaps = vec![(1u64, 1u64); max_gaps.min(1 << 16)];
    gaps.clear();
    let start = clock.start();
    let mut last = start;
    let mut reads = 0u64;
    let mut interrupted = false;
    loop {
        let now = clock.start();
        reads += 1;
        if now.wrapping_sub(last) > threshold {
            gaps.push((last, now));
            // Rare (interruptions only), so checking here costs the loop nothing.
            if check_interrupt().is_err() {
                interrupted = true;
                last = now;
                break;
            }
            if gaps.len() >= max_gaps {
                last = now;
                break;
            }
        }
        last = now;
        if reads & 0xFFFF == 0 && now.wrapping_sub(start) >= max_ticks {
            break;
        }
    }
    let interrupts = match (cpu, before) {
        (Some(c), Some(b)) => interrupts::delta(&b, &interrupts::snapshot(c)),
        _ => Vec::new(),
    };
    Ok(Recording {
        start,
        end: last,
        gaps,
        reads,
        interrupts,
        interrupted,
    })
}

/// Interruption size classes: upper bounds in ns and labels.
const CLASSES: [(f64, &str); 5] = [
    (1e3, "<1us"),
    (1e4, "1-10us"),
    (1e5, "10-100us"),
    (1e6, "100us-1ms"),
    (f64::INFINITY, ">=1ms"),
];

/// The dominant period between interruptions, in ns. Differences between every pair of
/// interruptions up to 25 ms apart are binned (50 us bins, each judged with its neighbour): a
/// periodic source (the tick) piles up at its period and its multiples, while other
/// interruptions spread out. The period is the shortest bin pair holding at least half as many as
/// the fullest, refined to the median of the differences in it. None with too few interruptions.
pub fn dominant_period_ns(starts_ns: &[f64]) -> Option<f64> {
    const BIN: f64 = 50_000.0;
    const LONGEST: f64 = 25e6;
    if starts_ns.len() < 5 {
        return None;
    }
    let mut bins = std::collections::BTreeMap::<u64, Vec<f64>>::new();
    for (i, &a) in starts_ns.iter().enumerate() {
        for &b in &starts_ns[i + 1..] {
            let d = b - a;
            if d > LONGEST {
                break;
            }
            if d >= 2.0 * BIN {
                bins.entry((d / BIN) as u64).or_default().push(d);
            }
        }
    }
    // A period's differences straddle bin edges: judge each bin together with its neighbour.
    let count = |b: u64| bins.get(&b).map_or(0, Vec::len) + bins.get(&(b + 1)).map_or(0, Vec::len);
    let most = bins.keys().map(|&b| count(b)).max()?;
    let first = *bins.keys().find(|&&b| count(b) * 2 >= most)?;
    let best: Vec<f64> = [first, first + 1]
        .iter()
        .filter_map(|b| bins.get(b))
        .flatten()
        .copied()
        .collect();
    oslab_core::stats::median(&best)
}

/// Whether interruptions every `period_ns` come from outside this kernel: more than 20% more
/// frequent than the local timer interrupts it `counted` a second (a host preempting this
/// virtual cpu). The tick is then what the kernel counted.
fn from_outside(period_ns: f64, counted: Option<f64>) -> bool {
    counted.is_some_and(|hz| 1e9 / period_ns > 1.2 * hz)
}

/// The periods as timeline events: active and inactive spans on one track.
pub fn timeline(clock: &Clock, rec: &Recording, track: &str) -> Vec<TimelineEvent> {
    let ns = |t: u64| clock.ticks_to_ns(t.wrapping_sub(rec.start) as f64);
    let mut out = Vec::with_capacity(rec.gaps.len() * 2 + 1);
    let mut from = rec.start;
    let span = |kind: EventKind, a: u64, b: u64| TimelineEvent {
        track: track.to_string(),
        kind,
        start_ns: ns(a),
        dur_ns: clock.ticks_to_ns(b.wrapping_sub(a) as f64),
        args: params! {},
    };
    for &(a, b) in &rec.gaps {
        out.push(span(EventKind::Active, from, a));
        out.push(span(EventKind::Inactive, a, b));
        from = b;
    }
    out.push(span(EventKind::Active, from, rec.end));
    out
}

/// Summary measurements of a recording: read overhead, threshold, interruptions (durations),
/// count per size class, CPU time lost, longest, inferred tick frequency beside the kernel's
/// local-timer count.
pub fn summarise(
    cx: &Context,
    id: &str,
    rec: &Recording,
    threshold: &Threshold,
    extra: Option<&str>,
) -> Vec<Measurement> {
    let clock = &cx.harness.clock;
    let span_ns = clock.ticks_to_ns(rec.end.wrapping_sub(rec.start) as f64);
    let durations: Vec<f64> = rec
        .gaps
        .iter()
        .map(|&(a, b)| clock.ticks_to_ns(b.wrapping_sub(a) as f64))
        .collect();
    let lost: f64 = durations.iter().sum();
    let base = params! {"cpu" => cx.cpu};
    let note = |s: String| {
        Some(match extra {
            Some(e) => format!("{s}; {e}"),
            None => s,
        })
    };
    let value = |metric: &str, unit: Unit, v: f64, text: String| {
        judged(
            id,
            base.clone(),
            metric,
            unit,
            &[v],
            note(text),
            Judge::Subject,
        )
    };
    // The noise first: `show`'s main figure is a probe's first metric, and the share of time
    // lost is the answer; how the loop saw it (its read's cost, the threshold) comes after.
    let mut out = Vec::new();
    out.push(value(
        "lost_fraction",
        Unit::Share,
        lost / span_ns.max(1.0),
        format!("{:.3} ms inactive in {:.1} ms", lost / 1e6, span_ns / 1e6),
    ));
    out.push(
        value(
            "interruptions",
            Unit::Count,
            durations.len() as f64,
            format!("gaps above the threshold in {:.1} ms", span_ns / 1e6),
        )
        .found("recording_s", (span_ns / 1e6).round() / 1e3),
    );
    let per_read = (span_ns - lost) / rec.reads.max(1) as f64;
    out.push(value(
        "read_overhead",
        Unit::Ns,
        per_read,
        format!(
            "loop time per clock read, {} reads: the smallest gap the tracker can see",
            rec.reads
        ),
    ));
    out.push(value(
        "threshold",
        Unit::Ns,
        clock.ticks_to_ns(threshold.ticks as f64),
        threshold.how.clone(),
    ));
    if !durations.is_empty() {
        let m = judged(
            id,
            base.clone(),
            "interruption",
            Unit::Ns,
            &durations,
            note("duration of each inactive period".into()),
            // The spread is the subject here, not noise.
            Judge::Subject,
        );
        out.push(m);
        let mut lower = 0.0;
        for (upper, label) in CLASSES {
            let n = durations
                .iter()
                .filter(|&&d| d >= lower && d < upper)
                .count();
            let mut p = base.clone();
            p.insert("class".into(), label.into());
            let m = judged(
                id,
                p,
                "count",
                Unit::Count,
                &[n as f64],
                None,
                Judge::Subject,
            );
            out.push(m);
            lower = upper;
        }
    }
    let starts: Vec<f64> = rec
        .gaps
        .iter()
        .map(|&(a, _)| clock.ticks_to_ns(a.wrapping_sub(rec.start) as f64))
        .collect();
    let kernel_timer = interrupts::local_timer(&rec.interrupts);
    let kernel_hz = kernel_timer.map(|n| n as f64 / (span_ns / 1e9));
    let irq_text = if rec.interrupts.is_empty() {
        "interrupt counts not readable".to_string()
    } else {
        let list: Vec<String> = rec
            .interrupts
            .iter()
            .take(6)
            .map(|(k, v)| format!("{k} +{v}"))
            .collect();
        format!("/proc/interrupts for this cpu: {}", list.join(", "))
    };
    let counted = kernel_hz.filter(|&hz| hz > 0.0);
    match dominant_period_ns(&starts) {
        Some(period) if from_outside(period, counted) => {
            let hz = counted.unwrap_or_default();
            out.push(value(
                "periodic_hz",
                Unit::Hz,
                1e9 / period,
                format!(
                    "the most common interval between interruptions ({:.3} ms), faster than the kernel's {hz:.0} local timer interrupts per second: periodic interruptions from outside this kernel (a hypervisor preempting the virtual cpu)",
                    period / 1e6
                ),
            ));
            out.push(
                value(
                    "tick_hz",
                    Unit::Hz,
                    hz,
                    format!("local timer interrupts per second, as the kernel counted them over the recording; {irq_text}"),
                )
                .found("kernel_timer_hz", (hz * 10.0).round() / 10.0),
            );
        }
        Some(period) => {
            let mut m = value(
                "tick_hz",
                Unit::Hz,
                1e9 / period,
                format!(
                    "from the most common interval between interruptions ({:.3} ms); {irq_text}",
                    period / 1e6
                ),
            );
            if let Some(hz) = counted.filter(|&hz| 1e9 / period < hz / 1.2) {
                m.note = m.note.map(|n| format!("{n}; the kernel took {hz:.0} local timer interrupts per second, more than this period shows: some ticks were too short to cross the threshold"));
            }
            if let Some(hz) = kernel_hz {
                m = m.found("kernel_timer_hz", (hz * 10.0).round() / 10.0);
            }
            out.push(m);
        }
        None => out.push(Measurement::not_taken(
            id,
            base,
            "tick_hz",
            Unit::Hz,
            Status::Skipped(format!(
                "too few interruptions to infer a period; {irq_text}"
            )),
        )),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gap_quantiles_come_from_the_counts_and_long_gaps_share_the_last() {
        let mut gaps = Gaps {
            counts: vec![0; Gaps::LONGEST + 1],
            reads: 1000,
        };
        gaps.counts[40] = 980;
        gaps.counts[300] = 18;
        gaps.counts[Gaps::LONGEST] = 2;
        assert_eq!(gaps.quantile(0.5), 40);
        assert_eq!(gaps.quantile(0.99), 300);
        assert_eq!(gaps.quantile(0.999), Gaps::LONGEST as u64);
    }

    #[test]
    fn dominant_period_ignores_stray_interruptions() {
        // A 4 ms tick over 1 s, and as many interruptions again at random times.
        let mut rng = oslab_core::stats::SplitMix64(7);
        let mut starts: Vec<f64> = (0..250).map(|i| i as f64 * 4e6 + 1000.0).collect();
        starts.extend((0..250).map(|_| rng.below(1_000_000) as f64 * 1000.0));
        starts.sort_by(f64::total_cmp);
        let p = dominant_period_ns(&starts).unwrap();
        assert!((p - 4e6).abs() < 1e4, "{p}");
        assert!(dominant_period_ns(&[0.0, 1.0]).is_none());
    }

    #[test]
    fn a_period_faster_than_the_kernels_timer_comes_from_outside() {
        // Every 0.145 ms while the kernel counted 255 timer interrupts a second: a host.
        assert!(from_outside(0.145e6, Some(255.0)));
        // Every 4 ms with 250 counted, or nothing counted: the tick itself.
        assert!(!from_outside(4e6, Some(250.0)));
        assert!(!from_outside(4e6, Some(210.0)));
        assert!(!from_outside(0.145e6, None));
    }

    #[test]
    fn timeline_alternates_and_covers_the_recording() {
        let clock = Clock::monotonic("test".into(), false);
        let rec = Recording {
            start: 1000,
            end: 10_000,
            gaps: vec![(2000, 2500), (6000, 6100)],
            reads: 10,
            interrupts: vec![],
            interrupted: false,
        };
        let t = timeline(&clock, &rec, "cpu 0");
        let kinds: Vec<&str> = t.iter().map(|e| e.kind.name()).collect();
        assert_eq!(
            kinds,
            ["active", "inactive", "active", "inactive", "active"]
        );
        assert_eq!(t[0].start_ns, 0.0);
        let total: f64 = t.iter().map(|e| e.dur_ns).sum();
        assert_eq!(total, 9000.0);
    }
}
