//! Units chosen for reading: nanoseconds scale to µs, ms and s; numbers keep three significant
//! figures, fewer when their interval is wide.

use crate::reason::BadValue;
use serde::{Deserialize, Serialize};

/// Unit of a measured value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Nanoseconds.
    Ns,
    /// Clock cycles.
    Cycles,
    /// Gigabytes (1e9 bytes) per second.
    #[serde(rename = "gbps")]
    GBps,
    /// Bytes.
    Bytes,
    /// A plain count.
    Count,
    /// Events per second (a timer's rate).
    Hz,
    /// A ratio of two like quantities (a speedup, a speed relative to the fastest), printed `×`.
    Ratio,
    /// A share of a whole (0..1), printed as a percentage.
    Share,
}

impl Unit {
    /// The symbol printed after values.
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::Cycles => "cycles",
            Unit::GBps => "GB/s",
            Unit::Bytes => "B",
            Unit::Count => "",
            Unit::Hz => "Hz",
            Unit::Ratio => "×",
            Unit::Share => "%",
        }
    }

    /// Whether a larger value is better (rates), so the best sample is the maximum.
    pub fn higher_is_better(self) -> bool {
        self == Unit::GBps
    }

    /// Parses the stored name.
    pub fn from_name(s: &str) -> Option<Unit> {
        serde_json::from_value(serde_json::Value::String(s.to_string())).ok()
    }

    /// The stored name.
    pub fn name(self) -> String {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::String(s)) => s,
            _ => String::new(),
        }
    }
}

/// A scale for a time value: divisor and symbol.
pub fn time_scale(ns: f64) -> (f64, &'static str) {
    let a = ns.abs();
    if a >= 1e9 {
        (1e9, "s")
    } else if a >= 1e6 {
        (1e6, "ms")
    } else if a >= 1e3 {
        (1e3, "µs")
    } else {
        (1.0, "ns")
    }
}

/// The scale to print values of `unit` whose typical magnitude is `typical`.
pub fn scale_for(unit: Unit, typical: f64) -> (f64, &'static str) {
    match unit {
        Unit::Ns => time_scale(typical),
        Unit::Bytes => {
            let a = typical.abs();
            if a >= (1u64 << 30) as f64 {
                ((1u64 << 30) as f64, "GiB")
            } else if a >= (1u64 << 20) as f64 {
                ((1u64 << 20) as f64, "MiB")
            } else if a >= 1024.0 {
                (1024.0, "KiB")
            } else {
                (1.0, "B")
            }
        }
        Unit::Share => (0.01, "%"),
        other => (1.0, other.symbol()),
    }
}

/// A number with three significant figures (`1.65`, `12.3`, `123`, `0.0777`); a whole part is
/// never rounded into zeros (`1598`, not `1600`); beyond six digits, or below 0.0001, in
/// scientific notation (`1.23e9`): a hostile or extreme figure never prints 300 digits.
pub fn num(v: f64) -> String {
    num_to(v, 3)
}

/// A number with `figures` significant figures (at least one), under [`num`]'s other rules.
pub fn num_to(v: f64, figures: usize) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let figures = figures.max(1);
    // -0.0 (a difference of equal values, a negated zero) reads as 0, not "-0".
    let v = if v == 0.0 { 0.0 } else { v };
    let a = v.abs();
    if a >= 1e6 || (a < 1e-4 && a > 0.0) {
        return format!("{v:.*e}", figures - 1);
    }
    if a == 0.0 {
        return "0".into();
    }
    // Digits before the point, less one: 2 for 123.4, -2 for 0.0123.
    let exponent = a.log10().floor() as i64;
    let places = (figures as i64 - 1 - exponent).max(0) as usize;
    let text = format!("{v:.places$}");
    // Rounding can carry into a new digit (9.996 -> "10.00"): one place fewer then.
    let carried = text
        .parse::<f64>()
        .is_ok_and(|r| r.abs() >= 10f64.powi(exponent as i32 + 1));
    match carried && places > 0 {
        true => format!("{v:.*}", places - 1),
        false => text,
    }
}

/// How many significant figures a median with the interval `low`..`high` deserves: three, two
/// when the interval's half width is over 10% of the median, one when it is over the median
/// itself. Digits the interval already disowns are noise, not precision.
pub fn figures_for(median: f64, low: f64, high: f64) -> usize {
    let relative = (high - low).abs() / 2.0 / median.abs();
    match relative {
        r if r.is_nan() || r > 1.0 => 1,
        r if r > 0.1 => 2,
        _ => 3,
    }
}

