//! Robust summaries of samples. Knows nothing about clocks or the OS: numbers in, estimate out.
//!
//! Median and minimum lead; the spread is the inter-quartile range; outliers are counted with
//! Tukey's fences (below Q1 - 1.5 IQR, above Q3 + 1.5 IQR). Nothing is averaged away: a sample
//! whose spread is too wide is flagged by [`Summary::is_noisy`].
//!
//! The 95% confidence interval of the median is computed from *batch medians*: the samples, in
//! the order they were taken, are cut into [`CI_BLOCKS`] consecutive blocks, and the interval is
//! the distribution-free order-statistic interval of the blocks' medians. Samples taken back to
//! back are strongly autocorrelated (a host that slows down does so for many samples), so an
//! interval from thousands of pooled samples is far too narrow; blocks absorb that correlation,
//! and a median that drifts during the measurement widens the interval instead of hiding in it.

use serde::{Deserialize, Serialize};

/// Consecutive blocks the samples are cut into for the CI of the median (fewer samples: one
/// block per sample).
pub const CI_BLOCKS: usize = 20;

/// A summary of at least one finite sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Sample count.
    pub n: usize,
    /// Smallest sample.
    pub min: f64,
    /// First quartile.
    pub p25: f64,
    /// Median.
    pub median: f64,
    /// Third quartile.
    pub p75: f64,
    /// Largest sample.
    pub max: f64,
    /// Arithmetic mean (reported, never used to decide anything).
    pub mean: f64,
    /// Sample standard deviation (n - 1).
    pub stddev: f64,
    /// Lower bound of the 95% CI of the median (from batch medians, see the module docs).
    pub ci_low: f64,
    /// Upper bound of the 95% CI of the median.
    pub ci_high: f64,
    /// Samples outside Tukey's fences (Q1 - 1.5 IQR, Q3 + 1.5 IQR).
    pub outliers: usize,
    /// The tail: 90th percentile, given 10 samples or more (each sample is one timed event or the
    /// mean of one batch; the measurement's `batch` says which).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90: Option<f64>,
    /// 99th percentile, given 100 samples or more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99: Option<f64>,
    /// 99.9th percentile, given 1000 samples or more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p999: Option<f64>,
}

/// The mark after a relative interval that covers the median less often than 95% of the time.
pub const SHORT_COVERAGE: &str = "‡";

/// What [`SHORT_COVERAGE`] means for intervals from these numbers of values (once, in a
/// table's notes), or nothing when every one covers 95%: `‡ the range of 5 values, which holds
/// the median 94% of the time, not 95%`.
pub fn short_coverage_note(values: impl IntoIterator<Item = usize>) -> Option<String> {
    let mut ns: Vec<usize> = values
        .into_iter()
        .filter(|&n| (MIN_FOR_SHOWN_INTERVAL..6).contains(&n))
        .collect();
    ns.sort_unstable();
    ns.dedup();
    let join = |parts: Vec<String>| parts.join(" or ");
    let covered = |n: usize| Summary::range_coverage(n);
    (!ns.is_empty()).then(|| {
        format!(
            "{SHORT_COVERAGE} the range of {} values, which holds the median {} of the time, not 95%",
            join(ns.iter().map(|n| n.to_string()).collect()),
            join(ns.iter().map(|&n| format!("{:.0}%", covered(n) * 100.0)).collect())
        )
    })
}

impl Summary {
    /// How often the range of `n` values covers their median: 1 - 2^(1-n).
    fn range_coverage(n: usize) -> f64 {
        1.0 - 0.5f64.powi(n as i32 - 1)
    }

    /// The interval to show beside the median: none from fewer than 3 values (it would be their
    /// range, not an interval of any confidence).
    pub fn interval(&self) -> Option<(f64, f64)> {
        (self.n >= MIN_FOR_SHOWN_INTERVAL).then_some((self.ci_low, self.ci_high))
    }

    /// How likely the interval is to cover the median: 95% from 6 values on (its order
    /// statistics are chosen so); below that it is the whole range of the values, which covers
    /// it with 1 - 2^(1-n): 75% from 3, 88% from 4, 94% from 5 (5 pairs were once called CI95).
    pub fn coverage(&self) -> f64 {
        match self.n {
            n if n >= 6 => 0.95,
            n => Summary::range_coverage(n),
        }
    }

