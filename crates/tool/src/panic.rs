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
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::http::{Method, Uri};
use axum::response::{IntoResponse, Response};
use recourse_protocol::ToolError;

use crate::ToolFailure;

/// Catches a panic of the rest of the stack — while it is called or while
/// its future is polled — and answers it as a 500 envelope. A layer of its
/// own rather than `axum::middleware::from_fn`: no clone of the
/// stack, no boxed future, and the route is formatted only for a panic.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CatchPanicLayer;

impl<S> tower_layer::Layer<S> for CatchPanicLayer {
    type Service = CatchPanic<S>;

    fn layer(&self, inner: S) -> CatchPanic<S> {
        CatchPanic { inner }
    }
}

/// See [`CatchPanicLayer`].
#[derive(Debug, Clone)]
pub(crate) struct CatchPanic<S> {
    inner: S,
}

impl<S> tower_service::Service<Request> for CatchPanic<S>
where
    S: tower_service::Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Caught<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let method = request.method().clone();
        let uri = request.uri().clone();
        match catch_unwind(AssertUnwindSafe(|| self.inner.call(request))) {
            Ok(future) => Caught::Running {
                future,
                method,
                uri,
            },
            Err(payload) => {
                log(&method, &uri, payload.as_ref());
                Caught::Panicked
            }
        }
    }
}

pin_project_lite::pin_project! {
    /// The rest of the stack's future, or the answer to its panic.
    #[project = CaughtProj]
    pub(crate) enum Caught<F> {
        Running { #[pin] future: F, method: Method, uri: Uri },
        Panicked,
    }
}

impl<F, E> Future for Caught<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            CaughtProj::Panicked => Poll::Ready(Ok(panic_failure().into_response())),
            CaughtProj::Running {
                future,
                method,
                uri,
            } => match catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
                Ok(polled) => polled,
                Err(payload) => {
                    log(method, uri, payload.as_ref());
                    Poll::Ready(Ok(panic_failure().into_response()))
                }
            },
        }
    }
}

fn log(method: &Method, uri: &Uri, payload: &(dyn Any + Send)) {
    tracing::error!(
        route = format!("{method} {}", uri.path()),
        panic = panic_message(payload),
        "tool handler panicked"
    );
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
