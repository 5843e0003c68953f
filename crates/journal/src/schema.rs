//! The journal's tables, as versioned migrations both databases accept, and
//! the queries they share.

use recourse_core::approval::{Approval, ApprovalState};
use recourse_core::hex::from_hex;
use recourse_core::journal::{
    DEFAULT_CALLER, DecidedTo, JournalError, JournalErrorKind, JournalResult, ListQuery, Seen,
    lease_until,
};

/// The schema, as versioned migrations shared by both backends (plain SQL
/// that SQLite and PostgreSQL both accept).
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
    // Whose call it is: a gateway's named callers each see their own.
    (5, "ALTER TABLE recourse_calls ADD COLUMN caller TEXT;"),
    // The payload stored once per call: an attempt that sent the call's
    // own payload keeps none (NULL). SQLite cannot drop a NOT NULL, so the
    // table is built again, the same way in both databases.
    (
        6,
        "CREATE TABLE recourse_attempts_v6 (
        call_id TEXT NOT NULL REFERENCES recourse_calls (call_id),
        n INTEGER NOT NULL,
        payload TEXT,
        status INTEGER,
        transport_error TEXT,
        action TEXT,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        PRIMARY KEY (call_id, n)
    );
    INSERT INTO recourse_attempts_v6 (call_id, n, payload, status, transport_error, action, started_at, finished_at)
        SELECT call_id, n, payload, status, transport_error, action, started_at, finished_at FROM recourse_attempts;
    DROP TABLE recourse_attempts;
    ALTER TABLE recourse_attempts_v6 RENAME TO recourse_attempts;",
    ),
    // Approvals: a call may wait for a person before its first dispatch.
    // The request to dispatch once approved is kept until the call ends.
    (
        7,
        "ALTER TABLE recourse_calls ADD COLUMN approval_id TEXT;
        ALTER TABLE recourse_calls ADD COLUMN approval_state TEXT;
        ALTER TABLE recourse_calls ADD COLUMN approval_reason TEXT;
        ALTER TABLE recourse_calls ADD COLUMN approval_expires_at TEXT;
        ALTER TABLE recourse_calls ADD COLUMN approval_decided_by TEXT;
        ALTER TABLE recourse_calls ADD COLUMN approval_decided_at TEXT;
        ALTER TABLE recourse_calls ADD COLUMN approval_note TEXT;
        ALTER TABLE recourse_calls ADD COLUMN approval_request TEXT;
        CREATE UNIQUE INDEX recourse_calls_approval ON recourse_calls (approval_id);",
    ),
    // Secrets every process sharing the journal must hold alike (the key
    // that seals an MCP client's approval state), hex-encoded.
    (
        8,
        "CREATE TABLE recourse_secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL, created_at TEXT NOT NULL);",
    ),
];

/// Stores a secret (name, hex value, time) unless one of that name is kept.
pub(crate) fn keep_secret_sql(mark: fn(usize) -> String) -> String {
    format!(
        "INSERT INTO recourse_secrets (name, value, created_at) VALUES ({}, {}, {})
         ON CONFLICT (name) DO NOTHING",
        mark(1),
        mark(2),
        mark(3)
    )
}

/// The secret kept under a name (the first parameter).
pub(crate) fn secret_sql(mark: fn(usize) -> String) -> String {
    format!(
        "SELECT value FROM recourse_secrets WHERE name = {}",
        mark(1)
    )
}

/// A stored secret's bytes, or why they cannot be read.
pub(crate) fn secret_bytes(hex: &str) -> JournalResult<Vec<u8>> {
    from_hex(hex)
        .filter(|bytes| !bytes.is_empty())
        .ok_or_else(|| {
            JournalError::new(
                JournalErrorKind::Operation,
                "reading a secret",
                "no secret is kept, or it is not hex",
            )
        })
}

/// The calls a prune removes: finished, unleased, last changed before the
/// first parameter, at most the second's number of them — and never one a
/// person rejected, or whose approval expired: the record of that decision
/// stays.
const PRUNABLE: &str = "SELECT call_id FROM recourse_calls WHERE state IN ('succeeded', 'failed')
     AND lease_until IS NULL AND updated_at < {before}
     AND (approval_state IS NULL OR approval_state = 'approved') ORDER BY call_id LIMIT {limit}";

