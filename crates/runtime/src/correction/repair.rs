//! L2.5 deterministic repair: fixes that need no model and cost nothing.
//!
//! Tools that follow the protocol say what was wrong in structured details —
//! `field`, `allowed_values` (comma-separated), `expected`, `suggestion` — and a
//! schema says which values an `enum` allows. When those make the fix
//! unambiguous, repair applies it; when they don't, it declines and leaves the
//! decision to a model. Each fix touches one named place:
//!
//! - **enum near-miss**: a string that matches exactly one allowed value by
//!   case or a small edit (see the near-miss rules) becomes that value, from a
//!   schema `enum` violation or from the tool's `allowed_values` for `field`;
//! - **expected type**: `expected: "integer"` (or `number`, `boolean`,
//!   `string`) for `field` converts that value by the coercion rules; an
//!   `expected` holding a list (`a, b` or `a|b`) acts as `allowed_values`;
//! - **suggestion**: replaces the value of the named `field` only. When the
//!   tool names no field, the suggestion is applied only if the payload has
//!   exactly one mutable string value — otherwise there is no telling which
//!   value it is for. A suggestion that reads like advice (over 200
//!   characters, or several lines) is never used as a value.
//!
//! Protected values are never touched.

use recourse_protocol::{ToolError, redact};
use serde_json::Value;

use super::coerce::coerce_to;
use super::near_miss::unique_near_match;
use super::paths::{field_pointer, only_mutable_string, set_pointer};
use crate::correction::{Correction, CorrectionRequest, Corrector};
use crate::schema::Schema;
use crate::transport::BoxFuture;
use recourse_core::protect::Protected;
use recourse_core::record::CorrectionLayer;

const MAX_SUGGESTION_CHARS: usize = 200;
const TYPE_NAMES: [&str; 4] = ["integer", "number", "boolean", "string"];

/// L2.5: repairs from schema violations and the tool's structured details.
///
/// ```
/// use recourse::correction::{Correction, CorrectionRequest, DeterministicRepair};
/// use recourse::protect::Protected;
/// use recourse_protocol::ToolError;
/// use serde_json::json;
///
/// let error = ToolError::input_error("BAD_UNIT", "unknown unit")
///     .detail("field", "unit")
///     .detail("allowed_values", "celsius, fahrenheit");
/// let payload = json!({"city": "Oslo", "unit": "Celsius"});
/// let protected = Protected::default();
/// let target = recourse::Target::parse("weather").unwrap();
/// let request = CorrectionRequest {
///     target: &target, payload: &payload, error: &error, protected: &protected,
///     schema: None, intent: None, attempt: 1,
/// };
/// let Correction::Corrected { payload, .. } = DeterministicRepair.propose(&request) else {
///     panic!("expected a repair")
/// };
/// assert_eq!(payload, json!({"city": "Oslo", "unit": "celsius"}));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct DeterministicRepair;

struct Fix {
    pointer: String,
    value: Value,
    why: &'static str,
}

impl DeterministicRepair {
    /// Proposes a repaired payload for `request` (source `repair`, no model
    /// call), or says why there is none.
    pub fn propose(&self, request: &CorrectionRequest<'_>) -> Correction {
        let payload = request.payload;
        let mut fixes = Vec::new();
        tool_fixes(payload, request.error, request.protected, &mut fixes);
        if let Some(schema) = request.schema {
            enum_fixes(payload, schema, &mut fixes);
        }
        let mut repaired = payload.clone();
        let mut changes: Vec<String> = Vec::new();
        let mut done: Vec<String> = Vec::new();
        for fix in fixes {
            if done.contains(&fix.pointer) || request.protected.covers(&fix.pointer) {
                continue;
            }
            let old = payload.pointer(&fix.pointer).cloned();
            if old.as_ref() == Some(&fix.value)
                || !set_pointer(&mut repaired, &fix.pointer, fix.value.clone())
            {
                continue;
            }
            let old = old.map_or_else(|| "(absent)".to_owned(), |v| v.to_string());
            changes.push(redact(&format!(
                "{}: {old} → {} ({})",
                fix.pointer, fix.value, fix.why
            )));
            done.push(fix.pointer);
        }
        if changes.is_empty() {
            return cannot_fix("no enum near-miss, expected type or usable suggestion");
        }
        Correction::fixed(CorrectionLayer::Repair, repaired, changes.join("; "))
    }
}

