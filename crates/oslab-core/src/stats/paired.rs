//! Paired A/B experiments, one way for every command that compares two conditions (pinned vs
//! migrated, without vs with shuffling): runs alternate AB, BA, AB, ... so drift between runs
//! hits both arms alike, and the verdict is on the paired differences: their median and its
//! interval, the very figures their measurement shows ([`crate::stats::Summary`]), significant
//! when the interval excludes 0. (A mean with a t interval once read `+14.5%: not significant`
//! beside the table's median `7.06%`: two figures, two intervals for one answer.)

use crate::stats::Summary;

/// One of the two conditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arm {
    /// The baseline.
    A,
    /// The treatment.
    B,
}

/// The results of both arms, run `i` of each in position `i`.
#[derive(Debug)]
pub struct Pairs<T> {
    /// Baseline runs.
    pub a: Vec<T>,
    /// Treatment runs.
    pub b: Vec<T>,
    /// Whether a run asked to stop (the user pressed Ctrl-C): the pairs hold what completed.
    pub stopped: bool,
}

impl<T> Pairs<T> {
    /// `f(b) - f(a)` for every complete pair.
    pub fn differences(&self, f: impl Fn(&T) -> f64) -> Vec<f64> {
        self.a
            .iter()
            .zip(&self.b)
            .map(|(a, b)| f(b) - f(a))
            .collect()
    }
}

/// Runs `pairs` pairs; `run(arm, i)` runs one (`Ok(None)`: stop here). The first arm alternates
/// between pairs. An error ends the experiment and is returned.
pub fn alternate<T, E>(
    pairs: usize,
    mut run: impl FnMut(Arm, usize) -> Result<Option<T>, E>,
) -> Result<Pairs<T>, E> {
    let mut out = Pairs {
        a: Vec::with_capacity(pairs),
        b: Vec::with_capacity(pairs),
        stopped: false,
    };
    for i in 0..pairs {
        let order = match i % 2 {
            0 => [Arm::A, Arm::B],
            _ => [Arm::B, Arm::A],
        };
        for arm in order {
            match run(arm, i)? {
                Some(r) if arm == Arm::A => out.a.push(r),
                Some(r) => out.b.push(r),
                None => {
                    out.stopped = true;
                    return Ok(out);
                }
            }
        }
    }
    Ok(out)
}

/// The verdict on paired differences.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedVerdict {
    /// Median difference.
    pub median: f64,
    /// Its interval (order statistics; the range of the differences below 6 pairs).
    pub low: f64,
    /// Its interval.
    pub high: f64,
    /// How likely the interval is to cover the median (95% from 6 pairs, 75-94% below).
    pub coverage: f64,
    /// Pairs.
    pub n: usize,
}

/// Fewest pairs a difference gets an interval from: with fewer it is a ratio only (two pairs'
/// t interval is 12.7 standard deviations wide, and their range is no interval at all).
pub const MIN_PAIRS: usize = super::MIN_FOR_SHOWN_INTERVAL;

impl PairedVerdict {
    /// The verdict, or `None` with fewer than [`MIN_PAIRS`] pairs.
    pub fn of(differences: &[f64]) -> Option<PairedVerdict> {
        if differences.len() < MIN_PAIRS {
            return None;
        }
        let s = Summary::new(differences)?;
        let (low, high) = s.interval()?;
        Some(PairedVerdict {
            median: s.median,
            low,
            high,
            coverage: s.coverage(),
            n: s.n,
        })
    }

    /// Whether the interval excludes 0.
    pub fn significant(&self) -> bool {
        self.low > 0.0 || self.high < 0.0
    }

    /// The verdict in words, values shown by `show` ("+1.2 ms", "-3.0%").
    pub fn text(&self, show: impl Fn(f64) -> String) -> String {
        let interval = format!(
            "{} median ({:.0}% interval {} .. {})",
            show(self.median),
            self.coverage * 100.0,
            show(self.low),
            show(self.high)
        );
        match self.significant() {
            true => format!("{interval}: significant, the interval excludes 0"),
            false => format!(
                "{interval}: not significant at {} pairs, the interval includes 0 (within run-to-run noise)",
                self.n
            ),
        }
    }
}

