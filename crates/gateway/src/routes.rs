//! The routes, and the handlers that are not a concept of their own:
//! `POST /v1/calls` hands over to [`keyed`](crate::keyed), `/metrics`
//! renders the registry.

use std::sync::Arc;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use recourse::metrics::Metrics;
use recourse_tool::{ToolJsonBody, ToolServer};

use crate::gateway::Gateway;
use crate::{approvals, console, keyed, openapi, records};
use recourse_door::Caller;

/// The largest request body the gateway reads.
const BODY_LIMIT: usize = 1024 * 1024;

/// The gateway's routes, as an axum [`Router`]: `POST /v1/calls`,
/// `GET /v1/calls`, `GET /v1/calls/{call_id}`,
/// `POST /v1/calls/{call_id}/reconcile`, `POST /v1/calls/{call_id}/settle`,
/// `POST /v1/approvals/{approval_id}`, `/healthz`, `/readyz`, `/metrics`
/// and `/openapi.json` — behind the gateway's token (all but the health
/// routes) or, without one, for loopback `Host` names only, and a 1 MiB
/// body limit, every refusal an envelope — and the console's HTML pages
/// under `/console`, behind a login with the same tokens.
///
/// ```
/// use std::sync::Arc;
/// use axum::body::Body;
/// use axum::http::Request;
/// use recourse::ExecutorConfig;
/// use recourse_gateway::{GatewayConfig, router};
/// use tower::ServiceExt;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let gateway = Arc::new(GatewayConfig::new(ExecutorConfig::default()).build().unwrap());
/// let answer = router(gateway)
///     .oneshot(Request::get("/healthz").body(Body::empty()).unwrap())
///     .await
///     .unwrap();
/// assert_eq!(answer.status(), 200);
/// # });
/// ```
pub fn router(gateway: Arc<Gateway>) -> Router {
    let mut server = ToolServer::<Arc<Gateway>>::new();
    for (path, route) in console::routes() {
        server = server.route(path, route);
    }
    server
        .route("/v1/calls", post(calls).get(records::list))
        .route("/v1/calls/{call_id}", get(records::one))
        .route("/v1/calls/{call_id}/reconcile", post(records::reconcile))
        .route("/v1/calls/{call_id}/settle", post(records::settle))
        .route("/v1/approvals", get(approvals::list))
        .route(
            "/v1/approvals/{approval_id}",
            post(approvals::decide_one).get(approvals::show),
        )
        .route(
            "/healthz",
            get(|State(g): State<Arc<Gateway>>| async move { g.readiness.healthz() }),
        )
        .route(
            "/readyz",
            get(|State(g): State<Arc<Gateway>>| async move { g.readiness.readyz().await }),
        )
        .route("/metrics", get(metrics))
        .route("/openapi.json", get(|| async { Json(openapi::document()) }))
        .with_body_limit(BODY_LIMIT)
        .into_router_with(recourse_door::authorize(
            gateway.callers.known.clone(),
            gateway.callers.loopback_hosts_only,
            Some(crate::console::ROOT),
        ))
        .with_state(gateway)
}

async fn calls(
    State(g): State<Arc<Gateway>>,
    Extension(caller): Extension<Arc<Caller>>,
    headers: HeaderMap,
    ToolJsonBody(body): ToolJsonBody,
) -> Response {
    keyed::call(&g, &caller, headers, body).await
}

/// The metrics, the breakers only of the endpoints the caller called (an
/// admin's: all).
async fn metrics(
    State(g): State<Arc<Gateway>>,
    Extension(caller): Extension<Arc<Caller>>,
) -> Response {
    let mut text = g.metrics.render_seen(
        g.executor.retry_budget().map(AsRef::as_ref),
        g.executor.circuit_breakers().map(AsRef::as_ref),
        &|endpoint| g.sees_endpoint(&caller, endpoint),
    );
    if let Some(shared) = g.executor.shared_state() {
        text.push_str(&Metrics::render_shared_state(shared.mode()));
    }
    ([(CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Bytes;

    /// axum moves each request's future into a box of its own, a copy of
    /// the whole future per request: the large parts of a call (the run,
    /// holding a call for approval) are boxed where they are made, so the
    /// request's future stays small. Before, it was 8.8 KB here (the
    /// approval's future and the run's, inline).
    #[tokio::test]
    async fn a_requests_future_stays_small() {
        let gateway = crate::GatewayConfig::new(recourse::ExecutorConfig::default())
            .build()
            .unwrap();
        let handler = calls(
            State(Arc::new(gateway)),
            Extension(Arc::new(Caller::default_caller())),
            HeaderMap::new(),
            ToolJsonBody(Bytes::from_static(b"{}")),
        );
        let size = std::mem::size_of_val(&handler);
        assert!(size <= 4096, "a request's future is {size} bytes");
    }
}
