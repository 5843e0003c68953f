//! Object keys in sorted order, whatever serde_json's features.
//!
//! serde_json keeps an object's keys sorted, unless any crate in the build
//! turns on its `preserve_order` feature (rig-core does, and so every agent
//! built with rig), and then keeps them in the order they were inserted.
//! What recourse shows or sends in an order — the JSON in a prompt, query
//! parameters, the list of coercions, a correction's changes, the leaves an
//! approver is shown — must not depend on which other crates an application
//! links, so where the order shows, it is sorted here.

use serde_json::{Map, Value};

/// `map`'s entries, by key.
pub(crate) fn sorted_entries(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<_> = map.iter().collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    entries
}

/// `value` with every object's keys in sorted order (for rendering it).
#[cfg(feature = "llm")]
pub(crate) fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            sorted_entries(map)
                .into_iter()
                .map(|(k, v)| (k.clone(), sorted(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        scalar => scalar.clone(),
    }
}

#[cfg(all(test, feature = "llm"))]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_come_out_sorted_at_every_depth() {
        let mut inner = Map::new();
        inner.insert("z".into(), json!(1));
        inner.insert("a".into(), json!(2));
        let mut outer = Map::new();
        outer.insert("y".into(), json!([Value::Object(inner.clone())]));
        outer.insert("b".into(), Value::Object(inner));
        let text = sorted(&Value::Object(outer)).to_string();
        assert_eq!(text, r#"{"b":{"a":2,"z":1},"y":[{"a":2,"z":1}]}"#);
    }
}
