//! The gate every corrected payload passes, whichever layer made it.
//!
//! A correction is the riskiest thing an agent does on its own, so a
//! candidate is sent only if it is an object, differs from the payload that
//! failed, keeps every protected value, adds no field the schema does not
//! know, and satisfies the schema after L2 coercion. Anything else counts as
//! "cannot fix", with the reason recorded. The chain applies it to choose
//! between its layers; the executor applies it again to whatever any
//! corrector returns, so a custom corrector cannot bypass it.

use serde_json::Value;

use crate::correction::SchemaCoercion;
use crate::correction::{Admission, Admitted};
use crate::schema::Schema;
use crate::schema::{escape_token, knows_key, property_schema};
use recourse_core::protect::Protected;
use recourse_core::record::GateRule;

/// Most schema violations named in a rejection.
const MAX_NAMED: usize = 3;

/// Why the gate refused a candidate: the rule, and the particulars in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rejection {
    pub(crate) rule: GateRule,
    pub(crate) detail: String,
}

impl Rejection {
    fn new(rule: GateRule, detail: impl Into<String>) -> Self {
        Self {
            rule,
            detail: recourse_protocol::redact(&detail.into()),
        }
    }

    pub(crate) fn protected(violation: &recourse_core::protect::ProtectionViolation) -> Self {
        Self::new(GateRule::ProtectedChanged, violation.to_string())
    }

    pub(crate) fn unchanged() -> Self {
        Self::new(GateRule::Unchanged, "unchanged from the failed payload")
    }
}

/// The candidate as it would be sent (coerced, with coercion's changes), or
/// why it may not be.
pub(crate) fn gate(
    candidate: Value,
    failed: &Value,
    protected: &Protected,
    schema: Option<&Schema>,
) -> Result<Admitted, Rejection> {
    if !candidate.is_object() {
        return Err(Rejection::new(GateRule::NotObject, "not a JSON object"));
    }
    let protection = |v: recourse_core::protect::ProtectionViolation| Rejection::protected(&v);
    protected.check(&candidate).map_err(protection)?;
    if let Some(schema) = schema {
        let raw = schema.raw();
        if let Some(pointer) = unknown_field(&candidate, failed, raw, raw, &mut String::new()) {
            return Err(Rejection::new(
                GateRule::UnknownField,
                format!("adds {pointer}, a field the schema does not define"),
            ));
        }
    }
    let admitted = SchemaCoercion.admit(candidate, schema, protected);
    protected.check(&admitted.payload).map_err(protection)?;
    if &admitted.payload == failed {
        return Err(Rejection::unchanged());
    }
    if let Some(schema) = schema {
        let violations = schema.violations(&admitted.payload);
        if !violations.is_empty() {
            let named: Vec<String> = violations
                .iter()
                .take(MAX_NAMED)
                .map(ToString::to_string)
                .collect();
            return Err(Rejection::new(
                GateRule::SchemaInvalid,
                format!("fails the schema: {}", named.join("; ")),
            ));
        }
    }
    Ok(admitted)
}

/// The first key in `candidate` that the schema does not know and the failed
/// payload did not already have.
fn unknown_field(
    candidate: &Value,
    failed: &Value,
    root: &Value,
    node: &Value,
    path: &mut String,
) -> Option<String> {
    let Value::Object(map) = candidate else {
        return None;
    };
    let len = path.len();
    for (key, value) in map {
        path.truncate(len);
        path.push('/');
        path.push_str(&escape_token(key));
        let before = failed.pointer(path.as_str());
        if before.is_none() && !knows_key(root, node, key) {
            return Some(path.clone());
        }
        if let Some(sub) = property_schema(root, node, key)
            && let Some(found) = unknown_field(value, failed, root, sub, path)
        {
            return Some(found);
        }
    }
    path.truncate(len);
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Schema {
        Schema::compile(&json!({
            "type": "object",
            "properties": {
                "location": {"type": "string"},
                "days": {"type": "integer"},
                "options": {"type": "object", "properties": {"unit": {"type": "string"}}, "additionalProperties": false}
            },
            "required": ["location"]
        }))
        .unwrap()
    }

    #[test]
    fn a_good_candidate_passes_coerced() {
        let failed = json!({"location": "Flower Mound, TX", "days": 3});
        let ok = gate(
            json!({"location": "Flower Mound, Texas, US", "days": "3"}),
            &failed,
            &Protected::default(),
            Some(&schema()),
        );
        assert_eq!(
            ok.map(|a| a.payload),
            Ok(json!({"location": "Flower Mound, Texas, US", "days": 3}))
        );
    }

    #[test]
    fn rejections_say_why() {
        let failed = json!({"location": "X", "days": 3});
        let none = Protected::default();
        let s = Some(schema());
        let why = |c: Value, p: &Protected| gate(c, &failed, p, s.as_ref()).unwrap_err();
        assert_eq!(why(json!([1]), &none).rule, GateRule::NotObject);
        assert_eq!(
            why(json!({"location": "X", "days": "3"}), &none).rule,
            GateRule::Unchanged
        );
        let added = why(json!({"location": "Y", "country": "US"}), &none);
        assert_eq!(added.rule, GateRule::UnknownField);
        assert!(added.detail.contains("/country"));
        let nested = why(
            json!({"location": "Y", "options": {"colour": "red"}}),
            &none,
        );
        assert!(nested.rule == GateRule::UnknownField && nested.detail.contains("/options/colour"));
        let invalid = why(json!({"location": "Y", "days": "three"}), &none);
        assert_eq!(invalid.rule, GateRule::SchemaInvalid);
        assert!(invalid.detail.starts_with("fails the schema: /days"));
        let protected = Protected::snapshot(&["/days"], &failed);
        let touched = why(json!({"location": "Y", "days": 4}), &protected);
        assert_eq!(touched.rule, GateRule::ProtectedChanged);
        assert!(touched.detail.contains("/days"));
    }

    #[test]
    fn without_a_schema_only_shape_difference_and_protection_count() {
        let failed = json!({"a": 1});
        assert!(
            gate(
                json!({"a": 1, "b": 2}),
                &failed,
                &Protected::default(),
                None
            )
            .is_ok()
        );
    }
}
