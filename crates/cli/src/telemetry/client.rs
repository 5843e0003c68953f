//! The HTTP client the OTLP exporters send through: recourse's own reqwest
//! (rustls, already built for tool calls), run on the command's runtime.
//!
//! The SDK's batch span processor and periodic metric reader export from
//! threads of their own, outside any Tokio runtime, so each request is
//! spawned onto the runtime the command runs on and awaited from there. Each
//! one is bounded by the export timeout, follows no redirect, and reads at
//! most [`MAX_RESPONSE_BYTES`] of the collector's answer. The first failure
//! of each client (one per signal) is said on stderr, redacted, so a mistyped
//! endpoint is not silent.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use recourse_protocol::redact;

/// The most of a collector's response read (OTLP answers are a few bytes).
const MAX_RESPONSE_BYTES: usize = 1024 * 1024;

/// Sends OTLP requests with reqwest on a Tokio runtime.
#[derive(Debug)]
pub(super) struct OtlpClient {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
    warned: AtomicBool,
}

impl OtlpClient {
    pub(super) fn new(runtime: tokio::runtime::Handle, timeout: Duration) -> reqwest::Result<Self> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Self {
            client,
            runtime,
            warned: AtomicBool::new(false),
        })
    }
}

#[async_trait]
impl HttpClient for OtlpClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client.clone();
        let sent = self.runtime.spawn(send(client, request)).await;
        let result = sent.map_err(HttpError::from).and_then(|r| r);
        let failed = match &result {
            Ok(response) if !response.status().is_success() => {
                Some(format!("the collector answered {}", response.status()))
            }
            Ok(_) => None,
            Err(e) => Some(e.to_string()),
        };
        if let Some(why) = failed
            && !self.warned.swap(true, Ordering::Relaxed)
        {
            eprintln!("recourse: could not export telemetry: {}", redact(&why));
        }
        result
    }
}

async fn send(
    client: reqwest::Client,
    request: Request<Bytes>,
) -> Result<Response<Bytes>, HttpError> {
    let request = reqwest::Request::try_from(request)?;
    let mut response = client.execute(request).await?;
    let mut answer = Response::builder().status(response.status());
    if let Some(headers) = answer.headers_mut() {
        *headers = std::mem::take(response.headers_mut());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(
                format!("the collector's answer is over {MAX_RESPONSE_BYTES} bytes").into(),
            );
        }
        body.extend_from_slice(&chunk);
    }
    Ok(answer.body(Bytes::from(body))?)
}