impl Corrector for DeterministicRepair {
    fn correct<'a>(&'a self, request: CorrectionRequest<'a>) -> BoxFuture<'a, Correction> {
        Box::pin(std::future::ready(self.propose(&request)))
    }
}

fn cannot_fix(why: &str) -> Correction {
    Correction::cannot_fix(CorrectionLayer::Repair, why)
}

/// Fixes from the tool's `field`, `suggestion`, `allowed_values` and `expected`.
fn tool_fixes(payload: &Value, error: &ToolError, protected: &Protected, out: &mut Vec<Fix>) {
    let named = error.detail_str("field").and_then(field_pointer);
    out.extend(suggestion_fix(payload, error, named.clone(), protected));
    let Some(pointer) = named else { return };
    let current = payload.pointer(&pointer);
    let expected = error.detail_str("expected").map(str::trim);
    if let (Some(t), Some(v)) = (expected.filter(|e| TYPE_NAMES.contains(e)), current)
        && let Some(value) = coerce_to(v, t)
    {
        out.push(Fix {
            pointer: pointer.clone(),
            value,
            why: "tool expected type",
        });
    }
    let allowed = error
        .detail_of("allowed_values")
        .map(list_of)
        .or_else(|| expected.filter(|e| e.contains([',', '|'])).map(split_list));
    if let (Some(allowed), Some(Value::String(s))) = (allowed, current) {
        let options: Vec<&str> = allowed.iter().map(String::as_str).collect();
        if let Some(m) = unique_near_match(s, &options) {
            out.push(Fix {
                pointer,
                value: Value::String(m.to_owned()),
                why: "allowed value",
            });
        }
    }
}

/// The tool's `suggestion`, for the named field or the only mutable string.
fn suggestion_fix(
    payload: &Value,
    error: &ToolError,
    named: Option<String>,
    protected: &Protected,
) -> Option<Fix> {
    let suggestion = error.detail_str("suggestion").map(str::trim).filter(|s| {
        !s.is_empty() && s.chars().count() <= MAX_SUGGESTION_CHARS && !s.contains('\n')
    })?;
    let pointer = named.or_else(|| only_mutable_string(payload, protected))?;
    let value = suggested_value(payload.pointer(&pointer), suggestion)?;
    Some(Fix {
        pointer,
        value,
        why: "tool suggestion",
    })
}

/// Fixes from schema `enum` violations on strings.
fn enum_fixes(payload: &Value, schema: &Schema, out: &mut Vec<Fix>) {
    for violation in schema.violations(payload) {
        let (Some(allowed), Some(Value::String(s))) =
            (&violation.allowed, payload.pointer(&violation.pointer))
        else {
            continue;
        };
        let options: Vec<&str> = allowed.iter().filter_map(Value::as_str).collect();
        if let Some(m) = unique_near_match(s, &options) {
            out.push(Fix {
                pointer: violation.pointer,
                value: Value::String(m.to_owned()),
                why: "schema enum",
            });
        }
    }
}

/// A suggestion as a value of the current value's type.
fn suggested_value(current: Option<&Value>, suggestion: &str) -> Option<Value> {
    let as_string = Value::String(suggestion.to_owned());
    match current {
        None | Some(Value::String(_) | Value::Null) => Some(as_string),
        Some(Value::Number(_)) => coerce_to(&as_string, "number"),
        Some(Value::Bool(_)) => coerce_to(&as_string, "boolean"),
        Some(_) => None,
    }
}

fn list_of(value: &Value) -> Vec<String> {
    match value {
        Value::String(s) => split_list(s),
        Value::Array(items) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

fn split_list(text: &str) -> Vec<String> {
    text.split([',', '|'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_split_on_commas_and_bars() {
        assert_eq!(split_list("a, b,,c"), ["a", "b", "c"]);
        assert_eq!(split_list("x|y"), ["x", "y"]);
    }
}
