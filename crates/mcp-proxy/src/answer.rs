//! What the client is told: a call's record as a `CallToolResult`.
//!
//! A success is the tool's own answer, untouched but for one `_meta` key,
//! [`CALL_META_KEY`] (`{call_id, outcome, attempts}`), so a client or model
//! sees what it would have seen without the proxy. A call that declared a
//! read-back adds, success or not, `verification` (what it established, or
//! why no read ran after the write) and `reads` (each read made:
//! `{phase, result, detail?}`). Anything else is an
//! `isError` result whose one text block is the record's model message —
//! what happened, what recourse already did, what to do now, the tool's own
//! words fenced as such — with the structured failure MCP clients read
//! (`_meta["io.modelcontextprotocol/toolFailure"]`) and the record's
//! summary under [`CALL_META_KEY`].
//!
//! # The failure's class and retryability
//!
//! `class` follows the kind of problem that stopped the call: one that
//! passes with time (transient, a spent budget) or a write in doubt is
//! `reliability`; wrong input or setup is `capability`; credentials,
//! access and business rules are `governance`. `retryable` says whether
//! sending the same call again may succeed, and is true only where the
//! record shows it: the tool was down or limited and did not refuse
//! retries, or nothing was sent because the journal was away. A write whose
//! outcome is unknown is never retryable: the model is told not to repeat it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use recourse::correction::Schema;
use recourse::record::OutcomeKind;
use recourse::{Action, CallReport, StopKind};
use recourse_door::{DoorAnswer, Refused};
use recourse_protocol::mcp::{FailureClass, TOOL_FAILURE_META_KEY};
use serde_json::{Map, Value, json};

/// The `_meta` key of the record's summary on every result of the proxy.
pub const CALL_META_KEY: &str = "recourse/call";

/// A call that ran: `raw` is the tool's latest answer, used when the call
/// succeeded on it; `output` the tool's output schema, if it declares one.
pub(crate) fn ran(
    report: &CallReport,
    raw: Option<Map<String, Value>>,
    output: Option<&Schema>,
    now: SystemTime,
) -> Value {
    let answered = matches!(report.outcome.kind(), OutcomeKind::Succeeded)
        && report
            .attempts
            .last()
            .is_some_and(|a| a.action == Action::Succeed);
    // A success answered by the tool is its own answer plus a summary read
    // off the report: the record is not serialized for the few fields shown.
    if answered && let Some(raw) = raw {
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
        return with_meta(raw, [(CALL_META_KEY, Value::Object(call))]);
    }
    let disposition = report.disposition();
    let record = report.to_json();
    let shown = Shown {
        class: disposition.map(|d| d.class),
        retryable: disposition.is_some_and(|d| d.retryable),
        replayed: false,
        output,
    };
    of_record(&record, None, &shown, now)
}

/// How a record is shown besides what it holds.
struct Shown<'a> {
    /// The failure's class, when the proxy holds the report it ran
    /// ([`Disposition`](recourse::record::Disposition)); a replay's is read
    /// off the record's `stop_kind`.
    class: Option<FailureClass>,
    /// Whether sending the same call again may succeed.
    retryable: bool,
    /// Whether the record is a replay's: nothing was sent for this request.
    replayed: bool,
    /// The tool's output schema, if it declares one.
    output: Option<&'a Schema>,
}

/// The record of a call that ran before under the same key: nothing was
/// sent for this request. Sending it again is answered the same way, so a
/// replayed failure is never retryable.
pub(crate) fn replayed(record: &Value, now: SystemTime) -> Value {
    let shown = Shown {
        class: None,
        retryable: false,
        replayed: true,
        output: None,
    };
    of_record(record, None, &shown, now)
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
pub(crate) fn awaiting(record: &Value, replayed: bool, now: SystemTime) -> Value {
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
        class: FailureClass::Governance,
        code: "approval_required",
        retryable: false,
        wait: None,
        call_id,
        message: message.trim_start(),
    };
    failed(&failure, call, now)
}

