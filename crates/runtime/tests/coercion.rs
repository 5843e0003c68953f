//! The L2 coercion matrix (protocol §4): what converts, what stays, what is recorded.

use recourse::correction::{Admission, Schema, SchemaCoercion};
use recourse::protect::Protected;
use recourse::record::CoercionChange;
use serde_json::{Value, json};

/// Each change as `pointer: from → to (rule)`.
fn shown(changes: &[CoercionChange]) -> Vec<String> {
    changes
        .iter()
        .map(|c| {
            let to = c.to.as_ref().map_or("omitted".to_owned(), Value::to_string);
            format!("{}: {} → {to} ({})", c.pointer, c.from, c.rule.as_str())
        })
        .collect()
}

fn coerce(schema: Value, payload: Value) -> (Value, Vec<CoercionChange>) {
    let schema = Schema::compile(&schema).unwrap();
    let admitted = SchemaCoercion.admit(payload, Some(&schema), &Protected::default());
    (admitted.payload, admitted.changes)
}

fn field(kind: &str, value: Value) -> Value {
    let schema = json!({"type": "object", "properties": {"v": {"type": kind}}});
    coerce(schema, json!({"v": value})).0["v"].clone()
}

#[test]
fn numeric_strings_become_numbers() {
    assert_eq!(field("number", json!("12")), json!(12));
    assert_eq!(field("number", json!("12.5")), json!(12.5));
    assert_eq!(field("number", json!("-0.25")), json!(-0.25));
    assert_eq!(field("number", json!("1e3")), json!(1000.0));
    assert_eq!(field("number", json!(" 7 ")), json!(7));
}

#[test]
fn integer_strings_become_integers_but_not_fractions_or_overflow() {
    assert_eq!(field("integer", json!("42")), json!(42));
    assert_eq!(field("integer", json!("-42")), json!(-42));
    assert_eq!(
        field("integer", json!("18446744073709551615")),
        json!(u64::MAX)
    );
    assert_eq!(field("integer", json!("12.5")), json!("12.5"));
    assert_eq!(field("integer", json!("1e3")), json!("1e3"));
    assert_eq!(
        field("integer", json!("99999999999999999999")),
        json!("99999999999999999999")
    );
    assert_eq!(
        field("integer", json!("-9223372036854775809")),
        json!("-9223372036854775809")
    );
}

#[test]
fn nan_and_infinity_are_refused() {
    for s in [
        "NaN", "nan", "inf", "-inf", "Infinity", "1e400", "-1e400", "", "-", ".",
    ] {
        assert_eq!(field("number", json!(s)), json!(s), "{s:?}");
    }
}

#[test]
fn boolean_strings_become_booleans() {
    assert_eq!(field("boolean", json!("true")), json!(true));
    assert_eq!(field("boolean", json!("false")), json!(false));
    assert_eq!(field("boolean", json!("TRUE")), json!(true));
    assert_eq!(field("boolean", json!("yes")), json!("yes"));
    assert_eq!(field("boolean", json!(1)), json!(1));
}

#[test]
fn numbers_become_strings_where_a_string_is_wanted() {
    assert_eq!(field("string", json!(75001)), json!("75001"));
    assert_eq!(field("string", json!(2.5)), json!("2.5"));
    assert_eq!(
        field("string", json!(true)),
        json!(true),
        "booleans are not converted"
    );
}

#[test]
fn a_one_field_object_becomes_its_string() {
    assert_eq!(field("string", json!({"name": "Paris"})), json!("Paris"));
    assert_eq!(
        field("string", json!({"a": "x", "b": "y"})),
        json!({"a": "x", "b": "y"})
    );
    assert_eq!(field("string", json!({"n": 5})), json!({"n": 5}));
}

#[test]
fn values_already_of_the_right_type_and_unknown_fields_stay() {
    let schema =
        json!({"type": "object", "properties": {"n": {"type": "number"}, "s": {"type": "string"}}});
    let (payload, changes) = coerce(schema, json!({"n": 3, "s": "12", "extra": "5"}));
    assert_eq!(payload, json!({"n": 3, "s": "12", "extra": "5"}));
    assert!(changes.is_empty());
}

#[test]
fn unconvertible_values_stay() {
    assert_eq!(field("number", json!("twelve")), json!("twelve"));
    assert_eq!(field("integer", json!([1])), json!([1]));
    assert_eq!(field("number", json!(null)), json!(null));
}

