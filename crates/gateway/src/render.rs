//! The gateway's rendering of what a call at the door came to
//! ([`DoorAnswer`]) as an HTTP answer: a record (`200`, `202` while it
//! awaits approval, with `Location`), or a refusal's envelope with its
//! status and `Retry-After`. The gateway decides none of it: the door does.

use axum::Json;
use axum::http::header::{CONTENT_TYPE, LOCATION, RETRY_AFTER};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use recourse::CallReport;
use recourse_door::{DoorAnswer, Refused};
use recourse_tool::ToolFailure;
use recourse_tool::protocol::ToolError;
use serde_json::Value;

/// `answer` as the gateway answers it.
pub(crate) fn door_answer(answer: DoorAnswer) -> Response {
    match answer {
        DoorAnswer::Ran(report) => record(&CallAnswer {
            record: &report,
            replayed: false,
        }),
        DoorAnswer::Replayed { record, .. } => replayed(*record),
        DoorAnswer::Awaiting { record, replayed } => awaiting(*record, replayed),
        DoorAnswer::Refused(refused) => refusal(refused),
    }
}

/// A refusal: its envelope, its refusal's status, and `Retry-After` when
/// sending again may help after a wait.
pub(crate) fn refusal(refused: Refused) -> Response {
    let status = refused.refusal().status();
    let wait = refused.retry_after();
    let mut response = ToolFailure::from(refused.into_error())
        .with_status(status)
        .into_response();
    if let Some(wait) = wait {
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from(wait.as_secs().max(1)));
    }
    response
}

/// `error` as its envelope, with its category's status.
pub(crate) fn fail(error: ToolError) -> Response {
    ToolFailure::from(error).into_response()
}

/// 503 `JOURNAL_UNAVAILABLE` with `Retry-After`: nothing was done, and the
/// same request may be sent again once the journal answers.
pub(crate) fn journal_unavailable(why: &str) -> Response {
    refusal(Refused::journal_away(why))
}

/// A call's record as `POST /v1/calls` answers it: the record, and whether
/// it is a replay.
#[derive(serde::Serialize, schemars::JsonSchema)]
#[schemars(rename = "CallAnswer")]
pub(crate) struct CallAnswer<'a> {
    /// The call's record.
    #[serde(flatten)]
    pub(crate) record: &'a CallReport,
    /// `true` when this is the first call's record, answered to a retry with
    /// the same idempotency key: nothing was dispatched for this request.
    pub(crate) replayed: bool,
}

/// A record as a JSON response: the record's own bytes
/// ([`CallReport::write_json`], serde_json's bytes written faster),
/// `replayed` last, in one buffer sized for a typical record (about 1 KB)
/// rather than grown from a small one.
pub(crate) fn record(answer: &CallAnswer<'_>) -> Response {
    let mut body = Vec::with_capacity(2048);
    match answer.record.write_json(&mut body) {
        Ok(()) => {
            // The record is an object: its closing brace makes way for `replayed`.
            body.pop();
            body.extend_from_slice(if answer.replayed {
                br#","replayed":true}"#
            } else {
                br#","replayed":false}"#
            });
            // Built as it goes out: a `(headers, Vec<u8>)` answer would
            // first insert `application/octet-stream`, then overwrite it.
            let mut response = Response::new(axum::body::Body::from(body));
            response
                .headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            response
        }
        // A record is strings, numbers and maps with string keys: this cannot
        // happen, and if it did the caller must not read it as an outcome.
        Err(e) => {
            tracing::error!(error = %e, "a call's record could not be written");
            refusal(Refused::aborted(Some(&answer.record.call_id)))
        }
    }
}

/// A key's record answered again: `200`, `replayed: true`.
pub(crate) fn replayed(mut record: Value) -> Response {
    record["replayed"] = Value::Bool(true);
    Json(record).into_response()
}

/// `202 Accepted` with the record of a call awaiting approval, and where
/// to follow it (`Location: /v1/calls/{call_id}`).
pub(crate) fn awaiting(mut record: Value, replayed: bool) -> Response {
    record["replayed"] = Value::Bool(replayed);
    let location = record["call_id"]
        .as_str()
        .and_then(|id| HeaderValue::from_str(&format!("/v1/calls/{id}")).ok());
    let mut response = (StatusCode::ACCEPTED, Json(record)).into_response();
    if let Some(location) = location {
        response.headers_mut().insert(LOCATION, location);
    }
    response
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use serde_json::json;

    #[test]
    fn in_progress_is_a_retryable_409_with_retry_after() {
        let r = refusal(Refused::in_progress("c-1", Duration::from_secs(30)));
        assert_eq!(r.status(), StatusCode::CONFLICT);
        assert_eq!(r.headers()[RETRY_AFTER], "10");
    }

    #[test]
    fn a_waiting_call_is_202_with_where_to_follow_it() {
        let r = awaiting(
            json!({"call_id": "c-9", "outcome": "awaiting_approval"}),
            true,
        );
        assert_eq!(r.status(), StatusCode::ACCEPTED);
        assert_eq!(r.headers()[LOCATION], "/v1/calls/c-9");
    }

    #[tokio::test]
    async fn the_answer_is_the_records_serde_bytes_with_replayed_last() {
        let report = CallReport {
            call_id: "c-\"1\"".into(),
            outcome: recourse::Outcome::Succeeded {
                data: json!({"price": 468.285, "note": "a\nb"}).into(),
            },
            attempts: Vec::new(),
            http_calls: 1,
            llm_calls: 0,
            tokens: recourse::record::TokenUsage::default(),
            llm_time: Duration::ZERO,
            idempotency: recourse::idempotency::Idempotency {
                idempotent: true,
                from: recourse::idempotency::Evidence::Manifest,
            },
            idempotency_key: None,
            operation_id: None,
            verification: None,
            elapsed: Duration::from_millis(2),
            settlement: None,
            answer: None,
            ended_at: None,
        };
        for replayed in [false, true] {
            let answer = CallAnswer {
                record: &report,
                replayed,
            };
            let expected = serde_json::to_vec(&answer).unwrap();
            let response = record(&answer);
            assert_eq!(response.status(), StatusCode::OK);
            assert_eq!(
                response
                    .headers()
                    .get_all(CONTENT_TYPE)
                    .iter()
                    .collect::<Vec<_>>(),
                ["application/json"]
            );
            let body = axum::body::to_bytes(response.into_body(), usize::MAX)
                .await
                .unwrap();
            assert_eq!(
                String::from_utf8_lossy(&body),
                String::from_utf8_lossy(&expected)
            );
        }
    }
}
