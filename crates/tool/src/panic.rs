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
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use recourse_protocol::ToolError;

use crate::result::ToolFailure;

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
        let route = Route::of(&request);
        match catch_unwind(AssertUnwindSafe(|| self.inner.call(request))) {
            Ok(future) => Caught::Running { future, route },
            Err(payload) => {
                log(&route, payload.as_ref());
                Caught::Panicked
            }
        }
    }
}

/// What a panic's log line names: the method and (the start of) the path.
///
/// Copied, not the request's `Uri`: that shares the connection's read buffer
/// and would hold it for as long as the handler runs.
#[derive(Debug)]
pub(crate) struct Route {
    method: Method,
    path: Box<str>,
}

/// The most of a path a panic's log line keeps.
const LOGGED_PATH: usize = 256;

impl Route {
    fn of(request: &Request) -> Route {
        let path = request.uri().path();
        let mut end = path.len().min(LOGGED_PATH);
        while !path.is_char_boundary(end) {
            end -= 1;
        }
        Route {
            method: request.method().clone(),
            path: path[..end].into(),
        }
    }
}

pin_project_lite::pin_project! {
    /// The rest of the stack's future, or the answer to its panic.
    #[project = CaughtProj]
    pub(crate) enum Caught<F> {
        Running { #[pin] future: F, route: Route },
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
            CaughtProj::Running { future, route } => {
                match catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
                    Ok(polled) => polled,
                    Err(payload) => {
                        log(route, payload.as_ref());
                        Poll::Ready(Ok(panic_failure().into_response()))
                    }
                }
            }
        }
    }
}

fn log(route: &Route, payload: &(dyn Any + Send)) {
    tracing::error!(
        route = format!("{} {}", route.method, route.path),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn request(path: &str) -> Request {
        Request::builder()
            .method(Method::POST)
            .uri(path)
            .body(axum::body::Body::empty())
            .unwrap()
    }

    #[test]
    fn a_route_is_the_method_and_the_path_without_the_query() {
        let route = Route::of(&request("/api/stock/quote?token=secret"));
        assert_eq!(route.method, Method::POST);
        assert_eq!(&*route.path, "/api/stock/quote");
    }

    /// Lets go of the request it is called with, as a handler that has read
    /// it does, and stays pending like a call still running.
    struct ReadsAndRuns;

    impl tower_service::Service<Request> for ReadsAndRuns {
        type Response = Response;
        type Error = std::convert::Infallible;
        type Future = std::future::Pending<Result<Response, Self::Error>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, request: Request) -> Self::Future {
            drop(request);
            std::future::pending()
        }
    }

    #[test]
    fn a_running_handler_does_not_hold_the_requests_read_buffer() {
        use tower_layer::Layer;
        use tower_service::Service;

        // hyper's request line and headers are slices of the connection's
        // read buffer; here, of `buffer`.
        let buffer = axum::body::Bytes::from(b"/api/stock/quote".to_vec());
        let uri = axum::http::Uri::from_maybe_shared(buffer.clone()).unwrap();
        let request = Request::builder()
            .uri(uri)
            .body(axum::body::Body::empty())
            .unwrap();
        assert!(!buffer.is_unique());
        let running = CatchPanicLayer.layer(ReadsAndRuns).call(request);
        assert!(
            buffer.is_unique(),
            "the layer holds the read buffer while the handler runs"
        );
        drop(running);
    }

    #[test]
    fn a_route_keeps_only_the_start_of_a_long_path() {
        let long = format!("/{}", "a".repeat(10_000));
        let route = Route::of(&request(&long));
        assert_eq!(route.path.len(), LOGGED_PATH);
        assert!(long.starts_with(&*route.path));
    }
}