#[test]
fn nested_objects_and_arrays_are_walked() {
    let schema = json!({
        "type": "object",
        "$defs": {"line": {"type": "object", "properties": {"qty": {"type": "integer"}, "sku": {"type": "string"}}}},
        "properties": {
            "order": {"type": "object", "properties": {
                "lines": {"type": "array", "items": {"$ref": "#/$defs/line"}},
                "express": {"type": "boolean"}
            }},
            "tags": {"type": "array", "items": {"type": "string"}},
            "discount": {"anyOf": [{"type": "number"}, {"type": "null"}]}
        }
    });
    let (payload, changes) = coerce(
        schema,
        json!({
            "order": {"lines": [{"qty": "2", "sku": 12345}, {"qty": "x"}], "express": "false"},
            "tags": [1, "b"],
            "discount": "0.1"
        }),
    );
    assert_eq!(
        payload,
        json!({
            "order": {"lines": [{"qty": 2, "sku": "12345"}, {"qty": "x"}], "express": false},
            "tags": ["1", "b"],
            "discount": 0.1
        })
    );
    assert_eq!(
        shown(&changes),
        [
            r#"/discount: "0.1" → 0.1 (numeric_string)"#,
            r#"/order/express: "false" → false (boolean_string)"#,
            r#"/order/lines/0/qty: "2" → 2 (integer_string)"#,
            r#"/order/lines/0/sku: 12345 → "12345" (number_to_string)"#,
            r#"/tags/0: 1 → "1" (number_to_string)"#,
        ]
    );
}

#[test]
fn protected_values_are_untouched() {
    let schema = json!({"type": "object", "properties": {
        "amount": {"type": "number"}, "memo": {"type": "object", "properties": {"n": {"type": "integer"}}}, "qty": {"type": "integer"}
    }});
    let payload = json!({"amount": "100", "memo": {"n": "1"}, "qty": "3"});
    let protected = Protected::snapshot(&["/amount", "/memo"], &payload);
    let schema = Schema::compile(&schema).unwrap();
    let admitted = SchemaCoercion.admit(payload, Some(&schema), &protected);
    assert_eq!(
        admitted.payload,
        json!({"amount": "100", "memo": {"n": "1"}, "qty": 3})
    );
    assert_eq!(
        shown(&admitted.changes),
        [r#"/qty: "3" → 3 (integer_string)"#]
    );
}

#[test]
fn without_a_schema_nothing_changes() {
    let admitted = SchemaCoercion.admit(json!({"a": "1"}), None, &Protected::default());
    assert_eq!(admitted.payload, json!({"a": "1"}));
    assert!(admitted.changes.is_empty());
}

#[test]
fn coercion_is_idempotent() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}});
    let (once, _) = coerce(schema.clone(), json!({"a": "1", "b": 2}));
    let (twice, changes) = coerce(schema, once.clone());
    assert_eq!(once, twice);
    assert!(changes.is_empty());
}

fn shapes_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}},
            "ids": {"type": "array", "items": {"type": "integer"}},
            "filter": {"type": "object", "properties": {"min": {"type": "number"}}},
            "note": {"type": "string"},
            "limit": {"type": "integer"},
            "maybe": {"type": ["string", "null"]},
            "either": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "loose": {},
            "needed": {"type": "string"}
        },
        "required": ["needed"]
    })
}

#[test]
fn a_string_holding_the_wanted_array_or_object_is_parsed() {
    let (payload, changes) = coerce(
        shapes_schema(),
        json!({"tags": "[\"a\",\"b\"]", "filter": "{\"min\": \"2\"}", "note": "[1]"}),
    );
    assert_eq!(
        payload,
        json!({"tags": ["a", "b"], "filter": {"min": 2}, "note": "[1]"})
    );
    assert_eq!(
        shown(&changes),
        [
            r#"/filter: "{\"min\": \"2\"}" → {"min":"2"} (json_string)"#,
            r#"/filter/min: "2" → 2 (integer_string)"#,
            r#"/tags: "[\"a\",\"b\"]" → ["a","b"] (json_string)"#,
        ]
    );
    // Not JSON, or JSON of the wrong shape: left alone.
    let (payload, changes) = coerce(
        shapes_schema(),
        json!({"tags": "[a, b", "filter": "[1, 2]"}),
    );
    assert_eq!(payload, json!({"tags": "[a, b", "filter": "[1, 2]"}));
    assert!(changes.is_empty());
}

#[test]
fn a_lone_scalar_becomes_a_one_element_array_of_its_own_type_only() {
    let (payload, changes) = coerce(shapes_schema(), json!({"tags": "a", "ids": 7}));
    assert_eq!(payload, json!({"tags": ["a"], "ids": [7]}));
    assert_eq!(
        shown(&changes),
        [
            r#"/ids: 7 → [7] (scalar_to_array)"#,
            r#"/tags: "a" → ["a"] (scalar_to_array)"#,
        ]
    );
    // Two readings ("7" as a string, or as 7 in a list of integers): never guessed.
    let (payload, changes) = coerce(shapes_schema(), json!({"ids": "7", "tags": 3}));
    assert_eq!(payload, json!({"ids": "7", "tags": 3}));
    assert!(changes.is_empty());
}

#[test]
fn null_for_an_optional_property_that_refuses_null_is_omitted() {
    let (payload, changes) = coerce(
        shapes_schema(),
        json!({"note": null, "limit": null, "maybe": null, "either": null, "loose": null, "needed": null}),
    );
    assert_eq!(
        payload,
        json!({"maybe": null, "either": null, "loose": null, "needed": null}),
        "null allowed, no type to tell, or required: kept"
    );
    assert_eq!(
        shown(&changes),
        [
            "/limit: null → omitted (null_omitted)",
            "/note: null → omitted (null_omitted)"
        ]
    );
}

