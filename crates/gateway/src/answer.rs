//! The answers the call routes share: refusals, a key's call still running
//! or taken by another request, the journal away, and a record answered
//! again — `202` while its call awaits approval.

use axum::Json;
use axum::http::header::{LOCATION, RETRY_AFTER};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use recourse::journal::CallState;
use recourse_tool::ToolFailure;
use recourse_tool::protocol::ToolError;
use serde_json::Value;

use crate::refusal::Refusal;

/// `error` as its envelope, with its category's status.
pub(crate) fn fail(error: ToolError) -> Response {
    ToolFailure::from(error).into_response()
}

/// `error`, answered with `refusal`'s status (where its category's would differ).
pub(crate) fn refuse(refusal: Refusal, error: ToolError) -> Response {
    ToolFailure::from(error)
        .with_status(refusal.status())
        .into_response()
}

/// 409 `CALL_IN_PROGRESS`: the key's call is running; ask again in a third of a lease.
pub(crate) fn in_progress(call_id: &str, lease: std::time::Duration) -> Response {
    let error = Refusal::CallInProgress
        .error("the call with this idempotency key is still running; ask again later")
        .detail("call_id", call_id);
    let mut response = refuse(Refusal::CallInProgress, error);
    let secs = recourse::timing::in_progress_retry_after(lease).as_secs();
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(secs));
    response
}

/// 503 `JOURNAL_UNAVAILABLE` with `Retry-After`: nothing was sent, and the
/// same request may be sent again once the journal answers.
pub(crate) fn journal_unavailable(message: impl Into<String>) -> Response {
    let mut response = fail(Refusal::JournalUnavailable.error(message));
    response.headers_mut().insert(
        RETRY_AFTER,
        HeaderValue::from(recourse::timing::JOURNAL_RETRY_AFTER.as_secs()),
    );
    response
}

/// 422 `IDEMPOTENCY_KEY_REUSED`: the key is call `call_id`'s, another request's.
pub(crate) fn key_reused(call_id: String) -> Response {
    refuse(
        Refusal::IdempotencyKeyReused,
        Refusal::IdempotencyKeyReused
            .error("this idempotency key belongs to a different request; use a new key for a new request")
            .detail("field", "idempotency_key")
            .detail("call_id", call_id),
    )
}

/// A key's record answered again: `200`, or `202` while the call still
/// awaits approval.
pub(crate) fn replayed(state: CallState, mut record: Value) -> Response {
    if state == CallState::AwaitingApproval {
        let call_id = record["call_id"].as_str().unwrap_or_default().to_owned();
        return awaiting(&call_id, record, true);
    }
    record["replayed"] = Value::Bool(true);
    Json(record).into_response()
}

/// `202 Accepted` with the record of a call awaiting approval, and where
/// to follow it (`Location: /v1/calls/{call_id}`).
pub(crate) fn awaiting(call_id: &str, mut record: Value, replayed: bool) -> Response {
    record["replayed"] = Value::Bool(replayed);
    let mut response = (StatusCode::ACCEPTED, Json(record)).into_response();
    if let Ok(location) = HeaderValue::from_str(&format!("/v1/calls/{call_id}")) {
        response.headers_mut().insert(LOCATION, location);
    }
    response
}
