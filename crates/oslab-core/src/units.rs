//! Units chosen for reading: nanoseconds scale to µs, ms and s; numbers keep three to four
//! significant digits.

use crate::model::Unit;

/// A scale for a time value: divisor and symbol.
pub fn time_scale(ns: f64) -> (f64, &'static str) {
    let a = ns.abs();
    if a >= 1e9 {
        (1e9, "s")
    } else if a >= 1e6 {
        (1e6, "ms")
    } else if a >= 1e4 {
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
        other => (1.0, other.symbol()),
    }
}

/// A number with three to four significant digits.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    if a >= 1000.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else if a >= 1.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(value(95.27, Unit::Ns), "95.27 ns");
        assert_eq!(value(9_999.0, Unit::Ns), "9999 ns");
        assert_eq!(value(123_456.0, Unit::Ns), "123.5 µs");
        assert_eq!(value(2.5e9, Unit::Ns), "2.500 s");
        assert_eq!(bytes(48 << 10), "48 KiB");
        assert_eq!(bytes(480 << 20), "480 MiB");
        assert_eq!(num(f64::NAN), "-");
        assert_eq!(num(0.3333), "0.3333");
    }
}