fn of_record(
    record: &Value,
    raw: Option<Map<String, Value>>,
    shown: &Shown<'_>,
    now: SystemTime,
) -> Value {
    let outcome = record["outcome"]
        .as_str()
        .and_then(|o| o.parse::<OutcomeKind>().ok())
        .unwrap_or(OutcomeKind::Unknown);
    let mut call = Map::new();
    call.insert("call_id".to_owned(), record["call_id"].clone());
    call.insert("outcome".to_owned(), Value::from(outcome.as_str()));
    if shown.replayed {
        call.insert("replayed".to_owned(), Value::Bool(true));
    }
    if outcome == OutcomeKind::Succeeded {
        let attempts = record["attempts"].as_array().map_or(0, Vec::len);
        call.insert("attempts".to_owned(), Value::from(attempts));
        read_back(&mut call, record);
        let result = match raw {
            Some(raw) => raw,
            None => rebuilt(record, shown),
        };
        return with_meta(result, [(CALL_META_KEY, Value::Object(call))]);
    }
    let stop_kind = record["stop_kind"]
        .as_str()
        .and_then(|k| k.parse::<StopKind>().ok());
    let next = &record["next"];
    call.insert("stop_kind".to_owned(), record["stop_kind"].clone());
    call.insert("step".to_owned(), next["step"].clone());
    read_back(&mut call, record);
    let message = next["model_message"].as_str().unwrap_or_default();
    let wait = next["retry_after_ms"].as_u64().map(Duration::from_millis);
    let class = shown.class.unwrap_or_else(|| {
        // A record says what it stopped for; one this version cannot read
        // is a failure whose outcome nobody can vouch for.
        stop_kind.map_or(FailureClass::Reliability, StopKind::failure_class)
    });
    let failure = Failure {
        class,
        code: record["reason"].as_str().unwrap_or("outcome_unknown"),
        retryable: shown.retryable,
        wait,
        call_id: record["call_id"].as_str().unwrap_or_default(),
        message,
    };
    failed(&failure, call, now)
}

/// The read-back a call declared, when it declared one: what it
/// established (`verification`, as the record has it) and each read it made
/// (`reads`: `{phase, result, detail?}`, the record's `verify` events).
fn read_back(call: &mut Map<String, Value>, record: &Value) {
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

/// A success whose own answer the proxy does not hold: a replay (the record
/// kept the tool's `structuredContent`, or its whole result when it had
/// none), or a write whose answer was lost and whose effect was read back.
fn rebuilt(record: &Value, shown: &Shown<'_>) -> Map<String, Value> {
    let data = &record["data"];
    let text = |text: String| json!({"type": "text", "text": text});
    if shown.replayed {
        if let Value::Object(result) = data
            && result.get("content").is_some_and(Value::is_array)
        {
            return result.clone();
        }
        let mut result = Map::new();
        result.insert("content".to_owned(), json!([text(data.to_string())]));
        result.insert("structuredContent".to_owned(), data.clone());
        result.insert("isError".to_owned(), Value::Bool(false));
        return result;
    }
    // The read's document is not the write's answer: the model gets the
    // record's message, and the document as text — and as the structured
    // result only when it is one the tool's output schema allows.
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
    if shown.output.is_some_and(|schema| schema.is_valid(data)) {
        result.insert("structuredContent".to_owned(), data.clone());
    }
    result.insert("isError".to_owned(), Value::Bool(false));
    result
}

/// A failure as the client sees it.
#[derive(Debug)]
pub(crate) struct Failure<'a> {
    /// What kind of problem stopped the call (SEP #3313's class).
    pub(crate) class: FailureClass,
    /// The stop reason's code, or a refusal's.
    pub(crate) code: &'a str,
    /// Whether the same call may succeed when sent again.
    pub(crate) retryable: bool,
    /// How long to wait before sending it again, when known.
    pub(crate) wait: Option<Duration>,
    /// The call the failure belongs to.
    pub(crate) call_id: &'a str,
    /// What the model reads.
    pub(crate) message: &'a str,
}

/// `failure` as an `isError` result, with `call` as [`CALL_META_KEY`].
pub(crate) fn failed(failure: &Failure<'_>, call: Map<String, Value>, now: SystemTime) -> Value {
    let mut meta = Map::new();
    meta.insert("class".to_owned(), Value::from(failure.class.as_str()));
    meta.insert("code".to_owned(), Value::from(failure.code));
    meta.insert("retryable".to_owned(), Value::Bool(failure.retryable));
    if let Some(not_before) = failure.wait.and_then(|wait| epoch_ms(now, wait)) {
        meta.insert("retryNotBefore".to_owned(), Value::from(not_before));
    }
    meta.insert("correlationId".to_owned(), Value::from(failure.call_id));
    meta.insert("agentGuidance".to_owned(), Value::from(failure.message));
    let mut result = Map::new();
    result.insert(
        "content".to_owned(),
        json!([{"type": "text", "text": failure.message}]),
    );
    result.insert("isError".to_owned(), Value::Bool(true));
    with_meta(
        result,
        [
            (TOOL_FAILURE_META_KEY, Value::Object(meta)),
            (CALL_META_KEY, Value::Object(call)),
        ],
    )
}

