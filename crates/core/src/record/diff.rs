//! Describing what a correction changed, for the trace.

use recourse_protocol::{redact, truncate_chars};
use serde_json::Value;

use crate::protect::escape_token;

/// Most changes named.
const MAX_CHANGES: usize = 8;

/// `"/a: 1 → 2, /b: (absent) → \"x\""`: each changed, added or removed leaf.
pub fn describe_changes(before: &Value, after: &Value) -> String {
    let mut changes = Vec::new();
    walk(Some(before), Some(after), &mut String::new(), &mut changes);
    let more = changes.len().saturating_sub(MAX_CHANGES);
    changes.truncate(MAX_CHANGES);
    if more > 0 {
        changes.push(format!("and {more} more"));
    }
    redact(&changes.join(", "))
}

fn walk(before: Option<&Value>, after: Option<&Value>, path: &mut String, out: &mut Vec<String>) {
    match (before, after) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let len = path.len();
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort_unstable();
            keys.dedup();
            for key in keys {
                path.push('/');
                path.push_str(&escape_token(key));
                walk(a.get(key), b.get(key), path, out);
                path.truncate(len);
            }
        }
        (a, b) if a != b => out.push(format!("{path}: {} → {}", show(a), show(b))),
        _ => {}
    }
}

fn show(value: Option<&Value>) -> String {
    value.map_or_else(
        || "(absent)".to_owned(),
        |v| truncate_chars(&v.to_string(), 80),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_changed_added_and_removed_leaves() {
        let text = describe_changes(
            &json!({"a": 1, "b": {"c": "x"}, "gone": true}),
            &json!({"a": 1, "b": {"c": "y"}, "new": [1]}),
        );
        assert_eq!(
            text,
            r#"/b/c: "x" → "y", /gone: true → (absent), /new: (absent) → [1]"#
        );
    }
}
