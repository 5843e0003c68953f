//! A session's `DELETE`, answered `204 No Content`.
//!
//! # Why
//!
//! A Streamable HTTP client ends its session with `DELETE /mcp`. rmcp's
//! service answers it `202 Accepted`, which the MCP SDKs do not take for a
//! success: the Python SDK logs `Session termination failed: 202` on every
//! close. The session is closed by then, so the proxy says so: `204`, no
//! body. Any other answer (no session named, an unknown one) is rmcp's.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;

/// The layer (`axum::middleware::from_fn`): a `DELETE` rmcp accepted
/// becomes `204 No Content`.
pub(crate) async fn no_content(request: Request, next: Next) -> Response {
    let delete = request.method() == Method::DELETE;
    let response = next.run(request).await;
    if !delete || response.status() != StatusCode::ACCEPTED {
        return response;
    }
    let (mut parts, _) = response.into_parts();
    parts.status = StatusCode::NO_CONTENT;
    parts.headers.remove(axum::http::header::CONTENT_TYPE);
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::empty())
}
