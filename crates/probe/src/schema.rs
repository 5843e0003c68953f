//! Reading a tool's input JSON Schema for the battery: a minimal valid
//! payload, its top-level fields, their types and enums.
//!
//! Only what the battery needs is read, and everything is bounded: local
//! `$ref`s (`#/$defs/…`, `#/definitions/…`) are followed at most
//! [`MAX_REFS`] deep, nesting at most [`MAX_DEPTH`]; a schema that uses
//! something else (remote refs, `pattern`) still yields a payload, just one
//! the tool may refuse for a reason of its own, which the battery tolerates.

use serde_json::{Map, Value, json};

const MAX_REFS: usize = 16;
const MAX_DEPTH: usize = 8;
/// The longest string `minLength` makes a derived field.
const MAX_STRING_CHARS: usize = 1024;
/// The string every derived text field holds.
pub(crate) const PLACEHOLDER: &str = "probe";

/// A schema and the root its `$ref`s point into.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SchemaView<'a> {
    root: &'a Value,
}

/// One top-level property of an object schema.
#[derive(Debug, Clone)]
pub(crate) struct Property<'a> {
    pub(crate) name: &'a str,
    pub(crate) schema: &'a Value,
    pub(crate) required: bool,
}

impl<'a> SchemaView<'a> {
    pub(crate) fn new(root: &'a Value) -> Self {
        Self { root }
    }

    /// `schema` with its `$ref` chain followed (local refs only).
    fn resolve(&self, mut schema: &'a Value) -> &'a Value {
        for _ in 0..MAX_REFS {
            let Some(target) = schema.get("$ref").and_then(Value::as_str) else {
                return schema;
            };
            match target
                .strip_prefix('#')
                .and_then(|pointer| self.root.pointer(pointer))
            {
                Some(next) => schema = next,
                None => return schema,
            }
        }
        schema
    }

    /// The alternatives of `anyOf`/`oneOf`, nested ones flattened (resolved,
    /// `null` ones left out), or `schema` itself: never empty.
    fn alternatives(&self, schema: &'a Value) -> Vec<&'a Value> {
        let mut out = Vec::new();
        self.collect_alternatives(schema, 0, &mut out);
        if out.is_empty() {
            out.push(self.resolve(schema));
        }
        out
    }

    fn collect_alternatives(&self, schema: &'a Value, depth: usize, out: &mut Vec<&'a Value>) {
        let schema = self.resolve(schema);
        let options = ["anyOf", "oneOf"].iter().find_map(|key| {
            schema
                .get(*key)
                .and_then(Value::as_array)
                .filter(|o| !o.is_empty())
        });
        match options {
            Some(options) if depth < MAX_DEPTH => {
                for option in options {
                    self.collect_alternatives(option, depth + 1, out);
                }
            }
            _ if schema.get("type").and_then(Value::as_str) == Some("null") => {}
            _ => out.push(schema),
        }
    }

    /// The top-level properties, required ones first, each group in schema order.
    pub(crate) fn properties(&self) -> Vec<Property<'a>> {
        let object = self.resolve(self.root);
        let required: Vec<&str> = object
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let Some(Value::Object(props)) = object.get("properties") else {
            return Vec::new();
        };
        let mut all: Vec<Property<'a>> = props
            .iter()
            .map(|(name, schema)| Property {
                name,
                schema,
                required: required.contains(&name.as_str()),
            })
            .collect();
        all.sort_by_key(|p| !p.required);
        all
    }

    /// A minimal valid payload: every required property, derived.
    pub(crate) fn baseline(&self) -> Value {
        match self.example(self.root, 0) {
            Value::Object(map) => Value::Object(map),
            _ => Value::Object(Map::new()),
        }
    }

    /// A value `schema` accepts, as far as this reader can tell: one the
    /// schema states (on it, or on its first alternative), else one built
    /// for its first type within its bounds and `format`.
    pub(crate) fn example(&self, schema: &'a Value, depth: usize) -> Value {
        if depth > MAX_DEPTH {
            return Value::Null;
        }
        if let Some(v) = stated_value(self.resolve(schema)) {
            return v.clone();
        }
        let schema = self.alternatives(schema)[0];
        if let Some(v) = stated_value(schema) {
            return v.clone();
        }
        match self.types(schema).first().copied() {
            Some("object") => self.object_example(schema, depth),
            Some("array") => array_example(self, schema, depth),
            Some("integer") => number_example(schema, true),
            Some("number") => number_example(schema, false),
            Some("boolean") => Value::Bool(false),
            Some("null") => Value::Null,
            _ => string_example(schema),
        }
    }

    fn object_example(&self, schema: &'a Value, depth: usize) -> Value {
        let mut map = Map::new();
        let props = schema.get("properties").and_then(Value::as_object);
        for name in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            let value = props
                .and_then(|p| p.get(name))
                .map_or_else(|| json!(PLACEHOLDER), |s| self.example(s, depth + 1));
            map.insert(name.to_owned(), value);
        }
        Value::Object(map)
    }

