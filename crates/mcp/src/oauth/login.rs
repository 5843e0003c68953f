//! [`Login`]: OAuth 2.1 with PKCE, as the MCP authorization specification
//! has a client do it — discovery from the server's `401`, registration,
//! the user's consent in a browser, the code exchanged on a loopback
//! redirect, the tokens kept.

use std::sync::Arc;
use std::time::Duration;

use recourse::tls::TlsProblem;
use recourse_protocol::mcp::McpError;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadataSource, AuthorizationRequest,
    AuthorizationSession,
};

use super::callback::{Browser, Callback, Redirected};
use super::client::OAuthHttp;
use crate::access::HttpAccess;
use crate::target::McpTarget;
use crate::tokens::TokenFile;

/// How long the user has to finish in the browser, unless told.
const DEFAULT_WAIT: Duration = Duration::from_secs(300);
/// How long the server may take to answer the first, unauthenticated request.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);
/// The name recourse registers under.
const CLIENT_NAME: &str = "recourse";

/// A login to one server: [`start`](Self::start) discovers its
/// authorization server and registers, [`PendingLogin::finish`] waits for
/// the user's consent and keeps the tokens.
///
/// ```no_run
/// use recourse_mcp::oauth::{Login, TokenStore};
/// use recourse_mcp::{HttpAccess, McpTarget};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let target = McpTarget::url("https://mcp.example.com/mcp")?;
/// let tokens = TokenStore::default_location()?.file_for("https://mcp.example.com/mcp");
/// let pending = Login::new(&target, &HttpAccess::default(), tokens)?.start().await?;
/// println!("open {}", pending.authorization_url());
/// let done = pending.finish().await?;
/// println!("tokens kept in {}", done.tokens.display());
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Login {
    url: String,
    shown: String,
    access: HttpAccess,
    tokens: TokenFile,
    client_metadata_url: Option<String>,
    client_id: Option<String>,
    wait: Duration,
}

impl Login {
    /// A login to `target`, reached with `access`'s headers, its tokens
    /// kept in `tokens`.
    ///
    /// # Errors
    /// `target` is not a URL.
    pub fn new(
        target: &McpTarget,
        access: &HttpAccess,
        tokens: TokenFile,
    ) -> Result<Self, McpError> {
        let McpTarget::Url(url) = target else {
            return Err(McpError::config(
                "a login is for a server reached over HTTP(S), not a command",
            ));
        };
        Ok(Self {
            url: url.clone(),
            shown: target.to_string(),
            access: access.clone(),
            tokens,
            client_metadata_url: None,
            client_id: None,
            wait: DEFAULT_WAIT,
        })
    }

    /// Identifies recourse by the client ID metadata document at `url`
    /// (an https URL you host), where the authorization server accepts one;
    /// otherwise recourse registers itself (dynamic client registration).
    #[must_use]
    pub fn with_client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// Uses a client ID registered with the authorization server beforehand.
    #[must_use]
    pub fn with_client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// How long the user has to finish in the browser (default 5 minutes).
    #[must_use]
    pub fn with_wait(mut self, wait: Duration) -> Self {
        self.wait = wait;
        self
    }

    /// Asks the server without a token, discovers its authorization server
    /// from the challenge (protected resource metadata, then authorization
    /// server metadata), registers recourse as a client (a client ID
    /// metadata document or dynamic registration, whichever the server
    /// offers), and makes the authorization URL: PKCE (S256), the resource
    /// indicator, a redirect to a loopback port now listening.
    ///
    /// # Errors
    /// The server cannot be reached (a TLS failure named), does not ask for
    /// a login, or publishes no OAuth metadata; registration is refused.
    pub async fn start(self) -> Result<PendingLogin, McpError> {
        let challenge = self.challenge().await?;
        let callback = Callback::bind().await?;
        let http = OAuthHttp::new()
            .map_err(|e| McpError::unreachable("the OAuth HTTP client").caused_by(e))?;
        let mut manager =
            AuthorizationManager::new_with_oauth_http_client(self.url.as_str(), Arc::new(http))
                .await
                .map_err(|e| self.failed("setting up OAuth", e))?;
        manager.set_credential_store(self.tokens.clone());
        let resolution = manager
            .resolve_metadata_from_challenge(Some(&challenge))
            .await
            .map_err(|e| self.failed("discovering its authorization server", e))?;
        if resolution.source == AuthorizationMetadataSource::LegacyEndpointFallback {
            return Err(McpError::config(format!(
                "{} asks for a login but publishes no OAuth metadata (protected resource or \
                 authorization server): recourse does not guess its endpoints",
                self.shown
            )));
        }
        manager.set_metadata(resolution.metadata);
        let mut request =
            AuthorizationRequest::new(callback.redirect_uri()).with_client_name(CLIENT_NAME);
        if let Some(url) = &self.client_metadata_url {
            request = request.with_client_metadata_url(url);
        }
        if let Some(id) = &self.client_id {
            request = request.with_preregistered_client(id);
        }
        let session = AuthorizationSession::new(manager, request)
            .await
            .map_err(|(_, e)| self.failed("registering with its authorization server", e))?;
        Ok(PendingLogin {
            session,
            callback,
            login: self,
        })
    }

