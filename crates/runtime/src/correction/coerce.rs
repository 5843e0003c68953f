//! L2 schema coercion: the fixes a schema makes obvious, applied before every
//! dispatch.
//!
//! Models and people write `"12"` where a tool wants `12`, and `{"name": "Paris"}`
//! where it wants `"Paris"`. When the schema says what type a value should have
//! and the value converts without guessing, coercion converts it and says so.
//! It never invents a number (`NaN`, `Infinity` and out-of-range integers stay
//! strings), never rounds (`"12.5"` stays a string for an integer), and never
//! touches a protected value. It also takes apart the shapes models produce
//! for structured arguments — a JSON array written as a string, a lone value
//! where a list is wanted, `null` for an optional field — but only where the
//! schema leaves one reading. Every change is recorded with its rule.

use recourse_core::record::{CoercionChange, CoercionRule};
use serde_json::{Map, Number, Value};

use crate::correction::{Admission, Admitted};
use crate::schema::Schema;
use crate::schema::{escape_token, item_schema, property_schema, resolve};
use recourse_core::protect::Protected;

/// L2: converts values to the types the capability's schema asks for.
///
/// ```
/// use recourse::correction::{Admission, Schema, SchemaCoercion};
/// use recourse::protect::Protected;
/// use recourse::record::CoercionRule;
/// use serde_json::json;
///
/// let schema = Schema::compile(&json!({"type": "object", "properties": {
///     "amount": {"type": "number"}, "express": {"type": "boolean"}, "city": {"type": "string"},
///     "tags": {"type": "array", "items": {"type": "string"}}, "note": {"type": "string"}
/// }})).unwrap();
/// let admitted = SchemaCoercion.admit(
///     json!({"amount": "12", "express": "true", "city": {"name": "Paris"}, "tags": "[\"a\",\"b\"]", "note": null}),
///     Some(&schema),
///     &Protected::default(),
/// );
/// assert_eq!(admitted.payload, json!({"amount": 12, "express": true, "city": "Paris", "tags": ["a", "b"]}));
/// assert_eq!(admitted.changes[0].pointer, "/amount");
/// assert_eq!(admitted.changes[0].rule, CoercionRule::IntegerString);
/// assert_eq!(admitted.changes.len(), 5);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct SchemaCoercion;

