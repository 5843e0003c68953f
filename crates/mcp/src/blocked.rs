//! [`Blocked`]: a failure of a Streamable HTTP exchange that only a change
//! of configuration mends — a TLS handshake the server's certificate
//! fails, a login the server refuses — told apart by type, with the
//! sentence that names the fix.

use recourse::tls::TlsProblem;
use recourse::transport::TransportFailureKind;
use rmcp::transport::auth::AuthError;
use rmcp::transport::streamable_http_client::StreamableHttpError;

use crate::access::OAuthLogin;
use crate::target::McpTarget;

/// The error type of rmcp's Streamable HTTP transport over its reqwest client.
pub(crate) type HttpError = StreamableHttpError<reqwest::Error>;

/// What an HTTP failure says beyond "the exchange failed": that only a
/// change of configuration mends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Blocked {
    /// The TLS handshake failed.
    Tls(TlsProblem),
    /// The server refused the credentials (401) and no fresh token could
    /// be had: a login is needed.
    Login,
    /// The kept tokens cannot be used (the file unreadable, or readable by
    /// others): why, in the token store's words.
    Tokens(String),
}

impl Blocked {
    /// What `error` says, if it is one of these.
    pub(crate) fn of(error: &HttpError) -> Option<Self> {
        match error {
            StreamableHttpError::AuthRequired(_) => Some(Self::Login),
            StreamableHttpError::Auth(auth) => Self::of_auth(auth),
            StreamableHttpError::Client(client) => TlsProblem::of(client).map(Self::Tls),
            _ => None,
        }
    }

    /// What an OAuth error says, if it is one of these.
    pub(crate) fn of_auth(error: &AuthError) -> Option<Self> {
        match error {
            AuthError::AuthorizationRequired
            | AuthError::TokenRefreshRejected(_)
            | AuthError::TokenExpired => Some(Self::Login),
            AuthError::CredentialStoreError(why) => Some(Self::Tokens(why.clone())),
            other => TlsProblem::of(other).map(Self::Tls),
        }
    }

    /// The transport failure kind it is.
    pub(crate) fn kind(&self) -> TransportFailureKind {
        match self {
            Self::Tls(_) => TransportFailureKind::TlsFailed,
            Self::Login | Self::Tokens(_) => TransportFailureKind::AuthRequired,
        }
    }

    /// The sentence that says what happened and what to do, for `shown`.
    pub(crate) fn sentence(&self, shown: &McpTarget, login: Option<&OAuthLogin>) -> String {
        match self {
            Self::Tls(problem) => format!("TLS with {shown} failed: {problem}; nothing was sent"),
            Self::Login => needs_login(shown, login),
            Self::Tokens(why) => match login {
                Some(login) => format!(
                    "{shown}: the kept login cannot be used ({why}): {}",
                    login.fix()
                ),
                None => format!("{shown}: the kept login cannot be used ({why})"),
            },
        }
    }
}

/// "… needs a login: run `recourse mcp login NAME=URL`".
pub(crate) fn needs_login(shown: &McpTarget, login: Option<&OAuthLogin>) -> String {
    match login {
        Some(login) => format!(
            "{shown} needs a login (it refused the request, and no token it accepts is kept): {}",
            login.fix()
        ),
        None => format!(
            "{shown} asks for a login (HTTP 401): send its credentials in a header, or log in \
             with `recourse mcp login NAME={shown}` and reach it through `recourse mcp proxy`"
        ),
    }
}
