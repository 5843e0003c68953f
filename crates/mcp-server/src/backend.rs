//! Where [`McpToolServer`](crate::server::McpToolServer) sends a forwarded call: a
//! tool server over loopback HTTP, or its router in this process.

use std::time::Duration;

use serde_json::Value;

/// How long one forwarded call may take.
pub(crate) const FORWARD_TIMEOUT: Duration = Duration::from_secs(300);

/// Where a forwarded call goes.
#[derive(Debug, Clone)]
pub(crate) enum Backend {
    /// A tool server listening at `base_url`.
    Http {
        base_url: String,
        client: reqwest::Client,
    },
    /// A tool server's router, called in this process: nothing listens.
    InProcess(axum::Router),
}

/// What a tool answered, however it was reached.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) retry_after: Option<String>,
    /// The body, or why it could not be read whole.
    pub(crate) body: Result<Vec<u8>, String>,
}

/// Why a request got no answer.
pub(crate) struct Unanswered {
    /// No connection was made, so nothing was sent.
    pub(crate) nothing_sent: bool,
    pub(crate) message: String,
}

impl Backend {
    /// Sends one request to `path`, with `body` as JSON and `key` as its `Idempotency-Key`.
    pub(crate) async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        key: Option<&str>,
    ) -> Result<Answer, Unanswered> {
        match self {
            Self::Http { base_url, client } => {
                let method =
                    reqwest::Method::from_bytes(method.as_bytes()).unwrap_or(reqwest::Method::POST);
                let mut request = client.request(method, format!("{base_url}{path}"));
                if let Some(body) = body {
                    request = request.json(body);
                }
                if let Some(key) = key {
                    request = request.header("Idempotency-Key", key);
                }
                let response = request.send().await.map_err(|e| Unanswered {
                    nothing_sent: e.is_connect(),
                    message: e.to_string(),
                })?;
                let status = response.status().as_u16();
                let retry_after = header(response.headers(), reqwest::header::RETRY_AFTER);
                let body = response
                    .bytes()
                    .await
                    .map(|b| b.to_vec())
                    .map_err(|e| e.to_string());
                Ok(Answer {
                    status,
                    retry_after,
                    body,
                })
            }
            Self::InProcess(router) => {
                let mut request = axum::http::Request::builder()
                    .method(method)
                    .uri(path)
                    .header(axum::http::header::CONTENT_TYPE, "application/json");
                if let Some(key) = key {
                    request = request.header("Idempotency-Key", key);
                }
                let bytes = body.map(|b| b.to_string()).unwrap_or_default();
                let request =
                    request
                        .body(axum::body::Body::from(bytes))
                        .map_err(|e| Unanswered {
                            nothing_sent: true,
                            message: e.to_string(),
                        })?;
                let response =
                    match within_forward_timeout(call_router(router.clone(), request)).await {
                        Some(response) => response,
                        None => {
                            return Err(Unanswered {
                                nothing_sent: false,
                                message: format!("no answer within {FORWARD_TIMEOUT:?}"),
                            });
                        }
                    };
                let status = response.status().as_u16();
                let retry_after = header(response.headers(), axum::http::header::RETRY_AFTER);
                let body = axum::body::to_bytes(response.into_body(), MAX_BODY)
                    .await
                    .map(|b| b.to_vec())
                    .map_err(|e| format!("the response broke off: {e}"));
                Ok(Answer {
                    status,
                    retry_after,
                    body,
                })
            }
        }
    }
}

/// The most of a tool's answer read in process (the HTTP client's own cap
/// applies to the other backend).
const MAX_BODY: usize = 16 * 1024 * 1024;

/// `future`, or `None` when it takes longer than [`FORWARD_TIMEOUT`].
async fn within_forward_timeout<T>(future: impl std::future::Future<Output = T>) -> Option<T> {
    tokio::time::timeout(FORWARD_TIMEOUT, future).await.ok()
}

async fn call_router(
    mut router: axum::Router,
    request: axum::http::Request<axum::body::Body>,
) -> axum::response::Response {
    use tower_service::Service;
    // A router is always ready, and never fails: its errors are responses.
    let _ = std::future::poll_fn(|cx| {
        <axum::Router as Service<axum::http::Request<axum::body::Body>>>::poll_ready(
            &mut router,
            cx,
        )
    })
    .await;
    match router.call(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

fn header(headers: &axum::http::HeaderMap, name: axum::http::HeaderName) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}
