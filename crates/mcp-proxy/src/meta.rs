//! The `_meta` key under which the proxy adds its summary to every result,
//! and the read-back a summary shows.

use serde_json::{Map, Value};

/// The `_meta` key of the record's summary on every result of the proxy.
pub const CALL_META_KEY: &str = "recourse/call";

/// Adds to `call` (a [`CALL_META_KEY`] summary) the read-back the call
/// declared, when it declared one: what it established (`verification`, as
/// the record has it) and each read it made (`reads`: `{phase, result,
/// detail?}`, the record's `verify` events).
pub(crate) fn read_back(call: &mut Map<String, Value>, record: &Value) {
    let Some(verification) = record.get("verification").filter(|v| !v.is_null()) else {
        return;
    };
    call.insert("verification".to_owned(), verification.clone());
    let events = record["attempts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|attempt| attempt["events"].as_array())
        .flatten();
    let reads = events
        .filter_map(|event| event.as_object().filter(|e| e["kind"] == "verify"))
        .map(|event| {
            let fields = event.iter().filter(|(k, _)| *k != "kind");
            Value::Object(fields.map(|(k, v)| (k.clone(), v.clone())).collect())
        })
        .collect();
    call.insert("reads".to_owned(), Value::Array(reads));
}
