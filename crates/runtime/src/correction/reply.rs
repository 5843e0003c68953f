//! Reading a model's reply: the first JSON object in it, however it is wrapped.
//!
//! Models asked for "JSON only" still wrap it in code fences, put a sentence
//! before it, or keep talking after it. The reader scans for the first
//! balanced `{…}` (respecting strings and escapes) that parses as a JSON
//! object, skipping braces in prose that do not.

use serde_json::{Map, Value};

/// The first balanced JSON object in `text`, if any.
pub(crate) fn first_json_object(text: &str) -> Option<Map<String, Value>> {
    let mut start = 0;
    while let Some(offset) = text[start..].find('{') {
        let open = start + offset;
        if let Some(end) = balanced_end(&text[open..])
            && let Ok(Value::Object(map)) = serde_json::from_str(&text[open..open + end])
        {
            return Some(map);
        }
        start = open + 1;
    }
    None
}

/// The byte length of the balanced `{…}` at the start of `text`.
fn balanced_end(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => depth += 1,
            '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// A boolean field, accepting `true`/`false` and their string forms.
pub(crate) fn flag(map: &Map<String, Value>, key: &str) -> Option<bool> {
    match map.get(key)? {
        Value::Bool(b) => Some(*b),
        Value::String(s) if s.eq_ignore_ascii_case("true") => Some(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") => Some(false),
        _ => None,
    }
}

/// A string field, or empty.
pub(crate) fn text<'m>(map: &'m Map<String, Value>, key: &str) -> &'m str {
    map.get(key).and_then(Value::as_str).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parsed(text: &str) -> Option<Value> {
        first_json_object(text).map(Value::Object)
    }

    #[test]
    fn plain_fenced_and_wrapped_replies_parse() {
        let want = Some(json!({"can_fix": true, "p": {"a": "}"}}));
        assert_eq!(parsed(r#"{"can_fix": true, "p": {"a": "}"}}"#), want);
        assert_eq!(
            parsed("```json\n{\"can_fix\": true, \"p\": {\"a\": \"}\"}}\n```"),
            want
        );
        assert_eq!(
            parsed(
                "Sure! {not json} Here: {\"can_fix\": true, \"p\": {\"a\": \"}\"}} Hope it helps {x}"
            ),
            want
        );
    }

    #[test]
    fn escapes_and_garbage() {
        assert_eq!(parsed(r#"{"a": "q\"{"}"#), Some(json!({"a": "q\"{"})));
        assert_eq!(parsed("no json here"), None);
        assert_eq!(parsed("{\"unterminated\": "), None);
        assert_eq!(parsed("}}}{"), None);
        assert_eq!(parsed("[1, 2]"), None);
    }

    #[test]
    fn flags_accept_strings() {
        let m = first_json_object(r#"{"a": "TRUE", "b": false, "c": 1}"#).unwrap();
        assert_eq!(
            (flag(&m, "a"), flag(&m, "b"), flag(&m, "c")),
            (Some(true), Some(false), None)
        );
    }
}