    /// " (94%)" after an interval whose coverage falls short of 95%; empty otherwise.
    fn short_coverage(&self) -> String {
        match self.coverage() < 0.95 {
            true => format!(" ({:.0}%)", self.coverage() * 100.0),
            false => String::new(),
        }
    }

    /// The significant figures the median deserves: three, fewer when its interval is wide
    /// ([`crate::units::figures_for`]); three without an interval (`n=2 only` says the rest).
    pub fn figures(&self) -> usize {
        self.interval()
            .map_or(3, |(lo, hi)| crate::units::figures_for(self.median, lo, hi))
    }

    /// The median scaled by `div`, in as many figures as its interval allows.
    pub fn median_text(&self, div: f64, unit: crate::units::Unit) -> String {
        crate::units::figure_to(self.median / div, unit, self.figures())
    }

    /// The interval as text, values scaled by `div`, in the median's figures, with its coverage
    /// when under 95% (`1.2 – 3.4 (94%)`); "no interval (n=2)" when there is none.
    pub fn interval_text(&self, div: f64, unit: crate::units::Unit) -> String {
        let num = |v: f64| crate::units::figure_to(v / div, unit, self.figures());
        match self.interval() {
            Some((lo, hi)) => format!("{} – {}{}", num(lo), num(hi), self.short_coverage()),
            None => format!("no interval (n={})", self.n),
        }
    }

    /// The interval relative to the median, short enough for a narrow column: `±0.4%` when its
    /// ends lie about as far from the median, `-6.4/+350%` when one lies over half as far again
    /// as the other (an asymmetric interval is never shown as ±), its ends in `unit` (`0 – 5.5
    /// ms`) when the median is zero or the interval more than ten times it (no percentage of
    /// nothing); `n=2 only` without one (too few values for an interval). An interval that
    /// covers the median less often than 95% (the range of 3-5 values) carries
    /// [`SHORT_COVERAGE`], which [`short_coverage_note`] explains. It reads the same at any scale.
    pub fn relative_interval_text(&self, unit: crate::units::Unit) -> String {
        let Some((lo, hi)) = self.interval() else {
            return format!("n={} only", self.n);
        };
        let mark = match self.coverage() < 0.95 {
            true => SHORT_COVERAGE,
            false => "",
        };
        let size = self.median.abs();
        let (below, above) = (self.median - lo, hi - self.median);
        if size == 0.0 || below.max(above) > 10.0 * size {
            let (div, sym) = crate::units::scale_for(unit, hi.abs().max(lo.abs()));
            let num = crate::units::num;
            return format!("{} – {} {sym}", num(lo / div), num(hi / div))
                .trim_end()
                .to_string()
                + mark;
        }
        let pct = |v: f64| crate::units::percent(v / size);
        let text = if below.max(above) > 1.5 * below.min(above) && below.max(above) > 0.01 * size {
            // One percent sign for both ends; a zero end as 0 (`-0/+1.1%`).
            let bare = pct(below);
            let bare = match bare.trim_end_matches('%') {
                "0.0" => "0",
                b => b,
            };
            format!("-{bare}/+{}", pct(above))
        } else {
            format!("±{}", pct(below.max(above)))
        };
        text + mark
    }

    /// The interval's farther end from the median, relative to it (0.004 for `±0.4%`); none
    /// without an interval.
    pub fn relative_interval(&self) -> Option<f64> {
        let (lo, hi) = self.interval()?;
        let far = (hi - self.median).max(self.median - lo);
        Some(far / self.median.abs().max(f64::MIN_POSITIVE))
    }

    /// Whether the figures can describe one sample set: all finite, at least one sample,
    /// min <= p25 <= median <= p75 <= max, the interval's ends in order, a spread >= 0. A
    /// summary from a file is checked before it is believed.
    pub fn check(&self) -> Result<(), String> {
        let figures = [
            self.min,
            self.p25,
            self.median,
            self.p75,
            self.max,
            self.mean,
            self.stddev,
            self.ci_low,
            self.ci_high,
        ];
        if !figures.iter().all(|v| v.is_finite()) {
            return Err("a figure is not a finite number".into());
        }
        if let Some(v) = figures.iter().find(|v| v.abs() > MOST) {
            return Err(format!(
                "a figure of {v:e} is beyond any measurement (at most {MOST:e} in any unit)"
            ));
        }
        if self.n == 0 {
            return Err("n is 0".into());
        }
        let order = [self.min, self.p25, self.median, self.p75, self.max];
        if order.windows(2).any(|w| w[0] > w[1]) {
            return Err(format!(
                "min {} <= p25 {} <= median {} <= p75 {} <= max {} does not hold",
                self.min, self.p25, self.median, self.p75, self.max
            ));
        }
        if self.ci_low > self.ci_high {
            return Err(format!(
                "the interval {} - {} ends before it starts",
                self.ci_low, self.ci_high
            ));
        }
        if self.stddev < 0.0 {
            return Err(format!("stddev {} is negative", self.stddev));
        }
        Ok(())
    }
}

