//! [`Capture`]: the upstream's transport for one call, keeping the tool's
//! result as it came.
//!
//! # Why keep the result
//!
//! The record keeps what recourse needs to decide and to report; a client
//! of the proxy needs what the tool answered — every content block, the
//! structured result, the tool's own `_meta` — as if the proxy were not
//! there. So each call's transport keeps the write tool's latest result,
//! typed as the upstream's session gave it, and the proxy hands that back
//! when the call succeeded on it: no JSON written and read back on the way.
//! A verification's read goes through the same transport to another tool
//! and is not kept.

use std::sync::{Arc, Mutex, PoisonError};

use recourse::Transport;
use recourse::transport::{BoxFuture, Delivery, Request};
use recourse_mcp::McpTransport;
use rmcp::model::CallToolResult;

/// One call's transport to its upstream.
pub(crate) struct Capture {
    upstream: Arc<McpTransport>,
    /// The tool's name on the upstream: only its answers are kept.
    tool: String,
    last: Mutex<Option<CallToolResult>>,
}

impl Capture {
    pub(crate) fn new(upstream: Arc<McpTransport>, tool: impl Into<String>) -> Self {
        Self {
            upstream,
            tool: tool.into(),
            last: Mutex::new(None),
        }
    }

    /// The tool's latest result, if its last exchange brought one.
    pub(crate) fn take(&self) -> Option<CallToolResult> {
        self.last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

impl Transport for Capture {
    fn send<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Delivery> {
        Box::pin(async move {
            let answer = self.upstream.call(request).await;
            if request.target.as_str() == self.tool {
                *self.last.lock().unwrap_or_else(PoisonError::into_inner) = answer.result;
            }
            answer.delivery
        })
    }

    fn enforces_timeout(&self) -> bool {
        self.upstream.enforces_timeout()
    }
}
