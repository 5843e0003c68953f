//! Templates in JSON strings: `{{root.path.to[0].field}}`.
//!
//! A string that is exactly one template takes the referenced value with
//! its JSON type (a number stays a number); templates inside a longer
//! string are interpolated as text. Object keys are never templates. The
//! root names where a path starts: a workflow step's result
//! (`{{quote.data.price}}`), or the payload of the call a verification
//! reads back (`{{payload.order_id}}`) — each user says which roots exist.
//!
//! A reference ending in `?` (`{{payload.file_name?}}`) is optional: when
//! it does not resolve, the string holding it is left out — the key of its
//! object, or the element of its array — instead of failing. Each user says
//! whether it takes optional references (a verification's read does; a
//! plan's step does not).

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
    /// Written with a trailing `?`: a value that may be missing.
    pub(crate) optional: bool,
}

/// A string split into literal text and references.
enum Piece<'a> {
    Text(&'a str),
    Ref(Reference),
}

fn parse_path(raw: &str, inner: &str) -> Result<Reference, String> {
    let inner = inner.trim();
    let (inner, optional) = match inner.strip_suffix('?') {
        Some(inner) => (inner.trim_end(), true),
        None => (inner, false),
    };
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
        optional,
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
/// A string whose optional reference does not resolve is left out of its
/// object or array (and a `value` that is such a string becomes `null`).
///
/// # Errors
/// The first required reference that does not resolve, as `lookup` says.
pub(crate) fn resolve<'v>(
    value: &Value,
    lookup: &impl Fn(&Reference) -> Result<&'v Value, String>,
) -> Result<(Value, Vec<String>), String> {
    let mut bound = Vec::new();
    let value = resolve_value(value, lookup, &mut String::new(), &mut bound)?;
    Ok((value.unwrap_or(Value::Null), bound))
}

/// `None`: the value is a string whose optional reference did not resolve.
fn resolve_value<'v>(
    value: &Value,
    lookup: &impl Fn(&Reference) -> Result<&'v Value, String>,
    pointer: &mut String,
    bound: &mut Vec<String>,
) -> Result<Option<Value>, String> {
    let len = pointer.len();
    let mut child = |token: String, v: &Value, pointer: &mut String| {
        pointer.truncate(len);
        pointer.push('/');
        pointer.push_str(&token.replace('~', "~0").replace('/', "~1"));
        resolve_value(v, lookup, pointer, bound)
    };
    Ok(Some(match value {
        Value::Array(items) => {
            let mut kept = Vec::with_capacity(items.len());
            for v in items {
                // Its index once the elements before it that were left out are gone.
                kept.extend(child(kept.len().to_string(), v, pointer)?);
            }
            Value::Array(kept)
        }
        Value::Object(map) => {
            let mut kept = serde_json::Map::new();
            for (k, v) in map {
                if let Some(v) = child(k.clone(), v, pointer)? {
                    kept.insert(k.clone(), v);
                }
            }
            Value::Object(kept)
        }
        Value::String(s) => match resolve_string(s, lookup)? {
            Filled::Unchanged => value.clone(),
            Filled::Omitted => return Ok(None),
            Filled::With(v) => {
                pointer.truncate(len);
                bound.push(pointer.clone());
                v
            }
        },
        other => other.clone(),
    }))
}

/// What became of one string.
enum Filled {
    /// It holds no reference.
    Unchanged,
    /// An optional reference in it does not resolve.
    Omitted,
    /// Its references resolved.
    With(Value),
}

fn resolve_string<'v>(
    s: &str,
    lookup: &impl Fn(&Reference) -> Result<&'v Value, String>,
) -> Result<Filled, String> {
    let parts = pieces(s)?;
    if !parts.iter().any(|p| matches!(p, Piece::Ref(_))) {
        return Ok(Filled::Unchanged);
    }
    let mut found = Vec::with_capacity(parts.len());
    for part in &parts {
        if let Piece::Ref(r) = part {
            match lookup(r) {
                Ok(v) => found.push(v),
                Err(_) if r.optional => return Ok(Filled::Omitted),
                Err(e) => return Err(e),
            }
        }
    }
    if let ([Piece::Ref(_)], [v]) = (parts.as_slice(), found.as_slice()) {
        return Ok(Filled::With((*v).clone()));
    }
    let mut values = found.into_iter();
    let mut text = String::new();
    for part in &parts {
        match part {
            Piece::Text(t) => text.push_str(t),
            Piece::Ref(_) => match values.next() {
                Some(Value::String(v)) => text.push_str(v),
                Some(v) => text.push_str(&v.to_string()),
                None => {}
            },
        }
    }
    Ok(Filled::With(Value::String(text)))
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
    fn an_optional_reference_that_does_not_resolve_leaves_its_string_out() {
        let payload = json!({"id": "W1"});
        let (v, bound) = resolve(
            &json!({"id": "{{payload.id?}}", "name": "{{ payload.name ? }}",
                    "memo": "for {{payload.name?}}", "list": ["{{payload.name?}}", "{{payload.id}}"]}),
            &from_payload(&payload),
        )
        .unwrap();
        assert_eq!(v, json!({"id": "W1", "list": ["W1"]}));
        assert_eq!(bound, ["/id", "/list/0"]);
        let (v, _) = resolve(&json!("{{payload.name?}}"), &from_payload(&payload)).unwrap();
        assert_eq!(v, Value::Null);
        let found = references_in(&json!("{{payload.name?}}")).unwrap();
        assert!(found[0].optional && found[0].path == [Segment::Key("name".into())]);
        assert!(!references_in(&json!("{{payload.id}}")).unwrap()[0].optional);
        assert!(resolve(&json!({"a": "{{payload.name}}"}), &from_payload(&payload)).is_err());
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
