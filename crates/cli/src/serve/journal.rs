//! The gateway's journal: where it lives by default, and how long it keeps
//! finished calls.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use recourse::Journal;
use recourse::journal::open_journal;

/// The gateway's journal flags.
#[derive(Debug, Args)]
pub(crate) struct JournalArgs {
    /// Where keyed and non-idempotent calls are journaled: a SQLite path, a postgres:// URL,
    /// or `none` (then requests with an idempotency_key are refused) [env: RECOURSE_JOURNAL]
    /// [default: $XDG_STATE_HOME/recourse/gateway.db].
    #[arg(long, value_name = "PATH|URL|none", value_parser = crate::settings::location)]
    journal: Option<String>,
    /// Remove finished calls (succeeded or failed; never in flight or unknown) last changed
    /// longer ago than this, in the background: an integer with s, m, h or d; 0 keeps
    /// everything. A removed call's idempotency key starts a new call.
    #[arg(long = "journal-retain", value_name = "DURATION", default_value = "7d",
          value_parser = crate::journal::duration)]
    pub(crate) retain: Duration,
    /// A header every lookup and verification read that settles a journaled call sends,
    /// 'Name: value' (the credentials they need: the journal keeps a lookup template's
    /// `?token=` redacted). Repeatable.
    #[arg(long = "reconcile-header", value_name = "'K: V'")]
    pub(crate) reconcile_headers: Vec<String>,
}

impl JournalArgs {
    /// The location the flag gives, if it gives one.
    pub(crate) fn location(&self) -> Option<&str> {
        self.journal.as_deref()
    }
}

/// The journal location that turns journaling off.
pub(crate) const NONE: &str = "none";

/// Opens the gateway's journal: `location` (a SQLite path or `postgres://…`),
/// `none` for no journal, or by default `$XDG_STATE_HOME/recourse/gateway.db`
/// (`~/.local/state/recourse/gateway.db` without `XDG_STATE_HOME`), and says
/// where on stderr.
pub(crate) async fn open(location: Option<&str>) -> Result<Option<Arc<dyn Journal>>> {
    let journal = open_named(location, "gateway.db", "the gateway's journal").await?;
    Ok(journal.map(|(journal, shown)| {
        eprintln!("journal: {shown}");
        journal
    }))
}

/// Opens `what` as [`open`] does, its default file named `file` in the same
/// directory; with where it is, as shown (a password redacted).
pub(crate) async fn open_named(
    location: Option<&str>,
    file: &str,
    what: &str,
) -> Result<Option<(Arc<dyn Journal>, String)>> {
    let location = match location {
        Some(NONE) => return Ok(None),
        Some(location) => location.to_owned(),
        None => default_location(file)?,
    };
    // A PostgreSQL URL may hold a password: it never reaches the terminal.
    let shown = recourse_protocol::redact(&location);
    let journal = open_journal(&location)
        .await
        .with_context(|| format!("opening {what} at {shown}"))?;
    Ok(Some((journal, shown)))
}

fn default_location(file: &str) -> Result<String> {
    let dir = crate::journal::places::state_dir()?;
    create_private_dir(&dir)
        .with_context(|| format!("creating the journal's directory {}", dir.display()))?;
    Ok(dir.join(file).display().to_string())
}

#[cfg(unix)]
fn create_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}
