//! OAuth 2.1 for remote MCP servers, as the MCP authorization specification
//! describes it for clients: a [`Login`] once, in the user's browser, and
//! tokens kept ([`TokenStore`]) that every session after it uses — renewed
//! before they expire, and once when the server refuses one.
//!
//! ```no_run
//! use recourse_mcp::oauth::{Login, OAuthLogin, TokenStore, open_in_browser};
//! use recourse_mcp::{HttpAccess, McpTarget, McpTransport};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let url = "https://mcp.example.com/mcp";
//! let target = McpTarget::url(url)?;
//! let tokens = TokenStore::default_location()?.file_for(url);
//! // Once: the user logs in.
//! let pending = Login::new(&target, &HttpAccess::default(), tokens.clone())?.start().await?;
//! if !open_in_browser(pending.authorization_url()) {
//!     println!("open {}", pending.authorization_url());
//! }
//! pending.finish().await?;
//! // Every session after: the kept tokens.
//! let access = HttpAccess::default().with_oauth(OAuthLogin::new(tokens, "recourse mcp login x=…"));
//! let server = McpTransport::new(target).with_access(access);
//! println!("{} tools", server.tools().await?.len());
//! # Ok(()) }
//! ```
//!
//! # What is rmcp's and what is ours
//!
//! The protocol is rmcp's (its `auth` feature): discovery from the
//! server's `WWW-Authenticate` challenge through protected resource and
//! authorization server metadata, client registration (a client ID
//! metadata document or dynamic registration, whichever the server
//! offers), authorization code with PKCE and the resource indicator, and
//! on every request a bearer token, refreshed before it expires and once
//! after a `401` before the request is sent again. Ours: where tokens live
//! (a file per server URL, `0600`, written whole), the HTTP client of the
//! OAuth exchanges (the process's trusted roots, bounded answers,
//! redirects only within one origin), the loopback redirect the browser
//! comes back to, and what a failure means for a call — read by type.
//!
//! Where rmcp falls short, and what recourse does about it:
//!
//! - Expiry is judged on the wall clock (`SystemTime`), inside rmcp: not
//!   on recourse's injected clock, so a test of "refresh before expiry"
//!   ages the kept token instead of the clock.
//! - A refresh that fails for a transport reason comes back as text
//!   (`TokenRefreshFailed(String)`): a TLS failure reaching the token
//!   endpoint is then a failure that may pass (resent for a read), not a
//!   named TLS failure.
//! - No revocation (RFC 7009): logging out forgets the tokens here; they
//!   last at the provider until they expire or are revoked there.
//! - Two processes refreshing one file are not coordinated (rmcp offers a
//!   guard; a file lock across processes is not written here): with a
//!   server that rotates refresh tokens, one of two proxies sharing a login
//!   may have to log in again.
//!
//! # Why a refused login is a stop, and a 401 may be resent once
//!
//! A `401` is a refusal before any effect: the server did nothing. So a
//! request refused for an expired token is sent again once, with the token
//! the refresh gave (rmcp does it, below the executor): nothing else
//! changes in what may be resent. When no fresh token can be had (the
//! refresh token refused or revoked, none kept), the call stops at once
//! ([`TransportFailureKind::AuthRequired`](recourse::transport::TransportFailureKind::AuthRequired)),
//! naming the command that logs in again.

mod browser;
mod callback;
mod client;
mod login;
mod session;

pub use crate::access::OAuthLogin;
pub use crate::tokens::{TokenFile, TokenStore};
pub use browser::open_in_browser;
pub use login::{LoggedIn, Login, PendingLogin};
pub(crate) use session::authorized_client;
