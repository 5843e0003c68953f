//! Every operator's truth table — missing fields and values of the wrong
//! kind included — and the property that evaluation is total.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

/// Whether `POINTER OP VALUE` holds in `doc` (a literal value; no read before).
fn holds(text: &str, doc: &Value) -> bool {
    found(text, doc, None) == Found::Holds
}

fn found(text: &str, doc: &Value, before: Option<&Value>) -> Found {
    let e = Expectation::parse(text).unwrap_or_else(|err| panic!("{err}"));
    check(&e, e.value.as_ref(), doc, before)
}

/// `(expectation, holds)` rows against one document.
fn table(doc: &Value, rows: &[(&str, bool)]) {
    for (text, want) in rows {
        assert_eq!(holds(text, doc), *want, "{text} in {doc}");
    }
}

fn doc() -> Value {
    json!({
        "status": "cancelled", "n": 2, "big": 9_007_199_254_740_993_u64, "ratio": 0.5,
        "gone": null, "path": "/workspace/temp", "tags": ["a", "b", 1],
        "meta": {"k": 1}, "text": "1",
        "orders": [{"symbol": "NVDA", "amount": 120, "side": {"kind": "buy"}}, {"symbol": "AAPL"}, 7],
        "by_id": {"o-1": {"symbol": "NVDA"}, "o-2": {"symbol": "TSLA"}}
    })
}