/// The two statements of a prune (attempts first: they refer to their
/// call), `mark(n)` writing the n-th placeholder.
pub(crate) fn prune_sql(mark: fn(usize) -> String) -> [String; 2] {
    let calls = PRUNABLE
        .replace("{before}", &mark(1))
        .replace("{limit}", &mark(2));
    [
        format!("DELETE FROM recourse_attempts WHERE call_id IN ({calls})"),
        format!("DELETE FROM recourse_calls WHERE call_id IN ({calls})"),
    ]
}

/// The statement that takes a call over: its owner, lease and stamp become
/// the 2nd, 3rd and 4th parameters' (the 4th is now) when its lease is over
/// or it has none, and it waits for no person. A lease is over once its end
/// is not after now — the boundary `JournalEntry::is_leased` draws, so a
/// call a settler reads as unleased is one it can take over, in the same
/// millisecond too.
pub(crate) fn take_over_sql(mark: fn(usize) -> String) -> String {
    format!(
        "UPDATE recourse_calls SET owner = {owner}, lease_until = {until}, updated_at = {now}
         WHERE call_id = {id} AND (lease_until IS NULL OR lease_until <= {now}) AND state <> 'awaiting_approval'",
        id = mark(1),
        owner = mark(2),
        until = mark(3),
        now = mark(4),
    )
}

/// The query for a list: only the conditions `query` has, so that the
/// database seeks its index (`state, call_id`, or `call_id`) and reads the
/// newest `limit` rows from there. A condition written as `(?1 IS NULL OR
/// state = ?1)` can use no index: every list scanned the whole journal, on
/// the SQLite writer's thread. `mark(n)` writes the n-th placeholder (`?n`,
/// `$n`); the parameters are the state, the `before` id, the viewer's name
/// (each if present), then the limit.
///
/// A call recorded without a caller is [`DEFAULT_CALLER`]'s, as
/// [`Seen::admits`] reads it.
pub(crate) fn list_sql(query: &ListQuery, mark: fn(usize) -> String) -> String {
    let mut conditions = Vec::new();
    if query.state.is_some() {
        conditions.push(format!("state = {}", mark(conditions.len() + 1)));
    }
    if query.before.is_some() {
        conditions.push(format!("call_id < {}", mark(conditions.len() + 1)));
    }
    conditions.extend(seen_condition(&query.seen, mark(conditions.len() + 1)));
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

/// The condition that keeps what `seen` admits, its viewer's name the
/// placeholder `name`; none for a viewer who sees everything.
fn seen_condition(seen: &Seen, name: String) -> Option<String> {
    let own = format!("COALESCE(caller, '{DEFAULT_CALLER}') = {name}");
    match seen {
        Seen::All => None,
        Seen::Own(_) => Some(own),
        Seen::OwnAndInDoubt(_) => Some(format!(
            "({own} OR state IN ('unknown', 'awaiting_approval') OR approval_decided_by = {name})"
        )),
    }
}

/// The query counting the calls `seen` admits by state: rows of the state
/// and its count; its one parameter, if any, the viewer's name ([`viewer`]).
pub(crate) fn count_sql(seen: &Seen, mark: fn(usize) -> String) -> String {
    let filter = seen_condition(seen, mark(1))
        .map(|c| format!("WHERE {c} "))
        .unwrap_or_default();
    format!("SELECT state, COUNT(*) FROM recourse_calls {filter}GROUP BY state")
}

/// The columns every entry query selects, in [`JournalEntry`]'s order.
pub(crate) const ENTRY_COLUMNS: &str = "call_id, target, capability, idempotency_key, operation_id, reconcile, payload, state, attempts, started_at, updated_at, caller_key, request_hash, owner, lease_until, record, verification, caller, approval_id, approval_state, approval_reason, approval_expires_at, approval_decided_by, approval_decided_at, approval_note, approval_request";

/// The approval columns of an entry row (from `approval_id` on, in
/// [`ENTRY_COLUMNS`]' order), as read.
pub(crate) struct ApprovalColumns {
    pub(crate) id: Option<String>,
    pub(crate) state: Option<String>,
    pub(crate) reason: Option<String>,
    pub(crate) expires_at: Option<String>,
    pub(crate) decided_by: Option<String>,
    pub(crate) decided_at: Option<String>,
    pub(crate) note: Option<String>,
}

impl ApprovalColumns {
    /// The call's approval, when it has one. A state the journal does not
    /// know reads as expired: nothing is ever dispatched on a word it
    /// cannot read. It was self-approved when `caller`, who asked, decided it.
    pub(crate) fn approval(
        self,
        call_id: &str,
        request_hash: Option<&str>,
        caller: Option<&str>,
    ) -> Option<Approval> {
        let id = self.id?;
        let self_approved = self
            .decided_by
            .as_deref()
            .zip(caller)
            .is_some_and(|(by, asker)| by == asker);
        Some(Approval {
            id,
            call_id: call_id.to_owned(),
            state: self
                .state
                .as_deref()
                .and_then(ApprovalState::parse)
                .unwrap_or(ApprovalState::Expired),
            request_sha256: request_hash.unwrap_or_default().to_owned(),
            expires_at: self.expires_at.unwrap_or_default(),
            reason: self.reason.unwrap_or_default(),
            decided_by: self.decided_by,
            decided_at: self.decided_at,
            note: self.note,
            self_approved,
        })
    }
}

/// Records a call as awaiting approval: a new row, or its claimed key's
/// row while nothing of it was sent (then its claim's lease is let go).
/// Parameters: call id, target, capability, payload, now, request hash,
/// caller, approval id, reason, expires at, request, dispatcher (kept as
/// the owner while the call waits).
pub(crate) fn await_sql(mark: fn(usize) -> String) -> String {
    let m: Vec<String> = (1..=12).map(mark).collect();
    format!(
        "INSERT INTO recourse_calls (call_id, target, capability, payload, state, attempts, started_at, updated_at,
           request_hash, caller, approval_id, approval_state, approval_reason, approval_expires_at, approval_request,
           owner)
         VALUES ({}, {}, {}, {}, 'awaiting_approval', 0, {}, {}, {}, {}, {}, 'pending', {}, {}, {}, {})
         ON CONFLICT (call_id) DO UPDATE SET target = excluded.target, capability = excluded.capability,
           payload = excluded.payload, state = 'awaiting_approval', updated_at = excluded.updated_at,
           request_hash = excluded.request_hash, owner = excluded.owner, lease_until = NULL, record = NULL,
           caller = excluded.caller, approval_id = excluded.approval_id, approval_state = 'pending',
           approval_reason = excluded.approval_reason, approval_expires_at = excluded.approval_expires_at,
           approval_request = excluded.approval_request, approval_decided_by = NULL,
           approval_decided_at = NULL, approval_note = NULL
         WHERE recourse_calls.attempts = 0",
        m[0], m[1], m[2], m[3], m[4], m[4], m[5], m[6], m[7], m[8], m[9], m[10], m[11]
    )
}

