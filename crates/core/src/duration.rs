//! Durations as people write them in flags and JSON: an integer with `s`,
//! `m`, `h` or `d` (`90s`, `15m`, `24h`, `7d`), the same string in both.
//!
//! ```
//! use std::time::Duration;
//! use recourse_core::duration::parse_duration;
//!
//! assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(7 * 86_400)));
//! assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
//! assert!(parse_duration("7 days").is_err());
//! ```

use std::fmt;
use std::time::Duration;

/// The longest duration written: 100 years, in days.
const MAX_DAYS: u64 = 36_500;

/// A duration that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurationError(String);

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a duration: write an integer with s, m, h or d (90s, 15m, 24h, 7d), or 0",
            self.0
        )
    }
}

impl std::error::Error for DurationError {}

/// Reads `text`: an integer with a unit (`s`, `m`, `h`, `d`), or `0`; at
/// most 100 years.
///
/// # Errors
/// Anything else: a bare number other than 0, another unit, a sign, a
/// fraction, spaces, or more than 100 years.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let refused = || DurationError(text.chars().take(40).collect());
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let split = text.len().checked_sub(1).ok_or_else(refused)?;
    let (number, unit) = text.split_at_checked(split).ok_or_else(refused)?;
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return Err(refused());
    }
    let n: u64 = number.parse().map_err(|_| refused())?;
    let secs_per = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        _ => return Err(refused()),
    };
    let secs = n.checked_mul(secs_per).ok_or_else(refused)?;
    if secs > MAX_DAYS * 86_400 {
        return Err(refused());
    }
    Ok(Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_zero_are_read() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("15m"), Ok(Duration::from_secs(900)));
        assert_eq!(parse_duration("24h"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert_eq!(
            parse_duration("36500d"),
            Ok(Duration::from_secs(36_500 * 86_400))
        );
    }

    #[test]
    fn anything_else_is_refused_with_the_form() {
        for bad in [
            "",
            "7",
            "d",
            "-1d",
            "1.5h",
            "7 d",
            " 7d",
            "7D",
            "7w",
            "1e3s",
            "36501d",
            "99999999999999999999d",
            "7dd",
            "é",
        ] {
            let e = parse_duration(bad).unwrap_err();
            assert!(
                e.to_string().contains("integer with s, m, h or d"),
                "{bad}: {e}"
            );
        }
    }
}
