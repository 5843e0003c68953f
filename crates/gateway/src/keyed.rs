//! `POST /v1/calls`: one call, and — with an idempotency key — at most one
//! execution per key, whichever replica or retry asks.
//!
//! The semantics of Stripe's API and of the IETF `Idempotency-Key` draft: a
//! second request with the same key and the same request gets the first
//! call's record with `"replayed": true` and nothing is dispatched (an
//! `unknown` stays `unknown`, never re-run); the same key with another request
//! is refused (422 `IDEMPOTENCY_KEY_REUSED`); the same key while the first is
//! still running answers 409 `CALL_IN_PROGRESS` with `Retry-After`. "The same
//! request" is a SHA-256 of the request body without the key and without the
//! execution limits (`deadline_secs`, `max_*`), which may differ between
//! retries; only the digest is stored.

use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use recourse::keyed::Keyed;
use recourse_tool::parse_json;
use recourse_tool::protocol::ToolError;
use recourse_tool::protocol::numbers::unrepresentable_number;

use crate::answer::{fail, in_progress, journal_unavailable, key_reused, replayed};
use crate::ask;
use crate::callers::Caller;
use crate::finish::finishing;
use crate::gateway::Gateway;
use crate::refusal::Refusal;
use crate::request::{self, CallRequest};
use crate::resolve::resolve;

/// The header a client may send its key in, as the IETF draft names it.
const KEY_HEADER: &str = "idempotency-key";

/// Runs the request in `body` (one JSON value, checked); every answer,
/// refusals included, is a response.
///
/// The request's headers and body are let go before the call runs: they
/// share the connection's read buffer, which would otherwise be held (and a
/// second one allocated beside it) for as long as the call takes.
pub(crate) async fn call(
    g: &Gateway,
    caller: &Caller,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let read = read(g, &headers, &body);
    drop((headers, body));
    let (req, hash) = match read {
        Ok(read) => read,
        Err(refused) => return refused,
    };
    match ask::needed(g, caller, &req).await {
        Ok(Some(required)) => return ask::call(g, caller, req, hash, required).await,
        Ok(None) => {}
        Err(refused) => return refused,
    }
    let (executor, call) = match resolve(g, req).await {
        Ok(resolved) => resolved,
        Err(refused) => return refused.into_response(),
    };
    let call = call.caller(caller.name(), g.key_scope());
    let call = match request::build(call) {
        Ok(call) => call,
        Err(e) => return fail(e),
    };
    // A client that stops waiting (its timeout, a dropped connection) must
    // not cancel a call mid-write: it finishes in the gateway's tracker and is
    // journaled, and the client's retry with the same key gets its record.
    let metrics = std::sync::Arc::clone(&g.metrics);
    let running = finishing(&g.calls, async move {
        let keyed = executor.execute_keyed(call, &hash).await;
        if let Ok(Keyed::Ran(report)) = &keyed {
            metrics.observe(report);
        }
        keyed
    });
    let keyed = match running.await {
        Ok(Ok(keyed)) => keyed,
        Ok(Err(e)) => return journal_unavailable(format!("{e}; nothing was sent")),
        Err(_) => {
            return fail(Refusal::CallAborted.error(
                "the call stopped unexpectedly; its outcome is unknown: check before writing again",
            ));
        }
    };
    match keyed {
        // The journal failed before anything was sent: the request may be
        // sent again as it is once the journal is back.
        Keyed::Ran(report)
            if report.attempts.is_empty()
                && report.outcome.reason() == Some(&recourse::StopReason::JournalUnavailable) =>
        {
            journal_unavailable("the journal could not record the call; nothing was sent")
        }
        Keyed::Ran(report) => {
            // Serialized in the record's own field order, `replayed` last.
            answer(&Answer {
                record: &report,
                replayed: false,
            })
        }
        Keyed::Replayed { state, record } => replayed(state, *record),
        Keyed::InProgress { call_id } => in_progress(&call_id, g.executor.config().lease),
        Keyed::KeyReused { call_id } => key_reused(call_id),
    }
}

/// The request in `body`, its key taken from the header too, and — only for
/// a keyed request, the only kind looked up by its request — its hash.
fn read(g: &Gateway, headers: &HeaderMap, body: &[u8]) -> Result<(CallRequest, String), Response> {
    let mut req: CallRequest = parse_json(body).map_err(IntoResponse::into_response)?;
    if let Some(number) = unrepresentable_number(body) {
        let field = number
            .pointer
            .split('/')
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        return Err(fail(
            Refusal::NumberNotRepresentable
                .error(format!(
                    "the number {} at {} would not reach the tool as written (beyond a 64-bit \
                     integer, or more digits than a double holds); send it as a string",
                    number.literal, number.pointer
                ))
                .detail("field", field)
                .detail("pointer", number.pointer),
        ));
    }
    take_header_key(&mut req, headers).map_err(fail)?;
    if req.idempotency_key.is_some() && g.journal.is_none() {
        return Err(fail(
            Refusal::JournalRequired.error(
                "this gateway keeps no journal (--journal none), so it cannot answer a retry of a \
                 keyed request from its record; send the request without idempotency_key, or run \
                 the gateway with a journal",
            )
            .detail("field", "idempotency_key"),
        ));
    }
    // Keyed requests are looked up by their request; a request asking for
    // approval is bound to it.
    let hash = if req.idempotency_key.is_some() || req.approval.is_some() {
        request::hash(serde_json::from_slice(body).unwrap_or_default())
    } else {
        String::new()
    };
    Ok((req, hash))
}

