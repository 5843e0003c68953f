//! How recourse reads what an MCP server says over Streamable HTTP: a scripted
//! server written out by hand (`tests/support/http_server.rs`), so each test
//! controls the HTTP status, the session and the response stream rmcp's
//! client meets.

mod support;

use std::sync::Arc;
use std::time::Duration;

use recourse::record::WaitCause;
use recourse::transport::TransportFailureKind;
use recourse::{Action, StopReason};
use recourse_mcp::{McpTarget, McpTransport};
use recourse_protocol::ErrorCategory;
use support::http_server::McpHttpServer;
use support::{executor, prepared, run};

async fn scripted() -> (Arc<McpTransport>, McpHttpServer) {
    let server = McpHttpServer::start().await;
    let target = McpTarget::url(&server.url).unwrap();
    (Arc::new(McpTransport::new(target)), server)
}

#[tokio::test]
async fn a_write_the_server_committed_then_answered_internal_error_is_never_resent() {
    let (transport, server) = scripted().await;
    let report = run(&transport, "modify_user_address").await;
    assert_eq!(report.outcome.name(), "unknown", "{}", report.to_json());
    assert_eq!(report.outcome.exit_code(), 3);
    assert_eq!(report.attempts.len(), 1);
    assert_eq!(server.calls("modify_user_address"), 1);

    let report = run(&transport, "get_order").await;
    assert_eq!(report.outcome.name(), "succeeded", "idempotent: resent");
    assert_eq!(server.calls("get_order"), 2);
}

#[tokio::test]
async fn http_429_is_a_rate_limit_with_its_retry_after() {
    let (transport, server) = scripted().await;
    let report = run(&transport, "update_cart").await;
    assert_eq!(report.outcome.name(), "succeeded", "{}", report.to_json());
    let first = &report.attempts[0];
    assert_eq!(first.status, Some(429));
    assert_eq!(first.category, None, "the status routes; no body named one");
    assert_eq!(
        first.action,
        Action::RetrySame {
            wait: Duration::from_secs(2),
            cause: WaitCause::RetryAfter,
        }
    );
    assert_eq!(server.calls("update_cart"), 2);
}

#[tokio::test]
async fn http_503_is_a_service_error_with_its_retry_after_and_a_bare_502_leaves_a_write_unknown() {
    let (transport, server) = scripted().await;
    let report = run(&transport, "place_order").await;
    assert_eq!(report.outcome.name(), "succeeded", "{}", report.to_json());
    assert_eq!(report.attempts[0].status, Some(503));
    assert_eq!(
        report.attempts[0].action,
        Action::RetrySame {
            wait: Duration::from_secs(3),
            cause: WaitCause::RetryAfter,
        },
        "503 says the server did not do it, even for a write"
    );
    assert_eq!(server.calls("place_order"), 2);

    let report = run(&transport, "refund_payment").await;
    assert_eq!(report.outcome.name(), "unknown", "{}", report.to_json());
    assert_eq!(report.attempts[0].status, Some(502));
    assert_eq!(server.calls("refund_payment"), 1);
    assert_eq!(
        transport.sessions_started(),
        1,
        "an HTTP status keeps the session"
    );
}

/// The scenario of rmcp's made-up `-32603`: while a write waits for its
/// answer, the server forgets the session and another call on it gets a 404.
/// The other call did not run: it is sent again on a new session. The write
/// may have run: its outcome is unknown, and it is never resent.
#[tokio::test]
async fn a_write_whose_session_is_replaced_mid_call_is_never_resent() {
    let (transport, server) = scripted().await;
    let write = prepared(&transport, "slow_write").await;
    let lookup = prepared(&transport, "get_status").await;
    let writer = executor(Arc::clone(&transport), None);
    let writing = tokio::spawn(async move { writer.execute(write).await });
    server.committed.notified().await;

    let report = executor(Arc::clone(&transport), None).execute(lookup).await;
    assert_eq!(report.outcome.name(), "succeeded", "{}", report.to_json());
    let first = &report.attempts[0];
    let failure = first.transport_error.as_ref().expect("the 404");
    assert_eq!(failure.kind, TransportFailureKind::ConnectFailed);
    assert!(matches!(first.action, Action::RetrySame { .. }));
    assert_eq!(server.calls("get_status"), 1, "the 404 reached no tool");
    assert_eq!(report.attempts.len(), 2);
    assert_eq!(server.sessions(), 2, "the lookup started a new session");

    server.release.notify_one();
    let report = tokio::time::timeout(Duration::from_secs(30), writing)
        .await
        .expect("the write ends")
        .unwrap();
    assert_eq!(report.outcome.name(), "unknown", "{}", report.to_json());
    assert_eq!(report.outcome.exit_code(), 3);
    assert_eq!(report.outcome.reason(), Some(&StopReason::OutcomeUnknown));
    assert_eq!(report.attempts.len(), 1);
    let failure = report.attempts[0].transport_error.as_ref().unwrap();
    assert_eq!(failure.kind, TransportFailureKind::FailedAfterSend);
    assert_eq!(report.attempts[0].category, None::<ErrorCategory>);
    assert_eq!(server.calls("slow_write"), 1, "never resent");
}