    /// The JSON types `schema` admits (`null` last), from `type` or, failing
    /// that, from its alternatives or its `const`/`enum` values.
    pub(crate) fn types(&self, schema: &'a Value) -> Vec<&'a str> {
        self.types_at(schema, 0)
    }

    fn types_at(&self, schema: &'a Value, depth: usize) -> Vec<&'a str> {
        let schema = self.resolve(schema);
        if depth > MAX_DEPTH {
            return Vec::new();
        }
        let mut types: Vec<&str> = match schema.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if types.is_empty() {
            let alternatives = self.alternatives(schema);
            if alternatives.len() > 1 || !std::ptr::eq(alternatives[0], schema) {
                for alt in alternatives {
                    types.extend(self.types_at(alt, depth + 1));
                }
            }
            for value in self.literal_values(schema) {
                types.push(json_type(value));
            }
        }
        types.sort_by_key(|t| *t == "null");
        types.dedup();
        types
    }

    fn literal_values(&self, schema: &'a Value) -> Vec<&'a Value> {
        let mut values: Vec<&Value> = schema.get("const").into_iter().collect();
        if let Some(Value::Array(e)) = schema.get("enum") {
            values.extend(e);
        }
        values
    }

    /// The string values an enum-like property allows: `enum`, or `const`s
    /// across `anyOf`/`oneOf` (the shape schemars gives Rust enums).
    pub(crate) fn enum_values(&self, schema: &'a Value) -> Vec<String> {
        let mut values = Vec::new();
        for alt in self.alternatives(schema) {
            values.extend(
                self.literal_values(alt)
                    .into_iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned),
            );
        }
        values.dedup();
        values
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn array_example<'a>(view: &SchemaView<'a>, schema: &'a Value, depth: usize) -> Value {
    let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
    let item = schema
        .get("items")
        .map_or_else(|| json!(PLACEHOLDER), |s| view.example(s, depth + 1));
    Value::Array(vec![item; min.min(4) as usize])
}

/// A value the schema names as valid: its `const` (the only one it
/// allows), its first `examples` entry (or OpenAPI's `example`), its
/// `default`, or its first non-null `enum` value.
fn stated_value(schema: &Value) -> Option<&Value> {
    schema
        .get("const")
        .or_else(|| {
            schema
                .get("examples")
                .and_then(Value::as_array)
                .and_then(|e| e.first())
        })
        .or_else(|| schema.get("example"))
        .or_else(|| schema.get("default"))
        .or_else(|| {
            schema
                .get("enum")
                .and_then(Value::as_array)
                .and_then(|e| e.iter().find(|v| !v.is_null()))
        })
}

/// A number within the schema's bounds (`minimum`, `maximum`, their
/// exclusive forms) and a multiple of its `multipleOf` (of 1 for an
/// integer): 1 when that fits, else the first of the bounds, nudged inside
/// and onto the step, that does. Failing all, 1 clamped into the bounds.
fn number_example(schema: &Value, integer: bool) -> Value {
    let bound = |key| {
        schema
            .get(key)
            .and_then(Value::as_f64)
            .filter(|n| n.is_finite())
    };
    let (min, max) = (bound("minimum"), bound("maximum"));
    let (above, below) = (bound("exclusiveMinimum"), bound("exclusiveMaximum"));
    let step = bound("multipleOf")
        .filter(|m| *m > 0.0)
        .or(integer.then_some(1.0));
    let fits = |n: f64| {
        min.is_none_or(|m| n >= m)
            && max.is_none_or(|m| n <= m)
            && above.is_none_or(|m| n > m)
            && below.is_none_or(|m| n < m)
            && step.is_none_or(|s| ((n / s).round() * s - n).abs() <= 1e-9 * s.max(1.0))
            && (!integer || n.fract() == 0.0)
    };
    let low = min.or(above);
    let high = max.or(below);
    let middle = low.zip(high).map(|(l, h)| l + (h - l) / 2.0);
    let bases = [
        Some(1.0),
        min,
        above,
        max,
        below,
        middle,
        low.map(|l| l + 1.0),
    ];
    let snapped = |n: f64| -> [f64; 4] {
        match step {
            Some(s) => [
                (n / s).ceil() * s,
                (n / s).ceil() * s + s,
                (n / s).floor() * s,
                (n / s).floor() * s - s,
            ],
            None => [n; 4],
        }
    };
    let n = bases
        .into_iter()
        .flatten()
        .flat_map(snapped)
        .find(|n| fits(*n))
        .unwrap_or_else(|| {
            let n = low.map_or(1.0, |l| l.max(1.0));
            high.map_or(n, |h| n.min(h))
        });
    if integer {
        json!(n.round() as i64)
    } else {
        json!(n)
    }
}

/// A string of its `format` (or the placeholder), lengthened to its
/// `minLength` and cut to its `maxLength`.
fn string_example(schema: &Value) -> Value {
    let text = match schema.get("format").and_then(Value::as_str) {
        Some("date-time") => "2024-01-01T00:00:00Z",
        Some("date") => "2024-01-01",
        Some("time") => "00:00:00Z",
        Some("duration") => "PT1M",
        Some("email" | "idn-email") => "probe@example.com",
        Some("hostname" | "idn-hostname") => "example.com",
        Some("ipv4") => "192.0.2.1",
        Some("ipv6") => "2001:db8::1",
        Some("uri" | "url" | "uri-reference" | "iri" | "iri-reference") => "https://example.com/",
        Some("uuid") => "00000000-0000-4000-8000-000000000000",
        _ => PLACEHOLDER,
    };
    let length = |key| {
        schema
            .get(key)
            .and_then(Value::as_u64)
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
    };
    let mut text = text.to_owned();
    let min = length("minLength").unwrap_or(0).min(MAX_STRING_CHARS);
    while text.chars().count() < min {
        text.push('x');
    }
    if let Some(max) = length("maxLength") {
        text = text.chars().take(max).collect();
    }
    Value::String(text)
}

/// A value of none of `types`, for the wrong-type probe; `None` when the
/// schema admits every type this tries.
pub(crate) fn wrong_value(types: &[&str]) -> Option<Value> {
    let admits = |t: &str| types.contains(&t) || (t == "integer" && types.contains(&"number"));
    [
        ("integer", json!(12345)),
        ("string", json!("recourse-probe")),
        ("boolean", json!(true)),
        ("object", json!({"recourse_probe": 1})),
    ]
    .into_iter()
    .find(|(t, _)| !admits(t))
    .map(|(_, v)| v)
}

/// A typo of `value` that is none of `allowed`: its last character dropped,
/// or failing that an extra one.
pub(crate) fn near_miss(value: &str, allowed: &[String]) -> String {
    let mut candidates = Vec::new();
    if value.chars().count() > 2 {
        let mut chars = value.chars();
        chars.next_back();
        candidates.push(chars.as_str().to_owned());
    }
    candidates.push(format!("{value}x"));
    candidates.push(format!("x{value}"));
    candidates
        .into_iter()
        .find(|c| !allowed.contains(c))
        .unwrap_or_else(|| format!("{value}-recourse-probe"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weather() -> Value {
        json!({
            "$defs": {"Units": {"oneOf": [
                {"const": "metric", "type": "string"}, {"const": "imperial", "type": "string"}
            ]}},
            "properties": {
                "units": {"anyOf": [{"$ref": "#/$defs/Units"}, {"type": "null"}]},
                "location": {"type": "string"}
            },
            "required": ["location"],
            "type": "object"
        })
    }

    #[test]
    fn the_baseline_holds_required_fields_only() {
        let schema = weather();
        let view = SchemaView::new(&schema);
        assert_eq!(view.baseline(), json!({"location": "probe"}));
        let export = json!({"type": "object", "required": ["n", "when", "tags"], "properties": {
            "n": {"type": ["integer", "null"], "minimum": 0, "maximum": 0},
            "when": {"type": "string", "format": "date"},
            "tags": {"type": "array", "minItems": 1, "items": {"enum": [null, "a"]}},
            "opt": {"type": "string"}
        }});
        assert_eq!(
            SchemaView::new(&export).baseline(),
            json!({"n": 0, "when": "2024-01-01", "tags": ["a"]})
        );
        assert_eq!(SchemaView::new(&json!(true)).baseline(), json!({}));
    }

    #[test]
    fn the_baseline_takes_what_the_schema_states_and_keeps_to_its_bounds() {
        let schema = json!({"type": "object",
        "required": ["source_id", "format", "kind", "fixed", "id", "mail", "at", "code", "n", "step", "part", "opt"],
        "properties": {
            "source_id": {"type": "string", "examples": ["sales-2024", "inventory"], "default": "x"},
            "format": {"type": "string", "example": "pdf"},
            "kind": {"type": "string", "default": "full", "enum": ["partial", "full"]},
            "fixed": {"const": 3, "examples": [4]},
            "id": {"type": "string", "format": "uuid"},
            "mail": {"type": "string", "format": "email"},
            "at": {"type": "string", "format": "date-time"},
            "code": {"type": "string", "minLength": 8, "maxLength": 8},
            "n": {"type": "integer", "exclusiveMinimum": 10, "maximum": 20, "multipleOf": 5},
            "step": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "part": {"type": "integer", "minimum": 0, "maximum": 0.5},
            "opt": {"anyOf": [{"type": "string"}, {"type": "null"}], "examples": ["given"]}
        }});
        assert_eq!(
            SchemaView::new(&schema).baseline(),
            json!({
                "source_id": "sales-2024", "format": "pdf", "kind": "full", "fixed": 3,
                "id": "00000000-0000-4000-8000-000000000000", "mail": "probe@example.com",
                "at": "2024-01-01T00:00:00Z", "code": "probexxx", "n": 15, "step": 0.5,
                "part": 0, "opt": "given"
            })
        );
        let short = json!({"type": "string", "maxLength": 2});
        assert_eq!(SchemaView::new(&short).example(&short, 0), json!("pr"));
        let impossible = json!({"type": "integer", "minimum": 5, "maximum": 1});
        assert_eq!(
            SchemaView::new(&impossible).example(&impossible, 0),
            json!(1),
            "a schema nothing satisfies still yields a value"
        );
    }

    #[test]
    fn properties_list_required_first_with_types_and_enums() {
        let schema = weather();
        let view = SchemaView::new(&schema);
        let props = view.properties();
        assert_eq!(props[0].name, "location");
        assert!(props[0].required && !props[1].required);
        assert_eq!(view.types(props[0].schema), ["string"]);
        assert_eq!(view.types(props[1].schema), ["string"]);
        assert_eq!(view.enum_values(props[1].schema), ["metric", "imperial"]);
        assert!(view.enum_values(props[0].schema).is_empty());
    }

    #[test]
    fn self_referencing_and_odd_schemas_end() {
        let schema = json!({"$ref": "#", "properties": {"a": {"$ref": "#/properties/a"}}});
        let view = SchemaView::new(&schema);
        assert_eq!(view.baseline(), json!({}));
        assert!(view.types(&schema["properties"]["a"]).is_empty());
        let looping = json!({"anyOf": [{"$ref": "#"}, {"type": "null"}]});
        let view = SchemaView::new(&looping);
        assert!(view.types(&looping).is_empty());
        assert_eq!(view.baseline(), json!({}));
        let empty = json!({"anyOf": [], "oneOf": [{"type": "null"}]});
        assert_eq!(SchemaView::new(&empty).example(&empty, 0), json!("probe"));
    }

    #[test]
    fn wrong_values_and_near_misses() {
        assert_eq!(wrong_value(&["string"]), Some(json!(12345)));
        assert_eq!(
            wrong_value(&["number", "null"]),
            Some(json!("recourse-probe"))
        );
        assert_eq!(
            wrong_value(&["integer", "string", "boolean", "object"]),
            None
        );
        let allowed = ["metric".to_owned(), "metri".to_owned()];
        assert_eq!(near_miss("metric", &allowed[..1]), "metri");
        assert_eq!(near_miss("metric", &allowed), "metricx");
        assert_eq!(near_miss("pd", &[]), "pdx");
    }
}
