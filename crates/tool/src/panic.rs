//! Catching handler panics so they become envelopes, not dropped connections.
//!
//! hyper already keeps the *process* alive when a handler panics: the task
//! serving that connection dies and the client sees the connection close
//! with no reply — which an agent must treat as an unknown outcome. A tool
//! can do better: the panic is caught around the handler's future and
//! answered as a 500 `SERVICE_ERROR` envelope, `retryable: false` (a panic on
//! this input will likely recur). The panic message is logged, never sent:
//! it is a raw diagnostic and may hold anything.

use std::any::Any;
use std::panic::AssertUnwindSafe;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::FutureExt;
use recourse_protocol::ToolError;

use crate::ToolFailure;

/// Runs the rest of the stack, turning a panic into a 500 envelope.
pub(crate) async fn catch_panic(request: Request, next: Next) -> Response {
    let route = format!("{} {}", request.method(), request.uri().path());
    match AssertUnwindSafe(next.run(request)).catch_unwind().await {
        Ok(response) => response,
        Err(payload) => {
            tracing::error!(
                route,
                panic = panic_message(payload.as_ref()),
                "tool handler panicked"
            );
            panic_failure().into_response()
        }
    }
}

/// The failure a caught panic is reported as.
pub(crate) fn panic_failure() -> ToolFailure {
    ToolFailure::from(ToolError::service_error(
        "INTERNAL_ERROR",
        "The tool failed unexpectedly while handling this request",
    ))
    .with_status(500)
}

fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "(non-string panic payload)"
    }
}