/// The largest magnitude a believed figure may have, in any unit (1e18 ns is 31 years): a file
/// with larger ones is refused, not drawn (their chart ranges overflowed and hung the report).
pub const MOST: f64 = 1e18;

/// When a summary counts as noisy.
#[derive(Debug, Clone, Copy)]
pub struct NoiseRule {
    /// Maximum CI95 width of the median relative to the median.
    pub max_ci_rel_width: f64,
    /// Maximum IQR relative to the median.
    pub max_iqr_rel: f64,
}

impl Default for NoiseRule {
    fn default() -> Self {
        NoiseRule {
            max_ci_rel_width: 0.10,
            max_iqr_rel: 0.50,
        }
    }
}

impl Summary {
    /// Summarizes `samples`, given in the order they were taken, ignoring non-finite values.
    /// `None` when no finite sample remains.
    pub fn new(samples: &[f64]) -> Option<Summary> {
        let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        let (ci_low, ci_high) = median_ci(&v);
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let (mean, stddev) = mean_sd(&v);
        let (p25, median, p75) = (
            quantile_sorted(&v, 0.25),
            quantile_sorted(&v, 0.5),
            quantile_sorted(&v, 0.75),
        );
        let iqr = p75 - p25;
        // The interval of the block medians holds the median of all samples by construction:
        // when drift puts it outside, the interval widens to it rather than exclude it.
        let (ci_low, ci_high) = (ci_low.min(median), ci_high.max(median));
        let (lo_fence, hi_fence) = (p25 - 1.5 * iqr, p75 + 1.5 * iqr);
        let outliers = v.iter().filter(|&&x| x < lo_fence || x > hi_fence).count();
        // A percentile is reported only when enough samples lie beyond it to place it.
        let tail = |q: f64, need: usize| (n >= need).then(|| quantile_sorted(&v, q));
        Some(Summary {
            p90: tail(0.90, 10),
            p99: tail(0.99, 100),
            p999: tail(0.999, 1000),
            n,
            min: v[0],
            p25,
            median,
            p75,
            max: v[n - 1],
            mean,
            stddev,
            ci_low,
            ci_high,
            outliers,
        })
    }

    /// Inter-quartile range.
    pub fn iqr(&self) -> f64 {
        self.p75 - self.p25
    }

    /// Whether the spread is too wide for the median to be trusted as a point value.
    pub fn is_noisy(&self, rule: NoiseRule) -> bool {
        self.is_noisy_at_scale(rule, self.median.abs())
    }

    /// Like [`Summary::is_noisy`], judging the spread against `scale` instead of the median: for
    /// differences whose true value may be near zero (cost per extra argument), the scale is the
    /// magnitude of what was subtracted.
    pub fn is_noisy_at_scale(&self, rule: NoiseRule, scale: f64) -> bool {
        if scale == 0.0 {
            return self.iqr() > 0.0;
        }
        (self.ci_high - self.ci_low) / scale > rule.max_ci_rel_width
            || self.iqr() / scale > rule.max_iqr_rel
    }

    /// The same summary with every value multiplied by `k` (unit conversion).
    pub fn scaled(&self, k: f64) -> Summary {
        let (lo, hi) = if k >= 0.0 {
            (self.min, self.max)
        } else {
            (self.max, self.min)
        };
        let (clo, chi) = if k >= 0.0 {
            (self.ci_low, self.ci_high)
        } else {
            (self.ci_high, self.ci_low)
        };
        let (q1, q3) = if k >= 0.0 {
            (self.p25, self.p75)
        } else {
            (self.p75, self.p25)
        };
        Summary {
            n: self.n,
            min: lo * k,
            p25: q1 * k,
            median: self.median * k,
            p75: q3 * k,
            max: hi * k,
            mean: self.mean * k,
            stddev: self.stddev * k.abs(),
            ci_low: clo * k,
            ci_high: chi * k,
            outliers: self.outliers,
            // A negative factor turns the upper tail into the lower one, which is not kept.
            p90: self.p90.filter(|_| k >= 0.0).map(|v| v * k),
            p99: self.p99.filter(|_| k >= 0.0).map(|v| v * k),
            p999: self.p999.filter(|_| k >= 0.0).map(|v| v * k),
        }
    }
}