#[test]
fn the_new_rules_never_touch_protected_values() {
    let payload = json!({"tags": "a", "note": null, "filter": "{}"});
    let protected = Protected::snapshot(&["/tags", "/note", "/filter"], &payload);
    let schema = Schema::compile(&shapes_schema()).unwrap();
    let admitted = SchemaCoercion.admit(payload.clone(), Some(&schema), &protected);
    assert_eq!(admitted.payload, payload);
    assert!(admitted.changes.is_empty());
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i32>().prop_map(Value::from),
            prop::sample::select(vec![
                "12",
                "-3",
                "1.5",
                "true",
                "FALSE",
                "a",
                "[\"x\"]",
                "[1,2]",
                "{\"min\":\"4\"}",
                "{\"name\":\"Paris\"}",
                "",
                "NaN",
                "1e400",
                "[",
                "null",
            ])
            .prop_map(Value::from),
        ]
    }

    fn value() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(
                    prop::sample::select(vec!["min", "name", "n"]).prop_map(str::to_owned),
                    inner,
                    0..3
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn payload() -> impl Strategy<Value = Value> {
        let keys = vec![
            "tags", "ids", "filter", "note", "limit", "maybe", "either", "loose", "needed", "other",
        ];
        prop::collection::btree_map(
            prop::sample::select(keys).prop_map(str::to_owned),
            value(),
            0..8,
        )
        .prop_map(|m| Value::Object(m.into_iter().collect()))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn coercion_is_idempotent_and_a_second_pass_changes_nothing(p in payload()) {
            let (once, _) = coerce(shapes_schema(), p);
            let (twice, changes) = coerce(shapes_schema(), once.clone());
            prop_assert_eq!(&once, &twice);
            prop_assert!(changes.is_empty(), "{:?}", changes);
        }

        #[test]
        fn coercion_never_changes_a_protected_value(
            p in payload(),
            pointers in prop::collection::vec(
                prop::sample::select(vec!["/tags", "/ids", "/filter", "/note", "/limit", "/filter/min", "/tags/0"]),
                0..4,
            )
        ) {
            let protected = Protected::snapshot(&pointers, &p);
            let schema = Schema::compile(&shapes_schema()).unwrap();
            let admitted = SchemaCoercion.admit(p.clone(), Some(&schema), &protected);
            prop_assert!(protected.check(&admitted.payload).is_ok());
            for pointer in &pointers {
                prop_assert_eq!(admitted.payload.pointer(pointer), p.pointer(pointer));
            }
        }

        #[test]
        fn every_change_is_recorded(p in payload()) {
            let (coerced, changes) = coerce(shapes_schema(), p.clone());
            prop_assert_eq!(coerced == p, changes.is_empty());
        }
    }
}

#[test]
fn coercion_says_it_leaves_payloads_unchanged_only_without_a_schema() {
    let schema = Schema::compile(&json!({"type": "object"})).unwrap();
    assert!(SchemaCoercion.leaves_unchanged(None));
    assert!(!SchemaCoercion.leaves_unchanged(Some(&schema)));
    assert!(recourse::correction::AsIs.leaves_unchanged(Some(&schema)));
}

/// An admission of a user's own that does not say it leaves payloads
/// unchanged is consulted on every call, schema or not.
#[tokio::test]
async fn an_admission_of_ones_own_is_asked_even_without_a_schema() {
    struct Stamp;
    impl Admission for Stamp {
        fn admit(
            &self,
            mut payload: Value,
            _: Option<&Schema>,
            _: &Protected,
        ) -> recourse::correction::Admitted {
            let from = payload["n"].clone();
            payload["n"] = json!(2);
            recourse::correction::Admitted {
                payload,
                changes: vec![CoercionChange {
                    pointer: "/n".into(),
                    from,
                    to: Some(json!(2)),
                    rule: recourse::record::CoercionRule::NumericString,
                }],
            }
        }
    }
    let sent = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&sent);
    let transport =
        recourse::InProcessTransport::new(move |request: recourse::transport::Request| {
            seen.lock().unwrap().push(request.payload.clone());
            async move {
                Ok(recourse::transport::RawResponse {
                    status: 200,
                    headers: vec![("content-type".into(), "application/json".into())],
                    body: br#"{"success": true, "data": {}}"#.to_vec(),
                    read: None,
                })
            }
        });
    let executor = recourse::Executor::builder(transport)
        .with_admission(std::sync::Arc::new(Stamp))
        .build();
    let call = recourse::Call::builder("tool", json!({"n": "1"}))
        .build()
        .unwrap();
    let report = executor.execute(call).await;
    assert!(
        matches!(report.outcome, recourse::Outcome::Succeeded { .. }),
        "{report:?}"
    );
    assert_eq!(*sent.lock().unwrap(), [json!({"n": 2})]);
}
