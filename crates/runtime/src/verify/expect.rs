//! Expectations over a read's result, as written: `POINTER OP VALUE`.
//!
//! `POINTER` is a JSON Pointer into the result (`/status`, `/address/zip`),
//! or `$` for the whole result (a read that answers a bare array or value).
//! `OP` says what must be true of the value found there:
//!
//! | `OP` | holds when the value found |
//! |---|---|
//! | `==`, `!=` | equals `VALUE`, or does not (numbers by value: `1 == 1.0`) |
//! | `exists`, `!exists` | is there and not `null`, or is not |
//! | `contains`, `!contains` | is a string holding `VALUE`, an array with an element equal to it, an object with it as a key — or is not |
//! | `starts_with`, `ends_with` | is a string starting or ending with `VALUE` |
//! | `<`, `<=`, `>`, `>=` | is a number so compared with `VALUE` |
//! | `in` | equals one of `VALUE`'s elements (`in ["resolved", "closed"]`) |
//! | `any` | is an array with an element (or an object with a value) whose fields, by the pointers `VALUE` names relative to it, equal `VALUE`'s (`any {"/symbol": "NVDA", "/amount": 120}`) |
//! | `grew_by` | is an array, object or number that grew by exactly `VALUE` (an integer, negative for a removal) since the read before the write |
//!
//! `VALUE` (for every operator but `exists` and `!exists`) is a JSON literal
//! or a template over the write's payload: `{{payload.zip}}` alone keeps the
//! value's type; inside a JSON value a template is a quoted string,
//! `"{{payload.symbol}}"`, which keeps it too, and `"W-{{payload.id}}"` is
//! text. A literal of the wrong kind (`starts_with 3`, `< "x"`, `grew_by 0`)
//! is refused here; a template is checked once filled. How each operator
//! reads a document is `super::compare`.

use std::fmt;

use serde_json::Value;

use recourse_core::protect::validate_pointer;

/// The longest expectation accepted, in bytes.
const MAX_LEN: usize = 4096;

/// What the value at the pointer is compared by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExpectOp {
    Eq,
    Ne,
    Exists,
    Absent,
    Contains,
    NotContains,
    StartsWith,
    EndsWith,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    Any,
    GrewBy,
}

impl ExpectOp {
    /// Every operator, in the order the documentation lists them.
    pub(crate) const ALL: [Self; 15] = [
        Self::Eq,
        Self::Ne,
        Self::Exists,
        Self::Absent,
        Self::Contains,
        Self::NotContains,
        Self::StartsWith,
        Self::EndsWith,
        Self::Lt,
        Self::Le,
        Self::Gt,
        Self::Ge,
        Self::In,
        Self::Any,
        Self::GrewBy,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Eq => "==",
            Self::Ne => "!=",
            Self::Exists => "exists",
            Self::Absent => "!exists",
            Self::Contains => "contains",
            Self::NotContains => "!contains",
            Self::StartsWith => "starts_with",
            Self::EndsWith => "ends_with",
            Self::Lt => "<",
            Self::Le => "<=",
            Self::Gt => ">",
            Self::Ge => ">=",
            Self::In => "in",
            Self::Any => "any",
            Self::GrewBy => "grew_by",
        }
    }

    fn parse(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|op| op.as_str() == word)
    }

    /// Whether it compares with a value (all but `exists` and `!exists`).
    pub(crate) fn takes_value(self) -> bool {
        !matches!(self, Self::Exists | Self::Absent)
    }

    /// Whether it compares the read after the write with the read before
    /// it: such an expectation states a change, never a state.
    pub(crate) fn is_change(self) -> bool {
        self == Self::GrewBy
    }

    /// Whether `value` (a literal, or filled from the payload) is one this
    /// operator compares with; `Err` says what it takes.
    pub(crate) fn check_operand(self, value: &Value) -> Result<(), String> {
        let fits = match self {
            Self::StartsWith | Self::EndsWith => value.is_string(),
            Self::Lt | Self::Le | Self::Gt | Self::Ge => value.is_number(),
            Self::In => value.is_array(),
            Self::Any => return any_fields(value),
            Self::GrewBy => value.as_i64().is_some_and(|n| n != 0),
            Self::Eq | Self::Ne | Self::Contains | Self::NotContains => true,
            Self::Exists | Self::Absent => false,
        };
        if fits {
            return Ok(());
        }
        let takes = match self {
            Self::StartsWith | Self::EndsWith => "a string",
            Self::Lt | Self::Le | Self::Gt | Self::Ge => "a number",
            Self::In => "an array of the values allowed",
            Self::GrewBy => "a non-zero integer (negative for a removal)",
            _ => "no value",
        };
        Err(format!("{} takes {takes}, not {value}", self.as_str()))
    }
}

