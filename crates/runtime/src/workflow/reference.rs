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

pub(crate) use crate::template::references_in;
use crate::template::{self, Reference};

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
    template::resolve(parameters, &|r: &Reference| lookup(r, results))
}

fn lookup<'a>(r: &Reference, results: &'a HashMap<String, Value>) -> Result<&'a Value, String> {
    let result = results.get(&r.root).ok_or_else(|| {
        format!(
            "unresolvable reference {}: step {:?} has no result",
            r.raw, r.root
        )
    })?;
    template::follow(result, r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::Segment;
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
        assert_eq!(found[0].root, "q");
        assert_eq!(found[1].path, [Segment::Index(1)]);
    }

    #[test]
    fn strings_without_references_are_untouched_and_unbound() {
        let (v, bound) = resolve(&json!({"a": "plain {text}", "b": 3}), &results()).unwrap();
        assert_eq!(v, json!({"a": "plain {text}", "b": 3}));
        assert!(bound.is_empty());
    }
}
