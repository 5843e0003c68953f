//! A call that did not succeed, as the client is told: an `isError` result
//! that keeps what the tool said and adds recourse's word beside it.
//!
//! # The tool's words, then ours
//!
//! When the tool answered with its own `isError` result, the client gets that
//! result's content blocks unchanged and in order and its own `_meta` — its
//! own failure metadata (`_meta["io.modelcontextprotocol/toolFailure"]`)
//! included — and recourse adds one text block (the record's message for
//! the model: what happened, what recourse did, what to do now) and its
//! summary under [`CALL_META_KEY`]. Only where the tool gave no failure
//! metadata does recourse add its own. A failure the tool did not answer (a
//! transport failure, a JSON-RPC error, a refusal of recourse's own) is
//! recourse's message alone.
//!
//! The failure's `structuredContent` is the one part left out (the record
//! keeps it): clients such as pydantic-ai hand a model the structured
//! content in place of the content blocks when a result has one, and the
//! model would then never read recourse's word — "do not repeat it" among
//! them. The tool's own words are in its content blocks.
//!
//! `class` follows the kind of problem that stopped the call; `retryable`
//! says whether sending the same call again may succeed — both from core's
//! one table ([`Disposition`](recourse::record::Disposition)). Everything is
//! read off the record, so a keyed replay is the first answer again.

use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use recourse::StopKind;
use recourse::StopReason;
use recourse::record::Disposition;
use recourse_door::Refused;
use recourse_protocol::mcp::{FailureClass, TOOL_FAILURE_META_KEY};
use recourse_protocol::parse_rfc3339;
use serde_json::{Map, Value, json};

use crate::meta::{CALL_META_KEY, read_back};

/// A failure as recourse describes it, for its failure metadata.
#[derive(Debug)]
pub(crate) struct Failure<'a> {
    /// What kind of problem stopped the call (SEP #3313's class).
    pub(crate) class: FailureClass,
    /// The stop reason's code, or a refusal's.
    pub(crate) code: &'a str,
    /// Whether the same call may succeed when sent again.
    pub(crate) retryable: bool,
    /// From when it may be sent again, when known.
    pub(crate) not_before: Option<SystemTime>,
    /// The call the failure belongs to.
    pub(crate) call_id: &'a str,
    /// What the model reads.
    pub(crate) message: &'a str,
}

/// The failure of a call whose `record` says it stopped: the tool's own
/// `isError` answer kept whole when the record holds one, recourse's
/// message beside it, and under [`CALL_META_KEY`] `call` (the record's
/// summary) with recourse's own judgement — why it stopped, the kind of
/// problem, its class, whether sending it again may help, the step — which
/// travels there whatever failure metadata the tool gave.
pub(crate) fn of_record(record: &Value, mut call: Map<String, Value>) -> Value {
    let reason = record["reason"].as_str().unwrap_or("outcome_unknown");
    let stop_kind = record["stop_kind"]
        .as_str()
        .and_then(|k| k.parse::<StopKind>().ok());
    // A record says what it stopped for; one this version cannot read is a
    // failure whose outcome nobody can vouch for, never worth a resend.
    let class = stop_kind.map_or(FailureClass::Reliability, StopKind::failure_class);
    let retryable = StopReason::from_str(reason)
        .is_ok_and(|reason| Disposition::of_stop(&reason, None, false).retryable);
    let next = &record["next"];
    let not_before = match (
        record["ended_at"].as_str().and_then(parse_rfc3339),
        next["retry_after_ms"].as_u64(),
    ) {
        (Some(ended), Some(ms)) => ended.checked_add(Duration::from_millis(ms)),
        _ => None,
    };
    let failure = Failure {
        class,
        code: reason,
        retryable,
        not_before,
        call_id: record["call_id"].as_str().unwrap_or_default(),
        message: next["model_message"].as_str().unwrap_or_default(),
    };
    let replayed = call.remove("replayed");
    call.insert("reason".to_owned(), Value::from(reason));
    call.insert("stop_kind".to_owned(), record["stop_kind"].clone());
    call.insert("class".to_owned(), Value::from(class.as_str()));
    call.insert("retryable".to_owned(), Value::Bool(retryable));
    call.insert("step".to_owned(), next["step"].clone());
    read_back(&mut call, record);
    if let Some(at) = not_before.and_then(epoch_ms) {
        call.insert("retry_not_before".to_owned(), Value::from(at));
    }
    if let Some(replayed) = replayed {
        call.insert("replayed".to_owned(), replayed);
    }
    failed(&failure, tool_failure(record), call)
}

