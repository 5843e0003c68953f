//! [`Capture`]: the upstream's transport for one call, keeping the tool's
//! raw answer.
//!
//! # Why keep the raw answer
//!
//! The record keeps what recourse needs to decide and to report (a success's
//! `structuredContent`, or its content when it has none); a client of the
//! proxy needs what the tool answered — every content block, the structured
//! result, the tool's own `_meta` — as if the proxy were not there. So each
//! call's transport keeps the body of the write tool's latest answer, and
//! the proxy hands that back when the call succeeded on that answer. A
//! verification's read goes through the same transport to another tool and
//! is not kept.

use std::sync::{Arc, Mutex, PoisonError};

use recourse::Transport;
use recourse::transport::{BoxFuture, Delivery, Request};
use recourse_mcp::McpTransport;
use serde_json::{Map, Value};

/// One call's transport to its upstream.
pub(crate) struct Capture {
    upstream: Arc<McpTransport>,
    /// The tool's name on the upstream: only its answers are kept.
    tool: String,
    last: Mutex<Option<Vec<u8>>>,
}

impl Capture {
    pub(crate) fn new(upstream: Arc<McpTransport>, tool: impl Into<String>) -> Self {
        Self {
            upstream,
            tool: tool.into(),
            last: Mutex::new(None),
        }
    }

    /// The tool's latest answer (a `CallToolResult`), if its last exchange
    /// brought one.
    pub(crate) fn take(&self) -> Option<Map<String, Value>> {
        let body = self
            .last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()?;
        match serde_json::from_slice(&body) {
            Ok(Value::Object(result)) => Some(result),
            _ => None,
        }
    }
}

impl Transport for Capture {
    fn send<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Delivery> {
        Box::pin(async move {
            let delivery = self.upstream.send(request).await;
            if request.target.as_str() == self.tool {
                let body = delivery.as_ref().ok().map(|answer| answer.body.clone());
                *self.last.lock().unwrap_or_else(PoisonError::into_inner) = body;
            }
            delivery
        })
    }

    fn enforces_timeout(&self) -> bool {
        self.upstream.enforces_timeout()
    }
}