/// What a call at the door came to, as the client is told: `raw` is the
/// tool's latest answer (a success answered by the tool is shown as it is),
/// `output` the tool's output schema, `call_id` the call the proxy made.
pub(crate) fn door_answer(
    answer: DoorAnswer,
    call_id: &str,
    raw: Option<Map<String, Value>>,
    output: Option<&Schema>,
    now: SystemTime,
) -> Value {
    match answer {
        DoorAnswer::Ran(report) => ran(&report, raw, output, now),
        DoorAnswer::Replayed { record, .. } => replayed(&record, now),
        DoorAnswer::Awaiting { record, replayed } => awaiting(&record, replayed, now),
        DoorAnswer::Refused(refused) => refusal(&refused, call_id, now),
    }
}

/// A door's refusal (made before anything was sent, or, for an abort,
/// while it ran): an `isError` result whose `toolFailure` carries the
/// refusal's class, code and retryability, summarized under
/// [`CALL_META_KEY`] as that refusal.
pub(crate) fn refusal(refused: &Refused, call_id: &str, now: SystemTime) -> Value {
    let call_id = refused.call_id().unwrap_or(call_id);
    let error = refused.error();
    let message = sentence(&error.message);
    let failure = Failure {
        class: refused.refusal().class(),
        code: refused.refusal().code(),
        retryable: error.retryable,
        wait: refused.retry_after(),
        call_id,
        message: &message,
    };
    let mut call = Map::new();
    call.insert("call_id".to_owned(), Value::from(call_id));
    call.insert("refused".to_owned(), Value::from(failure.code));
    failed(&failure, call, now)
}

/// `words` as a sentence: capitalized, ending in a full stop.
fn sentence(words: &str) -> String {
    let mut chars = words.trim().chars();
    let mut out: String = chars
        .next()
        .map(|c| c.to_uppercase().collect())
        .unwrap_or_default();
    out.push_str(chars.as_str());
    if !out.ends_with(['.', '!', '?']) {
        out.push('.');
    }
    out
}

/// `result` with `entries` added to its `_meta` (made an object if it was not one).
fn with_meta<const N: usize>(mut result: Map<String, Value>, entries: [(&str, Value); N]) -> Value {
    let meta = result
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    if let Value::Object(meta) = meta {
        for (key, value) in entries {
            meta.insert(key.to_owned(), value);
        }
    }
    Value::Object(result)
}

/// `now + wait` in milliseconds since the Unix epoch, if representable.
fn epoch_ms(now: SystemTime, wait: Duration) -> Option<u64> {
    let at = now.checked_add(wait)?.duration_since(UNIX_EPOCH).ok()?;
    u64::try_from(at.as_millis()).ok()
}

#[cfg(test)]
mod tests {
    use recourse::idempotency::Idempotency;
    use recourse::{Outcome, StopReason};
    use recourse_protocol::{ErrorCategory, ToolError};

    use super::*;

    const NOW: Duration = Duration::from_secs(1_800_000_000);

    fn now() -> SystemTime {
        UNIX_EPOCH + NOW
    }

