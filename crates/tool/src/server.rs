//! `ToolServer`: an axum router that only ever answers in envelopes.
//!
//! Registering operations through the builder does three things at once: it
//! routes the handler, records the operation in the capability manifest
//! (`GET /api/capabilities`), and wraps the whole router so that the paths a
//! handler never sees — an unknown route, a wrong method, a body over the
//! limit, a panic — are envelopes too.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::handler::Handler;
use axum::http::Method;
use axum::response::Response;
use axum::routing::{MethodFilter, MethodRouter, Route, get, on};
use recourse_protocol::ToolError;
use serde_json::json;
use tower_layer::{Identity, Layer};
use tower_service::Service;

use crate::capability::Capability;
use crate::panic::CatchPanicLayer;
use crate::result::{Success, ToolFailure};

/// The path of the capability manifest.
pub const CAPABILITIES_PATH: &str = "/api/capabilities";

/// The default request body limit: 2 MiB, like axum's.
pub const DEFAULT_BODY_LIMIT: usize = 2 * 1024 * 1024;

/// Builds a tool's router: operations, the manifest, and envelope fallbacks.
///
/// See the [crate docs](crate) for a complete tool.
#[derive(Debug)]
pub struct ToolServer<S = ()> {
    router: Router<S>,
    capabilities: Vec<Capability>,
    body_limit: usize,
}

impl<S: Clone + Send + Sync + 'static> Default for ToolServer<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: Clone + Send + Sync + 'static> ToolServer<S> {
    /// An empty server with the default body limit.
    pub fn new() -> Self {
        Self {
            router: Router::new(),
            capabilities: Vec::new(),
            body_limit: DEFAULT_BODY_LIMIT,
        }
    }

    /// Routes `handler` at the capability's method and endpoint, and lists the
    /// capability in the manifest.
    ///
    /// # Panics
    ///
    /// Like [`Router::route`]: if the endpoint is not a valid route path or is
    /// already routed for this method, or if the capability's method is not
    /// one axum can route.
    #[must_use]
    pub fn tool<H, T>(mut self, capability: Capability, handler: H) -> Self
    where
        H: Handler<T, S>,
        T: 'static,
    {
        let filter = capability
            .http_method()
            .and_then(|m| MethodFilter::try_from(m).ok())
            .unwrap_or_else(|| panic!("cannot route method {:?}", capability.method));
        self.router = self.router.route(&capability.endpoint, on(filter, handler));
        self.capabilities.push(capability);
        self
    }

    /// Routes a helper endpoint that is not an operation of its own (a
    /// reconcile lookup, say): it is served but not listed in the manifest.
    ///
    /// # Panics
    ///
    /// Like [`Router::route`].
    #[must_use]
    pub fn route(mut self, path: &str, method_router: MethodRouter<S>) -> Self {
        self.router = self.router.route(path, method_router);
        self
    }

    /// Sets the largest request body accepted, in bytes; larger ones are
    /// answered 413 by [`ToolJson`](crate::extract::ToolJson).
    #[must_use]
    pub fn with_body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// The operations registered so far.
    pub fn capabilities(&self) -> &[Capability] {
        &self.capabilities
    }

    /// The finished router: operations, `GET /api/capabilities`, envelope
    /// answers for unknown routes (404) and wrong methods (405), the body
    /// limit, and panic catching around everything.
    pub fn into_router(self) -> Router<S> {
        self.into_router_with(Identity::new())
    }

    /// [`into_router`](Self::into_router) with `layer` around every route,
    /// inside the panic catching and the body limit: an authentication check,
    /// say, which then answers a panic with an envelope too.
    ///
    /// Prefer this to [`Router::layer`] on the finished router: axum boxes
    /// each route once per `layer` call, and every request pays for each box
    /// (a clone of the service and a boxed future); here the server's layers
    /// and `layer` are one stack.
    ///
    /// ```
    /// use axum::extract::Request;
    /// use axum::http::HeaderValue;
    /// use axum::middleware::{self, Next};
    /// use axum::response::Response;
    /// use axum::routing::get;
    /// use recourse_tool::ToolServer;
    ///
    /// async fn served_by(request: Request, next: Next) -> Response {
    ///     let mut response = next.run(request).await;
    ///     let name = HeaderValue::from_static("hello-tool");
    ///     response.headers_mut().insert("x-served-by", name);
    ///     response
    /// }
    ///
    /// let app: axum::Router = ToolServer::new()
    ///     .route("/hello", get(|| async { "hello" }))
    ///     .into_router_with(middleware::from_fn(served_by));
    /// ```
    pub fn into_router_with<L>(self, layer: L) -> Router<S>
    where
        L: Layer<Route> + Clone + Send + Sync + 'static,
        L::Service: Service<Request, Response = Response, Error = Infallible>
            + Clone
            + Send
            + Sync
            + 'static,
        <L::Service as Service<Request>>::Future: Send + 'static,
    {
        let manifest = Arc::new(json!({ "capabilities": self.capabilities }));
        self.router
            .route(
                CAPABILITIES_PATH,
                get(move || {
                    let manifest = Arc::clone(&manifest);
                    async move { Success(manifest.as_ref().clone()) }
                }),
            )
            .fallback(route_not_found)
            .method_not_allowed_fallback(method_not_allowed)
            // One stack, outermost first: one box per route, not one per layer.
            .layer((
                CatchPanicLayer,
                DefaultBodyLimit::max(self.body_limit),
                layer,
            ))
    }
}

async fn route_not_found(request: Request) -> ToolFailure {
    ToolError::not_found(
        "ROUTE_NOT_FOUND",
        format!(
            "This tool has no route {} {}",
            request.method(),
            request.uri().path()
        ),
    )
    .detail("capabilities", CAPABILITIES_PATH)
    .into()
}

async fn method_not_allowed(method: Method) -> ToolFailure {
    ToolFailure::from(
        ToolError::input_error(
            "METHOD_NOT_ALLOWED",
            format!("This route does not accept {method}"),
        )
        .detail("capabilities", CAPABILITIES_PATH),
    )
    .with_status(405)
}
