//! Protected values: what a human approved or a caller bound exactly never changes.
//!
//! A call carries JSON Pointers (RFC 6901) to values no layer may change,
//! remove or retype — not coercion, not repair, not a model. The executor takes
//! a snapshot when the call starts and checks every candidate payload against
//! it; a candidate that breaks one is rejected whole, never patched.

use std::fmt;

use serde_json::Value;

use crate::config::ConfigError;

/// The protected pointers of one call and the values they held at its start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Protected {
    entries: Vec<(String, Option<Value>)>,
}

/// How a candidate payload broke a protected value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectionViolation {
    /// The pointer whose value was touched.
    pub pointer: String,
    /// What happened to it: `changed`, `removed`, `added` or `retyped`.
    pub what: &'static str,
}

impl fmt::Display for ProtectionViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "protected value at {} was {}", self.pointer, self.what)
    }
}

impl std::error::Error for ProtectionViolation {}

/// Checks that `pointer` is a JSON Pointer (`""` or starting with `/`).
///
/// # Errors
/// When it is not.
pub fn validate_pointer(pointer: &str) -> Result<(), ConfigError> {
    if pointer.is_empty() || pointer.starts_with('/') {
        Ok(())
    } else {
        Err(ConfigError::new(
            "protected pointer",
            format!("{pointer:?} is not a JSON Pointer (it must start with '/')"),
        ))
    }
}

impl Protected {
    /// Snapshots `pointers` in `payload`.
    pub fn snapshot<S: AsRef<str>>(pointers: &[S], payload: &Value) -> Self {
        let entries = pointers
            .iter()
            .map(|p| (p.as_ref().to_owned(), payload.pointer(p.as_ref()).cloned()))
            .collect();
        Self { entries }
    }

    /// These protections and `pointers` snapshotted in `payload` besides
    /// (a pointer already protected is not taken twice).
    #[must_use]
    pub fn and_snapshot<S: AsRef<str>>(&self, pointers: &[S], payload: &Value) -> Self {
        let mut more = self.clone();
        for pointer in pointers {
            let pointer = pointer.as_ref();
            if !more.entries.iter().any(|(p, _)| p == pointer) {
                more.entries
                    .push((pointer.to_owned(), payload.pointer(pointer).cloned()));
            }
        }
        more
    }

