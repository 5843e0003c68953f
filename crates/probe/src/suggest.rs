//! A read-back to declare for each write: the read the same server offers
//! that settles it when its answer is lost.
//!
//! A write's `verify` names a read, fills the read's arguments from the
//! write's, and states what the read shows once the write took effect. The
//! first two follow from what the server lists: a read (a `GET` or `HEAD`
//! entry, an MCP tool with `readOnlyHint`, or one declared idempotent and
//! named as a read — `get_`, `list_`, `_lookup` …) about the same thing as
//! the write (their names share a noun: `exports_create` and
//! `exports_lookup`, `cancel_order` and `get_order`), whose required
//! arguments the write has. Its arguments are the write's, by name —
//! `{{payload.x?}}` for one the write may leave out.
//!
//! What the read shows is the server's to say, and no listing says it: the
//! suggested expectations have the shape the write's verb calls for (a
//! create: one more element like it, `any` and `grew_by 1`; a removal: one
//! fewer; an update: its fields as sent) and a `<POINTER …>` where the read's
//! field goes. A pointer in angle brackets is not one, so the suggestion is
//! refused until edited: an expectation that never holds would read every
//! lost write as not committed, and resend it.

use serde_json::{Map, Value, json};

use super::subject::{Address, Subject, shown};

/// The most of a write's fields an expectation names.
const MAX_FIELDS: usize = 3;

/// Verbs of a write that makes something new (its effect: one more).
const CREATES: &[&str] = &[
    "create", "add", "place", "post", "send", "new", "open", "make", "insert", "upload", "book",
    "register", "submit", "touch", "mkdir", "append",
];
/// Verbs of a write that takes something away (its effect: one fewer).
const REMOVES: &[&str] = &[
    "delete",
    "remove",
    "rm",
    "drop",
    "clear",
    "unsubscribe",
    "purge",
];
/// Verbs of a read.
const READS: &[&str] = &[
    "get", "list", "lookup", "read", "search", "find", "show", "fetch", "describe", "query", "ls",
    "cat", "pwd", "view", "status", "info", "details",
];
/// Verbs of other writes (not nouns of what they act on).
const OTHER_VERBS: &[&str] = &[
    "update", "set", "change", "edit", "rename", "move", "cancel", "close", "resolve", "assign",
    "mark", "refund", "write", "put", "patch", "cd", "like", "follow", "pay", "escalate", "apply",
    "do", "run", "current", "by", "to", "of", "for",
];

/// The read-back suggested for one write.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Suggestion {
    /// The read's name.
    pub(crate) read: String,
    /// A `verify` object, its expectations to complete (`<POINTER …>`).
    pub(crate) verify: Value,
}

/// The suggestion for every subject that writes and has a matching read
/// among `subjects`, by the write's name.
pub(crate) fn for_writes(subjects: &[Subject]) -> Vec<(String, Suggestion)> {
    subjects
        .iter()
        .filter(|s| s.writes() && !reads(s))
        .filter_map(|write| Some((write.name.clone(), suggest(write, subjects)?)))
        .collect()
}

/// Whether `subject` reads: it says it only reads, or it is declared
/// idempotent and named as a read.
fn reads(subject: &Subject) -> bool {
    !subject.writes()
        || (subject.idempotent
            && words(&subject.name)
                .iter()
                .any(|w| READS.contains(&w.as_str())))
}

fn suggest(write: &Subject, subjects: &[Subject]) -> Option<Suggestion> {
    let fields = Fields::of(&write.schema);
    let nouns = nouns(&write.name);
    let (read, args) = subjects
        .iter()
        .filter(|r| r.name != write.name && reads(r))
        .filter_map(|r| {
            let shared = nouns
                .iter()
                .filter(|n| self::nouns(&r.name).contains(n))
                .count();
            let args = args(&fields, &Fields::of(&r.schema))?;
            (shared > 0).then_some((shared, args.len(), r, args))
        })
        // The most nouns shared, then the most arguments filled, then the first listed.
        .max_by_key(|(shared, filled, _, _)| (*shared, *filled))
        .map(|(_, _, r, args)| (r, args))?;
    let mut verify = Map::new();
    match &read.address {
        Address::Mcp(name) => {
            verify.insert("tool".to_owned(), Value::from(name.as_str()));
        }
        Address::Http { method, url } => {
            verify.insert("url".to_owned(), Value::from(shown(url)));
            if method == reqwest::Method::GET {
                verify.insert("method".to_owned(), Value::from("GET"));
            }
        }
    }
    let expect = expectations(&write.name, &fields, &args);
    verify.insert("args".to_owned(), Value::Object(args));
    verify.insert("expect".to_owned(), json!(expect));
    Some(Suggestion {
        read: read.name.clone(),
        verify: Value::Object(verify),
    })
}

