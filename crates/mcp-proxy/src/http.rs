//! The proxy over Streamable HTTP: rmcp's server service mounted at `/mcp`
//! in an axum router, for clients that take a URL rather than a command —
//! behind the gateway's rule for who may call ([`router`]), and served with
//! the server limits of `recourse-tool` ([`serve_http`]).
//!
//! # Why rmcp's own host check is off
//!
//! rmcp's service refuses, by default, any `Host` but a loopback one — right
//! for a server without a token, wrong for one behind a token on a public
//! name. Who may call is the operator's rule, and the proxy applies the
//! gateway's ([`Access`]): a bearer token when one is set (required to bind
//! beyond loopback), else loopback `Host` names only. So
//! [`McpProxy::streamable_http_router`] checks neither, and [`router`] puts
//! the gateway's check in front of it.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::extract::Request;
use recourse_door::{Access, Caller};
use recourse_tool::ServerLimits;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::client::Client;
use crate::json_answer;
use crate::proxy::McpProxy;
use crate::session_end;
use crate::session_owners::{self, DEFAULT_MAX_SESSIONS, SessionOwners};
use recourse_door::Served;

/// The path the Streamable HTTP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

impl McpProxy {
    /// A router serving this proxy over Streamable HTTP at [`MCP_PATH`]:
    /// each client session talks to a clone of the proxy (one executor, one
    /// journal, one set of running calls for all). Sessions are kept in
    /// memory and end when `stop` is cancelled. Requests bodies are capped
    /// at `body_limit` bytes.
    ///
    /// It checks neither the `Host` nor a token: [`router`] puts the
    /// gateway's rule in front of it; a server of other rules puts its own.
    /// It keeps at most `max_sessions` sessions open (a new one past it is
    /// answered 503), each its opener's: a caller (the [`Caller`] a layer in
    /// front put on the request) naming another's session is answered 404;
    /// a present `Origin` of another site is refused (403).
    pub fn streamable_http_router(
        &self,
        stop: CancellationToken,
        body_limit: usize,
        max_sessions: usize,
    ) -> axum::Router {
        let proxy = self.clone();
        // Without a session (2026-07-28), rmcp answers a call with one JSON
        // body unless its handler notifies first; in a session it streams
        // every answer, which `json_answer` turns into one body where it can.
        let config = StreamableHttpServerConfig::default()
            .with_json_response(true)
            .disable_allowed_hosts()
            .with_max_request_body_bytes(body_limit)
            .with_cancellation_token(stop);
        let manager = Arc::<LocalSessionManager>::default();
        let owners = Arc::new(SessionOwners::new(Arc::clone(&manager), max_sessions));
        let service = StreamableHttpService::new(move || Ok(proxy.for_session()), manager, config);
        axum::Router::new()
            .nest_service(MCP_PATH, service)
            .layer(axum::middleware::from_fn(json_answer::as_json))
            .layer(axum::middleware::from_fn(session_end::no_content))
            .layer(axum::middleware::from_fn_with_state(
                owners,
                session_owners::guard,
            ))
    }

    /// Stops taking calls into account and waits, at most `grace`, for the
    /// calls that may write to end; how many were still running after it
    /// (each is in flight in the journal, settled once its lease expires).
    pub async fn finish_calls(&self, grace: Duration) -> usize {
        self.shared.door.finish_calls(grace).await
    }
}

/// The proxy over Streamable HTTP at [`MCP_PATH`], behind `access`: each
/// request needs a caller's `Authorization: Bearer` token when there are
/// callers (401 without), or names a loopback host when there are none
/// (403 `HOST_NOT_ALLOWED`), unless `access` serves any host. A named
/// caller's calls are its own: journaled under its name, its keys in its
/// own space ([`Client`]). Sessions end when `stop` is cancelled; request
/// bodies are capped at `recourse-tool`'s default.
///
/// ```no_run
/// use recourse::ExecutorConfig;
/// use recourse_door::Access;
/// use recourse_mcp::McpTarget;
/// use recourse_mcp_proxy::{McpProxy, Upstream, router};
/// use tokio_util::sync::CancellationToken;
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let time = Upstream::unnamed(McpTarget::command_line("uvx mcp-server-time")?);
/// let proxy = McpProxy::builder(ExecutorConfig::default()).upstream(time).connect().await?;
/// let access = Access::new(None, Some("a-long-operator-token"))?;
/// let app = router(&proxy, &access, CancellationToken::new());
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8790").await?;
/// axum::serve(listener, app).await?;
/// # Ok(()) }
/// ```
pub fn router(proxy: &McpProxy, access: &Access, stop: CancellationToken) -> axum::Router {
    router_with_sessions(proxy, access, stop, DEFAULT_MAX_SESSIONS)
}

/// [`router`], keeping at most `max_sessions` sessions open (`mcp proxy
/// --http --max-sessions`): a new session past it is answered 503 until
/// one ends or has been idle for five minutes.
pub fn router_with_sessions(
    proxy: &McpProxy,
    access: &Access,
    stop: CancellationToken,
    max_sessions: usize,
) -> axum::Router {
    let keys = access.key_scope();
    proxy
        .streamable_http_router(stop, recourse_tool::DEFAULT_BODY_LIMIT, max_sessions)
        // The caller the token names makes each call its own (journaled
        // under its name, its keys its own); the layer added last runs first.
        .layer(axum::middleware::map_request(
            move |mut request: Request| async move {
                let caller = request.extensions().get::<Arc<Caller>>().cloned();
                if let (Some(caller), Some(keys)) = (caller, keys) {
                    request
                        .extensions_mut()
                        .insert(Client::new(caller.name(), keys));
                }
                request
            },
        ))
        .layer(access.layer())
}

/// Serves `proxy` over Streamable HTTP ([`router_with_sessions`], at most
/// `max_sessions` open) on `listener`, within `limits`, until `shutdown` resolves; then takes no new call, ends the
/// open sessions, lets open requests finish within the limits' shutdown
/// grace, waits for the calls that may write ([`McpProxy::calls_grace`]),
/// and closes each upstream.
pub async fn serve_http(
    proxy: McpProxy,
    listener: TcpListener,
    access: &Access,
    limits: ServerLimits,
    max_sessions: usize,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Served {
    let stop = CancellationToken::new();
    let app = router_with_sessions(&proxy, access, stop.clone(), max_sessions);
    let stopping = proxy.clone();
    let stopped = recourse_tool::serve(listener, app)
        .with_limits(limits)
        .with_graceful_shutdown(async move {
            shutdown.await;
            stopping.shared.stopping.store(true, Ordering::SeqCst);
            // Open sessions end, so that their streams let the server stop.
            stop.cancel();
        })
        .await;
    Served::new(
        proxy.stop(proxy.calls_grace()).await,
        stopped.connections_cut(),
    )
}