/// Why a summary is noisy under `rule`, judged against `scale` (the median's magnitude, or for
/// near-zero differences the magnitude of what was subtracted); `None` when it is not. Drift during
/// the measurement shows as a wide interval (the interval comes from consecutive blocks).
pub fn noise_reason(summary: &Summary, rule: NoiseRule, scale: f64) -> Option<String> {
    // An interval from fewer samples is their range, not a confidence interval.
    if summary.n < MIN_FOR_INTERVAL {
        return Some(format!(
            "too few samples ({}) for an interval: at least {MIN_FOR_INTERVAL} are needed",
            summary.n
        ));
    }
    summary.is_noisy_at_scale(rule, scale).then(|| {
        format!(
            "spread too wide: CI95 {:.3}-{:.3}, IQR {:.3} around median {:.3}",
            summary.ci_low,
            summary.ci_high,
            summary.iqr(),
            summary.median
        )
    })
}

/// Fewest values an interval is shown from (a summary's, a paired difference's, a side's spread
/// in a comparison): from fewer it would be their range.
pub const MIN_FOR_SHOWN_INTERVAL: usize = 3;

/// Fewest samples a median's interval is drawn from; fewer leave a result noisy.
pub const MIN_FOR_INTERVAL: usize = 5;

/// Mean and sample standard deviation (n - 1 in the denominator; 0 for fewer than two values,
/// NaN mean for none).
pub fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let sd = match v.len() {
        0 | 1 => 0.0,
        _ => (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt(),
    };
    (mean, sd)
}

/// Mean and the 95% confidence interval of the mean (Student's t), for small samples such as
/// paired run differences. None with fewer than two values.
pub fn mean_ci95(samples: &[f64]) -> Option<(f64, f64, f64)> {
    let n = samples.len();
    if n < 2 {
        return None;
    }
    let (mean, sd) = mean_sd(samples);
    let half = student_t(n - 1, TwoSided::P95) * sd / (n as f64).sqrt();
    Some((mean, mean - half, mean + half))
}

/// Two-sided confidence of a Student's t interval.
#[derive(Debug, Clone, Copy)]
pub enum TwoSided {
    /// 95%: the 97.5% quantile.
    P95,
    /// 99%: the 99.5% quantile.
    P99,
}

/// The quantile of Student's t with `df` degrees of freedom for a two-sided interval; beyond 30
/// degrees, the value at the lower end of a range (a little wide, never narrow).
pub fn student_t(df: usize, level: TwoSided) -> f64 {
    const T95: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    const T99: [f64; 30] = [
        63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169, 3.106, 3.055, 3.012,
        2.977, 2.947, 2.921, 2.898, 2.878, 2.861, 2.845, 2.831, 2.819, 2.807, 2.797, 2.787, 2.779,
        2.771, 2.763, 2.756, 2.750,
    ];
    // At 30, 40, 60 and 120 degrees: the lower end of the ranges below.
    let (table, beyond) = match level {
        TwoSided::P95 => (&T95, [2.042, 2.021, 2.000, 1.980]),
        TwoSided::P99 => (&T99, [2.750, 2.704, 2.660, 2.617]),
    };
    match df {
        0 => f64::INFINITY,
        1..=30 => table[df - 1],
        31..=40 => beyond[0],
        41..=60 => beyond[1],
        61..=120 => beyond[2],
        _ => beyond[3],
    }
}