/// `any`'s value: an object of relative JSON Pointers, at least one.
fn any_fields(value: &Value) -> Result<(), String> {
    let fields = value
        .as_object()
        .filter(|fields| !fields.is_empty())
        .ok_or_else(|| {
            format!("any takes an object of fields, such as {{\"/symbol\": \"NVDA\"}}, not {value}")
        })?;
    match fields.keys().find(|k| !k.is_empty() && !k.starts_with('/')) {
        Some(key) => Err(format!(
            "any's field {key:?} is not a JSON Pointer into the element (it starts with '/')"
        )),
        None => Ok(()),
    }
}

/// One parsed expectation; its value may still hold `{{payload.…}}` templates.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Expectation {
    /// A JSON Pointer; empty for `$`, the whole result.
    pub(crate) pointer: String,
    pub(crate) op: ExpectOp,
    pub(crate) value: Option<Value>,
}

impl Expectation {
    /// Parses `POINTER OP VALUE`.
    ///
    /// # Errors
    /// A pointer that is neither `$` nor a JSON Pointer, an unknown
    /// operator, a missing or extra value, a value that is neither JSON nor
    /// a template, or a literal of a kind the operator does not take.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        if text.len() > MAX_LEN {
            return Err(format!("an expectation has at most {MAX_LEN} bytes"));
        }
        let bad = |why: String| format!("expectation {text:?}: {why}");
        let (pointer, rest) = split_word(text.trim());
        let pointer = match pointer {
            "$" => "",
            p if p.starts_with('/') => {
                validate_pointer(p).map_err(|e| bad(e.to_string()))?;
                p
            }
            _ => {
                return Err(bad(
                    "it starts with a JSON Pointer into the result, such as /status, or $ for all of it"
                        .to_owned(),
                ));
            }
        };
        let (op, value) = split_word(rest);
        let op = match (ExpectOp::parse(op), op) {
            (Some(op), _) => op,
            (None, "") => return Err(bad(format!("an operator follows the pointer: {}", names()))),
            (None, other) => {
                return Err(bad(format!("{other:?} is not an operator ({})", names())));
            }
        };
        let value = match (op.takes_value(), value) {
            (false, "") => None,
            (false, extra) => {
                return Err(bad(format!(
                    "{} takes no value, not {extra:?}",
                    op.as_str()
                )));
            }
            (true, "") => return Err(bad(format!("{} needs a value", op.as_str()))),
            (true, text) => {
                let value = operand(text).map_err(bad)?;
                if !is_template(&value) {
                    op.check_operand(&value).map_err(bad)?;
                }
                Some(value)
            }
        };
        Ok(Self {
            pointer: pointer.to_owned(),
            op,
            value,
        })
    }

    /// The pointer as written: `$` for the whole result.
    pub(crate) fn written_pointer(&self) -> &str {
        if self.pointer.is_empty() {
            "$"
        } else {
            &self.pointer
        }
    }
}

impl fmt::Display for Expectation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (pointer, op) = (self.written_pointer(), self.op.as_str());
        match &self.value {
            Some(v) => write!(f, "{pointer} {op} {v}"),
            None => write!(f, "{pointer} {op}"),
        }
    }
}