#[tokio::test]
async fn a_redirect_is_never_followed_not_even_to_the_same_origin() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::http::{StatusCode, header};
    use axum::routing::post;

    // The server sends the session elsewhere on its own origin: off the
    // path the allowlist checked.
    let elsewhere = Arc::new(AtomicUsize::new(0));
    let hits = Arc::clone(&elsewhere);
    let app = axum::Router::new()
        .route(
            "/mcp",
            post(|| async {
                (
                    StatusCode::TEMPORARY_REDIRECT,
                    [(header::LOCATION, "/elsewhere/mcp")],
                )
            }),
        )
        .route(
            "/elsewhere/mcp",
            post(move || {
                hits.fetch_add(1, Ordering::SeqCst);
                async { StatusCode::INTERNAL_SERVER_ERROR }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });

    let target = McpTarget::url(&format!("http://{addr}/mcp")).unwrap();
    let transport = McpTransport::new(target);
    assert!(transport.tool("get_order").await.is_err());
    assert_eq!(
        elsewhere.load(Ordering::SeqCst),
        0,
        "the redirect was followed"
    );
}

/// A write refused with an OAuth challenge (401) took no effect: it stops at
/// once, for a login, and is never resent; the session is kept.
#[tokio::test]
async fn a_write_refused_for_a_login_stops_at_once_naming_the_fix() {
    let (transport, server) = scripted().await;
    let report = run(&transport, "locked_write").await;
    assert_eq!(report.outcome.name(), "failed", "{}", report.to_json());
    assert_eq!(report.outcome.reason(), Some(&StopReason::AuthRequired));
    assert_eq!(report.attempts.len(), 1, "never resent");
    let failure = report.attempts[0].transport_error.as_ref().unwrap();
    assert_eq!(failure.kind, TransportFailureKind::AuthRequired);
    assert!(
        failure.message.contains("recourse mcp login"),
        "{}",
        failure.message
    );
    let next = report.next();
    assert_eq!(next.step, recourse::record::NextStep::FixConfiguration);
    assert!(
        next.model_message.contains("recourse mcp login"),
        "{}",
        next.model_message
    );
    assert_eq!(server.calls("locked_write"), 1);
    assert_eq!(
        transport.sessions_started(),
        1,
        "a refused login keeps the session"
    );
}

/// A server that stopped listening refuses the connection: nothing was
/// sent, so even a write is sent again (and never left unknown).
#[tokio::test]
async fn a_refused_connection_sent_nothing_even_for_a_write() {
    let (transport, server) = scripted().await;
    let write = prepared(&transport, "update_cart").await;
    server.stop();
    let report = executor(Arc::clone(&transport), None).execute(write).await;
    assert_eq!(report.outcome.name(), "failed", "{}", report.to_json());
    assert_eq!(report.outcome.reason(), Some(&StopReason::RetriesExhausted));
    assert!(report.attempts.len() > 1, "resent: {}", report.to_json());
    for attempt in &report.attempts {
        let failure = attempt.transport_error.as_ref().unwrap();
        assert_eq!(
            failure.kind,
            TransportFailureKind::ConnectFailed,
            "{failure}"
        );
    }
    assert_eq!(server.calls("update_cart"), 0);
}
