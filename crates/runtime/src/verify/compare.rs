//! Whether an expectation holds in a read's result.
//!
//! Every operator is total: a missing field, a value of the wrong kind, a
//! non-array for `any` is "does not hold", never an error — a read that
//! answers something unexpected is evidence the effect is not there, and
//! never stops the call. A negated operator (`!=`, `!contains`) holds only
//! where its positive one could be read at all, so a read that lost a field
//! never reads as a change. `!exists` is the one operator that holds on a
//! missing field.
//!
//! `grew_by` alone reads two documents: the value after the write is
//! compared with the value before it. When the read before gave nothing to
//! compare with (it failed, was skipped, or had no count there), the change
//! cannot be measured: [`Found::NoBaseline`], which is not "does not hold".

use std::cmp::Ordering;

use recourse_protocol::{redact, truncate_chars};
use serde_json::Value;

use super::expect::{ExpectOp, Expectation};

/// What one expectation found in a read's result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Found {
    Holds,
    /// It does not hold: what was there instead (redacted).
    NotHeld(String),
    /// A change cannot be measured: the read before the write gave no
    /// value to compare with (redacted).
    NoBaseline(String),
}

/// Whether `expectation`, its value filled in (`value`), holds in `doc`;
/// `before` is the result of the read before the write, for a change.
pub(crate) fn check(
    expectation: &Expectation,
    value: Option<&Value>,
    doc: &Value,
    before: Option<&Value>,
) -> Found {
    let pointer = &expectation.pointer;
    let found = doc.pointer(pointer);
    if expectation.op == ExpectOp::GrewBy {
        return grew_by(
            expectation,
            value,
            found,
            before.map(|b| b.pointer(pointer)),
        );
    }
    let holds = match (expectation.op, found, value) {
        (ExpectOp::Exists, Some(v), _) => !v.is_null(),
        (ExpectOp::Exists, None, _) => false,
        (ExpectOp::Absent, found, _) => found.is_none_or(Value::is_null),
        (op, Some(v), Some(want)) => holds_at(op, v, want),
        (_, _, _) => false,
    };
    if holds {
        return Found::Holds;
    }
    let seen = found.map_or_else(|| "missing".to_owned(), |v| format!("is {}", shown(v)));
    let wanted = match value {
        Some(want) => format!("{} {}", expectation.op.as_str(), shown(want)),
        None => expectation.op.as_str().to_owned(),
    };
    Found::NotHeld(redact(&format!(
        "{} {seen}, expected {wanted}",
        expectation.written_pointer()
    )))
}

/// Whether `found` (the value at the pointer) stands in `op` to `want`.
fn holds_at(op: ExpectOp, found: &Value, want: &Value) -> bool {
    match op {
        ExpectOp::Eq => same(found, want),
        ExpectOp::Ne => !same(found, want),
        ExpectOp::Contains => contains(found, want) == Some(true),
        ExpectOp::NotContains => contains(found, want) == Some(false),
        ExpectOp::StartsWith => strings(found, want).is_some_and(|(s, w)| s.starts_with(w)),
        ExpectOp::EndsWith => strings(found, want).is_some_and(|(s, w)| s.ends_with(w)),
        ExpectOp::Lt => order(found, want) == Some(Ordering::Less),
        ExpectOp::Le => matches!(order(found, want), Some(Ordering::Less | Ordering::Equal)),
        ExpectOp::Gt => order(found, want) == Some(Ordering::Greater),
        ExpectOp::Ge => matches!(
            order(found, want),
            Some(Ordering::Greater | Ordering::Equal)
        ),
        ExpectOp::In => want
            .as_array()
            .is_some_and(|allowed| allowed.iter().any(|a| same(found, a))),
        ExpectOp::Any => some_element(found, want),
        // Neither compares with a value, and a change is read by `grew_by`.
        ExpectOp::Exists | ExpectOp::Absent | ExpectOp::GrewBy => false,
    }
}

/// Whether `found` contains `want`; `None` when it is nothing that can
/// (a number, or an object asked for a key that is not a string).
fn contains(found: &Value, want: &Value) -> Option<bool> {
    match (found, want) {
        (Value::String(s), Value::String(w)) => Some(s.contains(w.as_str())),
        (Value::Array(items), want) => Some(items.iter().any(|item| same(item, want))),
        (Value::Object(map), Value::String(key)) => Some(map.contains_key(key)),
        _ => None,
    }
}

