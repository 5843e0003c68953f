//! The L2 coercion matrix (SPEC §4): what converts, what stays, what is recorded.

use recourse::{Admission, Protected, SchemaCoercion};
use serde_json::{Value, json};

fn coerce(schema: Value, payload: Value) -> (Value, Vec<String>) {
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
        changes,
        [
            r#"/discount: "0.1" → 0.1"#,
            r#"/order/express: "false" → false"#,
            r#"/order/lines/0/qty: "2" → 2"#,
            r#"/order/lines/0/sku: 12345 → "12345""#,
            r#"/tags/0: 1 → "1""#,
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
    let admitted = SchemaCoercion.admit(payload, Some(&schema), &protected);
    assert_eq!(
        admitted.payload,
        json!({"amount": "100", "memo": {"n": "1"}, "qty": 3})
    );
    assert_eq!(admitted.changes, [r#"/qty: "3" → 3"#]);
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
