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
use serde::Deserialize;

#[derive(Deserialize)]
struct Forward {
    url: String,
    payload: serde_json::Value,
}

type HyperClient = Client<HttpConnector, Full<Bytes>>;

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let port: u16 = crate::flag(args, "--port", 0)?;
    let client: String = crate::flag(args, "--client", "reqwest".to_owned())?;
    if client != "reqwest" && client != "hyper" {
        return Err(format!("--client {client:?}: reqwest or hyper"));
    }
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
                .with_state(hyper)
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

async fn forward_hyper(State(client): State<HyperClient>, body: Bytes) -> Response {
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
    relay(status, content_type, body)
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
