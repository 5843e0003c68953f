//! Places in a payload: a tool's `field` name as a JSON Pointer, the only
//! mutable string, and setting a value at a pointer.

use serde_json::Value;

use crate::schema::escape_token;
use recourse_core::protect::Protected;

/// `details.field` as a JSON Pointer: `/a/b`, `a.b`, `items[0].sku` or `name`.
pub(crate) fn field_pointer(field: &str) -> Option<String> {
    let field = field.trim();
    if field.is_empty() {
        return None;
    }
    if field.starts_with('/') {
        return Some(field.to_owned());
    }
    let mut pointer = String::new();
    for part in field.split('.') {
        let (name, indices) = part
            .split_once('[')
            .map_or((part, ""), |(n, rest)| (n, rest));
        if !name.is_empty() {
            pointer.push('/');
            pointer.push_str(&escape_token(name));
        }
        for index in indices.split('[').filter(|s| !s.is_empty()) {
            pointer.push('/');
            pointer.push_str(index.trim_end_matches(']'));
        }
    }
    Some(pointer)
}

/// The pointer of the payload's only unprotected string value, if it has exactly one.
pub(crate) fn only_mutable_string(payload: &Value, protected: &Protected) -> Option<String> {
    let mut found = Vec::new();
    collect_strings(payload, &mut String::new(), protected, &mut found);
    (found.len() == 1).then(|| found.remove(0))
}

fn collect_strings(value: &Value, path: &mut String, protected: &Protected, out: &mut Vec<String>) {
    if protected.covers(path) {
        return;
    }
    let len = path.len();
    match value {
        Value::String(_) => out.push(path.clone()),
        Value::Object(map) => map.iter().for_each(|(k, v)| {
            path.push('/');
            path.push_str(&escape_token(k));
            collect_strings(v, path, protected, out);
            path.truncate(len);
        }),
        Value::Array(items) => items.iter().enumerate().for_each(|(i, v)| {
            path.push('/');
            path.push_str(&i.to_string());
            collect_strings(v, path, protected, out);
            path.truncate(len);
        }),
        _ => {}
    }
}

/// Sets the value at `pointer`, creating the last key if its parent is an object.
pub(crate) fn set_pointer(root: &mut Value, pointer: &str, value: Value) -> bool {
    if let Some(slot) = root.pointer_mut(pointer) {
        *slot = value;
        return true;
    }
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return false;
    };
    match root.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.insert(last.replace("~1", "/").replace("~0", "~"), value);
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn field_names_become_pointers() {
        assert_eq!(field_pointer("location").as_deref(), Some("/location"));
        assert_eq!(field_pointer("/a/b").as_deref(), Some("/a/b"));
        assert_eq!(
            field_pointer("order.items[0].sku").as_deref(),
            Some("/order/items/0/sku")
        );
        assert_eq!(field_pointer("  "), None);
    }

    #[test]
    fn setting_creates_only_a_last_key() {
        let mut v = json!({"a": {}});
        assert!(set_pointer(&mut v, "/a/b", json!(1)));
        assert!(!set_pointer(&mut v, "/x/y", json!(1)));
        assert_eq!(v, json!({"a": {"b": 1}}));
    }
}
