//! The journal: a write-ahead record of every logical call and attempt (SPEC §5).
//!
//! # Why write ahead
//!
//! A process can die at any instruction — including between sending a payment
//! and reading its answer. If the record of the call is written only after the
//! answer, that call is simply lost: nobody knows a charge may have happened.
//! So the executor writes the call (with its idempotency key) and each attempt
//! *before* dispatch, and completes them after. After a crash, calls still
//! marked `in_flight` are exactly the ones whose outcome is unknown, and
//! `recourse journal reconcile` can settle them through their reconciler.
//!
//! Two implementations share one trait and one test suite: [`SqliteJournal`]
//! (embedded, the default) and [`PostgresJournal`] (for replicas sharing one record).

#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;
mod timestamp;

use std::fmt;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

#[cfg(feature = "postgres")]
pub use postgres::PostgresJournal;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteJournal;
pub use timestamp::rfc3339;

use crate::transport::BoxFuture;

/// Where a journaled call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallState {
    /// Recorded, not finished: running now, or interrupted by a crash.
    InFlight,
    /// Finished successfully.
    Succeeded,
    /// Finished without success; nothing is in doubt.
    Failed,
    /// Finished with the outcome of a write unknown.
    Unknown,
}

impl CallState {
    /// The snake-case name stored and reported.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InFlight => "in_flight",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Unknown => "unknown",
        }
    }

    /// Parses a stored or user-given name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "in_flight" => Self::InFlight,
            "succeeded" => Self::Succeeded,
            "failed" => Self::Failed,
            "unknown" => Self::Unknown,
            _ => return None,
        })
    }
}

impl fmt::Display for CallState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A call as the journal records it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JournalEntry {
    /// The call's id.
    pub call_id: String,
    /// The URL (or tool name) called.
    pub target: String,
    /// The capability name, when the call came from a catalogue.
    pub capability: Option<String>,
    /// The idempotency key every attempt carried.
    pub idempotency_key: Option<String>,
    /// The tool's operation id, when it reported one.
    pub operation_id: Option<String>,
    /// The reconcile URL template, when one was configured.
    pub reconcile: Option<String>,
    /// The caller's payload (redacted).
    pub payload: Value,
    /// Where the call stands.
    pub state: CallState,
    /// Attempts recorded.
    pub attempts: u32,
    /// When the call started (RFC 3339, UTC).
    pub started_at: String,
    /// When the record last changed (RFC 3339, UTC).
    pub updated_at: String,
}

/// What the journal needs when a call starts.
#[derive(Debug, Clone, PartialEq)]
pub struct NewCall {
    /// A fresh id for the call.
    pub call_id: String,
    /// The target.
    pub target: String,
    /// The capability name, if any.
    pub capability: Option<String>,
    /// The idempotency key, if any.
    pub idempotency_key: Option<String>,
    /// The reconcile template, if any.
    pub reconcile: Option<String>,
    /// The caller's payload (redacted by the executor before it gets here).
    pub payload: Value,
}

/// The result of an attempt, recorded after it.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptResult {
    /// The HTTP status, if the tool answered.
    pub status: Option<u16>,
    /// The transport failure (redacted), if it did not.
    pub transport_error: Option<crate::TransportFailure>,
    /// What the policy decided (stored by its name).
    pub action: crate::Action,
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
impl AttemptResult {
    /// The transport failure as stored: `kind: message`.
    pub(crate) fn transport_error_text(&self) -> Option<String> {
        self.transport_error.as_ref().map(ToString::to_string)
    }
}

/// The journal could not record something. The executor then refuses to
/// dispatch: a call it cannot record is a call it could lose.
#[derive(Debug)]
pub struct JournalError {
    message: String,
}

impl JournalError {
    pub(crate) fn new(context: &str, error: impl fmt::Display) -> Self {
        Self {
            message: format!("{context}: {error}"),
        }
    }
}

impl fmt::Display for JournalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "journal: {}", self.message)
    }
}

impl std::error::Error for JournalError {}

/// Result of a journal operation.
pub type JournalResult<T> = Result<T, JournalError>;

/// A durable record of calls and attempts.
pub trait Journal: Send + Sync {
    /// Records a new call as in flight. Called before the first dispatch.
    fn begin_call<'a>(&'a self, call: &'a NewCall) -> BoxFuture<'a, JournalResult<()>>;
    /// Records attempt `n` with the payload about to be sent. Called before dispatch.
    fn begin_attempt<'a>(
        &'a self,
        call_id: &'a str,
        n: u32,
        payload: &'a Value,
    ) -> BoxFuture<'a, JournalResult<()>>;
    /// Completes attempt `n`.
    fn finish_attempt<'a>(
        &'a self,
        call_id: &'a str,
        n: u32,
        result: &'a AttemptResult,
    ) -> BoxFuture<'a, JournalResult<()>>;
    /// Sets a call's state (and operation id, when known).
    fn set_state<'a>(
        &'a self,
        call_id: &'a str,
        state: CallState,
        operation_id: Option<&'a str>,
    ) -> BoxFuture<'a, JournalResult<()>>;
    /// Lists calls, newest first, optionally only those in `state`.
    fn list(&self, state: Option<CallState>) -> BoxFuture<'_, JournalResult<Vec<JournalEntry>>>;
}

/// Opens a journal from a location: `postgres://…` / `postgresql://…` for
/// PostgreSQL, `:memory:` for an in-memory SQLite database, anything else a
/// SQLite file path (created if missing). Migrations run on open.
///
/// # Errors
/// When the database cannot be opened or migrated.
pub async fn open_journal(location: &str) -> JournalResult<Arc<dyn Journal>> {
    if location.trim().is_empty() {
        return Err(JournalError::new("journal location", "it is empty"));
    }
    if location.starts_with("postgres://") || location.starts_with("postgresql://") {
        #[cfg(feature = "postgres")]
        return Ok(Arc::new(PostgresJournal::connect(location).await?));
        #[cfg(not(feature = "postgres"))]
        return Err(JournalError::new(
            "opening the journal",
            "this build has no PostgreSQL journal (the `postgres` cargo feature of `recourse` is off)",
        ));
    }
    open_sqlite(location)
}

#[cfg(feature = "sqlite")]
fn open_sqlite(location: &str) -> JournalResult<Arc<dyn Journal>> {
    if location == ":memory:" {
        Ok(Arc::new(SqliteJournal::in_memory()?))
    } else {
        Ok(Arc::new(SqliteJournal::open(location)?))
    }
}

#[cfg(not(feature = "sqlite"))]
fn open_sqlite(_location: &str) -> JournalResult<Arc<dyn Journal>> {
    Err(JournalError::new(
        "opening the journal",
        "this build has no SQLite journal (the `sqlite` cargo feature of `recourse` is off)",
    ))
}

/// The schema, as versioned migrations shared by both backends (plain SQL
/// that SQLite and PostgreSQL both accept).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) const MIGRATIONS: &[(i64, &str)] = &[(
    1,
    "CREATE TABLE recourse_calls (
        call_id TEXT PRIMARY KEY,
        target TEXT NOT NULL,
        capability TEXT,
        idempotency_key TEXT,
        operation_id TEXT,
        reconcile TEXT,
        payload TEXT NOT NULL,
        state TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        started_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX recourse_calls_state ON recourse_calls (state);
    CREATE TABLE recourse_attempts (
        call_id TEXT NOT NULL REFERENCES recourse_calls (call_id),
        n INTEGER NOT NULL,
        payload TEXT NOT NULL,
        status INTEGER,
        transport_error TEXT,
        action TEXT,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        PRIMARY KEY (call_id, n)
    );",
)];
