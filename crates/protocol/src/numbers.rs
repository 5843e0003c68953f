//! Numbers that would not reach a tool as they were written.
//!
//! recourse reads a request into `serde_json` values, whose numbers are
//! 64-bit: an integer beyond `i64`/`u64` becomes the nearest `f64`
//! (`18446744073709551617` reaches the tool as `1.8446744073709552e19`), and
//! a decimal with more digits than an `f64` holds loses them. A payment
//! amount or an account number silently changed on its way is worse than a
//! refusal, so a request is checked, as the text it arrived as, for any
//! number that does not survive the trip unchanged.
//!
//! ```
//! use recourse_protocol::numbers::unrepresentable_number;
//!
//! assert_eq!(unrepresentable_number(br#"{"amount": 12.5, "n": [1, -2, 1e300]}"#), None);
//! let found = unrepresentable_number(br#"{"payload": {"id": 18446744073709551617}}"#).unwrap();
//! assert_eq!(found.pointer, "/payload/id");
//! assert_eq!(found.literal, "18446744073709551617");
//! ```

/// A number in a JSON text that would change on the way: where, and as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnrepresentableNumber {
    /// Its place (a JSON Pointer, RFC 6901).
    pub pointer: String,
    /// The number as written (cut to 64 characters).
    pub literal: String,
}

/// The first number in `json` (a JSON text) that a 64-bit integer or an
/// `f64` cannot hold exactly as written; `None` when every number survives,
/// or when `json` is not JSON (parsing it says why). Linear in the input,
/// never panics, and holds no more than the path to the current value.
pub fn unrepresentable_number(json: &[u8]) -> Option<UnrepresentableNumber> {
    Scanner {
        json,
        at: 0,
        path: Vec::new(),
    }
    .scan()
}

/// A container open around the current place; an object knows whether
/// the path holds one of its keys (after a key, until the next `,`).
enum Frame {
    Object { key: bool },
    Array,
}

/// One level of the path: a key of an object, or an index in an array.
enum Step {
    Key(String),
    Index(usize),
}

struct Scanner<'a> {
    json: &'a [u8],
    at: usize,
    path: Vec<Step>,
}

impl Scanner<'_> {
    fn scan(mut self) -> Option<UnrepresentableNumber> {
        // The containers open around the current place, innermost last.
        let mut open: Vec<Frame> = Vec::new();
        while let Some(&b) = self.json.get(self.at) {
            match b {
                b'{' => open.push(Frame::Object { key: false }),
                b'[' => {
                    open.push(Frame::Array);
                    self.path.push(Step::Index(0));
                }
                b'}' | b']' => {
                    if matches!(open.pop(), Some(Frame::Array | Frame::Object { key: true })) {
                        self.path.pop();
                    }
                }
                b',' => match open.last_mut() {
                    Some(Frame::Object { key }) => {
                        let had_key = std::mem::take(key);
                        self.path.truncate(self.path.len() - usize::from(had_key));
                    }
                    Some(Frame::Array) => {
                        if let Some(Step::Index(i)) = self.path.last_mut() {
                            *i += 1;
                        }
                    }
                    None => {}
                },
                b'"' => {
                    let text = self.string()?;
                    if let Some(Frame::Object { key }) = open.last_mut()
                        && !*key
                    {
                        *key = true;
                        let name = serde_json::from_slice::<String>(text).unwrap_or_default();
                        self.path.push(Step::Key(name));
                    }
                    continue;
                }
                b'-' | b'0'..=b'9' => {
                    let start = self.at;
                    while self.json.get(self.at).is_some_and(|c| {
                        matches!(c, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                    }) {
                        self.at += 1;
                    }
                    let literal = String::from_utf8_lossy(&self.json[start..self.at]);
                    if !survives(&literal) {
                        return Some(UnrepresentableNumber {
                            pointer: self.pointer(),
                            literal: literal.chars().take(64).collect(),
                        });
                    }
                    continue;
                }
                _ => {}
            }
            self.at += 1;
        }
        None
    }

    /// The string starting at the current `"`, quotes included; moves past it.
    fn string(&mut self) -> Option<&[u8]> {
        let start = self.at;
        self.at += 1;
        loop {
            match self.json.get(self.at)? {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    return self.json.get(start..self.at);
                }
                _ => self.at += 1,
            }
        }
    }

    fn pointer(&self) -> String {
        let mut out = String::new();
        for step in &self.path {
            out.push('/');
            match step {
                Step::Key(key) => out.push_str(&key.replace('~', "~0").replace('/', "~1")),
                Step::Index(i) => out.push_str(&i.to_string()),
            }
        }
        out
    }
}

