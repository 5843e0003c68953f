//! The journal: a write-ahead record of every logical call and attempt (protocol §5).
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
mod settle;
#[cfg(feature = "sqlite")]
mod sqlite;
mod timestamp;
#[cfg(feature = "sqlite")]
mod writer;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

#[cfg(feature = "postgres")]
pub use postgres::PostgresJournal;
pub use settle::{SettleOptions, Settlement, settle, settle_with};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteJournal;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) use timestamp::lease_until;
pub use timestamp::rfc3339;

use crate::transport::BoxFuture;

/// Where a journaled call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
    /// The declared verification ([`VerifySpec`](crate::VerifySpec) as
    /// JSON, redacted; never headers), when one was declared.
    pub verification: Option<Value>,
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
    /// The key the caller chose, when it chose one (a second call with it is a replay).
    pub caller_key: Option<String>,
    /// A digest of the caller's request, to tell a replay from a reused key.
    pub request_hash: Option<String>,
    /// The process that runs (or ran) the call.
    pub owner: Option<String>,
    /// Until when `owner` holds the call (RFC 3339, UTC): while it does, no
    /// other process settles it. `None` once the call finished.
    pub lease_until: Option<String>,
    /// The call's record (its JSON), once it finished.
    #[serde(skip)]
    pub record: Option<Value>,
}

impl JournalEntry {
    /// Whether another process holds the call now (an unexpired lease).
    pub fn is_leased(&self) -> bool {
        self.lease_until
            .as_deref()
            .is_some_and(|until| until > rfc3339(std::time::SystemTime::now()).as_str())
    }

    /// The call's record: the stored one, or — for a call that never
    /// finished (its process died) — a summary saying only what the journal
    /// knows.
    pub fn record_or_summary(&self) -> Value {
        if let Some(record) = &self.record {
            return record.clone();
        }
        let (outcome, reason) = match self.state {
            CallState::Succeeded => ("succeeded", None),
            CallState::Failed => ("failed", None),
            CallState::Unknown | CallState::InFlight => ("unknown", Some("outcome_unknown")),
        };
        let summary = RecordSummary {
            record_version: crate::RECORD_VERSION,
            call_id: &self.call_id,
            outcome,
            data: (),
            error: (),
            reason,
            reason_text: reason
                .map(|_| "the call did not finish in its process; check before writing again"),
            idempotency_key: self.idempotency_key.as_deref(),
            operation_id: self.operation_id.as_deref(),
            attempts: [],
        };
        serde_json::to_value(summary).unwrap_or(Value::Null)
    }
}

/// What the journal says of a call whose record was never written: its
/// process stopped before the call finished. Only the journal's facts; the
/// outcome of such a call is `unknown` unless it was settled.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RecordSummary<'a> {
    /// The record format's version.
    pub record_version: u32,
    /// The call's id.
    pub call_id: &'a str,
    /// `succeeded`, `failed` or `unknown` (a call left in flight is `unknown`).
    #[cfg_attr(feature = "schema", schemars(extend("enum" = ["succeeded", "failed", "unknown"])))]
    pub outcome: &'static str,
    /// Always `null`: the result was not recorded.
    pub data: (),
    /// Always `null`: no error was recorded.
    pub error: (),
    /// `outcome_unknown` for a call left in flight or unknown; `null` otherwise.
    pub reason: Option<&'static str>,
    /// The reason as a sentence, for people.
    pub reason_text: Option<&'static str>,
    /// The idempotency key its attempts carried.
    pub idempotency_key: Option<&'a str>,
    /// The tool's operation id, when it reported one.
    pub operation_id: Option<&'a str>,
    /// Always empty: the attempts' records were not written.
    pub attempts: [(); 0],
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
    /// The declared verification as JSON (redacted; never headers), if any.
    pub verification: Option<Value>,
    /// The caller's payload (redacted by the executor before it gets here).
    pub payload: Value,
    /// The process running the call.
    pub owner: String,
    /// How long its lease lasts unless renewed.
    pub lease: Duration,
}

/// A caller's key, claimed for a call before it runs: exactly one call per
/// key, whichever process asks first.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyClaim {
    /// The call that will run under the key.
    pub call_id: String,
    /// The caller's key.
    pub caller_key: String,
    /// A digest of the request (see [`request_hash`](crate::request_hash)).
    pub request_hash: String,
    /// The target, for people reading the journal.
    pub target: String,
    /// The process claiming it.
    pub owner: String,
    /// How long its lease lasts unless renewed.
    pub lease: Duration,
}

/// What claiming a key found.
#[derive(Debug, Clone, PartialEq)]
pub enum Claimed {
    /// The key is this call's now.
    New,
    /// Another call holds the key: here is its entry.
    Exists(Box<JournalEntry>),
}

/// Which calls to list: newest first, at most `limit`, older than `before`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListQuery {
    /// Only calls in this state.
    pub state: Option<CallState>,
    /// At most this many.
    pub limit: Option<u32>,
    /// Only calls whose id sorts before this one (call ids are time-ordered).
    pub before: Option<String>,
}

/// An id for this process, as the owner of the calls it runs (stable for the
/// process's life, distinct across restarts).
pub fn process_owner() -> &'static str {
    static OWNER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    OWNER.get_or_init(|| format!("recourse-{}-{}", std::process::id(), uuid::Uuid::now_v7()))
}

/// A call's record as the journal stores it: the JSON text of its
/// [`CallReport`](crate::CallReport), written once.
///
/// ```
/// use recourse::RecordJson;
///
/// let record = RecordJson::from(&serde_json::json!({"call_id": "c-1", "outcome": "failed"}));
/// assert_eq!(record.as_str(), r#"{"call_id":"c-1","outcome":"failed"}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordJson(String);

