//! RFC 3339 timestamps for the journal and the record, without a date-time
//! dependency.

use std::time::{SystemTime, UNIX_EPOCH};

/// `time` as RFC 3339 in UTC with milliseconds, e.g. `2026-11-30T02:43:08.123Z`.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// assert_eq!(recourse_core::journal::rfc3339(UNIX_EPOCH + Duration::from_millis(1_445_412_480_250)), "2015-10-21T07:28:00.250Z");
/// ```
pub fn rfc3339(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(i64::try_from(days).unwrap_or(i64::MAX / 2));
    // Written digit by digit: the journal stamps every row it writes, and
    // `format!` costs some thirty times as much.
    let mut out = String::with_capacity(24);
    padded(&mut out, y.unsigned_abs(), 4);
    out.push('-');
    padded(&mut out, u64::from(m), 2);
    out.push('-');
    padded(&mut out, u64::from(d), 2);
    out.push('T');
    padded(&mut out, rem / 3600, 2);
    out.push(':');
    padded(&mut out, rem % 3600 / 60, 2);
    out.push(':');
    padded(&mut out, rem % 60, 2);
    out.push('.');
    padded(&mut out, u64::from(since.subsec_millis()), 3);
    out.push('Z');
    out
}

/// `n` in decimal, zero-padded to at least `width` digits.
fn padded(out: &mut String, n: u64, width: usize) {
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(n);
    out.extend(std::iter::repeat_n('0', width.saturating_sub(digits.len())));
    out.push_str(digits);
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Now, as RFC 3339.
pub fn rfc3339_now() -> String {
    rfc3339(SystemTime::now())
}

/// `lease` from now, as RFC 3339 (which sorts as text in time order).
pub fn lease_until(lease: std::time::Duration) -> String {
    rfc3339(SystemTime::now() + lease)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn known_dates() {
        let ms = Duration::from_millis;
        let cases = [
            (UNIX_EPOCH, "1970-01-01T00:00:00.000Z"),
            (UNIX_EPOCH + ms(951_782_400_000), "2000-02-29T00:00:00.000Z"),
            (
                UNIX_EPOCH + ms(1_796_083_200_000),
                "2026-12-01T00:00:00.000Z",
            ),
            (UNIX_EPOCH + ms(946_684_799_999), "1999-12-31T23:59:59.999Z"),
            (
                UNIX_EPOCH + ms(1_709_210_096_007),
                "2024-02-29T12:34:56.007Z",
            ),
            // Past the year 9999 the year takes the digits it needs.
            (
                UNIX_EPOCH + ms(253_402_300_800_000),
                "10000-01-01T00:00:00.000Z",
            ),
            // Before the epoch is the epoch (the journal never stamps such a time).
            (UNIX_EPOCH - ms(1_000), "1970-01-01T00:00:00.000Z"),
        ];
        for (time, expected) in cases {
            assert_eq!(rfc3339(time), expected);
        }
    }

    proptest::proptest! {
        /// The journal compares leases as text: later times must sort later.
        #[test]
        fn text_order_is_time_order(a in 0u64..253_402_300_800_000, b in 0u64..253_402_300_800_000) {
            let (ta, tb) = (rfc3339(UNIX_EPOCH + Duration::from_millis(a)), rfc3339(UNIX_EPOCH + Duration::from_millis(b)));
            proptest::prop_assert_eq!(ta.len(), 24);
            proptest::prop_assert_eq!(a.cmp(&b), ta.cmp(&tb));
        }
    }
}