    fn stopped(outcome: Outcome) -> Value {
        let report = CallReport::new("c-1", outcome, Idempotency::decide(None, None, None));
        ran(&report, None, None, now())
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
            json!({"call_id": "c-1", "outcome": "unknown", "stop_kind": "unknown_outcome", "step": "do_not_repeat"})
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
        let mut attempt = recourse::record::AttemptRecord {
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
            events: Vec::new(),
        };
        attempt.events = vec![
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
        ];
        report.attempts.push(attempt);
        let result = ran(&report, None, None, now());
        let call = &result["_meta"][CALL_META_KEY];
        assert_eq!(call["verification"], "cannot_tell");
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
        let raw = json!({"content": [], "isError": false});
        let result = ran(&report, raw.as_object().cloned(), None, now());
        let call = &result["_meta"][CALL_META_KEY];
        assert_eq!(call["verification"], "unneeded");
        assert_eq!(call["reads"].as_array().map(Vec::len), Some(1));
        // A call that declared none shows neither.
        report.verification = None;
        let result = ran(&report, raw.as_object().cloned(), None, now());
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
        };
        let record = recourse::record::AwaitingRecord::new("c-7", &approval).to_json();
        let result = awaiting(&record, false, now());
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
        let again = awaiting(&record, true, now());
        assert_eq!(again["_meta"][CALL_META_KEY]["replayed"], true);
    }

    #[test]
    fn a_refusals_wait_is_written_in_epoch_milliseconds() {
        let refused = Refused::in_progress("c-2", Duration::from_secs(30));
        let result = refusal(&refused, "c-new", now());
        let meta = &result["_meta"][TOOL_FAILURE_META_KEY];
        let expected = u64::try_from((NOW + Duration::from_secs(10)).as_millis()).unwrap();
        assert_eq!(meta["retryNotBefore"], expected);
        assert_eq!(meta["class"], "reliability");
        assert_eq!(meta["retryable"], true);
        assert_eq!(meta["code"], "CALL_IN_PROGRESS");
        // The running call is the one named, not the new request's id.
        assert_eq!(
            result["_meta"][CALL_META_KEY],
            json!({"call_id": "c-2", "refused": "CALL_IN_PROGRESS"})
        );
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(
            text.starts_with("The call with this idempotency key") && text.ends_with('.'),
            "{text}"
        );
    }

    #[test]
    fn a_refusal_has_the_class_and_retryability_the_gateway_gives_it() {
        for refused in [
            Refused::key_reused("c"),
            Refused::journal_away("down"),
            Refused::journal_required("idempotency_key", "keyed"),
            Refused::aborted(None),
        ] {
            let result = refusal(&refused, "c-1", now());
            let meta = &result["_meta"][TOOL_FAILURE_META_KEY];
            assert_eq!(meta["class"], refused.refusal().class().as_str());
            assert_eq!(meta["retryable"], refused.error().retryable);
            assert_eq!(meta["code"], refused.refusal().code());
        }
    }

    #[test]
    fn a_success_is_the_upstreams_own_result_with_its_meta_kept() {
        let record = json!({"call_id": "c-3", "outcome": "succeeded", "data": {"t": 1},
                            "attempts": [{}, {}], "verification": null});
        let raw = json!({"content": [{"type": "text", "text": "{\"t\":1}"}],
                         "structuredContent": {"t": 1}, "isError": false, "_meta": {"server/x": 7}});
        let shown = Shown {
            class: None,
            retryable: false,
            replayed: false,
            output: None,
        };
        let result = of_record(&record, raw.as_object().cloned(), &shown, now());
        let mut expected = raw;
        expected["_meta"][CALL_META_KEY] =
            json!({"call_id": "c-3", "outcome": "succeeded", "attempts": 2});
        assert_eq!(result, expected);
    }

    #[test]
    fn a_replayed_success_is_rebuilt_from_the_record() {
        let structured = json!({"call_id": "c-4", "outcome": "succeeded", "data": {"id": "e-1"}, "attempts": [{}]});
        let result = replayed(&structured, now());
        assert_eq!(result["structuredContent"], json!({"id": "e-1"}));
        assert_eq!(result["content"][0]["text"], "{\"id\":\"e-1\"}");
        assert_eq!(result["_meta"][CALL_META_KEY]["replayed"], true);
        let whole = json!({"call_id": "c-4", "outcome": "succeeded", "attempts": [{}],
                           "data": {"content": [{"type": "text", "text": "done"}], "isError": false}});
        let result = replayed(&whole, now());
        assert_eq!(result["content"], json!([{"type": "text", "text": "done"}]));
        assert!(result.get("structuredContent").is_none());
    }

    #[test]
    fn a_replayed_failure_is_not_retryable_and_a_broken_record_still_answers() {
        let record = json!({"call_id": "c-5", "outcome": "failed", "reason": "retries_exhausted",
                            "stop_kind": "transient", "next": {"step": "give_up", "model_message": "down"}});
        let result = replayed(&record, now());
        assert_eq!(failure(&result)["retryable"], false);
        assert_eq!(failure(&result)["class"], "reliability");
        for broken in [json!(null), json!({"outcome": 3}), json!([])] {
            let result = replayed(&broken, now());
            assert_eq!(result["isError"], true, "{result}");
        }
    }

    #[test]
    fn a_write_read_back_is_structured_only_as_its_output_schema_allows() {
        let record = json!({"call_id": "c-6", "outcome": "succeeded", "verification": "verified",
                            "data": {"id": "o-1", "status": "cancelled"}, "attempts": [{}],
                            "next": {"step": "use_result", "model_message": "confirmed"}});
        let order = Schema::compile(&json!({"type": "object", "required": ["id"]})).unwrap();
        let other = Schema::compile(&json!({"type": "object", "required": ["receipt"]})).unwrap();
        for (output, structured) in [(None, false), (Some(&order), true), (Some(&other), false)] {
            let shown = Shown {
                class: None,
                retryable: false,
                replayed: false,
                output,
            };
            let result = of_record(&record, None, &shown, now());
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
}
