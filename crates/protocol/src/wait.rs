//! The server's requested wait: `Retry-After` and `details.retry_after`.
//!
//! These parsers only read what the server asked for. Negative, empty or
//! garbage values mean "no demand". A demand too large to represent
//! (`Retry-After: 99999999999999999999`) is `Duration::MAX` — longer than any
//! limit, never mistaken for no demand. Deciding what to do with a long
//! demand is the caller's job, because only the caller knows its deadline
//! and its `max_backoff`.

use std::time::{Duration, SystemTime};

use serde_json::Value;

/// Parses a `Retry-After` header value: delay-seconds (`120`) or an HTTP-date
/// (`Wed, 21 Oct 2026 07:28:00 GMT`), relative to `now`. A date in the past is
/// a zero wait.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use recourse_protocol::parse_retry_after;
///
/// let now = SystemTime::now();
/// assert_eq!(parse_retry_after("120", now), Some(Duration::from_secs(120)));
/// assert_eq!(parse_retry_after("99999999999999999999", now), Some(Duration::MAX));
/// assert_eq!(parse_retry_after("-1", now), None);
/// assert_eq!(parse_retry_after("soon", now), None);
/// ```
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    if value.bytes().all(|b| b.is_ascii_digit()) {
        return Some(
            value
                .parse::<u64>()
                .map_or(Duration::MAX, Duration::from_secs),
        );
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Parses `details.retry_after`: `"60s"`, `"1500ms"`, `"2"` (seconds), `"1.5s"`,
/// `"2m"`, or a non-negative JSON number of seconds.
///
/// ```
/// use std::time::Duration;
/// use recourse_protocol::parse_retry_after_detail;
/// use serde_json::json;
///
/// assert_eq!(parse_retry_after_detail(&json!("60s")), Some(Duration::from_secs(60)));
/// assert_eq!(parse_retry_after_detail(&json!("1500ms")), Some(Duration::from_millis(1500)));
/// assert_eq!(parse_retry_after_detail(&json!("2")), Some(Duration::from_secs(2)));
/// assert_eq!(parse_retry_after_detail(&json!("-5s")), None);
/// ```
pub fn parse_retry_after_detail(value: &Value) -> Option<Duration> {
    match value {
        Value::Number(n) => seconds(n.as_f64()?),
        Value::String(s) => parse_duration_text(s),
        _ => None,
    }
}

fn parse_duration_text(s: &str) -> Option<Duration> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    if number.is_empty() || number.starts_with('.') || number.ends_with('.') {
        return None;
    }
    let n: f64 = number.parse().ok()?;
    let secs = match unit.trim() {
        "" | "s" | "sec" | "secs" | "second" | "seconds" => n,
        "ms" | "millis" | "milliseconds" => n / 1000.0,
        "m" | "min" | "mins" | "minute" | "minutes" => n * 60.0,
        _ => return None,
    };
    seconds(secs)
}

fn seconds(secs: f64) -> Option<Duration> {
    if secs.is_nan() || secs < 0.0 {
        None
    } else {
        Some(Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn retry_after_delay_seconds() {
        assert_eq!(parse_retry_after("0", at(0)), Some(Duration::ZERO));
        assert_eq!(
            parse_retry_after(" 7 ", at(0)),
            Some(Duration::from_secs(7))
        );
    }

    #[test]
    fn retry_after_http_date_is_relative_to_now() {
        // 1445412480 = Wed, 21 Oct 2015 07:28:00 GMT
        let date = "Wed, 21 Oct 2015 07:28:00 GMT";
        assert_eq!(
            parse_retry_after(date, at(1_445_412_480 - 30)),
            Some(Duration::from_secs(30))
        );
    }

    #[test]
    fn retry_after_http_date_in_the_past_is_zero() {
        let date = "Wed, 21 Oct 2015 07:28:00 GMT";
        assert_eq!(
            parse_retry_after(date, at(1_445_412_480 + 99)),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn retry_after_obsolete_date_formats_are_read() {
        // RFC 850 and asctime forms are allowed by RFC 9110.
        let now = at(1_445_412_480 - 10);
        assert_eq!(
            parse_retry_after("Wednesday, 21-Oct-15 07:28:00 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            parse_retry_after("Wed Oct 21 07:28:00 2015", now),
            Some(Duration::from_secs(10))
        );
    }

    #[test]
    fn retry_after_negative_fraction_or_garbage_is_none() {
        for v in ["-1", "1.5", "", "   ", "soon", "12abc", "Wed, 99 Foo 2015"] {
            assert_eq!(parse_retry_after(v, at(0)), None, "{v:?}");
        }
    }

    #[test]
    fn retry_after_huge_value_is_returned_uncapped() {
        assert_eq!(
            parse_retry_after("31536000", at(0)),
            Some(Duration::from_secs(31_536_000))
        );
        assert_eq!(
            parse_retry_after("99999999999999999999999", at(0)),
            Some(Duration::MAX),
            "too large to represent is longer than any limit, not absent"
        );
    }

    #[test]
    fn detail_retry_after_units() {
        let cases = [
            (json!("60s"), Some(Duration::from_secs(60))),
            (json!("1500ms"), Some(Duration::from_millis(1500))),
            (json!("2"), Some(Duration::from_secs(2))),
            (json!("1.5s"), Some(Duration::from_millis(1500))),
            (json!("2m"), Some(Duration::from_secs(120))),
            (json!(3), Some(Duration::from_secs(3))),
            (json!(0.25), Some(Duration::from_millis(250))),
        ];
        for (v, want) in cases {
            assert_eq!(parse_retry_after_detail(&v), want, "{v}");
        }
    }

    #[test]
    fn detail_retry_after_negative_or_garbage_is_none() {
        for v in [
            json!("-5s"),
            json!(-1),
            json!("fast"),
            json!("5 parsecs"),
            json!(""),
            json!(null),
            json!(true),
            json!(".s"),
            json!("1."),
        ] {
            assert_eq!(parse_retry_after_detail(&v), None, "{v}");
        }
    }
}
