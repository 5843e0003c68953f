//! Templates in JSON strings: `{{root.path.to[0].field}}`.
//!
//! A string that is exactly one template takes the referenced value with
//! its JSON type (a number stays a number); templates inside a longer
//! string are interpolated as text. Object keys are never templates. The
//! root names where a path starts: a workflow step's result
//! (`{{quote.data.price}}`), or the payload of the call a verification
//! reads back (`{{payload.order_id}}`) — each user says which roots exist.

use serde_json::Value;

/// One step of a template's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Segment {
    Key(String),
    Index(usize),
}

/// A parsed `{{root.path}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reference {
    /// The text as written, braces included.
    pub(crate) raw: String,
    /// What the path starts at: a step id, or `payload`.
    pub(crate) root: String,
    pub(crate) path: Vec<Segment>,
}

/// A string split into literal text and references.
enum Piece<'a> {
    Text(&'a str),
    Ref(Reference),
}

fn parse_path(raw: &str, inner: &str) -> Result<Reference, String> {
    let inner = inner.trim();
    let bad = |why: &str| format!("reference {raw} is malformed: {why}");
    let end = inner.find(['.', '[']).unwrap_or(inner.len());
    let (root, mut rest) = inner.split_at(end);
    if root.is_empty() {
        return Err(bad("it names no step or root before its path"));
    }
    let mut path = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let key = &after[..end];
            if key.is_empty() || key.contains([']', ' ']) {
                return Err(bad("a field name is empty or has ']' or a space"));
            }
            path.push(Segment::Key(key.to_owned()));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let close = after.find(']').ok_or_else(|| bad("'[' without ']'"))?;
            let index = after[..close]
                .trim()
                .parse::<usize>()
                .map_err(|_| bad("an index must be a non-negative integer"))?;
            path.push(Segment::Index(index));
            rest = &after[close + 1..];
        } else {
            return Err(bad("expected '.field' or '[index]'"));
        }
    }
    Ok(Reference {
        raw: raw.to_owned(),
        root: root.to_owned(),
        path,
    })
}

fn pieces(s: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(open) = rest.find("{{") {
        if open > 0 {
            out.push(Piece::Text(&rest[..open]));
        }
        let after = &rest[open + 2..];
        let close = after
            .find("}}")
            .ok_or_else(|| format!("'{{{{' without '}}}}' in {s:?}"))?;
        let raw = &rest[open..open + 2 + close + 2];
        out.push(Piece::Ref(parse_path(raw, &after[..close])?));
        rest = &after[close + 2..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    Ok(out)
}

/// Every reference in `value`'s strings.
///
/// # Errors
/// A malformed reference, described.
pub(crate) fn references_in(value: &Value) -> Result<Vec<Reference>, String> {
    let mut found = Vec::new();
    walk_strings(value, &mut |s| {
        for piece in pieces(s)? {
            if let Piece::Ref(r) = piece {
                found.push(r);
            }
        }
        Ok(())
    })?;
    Ok(found)
}

fn walk_strings(
    value: &Value,
    f: &mut impl FnMut(&str) -> Result<(), String>,
) -> Result<(), String> {
    match value {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter().try_for_each(|v| walk_strings(v, f)),
        Value::Object(map) => map.values().try_for_each(|v| walk_strings(v, f)),
        _ => Ok(()),
    }
}

/// `value` with every reference replaced through `lookup`, and the JSON
/// Pointers of the values references produced.
///
/// # Errors
/// The first reference that does not resolve, as `lookup` says.
pub(crate) fn resolve<'v>(
    value: &Value,
    lookup: &impl Fn(&Reference) -> Result<&'v Value, String>,
) -> Result<(Value, Vec<String>), String> {
    let mut bound = Vec::new();
    let value = resolve_value(value, lookup, &mut String::new(), &mut bound)?;
    Ok((value, bound))
}

fn resolve_value<'v>(
    value: &Value,
    lookup: &impl Fn(&Reference) -> Result<&'v Value, String>,
    pointer: &mut String,
    bound: &mut Vec<String>,
) -> Result<Value, String> {
    let len = pointer.len();
    let mut child = |token: String, v: &Value, pointer: &mut String| {
        pointer.truncate(len);
        pointer.push('/');
        pointer.push_str(&token.replace('~', "~0").replace('/', "~1"));
        resolve_value(v, lookup, pointer, bound)
    };
    Ok(match value {
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| child(i.to_string(), v, pointer))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), child(k.clone(), v, pointer)?)))
                .collect::<Result<_, String>>()?,
        ),
        Value::String(s) => {
            let resolved = resolve_string(s, lookup)?;
            if let Some(v) = resolved {
                pointer.truncate(len);
                bound.push(pointer.clone());
                v
            } else {
                value.clone()
            }
        }
        other => other.clone(),
    })
}

