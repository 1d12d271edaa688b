//! Activity recordings as text: the list of periods (one line each) and a histogram of the
//! inactive ones.

use oslab_core::model::{EventKind, TimelineEvent, Unit};
use oslab_core::units::value;

/// What `oslab activity` prints under its table: the threshold, the periods (the first 20
/// unless `all`), their histogram, and the interrupts the kernel counted on `cpu` meanwhile.
pub fn text(
    threshold: &str,
    events: &[TimelineEvent],
    all: bool,
    cpu: usize,
    interrupts: &[(String, u64)],
) -> String {
    let irqs: Vec<String> = interrupts
        .iter()
        .map(|(k, v)| format!("{k} +{v}"))
        .collect();
    format!(
        "threshold: {threshold}\n\n{}\n{}\ninterrupts the kernel counted on cpu {cpu} meanwhile: {}\n",
        periods(events, (!all).then_some(20)),
        histogram(events),
        match irqs.is_empty() {
            true => "not readable".to_string(),
            false => irqs.join(", "),
        }
    )
}

/// The periods, one per line: start (ms from the beginning), duration, state. At most `limit`
/// lines (None: all), with a line saying how many were left out.
pub fn periods(events: &[TimelineEvent], limit: Option<usize>) -> String {
    let shown = limit.unwrap_or(usize::MAX).min(events.len());
    let mut out = format!("{:>12}  {:>10}  state\n", "start ms", "duration");
    for e in &events[..shown] {
        out.push_str(&format!(
            "{:>12.4}  {:>10}  {}\n",
            e.start_ns / 1e6,
            value(e.dur_ns, Unit::Ns),
            e.kind
        ));
    }
    if shown < events.len() {
        out.push_str(&format!(
            "... {} more periods (--periods prints them all; --trace writes them for Perfetto)\n",
            events.len() - shown
        ));
    }
    out
}

/// A histogram of the inactive periods' durations in power-of-two bins.
pub fn histogram(events: &[TimelineEvent]) -> String {
    let durations: Vec<f64> = events
        .iter()
        .filter(|e| e.kind == EventKind::Inactive)
        .map(|e| e.dur_ns.max(1.0))
        .collect();
    if durations.is_empty() {
        return "no inactive periods\n".to_string();
    }
    let bin = |d: f64| d.log2().floor() as i32;
    let lo = durations.iter().map(|&d| bin(d)).min().unwrap_or(0);
    let hi = durations.iter().map(|&d| bin(d)).max().unwrap_or(0);
    let mut counts = vec![0usize; (hi - lo + 1) as usize];
    for &d in &durations {
        counts[(bin(d) - lo) as usize] += 1;
    }
    let most = counts.iter().copied().max().unwrap_or(1).max(1);
    let mut out = String::from("inactive periods by duration:\n");
    for (i, &n) in counts.iter().enumerate() {
        let from = 2f64.powi(lo + i as i32);
        let bar = "#".repeat((n * 40).div_ceil(most));
        out.push_str(&format!(
            "  {:>9} - {:<9} {:>6}  {bar}\n",
            value(from, Unit::Ns),
            value(from * 2.0, Unit::Ns),
            n
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_core::params;

    fn ev(kind: &str, start: f64, dur: f64) -> TimelineEvent {
        TimelineEvent {
            track: "cpu 0".into(),
            kind: kind.into(),
            start_ns: start,
            dur_ns: dur,
            args: params! {},
        }
    }

    #[test]
    fn periods_are_listed_and_truncated() {
        let evs = vec![
            ev("active", 0.0, 4e6),
            ev("inactive", 4e6, 3000.0),
            ev("active", 4.003e6, 1e6),
        ];
        let all = periods(&evs, None);
        assert_eq!(all.lines().count(), 4);
        assert!(all.contains("inactive"));
        let two = periods(&evs, Some(2));
        assert!(two.contains("1 more periods"));
    }

    #[test]
    fn histogram_bins_by_powers_of_two() {
        let evs = vec![
            ev("inactive", 0.0, 3000.0),
            ev("inactive", 1.0, 3500.0),
            ev("inactive", 2.0, 40_000.0),
        ];
        let h = histogram(&evs);
        // 3000 and 3500 share the 2048-4096 ns bin; 40 us lands four bins higher.
        assert_eq!(h.lines().count(), 1 + 5);
        assert!(h.lines().nth(1).unwrap().contains(" 2 "), "{h}");
        assert_eq!(histogram(&[]), "no inactive periods\n");
    }
}