/// The tool's own `isError` answer the record keeps, when it does.
fn tool_failure(record: &Value) -> Option<&Map<String, Value>> {
    let answer = record.get("answer")?.as_object()?;
    let is_error = answer.get("isError") == Some(&Value::Bool(true));
    (is_error && answer.get("content").is_some_and(Value::is_array)).then_some(answer)
}

/// `failure` as an `isError` result: `said` (the tool's own failure, kept
/// whole) when there is one, recourse's message beside it, and `call` as
/// [`CALL_META_KEY`]; recourse's failure metadata unless the tool gave its own.
pub(crate) fn failed(
    failure: &Failure<'_>,
    said: Option<&Map<String, Value>>,
    call: Map<String, Value>,
) -> Value {
    let ours = json!({"type": "text", "text": failure.message});
    let mut result = match said {
        Some(said) => said.clone(),
        None => Map::new(),
    };
    // Shown in place of the content by some clients: it would hide ours.
    result.remove("structuredContent");
    match result.get_mut("content") {
        Some(Value::Array(content)) => content.push(ours),
        _ => {
            result.insert("content".to_owned(), Value::Array(vec![ours]));
        }
    }
    result.insert("isError".to_owned(), Value::Bool(true));
    let meta = result
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    if let Value::Object(meta) = meta {
        if !meta.contains_key(TOOL_FAILURE_META_KEY) {
            meta.insert(TOOL_FAILURE_META_KEY.to_owned(), metadata(failure));
        }
        meta.insert(CALL_META_KEY.to_owned(), Value::Object(call));
    }
    Value::Object(result)
}

/// recourse's failure metadata for `failure`.
fn metadata(failure: &Failure<'_>) -> Value {
    let mut meta = Map::new();
    meta.insert("class".to_owned(), Value::from(failure.class.as_str()));
    meta.insert("code".to_owned(), Value::from(failure.code));
    meta.insert("retryable".to_owned(), Value::Bool(failure.retryable));
    if let Some(at) = failure.not_before.and_then(epoch_ms) {
        meta.insert("retryNotBefore".to_owned(), Value::from(at));
    }
    meta.insert("correlationId".to_owned(), Value::from(failure.call_id));
    meta.insert("agentGuidance".to_owned(), Value::from(failure.message));
    Value::Object(meta)
}

/// A door's refusal (made before anything was sent, or, for an abort,
/// while it ran): an `isError` result whose failure metadata carries the
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
        not_before: refused.retry_after().and_then(|wait| now.checked_add(wait)),
        call_id,
        message: &message,
    };
    let mut call = Map::new();
    call.insert("call_id".to_owned(), Value::from(call_id));
    call.insert("refused".to_owned(), Value::from(failure.code));
    failed(&failure, None, call)
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

