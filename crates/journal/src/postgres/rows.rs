//! A call read from its PostgreSQL row.

use serde_json::Value;
use tokio_postgres::Row;

use recourse_core::journal::{
    ApprovalAsked, CallState, Declared, Ended, EntryTimes, JournalEntry, Lease, ReplayKey,
};
use recourse_core::record::Settlement;

use crate::schema::ApprovalColumns;

/// The call a row of `ENTRY_COLUMNS` holds.
pub(super) fn entry(row: &Row) -> JournalEntry {
    let payload: String = row.get(6);
    let state: String = row.get(7);
    let attempts: i32 = row.get(8);
    let record: Option<String> = row.get(15);
    let record: Option<Value> = record.and_then(|r| serde_json::from_str(&r).ok());
    let verification: Option<String> = row.get(16);
    let call_id: String = row.get(0);
    let request_hash: Option<String> = row.get(12);
    let caller: Option<String> = row.get(17);
    let approval = ApprovalColumns {
        id: row.get(18),
        state: row.get(19),
        reason: row.get(20),
        expires_at: row.get(21),
        decided_by: row.get(22),
        decided_at: row.get(23),
        note: row.get(24),
    }
    .approval(&call_id, request_hash.as_deref(), caller.as_deref());
    let approval_request: Option<String> = row.get(25);
    JournalEntry {
        call_id,
        target: row.get(1),
        capability: row.get(2),
        idempotency_key: row.get(3),
        operation_id: row.get(4),
        declared: Declared {
            reconcile: row.get(5),
            verification: verification.and_then(|v| serde_json::from_str(&v).ok()),
        },
        payload: serde_json::from_str(&payload).unwrap_or(Value::Null),
        state: CallState::parse(&state).unwrap_or(CallState::Unknown),
        attempts: u32::try_from(attempts).unwrap_or(0),
        times: EntryTimes {
            started_at: row.get(9),
            updated_at: row.get(10),
        },
        replay: ReplayKey {
            caller_key: row.get(11),
            request_hash,
        },
        lease: Lease {
            owner: row.get(13),
            until: row.get(14),
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
    .with_record_payloads()
}
