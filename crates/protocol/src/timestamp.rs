//! RFC 3339 timestamps (`2026-07-28T12:00:00.250Z`), as MCP failure metadata's
//! `retryNotBefore` carries them: read totally, written in UTC.
//!
//! Small enough to keep here rather than pull a date crate into a crate that
//! tool authors depend on.

use std::time::{Duration, SystemTime};

const SECS_PER_DAY: i64 = 86_400;

/// Parses an RFC 3339 date-time (`T`, `t` or a space between date and time;
/// `Z` or a `±HH:MM` offset; up to nine fractional digits, more ignored).
/// `None` for anything else. A time before 1970 is the epoch: as a wait, it
/// is already past.
pub fn parse_rfc3339(text: &str) -> Option<SystemTime> {
    let b = text.trim().as_bytes();
    if b.len() < 20 || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let sep = |i: usize, c: u8| b.get(i) == Some(&c);
    if !(sep(4, b'-') && sep(7, b'-') && sep(13, b':') && sep(16, b':')) {
        return None;
    }
    let (year, month, day) = (digits(b, 0, 4)?, digits(b, 5, 2)?, digits(b, 8, 2)?);
    let (hour, minute, second) = (digits(b, 11, 2)?, digits(b, 14, 2)?, digits(b, 17, 2)?);
    if !(1..=12).contains(&month)
        || day == 0
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut i = 19;
    let mut nanos: u32 = 0;
    if b[i] == b'.' {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            if i - start < 9 {
                nanos = nanos * 10 + u32::from(b[i] - b'0');
            }
            i += 1;
        }
        let kept = (i - start).min(9);
        if kept == 0 {
            return None;
        }
        nanos *= 10u32.pow(u32::try_from(9 - kept).ok()?);
    }
    let offset = match b.get(i..)? {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (h, m) = (digits(b, i + 1, 2)?, digits(b, i + 4, 2)?);
            if h > 23 || m > 59 {
                return None;
            }
            let secs = i64::from(h * 3600 + m * 60);
            if *sign == b'+' { secs } else { -secs }
        }
        _ => return None,
    };
    // A leap second is the last second of its minute.
    let second = second.min(59);
    let days = days_from_civil(i64::from(year), month, day);
    let secs = days * SECS_PER_DAY + i64::from(hour * 3600 + minute * 60 + second) - offset;
    let Ok(secs) = u64::try_from(secs) else {
        return Some(SystemTime::UNIX_EPOCH);
    };
    SystemTime::UNIX_EPOCH.checked_add(Duration::new(secs, nanos))
}

/// `when` as `YYYY-MM-DDTHH:MM:SS.mmmZ`, clamped to years 1970–9999: what
/// the MCP failure metadata's `retryNotBefore` was before it became epoch
/// milliseconds, kept to test that the reader still takes it.
#[cfg(test)]
pub(crate) fn format_rfc3339(when: SystemTime) -> String {
    const MAX_SECS: u64 = 253_402_300_799; // 9999-12-31T23:59:59Z
    let since = when
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    let (secs, millis) = if since.as_secs() > MAX_SECS {
        (MAX_SECS, 999)
    } else {
        (since.as_secs(), since.subsec_millis())
    };
    let secs = i64::try_from(secs).unwrap_or(0);
    let (year, month, day) = civil_from_days(secs.div_euclid(SECS_PER_DAY));
    let rest = secs.rem_euclid(SECS_PER_DAY);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

fn digits(b: &[u8], at: usize, len: usize) -> Option<u32> {
    b.get(at..at + len)?.iter().try_fold(0u32, |n, &c| {
        c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
    })
}

fn is_leap(year: u32) -> bool {
    year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400))
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (the well-known
/// era-based algorithm: 400-year eras of 146 097 days, March-based years).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let month = i64::from(month);
    let day_of_year = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The inverse of [`days_from_civil`].
#[cfg(test)]
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn reads_utc_offsets_and_fractions() {
        // 1445412480 = 2015-10-21T07:28:00Z
        assert_eq!(
            parse_rfc3339("2015-10-21T07:28:00Z"),
            Some(at(1_445_412_480))
        );
        assert_eq!(
            parse_rfc3339("2015-10-21t07:28:00z"),
            Some(at(1_445_412_480))
        );
        assert_eq!(
            parse_rfc3339("2015-10-21 09:28:00+02:00"),
            Some(at(1_445_412_480))
        );
        assert_eq!(
            parse_rfc3339("2015-10-21T02:58:00-04:30"),
            Some(at(1_445_412_480))
        );
        assert_eq!(
            parse_rfc3339("2015-10-21T07:28:00.25Z"),
            Some(at(1_445_412_480) + Duration::from_millis(250))
        );
        assert_eq!(
            parse_rfc3339("2015-10-21T07:28:00.1234567891234Z"),
            Some(at(1_445_412_480) + Duration::from_nanos(123_456_789))
        );
        assert_eq!(
            parse_rfc3339("2016-12-31T23:59:60Z"),
            Some(at(1_483_228_799))
        );
        assert_eq!(
            parse_rfc3339("1969-12-31T23:59:59Z"),
            Some(SystemTime::UNIX_EPOCH)
        );
    }

    #[test]
    fn refuses_what_is_not_a_date_time() {
        for text in [
            "",
            "2015-10-21",
            "2015-10-21T07:28:00",
            "2015-13-01T00:00:00Z",
            "2015-02-29T00:00:00Z",
            "2015-10-21T24:00:00Z",
            "2015-10-21T07:28:00.Z",
            "2015-10-21T07:28:00+2:00",
            "2015-10-21T07:28:00Zjunk",
            "Wed, 21 Oct 2015 07:28:00 GMT",
            "２015-10-21T07:28:00Z",
        ] {
            assert_eq!(parse_rfc3339(text), None, "{text:?}");
        }
        assert!(parse_rfc3339("2016-02-29T00:00:00Z").is_some());
    }

    #[test]
    fn writes_utc_with_milliseconds_and_reads_back() {
        let when = at(1_445_412_480) + Duration::from_millis(7);
        assert_eq!(format_rfc3339(when), "2015-10-21T07:28:00.007Z");
        assert_eq!(parse_rfc3339(&format_rfc3339(when)), Some(when));
        assert_eq!(format_rfc3339(at(0)), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            format_rfc3339(SystemTime::UNIX_EPOCH + Duration::from_secs(u64::MAX / 4)),
            "9999-12-31T23:59:59.999Z"
        );
        for secs in [951_782_400, 1_709_164_800, 4_107_542_400] {
            assert_eq!(
                parse_rfc3339(&format_rfc3339(at(secs))),
                Some(at(secs)),
                "{secs}"
            );
        }
    }
}
