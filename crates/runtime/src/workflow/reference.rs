//! References between steps: `{{step_id.path.to[0].field}}`.
//!
//! A path starts at the referenced step's result envelope, `{"success": true,
//! "data": …}`, so a quote's price is `{{quote.data.price}}` and its first
//! close `{{quote.data.history[0].close}}`. A parameter that is exactly one
//! reference takes the referenced value with its JSON type (a number stays a
//! number); references inside a longer string are interpolated as text.
//!
//! Why protect what a reference produced? Because the value came from a tool
//! that already answered: it is a fact of this run, not a guess a model may
//! revise. Every parameter a reference filled is exact-bound, so no correction
//! layer can change it.

use std::collections::HashMap;

use serde_json::Value;

/// One step of a reference's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Segment {
    Key(String),
    Index(usize),
}

/// A parsed `{{step.path}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reference {
    /// The text as written, braces included.
    pub(crate) raw: String,
    pub(crate) step: String,
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
    let (step, mut rest) = inner.split_at(end);
    if step.is_empty() {
        return Err(bad("it names no step"));
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
        step: step.to_owned(),
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

/// Every reference in `value`'s strings (object keys are never templates).
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

/// The parameters with every reference replaced, and the JSON Pointers of
/// the values references produced (to protect).
///
/// `results` maps a step id to its result envelope.
///
/// # Errors
/// The first reference that does not resolve, named, with why.
pub(crate) fn resolve(
    parameters: &Value,
    results: &HashMap<String, Value>,
) -> Result<(Value, Vec<String>), String> {
    let mut bound = Vec::new();
    let value = resolve_value(parameters, results, &mut String::new(), &mut bound)?;
    Ok((value, bound))
}

fn resolve_value(
    value: &Value,
    results: &HashMap<String, Value>,
    pointer: &mut String,
    bound: &mut Vec<String>,
) -> Result<Value, String> {
    let len = pointer.len();
    let mut child = |token: String, v: &Value, pointer: &mut String| {
        pointer.truncate(len);
        pointer.push('/');
        pointer.push_str(&token.replace('~', "~0").replace('/', "~1"));
        resolve_value(v, results, pointer, bound)
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
            let resolved = resolve_string(s, results)?;
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
fn resolve_string(s: &str, results: &HashMap<String, Value>) -> Result<Option<Value>, String> {
    let parts = pieces(s)?;
    if !parts.iter().any(|p| matches!(p, Piece::Ref(_))) {
        return Ok(None);
    }
    if let [Piece::Ref(r)] = parts.as_slice() {
        return lookup(r, results).cloned().map(Some);
    }
    let mut text = String::new();
    for part in &parts {
        match part {
            Piece::Text(t) => text.push_str(t),
            Piece::Ref(r) => match lookup(r, results)? {
                Value::String(v) => text.push_str(v),
                v => text.push_str(&v.to_string()),
            },
        }
    }
    Ok(Some(Value::String(text)))
}

fn lookup<'a>(r: &Reference, results: &'a HashMap<String, Value>) -> Result<&'a Value, String> {
    let mut at = results.get(&r.step).ok_or_else(|| {
        format!(
            "unresolvable reference {}: step {:?} has no result",
            r.raw, r.step
        )
    })?;
    let mut walked = r.step.clone();
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

    fn results() -> HashMap<String, Value> {
        HashMap::from([(
            "quote".to_owned(),
            json!({"success": true, "data": {"symbol": "TSLA", "price": 468.285, "history": [{"close": 460.1}]}}),
        )])
    }

    #[test]
    fn a_whole_value_keeps_its_type_and_is_bound() {
        let (v, bound) = resolve(
            &json!({"amount": "{{quote.data.price}}", "to": "EUR"}),
            &results(),
        )
        .unwrap();
        assert_eq!(v, json!({"amount": 468.285, "to": "EUR"}));
        assert_eq!(bound, ["/amount"]);
    }

    #[test]
    fn nested_paths_indexes_and_interpolation() {
        let (v, bound) = resolve(
            &json!({"legs": [{"close": "{{ quote.data.history[0].close }}"}],
                    "memo": "sell {{quote.data.symbol}} at {{quote.data.price}}",
                    "ok": "{{quote.success}}"}),
            &results(),
        )
        .unwrap();
        assert_eq!(
            v,
            json!({"legs": [{"close": 460.1}], "memo": "sell TSLA at 468.285", "ok": true})
        );
        assert_eq!(bound, ["/legs/0/close", "/memo", "/ok"]);
    }

    #[test]
    fn unresolvable_references_are_named() {
        let err = resolve(&json!({"a": "{{quote.data.volume}}"}), &results()).unwrap_err();
        assert!(err.contains("{{quote.data.volume}}"), "{err}");
        assert!(err.contains("quote.data has no field \"volume\""), "{err}");
        let err = resolve(&json!({"a": "{{quote.data.history[3]}}"}), &results()).unwrap_err();
        assert!(err.contains("no element [3]"), "{err}");
        let err = resolve(&json!({"a": "{{other.data}}"}), &results()).unwrap_err();
        assert!(err.contains("step \"other\" has no result"), "{err}");
    }

    #[test]
    fn malformed_references_are_refused() {
        for bad in [
            "{{}}",
            "{{quote.}}",
            "{{quote[x]}}",
            "{{quote[0}}",
            "{{quote.data",
        ] {
            assert!(references_in(&json!({"a": bad})).is_err(), "{bad}");
        }
        let found = references_in(&json!({"a": ["x {{q.data.p}} {{r[1]}}"]})).unwrap();
        assert_eq!(found[0].step, "q");
        assert_eq!(found[1].path, [Segment::Index(1)]);
    }

    #[test]
    fn strings_without_references_are_untouched_and_unbound() {
        let (v, bound) = resolve(&json!({"a": "plain {text}", "b": 3}), &results()).unwrap();
        assert_eq!(v, json!({"a": "plain {text}", "b": 3}));
        assert!(bound.is_empty());
    }
}