impl Admission for SchemaCoercion {
    fn admit(&self, payload: Value, schema: Option<&Schema>, protected: &Protected) -> Admitted {
        let mut changes = Vec::new();
        let payload = match schema {
            Some(schema) => {
                let root = schema.raw();
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

    /// Coercion follows a schema: without one, nothing changes.
    fn leaves_unchanged(&self, schema: Option<&Schema>) -> bool {
        schema.is_none()
    }
}

struct Walk<'a> {
    root: &'a Value,
    protected: &'a Protected,
    changes: &'a mut Vec<CoercionChange>,
    path: String,
}

impl<'a> Walk<'a> {
    fn value(&mut self, value: Value, schema: &'a Value) -> Value {
        if self.protected.covers(&self.path) {
            return value;
        }
        let schema = self.branch_for(&value, resolve(self.root, schema));
        let converted = if self.protected.overlaps(&self.path) {
            None
        } else {
            self.convert(&value, schema)
        };
        let value = match converted {
            Some((new, rule)) => {
                self.changes.push(CoercionChange {
                    pointer: self.path.clone(),
                    from: value,
                    to: Some(new.clone()),
                    rule,
                });
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

    /// The converted value and the rule, when `value` is not of a type
    /// `schema` wants and converts to one without guessing.
    fn convert(&self, value: &Value, schema: &Value) -> Option<(Value, CoercionRule)> {
        let wanted = wanted_types(schema);
        if wanted.is_empty() || wanted.iter().any(|t| has_type(value, t)) {
            return None;
        }
        convert(value, &wanted)
            .or_else(|| json_string(value, &wanted))
            .or_else(|| self.scalar_to_array(value, schema, &wanted))
    }

    /// `"a"` → `["a"]` when the schema wants only an array whose items take
    /// the scalar's own type.
    fn scalar_to_array(
        &self,
        value: &Value,
        schema: &Value,
        wanted: &[&str],
    ) -> Option<(Value, CoercionRule)> {
        let only_array = wanted.iter().filter(|t| **t != "null").eq(["array"].iter());
        if !only_array || matches!(value, Value::Null | Value::Array(_) | Value::Object(_)) {
            return None;
        }
        // A string that opens like a JSON array or object but does not parse
        // is a broken list, not a lone item: two readings, so leave it.
        if let Value::String(s) = value
            && s.trim_start().starts_with(['[', '{'])
        {
            return None;
        }
        let items = item_schema(self.root, schema, 0)?;
        let item_types = wanted_types(items);
        item_types.iter().any(|t| has_type(value, t)).then(|| {
            (
                Value::Array(vec![value.clone()]),
                CoercionRule::ScalarToArray,
            )
        })
    }

    fn object(&mut self, map: Map<String, Value>, schema: &'a Value) -> Map<String, Value> {
        let len = self.path.len();
        let mut out = Map::with_capacity(map.len());
        // By key, so the changes are listed alike whatever serde_json's features.
        let mut entries: Vec<(String, Value)> = map.into_iter().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for (k, v) in entries {
            let Some(sub) = property_schema(self.root, schema, &k) else {
                out.insert(k, v);
                continue;
            };
            self.path.push('/');
            self.path.push_str(&escape_token(&k));
            if v.is_null() && self.omissible(schema, &k, sub) {
                self.changes.push(CoercionChange {
                    pointer: self.path.clone(),
                    from: Value::Null,
                    to: None,
                    rule: CoercionRule::NullOmitted,
                });
            } else {
                let v = self.value(v, sub);
                out.insert(k, v);
            }
            self.path.truncate(len);
        }
        out
    }

    /// Whether a `null` at property `key` may be dropped: the property is
    /// optional, not protected, and its schema says plainly that null is not
    /// one of its values (an explicit `type` without `null`, no branch, enum
    /// or const that allows it).
    fn omissible(&self, object: &Value, key: &str, property: &Value) -> bool {
        let required = resolve(self.root, object)
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|r| r.iter().any(|k| k.as_str() == Some(key)));
        !required && !self.protected.overlaps(&self.path) && refuses_null(self.root, property)
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
            .or_else(|| branches.iter().find(|b| self.convert(value, b).is_some()))
            .copied()
            .unwrap_or(schema)
    }
}

/// Whether `schema` plainly refuses `null`: every branch names its types and
/// none is `null`, and no `enum`/`const` lists null.
fn refuses_null(root: &Value, schema: &Value) -> bool {
    let schema = resolve(root, schema);
    if let Some(branches) = schema
        .get("anyOf")
        .or_else(|| schema.get("oneOf"))
        .and_then(Value::as_array)
    {
        return !branches.is_empty() && branches.iter().all(|b| refuses_null(root, b));
    }
    let lists_null = |key: &str| match schema.get(key) {
        Some(Value::Array(options)) => options.iter().any(Value::is_null),
        Some(Value::Null) => key == "const",
        _ => false,
    };
    let types = wanted_types(schema);
    !types.is_empty()
        && !types.contains(&"null")
        && schema.get("nullable") != Some(&Value::Bool(true))
        && !lists_null("enum")
        && !lists_null("const")
}

/// `"[1, 2]"` → `[1, 2]` where the schema wants an array (or `"{…}"` where it
/// wants an object) and the string holds exactly that.
fn json_string(value: &Value, wanted: &[&str]) -> Option<(Value, CoercionRule)> {
    let Value::String(text) = value else {
        return None;
    };
    let text = text.trim();
    let (open, kind) = match text.as_bytes().first() {
        Some(b'[') => (true, "array"),
        Some(b'{') => (true, "object"),
        _ => (false, ""),
    };
    if !open || !wanted.contains(&kind) {
        return None;
    }
    let parsed: Value = serde_json::from_str(text).ok()?;
    has_type(&parsed, kind).then_some((parsed, CoercionRule::JsonString))
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

/// The converted scalar, when `value` is not of a wanted type and converts
/// to one without guessing.
fn convert(value: &Value, wanted: &[&str]) -> Option<(Value, CoercionRule)> {
    if wanted.is_empty() || wanted.iter().any(|t| has_type(value, t)) {
        return None;
    }
    ["integer", "number", "boolean", "string"]
        .into_iter()
        .filter(|t| wanted.contains(t))
        .find_map(|t| convert_to(value, t))
}

fn convert_to(value: &Value, wanted: &str) -> Option<(Value, CoercionRule)> {
    use CoercionRule as R;
    match (wanted, value) {
        ("integer", Value::String(s)) => integer(s.trim()).map(|v| (v, R::IntegerString)),
        ("number", Value::String(s)) => integer(s.trim())
            .map(|v| (v, R::IntegerString))
            .or_else(|| number(s.trim()).map(|v| (v, R::NumericString))),
        ("boolean", Value::String(s)) => boolean(s.trim()).map(|v| (v, R::BooleanString)),
        ("string", Value::Number(n)) => Some((Value::String(n.to_string()), R::NumberToString)),
        ("string", Value::Object(map)) if map.len() == 1 => map
            .values()
            .next()
            .and_then(Value::as_str)
            .map(|s| (Value::String(s.to_owned()), R::SingleFieldObject)),
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
    convert(value, &[wanted]).map(|(v, _)| v)
}