/// A value of `unit` already scaled: a whole count as an integer (`698`, not `698.0`), anything
/// else as [`num`] writes it.
pub fn figure(v: f64, unit: Unit) -> String {
    figure_to(v, unit, 3)
}

/// [`figure`] with `figures` significant figures.
pub fn figure_to(v: f64, unit: Unit, figures: usize) -> String {
    match unit {
        Unit::Count if v.fract() == 0.0 && v.abs() < 1e6 => format!("{v:.0}"),
        _ => num_to(v, figures),
    }
}

/// A value with its unit, scaled for reading: `1.23 µs`.
pub fn value(v: f64, unit: Unit) -> String {
    let (div, sym) = scale_for(unit, v);
    if sym.is_empty() {
        num(v / div)
    } else {
        format!("{} {sym}", num(v / div))
    }
}

/// A duration someone chose, as they would type it: `80 ns`, `5 µs`, `200 ms`, `1.5 s`.
pub fn setting(d: std::time::Duration) -> String {
    let ns = d.as_secs_f64() * 1e9;
    let (div, sym) = [(1e9, "s"), (1e6, "ms"), (1e3, "µs")]
        .into_iter()
        .find(|(div, _)| ns >= *div)
        .unwrap_or((1.0, "ns"));
    let v = format!("{:.3}", ns / div);
    format!("{} {sym}", v.trim_end_matches('0').trim_end_matches('.'))
}

/// A share as a percentage for reading, two significant figures at most: `0.4%`, `12%`,
/// `0.04%`; a nonzero share too small for that reads `<0.01%`, never `0.0%`.
pub fn percent(share: f64) -> String {
    let p = share * 100.0;
    // Never a nonzero share shown as nothing: an interval of "±0.0%" claimed no width at all.
    match p.abs() {
        0.0 => "0.0%".to_string(),
        a if a < 0.01 => format!("{}<0.01%", if p < 0.0 { "-" } else { "" }),
        a if a < 0.1 => format!("{p:.2}%"),
        a if a < 10.0 => format!("{p:.1}%"),
        _ => format!("{p:.0}%"),
    }
}

/// `n` things, the noun in the number it takes: `1 cpu`, `2 cpus`, `0 pairs`, `3 processes`
/// (`noun` is the singular; its plural adds `s`, or `es` after s, x, sh, ch).
pub fn counted(n: usize, noun: &str) -> String {
    match n {
        1 => format!("1 {noun}"),
        _ if noun.ends_with(['s', 'x']) || noun.ends_with("sh") || noun.ends_with("ch") => {
            format!("{n} {noun}es")
        }
        _ => format!("{n} {noun}s"),
    }
}

/// A span of seconds for reading, as precise as a person needs: `8 s`, `1m 40s`, `2h 05m`.
pub fn duration(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, s % 3600 / 60),
    }
}

/// A size for reading: `32 KiB`, `1.5 MiB`, `4 GiB` (powers of 1024, three significant digits).
pub fn bytes(bytes: u64) -> String {
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < 4 {
        v /= 1024.0;
        unit += 1;
    }
    let sym = ["B", "KiB", "MiB", "GiB", "TiB"][unit];
    if v.fract() == 0.0 || v >= 100.0 {
        format!("{v:.0} {sym}")
    } else if v >= 10.0 {
        format!("{v:.1} {sym}")
    } else {
        format!("{:.2} {sym}", v).replace(".00 ", " ")
    }
}

// What people type: sizes, durations, shares and thresholds, checked with a message that says
// what was expected.

/// Parses "5%" or "0.05" into 0.05.
pub fn parse_fraction(s: &str) -> Result<f64, BadValue> {
    let t = s.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| format!("{s:?} is not a fraction (5% or 0.05)"))?;
    if !(0.0..10.0).contains(&v) {
        return Err(format!("{s:?}: give a fraction between 0% and 1000%").into());
    }
    Ok(v)
}

/// A factor someone types (a time scale): a finite number above 0 and at most a million.
pub fn parse_scale(s: &str) -> Result<f64, BadValue> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 1e6 => Ok(v),
        _ => Err(format!("{s:?}: give a number above 0 and at most 1000000").into()),
    }
}

