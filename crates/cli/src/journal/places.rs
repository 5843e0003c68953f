//! Which journals `recourse journal` reads: the one `--journal` or
//! `RECOURSE_JOURNAL` names, else this user's default journals — the MCP
//! proxy's and the gateway's, where `recourse mcp proxy` and `recourse serve`
//! write unless told otherwise — saying on stderr which it read. Each is
//! opened to read: where there is no journal, none is created.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use recourse::Journal;
use recourse::journal::open_existing_journal;
use recourse_protocol::redact;

/// The default journals: each file in the user's state directory
/// (`recourse_gateway::state_dir`), and whose it is.
pub(crate) const DEFAULTS: [(&str, &str); 2] = [
    ("mcp-proxy.db", "the MCP proxy's"),
    ("gateway.db", "the gateway's"),
];

/// A journal `recourse journal` reads: where it is (shown redacted) and the store.
pub(crate) struct Opened {
    /// Its location, as shown: a PostgreSQL URL's password redacted.
    pub(crate) shown: String,
    pub(crate) journal: Arc<dyn Journal>,
}

/// The journals to read: `named` (the flag, else `RECOURSE_JOURNAL`) when
/// given, else the default ones that exist. A named SQLite file that does not
/// exist is no journal (said on stderr), never created.
///
/// # Errors
/// A journal that exists but cannot be opened; no default place to look.
pub(crate) async fn open(named: Option<&str>) -> Result<Vec<Opened>> {
    if let Some(location) = named {
        if is_file(location) && !Path::new(location).exists() {
            eprintln!("recourse journal: no journal at {location}: nothing is recorded there");
            return Ok(Vec::new());
        }
        return Ok(vec![opened(location).await?]);
    }
    let dir = recourse_gateway::state_dir()?;
    let (mut found, mut read, mut missing) = (Vec::new(), Vec::new(), Vec::new());
    for (file, whose) in DEFAULTS {
        let path = dir.join(file).display().to_string();
        if Path::new(&path).exists() {
            read.push(format!("{whose} journal {path}"));
            found.push(opened(&path).await?);
        } else {
            missing.push(path);
        }
    }
    eprintln!("recourse journal: {}", reading(&read, &missing));
    if Path::new(super::OLD_DEFAULT).exists() {
        eprintln!(
            "recourse journal: ./{} is read only when named: --journal {}",
            super::OLD_DEFAULT,
            super::OLD_DEFAULT
        );
    }
    Ok(found)
}

/// What was read and what was not there, in a sentence.
fn reading(read: &[String], missing: &[String]) -> String {
    match (read, missing) {
        ([], _) => format!(
            "no journal to read: nothing at {} (the MCP proxy's and the gateway's default \
             journals; give --journal PATH for another)",
            missing.join(" or ")
        ),
        (read, []) => format!("reading {}", read.join(" and ")),
        (read, missing) => format!(
            "reading {} (nothing at {})",
            read.join(" and "),
            missing.join(" or ")
        ),
    }
}

/// Whether `location` names a SQLite file (not a URL, not memory).
fn is_file(location: &str) -> bool {
    !(location.starts_with("postgres://")
        || location.starts_with("postgresql://")
        || location.starts_with("file:")
        || location == ":memory:")
}

async fn opened(location: &str) -> Result<Opened> {
    // A PostgreSQL URL may hold a password: it never reaches the terminal.
    let shown = redact(location);
    let journal = open_existing_journal(location)
        .await
        .with_context(|| format!("opening the journal at {shown}"))?;
    Ok(Opened { shown, journal })
}
