//! `POST /v1/calls`: one call, and — with an idempotency key — at most one
//! execution per key, whichever replica or retry asks.
//!
//! The semantics of Stripe's API and of the IETF `Idempotency-Key` draft: a
//! second request with the same key and the same request gets the first
//! call's record with `"replayed": true` and nothing is dispatched (an
//! `unknown` stays `unknown`, never re-run); the same key with another request
//! is refused (422 `IDEMPOTENCY_KEY_REUSED`); the same key while the first is
//! still running answers 409 `CALL_IN_PROGRESS` with `Retry-After`. What a
//! call comes to is the door's ([`recourse_door::Door`]); this module reads
//! the request and renders the answer. "The same request" is the door's
//! [`RequestDigest`] of the parsed body (the key and the execution limits
//! left out); only the digest is stored.

use axum::body::Bytes;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use recourse_door::{Refusal, RequestDigest};
use recourse_tool::parse_json;
use recourse_tool::protocol::ToolError;
use recourse_tool::protocol::numbers::unrepresentable_number;
use serde_json::Value;

use crate::ask;
use crate::gateway::Gateway;
use crate::render::{door_answer, fail, refusal};
use crate::request::{self, CallRequest};
use crate::resolve::resolve;
use recourse_door::Caller;

/// The header a client may send its key in, as the IETF draft names it.
const KEY_HEADER: &str = "idempotency-key";

/// Runs the request in `body` (one JSON value, checked); every answer,
/// refusals included, is a response.
///
/// The request's headers and body are let go before the call runs: they
/// share the connection's read buffer, which would otherwise be held (and a
/// second one allocated beside it) for as long as the call takes.
///
/// A client that stops waiting (its timeout, a dropped connection) drops
/// this future: the door finishes a call that may write in its tracker, so
/// the client's retry with the same key gets its record.
pub(crate) async fn call(
    g: &Gateway,
    caller: &Caller,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let read = read(g, &headers, &body);
    drop((headers, body));
    let (req, digest) = match read {
        Ok(read) => read,
        Err(refused) => return refused,
    };
    match ask::needed(g, caller, &req).await {
        // Boxed: holding a call for approval is a large future (the
        // journal's), and every request's would otherwise be sized for it.
        Ok(Some(required)) => {
            return Box::pin(ask::call(g, caller, req, digest, required)).await;
        }
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
    g.note_endpoint(caller, call.target().endpoint());
    // The client's leaving drops this future: a write is finished in the
    // door's tracker, a read stops.
    door_answer(
        g.door
            .run_until_dropped(executor, call, digest.as_ref())
            .await,
    )
}

/// The request in `body`, read once: its key taken from the header too,
/// checked for numbers that would not reach the tool as written, and — for
/// a request looked up by its request (keyed, or waiting for approval) —
/// its digest.
fn read(
    g: &Gateway,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(CallRequest, Option<RequestDigest>), Response> {
    let mut req: CallRequest = parse_json(body).map_err(IntoResponse::into_response)?;
    // Integers that fit 64 bits reach the tool as written; only a request
    // holding a float (or a number too large for an integer, which reads as
    // one) is scanned as the text it arrived as.
    if (has_float(&req.payload) || req.verify.is_some())
        && let Some(number) = unrepresentable_number(body)
    {
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
    if let Err(refused) = g.door.check_keyed(req.idempotency_key.as_deref()) {
        return Err(refusal(refused));
    }
    // Keyed requests are looked up by their request; a request asking for
    // approval is bound to it.
    let digest =
        (req.idempotency_key.is_some() || req.approval.is_some()).then(|| RequestDigest::of(&req));
    Ok((req, digest))
}

/// Whether `value` holds a number that is not a 64-bit integer.
fn has_float(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.is_f64(),
        Value::Array(items) => items.iter().any(has_float),
        Value::Object(fields) => fields.values().any(has_float),
        _ => false,
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
    use axum::http::HeaderValue;
    use serde_json::json;

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

    #[test]
    fn only_a_request_holding_a_float_is_scanned_for_numbers() {
        for (payload, float) in [
            (
                json!({"a": 1, "b": [-2, {"c": 18446744073709551615u64}]}),
                false,
            ),
            (json!({"a": "1.5", "b": null}), false),
            (json!({"a": [1, 2.5]}), true),
            (json!({"a": {"b": 1e300}}), true),
        ] {
            assert_eq!(has_float(&payload), float, "{payload}");
        }
        // An integer beyond 64 bits reads as a float: it is scanned, and refused.
        let big: Value = serde_json::from_str(r#"{"id": 18446744073709551617}"#).unwrap();
        assert!(has_float(&big));
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
}
