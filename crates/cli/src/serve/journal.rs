//! The gateway's journal: where it lives by default.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use recourse::Journal;
use recourse::journal::open_journal;

/// The journal location that turns journaling off.
pub(crate) const NONE: &str = "none";

/// Opens the gateway's journal: `location` (a SQLite path or `postgres://…`),
/// `none` for no journal, or by default `$XDG_STATE_HOME/recourse/gateway.db`
/// (`~/.local/state/recourse/gateway.db` without `XDG_STATE_HOME`).
pub(crate) async fn open(location: Option<&str>) -> Result<Option<Arc<dyn Journal>>> {
    let location = match location {
        Some(NONE) => return Ok(None),
        Some(location) => location.to_owned(),
        None => default_location()?,
    };
    // A PostgreSQL URL may hold a password: it never reaches the terminal.
    let journal = open_journal(&location).await.with_context(|| {
        format!(
            "opening the gateway's journal at {}",
            recourse_protocol::redact(&location)
        )
    })?;
    Ok(Some(journal))
}

fn default_location() -> Result<String> {
    let state = match (std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME")) {
        (Some(dir), _) if !dir.is_empty() => PathBuf::from(dir),
        (_, Some(home)) if !home.is_empty() => PathBuf::from(home).join(".local/state"),
        _ => {
            bail!("neither XDG_STATE_HOME nor HOME is set: give --journal PATH (or --journal none)")
        }
    };
    let dir = state.join("recourse");
    create_private_dir(&dir)
        .with_context(|| format!("creating the journal's directory {}", dir.display()))?;
    Ok(dir.join("gateway.db").display().to_string())
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