/// A growth someone types (each further lock's sections this much longer): a finite number from
/// 0 to a thousand.
pub fn parse_growth(s: &str) -> Result<f64, BadValue> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=1000.0).contains(&v) => Ok(v),
        _ => Err(format!("{s:?}: give a number from 0 to 1000").into()),
    }
}

/// A share of a whole, `10%` or `0.1`: above 0 and at most 100%.
pub fn parse_share(s: &str) -> Result<f64, BadValue> {
    let v = parse_fraction(s)?;
    if v <= 0.0 || v > 1.0 {
        return Err(format!("{s:?}: a share of thread time is above 0% and at most 100%").into());
    }
    Ok(v)
}

/// Parses a byte size: "4096", "512K", "2.8G", "1GiB", "64MB" (binary multiples).
pub fn parse_bytes(s: &str) -> Result<u64, BadValue> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size (e.g. 512M, 2.8G)"))?;
    let mult: u64 = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return Err(format!("{s:?}: unknown unit (use K, M, G or T)").into()),
    };
    let bytes = n * mult as f64;
    if !(1.0..=(1u64 << 50) as f64).contains(&bytes) {
        return Err(format!("{s:?}: size must be between 1 byte and 1 PiB").into());
    }
    Ok(bytes as u64)
}

/// Parses a duration: "2s", "500ms", "250us", "80ns", "1.5" (seconds), "1m".
pub fn parse_duration(s: &str) -> Result<std::time::Duration, BadValue> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (e.g. 2s, 500ms)"))?;
    let secs = match unit.trim() {
        "" | "s" => n,
        "ms" => n / 1e3,
        "us" | "µs" => n / 1e6,
        "ns" => n / 1e9,
        "m" | "min" => n * 60.0,
        other => {
            return Err(format!("{s:?}: unknown unit {other:?} (use s, ms, us, ns or m)").into())
        }
    };
    if !(secs > 0.0 && secs <= 86_400.0) {
        return Err(format!("{s:?}: must be more than 0 and at most a day").into());
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

/// A threshold in ns: cycles ("2000", at `ticks_per_ns`) or a time ("3us", "800ns").
pub fn parse_threshold_ns(s: &str, ticks_per_ns: f64) -> Result<f64, BadValue> {
    let t = s.trim();
    // (number, ns per unit); cycles are divided by the rate, not multiplied by its inverse.
    let (num, to_ns): (&str, &dyn Fn(f64) -> f64) = if let Some(n) = t.strip_suffix("ns") {
        (n, &|v| v)
    } else if let Some(n) = t.strip_suffix("us") {
        (n, &|v| v * 1e3)
    } else if let Some(n) = t.strip_suffix("ms") {
        (n, &|v| v * 1e6)
    } else {
        (t.strip_suffix("cycles").unwrap_or(t), &|v| v / ticks_per_ns)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("--threshold {s:?}: give cycles (2000) or a time (3us, 800ns)"))?;
    if !v.is_finite() || v <= 0.0 {
        return Err(format!("--threshold {s:?}: must be a positive number").into());
    }
    let ns = to_ns(v);
    // A longer gap is no jitter of a busy loop: such a threshold would count nothing.
    if ns > 1e9 {
        return Err(format!(
            "--threshold {s:?}: at most 1 s (a longer threshold counts no interruption)"
        )
        .into());
    }
    Ok(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_takes_the_nouns_plural() {
        assert_eq!(counted(1, "process"), "1 process");
        assert_eq!(counted(3, "process"), "3 processes");
        assert_eq!(counted(2, "cpu"), "2 cpus");
        assert_eq!(counted(0, "switch"), "0 switches");
    }

    #[test]
    fn durations_read_as_a_person_says_them() {
        assert_eq!(duration(-1.0), "0 s");
        assert_eq!(duration(8.4), "8 s");
        assert_eq!(duration(100.0), "1m 40s");
        assert_eq!(duration(7500.0), "2h 05m");
        assert_eq!(num(-0.0), "0");
        assert_eq!(percent(0.004), "0.4%");
        assert_eq!(percent(0.0004), "0.04%");
        assert_eq!(percent(0.00000004), "<0.01%");
        assert_eq!(percent(-0.00000004), "-<0.01%");
        assert_eq!(percent(0.0), "0.0%");
        assert_eq!(percent(-0.12), "-12%");
    }

    #[test]
    fn settings_read_as_typed() {
        let d = |s| setting(parse_duration(s).unwrap());
        assert_eq!(d("80ns"), "80 ns");
        assert_eq!(d("5us"), "5 µs");
        assert_eq!(d("200ms"), "200 ms");
        assert_eq!(d("1.5"), "1.5 s");
        assert_eq!(d("1m"), "60 s");
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(bytes(32 << 10), "32 KiB");
        assert_eq!(bytes(1536 << 10), "1.50 MiB");
        assert_eq!(bytes(48 << 20), "48 MiB");
        assert_eq!(bytes(1 << 30), "1 GiB");
        assert_eq!(bytes(100), "100 B");
    }

    #[test]
    fn scales_and_precision() {
        assert_eq!(value(95.27, Unit::Ns), "95.3 ns");
        // Microseconds from 1000 ns: a column never holds 1418 ns beside 16.49 µs.
        assert_eq!(value(999.0, Unit::Ns), "999 ns");
        assert_eq!(value(1_418.0, Unit::Ns), "1.42 µs");
        assert_eq!(figure(698.0, Unit::Count), "698");
        assert_eq!(figure(69.85, Unit::Count), "69.8");
        assert_eq!(value(123_456.0, Unit::Ns), "123 µs");
        assert_eq!(value(2.5e9, Unit::Ns), "2.50 s");
        assert_eq!(value(16.0, Unit::Hz), "16.0 Hz");
        assert_eq!(bytes(48 << 10), "48 KiB");
        assert_eq!(bytes(480 << 20), "480 MiB");
        assert_eq!(num(f64::NAN), "-");
        assert_eq!(num(1.7e300), "1.70e300");
        assert_eq!(num(-2e-9), "-2.00e-9");
        assert_eq!(num(999_999.0), "999999");
        assert_eq!(figure(1e12, Unit::Count), "1.00e12");
        assert_eq!(num(0.3333), "0.333");
        assert_eq!(num(0.0777), "0.0777");
        // A rounding that carries keeps three figures, not four.
        assert_eq!(num(9.996), "10.0");
        assert_eq!(num(0.09996), "0.100");
        assert_eq!(num(-99.96), "-100");
    }

    #[test]
    fn a_wide_interval_keeps_fewer_figures() {
        // Within 10%: three; within the median itself: two; wider: one. A whole part is never
        // rounded into zeros.
        assert_eq!(figures_for(16.98, 16.5, 17.4), 3);
        assert_eq!(num_to(16.98, figures_for(16.98, 14.0, 20.0)), "17");
        assert_eq!(num_to(1.654, figures_for(1.654, 0.9, 2.5)), "1.7");
        assert_eq!(num_to(738.7, figures_for(738.7, 691.0, 3322.0)), "739");
        assert_eq!(num_to(0.0777, figures_for(0.0777, 0.0016, 1.404)), "0.08");
        // No median to be relative to: one figure.
        assert_eq!(figures_for(0.0, 0.0, 0.0055), 1);
    }

    #[test]
    fn durations_and_thresholds_parse() {
        assert_eq!(parse_duration("2s").unwrap().as_millis(), 2000);
        assert_eq!(parse_duration("250ms").unwrap().as_millis(), 250);
        assert_eq!(parse_duration("1.5").unwrap().as_millis(), 1500);
        assert!(parse_duration("0s").is_err() && parse_duration("3 weeks").is_err());
        assert_eq!(parse_threshold_ns("3us", 2.6), Ok(3000.0));
        assert_eq!(parse_threshold_ns("2600", 2.6), Ok(1000.0));
        assert!(parse_threshold_ns("-1ns", 2.6).is_err() && parse_threshold_ns("x", 2.6).is_err());
        for bad in ["inf", "NaN", "infns", "2000ms", "1e300"] {
            assert!(parse_threshold_ns(bad, 2.6).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("512K"), Ok(512 << 10));
        assert_eq!(parse_bytes("1GiB"), Ok(1 << 30));
        assert_eq!(parse_bytes("2.5g"), Ok(5 << 29));
        assert!(parse_bytes("12Q").is_err());
        assert!(parse_bytes("lots").is_err());
        assert!(parse_bytes("0").is_err());
    }
}
