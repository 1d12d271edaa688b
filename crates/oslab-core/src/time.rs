//! Wall-clock timestamps in UTC, formatted as RFC 3339, without a date-time dependency.

use std::time::{SystemTime, UNIX_EPOCH};

/// The current time in UTC as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format_utc(secs)
}

/// Formats seconds since the Unix epoch as RFC 3339 UTC.
pub fn format_utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Whether `s` is an RFC 3339 date and time (`2026-11-24T17:45:41Z`, a fraction of a second and
/// an offset allowed): what oslab writes, and all it accepts from a file.
pub fn is_rfc3339(s: &str) -> bool {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>, lo: u32, hi: u32| {
        b.get(r.clone())
            .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
            && s[r].parse::<u32>().is_ok_and(|v| (lo..=hi).contains(&v))
    };
    let fixed = b.len() >= 20
        && num(0..4, 0, 9999)
        && b[4] == b'-'
        && num(5..7, 1, 12)
        && b[7] == b'-'
        && num(8..10, 1, 31)
        && matches!(b[10], b'T' | b't' | b' ')
        && num(11..13, 0, 23)
        && b[13] == b':'
        && num(14..16, 0, 59)
        && b[16] == b':'
        && num(17..19, 0, 60);
    if !fixed {
        return false;
    }
    let mut rest = &s[19..];
    if let Some(f) = rest.strip_prefix('.') {
        let digits = f.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return false;
        }
        rest = &f[digits..];
    }
    match rest.as_bytes() {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', ..] if rest.len() == 6 => {
            let o = rest.as_bytes();
            o[1..3].iter().chain(&o[4..6]).all(u8::is_ascii_digit) && o[3] == b':'
        }
        _ => false,
    }
}

/// Seconds since the Unix epoch of an RFC 3339 date and time ([`is_rfc3339`]), its offset
/// applied; None for anything else. For ordering two times, whatever zone each was written in.
pub fn epoch_seconds(s: &str) -> Option<f64> {
    if !is_rfc3339(s) {
        return None;
    }
    let n = |r: std::ops::Range<usize>| s[r].parse::<i64>().ok();
    let days = days_from_civil(n(0..4)?, n(5..7)?, n(8..10)?);
    let mut secs = (days * 86_400 + n(11..13)? * 3600 + n(14..16)? * 60 + n(17..19)?) as f64;
    let mut rest = &s[19..];
    if let Some(f) = rest.strip_prefix('.') {
        let digits = f.bytes().take_while(u8::is_ascii_digit).count();
        secs += format!("0.{}", &f[..digits]).parse::<f64>().ok()?;
        rest = &f[digits..];
    }
    if let [sign @ (b'+' | b'-'), ..] = rest.as_bytes() {
        let offset = (rest[1..3].parse::<i64>().ok()? * 60 + rest[4..6].parse::<i64>().ok()?) * 60;
        secs -= if *sign == b'+' { offset } else { -offset } as f64;
    }
    Some(secs)
}

/// A proleptic Gregorian date to days since 1970-01-01 (the inverse of [`civil_from_days`]).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's civil_from_days).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_seconds_orders_times_in_any_zone() {
        assert_eq!(epoch_seconds("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(
            epoch_seconds(&format_utc(1_795_000_000)),
            Some(1_795_000_000.0)
        );
        assert_eq!(
            epoch_seconds("2026-01-01T01:00:00.5+01:00"),
            epoch_seconds("2026-01-01T00:00:00.5Z")
        );
        assert_eq!(epoch_seconds("yesterday"), None);
    }

    #[test]
    fn formats_known_instants() {
        assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(format_utc(1_795_000_000), "2026-11-18T11:06:40Z");
    }

    #[test]
    fn rfc3339_is_recognised_and_other_text_is_not() {
        for ok in [
            "2026-11-24T17:45:41Z",
            "2026-11-24T17:45:41.123456Z",
            "2026-11-24T17:45:41+01:00",
            &format_utc(0),
        ] {
            assert!(is_rfc3339(ok), "{ok}");
        }
        for bad in [
            "",
            "yesterday",
            "2026-13-24T17:45:41Z",
            "2026-11-24T25:45:41Z",
            "2026-11-24T17:45:41",
            "2026-11-24T17:45:41.Z",
            "2026-11-24T17:45:41Zjunk",
            "२०२६-11-24T17:45:41Z",
        ] {
            assert!(!is_rfc3339(bad), "{bad}");
        }
    }
}