/// The operators, for an error that lists them.
fn names() -> String {
    let names: Vec<&str> = ExpectOp::ALL.iter().map(|op| op.as_str()).collect();
    names.join(", ")
}

/// The first whitespace-separated word, and the rest trimmed.
fn split_word(text: &str) -> (&str, &str) {
    match text.find(char::is_whitespace) {
        Some(i) => (&text[..i], text[i..].trim()),
        None => (text, ""),
    }
}

/// Whether `value` is one template and nothing else (its kind is known once filled).
fn is_template(value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|s| s.starts_with("{{") && s.ends_with("}}") && s.matches("{{").count() == 1)
}

/// A JSON literal, or a bare `{{payload.x}}` template (kept as a string
/// the template resolver reads as a whole value).
fn operand(text: &str) -> Result<Value, String> {
    let bare = Value::String(text.to_owned());
    if is_template(&bare) {
        return Ok(bare);
    }
    serde_json::from_str(text).map_err(|_| {
        format!(
            "{text:?} is neither a JSON value (\"cancelled\", 42, true, null, [\"a\", \"b\"]) nor a {{{{payload.field}}}} template"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_json_or_a_template() {
        let e = Expectation::parse("/address/zip == {{payload.zip}}").unwrap();
        assert_eq!(e.value, Some(json!("{{payload.zip}}")));
        let e = Expectation::parse(r#"/memo == "two words""#).unwrap();
        assert_eq!(e.value, Some(json!("two words")));
        assert_eq!(e.to_string(), r#"/memo == "two words""#);
        let e = Expectation::parse(r#"$ any {"/symbol": "{{payload.symbol}}", "/amount": 120}"#)
            .unwrap();
        assert_eq!(e.pointer, "");
        assert_eq!(e.op, ExpectOp::Any);
        assert_eq!(
            e.to_string(),
            r#"$ any {"/symbol":"{{payload.symbol}}","/amount":120}"#
        );
        let e = Expectation::parse(r#"/status in ["resolved", "closed"]"#).unwrap();
        assert_eq!(e.value, Some(json!(["resolved", "closed"])));
        let e = Expectation::parse("/orders grew_by {{payload.count}}").unwrap();
        assert_eq!(e.value, Some(json!("{{payload.count}}")));
        assert!(Expectation::parse("/n grew_by -1").is_ok());
        assert!(Expectation::parse("/n < 2.5").is_ok());
    }

    #[test]
    fn every_operator_is_spelled_as_documented() {
        let spelled: Vec<&str> = ExpectOp::ALL.iter().map(|op| op.as_str()).collect();
        assert_eq!(
            spelled,
            [
                "==",
                "!=",
                "exists",
                "!exists",
                "contains",
                "!contains",
                "starts_with",
                "ends_with",
                "<",
                "<=",
                ">",
                ">=",
                "in",
                "any",
                "grew_by"
            ]
        );
        for op in ExpectOp::ALL {
            let text = if op.takes_value() {
                format!("/a {} {{{{payload.x}}}}", op.as_str())
            } else {
                format!("/a {}", op.as_str())
            };
            assert_eq!(Expectation::parse(&text).unwrap().op, op, "{text}");
        }
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
            ("/path ends_with 3", "takes a string"),
            ("/n < \"3\"", "takes a number"),
            ("/status in \"closed\"", "array of the values"),
            ("$ any [1]", "object of fields"),
            ("$ any {}", "object of fields"),
            ("$ any {\"symbol\": 1}", "not a JSON Pointer"),
            ("/n grew_by 0", "non-zero integer"),
            ("/n grew_by 1.5", "non-zero integer"),
            ("/n grew_by", "needs a value"),
        ] {
            let err = Expectation::parse(bad).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
        assert!(Expectation::parse(&format!("/a == \"{}\"", "x".repeat(5000))).is_err());
    }
}
