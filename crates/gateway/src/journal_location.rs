//! Where a server's journal is: the location its operator names (a SQLite
//! path, a `postgres://` URL, or [`NO_JOURNAL`]), or by default a file in
//! the user's state directory — `$XDG_STATE_HOME/recourse/`, else
//! `~/.local/state/recourse/` — made private to its owner.

use std::error::Error;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use recourse::Journal;
use recourse::journal::open_journal;

/// The journal location that turns journaling off.
pub const NO_JOURNAL: &str = "none";

/// Opens a server's journal at `location`; none for [`NO_JOURNAL`]; by
/// default `file` in the state directory (`gateway.db` for a gateway),
/// created private to its owner. A location that holds a password (a
/// PostgreSQL URL) is never shown whole, not even in an error.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use recourse_gateway::{NO_JOURNAL, open_server_journal};
///
/// assert!(open_server_journal(Some(NO_JOURNAL), "gateway.db").await.unwrap().is_none());
/// let dir = std::env::temp_dir().join(format!("recourse-doc-{}", std::process::id()));
/// let path = dir.join("calls.db").display().to_string();
/// # std::fs::create_dir_all(&dir).unwrap();
/// assert!(open_server_journal(Some(&path), "gateway.db").await.unwrap().is_some());
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # });
/// ```
///
/// # Errors
/// The journal cannot be opened there; or, with no location, neither
/// `XDG_STATE_HOME` nor `HOME` is set, or the directory cannot be created.
pub async fn open_server_journal(
    location: Option<&str>,
    file: &str,
) -> Result<Option<Arc<dyn Journal>>, JournalLocationError> {
    let Some(location) = server_journal_location(location, file)? else {
        return Ok(None);
    };
    let journal = open_journal(&location).await.map_err(|e| {
        JournalLocationError::caused(
            format!(
                "opening the journal at {}",
                recourse_protocol::redact(&location)
            ),
            e,
        )
    })?;
    Ok(Some(journal))
}

/// Where a server's journal is — what [`open_server_journal`] opens, for a
/// server to say where it journals: `location`, none for [`NO_JOURNAL`], by
/// default `file` in the [`state_dir`] (created private to its owner).
///
/// # Errors
/// With no location: no state directory, or it cannot be created.
pub fn server_journal_location(
    location: Option<&str>,
    file: &str,
) -> Result<Option<String>, JournalLocationError> {
    match location {
        Some(NO_JOURNAL) => Ok(None),
        Some(location) => Ok(Some(location.to_owned())),
        None => default_location(file).map(Some),
    }
}

/// The user's state directory for recourse, where servers journal by
/// default: `$XDG_STATE_HOME/recourse`, else `~/.local/state/recourse`
/// (not created here).
///
/// # Errors
/// Neither `XDG_STATE_HOME` nor `HOME` is set.
pub fn state_dir() -> Result<PathBuf, JournalLocationError> {
    let state = match (std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME")) {
        (Some(dir), _) if !dir.is_empty() => PathBuf::from(dir),
        (_, Some(home)) if !home.is_empty() => PathBuf::from(home).join(".local/state"),
        _ => {
            return Err(JournalLocationError {
                what: "neither XDG_STATE_HOME nor HOME is set: give --journal PATH (or --journal none)"
                    .to_owned(),
                cause: None,
            });
        }
    };
    Ok(state.join("recourse"))
}

fn default_location(file: &str) -> Result<String, JournalLocationError> {
    let dir = state_dir()?;
    create_private_dir(&dir).map_err(|e| {
        JournalLocationError::caused(
            format!("creating the journal's directory {}", dir.display()),
            e,
        )
    })?;
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

/// A server's journal that cannot be opened: where, and why (its source).
#[derive(Debug)]
pub struct JournalLocationError {
    what: String,
    cause: Option<Box<dyn Error + Send + Sync>>,
}

impl JournalLocationError {
    fn caused(what: String, cause: impl Error + Send + Sync + 'static) -> Self {
        Self {
            what,
            cause: Some(Box::new(cause)),
        }
    }
}

impl fmt::Display for JournalLocationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)
    }
}

impl Error for JournalLocationError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.cause.as_deref().map(|e| e as &(dyn Error + 'static))
    }
}