    /// Whether nothing is protected.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The protected pointers.
    pub fn pointers(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(p, _)| p.as_str())
    }

    /// Whether `pointer` is protected, or lies inside a protected value.
    pub fn covers(&self, pointer: &str) -> bool {
        self.entries.iter().any(|(p, _)| {
            pointer == p
                || p.is_empty()
                || pointer
                    .strip_prefix(p.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    }

    /// Whether replacing the value at `pointer` could touch a protected
    /// value: it is covered, or a protected pointer lies inside it.
    pub fn overlaps(&self, pointer: &str) -> bool {
        self.covers(pointer)
            || self.entries.iter().any(|(p, _)| {
                p.strip_prefix(pointer)
                    .is_some_and(|rest| rest.starts_with('/'))
            })
    }

    /// Checks a candidate payload.
    ///
    /// # Errors
    /// The first protected value the candidate changed, removed, added or retyped.
    pub fn check(&self, candidate: &Value) -> Result<(), ProtectionViolation> {
        for (pointer, original) in &self.entries {
            let now = candidate.pointer(pointer);
            let what = match (original, now) {
                (Some(a), Some(b)) if a == b => continue,
                (None, None) => continue,
                (Some(_), None) => "removed",
                (None, Some(_)) => "added",
                (Some(a), Some(b)) if json_type(a) != json_type(b) => "retyped",
                (Some(_), Some(_)) => "changed",
            };
            return Err(ProtectionViolation {
                pointer: pointer.clone(),
                what,
            });
        }
        Ok(())
    }

    /// Whether `payload` has at least one leaf value that is not protected.
    pub fn has_mutable_inputs(&self, payload: &Value) -> bool {
        // With nothing protected every value is, or holds, a mutable leaf.
        self.entries.is_empty() || any_unprotected_leaf(payload, &mut String::new(), self)
    }
}

fn any_unprotected_leaf(value: &Value, path: &mut String, protected: &Protected) -> bool {
    if protected.covers(path) {
        return false;
    }
    let len = path.len();
    let found = match value {
        Value::Object(map) if !map.is_empty() => map.iter().any(|(k, v)| {
            path.truncate(len);
            path.push('/');
            push_escaped(path, k);
            any_unprotected_leaf(v, path, protected)
        }),
        Value::Array(items) if !items.is_empty() => items.iter().enumerate().any(|(i, v)| {
            path.truncate(len);
            path.push('/');
            path.push_str(&i.to_string());
            any_unprotected_leaf(v, path, protected)
        }),
        _ => true,
    };
    path.truncate(len);
    found
}

/// Appends `key` as a JSON Pointer token (`~` as `~0`, `/` as `~1`).
fn push_escaped(path: &mut String, key: &str) {
    for c in key.chars() {
        match c {
            '~' => path.push_str("~0"),
            '/' => path.push_str("~1"),
            c => path.push(c),
        }
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The JSON Pointers of every leaf of `payload` (scalars, and empty objects
/// or arrays), object keys in sorted order: what a person's approval of the
/// payload protects. A payload that is itself a leaf is `""`.
///
/// ```
/// use recourse_core::protect::leaf_pointers;
/// use serde_json::json;
///
/// let payload = json!({"to": "EUR", "amount": 5, "legs": [{"a/b": 1}], "tags": []});
/// assert_eq!(leaf_pointers(&payload), ["/amount", "/legs/0/a~1b", "/tags", "/to"]);
/// assert_eq!(leaf_pointers(&json!({})), [""]);
/// ```
pub fn leaf_pointers(payload: &Value) -> Vec<String> {
    fn walk(value: &Value, at: &mut String, out: &mut Vec<String>) {
        let len = at.len();
        match value {
            Value::Object(map) if !map.is_empty() => {
                let mut entries: Vec<_> = map.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                for (k, v) in entries {
                    at.truncate(len);
                    at.push('/');
                    push_escaped(at, k);
                    walk(v, at, out);
                }
            }
            Value::Array(items) if !items.is_empty() => {
                for (i, v) in items.iter().enumerate() {
                    at.truncate(len);
                    at.push('/');
                    at.push_str(itoa::Buffer::new().format(i));
                    walk(v, at, out);
                }
            }
            _ => out.push(at.clone()),
        }
        at.truncate(len);
    }
    let mut out = Vec::new();
    walk(payload, &mut String::new(), &mut out);
    out
}

/// `key` as one JSON Pointer reference token (RFC 6901): `~` as `~0`, `/` as `~1`.
///
/// ```
/// assert_eq!(recourse_core::protect::escape_token("a/b~c"), "a~1b~0c");
/// ```
pub fn escape_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    proptest::proptest! {
        #[test]
        fn a_key_is_escaped_as_a_pointer_token(key in "[a-z~/é]{0,12}") {
            let mut path = String::from("/x/");
            push_escaped(&mut path, &key);
            proptest::prop_assert_eq!(path, format!("/x/{}", key.replace('~', "~0").replace('/', "~1")));
        }
    }

    #[test]
    fn unchanged_protected_values_pass() {
        let p = Protected::snapshot(&["/amount"], &json!({"amount": 100, "to": "EUR"}));
        assert!(p.check(&json!({"amount": 100, "to": "USD"})).is_ok());
    }

    #[test]
    fn changed_removed_added_and_retyped_are_rejected() {
        let p = Protected::snapshot(&["/amount", "/memo"], &json!({"amount": 100}));
        assert_eq!(
            p.check(&json!({"amount": 101})).unwrap_err().what,
            "changed"
        );
        assert_eq!(p.check(&json!({})).unwrap_err().what, "removed");
        assert_eq!(
            p.check(&json!({"amount": "100"})).unwrap_err().what,
            "retyped"
        );
        assert_eq!(
            p.check(&json!({"amount": 100, "memo": "x"}))
                .unwrap_err()
                .what,
            "added"
        );
    }

    #[test]
    fn mutable_inputs_exclude_protected_subtrees() {
        let payload = json!({"order": {"id": "ORD-1", "qty": 2}, "note": "x"});
        assert!(Protected::snapshot(&["/order"], &payload).has_mutable_inputs(&payload));
        assert!(!Protected::snapshot(&["/order", "/note"], &payload).has_mutable_inputs(&payload));
        assert!(!Protected::snapshot(&[""], &payload).has_mutable_inputs(&payload));
        assert!(Protected::snapshot(&["/order/id"], &payload).has_mutable_inputs(&payload));
        assert!(
            Protected::default().has_mutable_inputs(&json!({})),
            "a correction may add fields"
        );
    }

    proptest::proptest! {
        /// Every value of an approved payload is protected: no change to a
        /// leaf passes, whatever the payload.
        #[test]
        fn protecting_every_leaf_refuses_any_change_to_one(
            a in -1000i64..1000, s in "[a-z]{0,6}", flag: bool, n in 0usize..3,
        ) {
            let payload = json!({"a": a, "s": s, "nested": {"flag": flag, "list": vec![a; n]}});
            let protected = Protected::snapshot(&leaf_pointers(&payload), &payload);
            proptest::prop_assert!(protected.check(&payload).is_ok());
            proptest::prop_assert!(!protected.has_mutable_inputs(&payload));
            for pointer in leaf_pointers(&payload) {
                let mut changed = payload.clone();
                if let Some(leaf) = changed.pointer_mut(&pointer) {
                    *leaf = json!("changed-by-a-correction");
                }
                proptest::prop_assert!(protected.check(&changed).is_err(), "{}", pointer);
            }
        }
    }

    #[test]
    fn pointers_must_start_with_a_slash() {
        assert!(validate_pointer("/a/b").is_ok());
        assert!(validate_pointer("").is_ok());
        assert!(validate_pointer("a/b").is_err());
    }
}
