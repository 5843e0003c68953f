//! The journal's tables, as versioned migrations both databases accept, and
//! the queries they share.

use recourse_core::journal::{DEFAULT_CALLER, ListQuery, Seen};

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
];

/// The calls a prune removes: finished, unleased, last changed before the
/// first parameter, at most the second's number of them.
const PRUNABLE: &str = "SELECT call_id FROM recourse_calls WHERE state IN ('succeeded', 'failed')
     AND lease_until IS NULL AND updated_at < {before} ORDER BY call_id LIMIT {limit}";

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
        Seen::OwnAndInDoubt(_) => Some(format!("({own} OR state = 'unknown')")),
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
pub(crate) const ENTRY_COLUMNS: &str = "call_id, target, capability, idempotency_key, operation_id, reconcile, payload, state, attempts, started_at, updated_at, caller_key, request_hash, owner, lease_until, record, verification, caller";

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
