//! A session's OAuth client: the kept tokens, refreshed before they expire
//! and once when the server refuses one (rmcp's `AuthClient`).

use std::sync::Arc;

use recourse_protocol::mcp::McpError;
use rmcp::transport::auth::{AuthClient, AuthorizationManager};

use super::client::OAuthHttp;
use crate::access::OAuthLogin;
use crate::blocked::Blocked;
use crate::setup::SetupFailure;
use crate::target::McpTarget;

/// `client` carrying the tokens kept for `login` (the server at `url`,
/// shown as `shown`), or `None` when none are kept: the session then goes
/// without, and a server that asks for a login says so.
///
/// The authorization server's metadata is discovered again (the tokens'
/// resource and issuer are checked against it): tokens from an issuer the
/// server no longer names are dropped.
pub(crate) async fn authorized_client(
    url: &str,
    login: &OAuthLogin,
    client: reqwest::Client,
    shown: &McpTarget,
) -> Result<Option<AuthClient<reqwest::Client>>, SetupFailure> {
    if !login.tokens.exists() {
        return Ok(None);
    }
    let failed = |e: rmcp::transport::auth::AuthError| match Blocked::of_auth(&e) {
        Some(blocked) => {
            SetupFailure::configuration(blocked.kind(), blocked.sentence(shown, Some(login)))
        }
        None => SetupFailure::unreachable(
            McpError::unreachable(format!("{shown}: its OAuth metadata could not be read"))
                .caused_by(e),
        ),
    };
    let http = OAuthHttp::new().map_err(|e| {
        SetupFailure::unreachable(McpError::unreachable("the OAuth HTTP client").caused_by(e))
    })?;
    let mut manager = AuthorizationManager::new_with_oauth_http_client(url, Arc::new(http))
        .await
        .map_err(failed)?;
    manager.set_credential_store(login.tokens.clone());
    if manager.initialize_from_store().await.map_err(failed)? {
        Ok(Some(AuthClient::new(client, manager)))
    } else {
        Ok(None)
    }
}
