//! The minimal forwarder: axum in, reqwest out, nothing in between.
//!
//! It reads the same request body the gateway reads (`{"url", "payload"}`),
//! sends the payload to the URL and answers the tool's status, content type
//! and body unchanged: no allowlist, envelope, policy, record or journal. The
//! difference between the gateway's CPU per call and this program's is what
//! recourse itself costs per call.
//!
//! `--client hyper` sends through hyper-util's pooled client instead of
//! reqwest — hyper's HTTP/1, which the gateway's own pool sends plain-HTTP
//! calls over — for the floor of the gateway's own stack.
//!
//! `--answer record` (with `--client hyper`) does, besides, the least the
//! gateway's answer asks of any program: it reads the tool's envelope
//! (`success`, `data` and `error`, the data kept as raw JSON) and answers the
//! gateway's record of a read that succeeded at once — the same fields, the
//! same bytes but for the call id and the time — written by serde. No policy,
//! redaction, manifest or limits: the floor of the gateway's contract on this
//! stack (hyper, serde_json), not of its stack alone.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

#[derive(Deserialize)]
struct Forward {
    url: String,
    payload: serde_json::Value,
}

type HyperClient = Client<HttpConnector, Full<Bytes>>;

/// What the forwarder answers: the tool's answer as it came, or the
/// gateway's record of it.
#[derive(Clone, Copy, PartialEq)]
enum Answer {
    Relay,
    Record,
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let port: u16 = crate::flag(args, "--port", 0)?;
    let client: String = crate::flag(args, "--client", "reqwest".to_owned())?;
    if client != "reqwest" && client != "hyper" {
        return Err(format!("--client {client:?}: reqwest or hyper"));
    }
    let answer = match crate::flag(args, "--answer", "relay".to_owned())?.as_str() {
        "relay" => Answer::Relay,
        "record" if client == "hyper" => Answer::Record,
        "record" => return Err("--answer record needs --client hyper".to_owned()),
        other => return Err(format!("--answer {other:?}: relay or record")),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let app = if client == "hyper" {
            let mut connector = HttpConnector::new();
            connector.set_nodelay(true);
            let hyper: HyperClient = Client::builder(TokioExecutor::new()).build(connector);
            Router::new()
                .route("/v1/calls", post(forward_hyper))
                .with_state((hyper, answer))
        } else {
            let reqwest = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|e| e.to_string())?;
            Router::new()
                .route("/v1/calls", post(forward))
                .with_state(reqwest)
        };
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| format!("binding 127.0.0.1:{port}: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        println!("listening on http://{addr}");
        axum::serve(listener, app).await.map_err(|e| e.to_string())
    })
}

async fn forward(State(client): State<reqwest::Client>, body: Bytes) -> Response {
    let request: Forward = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    };
    let sent = client
        .post(&request.url)
        .json(&request.payload)
        .send()
        .await;
    let response = match sent {
        Ok(response) => response,
        Err(e) => return (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    };
    let status = response.status();
    let content_type = response.headers().get(CONTENT_TYPE).cloned();
    relay(status, content_type, response.bytes().await)
}

async fn forward_hyper(
    State((client, answer)): State<(HyperClient, Answer)>,
    body: Bytes,
) -> Response {
    let started = std::time::Instant::now();
    let request: Forward = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    };
    let payload = match serde_json::to_vec(&request.payload) {
        Ok(payload) => payload,
        Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    };
    let outgoing = axum::http::Request::post(&request.url)
        .header(CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(payload)));
    let outgoing = match outgoing {
        Ok(outgoing) => outgoing,
        Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    };
    let response = match client.request(outgoing).await {
        Ok(response) => response,
        Err(e) => return (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    };
    let status = response.status();
    let content_type = response.headers().get(CONTENT_TYPE).cloned();
    let body = response.into_body().collect().await.map(|b| b.to_bytes());
    match (answer, body) {
        (Answer::Record, Ok(body)) => record(&request.payload, status, &body, started),
        (_, body) => relay(status, content_type, body),
    }
}

