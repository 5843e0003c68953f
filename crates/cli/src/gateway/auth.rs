//! The gateway's bearer token, checked before any route runs.
//!
//! A tower layer of its own rather than `axum::middleware::from_fn`: the
//! check is synchronous, so a request either goes on to the router untouched
//! (no clone of the stack, no boxed future) or is answered at once.

use std::future::{Ready, ready};
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::http::header::AUTHORIZATION;
use axum::response::{IntoResponse, Response};
use futures_util::future::Either;
use recourse_tool::ToolFailure;
use recourse_tool::protocol::ToolError;

use super::guard::token_matches;

/// Paths a load balancer asks without a token: status words only.
const OPEN_PATHS: [&str; 2] = ["/healthz", "/readyz"];

/// Refuses, with a 401 envelope, a request without the expected
/// `Authorization: Bearer <token>` — every path but [`OPEN_PATHS`]. With no
/// token configured, everything passes.
#[derive(Debug, Clone)]
pub(super) struct AuthorizeLayer {
    token: Option<Arc<str>>,
}

impl AuthorizeLayer {
    pub(super) fn new(token: Option<&str>) -> Self {
        Self {
            token: token.map(Arc::from),
        }
    }
}

impl<S> tower_layer::Layer<S> for AuthorizeLayer {
    type Service = Authorize<S>;

    fn layer(&self, inner: S) -> Authorize<S> {
        Authorize {
            token: self.token.clone(),
            inner,
        }
    }
}

/// See [`AuthorizeLayer`].
#[derive(Debug, Clone)]
pub(super) struct Authorize<S> {
    token: Option<Arc<str>>,
    inner: S,
}

impl<S> tower_service::Service<Request> for Authorize<S>
where
    S: tower_service::Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Either<Ready<Result<Response, S::Error>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        if let Some(expected) = self
            .token
            .as_deref()
            .filter(|_| !OPEN_PATHS.contains(&request.uri().path()))
        {
            let presented = request
                .headers()
                .get(AUTHORIZATION)
                .and_then(|v| v.to_str().ok());
            if !token_matches(presented, expected) {
                let error = ToolError::auth_error(
                    "UNAUTHORIZED",
                    "this gateway requires 'Authorization: Bearer <token>'",
                );
                return Either::Left(ready(Ok(ToolFailure::from(error).into_response())));
            }
        }
        Either::Right(self.inner.call(request))
    }
}