impl RecordJson {
    /// `report`'s record, as [`CallReport::write_json`](crate::CallReport::write_json)
    /// writes it: the bytes the gateway answers with, the tool's data as the
    /// tool sent it.
    ///
    /// # Errors
    /// When a part of the report cannot be written as JSON.
    pub fn of(report: &crate::CallReport) -> Result<Self, serde_json::Error> {
        let mut out = Vec::with_capacity(1024);
        report.write_json(&mut out)?;
        // JSON written from Rust strings and the tool's (checked) JSON text.
        String::from_utf8(out)
            .map(Self)
            .map_err(<serde_json::Error as serde::ser::Error>::custom)
    }

    /// The JSON text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Any JSON value as a record (a record read back, a test's own).
impl From<&Value> for RecordJson {
    fn from(value: &Value) -> Self {
        Self(value.to_string())
    }
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
    /// Claims `claim.caller_key` for a new call, atomically: the first claim
    /// wins, a later one finds the existing entry.
    fn claim_key<'a>(&'a self, claim: &'a KeyClaim) -> BoxFuture<'a, JournalResult<Claimed>>;
    /// Records a call as in flight, held by its owner's lease. Called before
    /// the first dispatch; completes the entry of a claimed key.
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
    /// Sets a call's state (and operation id and record, when known) and
    /// releases its lease.
    fn finish_call<'a>(
        &'a self,
        call_id: &'a str,
        state: CallState,
        operation_id: Option<&'a str>,
        record: Option<&'a RecordJson>,
    ) -> BoxFuture<'a, JournalResult<()>>;
    /// Completes a call's last attempt and then the call: what
    /// [`finish_attempt`](Journal::finish_attempt) and
    /// [`finish_call`](Journal::finish_call) do, in one write where the
    /// journal can (the SQLite journal does: one commit a call waits for
    /// instead of two). The attempt's end is history, read by nothing that
    /// settles a call: when it cannot be written the call is still finished,
    /// and only the call's failure is the result.
    fn finish_attempt_and_call<'a>(
        &'a self,
        attempt: (u32, &'a AttemptResult),
        call_id: &'a str,
        state: CallState,
        operation_id: Option<&'a str>,
        record: Option<&'a RecordJson>,
    ) -> BoxFuture<'a, JournalResult<()>> {
        Box::pin(async move {
            let (n, result) = attempt;
            if let Err(e) = self.finish_attempt(call_id, n, result).await {
                tracing::warn!(error = %e, "could not complete the attempt in the journal");
            }
            self.finish_call(call_id, state, operation_id, record).await
        })
    }
    /// Extends `owner`'s lease on a call; `false` when it no longer holds it.
    fn renew_lease<'a>(
        &'a self,
        call_id: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, JournalResult<bool>>;
    /// Takes a call over for `owner` (to settle it), only if no lease holds
    /// it: `false` when another process still does.
    fn take_over<'a>(
        &'a self,
        call_id: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, JournalResult<bool>>;
    /// The call `call_id`, if recorded.
    fn get<'a>(&'a self, call_id: &'a str) -> BoxFuture<'a, JournalResult<Option<JournalEntry>>>;
    /// Lists calls, newest first.
    fn list<'a>(&'a self, query: &'a ListQuery) -> BoxFuture<'a, JournalResult<Vec<JournalEntry>>>;
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
pub(crate) const MIGRATIONS: &[(i64, &str)] = &[
    (
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
    ),
    (
        2,
        "ALTER TABLE recourse_calls ADD COLUMN caller_key TEXT;
        ALTER TABLE recourse_calls ADD COLUMN request_hash TEXT;
        ALTER TABLE recourse_calls ADD COLUMN record TEXT;
        ALTER TABLE recourse_calls ADD COLUMN owner TEXT;
        ALTER TABLE recourse_calls ADD COLUMN lease_until TEXT;
        CREATE UNIQUE INDEX recourse_calls_caller_key ON recourse_calls (caller_key);",
    ),
    (
        3,
        "ALTER TABLE recourse_calls ADD COLUMN verification TEXT;",
    ),
    // A list by state walks this index newest first and stops at its limit;
    // with the index on state alone it read every row of the journal.
    (
        4,
        "CREATE INDEX recourse_calls_state_call ON recourse_calls (state, call_id);
        DROP INDEX recourse_calls_state;",
    ),
];

/// The query for a list: only the conditions `query` has, so that the
/// database seeks its index (`state, call_id`, or `call_id`) and reads the
/// newest `limit` rows from there. A condition written as `(?1 IS NULL OR
/// state = ?1)` can use no index: every list scanned the whole journal, on
/// the SQLite writer's thread. `mark(n)` writes the n-th placeholder (`?n`,
/// `$n`); the parameters are the state, the `before` id (each if present),
/// then the limit.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn list_sql(query: &ListQuery, mark: fn(usize) -> String) -> String {
    let mut conditions = Vec::new();
    if query.state.is_some() {
        conditions.push(format!("state = {}", mark(conditions.len() + 1)));
    }
    if query.before.is_some() {
        conditions.push(format!("call_id < {}", mark(conditions.len() + 1)));
    }
    let filter = if conditions.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", conditions.join(" AND "))
    };
    let limit = mark(conditions.len() + 1);
    format!(
        "SELECT {ENTRY_COLUMNS} FROM recourse_calls {filter} ORDER BY call_id DESC LIMIT {limit}"
    )
}

/// The columns every entry query selects, in [`JournalEntry`]'s order.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) const ENTRY_COLUMNS: &str = "call_id, target, capability, idempotency_key, operation_id, reconcile, payload, state, attempts, started_at, updated_at, caller_key, request_hash, owner, lease_until, record, verification";

/// The most calls one list returns.
pub const MAX_LIST: u32 = 1000;
