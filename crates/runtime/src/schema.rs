//! A capability's input schema, compiled once and asked two questions: is this
//! payload valid, and which subschema governs the value at a given place.
//!
//! Validation is the `jsonschema` crate's, built without its HTTP and file
//! resolvers: a schema that points outside itself is a configuration error,
//! never a network fetch in the middle of a correction.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use recourse_core::config::{CallField, ConfigError};

/// How many `$ref` hops are followed before giving up (guards against cycles).
const MAX_REF_HOPS: usize = 8;

/// A compiled JSON Schema for a capability's input.
///
/// ```
/// use recourse::correction::Schema;
/// use serde_json::json;
///
/// let schema = Schema::compile(&json!({
///     "type": "object",
///     "properties": {"unit": {"enum": ["celsius", "fahrenheit"]}}
/// })).unwrap();
/// let problems = schema.violations(&json!({"unit": "Celsius"}));
/// assert_eq!(problems[0].pointer, "/unit");
/// assert_eq!(problems[0].allowed, Some(vec![json!("celsius"), json!("fahrenheit")]));
/// assert!(Schema::compile(&json!({"type": 12})).is_err());
/// ```
#[derive(Clone)]
pub struct Schema {
    raw: Arc<Value>,
    validator: Arc<jsonschema::Validator>,
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Schema").field("raw", &self.raw).finish()
    }
}

/// One way a payload breaks its schema.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaViolation {
    /// JSON Pointer to the offending value (`""` for the payload itself).
    pub pointer: String,
    /// The validator's description.
    pub message: String,
    /// The values an `enum` (or `const`) allows here, when that was the problem.
    pub allowed: Option<Vec<Value>>,
}

impl fmt::Display for SchemaViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() {
            "/"
        } else {
            &self.pointer
        };
        write!(f, "{at}: {}", self.message)
    }
}

impl Schema {
    /// Compiles `schema`.
    ///
    /// # Errors
    /// A schema that is not valid JSON Schema, or that refers to documents
    /// outside itself, is an error for the setting `schema`.
    pub fn compile(schema: &Value) -> Result<Self, ConfigError> {
        if !(schema.is_object() || schema.is_boolean()) {
            return Err(ConfigError::new(
                CallField::Schema,
                "a JSON Schema must be an object or a boolean",
            ));
        }
        let validator = jsonschema::validator_for(schema).map_err(|e| {
            ConfigError::new(CallField::Schema, format!("not a usable JSON Schema: {e}"))
        })?;
        Ok(Self {
            raw: Arc::new(schema.clone()),
            validator: Arc::new(validator),
        })
    }

    /// The schema as given.
    pub fn raw(&self) -> &Value {
        &self.raw
    }

    /// Whether `payload` satisfies the schema.
    pub fn is_valid(&self, payload: &Value) -> bool {
        self.validator.is_valid(payload)
    }

    /// Every way `payload` breaks the schema (empty when valid).
    pub fn violations(&self, payload: &Value) -> Vec<SchemaViolation> {
        self.validator
            .iter_errors(payload)
            .map(|e| {
                let allowed = match e.kind() {
                    jsonschema::error::ValidationErrorKind::Enum { options } => {
                        options.as_array().cloned()
                    }
                    jsonschema::error::ValidationErrorKind::Constant { expected_value } => {
                        Some(vec![Value::clone(expected_value)])
                    }
                    _ => None,
                };
                SchemaViolation {
                    pointer: e.instance_path().as_str().to_owned(),
                    message: e.to_string(),
                    allowed,
                }
            })
            .collect()
    }
}

/// Follows local `$ref`s (`#/...`) from `node` within `root`.
pub(crate) fn resolve<'s>(root: &'s Value, mut node: &'s Value) -> &'s Value {
    for _ in 0..MAX_REF_HOPS {
        let Some(target) = node
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|pointer| root.pointer(pointer))
        else {
            return node;
        };
        node = target;
    }
    node
}

/// The subschema for property `key` of an object governed by `node`, if any.
pub(crate) fn property_schema<'s>(
    root: &'s Value,
    node: &'s Value,
    key: &str,
) -> Option<&'s Value> {
    let node = resolve(root, node);
    if let Some(s) = node.get("properties").and_then(|p| p.get(key)) {
        return Some(resolve(root, s));
    }
    node.get("additionalProperties")
        .filter(|s| s.is_object())
        .map(|s| resolve(root, s))
}

/// The subschema for item `index` of an array governed by `node`, if any.
pub(crate) fn item_schema<'s>(root: &'s Value, node: &'s Value, index: usize) -> Option<&'s Value> {
    let node = resolve(root, node);
    let tuple = node
        .get("prefixItems")
        .or_else(|| node.get("items").filter(|i| i.is_array()));
    if let Some(positional) = tuple.and_then(Value::as_array) {
        if let Some(s) = positional.get(index) {
            return Some(resolve(root, s));
        }
        return node
            .get("additionalItems")
            .or_else(|| node.get("items").filter(|i| i.is_object()))
            .map(|s| resolve(root, s));
    }
    node.get("items")
        .filter(|i| i.is_object())
        .map(|s| resolve(root, s))
}

/// Whether an object governed by `node` may hold the key `key`: false only
/// when the schema lists its properties (or forbids extras) and `key` is not
/// among them, nor matched by `patternProperties`, nor allowed by a schema-valued
/// `additionalProperties`.
pub(crate) fn knows_key(root: &Value, node: &Value, key: &str) -> bool {
    let node = resolve(root, node);
    let listed = node.get("properties").and_then(Value::as_object);
    if listed.is_some_and(|p| p.contains_key(key)) {
        return true;
    }
    match node.get("additionalProperties") {
        Some(Value::Bool(false)) => {}
        Some(Value::Bool(true) | Value::Object(_)) => return true,
        _ if listed.is_none() => return true,
        _ => {}
    }
    // patternProperties keys are regexes; a key matching one is known. Without
    // a regex engine at hand, treat any pattern as permissive.
    node.get("patternProperties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty())
}

/// Escapes one JSON Pointer reference token.
pub(crate) use recourse_core::protect::escape_token;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn refs_and_items_resolve() {
        let root = json!({
            "$defs": {"money": {"type": "number"}},
            "properties": {"amounts": {"type": "array", "items": {"$ref": "#/$defs/money"}}}
        });
        let amounts = property_schema(&root, &root, "amounts").unwrap();
        assert_eq!(
            item_schema(&root, amounts, 3),
            Some(&json!({"type": "number"}))
        );
        assert_eq!(property_schema(&root, &root, "nope"), None);
    }

    #[test]
    fn known_keys_follow_properties_and_additional_properties() {
        let closed = json!({"properties": {"a": {}}, "additionalProperties": false});
        let listed = json!({"properties": {"a": {}}});
        let open = json!({"properties": {"a": {}}, "additionalProperties": true});
        assert!(knows_key(&closed, &closed, "a") && !knows_key(&closed, &closed, "b"));
        assert!(!knows_key(&listed, &listed, "b"));
        assert!(knows_key(&open, &open, "b"));
        assert!(knows_key(&json!({}), &json!({}), "anything"));
    }

    #[test]
    fn invalid_and_remote_schemas_are_config_errors() {
        assert_eq!(
            Schema::compile(&json!({"type": 12})).unwrap_err().setting(),
            "schema"
        );
        assert!(Schema::compile(&json!({"$ref": "https://example.invalid/s.json"})).is_err());
        assert!(Schema::compile(&json!("string")).is_err());
    }
}