/// The read's arguments, filled from the write's by name; `None` when the
/// read requires one the write does not have.
fn args(write: &Fields, read: &Fields) -> Option<Map<String, Value>> {
    let mut args = Map::new();
    for name in &read.all {
        let template = if write.required.contains(name) {
            format!("{{{{payload.{name}}}}}")
        } else if write.all.contains(name) {
            format!("{{{{payload.{name}?}}}}")
        } else if read.required.contains(name) {
            return None;
        } else {
            continue;
        };
        args.insert(name.clone(), Value::String(template));
    }
    Some(args)
}

/// The expectations a write of this verb calls for, `<POINTER …>` where the
/// read's field goes.
fn expectations(name: &str, write: &Fields, args: &Map<String, Value>) -> Vec<String> {
    let verbs = words(name);
    let is = |list: &[&str]| verbs.iter().any(|w| list.contains(&w.as_str()));
    // The write's fields the read does not take: what its effect shows.
    let shown: Vec<&String> = write
        .required
        .iter()
        .filter(|f| !args.contains_key(*f))
        .take(MAX_FIELDS)
        .collect();
    if is(CREATES) {
        let fields = write.required.iter().take(MAX_FIELDS);
        let like: Map<String, Value> = fields
            .map(|f| {
                (
                    format!("/{f}"),
                    Value::String(format!("{{{{payload.{f}}}}}")),
                )
            })
            .collect();
        let mut expect = Vec::new();
        if !like.is_empty() {
            expect.push(format!("<POINTER TO THE LIST> any {}", Value::Object(like)));
        }
        expect.push("<POINTER TO THE LIST> grew_by 1".to_owned());
        return expect;
    }
    if is(REMOVES) {
        return vec!["<POINTER TO THE LIST> grew_by -1".to_owned()];
    }
    if shown.is_empty() {
        return vec!["<POINTER TO WHAT THE WRITE CHANGES> == <VALUE AFTER IT>".to_owned()];
    }
    shown
        .into_iter()
        .map(|f| format!("<POINTER TO {f}> == {{{{payload.{f}}}}}"))
        .collect()
}

/// A schema's top-level properties, and which are required, in its order.
struct Fields {
    all: Vec<String>,
    required: Vec<String>,
}

impl Fields {
    fn of(schema: &Value) -> Self {
        let all = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().filter(|k| is_name(k)).cloned().collect())
            .unwrap_or_default();
        let required = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .filter(|k| is_name(k))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        Self { all, required }
    }
}

/// A field a template can name: letters, digits, `_` and `-`.
fn is_name(field: &str) -> bool {
    !field.is_empty()
        && field.len() <= 64
        && field
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A name's words, lower case: split at `_`, `-`, `.`, `/` and camelCase.
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            out.extend((!word.is_empty()).then(|| std::mem::take(&mut word)));
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower {
            out.push(std::mem::take(&mut word));
        }
        prev_lower = c.is_lowercase();
        word.extend(c.to_lowercase());
    }
    out.extend((!word.is_empty()).then_some(word));
    out
}

/// The words of a name that are not verbs, singular (`orders` → `order`).
fn nouns(name: &str) -> Vec<String> {
    words(name)
        .into_iter()
        .filter(|w| {
            ![CREATES, REMOVES, READS, OTHER_VERBS]
                .iter()
                .any(|list| list.contains(&w.as_str()))
        })
        .map(|w| match w.strip_suffix('s') {
            Some(one) if one.len() > 2 && !one.ends_with('s') => one.to_owned(),
            _ => w,
        })
        .collect()
}

#[cfg(test)]
mod tests;