/// `None` when `s` holds no reference.
fn resolve_string<'v>(
    s: &str,
    lookup: &impl Fn(&Reference) -> Result<&'v Value, String>,
) -> Result<Option<Value>, String> {
    let parts = pieces(s)?;
    if !parts.iter().any(|p| matches!(p, Piece::Ref(_))) {
        return Ok(None);
    }
    if let [Piece::Ref(r)] = parts.as_slice() {
        return lookup(r).cloned().map(Some);
    }
    let mut text = String::new();
    for part in &parts {
        match part {
            Piece::Text(t) => text.push_str(t),
            Piece::Ref(r) => match lookup(r)? {
                Value::String(v) => text.push_str(v),
                v => text.push_str(&v.to_string()),
            },
        }
    }
    Ok(Some(Value::String(text)))
}

/// Follows `r`'s path from `start`, the value its root names; the error
/// says where the path left the value, and what was there instead.
///
/// # Errors
/// A field or element the path needs is missing.
pub(crate) fn follow<'a>(start: &'a Value, r: &Reference) -> Result<&'a Value, String> {
    let mut at = start;
    let mut walked = r.root.clone();
    for segment in &r.path {
        let next = match segment {
            Segment::Key(k) => at.as_object().and_then(|m| m.get(k)),
            Segment::Index(i) => at.as_array().and_then(|a| a.get(*i)),
        };
        at = next.ok_or_else(|| {
            let what = match segment {
                Segment::Key(k) => format!("no field {k:?}"),
                Segment::Index(i) => format!("no element [{i}]"),
            };
            format!(
                "unresolvable reference {}: {walked} has {what} (it is {})",
                r.raw,
                kind(at)
            )
        })?;
        match segment {
            Segment::Key(k) => walked.push_str(&format!(".{k}")),
            Segment::Index(i) => walked.push_str(&format!("[{i}]")),
        }
    }
    Ok(at)
}

fn kind(v: &Value) -> String {
    match v {
        Value::Null => "null".to_owned(),
        Value::Bool(_) => "a boolean".to_owned(),
        Value::Number(_) => "a number".to_owned(),
        Value::String(_) => "a string".to_owned(),
        Value::Array(a) => format!("an array of {}", a.len()),
        Value::Object(_) => "an object".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn from_payload<'a>(payload: &'a Value) -> impl Fn(&Reference) -> Result<&'a Value, String> {
        move |r: &Reference| follow(payload, r)
    }

    #[test]
    fn whole_values_keep_their_type_and_longer_strings_interpolate() {
        let payload = json!({"id": "W1", "n": 3, "items": [{"sku": "a"}]});
        let (v, bound) = resolve(
            &json!({"order": "{{payload.id}}", "count": "{{ payload.n }}",
                    "memo": "#{{payload.id}} x{{payload.n}}", "sku": ["{{payload.items[0].sku}}"], "k": 1}),
            &from_payload(&payload),
        )
        .unwrap();
        assert_eq!(
            v,
            json!({"order": "W1", "count": 3, "memo": "#W1 x3", "sku": ["a"], "k": 1})
        );
        // In the template's own order (serde_json keeps insertion order here).
        assert_eq!(bound, ["/order", "/count", "/memo", "/sku/0"]);
    }

    #[test]
    fn a_missing_field_is_named_with_what_was_there() {
        let payload = json!({"id": "W1"});
        let err = resolve(&json!({"z": "{{payload.zip}}"}), &from_payload(&payload)).unwrap_err();
        assert!(err.contains("payload has no field \"zip\""), "{err}");
        let err = resolve(&json!({"z": "{{payload.id[2]}}"}), &from_payload(&payload)).unwrap_err();
        assert!(err.contains("no element [2] (it is a string)"), "{err}");
    }

    #[test]
    fn malformed_references_are_refused() {
        for bad in ["{{}}", "{{p.}}", "{{p[x]}}", "{{p[0}}", "{{p.data"] {
            assert!(references_in(&json!({"a": bad})).is_err(), "{bad}");
        }
        let found = references_in(&json!({"a": ["x {{q.data.p}} {{r[1]}}"]})).unwrap();
        assert_eq!(found[0].root, "q");
        assert_eq!(found[1].path, [Segment::Index(1)]);
    }
}
