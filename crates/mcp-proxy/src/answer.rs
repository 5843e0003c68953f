//! What the client is told: what a call at the door came to
//! ([`DoorAnswer`]) as a `CallToolResult`.
//!
//! A success is the tool's own result, untouched but for one `_meta` key,
//! [`CALL_META_KEY`] (`{call_id, outcome, attempts}`), so a client or model
//! sees what it would have seen without the proxy: the result the upstream's
//! session gave, handed on as it is, never written to JSON and read back. A
//! call whose tool declares a read-back adds, success or not,
//! `verification` and `reads` ([`read_back`](crate::meta::read_back)).
//! Anything else is an `isError` result ([`failure`](crate::failure)): the
//! tool's own failure kept whole, recourse's word beside it.
//!
//! # The same answer twice
//!
//! A keyed resend is answered from the journal's record, and gets the first
//! answer again — content, `structuredContent`, `isError`, the tool's own
//! `_meta` — with `replayed: true` in [`CALL_META_KEY`]. So every answer but
//! a success the tool gave just now is made from the record alone (which
//! keeps the tool's whole answer), the first one too: what a resend reads
//! is what the first request read.

use std::time::SystemTime;

use recourse::correction::Schema;
use recourse::record::OutcomeKind;
use recourse::{Action, CallReport, StopKind};
use recourse_door::DoorAnswer;
use rmcp::model::{CallToolResult, MetaObject, ResultType};
use serde_json::{Map, Value, json};

use crate::failure::{self, Failure};
use crate::meta::{CALL_META_KEY, read_back};

/// What a call at the door came to, as the client is told: `raw` is the
/// tool's latest result (a success the tool gave is shown as it is),
/// `output` the tool's output schema, `call_id` the call the proxy made.
pub(crate) fn door_answer(
    answer: DoorAnswer,
    call_id: &str,
    raw: Option<CallToolResult>,
    output: Option<&Schema>,
    now: SystemTime,
) -> CallToolResult {
    match answer {
        DoorAnswer::Ran(report) => ran(&report, raw, output),
        DoorAnswer::Replayed { record, .. } => typed(of_record(&record, true, output)),
        DoorAnswer::Awaiting { record, replayed } => typed(awaiting(&record, replayed)),
        DoorAnswer::Refused(refused) => typed(failure::refusal(&refused, call_id, now)),
    }
}

/// How a call ended, from its record (not a replay): a rejection decided
/// just now.
pub(crate) fn ended(record: &Value, output: Option<&Schema>) -> CallToolResult {
    typed(of_record(record, false, output))
}

/// A call that ran: the tool's own result when the call succeeded on it,
/// otherwise what its record says.
fn ran(
    report: &CallReport,
    raw: Option<CallToolResult>,
    output: Option<&Schema>,
) -> CallToolResult {
    let answered = matches!(report.outcome.kind(), OutcomeKind::Succeeded)
        && report
            .attempts
            .last()
            .is_some_and(|a| a.action == Action::Succeed);
    if answered && let Some(mut result) = raw {
        // The summary read off the report: the record is not serialized for
        // the few fields shown.
        let mut call = Map::new();
        call.insert("call_id".to_owned(), Value::from(report.call_id.as_str()));
        call.insert(
            "outcome".to_owned(),
            Value::from(OutcomeKind::Succeeded.as_str()),
        );
        call.insert("attempts".to_owned(), Value::from(report.attempts.len()));
        if report.verification.is_some() {
            read_back(&mut call, &report.to_json());
        }
        let meta = result.meta.get_or_insert_with(MetaObject::new);
        meta.0.insert(CALL_META_KEY.to_owned(), Value::Object(call));
        // Protocol 2026-07-28 requires the field; rmcp takes it out again
        // for a client of an older version.
        result.result_type.get_or_insert(ResultType::COMPLETE);
        return result;
    }
    typed(of_record(&report.to_json(), false, output))
}