/// The verdict in words for `differences`, or why there is none.
pub fn verdict_text(differences: &[f64], show: impl Fn(f64) -> String) -> String {
    match PairedVerdict::of(differences) {
        Some(v) => v.text(show),
        None if differences.is_empty() => "no pairs".into(),
        None => format!(
            "{} median ({}: ratio only, no interval; {MIN_PAIRS} or more pairs give one)",
            show(crate::stats::median(differences).unwrap_or(f64::NAN)),
            crate::units::counted(differences.len(), "pair")
        ),
    }
}

/// The measurement of a paired difference (B - A per pair, or a reduction): the spread is the
/// subject, not noise, so it is `ok` with its interval from [`MIN_PAIRS`] pairs on; with fewer
/// it is `noisy: few samples` and shows no interval ([`crate::stats::Summary::interval`]).
pub fn measurement(
    probe: &str,
    params: serde_json::Map<String, serde_json::Value>,
    metric: &str,
    unit: crate::model::Unit,
    differences: &[f64],
    note: String,
) -> crate::model::Measurement {
    use crate::model::{judged, Cause, Judge, Status};
    let mut m = judged(
        probe,
        params,
        metric,
        unit,
        differences,
        Some(note),
        Judge::Subject,
    );
    m.difference = true;
    if m.status.has_value() && differences.len() < MIN_PAIRS {
        m.status = Status::Noisy(Cause::FewSamples);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arms_alternate_and_stop_keeps_what_completed() {
        let mut seen = Vec::new();
        let p = alternate::<_, ()>(3, |arm, i| {
            seen.push(arm);
            Ok(Some(i))
        })
        .unwrap();
        assert_eq!(seen, [Arm::A, Arm::B, Arm::B, Arm::A, Arm::A, Arm::B]);
        assert_eq!((p.a, p.b, p.stopped), (vec![0, 1, 2], vec![0, 1, 2], false));
        let p =
            alternate::<usize, ()>(3, |arm, i| Ok((i < 1 || arm == Arm::B).then_some(i))).unwrap();
        assert!(p.stopped && p.a == [0] && p.b == [0, 1]);
        assert_eq!(p.differences(|&x| x as f64), [0.0]);
        assert!(alternate::<usize, &str>(2, |_, _| Err("broken")).is_err());
    }

    #[test]
    fn verdicts_say_whether_the_interval_excludes_zero() {
        let show = |v: f64| format!("{v:+.1}");
        let v = PairedVerdict::of(&[10.0, 11.0, 9.0, 10.5]).unwrap();
        assert!(
            v.significant()
                && v.text(show)
                    .contains("significant, the interval excludes 0")
        );
        let v = PairedVerdict::of(&[1.0, -1.0, 2.0, -2.0]).unwrap();
        assert!(!v.significant() && v.text(show).contains("not significant at 4 pairs"));
        assert!(verdict_text(&[1.0], show).contains("no interval"));
        let two = verdict_text(&[1.0, 3.0], show);
        assert!(two.contains("ratio only") && !two.contains(".."), "{two}");
        let m = measurement(
            "p",
            Default::default(),
            "cost",
            crate::model::Unit::Ns,
            &[1.0, 3.0],
            two,
        );
        assert!(m.status.is_noisy() && m.summary.unwrap().interval().is_none());
        let m = measurement(
            "p",
            Default::default(),
            "cost",
            crate::model::Unit::Ns,
            &[1.0, 3.0, 2.0],
            "x".into(),
        );
        assert!(m.status.has_value() && !m.status.is_noisy());
        assert!(m.summary.unwrap().interval().is_some());
    }
}
