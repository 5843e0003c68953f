//! # recourse-journal
//!
//! The stores behind recourse's journal — a write-ahead record of every
//! logical call and attempt, kept so that a process that dies mid-write
//! leaves its calls marked in flight instead of lost. Two stores share the
//! `Journal` trait of `recourse-core`
//! and one test suite: [`SqliteJournal`] (embedded, one file, the default;
//! feature `sqlite`) and [`PostgresJournal`] (one record shared by several
//! replicas; feature `postgres`). [`open`] picks one from a location;
//! [`open_existing`] opens one for reading, creating nothing.
//!
//! ```
//! use recourse_core::journal::{CallState, Journal, NewCall};
//! use std::time::Duration;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let journal = recourse_journal::open(":memory:").await.unwrap();
//! journal.begin_call(&NewCall {
//!     call_id: "c-1".into(),
//!     target: "http://127.0.0.1:8700/api/exports".into(),
//!     capability: None,
//!     idempotency_key: Some("k-1".into()),
//!     reconcile: None,
//!     verification: None,
//!     payload: serde_json::json!({"format": "csv"}),
//!     owner: "this-process".into(),
//!     lease: Duration::from_secs(30),
//!     caller: None,
//! }).await.unwrap();
//! let entry = journal.get("c-1").await.unwrap().unwrap();
//! assert_eq!(entry.state, CallState::InFlight);
//! # });
//! ```

#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod private_file;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod schema;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "sqlite")]
mod writer;

use std::sync::Arc;

#[cfg(feature = "postgres")]
pub use postgres::PostgresJournal;
use recourse_core::journal::{Journal, JournalError, JournalErrorKind, JournalResult};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteJournal;

/// Opens a journal from a location: `postgres://…` / `postgresql://…` for
/// PostgreSQL, `:memory:` for an in-memory SQLite database, anything else a
/// SQLite file path (created if missing). Migrations run on open.
///
/// # Errors
/// When the location is empty or names a store this build lacks
/// ([`JournalErrorKind::Location`]), or the database cannot be opened or
/// migrated ([`JournalErrorKind::Open`]).
pub async fn open(location: &str) -> JournalResult<Arc<dyn Journal>> {
    if location.trim().is_empty() {
        return Err(JournalError::new(
            JournalErrorKind::Location,
            "journal location",
            "it is empty",
        ));
    }
    if is_postgres(location) {
        #[cfg(feature = "postgres")]
        return Ok(Arc::new(PostgresJournal::connect(location).await?));
        #[cfg(not(feature = "postgres"))]
        return Err(JournalError::new(
            JournalErrorKind::Location,
            "opening the journal",
            "this build has no PostgreSQL journal (the `postgres` cargo feature is off)",
        ));
    }
    open_sqlite(location, false)
}

/// Opens a journal that exists, as [`open`] does, except that a SQLite file
/// is never created: a reader (`recourse journal list`) leaves nothing
/// behind where there was no journal. A PostgreSQL journal is opened as
/// [`open`] opens it.
///
/// # Errors
/// As [`open`]; and [`JournalErrorKind::Open`] when there is no SQLite file
/// at `location`.
pub async fn open_existing(location: &str) -> JournalResult<Arc<dyn Journal>> {
    if is_postgres(location) || location.trim().is_empty() {
        return open(location).await;
    }
    open_sqlite(location, true)
}

fn is_postgres(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}

#[cfg(feature = "sqlite")]
fn open_sqlite(location: &str, existing: bool) -> JournalResult<Arc<dyn Journal>> {
    match location {
        ":memory:" => Ok(Arc::new(SqliteJournal::in_memory()?)),
        _ if existing => Ok(Arc::new(SqliteJournal::open_existing(location)?)),
        _ => Ok(Arc::new(SqliteJournal::open(location)?)),
    }
}

#[cfg(not(feature = "sqlite"))]
fn open_sqlite(_location: &str, _existing: bool) -> JournalResult<Arc<dyn Journal>> {
    Err(JournalError::new(
        JournalErrorKind::Location,
        "opening the journal",
        "this build has no SQLite journal (the `sqlite` cargo feature is off)",
    ))
}
