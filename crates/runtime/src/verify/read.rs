//! Running one verification read through a transport and checking its result.

use std::time::Duration;

use recourse_protocol::{BodyFormat, REDACTED, ToolData, parse_response, redact, truncate_chars};
use serde_json::Value;

use super::compare::{self, Found};
use super::spec::ResolvedRead;
use crate::transport::{Request, Transport, TransportFailure, TransportFailureKind};
use recourse_core::policy::VerifyResult;
use recourse_core::transport::Delivery;

/// What one read found, and the result it read (for a write whose own
/// answer was lost, the read's result is the best account of it).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reading {
    pub(crate) result: VerifyResult,
    /// What did not hold, or why it could not tell (redacted).
    pub(crate) detail: Option<String>,
    pub(crate) document: Option<Value>,
}

impl Reading {
    pub(crate) fn cannot_tell(why: impl AsRef<str>) -> Self {
        Self {
            result: VerifyResult::CannotTell,
            detail: Some(truncate_chars(&redact(why.as_ref()), 300)),
            document: None,
        }
    }
}

/// What a read's result is compared with, for an expectation of change.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Against<'a> {
    /// Nothing: this is the read before the write, which a change cannot
    /// have reached yet.
    NothingYet,
    /// The result of the read before the write, when it answered one.
    Before(Option<&'a Value>),
}

/// Sends `read` through `transport` with `headers` (the caller's, never an
/// idempotency key: a read is not the write), within `timeout`, and checks
/// its expectations `against` the read before the write.
pub(crate) async fn read(
    transport: &dyn Transport,
    read: &ResolvedRead,
    headers: &[(String, String)],
    timeout: Duration,
    against: Against<'_>,
) -> Reading {
    if let Some(why) = redacted_input(read) {
        return Reading::cannot_tell(why);
    }
    let request = Request {
        target: read.target.clone(),
        method: read.method,
        headers: headers.to_vec(),
        idempotency_key: None,
        payload: read.args.clone(),
        timeout,
    };
    evaluate(read, send(transport, &request).await, against)
}

/// A transport that may not enforce the timeout gets a guard timer.
async fn send(transport: &dyn Transport, request: &Request) -> Delivery {
    if transport.enforces_timeout() {
        return transport.send(request).await;
    }
    let guard = request.timeout + Duration::from_secs(1);
    match tokio::time::timeout(guard, transport.send(request)).await {
        Ok(delivery) => delivery,
        Err(_) => Err(TransportFailure::new(
            TransportFailureKind::TimedOutAfterSend,
            format!("no answer within {guard:?}"),
        )),
    }
}

/// A read whose inputs came from a redacted payload (the journal keeps
/// payloads redacted) would read the wrong thing: it cannot tell.
fn redacted_input(read: &ResolvedRead) -> Option<String> {
    let values = read.expectations.iter().filter_map(|(_, v)| v.as_ref());
    std::iter::once(&read.args)
        .chain(values)
        .any(|v| v.to_string().contains(REDACTED))
        .then(|| "the read needs a value the journal keeps redacted".to_owned())
}

/// Checks `read`'s expectations against what came back, `against` the
/// read before the write. A read that failed cannot tell — unless it
/// failed as the verification's `absent_when` says the effect's absence
/// looks, which is an answer: the expectations do not hold.
pub(crate) fn evaluate(read: &ResolvedRead, delivery: Delivery, against: Against<'_>) -> Reading {
    let mut raw = match delivery {
        Ok(raw) => raw,
        Err(failure) => return Reading::cannot_tell(format!("the read failed: {failure}")),
    };
    // An answer the transport read already (an MCP result it holds typed).
    let parsed = match raw.read.take() {
        Some(read) => *read,
        None => parse_response(
            raw.status,
            raw.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            &raw.body,
        ),
    };
    if !parsed.success {
        let code = parsed.code.as_deref().unwrap_or("no code");
        if read
            .absent_when
            .as_ref()
            .is_some_and(|absent| absent.says_absent(&parsed))
        {
            return Reading {
                result: VerifyResult::NotHeld,
                detail: Some(truncate_chars(
                    &redact(&format!("the read answered {code}: the effect is absent")),
                    300,
                )),
                document: None,
            };
        }
        return Reading::cannot_tell(format!("the read answered HTTP {} ({code})", parsed.status));
    }
    let document = match parsed.format {
        // The whole result: kept beside the data, or the data itself.
        BodyFormat::McpResult => match (&parsed.answer, &parsed.data) {
            (Some(whole), _) => mcp_document(whole),
            (None, Some(data)) => mcp_document(&data.value()),
            (None, None) => None,
        },
        _ => parsed
            .data
            .filter(|d| !d.is_null())
            .map(ToolData::into_value),
    };
    let Some(document) = document else {
        return Reading::cannot_tell("the read returned nothing to check");
    };
    let (result, detail) = judge(read, &document, against);
    Reading {
        result,
        detail: detail.map(|d| truncate_chars(&d, 300)),
        document: Some(document),
    }
}

