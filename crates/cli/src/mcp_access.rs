//! What an HTTP upstream is reached with, from the flags: `--upstream-header
//! NAME='Header: value'` (a `${VARIABLE}` read now) and its OAuth login's
//! token file (`$XDG_STATE_HOME/recourse/oauth/`).

use anyhow::{Context, Result, anyhow, bail};
use recourse_mcp::oauth::{OAuthLogin, TokenStore};
use recourse_mcp::{HttpAccess, McpTarget, SecretHeader};
use recourse_mcp_proxy::Upstream;

/// `--upstream-header`'s help, shared by the commands that take it.
pub(crate) const HEADER_HELP: &str = "Send this header with every request to the upstream NAME, \
    given as NAME='Header: value'; ${VARIABLE} in the value is read from the environment at \
    start (unset or empty stops start-up). The value is shown nowhere. Repeatable.";

/// `upstreams`, each reached with the headers `flags` give it and, when
/// it is a URL, its OAuth login (the tokens `recourse mcp login` keeps for
/// its URL).
///
/// # Errors
/// A flag without `NAME=`, naming no upstream or a command, or a header
/// [`SecretHeader::parse`] refuses.
pub(crate) fn with_access(upstreams: Vec<Upstream>, flags: &[String]) -> Result<Vec<Upstream>> {
    let mut headers: Vec<(String, SecretHeader)> = Vec::with_capacity(flags.len());
    for flag in flags {
        let Some((named, line)) = flag.split_once('=') else {
            bail!("--upstream-header: give NAME='Header: value' (NAME is the upstream's)");
        };
        let Some(upstream) = upstreams.iter().find(|u| u.name() == Some(named)) else {
            bail!("--upstream-header {named}=…: no upstream is named {named:?}");
        };
        if !matches!(upstream.target(), McpTarget::Url(_)) {
            bail!(
                "--upstream-header {named}=…: {upstream} is a command; headers are for http(s) \
                 upstreams"
            );
        }
        let header = SecretHeader::parse(line, |variable| std::env::var(variable).ok())
            .with_context(|| format!("--upstream-header {named}=…"))?;
        headers.push((named.to_owned(), header));
    }
    // Without a place for tokens there is no login to use; a server that
    // asks for one then says so.
    let store = TokenStore::default_location().ok();
    Ok(upstreams
        .into_iter()
        .map(|upstream| {
            let mut access = HttpAccess::default();
            for (named, header) in &headers {
                if upstream.name() == Some(named.as_str()) {
                    access = access.with_header(header.clone());
                }
            }
            if let (McpTarget::Url(url), Some(login), Some(store)) =
                (upstream.target(), upstream.login_command(), &store)
            {
                access = access.with_oauth(OAuthLogin::new(store.file_for(url), login));
            }
            upstream.with_access(access)
        })
        .collect())
}

/// The one upstream `NAME=URL` names, for `recourse mcp login` and `logout`.
///
/// # Errors
/// Not `NAME=URL`, or a URL that is not http(s).
pub(crate) fn one_url_upstream(arg: &str) -> Result<Upstream> {
    let upstream = Upstream::parse(arg)?;
    if !matches!(upstream.target(), McpTarget::Url(_)) {
        return Err(anyhow!(
            "{arg:?}: give NAME=URL, the upstream as `recourse mcp proxy --upstream` spells it \
             (https://HOST/mcp)"
        ));
    }
    Ok(upstream)
}
