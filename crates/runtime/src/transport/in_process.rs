//! In-process transport: Rust tools called as async functions, no sockets.

use std::future::Future;
use std::sync::Arc;

use recourse_protocol::ToolResponse;
use serde_json::Value;

use super::{BoxFuture, Delivery, RawResponse, Request, Transport};

type Handler = dyn Fn(Request) -> BoxFuture<'static, Delivery> + Send + Sync;

/// Calls a Rust function as a tool.
///
/// ```
/// use recourse::InProcessTransport;
/// use recourse_protocol::{ToolError, ToolResponse};
/// use serde_json::{json, Value};
///
/// let transport = InProcessTransport::from_tool(|payload: Value| async move {
///     match payload["symbol"].as_str() {
///         Some("TSLA") => ToolResponse::ok(json!({"price": 468.285})),
///         _ => ToolResponse::failure(ToolError::not_found("SYMBOL_NOT_FOUND", "unknown symbol")),
///     }
/// });
/// # let _ = transport;
/// ```
#[derive(Clone)]
pub struct InProcessTransport {
    handler: Arc<Handler>,
}

impl std::fmt::Debug for InProcessTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcessTransport").finish_non_exhaustive()
    }
}

impl InProcessTransport {
    /// A transport that hands each [`Request`] to `handler`, which may return any
    /// [`Delivery`] — including transport failures, for tests of the executor.
    pub fn new<F, Fut>(handler: F) -> Self
    where
        F: Fn(Request) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Delivery> + Send + 'static,
    {
        Self {
            handler: Arc::new(move |request| Box::pin(handler(request))),
        }
    }

    /// A transport around a tool function from payload to envelope; the status
    /// is the envelope's ([`ToolResponse::http_status`]).
    pub fn from_tool<F, Fut>(tool: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolResponse> + Send + 'static,
    {
        let tool = Arc::new(tool);
        Self::new(move |request: Request| {
            let tool = Arc::clone(&tool);
            async move {
                let response = tool(request.payload).await;
                Ok(RawResponse {
                    status: response.http_status(),
                    headers: vec![("content-type".to_owned(), "application/json".to_owned())],
                    body: response.to_json_bytes(),
                    read: None,
                })
            }
        })
    }
}

impl Transport for InProcessTransport {
    fn send<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Delivery> {
        (self.handler)(request.clone())
    }
}
