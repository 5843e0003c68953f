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
use serde::ser::{SerializeStruct, Serializer};
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
#[derive(Clone, Copy)]
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
    // Read only for the record's `elapsed_ms`: the relay reads no clock.
    let started = matches!(answer, Answer::Record).then(std::time::Instant::now);
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
    match (started, body) {
        (Some(started), Ok(body)) => match record(&request.payload, status, &body, started) {
            Some(answer) => answer,
            None => relay(
                status,
                content_type,
                Ok::<_, std::convert::Infallible>(body),
            ),
        },
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
/// field for field (`recourse_core::record::CallReport`'s JSON): what varies
/// is held, the rest written as the gateway writes it — the same
/// `serialize_struct` calls serde's derive makes.
struct Record<'a> {
    call_id: String,
    envelope: Envelope<'a>,
    payload: &'a serde_json::Value,
    status: u16,
    elapsed_ms: u64,
    ended_at: String,
}

/// Nothing, as the record writes a field it has no value for.
const NONE: Option<&str> = None;

impl Serialize for Record<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_struct("Record", 22)?;
        out.serialize_field("record_version", &1u8)?;
        out.serialize_field("call_id", &self.call_id)?;
        out.serialize_field("outcome", "succeeded")?;
        out.serialize_field("data", &self.envelope.data)?;
        out.serialize_field("error", &self.envelope.error)?;
        out.serialize_field("reason", &NONE)?;
        out.serialize_field("reason_text", &NONE)?;
        out.serialize_field("stop_kind", &NONE)?;
        out.serialize_field("next", &Next)?;
        out.serialize_field("http_calls", &1u32)?;
        out.serialize_field("llm_calls", &0u32)?;
        out.serialize_field("tokens", &Tokens)?;
        out.serialize_field("llm_ms", &0u64)?;
        out.serialize_field("idempotency", &Idempotency)?;
        out.serialize_field("idempotency_key", &NONE)?;
        out.serialize_field("operation_id", &NONE)?;
        out.serialize_field("verification", &NONE)?;
        out.serialize_field("elapsed_ms", &self.elapsed_ms)?;
        out.serialize_field("settlement", &NONE)?;
        out.serialize_field("ended_at", &self.ended_at)?;
        out.serialize_field("attempts", &[Attempt(self)])?;
        out.serialize_field("replayed", &false)?;
        out.end()
    }
}

/// The record's `next`: use the result.
struct Next;

impl Serialize for Next {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_struct("Next", 2)?;
        out.serialize_field("step", "use_result")?;
        out.serialize_field("model_message", "The call succeeded. Now: use the result.")?;
        out.end()
    }
}

/// The record's `tokens`: none spent.
struct Tokens;

impl Serialize for Tokens {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_struct("Tokens", 2)?;
        out.serialize_field("prompt", &0u64)?;
        out.serialize_field("completion", &0u64)?;
        out.end()
    }
}

/// The record's `idempotency`: a read, as the tool's manifest says.
struct Idempotency;

impl Serialize for Idempotency {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_struct("Idempotency", 2)?;
        out.serialize_field("idempotent", &true)?;
        out.serialize_field("from", "manifest")?;
        out.end()
    }
}

/// The record's one attempt: sent once, answered, succeeded.
struct Attempt<'r, 'a>(&'r Record<'a>);

impl Serialize for Attempt<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_struct("Attempt", 13)?;
        out.serialize_field("n", &1u32)?;
        out.serialize_field("payload", self.0.payload)?;
        out.serialize_field("status", &self.0.status)?;
        out.serialize_field("transport_error", &NONE)?;
        out.serialize_field("category", &NONE)?;
        out.serialize_field("code", &NONE)?;
        out.serialize_field("retry_permission", "unspecified")?;
        out.serialize_field("action", "succeed")?;
        out.serialize_field("wait_ms", &None::<u64>)?;
        out.serialize_field("reason", &NONE)?;
        out.serialize_field("timeout_ms", &30_000u64)?;
        out.serialize_field("source", "caller")?;
        out.serialize_field("events", &[(); 0])?;
        out.end()
    }
}

/// The tool's envelope read and the gateway's record of it written; `None`
/// for a tool that did not succeed, answered as it came (this floor is of
/// the success path only).
fn record(
    payload: &serde_json::Value,
    status: StatusCode,
    body: &[u8],
    started: std::time::Instant,
) -> Option<Response> {
    let envelope = serde_json::from_slice::<Envelope<'_>>(body)
        .ok()
        .filter(|envelope| envelope.success && status.is_success())?;
    let record = Record {
        call_id: uuid::Uuid::now_v7().to_string(),
        envelope,
        payload,
        status: status.as_u16(),
        elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        ended_at: recourse::journal::rfc3339(std::time::SystemTime::now()),
    };
    Some(match serde_json::to_vec(&record) {
        Ok(json) => (
            status,
            [(CONTENT_TYPE, "application/json")],
            Bytes::from(json),
        )
            .into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    })
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
