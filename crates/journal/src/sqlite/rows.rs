//! The journal's rows on the SQLite connection: a call read from its row,
//! an attempt's end and a call's end written to theirs, a list's parameters.

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use recourse_core::journal::{
    ApprovalAsked, AttemptResult, CallState, Declared, Ended, EntryTimes, JournalEntry, Lease,
    ListQuery, ReplayKey, rfc3339_now,
};
use recourse_core::record::Settlement;

use crate::schema::{ApprovalColumns, ENTRY_COLUMNS, viewer};

pub(super) fn entry(row: &rusqlite::Row<'_>) -> rusqlite::Result<JournalEntry> {
    let payload: String = row.get(6)?;
    let state: String = row.get(7)?;
    let record: Option<String> = row.get(15)?;
    let record: Option<Value> = record.and_then(|r| serde_json::from_str(&r).ok());
    let verification: Option<String> = row.get(16)?;
    let call_id: String = row.get(0)?;
    let request_hash: Option<String> = row.get(12)?;
    let caller: Option<String> = row.get(17)?;
    let approval = ApprovalColumns {
        id: row.get(18)?,
        state: row.get(19)?,
        reason: row.get(20)?,
        expires_at: row.get(21)?,
        decided_by: row.get(22)?,
        decided_at: row.get(23)?,
        note: row.get(24)?,
    }
    .approval(&call_id, request_hash.as_deref(), caller.as_deref());
    let approval_request: Option<String> = row.get(25)?;
    Ok(JournalEntry {
        call_id,
        target: row.get(1)?,
        capability: row.get(2)?,
        idempotency_key: row.get(3)?,
        operation_id: row.get(4)?,
        declared: Declared {
            reconcile: row.get(5)?,
            verification: verification.and_then(|v| serde_json::from_str(&v).ok()),
        },
        payload: serde_json::from_str(&payload).unwrap_or(Value::Null),
        state: CallState::parse(&state).unwrap_or(CallState::Unknown),
        attempts: row.get(8)?,
        times: EntryTimes {
            started_at: row.get(9)?,
            updated_at: row.get(10)?,
        },
        replay: ReplayKey {
            caller_key: row.get(11)?,
            request_hash,
        },
        lease: Lease {
            owner: row.get(13)?,
            until: row.get(14)?,
        },
        ended: Ended {
            settled_by: record.as_ref().and_then(Settlement::by_in),
            record,
        },
        caller,
        asked: ApprovalAsked {
            approval,
            request: approval_request.and_then(|r| serde_json::from_str(&r).ok()),
        },
    }
    .with_record_payloads())
}

/// An attempt's end as its row stores it.
pub(super) struct AttemptEnd {
    status: Option<u16>,
    failure: Option<String>,
    action: &'static str,
}

impl AttemptEnd {
    pub(super) fn of(result: &AttemptResult) -> Self {
        Self {
            status: result.status,
            failure: result.transport_error_text(),
            action: result.action.name(),
        }
    }

    pub(super) fn write(&self, c: &Connection, id: &str, n: u32) -> rusqlite::Result<()> {
        c.prepare_cached("UPDATE recourse_attempts SET status = ?3, transport_error = ?4, action = ?5, finished_at = ?6 WHERE call_id = ?1 AND n = ?2")?
            .execute(params![id, n, self.status, self.failure, self.action, rfc3339_now()])
            .map(drop)
    }
}

/// Sets a call's end state (and operation id and record, when known) and
/// releases its lease.
pub(super) fn finish(
    c: &Connection,
    id: &str,
    state: CallState,
    op: Option<&str>,
    record: Option<&str>,
) -> rusqlite::Result<()> {
    c.prepare_cached(
        "UPDATE recourse_calls SET state = ?2, operation_id = COALESCE(?3, operation_id),
           record = COALESCE(?4, record), lease_until = NULL, approval_request = NULL, updated_at = ?5
         WHERE call_id = ?1",
    )?
    .execute(params![id, state.as_str(), op, record, rfc3339_now()])
    .map(drop)
}

/// The parameters of [`list_sql`]'s query, in its order: the state, the
/// `before` id and the viewer when the query has them, then the limit.
pub(super) fn list_params<'a>(
    state: &'a Option<&'static str>,
    query: &'a ListQuery,
    limit: &'a u32,
) -> Vec<&'a dyn rusqlite::ToSql> {
    let mut params: Vec<&dyn rusqlite::ToSql> = Vec::with_capacity(4);
    params.extend(state.as_ref().map(|s| s as &dyn rusqlite::ToSql));
    params.extend(query.before.as_ref().map(|b| b as &dyn rusqlite::ToSql));
    params.extend(viewer(query).map(|v| v as &dyn rusqlite::ToSql));
    params.push(limit);
    params
}

pub(super) fn get(
    c: &Connection,
    column: &str,
    value: &str,
) -> rusqlite::Result<Option<JournalEntry>> {
    let sql = format!("SELECT {ENTRY_COLUMNS} FROM recourse_calls WHERE {column} = ?1");
    c.query_row(&sql, params![value], entry).optional()
}