/// Whether the number written `literal` reaches a tool as written: an
/// integer within `i64` or `u64`, or a decimal an `f64` holds exactly as
/// far as its written digits go (no digit lost, not out of range).
fn survives(literal: &str) -> bool {
    let is_integer = !literal.contains(['.', 'e', 'E']);
    if is_integer {
        return literal.parse::<i64>().is_ok() || literal.parse::<u64>().is_ok();
    }
    let Ok(value) = literal.parse::<f64>() else {
        return false;
    };
    if !value.is_finite() {
        return false;
    }
    // The shortest decimal that reads back as the same f64, against what was written.
    match (decimal(literal), decimal(&format!("{value:e}"))) {
        (Some(written), Some(held)) => written == held || (written.0.is_empty() && value == 0.0),
        _ => false,
    }
}

/// A decimal as its significant digits and the power of ten of the last
/// one: `"12.50e3"` → `("125", 2)`, `"0.001"` → `("1", -3)`; `None` when
/// it is not a decimal number.
fn decimal(text: &str) -> Option<(String, i64)> {
    let text = text.strip_prefix('-').unwrap_or(text);
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(i) => (&text[..i], text[i + 1..].parse::<i64>().ok()?),
        None => (text, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if !whole
        .bytes()
        .chain(fraction.bytes())
        .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let digits = format!("{whole}{fraction}");
    let mut power = exponent.checked_sub(i64::try_from(fraction.len()).ok()?)?;
    let significant = digits.trim_start_matches('0');
    let trimmed = significant.trim_end_matches('0');
    power = power.checked_add(i64::try_from(significant.len() - trimmed.len()).ok()?)?;
    Some((trimmed.to_owned(), power))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_that_survive_pass() {
        for json in [
            r#"{"a": 0, "b": -0, "c": 9223372036854775807, "d": -9223372036854775808}"#,
            r#"{"u": 18446744073709551615, "f": 0.1, "g": 12.50, "h": 1e300, "i": -2.5E-3}"#,
            r#"[1.0, 100.00, 0.000, 5e-324, 1.7976931348623157e308]"#,
            r#"{"s": "18446744073709551617 in a string is text", "k\"ey": [1, {"x": 2}]}"#,
        ] {
            assert_eq!(unrepresentable_number(json.as_bytes()), None, "{json}");
        }
    }

    #[test]
    fn numbers_that_would_change_are_found_where_they_are() {
        for (json, pointer, literal) in [
            (
                r#"{"payload": {"id": 18446744073709551617}}"#,
                "/payload/id",
                "18446744073709551617",
            ),
            (
                r#"{"a": [1, 2, -9223372036854775809]}"#,
                "/a/2",
                "-9223372036854775809",
            ),
            (
                r#"{"amount": 1.00000000000000000001}"#,
                "/amount",
                "1.00000000000000000001",
            ),
            (r#"{"x": 1e400}"#, "/x", "1e400"),
            (
                r#"{"a/b": {"c~d": [{"e": 0.30000000000000000001}]}}"#,
                "/a~1b/c~0d/0/e",
                "0.30000000000000000001",
            ),
            (
                r#"{"k": {"n": 1}, "m": 123456789012345678901234567890}"#,
                "/m",
                "123456789012345678901234567890",
            ),
        ] {
            let found = unrepresentable_number(json.as_bytes()).unwrap_or_else(|| panic!("{json}"));
            assert_eq!(
                (found.pointer.as_str(), found.literal.as_str()),
                (pointer, literal),
                "{json}"
            );
        }
    }

    #[test]
    fn any_bytes_are_scanned_without_a_panic() {
        for bytes in [
            &b"\"unterminated"[..],
            b"{\"a\\",
            b"[[[[",
            b"}}]]",
            b"-",
            b"1e",
            b"\xff\xfe",
        ] {
            let _ = unrepresentable_number(bytes);
        }
    }
}