/// What `read`'s expectations found in `document`: every one holds; one
/// does not (which outweighs a change that cannot be measured); or a
/// change cannot be measured. Before the write, a change has not happened:
/// a read that states one never shows the effect there.
fn judge(
    read: &ResolvedRead,
    document: &Value,
    against: Against<'_>,
) -> (VerifyResult, Option<String>) {
    let before = match against {
        Against::NothingYet if read.states_a_change() => {
            return (
                VerifyResult::NotHeld,
                Some("a change is read after the write, against this read".to_owned()),
            );
        }
        Against::NothingYet => None,
        Against::Before(before) => before,
    };
    let mut unmet = Vec::new();
    let mut unmeasured = Vec::new();
    for (e, value) in &read.expectations {
        match compare::check(e, value.as_ref(), document, before) {
            Found::Holds => {}
            Found::NotHeld(why) => unmet.push(why),
            Found::NoBaseline(why) => unmeasured.push(why),
        }
    }
    if !unmet.is_empty() {
        (VerifyResult::NotHeld, Some(unmet.join("; ")))
    } else if !unmeasured.is_empty() {
        (VerifyResult::CannotTell, Some(unmeasured.join("; ")))
    } else {
        (VerifyResult::Holds, None)
    }
}

/// What an MCP read tool answered: its `structuredContent`, or else the
/// JSON of its only text content (many servers answer JSON as text).
fn mcp_document(value: &Value) -> Option<Value> {
    let result = value.get("result").unwrap_or(value);
    if let Some(structured) = result.get("structuredContent").filter(|s| !s.is_null()) {
        return Some(structured.clone());
    }
    let texts: Vec<&str> = result
        .get("content")?
        .as_array()?
        .iter()
        .filter(|item| item.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|item| item.get("text").and_then(Value::as_str))
        .collect();
    match texts.as_slice() {
        [text] => serde_json::from_str(text).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::VerifySpec;
    use recourse_core::transport::RawResponse;
    use serde_json::json;

    fn read(spec: VerifySpec) -> ResolvedRead {
        let payload = json!({"id": "W1"});
        super::super::spec::Verifier::new(spec, &payload)
            .unwrap()
            .resolve(&payload)
            .unwrap()
    }

    fn answer(body: Value) -> Delivery {
        Ok(RawResponse {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string().into_bytes(),
            read: None,
        })
    }

    fn evaluate_now(read: &ResolvedRead, delivery: Delivery) -> Reading {
        evaluate(read, delivery, Against::Before(None))
    }

    fn cancelled() -> ResolvedRead {
        read(VerifySpec::tool("get_order").expect(r#"/status == "cancelled""#))
    }

    #[test]
    fn an_envelope_is_read_by_its_data() {
        let r = evaluate_now(
            &cancelled(),
            answer(json!({"success": true, "data": {"status": "cancelled"}})),
        );
        assert_eq!(r.result, VerifyResult::Holds);
        assert_eq!(r.document, Some(json!({"status": "cancelled"})));
        let r = evaluate_now(
            &cancelled(),
            answer(json!({"success": true, "data": {"status": "pending"}})),
        );
        assert_eq!(r.result, VerifyResult::NotHeld);
        assert_eq!(
            r.detail.as_deref(),
            Some(r#"/status is "pending", expected == "cancelled""#)
        );
    }

    #[test]
    fn an_mcp_result_is_read_by_its_structured_content_or_its_json_text() {
        let structured = json!({"content": [{"type": "text", "text": "ok"}],
                                "structuredContent": {"status": "cancelled"}});
        assert_eq!(
            evaluate_now(&cancelled(), answer(structured)).result,
            VerifyResult::Holds
        );
        let text = json!({"content": [{"type": "text", "text": "{\"status\": \"cancelled\"}"}]});
        assert_eq!(
            evaluate_now(&cancelled(), answer(text)).result,
            VerifyResult::Holds
        );
        let prose = json!({"content": [{"type": "text", "text": "the order is cancelled"}]});
        assert_eq!(
            evaluate_now(&cancelled(), answer(prose)).result,
            VerifyResult::CannotTell
        );
    }

    #[test]
    fn a_failed_read_cannot_tell() {
        let failed = evaluate_now(
            &cancelled(),
            Err(TransportFailure::new(
                TransportFailureKind::ConnectFailed,
                "refused",
            )),
        );
        assert_eq!(failed.result, VerifyResult::CannotTell);
        assert!(failed.detail.unwrap().contains("connect_failed"));
        let refused = evaluate_now(
            &cancelled(),
            Ok(RawResponse {
                status: 404,
                headers: Vec::new(),
                body: Vec::new(),
                read: None,
            }),
        );
        assert_eq!(refused.result, VerifyResult::CannotTell);
        let empty = evaluate_now(&cancelled(), answer(json!({"success": true})));
        assert_eq!(empty.result, VerifyResult::CannotTell);
    }

    #[test]
    fn an_error_the_verification_names_is_the_effects_absence() {
        use crate::verify::AbsentWhen;
        let cat = |absent: Option<AbsentWhen>| {
            let mut spec = VerifySpec::tool("cat").expect("/content exists");
            spec.absent_when = absent;
            read(spec)
        };
        let missing = answer(
            json!({"content": [{"type": "text", "text": "cat: no such file"}], "isError": true}),
        );
        let r = evaluate_now(&cat(Some(AbsentWhen::AnyError)), missing.clone());
        assert_eq!(r.result, VerifyResult::NotHeld);
        assert!(r.detail.unwrap().contains("the effect is absent"));
        assert_eq!(
            evaluate_now(&cat(None), missing).result,
            VerifyResult::CannotTell
        );
        let busy = answer(
            json!({"content": [{"type": "text", "text": "503 unavailable"}], "isError": true}),
        );
        assert_eq!(
            evaluate_now(&cat(Some(AbsentWhen::AnyError)), busy).result,
            VerifyResult::CannotTell,
            "a read failing for its own reasons is not absence"
        );
        let dropped = Err(TransportFailure::new(
            TransportFailureKind::TimedOutAfterSend,
            "late",
        ));
        assert_eq!(
            evaluate_now(&cat(Some(AbsentWhen::AnyError)), dropped).result,
            VerifyResult::CannotTell
        );
    }

    #[test]
    fn a_change_is_read_against_the_read_before_the_write() {
        let orders = read(
            VerifySpec::tool("list_orders")
                .expect(r#"$ any {"/symbol": "NVDA"}"#)
                .expect("$ grew_by 1"),
        );
        let before = json!([{"symbol": "NVDA"}]);
        let first = evaluate(&orders, answer(before.clone()), Against::NothingYet);
        assert_eq!(
            first.result,
            VerifyResult::NotHeld,
            "before the write a change never shows, so it is never already applied"
        );
        assert_eq!(first.document, Some(before.clone()));
        let grown = answer(json!([{"symbol": "NVDA"}, {"symbol": "NVDA"}]));
        let after = evaluate(&orders, grown.clone(), Against::Before(Some(&before)));
        assert_eq!(after.result, VerifyResult::Holds);
        let same = evaluate(
            &orders,
            answer(before.clone()),
            Against::Before(Some(&before)),
        );
        assert_eq!(same.result, VerifyResult::NotHeld);
        let unmeasured = evaluate(&orders, grown, Against::Before(None));
        assert_eq!(unmeasured.result, VerifyResult::CannotTell);
        let other = evaluate(
            &orders,
            answer(json!([{"symbol": "AAPL"}, {"symbol": "TSLA"}])),
            Against::Before(None),
        );
        assert_eq!(
            other.result,
            VerifyResult::NotHeld,
            "what does not hold outweighs"
        );
    }

    #[tokio::test]
    async fn a_read_of_a_redacted_value_is_never_sent() {
        let sent = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let seen = std::sync::Arc::clone(&sent);
        let tool = crate::transport::InProcessTransport::from_tool(move |_| {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async { recourse_protocol::ToolResponse::ok(json!({"status": "x"})) }
        });
        let payload = json!({"id": REDACTED});
        let resolved = super::super::spec::Verifier::new(
            VerifySpec::tool("get_order")
                .args(json!({"id": "{{payload.id}}"}))
                .expect("/status exists"),
            &payload,
        )
        .unwrap()
        .resolve(&payload)
        .unwrap();
        let r = super::read(
            &tool,
            &resolved,
            &[],
            Duration::from_secs(1),
            Against::NothingYet,
        )
        .await;
        assert_eq!(r.result, VerifyResult::CannotTell);
        assert_eq!(sent.load(std::sync::atomic::Ordering::SeqCst), 0);
        let r = super::read(
            &tool,
            &cancelled(),
            &[],
            Duration::from_secs(1),
            Against::NothingYet,
        )
        .await;
        assert_eq!(r.result, VerifyResult::NotHeld);
        assert_eq!(sent.load(std::sync::atomic::Ordering::SeqCst), 1);
    }
}