    /// The server's `WWW-Authenticate` challenge to a request without a token.
    async fn challenge(&self) -> Result<String, McpError> {
        let client = recourse::tls::client_builder()
            .redirect(reqwest::redirect::Policy::none())
            .default_headers(self.access.headers().iter().map(|h| h.pair()).collect())
            .timeout(PROBE_TIMEOUT)
            .build()
            .map_err(|e| McpError::unreachable("the HTTP client").caused_by(e))?;
        let initialize = serde_json::json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")}
            }
        });
        let answer = client
            .post(&self.url)
            .header(http::header::ACCEPT, "application/json, text/event-stream")
            .json(&initialize)
            .send()
            .await
            .map_err(|e| match TlsProblem::of(&e) {
                Some(problem) => {
                    McpError::config(format!("TLS with {} failed: {problem}", self.shown))
                }
                None => McpError::unreachable(format!("{} cannot be reached", self.shown))
                    .caused_by(e.without_url()),
            })?;
        let status = answer.status();
        if status != reqwest::StatusCode::UNAUTHORIZED {
            return Err(McpError::config(if status.is_success() {
                format!(
                    "{} answered without asking for a login: there is nothing to log in to",
                    self.shown
                )
            } else {
                format!(
                    "{} answered HTTP {} rather than asking for a login (401)",
                    self.shown,
                    status.as_u16()
                )
            }));
        }
        answer
            .headers()
            .get(http::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .ok_or_else(|| {
                McpError::config(format!(
                    "{} answered 401 without a WWW-Authenticate challenge: it does not say \
                     where to log in",
                    self.shown
                ))
            })
    }

    /// `error`, met while `doing`, as this login's error: a TLS failure named.
    fn failed(&self, doing: &str, error: AuthError) -> McpError {
        match TlsProblem::of(&error) {
            Some(problem) => McpError::config(format!("{doing}: TLS failed: {problem}")),
            None => McpError::unreachable(format!("{}: {doing} failed", self.shown))
                .caused_by(Redacted(error.to_string())),
        }
    }
}

/// A login waiting for the user: open [`authorization_url`](Self::authorization_url)
/// in a browser, then [`finish`](Self::finish).
pub struct PendingLogin {
    session: AuthorizationSession,
    callback: Callback,
    login: Login,
}

impl std::fmt::Debug for PendingLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingLogin")
            .field("server", &self.login.shown)
            .field("redirect", &self.callback.redirect_uri())
            .finish_non_exhaustive()
    }
}

/// A login that is done.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoggedIn {
    /// The file the tokens are kept in.
    pub tokens: std::path::PathBuf,
    /// How long the access token lasts, when the server said.
    pub expires_in: Option<Duration>,
    /// Whether a refresh token came with it (the proxy renews the access
    /// token with it; without one, log in again when it expires).
    pub refreshable: bool,
}

impl PendingLogin {
    /// Where the user gives consent (open it in a browser).
    pub fn authorization_url(&self) -> &str {
        self.session.get_authorization_url()
    }

    /// Waits for the browser's redirect, exchanges its code for tokens
    /// (with the PKCE verifier and the resource indicator), and keeps them.
    ///
    /// # Errors
    /// The user took longer than the wait, the authorization server refused
    /// (`access_denied`, …), or the code exchange failed.
    pub async fn finish(self) -> Result<LoggedIn, McpError> {
        let waited = tokio::time::timeout(self.login.wait, self.callback.wait()).await;
        let (redirected, browser) = waited.map_err(|_| {
            McpError::config(format!(
                "no answer from the browser within {} s: run the login again",
                self.login.wait.as_secs()
            ))
        })??;
        let exchanged = match redirected {
            Redirected::Refused { error } => Err(McpError::config(format!(
                "the authorization server refused the login ({error})"
            ))),
            Redirected::Code {
                code,
                state,
                issuer,
            } => self
                .session
                .handle_callback_with_issuer(&code, &state, issuer.as_deref())
                .await
                .map_err(|e| self.login.failed("exchanging the code for tokens", e)),
        };
        tell(browser, exchanged.is_ok()).await;
        // Read as the token response's wire form (RFC 6749, section 5.1).
        let token = serde_json::to_value(exchanged?).unwrap_or_default();
        Ok(LoggedIn {
            tokens: self.login.tokens.path().to_owned(),
            expires_in: token["expires_in"].as_u64().map(Duration::from_secs),
            refreshable: token["refresh_token"].is_string(),
        })
    }
}

async fn tell(browser: Browser, done: bool) {
    browser.tell(done).await;
}

/// An OAuth error's text, redacted (a token endpoint's answer may quote
/// what it was sent).
#[derive(Debug)]
struct Redacted(String);

impl std::fmt::Display for Redacted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&recourse_protocol::redact(&self.0))
    }
}

impl std::error::Error for Redacted {}
