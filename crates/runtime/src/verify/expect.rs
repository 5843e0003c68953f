//! Expectations over a read's result: `POINTER OP VALUE`.
//!
//! `POINTER` is a JSON Pointer into the result (`/status`, `/address/zip`),
//! `OP` one of `==`, `!=`, `exists` and `!exists`, and `VALUE` (for `==` and
//! `!=` only) a JSON literal (`"cancelled"`, `42`, `true`, `null`, `[1]`) or a
//! template over the write's payload (`{{payload.zip}}`, which keeps the
//! value's type; inside a JSON string, `"W-{{payload.id}}"`, it is text).
//!
//! `exists` holds when the pointer reaches a value other than `null`, and
//! `!exists` when it does not; `==` and `!=` hold only when the pointer
//! reaches a value, equal or not to `VALUE` (numbers compare by value:
//! `1 == 1.0`). A missing field makes `==` and `!=` fail alike, so a read
//! that lost a field never reads as a change.

use std::fmt;

use recourse_protocol::{redact, truncate_chars};
use serde_json::Value;

use recourse_core::protect::validate_pointer;

/// The longest expectation accepted, in bytes.
const MAX_LEN: usize = 4096;

/// How a value is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExpectOp {
    Eq,
    Ne,
    Exists,
    Absent,
}

impl ExpectOp {
    fn as_str(self) -> &'static str {
        match self {
            Self::Eq => "==",
            Self::Ne => "!=",
            Self::Exists => "exists",
            Self::Absent => "!exists",
        }
    }
}

/// One parsed expectation; its value may still hold `{{payload.…}}` templates.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Expectation {
    pub(crate) pointer: String,
    pub(crate) op: ExpectOp,
    pub(crate) value: Option<Value>,
}

impl Expectation {
    /// Parses `POINTER OP VALUE`.
    ///
    /// # Errors
    /// A pointer that is not a JSON Pointer, an unknown operator, a missing
    /// or extra value, or a value that is neither JSON nor a template.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        if text.len() > MAX_LEN {
            return Err(format!("an expectation has at most {MAX_LEN} bytes"));
        }
        let bad = |why: String| format!("expectation {text:?}: {why}");
        let (pointer, rest) = split_word(text.trim());
        if !pointer.starts_with('/') {
            return Err(bad(
                "it starts with a JSON Pointer into the result, such as /status".to_owned(),
            ));
        }
        validate_pointer(pointer).map_err(|e| bad(e.to_string()))?;
        let (op, value) = split_word(rest);
        let op = match op {
            "==" => ExpectOp::Eq,
            "!=" => ExpectOp::Ne,
            "exists" => ExpectOp::Exists,
            "!exists" => ExpectOp::Absent,
            "" => {
                return Err(bad(
                    "an operator follows the pointer: ==, !=, exists or !exists".to_owned(),
                ));
            }
            other => {
                return Err(bad(format!(
                    "{other:?} is not an operator (==, !=, exists, !exists)"
                )));
            }
        };
        let value = match (op, value) {
            (ExpectOp::Exists | ExpectOp::Absent, "") => None,
            (ExpectOp::Exists | ExpectOp::Absent, extra) => {
                return Err(bad(format!(
                    "{} takes no value, not {extra:?}",
                    op.as_str()
                )));
            }
            (_, "") => return Err(bad(format!("{} needs a value", op.as_str()))),
            (_, text) => Some(operand(text).map_err(bad)?),
        };
        Ok(Self {
            pointer: pointer.to_owned(),
            op,
            value,
        })
    }

    /// Whether the expectation holds in `doc`, with `value` resolved
    /// already; `Err` says what was found instead.
    pub(crate) fn check(&self, doc: &Value, value: Option<&Value>) -> Result<(), String> {
        let found = doc.pointer(&self.pointer);
        let holds = match (self.op, found, value) {
            (ExpectOp::Exists, Some(v), _) => !v.is_null(),
            (ExpectOp::Exists, None, _) => false,
            (ExpectOp::Absent, found, _) => found.is_none_or(Value::is_null),
            (ExpectOp::Eq, Some(v), Some(want)) => same(v, want),
            (ExpectOp::Ne, Some(v), Some(want)) => !same(v, want),
            (ExpectOp::Eq | ExpectOp::Ne, _, _) => false,
        };
        if holds {
            return Ok(());
        }
        let seen = found.map_or_else(|| "missing".to_owned(), |v| format!("is {}", shown(v)));
        let wanted = match value {
            Some(want) => format!("{} {}", self.op.as_str(), shown(want)),
            None => self.op.as_str().to_owned(),
        };
        Err(redact(&format!(
            "{} {seen}, expected {wanted}",
            self.pointer
        )))
    }
}