/// Quantile of sorted data by linear interpolation between order statistics (Hyndman-Fan type 7).
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    debug_assert!(!sorted.is_empty());
    let h = (sorted.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// Median of unsorted data, ignoring non-finite values (copies; no interval, unlike
/// [`Summary::new`]).
pub fn median(samples: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(quantile_sorted(&v, 0.5))
}

/// The median absolute deviation of the logarithms of the positive, finite `values` about their
/// median, and how many such values there were: a spread of ratios that one wild value cannot
/// widen (compare's scatter of rows, fleet's noise between nodes). None when there are none.
pub fn log_mad(values: &[f64]) -> Option<(f64, usize)> {
    let logs: Vec<f64> = values
        .iter()
        .filter(|v| **v > 0.0 && v.is_finite())
        .map(|v| v.ln())
        .collect();
    let centre = median(&logs)?;
    let deviations: Vec<f64> = logs.iter().map(|l| (l - centre).abs()).collect();
    Some((median(&deviations)?, logs.len()))
}

/// |modified z| above which a value is an outlier (Iglewicz and Hoaglin).
pub const OUTLIER_Z: f64 = 3.5;

/// Robust (modified) z-scores: 0.6745 (x - median) / MAD, so that one bad value cannot hide
/// itself by inflating the spread as it does a mean and standard deviation. When more than half
/// the values are equal (MAD = 0) the mean absolute deviation stands in, scaled by 1.2533
/// (both estimate sigma for normal data). None with fewer than three values, or when all are
/// equal: nothing can stand out.
pub fn robust_z(values: &[f64]) -> Option<Vec<f64>> {
    if values.len() < 3 || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let med = median(values)?;
    let deviations: Vec<f64> = values.iter().map(|v| (v - med).abs()).collect();
    let mad = median(&deviations)?;
    let scale = if mad > 0.0 {
        mad / 0.6745
    } else {
        1.2533 * deviations.iter().sum::<f64>() / values.len() as f64
    };
    (scale > 0.0).then(|| values.iter().map(|v| (v - med) / scale).collect())
}

/// 95% CI of the median from batch medians: `in_order` (time order) is cut into at most
/// [`CI_BLOCKS`] consecutive blocks, and the interval is the pair of order statistics of the
/// block medians that covers their median with at least 95% probability (binomial, distribution
/// free). With 20 blocks that is the 6th and 15th smallest; with fewer than 6 blocks no pair
/// reaches 95% and the interval is the whole range of the block medians.
pub fn median_ci(in_order: &[f64]) -> (f64, f64) {
    let n = in_order.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let blocks = n.min(CI_BLOCKS);
    let mut medians: Vec<f64> = (0..blocks)
        .filter_map(|b| median(&in_order[b * n / blocks..(b + 1) * n / blocks]))
        .collect();
    medians.sort_by(f64::total_cmp);
    let k = order_statistic_rank(medians.len());
    (medians[k], medians[medians.len() - 1 - k])
}

/// The largest 0-based rank k such that P(Binomial(m, 1/2) <= k) <= 2.5%: the interval
/// [x(k), x(m-1-k)] then covers the median with at least 95% probability (0, the whole range,
/// when even that does not reach 95%).
fn order_statistic_rank(m: usize) -> usize {
    let mut cdf = 0.0;
    let mut term = 0.5f64.powi(m as i32); // P(X = 0)
    let mut k = 0;
    for j in 0..m {
        cdf += term;
        if cdf > 0.025 {
            break;
        }
        k = j;
        term *= (m - j) as f64 / (j + 1) as f64;
    }
    k.min(m.saturating_sub(1) / 2)
}

/// A small, fast, deterministic generator (SplitMix64) for resampling and shuffles.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform integer in `0..n` (n > 0), by Lemire's multiply-shift.
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_reads_as_it_lies_never_as_a_percentage_of_zero() {
        let mut s = Summary::new(&[738.7; 10]).unwrap();
        let text = |s: &Summary| s.relative_interval_text(crate::units::Unit::Ns);
        (s.ci_low, s.ci_high) = (691.0, 3322.0);
        assert_eq!(text(&s), "-6.5/+350%");
        (s.ci_low, s.ci_high) = (730.0, 747.0);
        assert_eq!(text(&s), "±1.2%");
        // Host steal: a zero median, its interval 0-0.0055 (306 digits once).
        s.median = 0.0;
        (s.ci_low, s.ci_high) = (0.0, 0.0055e9);
        assert_eq!(text(&s), "0 – 5.50 ms");
        s.n = 2;
        assert_eq!(text(&s), "n=2 only");
        // Five values' whole range covers the median 94% of the time, and says so.
        s.n = 5;
        (s.median, s.ci_low, s.ci_high) = (100.0, 99.0, 101.0);
        assert_eq!(text(&s), "±1.0%‡");
        assert_eq!(
            short_coverage_note([5, 12, 5]).unwrap(),
            "‡ the range of 5 values, which holds the median 94% of the time, not 95%"
        );
        assert_eq!(short_coverage_note([12, 2]), None);
        assert_eq!(
            s.interval_text(1.0, crate::units::Unit::Ns),
            "99.0 – 101 (94%)"
        );
        // An end at the median reads as 0, one percent sign for both.
        (s.median, s.ci_low, s.ci_high) = (100.0, 100.0, 101.1);
        assert_eq!(text(&s), "-0/+1.1%‡");
    }

    #[test]
    fn fewer_samples_than_an_interval_needs_are_noisy_however_close() {
        let two = Summary::new(&[10.0, 10.0001]).unwrap();
        let why = noise_reason(&two, NoiseRule::default(), 10.0).unwrap();
        assert!(why.contains("too few samples (2)"), "{why}");
        let five = Summary::new(&[10.0; 5]).unwrap();
        assert_eq!(noise_reason(&five, NoiseRule::default(), 10.0), None);
    }

    #[test]
    fn the_tail_is_reported_only_where_samples_place_it() {
        let few = Summary::new(&[1.0; 9]).unwrap();
        assert_eq!((few.p90, few.p99, few.p999), (None, None, None));
        // 1..=1000: the 90th percentile near 900, the 99th near 990, the 99.9th near 999.
        let v: Vec<f64> = (1..=1000).map(f64::from).collect();
        let s = Summary::new(&v).unwrap();
        assert!((s.p90.unwrap() - 900.1).abs() < 1.0, "{s:?}");
        assert!((s.p99.unwrap() - 990.0).abs() < 1.0, "{s:?}");
        assert!((s.p999.unwrap() - 999.0).abs() < 1.0, "{s:?}");
        // Converted units scale the tail; a negative factor drops it.
        assert_eq!(s.scaled(2.0).p99, s.p99.map(|x| x * 2.0));
        assert_eq!(s.scaled(-1.0).p99, None);
    }

    #[test]
    fn mean_interval_widens_with_few_samples() {
        let (m, lo, hi) = mean_ci95(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(m, 2.0);
        // sd 1, n 3: half width 4.303 / sqrt(3)
        assert!((hi - m - 4.303 / 3f64.sqrt()).abs() < 1e-9 && (m - lo - (hi - m)).abs() < 1e-12);
        assert!(mean_ci95(&[1.0]).is_none());
    }

    #[test]
    fn quartiles_of_a_known_sample() {
        let s = Summary::new(&[5.0, 1.0, 4.0, 2.0, 3.0]).unwrap();
        assert_eq!(
            (s.min, s.p25, s.median, s.p75, s.max),
            (1.0, 2.0, 3.0, 4.0, 5.0)
        );
        assert_eq!(s.mean, 3.0);
        assert!((s.stddev - 2.5f64.sqrt()).abs() < 1e-12);
        assert_eq!(s.outliers, 0);
    }

    #[test]
    fn tukey_counts_far_points() {
        let mut v: Vec<f64> = (0..100).map(|i| 100.0 + (i % 10) as f64).collect();
        v.push(1000.0);
        v.push(-500.0);
        let s = Summary::new(&v).unwrap();
        assert_eq!(s.outliers, 2);
    }

    #[test]
    fn ci_contains_median_and_narrows_with_n() {
        let mut rng = SplitMix64(7);
        let draw = |rng: &mut SplitMix64, n: usize| -> Vec<f64> {
            (0..n)
                .map(|_| 100.0 + (rng.next_u64() % 1000) as f64 / 100.0)
                .collect()
        };
        let small = Summary::new(&draw(&mut rng, 30)).unwrap();
        let large = Summary::new(&draw(&mut rng, 3000)).unwrap();
        for s in [&small, &large] {
            assert!(s.ci_low <= s.median && s.median <= s.ci_high);
        }
        assert!(large.ci_high - large.ci_low < small.ci_high - small.ci_low);
    }

    #[test]
    fn summary_is_reproducible() {
        let v: Vec<f64> = (0..501).map(|i| ((i * 7919) % 1000) as f64).collect();
        assert_eq!(Summary::new(&v), Summary::new(&v));
    }

    #[test]
    fn noisy_when_bimodal() {
        let v: Vec<f64> = (0..200)
            .map(|i| if i % 2 == 0 { 1.0 } else { 5.0 })
            .collect();
        assert!(Summary::new(&v).unwrap().is_noisy(NoiseRule::default()));
        let tight: Vec<f64> = (0..200).map(|i| 100.0 + (i % 3) as f64).collect();
        assert!(!Summary::new(&tight).unwrap().is_noisy(NoiseRule::default()));
    }

    #[test]
    fn drift_between_blocks_widens_the_interval() {
        let steady: Vec<f64> = (0..1000).map(|i| 100.0 + (i % 5) as f64).collect();
        let s = Summary::new(&steady).unwrap();
        assert!(noise_reason(&s, NoiseRule::default(), s.median).is_none());
        // The host slows down by 30% half way: thousands of samples, but two regimes.
        let shifted: Vec<f64> = (0..1000)
            .map(|i| if i < 500 { 100.0 } else { 130.0 } + (i % 3) as f64)
            .collect();
        let s = Summary::new(&shifted).unwrap();
        assert!(s.ci_low < 105.0 && s.ci_high > 125.0, "{s:?}");
        let why = noise_reason(&s, NoiseRule::default(), s.median).unwrap();
        assert!(why.contains("CI95"), "{why}");
        // The same values shuffled in time are one regime per block: a narrow interval.
        let mut rng = SplitMix64(3);
        let mut mixed = shifted.clone();
        for i in (1..mixed.len()).rev() {
            mixed.swap(i, rng.below(i + 1));
        }
        let s = Summary::new(&mixed).unwrap();
        assert!(s.ci_high - s.ci_low < 30.0, "{s:?}");
    }

    #[test]
    fn order_statistic_ranks_match_the_binomial_table() {
        // 20 blocks: the 6th and 15th smallest (0-based 5 and 14); 10: 2nd and 9th; 6: the range.
        assert_eq!(order_statistic_rank(20), 5);
        assert_eq!(order_statistic_rank(10), 1);
        assert_eq!(order_statistic_rank(6), 0);
        assert_eq!(order_statistic_rank(5), 0);
        assert_eq!(order_statistic_rank(1), 0);
        assert_eq!(median_ci(&[3.0]), (3.0, 3.0));
    }

    #[test]
    fn median_agrees_with_summary() {
        let v: Vec<f64> = (0..101)
            .map(|i| ((i * 37) % 101) as f64)
            .chain([f64::NAN])
            .collect();
        assert_eq!(median(&v), Summary::new(&v).map(|s| s.median));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn ignores_non_finite_and_handles_empty() {
        assert!(Summary::new(&[]).is_none());
        assert!(Summary::new(&[f64::NAN]).is_none());
        let s = Summary::new(&[f64::INFINITY, 2.0]).unwrap();
        assert_eq!((s.n, s.median), (1, 2.0));
    }

    #[test]
    fn scaling_keeps_order() {
        let s = Summary::new(&[1.0, 2.0, 3.0, 10.0]).unwrap().scaled(2.0);
        assert_eq!((s.min, s.max, s.median), (2.0, 20.0, 5.0));
        let neg = Summary::new(&[1.0, 2.0, 3.0]).unwrap().scaled(-1.0);
        assert!(neg.min <= neg.median && neg.median <= neg.max);
    }

    #[test]
    fn robust_z_finds_the_one_slow_node() {
        // Eight nodes near 100, one at 140: only it stands out, by far.
        let v = [100.0, 101.0, 99.0, 100.5, 98.5, 100.0, 101.5, 99.5, 140.0];
        let z = robust_z(&v).unwrap();
        let out: Vec<usize> = (0..v.len()).filter(|&i| z[i].abs() > OUTLIER_Z).collect();
        assert_eq!(out, vec![8]);
        assert!(z[8] > 20.0, "{z:?}");
        // A plain z-score would not flag it: the outlier inflates the standard deviation.
        let mean = v.iter().sum::<f64>() / 9.0;
        let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 8.0).sqrt();
        assert!((140.0 - mean) / sd < 3.5);
        // Most equal: MAD is 0, the mean absolute deviation takes over.
        let z = robust_z(&[5.0, 5.0, 5.0, 5.0, 9.0]).unwrap();
        assert!(z[4] > OUTLIER_Z && z[0] == 0.0, "{z:?}");
        assert!(robust_z(&[1.0, 2.0]).is_none());
        assert!(robust_z(&[3.0, 3.0, 3.0]).is_none());
        assert!(robust_z(&[1.0, f64::NAN, 2.0]).is_none());
    }
}