/// What the gateway must read of a tool's answer.
#[derive(Deserialize)]
struct Envelope<'a> {
    success: bool,
    #[serde(borrow)]
    data: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

/// The gateway's record of a read that succeeded at its first attempt,
/// field for field (`recourse_core::record::CallReport`'s JSON).
#[derive(Serialize)]
struct Record<'a> {
    record_version: u8,
    call_id: String,
    outcome: &'static str,
    data: Option<&'a RawValue>,
    error: Option<&'a RawValue>,
    reason: Option<&'static str>,
    reason_text: Option<&'static str>,
    stop_kind: Option<&'static str>,
    next: Next,
    http_calls: u32,
    llm_calls: u32,
    tokens: Tokens,
    llm_ms: u64,
    idempotency: Idempotency,
    idempotency_key: Option<&'static str>,
    operation_id: Option<&'static str>,
    verification: Option<&'static str>,
    elapsed_ms: u64,
    settlement: Option<&'static str>,
    ended_at: String,
    attempts: [Attempt<'a>; 1],
    replayed: bool,
}

#[derive(Serialize)]
struct Next {
    step: &'static str,
    model_message: &'static str,
}

#[derive(Serialize)]
struct Tokens {
    prompt: u64,
    completion: u64,
}

#[derive(Serialize)]
struct Idempotency {
    idempotent: bool,
    from: &'static str,
}

#[derive(Serialize)]
struct Attempt<'a> {
    n: u32,
    payload: &'a serde_json::Value,
    status: u16,
    transport_error: Option<&'static str>,
    category: Option<&'static str>,
    code: Option<&'static str>,
    retry_permission: &'static str,
    action: &'static str,
    wait_ms: Option<u64>,
    reason: Option<&'static str>,
    timeout_ms: u64,
    source: &'static str,
    events: [(); 0],
}

/// The tool's envelope read and the gateway's record of it written; a tool
/// that did not succeed is answered as it came (this floor is of the
/// success path only).
fn record(
    payload: &serde_json::Value,
    status: StatusCode,
    body: &[u8],
    started: std::time::Instant,
) -> Response {
    let envelope: Envelope<'_> = match serde_json::from_slice::<Envelope<'_>>(body) {
        Ok(envelope) if envelope.success && status.is_success() => envelope,
        _ => return relay(status, None, Ok::<_, String>(Bytes::copy_from_slice(body))),
    };
    let record = Record {
        record_version: 1,
        call_id: uuid::Uuid::now_v7().to_string(),
        outcome: "succeeded",
        data: envelope.data,
        error: envelope.error,
        reason: None,
        reason_text: None,
        stop_kind: None,
        next: Next {
            step: "use_result",
            model_message: "The call succeeded. Now: use the result.",
        },
        http_calls: 1,
        llm_calls: 0,
        tokens: Tokens {
            prompt: 0,
            completion: 0,
        },
        llm_ms: 0,
        idempotency: Idempotency {
            idempotent: true,
            from: "manifest",
        },
        idempotency_key: None,
        operation_id: None,
        verification: None,
        elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        settlement: None,
        ended_at: recourse::journal::rfc3339(std::time::SystemTime::now()),
        attempts: [Attempt {
            n: 1,
            payload,
            status: status.as_u16(),
            transport_error: None,
            category: None,
            code: None,
            retry_permission: "unspecified",
            action: "succeed",
            wait_ms: None,
            reason: None,
            timeout_ms: 30_000,
            source: "caller",
            events: [],
        }],
        replayed: false,
    };
    match serde_json::to_vec(&record) {
        Ok(json) => (
            status,
            [(CONTENT_TYPE, "application/json")],
            Bytes::from(json),
        )
            .into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// The tool's status, content type and body, handed back as they came.
fn relay<E: std::fmt::Display>(
    status: StatusCode,
    content_type: Option<axum::http::HeaderValue>,
    body: Result<Bytes, E>,
) -> Response {
    match body {
        Ok(body) => {
            let mut answer = (status, body).into_response();
            if let Some(content_type) = content_type {
                answer.headers_mut().insert(CONTENT_TYPE, content_type);
            }
            answer
        }
        Err(e) => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    }
}