/// The result a `record` gives (`replayed` when it answers a resend).
fn of_record(record: &Value, replayed: bool, output: Option<&Schema>) -> Value {
    let outcome = record["outcome"]
        .as_str()
        .and_then(|o| o.parse::<OutcomeKind>().ok())
        .unwrap_or(OutcomeKind::Unknown);
    let mut call = Map::new();
    call.insert("call_id".to_owned(), record["call_id"].clone());
    call.insert("outcome".to_owned(), Value::from(outcome.as_str()));
    if outcome == OutcomeKind::Succeeded {
        let attempts = record["attempts"].as_array().map_or(0, Vec::len);
        call.insert("attempts".to_owned(), Value::from(attempts));
        read_back(&mut call, record);
        if replayed {
            call.insert("replayed".to_owned(), Value::Bool(true));
        }
        let mut result = succeeded(record, output);
        let meta = result
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if !meta.is_object() {
            *meta = Value::Object(Map::new());
        }
        if let Value::Object(meta) = meta {
            meta.insert(CALL_META_KEY.to_owned(), Value::Object(call));
        }
        return Value::Object(result);
    }
    if replayed {
        call.insert("replayed".to_owned(), Value::Bool(true));
    }
    failure::of_record(record, call)
}

/// The result of a success the record holds: the tool's whole answer it
/// kept, or its data when that is a whole result; otherwise — a write
/// whose answer was lost and whose effect was read back, or looked up —
/// the record's message and what was found.
fn succeeded(record: &Value, output: Option<&Schema>) -> Map<String, Value> {
    if let Some(Value::Object(answer)) = record.get("answer") {
        return answer.clone();
    }
    let data = &record["data"];
    if let Value::Object(result) = data
        && result.get("content").is_some_and(Value::is_array)
    {
        return result.clone();
    }
    // What was found is not the write's answer: the model gets the record's
    // message, and the document as text — and as the structured result
    // only when it is one the tool's output schema allows.
    let text = |text: String| json!({"type": "text", "text": text});
    let message = record["next"]["model_message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mut content = vec![text(message)];
    if !data.is_null() {
        content.push(text(data.to_string()));
    }
    let mut result = Map::new();
    result.insert("content".to_owned(), Value::Array(content));
    if output.is_some_and(|schema| schema.is_valid(data)) {
        result.insert("structuredContent".to_owned(), data.clone());
    }
    result.insert("isError".to_owned(), Value::Bool(false));
    result
}

/// What the model is told, after the record's own message, of a call that
/// waits for a person.
const CALL_AGAIN: &str = "Once a person has decided, call this tool again with exactly the same \
    arguments (and the same idempotency key, if you gave one) to get its result: calling again \
    never sends it a second time, and never asks for a second approval.";

/// A call that waits for a person's approval (`record` is its
/// `awaiting_approval` record; `replayed` when it was asked for before):
/// an `isError` result of class `governance`, code `approval_required`.
///
/// It is not `retryable`: sending it again changes nothing until a person
/// decides, so a client that resends failures by itself must not; the
/// model is told to call again once someone has, which is then safe (the
/// key names the same call) and how it gets the result.
fn awaiting(record: &Value, replayed: bool) -> Value {
    let call_id = record["call_id"].as_str().unwrap_or_default();
    let mut call = Map::new();
    call.insert("call_id".to_owned(), Value::from(call_id));
    call.insert("outcome".to_owned(), Value::from("awaiting_approval"));
    call.insert(
        "stop_kind".to_owned(),
        Value::from(StopKind::Policy.as_str()),
    );
    call.insert("step".to_owned(), record["next"]["step"].clone());
    call.insert("approval_id".to_owned(), record["approval"]["id"].clone());
    if replayed {
        call.insert("replayed".to_owned(), Value::Bool(true));
    }
    let told = record["next"]["model_message"].as_str().unwrap_or_default();
    let message = format!("{told} {CALL_AGAIN}");
    let failure = Failure {
        class: recourse_protocol::mcp::FailureClass::Governance,
        code: "approval_required",
        retryable: false,
        not_before: None,
        call_id,
        message: message.trim_start(),
    };
    failure::failed(&failure, None, call)
}

/// `result` as the typed result the client is sent, marked `resultType:
/// "complete"` (protocol 2026-07-28 requires it; rmcp takes it out for an
/// older client). A result that does not read as one — the proxy made it,
/// so never in practice — is an error saying so.
fn typed(mut result: Value) -> CallToolResult {
    if let Value::Object(fields) = &mut result {
        fields
            .entry("resultType")
            .or_insert_with(|| Value::from("complete"));
    }
    serde_json::from_value(result).unwrap_or_else(|e| {
        CallToolResult::error(vec![rmcp::model::ContentBlock::text(format!(
            "the proxy could not build its answer: {e}"
        ))])
    })
}

#[cfg(test)]
mod tests {
    use recourse::idempotency::Idempotency;
    use recourse::{Outcome, StopReason};
    use recourse_protocol::mcp::TOOL_FAILURE_META_KEY;
    use recourse_protocol::{ErrorCategory, ToolError};

    use super::*;

    fn value(result: &CallToolResult) -> Value {
        serde_json::to_value(result).unwrap()
    }

    fn stopped(outcome: Outcome) -> Value {
        let report = CallReport::new("c-1", outcome, Idempotency::decide(None, None, None));
        value(&ran(&report, None, None))
    }

    fn failure(result: &Value) -> &Value {
        &result["_meta"][TOOL_FAILURE_META_KEY]
    }

    #[test]
    fn an_unknown_outcome_is_a_reliability_failure_never_to_repeat() {
        let result = stopped(Outcome::Unknown {
            error: Some(ToolError::unknown_outcome("LOST", "the connection dropped")),
            reason: StopReason::OutcomeUnknown,
        });
        assert_eq!(result["isError"], true);
        let meta = failure(&result);
        assert_eq!(meta["class"], "reliability");
        assert_eq!(meta["code"], "outcome_unknown");
        assert_eq!(meta["retryable"], false);
        assert_eq!(meta["correlationId"], "c-1");
        assert!(meta.get("retryNotBefore").is_none());
        let text = result["content"][0]["text"].as_str().unwrap();
        assert_eq!(meta["agentGuidance"], text);
        assert_eq!(result["content"].as_array().unwrap().len(), 1);
        assert_eq!(
            result["_meta"][CALL_META_KEY],
            json!({"call_id": "c-1", "outcome": "unknown", "reason": "outcome_unknown",
                   "stop_kind": "unknown_outcome", "class": "reliability", "retryable": false,
                   "step": "do_not_repeat"})
        );
    }

    #[test]
    fn a_read_back_is_shown_whether_or_not_it_settled_the_call() {
        use recourse::policy::{Verification, VerifyResult};
        use recourse::record::{Event, VerifyPhase};
        let mut report = CallReport::new(
            "c-9",
            Outcome::Unknown {
                error: Some(ToolError::unknown_outcome("LOST", "the connection dropped")),
                reason: StopReason::OutcomeUnknown,
            },
            Idempotency::decide(Some(false), None, None),
        );
        report.verification = Some(Verification::CannotTell);
        let read = |phase, result, detail: Option<&str>| Event::Verify {
            phase,
            result,
            detail: detail.map(str::to_owned),
        };
        report.attempts.push(recourse::record::AttemptRecord {
            n: 1,
            payload: json!({}),
            status: None,
            transport_error: None,
            category: None,
            code: None,
            retry_permission: recourse_protocol::RetryPermission::Unspecified,
            action: Action::stop(StopReason::OutcomeUnknown),
            timeout_ms: 1000,
            source: recourse::record::PayloadSource::Caller,
            facts: Default::default(),
            events: vec![
                read(
                    VerifyPhase::Before,
                    VerifyResult::NotHeld,
                    Some("/n is 1, expected == 2"),
                ),
                read(
                    VerifyPhase::After,
                    VerifyResult::CannotTell,
                    Some("the read failed: timed out"),
                ),
            ],
        });
        let result = value(&ran(&report, None, None));
        let call = &result["_meta"][CALL_META_KEY];
        assert_eq!(call["verification"], "cannot_tell", "{call}");
        assert_eq!(
            call["reads"],
            json!([
                {"phase": "before", "result": "not_held", "detail": "/n is 1, expected == 2"},
                {"phase": "after", "result": "cannot_tell", "detail": "the read failed: timed out"}
            ])
        );
        // A success answered by the tool shows it too.
        report.outcome = Outcome::Succeeded {
            data: json!({"n": 1}).into(),
        };
        report.attempts[0].action = Action::Succeed;
        report.attempts[0].events.truncate(1);
        report.verification = Some(Verification::Unneeded);
        let raw: CallToolResult =
            serde_json::from_value(json!({"content": [], "isError": false})).unwrap();
        let result = value(&ran(&report, Some(raw.clone()), None));
        let call = &result["_meta"][CALL_META_KEY];
        assert_eq!(call["verification"], "unneeded");
        assert_eq!(call["reads"].as_array().map(Vec::len), Some(1));
        // A call that declared none shows neither.
        report.verification = None;
        let result = value(&ran(&report, Some(raw), None));
        assert!(result["_meta"][CALL_META_KEY].get("reads").is_none());
    }

    #[test]
    fn each_kind_of_stop_has_its_class() {
        let error = |category| Some(ToolError::new(category, "E", "no"));
        for (outcome, class, retryable) in [
            (
                Outcome::Failed {
                    error: error(ErrorCategory::PermissionDenied),
                    reason: StopReason::PermissionDenied,
                },
                "governance",
                false,
            ),
            (
                Outcome::Failed {
                    error: error(ErrorCategory::PolicyRejection),
                    reason: StopReason::PolicyRejected,
                },
                "governance",
                false,
            ),
            (
                Outcome::Failed {
                    error: error(ErrorCategory::InputError),
                    reason: StopReason::NoCorrector,
                },
                "capability",
                false,
            ),
            (
                Outcome::Failed {
                    error: error(ErrorCategory::ServiceError),
                    reason: StopReason::RetriesExhausted,
                },
                "reliability",
                true,
            ),
            (
                Outcome::Failed {
                    error: error(ErrorCategory::ServiceError),
                    reason: StopReason::RetryRefused,
                },
                "reliability",
                false,
            ),
            // The door answers a call the journal refused before sending
            // as its refusal; one that stopped after sending is not retryable.
            (
                Outcome::Failed {
                    error: None,
                    reason: StopReason::JournalUnavailable,
                },
                "capability",
                false,
            ),
            // A write found not committed: trying again later is safe, as
            // the record's `next.step` (give up for now) says.
            (
                Outcome::Failed {
                    error: None,
                    reason: StopReason::NotCommitted,
                },
                "reliability",
                true,
            ),
        ] {
            let result = stopped(outcome);
            assert_eq!(failure(&result)["class"], class, "{result}");
            assert_eq!(failure(&result)["retryable"], retryable, "{result}");
        }
    }

    #[test]
    fn a_call_awaiting_approval_is_a_governance_failure_naming_its_approval() {
        let approval = recourse::approval::Approval {
            id: "a-1".into(),
            call_id: "c-7".into(),
            state: recourse::approval::ApprovalState::Pending,
            request_sha256: "ab".repeat(32),
            expires_at: "2026-12-04T10:00:00.000Z".into(),
            reason: "moves money".into(),
            decided_by: None,
            decided_at: None,
            note: None,
            self_approved: false,
        };
        let record = recourse::record::AwaitingRecord::new("c-7", &approval).to_json();
        let result = awaiting(&record, false);
        assert_eq!(result["isError"], true);
        let meta = failure(&result);
        assert_eq!(meta["class"], "governance");
        assert_eq!(meta["code"], "approval_required");
        assert_eq!(meta["retryable"], false);
        assert_eq!(meta["correlationId"], "c-7");
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(
            text.contains("moves money") && text.ends_with(CALL_AGAIN),
            "{text}"
        );
        assert_eq!(meta["agentGuidance"], text);
        assert_eq!(
            result["_meta"][CALL_META_KEY],
            json!({"call_id": "c-7", "outcome": "awaiting_approval", "stop_kind": "policy",
                   "step": "ask_user", "approval_id": "a-1"})
        );
        let again = awaiting(&record, true);
        assert_eq!(again["_meta"][CALL_META_KEY]["replayed"], true);
    }

    #[test]
    fn a_success_is_the_upstreams_own_result_with_its_meta_kept() {
        let raw = json!({"content": [{"type": "text", "text": "{\"t\":1}"}],
                         "structuredContent": {"t": 1}, "isError": false, "_meta": {"server/x": 7}});
        let mut report = CallReport::new(
            "c-3",
            Outcome::Succeeded {
                data: json!({"t": 1}).into(),
            },
            Idempotency::decide(None, None, None),
        );
        let mut attempt = recourse::record::AttemptRecord {
            n: 1,
            payload: json!({}),
            status: Some(200),
            transport_error: None,
            category: None,
            code: None,
            retry_permission: recourse_protocol::RetryPermission::Unspecified,
            action: Action::Succeed,
            timeout_ms: 1000,
            source: recourse::record::PayloadSource::Caller,
            facts: Default::default(),
            events: Vec::new(),
        };
        report.attempts.push(attempt.clone());
        attempt.n = 2;
        report.attempts.push(attempt);
        let result = value(&ran(
            &report,
            Some(serde_json::from_value(raw.clone()).unwrap()),
            None,
        ));
        let mut expected = raw;
        expected["_meta"][CALL_META_KEY] =
            json!({"call_id": "c-3", "outcome": "succeeded", "attempts": 2});
        expected["resultType"] = json!("complete");
        assert_eq!(result, expected);
    }

    /// A replay is the first answer again, `replayed: true` aside — for a
    /// success the tool answered (kept whole in the record), and for a
    /// failure the tool answered.
    #[test]
    fn a_replay_is_the_first_answer_again() {
        let whole = json!({"content": [{"type": "text", "text": "Successfully wrote to /r.txt"}],
                           "structuredContent": {"content": "Successfully wrote to /r.txt"},
                           "isError": false, "_meta": {"server/x": 7}});
        let record = json!({"call_id": "c-4", "outcome": "succeeded", "attempts": [{}],
                            "data": {"content": "Successfully wrote to /r.txt"}, "answer": whole});
        let replay = value(&typed(of_record(&record, true, None)));
        assert_eq!(replay["content"], whole["content"]);
        assert_eq!(replay["structuredContent"], whole["structuredContent"]);
        assert_eq!(replay["_meta"]["server/x"], 7);
        assert_eq!(replay["_meta"][CALL_META_KEY]["replayed"], true);

        let failed = json!({"call_id": "c-5", "outcome": "failed", "reason": "cannot_fix",
                            "stop_kind": "input", "ended_at": "2027-01-15T08:00:00.000Z",
                            "next": {"step": "fix_arguments", "model_message": "Fix it."},
                            "answer": {"content": [{"type": "text", "text": "no match\nzzz"}], "isError": true}});
        let mut once = value(&typed(of_record(&failed, false, None)));
        let mut again = value(&typed(of_record(&failed, true, None)));
        assert_eq!(again["_meta"][CALL_META_KEY]["replayed"], true);
        again["_meta"][CALL_META_KEY]
            .as_object_mut()
            .unwrap()
            .remove("replayed");
        once["_meta"][CALL_META_KEY]
            .as_object_mut()
            .unwrap()
            .remove("replayed");
        assert_eq!(once, again);
    }

    #[test]
    fn a_write_read_back_is_structured_only_as_its_output_schema_allows() {
        let record = json!({"call_id": "c-6", "outcome": "succeeded", "verification": "verified",
                            "data": {"id": "o-1", "status": "cancelled"}, "attempts": [{}],
                            "next": {"step": "use_result", "model_message": "confirmed"}});
        let order = Schema::compile(&json!({"type": "object", "required": ["id"]})).unwrap();
        let other = Schema::compile(&json!({"type": "object", "required": ["receipt"]})).unwrap();
        for (output, structured) in [(None, false), (Some(&order), true), (Some(&other), false)] {
            let result = value(&typed(of_record(&record, false, output)));
            assert_eq!(result["isError"], false);
            assert_eq!(result["content"][0]["text"], "confirmed");
            assert_eq!(result["content"][1]["text"], record["data"].to_string());
            assert_eq!(
                result.get("structuredContent").is_some(),
                structured,
                "{result}"
            );
            assert_eq!(result["_meta"][CALL_META_KEY]["verification"], "verified");
        }
    }

    #[test]
    fn a_result_that_cannot_be_built_is_an_error_saying_so() {
        let broken = typed(json!({"content": "not blocks"}));
        assert_eq!(broken.is_error, Some(true));
    }
}
