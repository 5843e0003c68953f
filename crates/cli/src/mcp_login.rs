//! `recourse mcp login NAME=URL` and `recourse mcp logout NAME=URL`: an
//! upstream's OAuth login, kept for `recourse mcp proxy` (the flow is
//! `recourse_mcp::oauth`'s; this file parses flags and prints).

use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use recourse_mcp::McpTransport;
use recourse_mcp::oauth::{Login, TokenStore, open_in_browser};

use crate::mcp_access;

/// Arguments of `recourse mcp login`.
#[derive(Debug, Args)]
pub(crate) struct LoginArgs {
    /// The upstream, as `recourse mcp proxy --upstream` spells it: NAME=https://HOST/mcp.
    #[arg(value_name = "NAME=URL")]
    upstream: String,
    #[arg(long = "upstream-header", value_name = "NAME='Header: value'", help = mcp_access::HEADER_HELP)]
    headers: Vec<String>,
    /// Print the URL to open, and do not try to open a browser.
    #[arg(long)]
    no_browser: bool,
    /// How long to wait for the browser to come back, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=3600))]
    wait_secs: u64,
    /// A client ID registered with the authorization server beforehand (else recourse
    /// registers itself, where the server allows it).
    #[arg(long, value_name = "ID")]
    client_id: Option<String>,
    /// The https URL of a client ID metadata document you host, used where the authorization
    /// server accepts one.
    #[arg(long, value_name = "URL")]
    client_metadata_url: Option<String>,
}

/// Arguments of `recourse mcp logout`.
#[derive(Debug, Args)]
pub(crate) struct LogoutArgs {
    /// The upstream, as `recourse mcp login` was given it: NAME=https://HOST/mcp.
    #[arg(value_name = "NAME=URL")]
    upstream: String,
}

/// Logs in, keeps the tokens, and checks them with one session.
pub(crate) async fn login(args: &LoginArgs) -> Result<i32> {
    let upstream = mcp_access::one_url_upstream(&args.upstream)?;
    let upstream = mcp_access::with_access(vec![upstream], &args.headers)?
        .pop()
        .context("the upstream")?;
    let store = TokenStore::default_location()?;
    let recourse_mcp::McpTarget::Url(url) = upstream.target() else {
        unreachable!("one_url_upstream gives a URL");
    };
    let tokens = store.file_for(url);
    let mut login = Login::new(upstream.target(), upstream.access(), tokens)?
        .with_wait(Duration::from_secs(args.wait_secs));
    if let Some(id) = &args.client_id {
        login = login.with_client_id(id);
    }
    if let Some(url) = &args.client_metadata_url {
        login = login.with_client_metadata_url(url);
    }
    let pending = login
        .start()
        .await
        .with_context(|| format!("logging in to {upstream}"))?;
    let opened = !args.no_browser && open_in_browser(pending.authorization_url());
    let how = if opened {
        "a browser should open; if not, open"
    } else {
        "open"
    };
    eprintln!("recourse mcp login: to log in to {upstream}, {how} this URL:");
    outln!("{}", pending.authorization_url());
    let done = pending
        .finish()
        .await
        .with_context(|| format!("logging in to {upstream}"))?;
    let lasts = match (done.expires_in, done.refreshable) {
        (Some(d), true) => format!(
            "the access token lasts {} s and is renewed with a refresh token",
            d.as_secs()
        ),
        (Some(d), false) => format!(
            "the access token lasts {} s, with no refresh token: log in again then",
            d.as_secs()
        ),
        (None, _) => "the server did not say how long the access token lasts".to_owned(),
    };
    // The tokens work: a session with them lists the tools.
    let server =
        McpTransport::new(upstream.target().clone()).with_access(upstream.access().clone());
    let tools = server
        .tools()
        .await
        .with_context(|| format!("{upstream} with the new tokens"))?;
    eprintln!(
        "recourse mcp login: logged in to {upstream}: {} tool(s); tokens kept in {} (readable by \
         you only); {lasts}",
        tools.len(),
        done.tokens.display()
    );
    Ok(0)
}

/// Forgets the tokens kept for an upstream.
pub(crate) fn logout(args: &LogoutArgs) -> Result<i32> {
    let upstream = mcp_access::one_url_upstream(&args.upstream)?;
    let recourse_mcp::McpTarget::Url(url) = upstream.target() else {
        unreachable!("one_url_upstream gives a URL");
    };
    let tokens = TokenStore::default_location()?.file_for(url);
    if tokens.remove()? {
        eprintln!(
            "recourse mcp logout: removed {} ({upstream}); the tokens last at the provider until \
             they expire or are revoked there",
            tokens.path().display()
        );
    } else {
        eprintln!("recourse mcp logout: no login is kept for {upstream}");
    }
    Ok(0)
}
