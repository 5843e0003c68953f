//! A Streamable HTTP session: its HTTP client (the process's trusted roots,
//! the server's headers, no redirect, no idle pool), its OAuth tokens when
//! it has a login, and what a failure of either is — read by type.

use recourse_protocol::mcp::McpError;
use rmcp::ServiceExt;
use rmcp::service::{ClientInitializeError, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use crate::access::{HttpAccess, OAuthLogin};
use crate::blocked::{Blocked, HttpError};
use crate::changes::Watcher;
use crate::oauth;
use crate::setup::SetupFailure;
use crate::target::McpTarget;

/// The most bytes of an MCP server's answer read (a JSON body or one SSE
/// event): what the HTTP transport reads of a tool's answer.
pub(crate) const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// Starts a session with the server at `url` (shown as `shown`), handled by `watcher`.
pub(crate) async fn start(
    watcher: Watcher,
    url: &str,
    access: &HttpAccess,
    shown: &McpTarget,
) -> Result<RunningService<RoleClient, Watcher>, SetupFailure> {
    let config = StreamableHttpClientTransportConfig::with_uri(url)
        .reinit_on_expired_session(false)
        .max_json_response_size(MAX_ANSWER_BYTES)
        .max_sse_event_size(MAX_ANSWER_BYTES);
    let client = http_client(access).map_err(SetupFailure::unreachable)?;
    let login = access.oauth_in_use();
    let authorized = match login {
        Some(login) => oauth::authorized_client(url, login, client.clone(), shown).await?,
        None => None,
    };
    let served = match authorized {
        Some(client) => {
            let transport = StreamableHttpClientTransport::with_client(client, config);
            watcher.serve(transport).await
        }
        None => {
            let transport = StreamableHttpClientTransport::with_client(client, config);
            watcher.serve(transport).await
        }
    };
    served.map_err(|e| start_failed(&e, shown, login))
}

/// The HTTP client of a session: the process's trusted roots, the
/// server's headers on every request, no idle pool (as rmcp's own), and no
/// redirect followed — not even rmcp's same-origin ones: a redirect could
/// lead a write off the allowlisted path it was checked for.
fn http_client(access: &HttpAccess) -> Result<reqwest::Client, McpError> {
    let headers: http::HeaderMap = access.headers().iter().map(|h| h.pair()).collect();
    recourse::tls::client_builder()
        .pool_max_idle_per_host(0)
        .redirect(reqwest::redirect::Policy::none())
        .default_headers(headers)
        .build()
        .map_err(|e| McpError::unreachable("could not build the HTTP client").caused_by(e))
}

/// What a session that did not start failed with.
fn start_failed(
    error: &ClientInitializeError,
    shown: &McpTarget,
    login: Option<&OAuthLogin>,
) -> SetupFailure {
    let blocked = match error {
        ClientInitializeError::TransportError { error, .. } => error
            .error
            .downcast_ref::<HttpError>()
            .and_then(Blocked::of),
        _ => None,
    };
    match blocked {
        Some(blocked) => {
            SetupFailure::configuration(blocked.kind(), blocked.sentence(shown, login))
        }
        None => SetupFailure::unreachable(McpError::unreachable(format!(
            "{shown}: the MCP handshake failed: {error}"
        ))),
    }
}