impl fmt::Display for Expectation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.value {
            Some(v) => write!(f, "{} {} {v}", self.pointer, self.op.as_str()),
            None => write!(f, "{} {}", self.pointer, self.op.as_str()),
        }
    }
}

/// The first whitespace-separated word, and the rest trimmed.
fn split_word(text: &str) -> (&str, &str) {
    match text.find(char::is_whitespace) {
        Some(i) => (&text[..i], text[i..].trim()),
        None => (text, ""),
    }
}

/// A JSON literal, or a bare `{{payload.x}}` template (kept as a string
/// the template resolver reads as a whole value).
fn operand(text: &str) -> Result<Value, String> {
    let bare = text.starts_with("{{") && text.ends_with("}}") && text.matches("{{").count() == 1;
    if bare {
        return Ok(Value::String(text.to_owned()));
    }
    serde_json::from_str(text).map_err(|_| {
        format!(
            "{text:?} is neither a JSON value (\"cancelled\", 42, true, null) nor a {{{{payload.field}}}} template"
        )
    })
}

/// JSON equality, except that numbers compare by value (`1 == 1.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

fn shown(v: &Value) -> String {
    truncate_chars(&v.to_string(), 80)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn holds(text: &str, doc: Value) -> Result<(), String> {
        let e = Expectation::parse(text).unwrap();
        e.check(&doc, e.value.as_ref())
    }

    #[test]
    fn the_four_operators() {
        let doc = json!({"status": "cancelled", "n": 2, "gone": null, "items": [1, 2.0]});
        assert!(holds(r#"/status == "cancelled""#, doc.clone()).is_ok());
        assert!(holds(r#"/status != "pending""#, doc.clone()).is_ok());
        assert!(holds("/n == 2.0", doc.clone()).is_ok());
        assert!(holds("/items == [1.0, 2]", doc.clone()).is_ok());
        assert!(holds("/status exists", doc.clone()).is_ok());
        assert!(holds("/gone !exists", doc.clone()).is_ok());
        assert!(holds("/nowhere !exists", doc.clone()).is_ok());
        let err = holds(r#"/status == "pending""#, doc.clone()).unwrap_err();
        assert_eq!(err, r#"/status is "cancelled", expected == "pending""#);
        assert_eq!(
            holds("/gone exists", doc.clone()).unwrap_err(),
            "/gone is null, expected exists"
        );
        assert_eq!(
            holds(r#"/nowhere != "x""#, doc).unwrap_err(),
            r#"/nowhere missing, expected != "x""#,
            "a missing field fails != too"
        );
    }

    #[test]
    fn values_are_json_or_a_template() {
        let e = Expectation::parse("/address/zip == {{payload.zip}}").unwrap();
        assert_eq!(e.value, Some(json!("{{payload.zip}}")));
        let e = Expectation::parse(r#"/memo == "two words""#).unwrap();
        assert_eq!(e.value, Some(json!("two words")));
        assert_eq!(e.to_string(), r#"/memo == "two words""#);
    }

    #[test]
    fn malformed_expectations_are_named() {
        for (bad, why) in [
            ("status == 1", "JSON Pointer"),
            ("/status", "an operator follows"),
            ("/status ~= 1", "not an operator"),
            ("/status ==", "needs a value"),
            ("/status exists 1", "takes no value"),
            ("/status == cancelled", "neither a JSON value"),
        ] {
            let err = Expectation::parse(bad).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
        assert!(Expectation::parse(&format!("/a == \"{}\"", "x".repeat(5000))).is_err());
    }
}