#[test]
fn equality() {
    table(
        &doc(),
        &[
            (r#"/status == "cancelled""#, true),
            (r#"/status == "pending""#, false),
            ("/n == 2.0", true),
            ("/n == 2", true),
            ("/ratio == 0.5", true),
            (r#"/text == 1"#, false),
            ("/tags == [\"a\", \"b\", 1.0]", true),
            ("/meta == {\"k\": 1.0}", true),
            ("/gone == null", true),
            (r#"/nowhere == "x""#, false),
            (r#"/status != "pending""#, true),
            (r#"/status != "cancelled""#, false),
            (r#"/gone != "x""#, true),
            (r#"/nowhere != "x""#, false),
            ("/n != 2.0", false),
        ],
    );
    let err = found(r#"/status == "pending""#, &doc(), None);
    assert_eq!(
        err,
        Found::NotHeld(r#"/status is "cancelled", expected == "pending""#.to_owned())
    );
    assert_eq!(
        found(r#"/nowhere != "x""#, &doc(), None),
        Found::NotHeld(r#"/nowhere missing, expected != "x""#.to_owned()),
        "a missing field fails != too"
    );
}

#[test]
fn existence() {
    table(
        &doc(),
        &[
            ("/status exists", true),
            ("/gone exists", false),
            ("/nowhere exists", false),
            ("/status !exists", false),
            ("/gone !exists", true),
            ("/nowhere !exists", true),
            ("$ exists", true),
        ],
    );
    assert!(holds("$ !exists", &Value::Null));
}

#[test]
fn containment() {
    table(
        &doc(),
        &[
            (r#"/path contains "work""#, true),
            (r#"/path contains "home""#, false),
            (r#"/tags contains "a""#, true),
            ("/tags contains 1.0", true),
            (r#"/tags contains "c""#, false),
            (r#"/meta contains "k""#, true),
            (r#"/meta contains "j""#, false),
            ("/meta contains 1", false),
            ("/n contains 2", false),
            (r#"/text contains 1"#, false),
            (r#"/nowhere contains "a""#, false),
            (r#"/gone contains "a""#, false),
            (r#"/orders contains 7"#, true),
            (r#"/orders contains {"symbol": "AAPL"}"#, true),
            (r#"/path !contains "home""#, true),
            (r#"/path !contains "work""#, false),
            (r#"/tags !contains "c""#, true),
            (r#"/tags !contains "a""#, false),
            (r#"/meta !contains "j""#, true),
            (r#"/meta !contains "k""#, false),
            ("/meta !contains 1", false),
            ("/n !contains 3", false),
            (r#"/nowhere !contains "a""#, false),
            (r#"/gone !contains "a""#, false),
        ],
    );
    let listing = json!(["notes.txt", "temp"]);
    assert!(holds(r#"$ contains "notes.txt""#, &listing));
    assert!(holds(r#"$ !contains "draft.txt""#, &listing));
}

#[test]
fn prefixes_and_suffixes() {
    table(
        &doc(),
        &[
            (r#"/path starts_with "/workspace""#, true),
            (r#"/path starts_with "/temp""#, false),
            (r#"/path ends_with "/temp""#, true),
            (r#"/path ends_with "/workspace""#, false),
            (r#"/path ends_with """#, true),
            (r#"/n starts_with "2""#, false),
            (r#"/tags starts_with "a""#, false),
            (r#"/nowhere ends_with "x""#, false),
            (r#"/gone ends_with "x""#, false),
        ],
    );
}

#[test]
fn numbers() {
    table(
        &doc(),
        &[
            ("/n < 3", true),
            ("/n < 2", false),
            ("/n <= 2", true),
            ("/n <= 1.5", false),
            ("/n > 1.5", true),
            ("/n > 2", false),
            ("/n >= 2.0", true),
            ("/n >= 3", false),
            ("/ratio < 1", true),
            ("/big > 9007199254740992", true),
            ("/big >= 9007199254740994", false),
            ("/text > 0", false),
            ("/tags > 0", false),
            ("/nowhere < 1", false),
            ("/gone >= 0", false),
        ],
    );
}

#[test]
fn membership() {
    table(
        &doc(),
        &[
            (r#"/status in ["resolved", "cancelled"]"#, true),
            (r#"/status in ["resolved", "closed"]"#, false),
            ("/n in [1, 2.0]", true),
            ("/n in []", false),
            (r#"/nowhere in ["x"]"#, false),
            ("/gone in [null]", true),
        ],
    );
    // A template that filled to something other than an array.
    let e = Expectation::parse("/status in {{payload.allowed}}").unwrap();
    assert_ne!(
        check(&e, Some(&json!("cancelled")), &doc(), None),
        Found::Holds
    );
}

#[test]
fn some_element() {
    table(
        &doc(),
        &[
            (r#"/orders any {"/symbol": "NVDA", "/amount": 120}"#, true),
            (r#"/orders any {"/symbol": "NVDA", "/amount": 120.0}"#, true),
            (r#"/orders any {"/symbol": "NVDA", "/amount": 100}"#, false),
            (r#"/orders any {"/side/kind": "buy"}"#, true),
            (r#"/orders any {"/symbol": "MSFT"}"#, false),
            (r#"/orders any {"/missing": null}"#, false),
            (r#"/orders any {"": 7}"#, true),
            (r#"/by_id any {"/symbol": "TSLA"}"#, true),
            (r#"/by_id any {"/symbol": "MSFT"}"#, false),
            (r#"/status any {"/symbol": "NVDA"}"#, false),
            (r#"/n any {"/symbol": "NVDA"}"#, false),
            (r#"/nowhere any {"/symbol": "NVDA"}"#, false),
            (r#"/tags any {"/symbol": "NVDA"}"#, false),
        ],
    );
    let e = Expectation::parse("/orders any {{payload.order}}").unwrap();
    for not_fields in [json!("NVDA"), json!({}), json!([1])] {
        assert_ne!(check(&e, Some(&not_fields), &doc(), None), Found::Holds);
    }
}

#[test]
fn change_since_the_read_before() {
    let grew = |text: &str, before: Value, after: Value| found(text, &after, Some(&before));
    let list = |n: usize| json!({"orders": vec![json!({"id": 1}); n], "balance": 10.1});
    assert_eq!(grew("/orders grew_by 1", list(2), list(3)), Found::Holds);
    assert_eq!(grew("/orders grew_by -1", list(3), list(2)), Found::Holds);
    assert!(matches!(
        grew("/orders grew_by 1", list(2), list(2)),
        Found::NotHeld(_)
    ));
    assert!(matches!(
        grew("/orders grew_by 1", list(2), list(4)),
        Found::NotHeld(_)
    ));
    assert_eq!(
        grew("/orders grew_by 1", list(2), json!({"orders": 3})),
        Found::NotHeld("/orders was 2 and is 3, expected grew_by 1".to_owned()),
        "a list is not compared with a number"
    );
    assert!(matches!(
        grew("/orders grew_by 1", list(2), json!({})),
        Found::NotHeld(_)
    ));
    assert_eq!(
        grew("/n grew_by 5", json!({"n": 10}), json!({"n": 15})),
        Found::Holds
    );
    assert_eq!(
        grew("/balance grew_by 5", list(0), json!({"balance": 15.1})),
        Found::Holds,
        "a fractional count grows by an integer within rounding"
    );
    assert_eq!(
        grew("$ grew_by 1", json!({"a": 1}), json!({"a": 1, "b": 2})),
        Found::Holds
    );
    assert_eq!(
        grew("$ grew_by 2", json!(["x"]), json!(["x", "y", "z"])),
        Found::Holds
    );
    // Nothing to count from: the change cannot be measured.
    for before in [json!({}), json!({"orders": "3"}), json!({"orders": null})] {
        assert!(
            matches!(
                grew("/orders grew_by 1", before.clone(), list(1)),
                Found::NoBaseline(_)
            ),
            "{before}"
        );
    }
    assert!(matches!(
        found("/orders grew_by 1", &list(1), None),
        Found::NoBaseline(_)
    ));
    let e = Expectation::parse("/orders grew_by {{payload.n}}").unwrap();
    assert!(matches!(
        check(&e, Some(&json!("1")), &list(1), Some(&list(0))),
        Found::NotHeld(_)
    ));
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        "[a-z/~0-9]{0,6}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z/0-9]{0,3}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn any_pointer() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        prop::collection::vec("[a-z0-9~]{0,3}", 1..4)
            .prop_map(|parts| format!("/{}", parts.join("/"))),
    ]
}

proptest! {
    /// Evaluation is total: every operator, on any document, with any
    /// value and any read before, answers — and a negation never holds
    /// together with what it negates.
    #[test]
    fn evaluation_never_panics_or_errs(
        doc in any_json(),
        before in prop::option::of(any_json()),
        value in prop::option::of(any_json()),
        pointer in any_pointer(),
        op in prop::sample::select(ExpectOp::ALL.to_vec()),
    ) {
        let e = Expectation { pointer: pointer.clone(), op, value: value.clone() };
        let found = check(&e, value.as_ref(), &doc, before.as_ref());
        prop_assert!(op == ExpectOp::GrewBy || !matches!(found, Found::NoBaseline(_)));
        let with = |op| {
            let e = Expectation { pointer: pointer.clone(), op, value: value.clone() };
            check(&e, value.as_ref(), &doc, before.as_ref()) == Found::Holds
        };
        prop_assert!(!(with(ExpectOp::Eq) && with(ExpectOp::Ne)));
        prop_assert!(!(with(ExpectOp::Contains) && with(ExpectOp::NotContains)));
        prop_assert!(with(ExpectOp::Exists) != with(ExpectOp::Absent));
        prop_assert!(!(with(ExpectOp::Lt) && with(ExpectOp::Ge)));
        prop_assert!(!(with(ExpectOp::Gt) && with(ExpectOp::Le)));
    }

    /// Parsing is total: any text is an expectation or a named refusal.
    #[test]
    fn parsing_never_panics(text in "\\PC{0,40}", op in prop::sample::select(ExpectOp::ALL.to_vec())) {
        let _ = Expectation::parse(&text);
        let _ = Expectation::parse(&format!("/a {} {text}", op.as_str()));
        let _ = Expectation::parse(&format!("$ {} {text}", op.as_str()));
    }
}