fn strings<'a>(found: &'a Value, want: &'a Value) -> Option<(&'a str, &'a str)> {
    Some((found.as_str()?, want.as_str()?))
}

/// Some element of `found` (an array's, or an object's values) whose
/// fields, by the pointers `want` names, equal `want`'s values.
fn some_element(found: &Value, want: &Value) -> bool {
    let Some(fields) = want.as_object().filter(|f| !f.is_empty()) else {
        return false;
    };
    let matches = |element: &Value| {
        fields
            .iter()
            .all(|(pointer, v)| element.pointer(pointer).is_some_and(|e| same(e, v)))
    };
    match found {
        Value::Array(items) => items.iter().any(matches),
        Value::Object(map) => map.values().any(matches),
        _ => false,
    }
}

/// `grew_by`: the count at the pointer (an array's length, an object's
/// keys, a number) is `want` more than it was before the write.
fn grew_by(
    expectation: &Expectation,
    want: Option<&Value>,
    after: Option<&Value>,
    before: Option<Option<&Value>>,
) -> Found {
    let pointer = expectation.written_pointer();
    let Some(n) = want.and_then(Value::as_i64) else {
        return Found::NotHeld(format!("{pointer}: grew_by has no integer to compare with"));
    };
    let Some(before) = before else {
        return Found::NoBaseline(format!(
            "{pointer} grew_by {n}: there is no read before the write to compare with"
        ));
    };
    let Some((kind, was)) = before.and_then(measure) else {
        let seen = before.map_or_else(|| "missing".to_owned(), |v| format!("was {}", shown(v)));
        return Found::NoBaseline(redact(&format!(
            "{pointer} {seen} before the write: not an array, object or number to count from"
        )));
    };
    let now = after.and_then(measure).filter(|(k, _)| *k == kind);
    if let Some((_, now)) = now
        && grew_exactly(was, now, n)
    {
        return Found::Holds;
    }
    let seen = match (now, after) {
        (Some((_, now)), _) => format!("went from {} to {}", was.shown(), now.shown()),
        (None, Some(v)) => format!("was {} and is {}", was.shown(), shown(v)),
        (None, None) => format!("was {} and is missing", was.shown()),
    };
    Found::NotHeld(redact(&format!("{pointer} {seen}, expected grew_by {n}")))
}

/// What a count counts, so that a list is not compared with a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Counted {
    Elements,
    Keys,
    Number,
}

fn measure(v: &Value) -> Option<(Counted, Num)> {
    match v {
        Value::Array(items) => Some((Counted::Elements, Num::Int(items.len() as i128))),
        Value::Object(map) => Some((Counted::Keys, Num::Int(map.len() as i128))),
        Value::Number(_) => Some((Counted::Number, Num::of(v)?)),
        _ => None,
    }
}

fn grew_exactly(was: Num, now: Num, n: i64) -> bool {
    match (was, now) {
        (Num::Int(was), Num::Int(now)) => now - was == i128::from(n),
        _ => {
            let (was, now) = (was.as_f64(), now.as_f64());
            let scale = was.abs().max(now.abs()).max(1.0);
            ((now - was) - n as f64).abs() <= 1e-9 * scale
        }
    }
}

/// A JSON number, exact when it is an integer.
#[derive(Debug, Clone, Copy)]
enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    fn of(v: &Value) -> Option<Self> {
        let n = v.as_number()?;
        match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Some(Self::Int(i128::from(i))),
            (None, Some(u)) => Some(Self::Int(i128::from(u))),
            (None, None) => n.as_f64().map(Self::Float),
        }
    }

    fn as_f64(self) -> f64 {
        match self {
            Self::Int(i) => i as f64,
            Self::Float(f) => f,
        }
    }

    fn shown(self) -> String {
        match self {
            Self::Int(i) => i.to_string(),
            Self::Float(f) => f.to_string(),
        }
    }
}

/// How two numbers compare (exactly when both are integers); `None` when
/// either is not a number.
fn order(a: &Value, b: &Value) -> Option<Ordering> {
    match (Num::of(a)?, Num::of(b)?) {
        (Num::Int(x), Num::Int(y)) => Some(x.cmp(&y)),
        (x, y) => x.as_f64().partial_cmp(&y.as_f64()),
    }
}

/// JSON equality, except that numbers compare by value (`1 == 1.0`).
pub(crate) fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(_), Value::Number(_)) => order(a, b) == Some(Ordering::Equal),
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
mod tests;