/// A call's record as `POST /v1/calls` answers it: the record, and whether
/// it is a replay.
#[derive(serde::Serialize, schemars::JsonSchema)]
#[schemars(rename = "CallAnswer")]
pub(crate) struct Answer<'a> {
    /// The call's record.
    #[serde(flatten)]
    record: &'a recourse::CallReport,
    /// `true` when this is the first call's record, answered to a retry with
    /// the same idempotency key: nothing was dispatched for this request.
    replayed: bool,
}

/// A record as a JSON response: the record's own bytes
/// ([`CallReport::write_json`](recourse::CallReport::write_json), serde_json's
/// bytes written faster), `replayed` last, in one buffer sized for a typical
/// record (about 1 KB) rather than grown from a small one.
fn answer(answer: &Answer<'_>) -> Response {
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
        Err(e) => fail(Refusal::CallAborted.error(
            format!(
                "the call's record could not be written ({e}); its outcome is unknown: check before writing again"
            ),
        )),
    }
}

/// An `Idempotency-Key` header on the request counts as its `idempotency_key`.
fn take_header_key(req: &mut CallRequest, headers: &HeaderMap) -> Result<(), ToolError> {
    let Some(value) = headers.get(KEY_HEADER) else {
        return Ok(());
    };
    let invalid = |message: &str| {
        Refusal::InvalidCall
            .error(message)
            .detail("field", "idempotency_key")
    };
    let header = value
        .to_str()
        .map_err(|_| invalid("the Idempotency-Key header is not visible ASCII"))?;
    match &req.idempotency_key {
        Some(key) if key != header => Err(invalid(
            "the Idempotency-Key header disagrees with the body's idempotency_key",
        )),
        Some(_) => Ok(()),
        None => {
            req.idempotency_key = Some(header.to_owned());
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{NOT_HASHED, without};
    use axum::http::StatusCode;
    use axum::http::header::RETRY_AFTER;
    use recourse::keyed::request_hash;
    use serde_json::json;

    #[test]
    fn the_key_and_the_limits_do_not_change_the_request() {
        let a = json!({"url": "http://h/x", "payload": {"a": 1}, "idempotency_key": "k", "deadline_secs": 5});
        let b = json!({"payload": {"a": 1}, "url": "http://h/x", "max_retries": 1});
        assert_eq!(
            request_hash(&without(a.clone(), &NOT_HASHED)),
            request_hash(&without(b, &NOT_HASHED))
        );
        let c = json!({"url": "http://h/x", "payload": {"a": 2}});
        assert_ne!(
            request_hash(&without(a, &NOT_HASHED)),
            request_hash(&without(c, &NOT_HASHED))
        );
    }

    #[test]
    fn a_header_key_fills_in_or_must_agree() {
        let mut headers = HeaderMap::new();
        headers.insert(KEY_HEADER, HeaderValue::from_static("k-1"));
        let mut req: CallRequest =
            serde_json::from_value(json!({"url": "http://h/x", "payload": {}})).unwrap();
        take_header_key(&mut req, &headers).unwrap();
        assert_eq!(req.idempotency_key.as_deref(), Some("k-1"));
        req.idempotency_key = Some("k-2".into());
        assert!(take_header_key(&mut req, &headers).is_err());
    }

    /// A gateway of the defaults (no journal).
    async fn checked_gateway() -> Gateway {
        crate::config::GatewayConfig::new(recourse::ExecutorConfig::default())
            .build()
            .unwrap()
    }

    #[tokio::test]
    async fn a_call_lets_go_of_the_requests_read_buffer_while_it_runs() {
        // A tool that takes the connection and never answers: the call runs
        // until the test ends.
        let tool = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/api/hold", tool.local_addr().unwrap());
        // hyper hands a handler slices of the connection's read buffer; here,
        // of `buffer`.
        let request = json!({"url": url, "payload": {}}).to_string();
        let buffer = Bytes::from(format!("{request}r-1"));
        let body = buffer.slice(..request.len());
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-request-id",
            HeaderValue::from_maybe_shared(buffer.slice(request.len()..)).unwrap(),
        );
        let g = checked_gateway().await;
        let caller = Caller::default_caller();
        let running = call(&g, &caller, headers, body);
        tokio::pin!(running);
        let _held = tokio::select! {
            _ = &mut running => panic!("the call ended without an answer from the tool"),
            accepted = tool.accept() => accepted.unwrap(),
        };
        assert!(
            buffer.is_unique(),
            "the request's body or headers are held while the call runs"
        );
    }

    #[tokio::test]
    async fn the_answer_is_the_records_serde_bytes_with_replayed_last() {
        let report = recourse::CallReport {
            call_id: "c-\"1\"".into(),
            outcome: recourse::Outcome::Succeeded {
                data: json!({"price": 468.285, "note": "a\nb"}).into(),
            },
            attempts: Vec::new(),
            http_calls: 1,
            llm_calls: 0,
            tokens: recourse::record::TokenUsage::default(),
            llm_time: std::time::Duration::ZERO,
            idempotency: recourse::idempotency::Idempotency {
                idempotent: true,
                from: recourse::idempotency::Evidence::Manifest,
            },
            idempotency_key: None,
            operation_id: None,
            verification: None,
            elapsed: std::time::Duration::from_millis(2),
            settlement: None,
        };
        for replayed in [false, true] {
            let expected = serde_json::to_vec(&Answer {
                record: &report,
                replayed,
            })
            .unwrap();
            let response = answer(&Answer {
                record: &report,
                replayed,
            });
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

    #[test]
    fn in_progress_is_a_retryable_409_with_retry_after() {
        let r = in_progress("c-1", std::time::Duration::from_secs(30));
        assert_eq!(r.status(), StatusCode::CONFLICT);
        assert_eq!(r.headers()[RETRY_AFTER], "10");
    }
}