/// `at` in milliseconds since the Unix epoch, if representable.
fn epoch_ms(at: SystemTime) -> Option<u64> {
    u64::try_from(at.duration_since(UNIX_EPOCH).ok()?.as_millis()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Duration = Duration::from_secs(1_800_000_000);

    fn now() -> SystemTime {
        UNIX_EPOCH + NOW
    }

    fn meta(result: &Value) -> &Value {
        &result["_meta"][TOOL_FAILURE_META_KEY]
    }

    fn summary() -> Map<String, Value> {
        let mut call = Map::new();
        call.insert("call_id".to_owned(), Value::from("c-1"));
        call
    }

    #[test]
    fn the_tools_own_failure_is_kept_whole_and_ours_added_beside_it() {
        let record = json!({
            "call_id": "c-1", "outcome": "failed", "reason": "cannot_fix", "stop_kind": "input",
            "next": {"step": "fix_arguments", "model_message": "The call failed. Now: fix it."},
            "answer": {"content": [{"type": "text", "text": "Could not find exact match for edit:\nzzz-line"},
                                   {"type": "text", "text": "second block"}],
                       "isError": true, "structuredContent": {"line": 3},
                       "_meta": {"server/trace": "t-9"}}
        });
        let result = of_record(&record, summary());
        assert_eq!(
            result["content"],
            json!([{"type": "text", "text": "Could not find exact match for edit:\nzzz-line"},
                   {"type": "text", "text": "second block"},
                   {"type": "text", "text": "The call failed. Now: fix it."}])
        );
        // Left out: some clients show it in place of the content blocks.
        assert!(result.get("structuredContent").is_none(), "{result}");
        assert_eq!(result["isError"], true);
        assert_eq!(result["_meta"]["server/trace"], "t-9");
        assert_eq!(meta(&result)["class"], "capability");
        assert_eq!(meta(&result)["retryable"], false);
        assert_eq!(result["_meta"][CALL_META_KEY]["call_id"], "c-1");
    }

    #[test]
    fn the_tools_own_failure_metadata_reaches_the_client_unchanged() {
        let theirs = json!({"class": "reliability", "code": "LOCKED", "retryable": true,
                            "retryNotBefore": 1_800_000_001_000u64, "vendor": {"x": 1}});
        let record = json!({
            "call_id": "c-2", "outcome": "failed", "reason": "retries_exhausted", "stop_kind": "transient",
            "next": {"step": "give_up", "model_message": "It did not work."},
            "answer": {"content": [{"type": "text", "text": "locked"}], "isError": true,
                       "_meta": {TOOL_FAILURE_META_KEY: theirs.clone()}}
        });
        let result = of_record(&record, summary());
        assert_eq!(meta(&result), &theirs);
    }

    #[test]
    fn a_failure_the_tool_did_not_answer_is_ours_alone_with_its_wait() {
        let record = json!({
            "call_id": "c-3", "outcome": "failed", "reason": "rate_limited", "stop_kind": "transient",
            "ended_at": "2027-01-15T08:00:00.000Z",
            "next": {"step": "give_up", "model_message": "Try in 60 s.", "retry_after_ms": 60_000}
        });
        let result = of_record(&record, summary());
        assert_eq!(
            result["content"],
            json!([{"type": "text", "text": "Try in 60 s."}])
        );
        let ended = parse_rfc3339("2027-01-15T08:00:00.000Z").unwrap();
        let expected = epoch_ms(ended + Duration::from_secs(60)).unwrap();
        assert_eq!(meta(&result)["retryNotBefore"], expected);
        assert_eq!(meta(&result)["retryable"], true);
        assert_eq!(meta(&result)["code"], "rate_limited");
        assert_eq!(meta(&result)["agentGuidance"], "Try in 60 s.");
    }

    #[test]
    fn a_broken_record_still_answers_a_failure_never_to_repeat() {
        for broken in [json!(null), json!({"outcome": 3}), json!([])] {
            let result = of_record(&broken, summary());
            assert_eq!(result["isError"], true, "{result}");
            assert_eq!(meta(&result)["retryable"], false, "{result}");
            assert_eq!(meta(&result)["class"], "reliability", "{result}");
        }
    }

    #[test]
    fn a_refusals_wait_is_written_in_epoch_milliseconds() {
        let refused = Refused::in_progress("c-2", Duration::from_secs(30));
        let result = refusal(&refused, "c-new", now());
        let meta = meta(&result);
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
            let meta = meta(&result);
            assert_eq!(meta["class"], refused.refusal().class().as_str());
            assert_eq!(meta["retryable"], refused.error().retryable);
            assert_eq!(meta["code"], refused.refusal().code());
        }
    }
}
