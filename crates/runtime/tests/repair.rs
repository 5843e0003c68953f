//! L2.5 deterministic repair: enum near-misses, expected types, suggestions.

use recourse::correction::{Correction, CorrectionRequest, DeterministicRepair, Schema};
use recourse::protect::Protected;
use recourse_protocol::ToolError;
use serde_json::{Value, json};

fn repair_with(
    payload: Value,
    error: ToolError,
    schema: Option<Value>,
    protected: &[&str],
) -> Option<Value> {
    let protected = Protected::snapshot(protected, &payload);
    let compiled = schema.as_ref().map(|s| Schema::compile(s).unwrap());
    let target = recourse::Target::parse("tool").unwrap();
    let request = CorrectionRequest {
        target: &target,
        payload: &payload,
        error: &error,
        protected: &protected,
        schema: compiled.as_ref(),
        intent: None,
        attempt: 1,
    };
    match DeterministicRepair.propose(&request) {
        Correction::Corrected {
            payload, llm_calls, ..
        } => {
            assert_eq!(llm_calls, 0);
            Some(payload)
        }
        Correction::CannotFix { .. } => None,
    }
}

fn bad_input() -> ToolError {
    ToolError::input_error("BAD_INPUT", "invalid input")
}

fn unit_schema() -> Value {
    json!({"type": "object", "properties": {"unit": {"enum": ["celsius", "fahrenheit", "kelvin"]}, "city": {"type": "string"}}})
}

#[test]
fn schema_enum_near_miss_by_case() {
    let fixed = repair_with(
        json!({"unit": "CELSIUS"}),
        bad_input(),
        Some(unit_schema()),
        &[],
    );
    assert_eq!(fixed, Some(json!({"unit": "celsius"})));
}

#[test]
fn schema_enum_near_miss_by_one_edit() {
    let fixed = repair_with(
        json!({"unit": "farenheit"}),
        bad_input(),
        Some(unit_schema()),
        &[],
    );
    assert_eq!(fixed, Some(json!({"unit": "fahrenheit"})));
}

#[test]
fn ambiguous_near_miss_is_not_applied() {
    let schema = json!({"type": "object", "properties": {"size": {"enum": ["bat", "car"]}}});
    assert_eq!(
        repair_with(json!({"size": "cat"}), bad_input(), Some(schema), &[]),
        None
    );
    let far = repair_with(
        json!({"unit": "rankine"}),
        bad_input(),
        Some(unit_schema()),
        &[],
    );
    assert_eq!(far, None);
}

#[test]
fn allowed_values_from_the_tool_for_its_field() {
    let error = bad_input()
        .detail("field", "format")
        .detail("allowed_values", "pdf, docx, csv");
    let fixed = repair_with(
        json!({"format": "PDF", "source": "doc-7"}),
        error,
        None,
        &[],
    );
    assert_eq!(fixed, Some(json!({"format": "pdf", "source": "doc-7"})));
}

#[test]
fn expected_type_and_expected_list() {
    let error = bad_input()
        .detail("field", "qty")
        .detail("expected", "integer");
    assert_eq!(
        repair_with(json!({"qty": "3"}), error, None, &[]),
        Some(json!({"qty": 3}))
    );
    let error = bad_input()
        .detail("field", "side")
        .detail("expected", "buy|sell");
    assert_eq!(
        repair_with(json!({"side": "Sell"}), error, None, &[]),
        Some(json!({"side": "sell"}))
    );
}

#[test]
fn suggestion_only_on_its_named_field() {
    let error = ToolError::not_found("LOCATION_NOT_FOUND", "unknown")
        .detail("field", "location")
        .detail("suggestion", "Flower Mound, Texas, US");
    let fixed = repair_with(
        json!({"location": "Flower Mound, TX", "note": "Flower Mound, TX"}),
        error,
        None,
        &[],
    );
    assert_eq!(
        fixed,
        Some(json!({"location": "Flower Mound, Texas, US", "note": "Flower Mound, TX"}))
    );
}

#[test]
fn unnamed_suggestion_needs_exactly_one_mutable_string() {
    let error = || ToolError::not_found("NOT_FOUND", "unknown").detail("suggestion", "TSLA");
    assert_eq!(
        repair_with(json!({"symbol": "TESLA", "qty": 3}), error(), None, &[]),
        Some(json!({"symbol": "TSLA", "qty": 3}))
    );
    assert_eq!(
        repair_with(
            json!({"symbol": "TESLA", "venue": "NASDAQ"}),
            error(),
            None,
            &[]
        ),
        None
    );
    assert_eq!(
        repair_with(
            json!({"symbol": "TESLA", "venue": "NASDAQ"}),
            error(),
            None,
            &["/venue"]
        ),
        Some(json!({"symbol": "TSLA", "venue": "NASDAQ"})),
        "protected strings do not count"
    );
}

#[test]
fn advice_is_not_a_value() {
    let advice = "Please check the spelling of the location and try again with the full state name and the country, for example: City, State, Country. If the problem persists contact support at the address on our website, quoting the request id.";
    let error = ToolError::not_found("LOCATION_NOT_FOUND", "unknown")
        .detail("field", "location")
        .detail("suggestion", advice);
    assert_eq!(
        repair_with(json!({"location": "x"}), error, None, &[]),
        None
    );
}

#[test]
fn protected_fields_are_never_repaired() {
    let error = bad_input()
        .detail("field", "unit")
        .detail("suggestion", "celsius");
    assert_eq!(
        repair_with(
            json!({"unit": "CELSIUS"}),
            error,
            Some(unit_schema()),
            &["/unit"]
        ),
        None
    );
}

#[test]
fn nothing_to_go_on_is_cannot_fix() {
    assert_eq!(
        repair_with(
            json!({"city": "Oslo"}),
            bad_input(),
            Some(unit_schema()),
            &[]
        ),
        None
    );
}
