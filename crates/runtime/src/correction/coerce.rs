//! L2 schema coercion: the fixes a schema makes obvious, applied before every
//! dispatch.
//!
//! Models and people write `"12"` where a tool wants `12`, and `{"name": "Paris"}`
//! where it wants `"Paris"`. When the schema says what type a value should have
//! and the value converts without guessing, coercion converts it and says so.
//! It never invents a number (`NaN`, `Infinity` and out-of-range integers stay
//! strings), never rounds (`"12.5"` stays a string for an integer), and never
//! touches a protected value.

use recourse_protocol::redact;
use serde_json::{Map, Number, Value};

use super::schema::{escape_token, item_schema, property_schema, resolve};
use crate::{Admission, Admitted, Protected};

/// L2: converts values to the types the capability's schema asks for.
///
/// ```
/// use recourse::{Admission, Protected, SchemaCoercion};
/// use serde_json::json;
///
/// let schema = json!({"type": "object", "properties": {
///     "amount": {"type": "number"}, "express": {"type": "boolean"}, "city": {"type": "string"}
/// }});
/// let admitted = SchemaCoercion.admit(
///     json!({"amount": "12", "express": "true", "city": {"name": "Paris"}}),
///     Some(&schema),
///     &Protected::default(),
/// );
/// assert_eq!(admitted.payload, json!({"amount": 12, "express": true, "city": "Paris"}));
/// assert_eq!(admitted.changes[0], r#"/amount: "12" → 12"#);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct SchemaCoercion;

impl Admission for SchemaCoercion {
    fn admit(&self, payload: Value, schema: Option<&Value>, protected: &Protected) -> Admitted {
        let mut changes = Vec::new();
        let payload = match schema {
            Some(root) => {
                let mut walk = Walk {
                    root,
                    protected,
                    changes: &mut changes,
                    path: String::new(),
                };
                walk.value(payload, root)
            }
            None => payload,
        };
        Admitted { payload, changes }
    }
}

struct Walk<'a> {
    root: &'a Value,
    protected: &'a Protected,
    changes: &'a mut Vec<String>,
    path: String,
}

impl<'a> Walk<'a> {
    fn value(&mut self, value: Value, schema: &'a Value) -> Value {
        if self.protected.covers(&self.path) {
            return value;
        }
        let schema = self.branch_for(&value, resolve(self.root, schema));
        let value = match convert(&value, &wanted_types(schema)) {
            Some(new) => {
                self.changes.push(format!(
                    "{}: {} → {}",
                    self.path,
                    redact(&value.to_string()),
                    redact(&new.to_string())
                ));
                new
            }
            None => value,
        };
        match value {
            Value::Object(map) => Value::Object(self.object(map, schema)),
            Value::Array(items) => Value::Array(self.array(items, schema)),
            other => other,
        }
    }

    fn object(&mut self, map: Map<String, Value>, schema: &'a Value) -> Map<String, Value> {
        let len = self.path.len();
        map.into_iter()
            .map(|(k, v)| {
                let v = match property_schema(self.root, schema, &k) {
                    Some(sub) => {
                        self.path.push('/');
                        self.path.push_str(&escape_token(&k));
                        let v = self.value(v, sub);
                        self.path.truncate(len);
                        v
                    }
                    None => v,
                };
                (k, v)
            })
            .collect()
    }

    fn array(&mut self, items: Vec<Value>, schema: &'a Value) -> Vec<Value> {
        let len = self.path.len();
        items
            .into_iter()
            .enumerate()
            .map(|(i, v)| match item_schema(self.root, schema, i) {
                Some(sub) => {
                    self.path.push('/');
                    self.path.push_str(&i.to_string());
                    let v = self.value(v, sub);
                    self.path.truncate(len);
                    v
                }
                None => v,
            })
            .collect()
    }

    /// For `anyOf`/`oneOf`: the branch the value already fits, else the first
    /// branch it converts to, else the schema itself.
    fn branch_for(&self, value: &Value, schema: &'a Value) -> &'a Value {
        let Some(branches) = schema
            .get("anyOf")
            .or_else(|| schema.get("oneOf"))
            .and_then(Value::as_array)
        else {
            return schema;
        };
        let branches: Vec<&'a Value> = branches.iter().map(|b| resolve(self.root, b)).collect();
        let fits = |b: &&&Value| {
            let wanted = wanted_types(b);
            wanted.is_empty() || wanted.iter().any(|t| has_type(value, t))
        };
        branches
            .iter()
            .find(fits)
            .or_else(|| {
                branches
                    .iter()
                    .find(|b| convert(value, &wanted_types(b)).is_some())
            })
            .copied()
            .unwrap_or(schema)
    }
}

/// The `type` keyword as a list (empty when absent).
fn wanted_types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn has_type(value: &Value, wanted: &str) -> bool {
    match (wanted, value) {
        ("integer", Value::Number(n)) => n.is_i64() || n.is_u64(),
        ("number", Value::Number(_))
        | ("string", Value::String(_))
        | ("boolean", Value::Bool(_))
        | ("object", Value::Object(_))
        | ("array", Value::Array(_))
        | ("null", Value::Null) => true,
        _ => false,
    }
}

/// The converted value, when `value` is not of a wanted type and converts to
/// one without guessing.
fn convert(value: &Value, wanted: &[&str]) -> Option<Value> {
    if wanted.is_empty() || wanted.iter().any(|t| has_type(value, t)) {
        return None;
    }
    ["integer", "number", "boolean", "string"]
        .into_iter()
        .filter(|t| wanted.contains(t))
        .find_map(|t| convert_to(value, t))
}

fn convert_to(value: &Value, wanted: &str) -> Option<Value> {
    match (wanted, value) {
        ("integer", Value::String(s)) => integer(s.trim()),
        ("number", Value::String(s)) => integer(s.trim()).or_else(|| number(s.trim())),
        ("boolean", Value::String(s)) => boolean(s.trim()),
        ("string", Value::Number(n)) => Some(Value::String(n.to_string())),
        ("string", Value::Object(map)) if map.len() == 1 => map
            .values()
            .next()
            .and_then(Value::as_str)
            .map(|s| Value::String(s.to_owned())),
        _ => None,
    }
}

/// An integer string within i64/u64 range: optional sign, digits only.
fn integer(s: &str) -> Option<Value> {
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let unsigned = s.strip_prefix('+').unwrap_or(s);
    unsigned
        .parse::<i64>()
        .map(Value::from)
        .or_else(|_| unsigned.parse::<u64>().map(Value::from))
        .ok()
}

/// A finite decimal number (no `NaN`, `inf`, or overflow to infinity).
fn number(s: &str) -> Option<Value> {
    let plain = s
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'));
    if !plain || !s.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    let f: f64 = s.parse().ok()?;
    Number::from_f64(f)
        .filter(|_| f.is_finite())
        .map(Value::Number)
}

fn boolean(s: &str) -> Option<Value> {
    if s.eq_ignore_ascii_case("true") {
        Some(Value::Bool(true))
    } else if s.eq_ignore_ascii_case("false") {
        Some(Value::Bool(false))
    } else {
        None
    }
}

/// Coerces one value to a named JSON type (`integer`, `number`, `boolean`,
/// `string`), by the same rules as [`SchemaCoercion`]. Used by repair when a
/// tool says what it `expected`.
pub(crate) fn coerce_to(value: &Value, wanted: &str) -> Option<Value> {
    convert(value, &[wanted])
}