/// Applies a decision to a pending approval, only while its call awaits it
/// and — for an approval or a rejection — before its expiry; for an
/// expiry, from it on. Parameters: approval id, approval state, decided by,
/// decided at, note, call state, owner, lease until, record, now. A call
/// that ends here lets its request go.
pub(crate) fn decide_sql(to: &DecidedTo, mark: fn(usize) -> String) -> String {
    let m: Vec<String> = (1..=10).map(mark).collect();
    let (due, request) = match to {
        DecidedTo::Approved { .. } => (">", ""),
        DecidedTo::Rejected(_) => (">", ", approval_request = NULL"),
        DecidedTo::Expired(_) => ("<=", ", approval_request = NULL"),
    };
    format!(
        "UPDATE recourse_calls SET approval_state = {}, approval_decided_by = {}, approval_decided_at = {},
           approval_note = {}, state = {}, owner = {}, lease_until = {}, record = {}, updated_at = {}{request}
         WHERE approval_id = {} AND state = 'awaiting_approval' AND approval_state = 'pending'
           AND approval_expires_at {due} {}",
        m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8], m[9], m[0], m[3]
    )
}

/// The viewer's name, when the list is limited to what one caller sees.
pub(crate) fn viewer(query: &ListQuery) -> Option<&String> {
    seen_name(&query.seen)
}

/// The viewer's name, when `seen` is limited to what one caller sees.
pub(crate) fn seen_name(seen: &Seen) -> Option<&String> {
    match seen {
        Seen::All => None,
        Seen::Own(name) | Seen::OwnAndInDoubt(name) => Some(name),
    }
}

/// The owner, lease and record a decided call takes: an approved one is
/// held by its dispatcher; a rejected or expired one ends with its record.
pub(crate) fn decided_columns(to: &DecidedTo) -> (Option<String>, Option<String>, Option<String>) {
    match to {
        DecidedTo::Approved { owner, lease } => {
            (Some(owner.clone()), Some(lease_until(*lease)), None)
        }
        DecidedTo::Rejected(record) | DecidedTo::Expired(record) => {
            (None, None, Some(record.as_str().to_owned()))
        }
    }
}
