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
//! This module holds what a journal keeps and the [`Journal`] trait; the
//! stores are in the `recourse-journal` crate (`SqliteJournal`, embedded,
//! the default; `PostgresJournal`, for replicas sharing one record), one
//! trait test suite for both.

mod approval;
mod claim;
mod counts;
mod entry_parts;
mod keyed;
mod record_json;
mod seen;

use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde_json::Value;

pub use crate::record::CallState;
pub use crate::timestamp::{lease_until, rfc3339, rfc3339_now};
pub use approval::{ApprovalDecision, AwaitingCall, DecidedTo};
pub use claim::{Claimed, KeyClaim, NewCall};
pub use counts::StateCounts;
pub use entry_parts::{ApprovalAsked, Declared, Ended, EntryTimes, Lease, ReplayKey};
pub use keyed::{KeyedAnswer, keyed_answer};
pub use record_json::RecordJson;
pub use seen::{ListQuery, Seen};

use crate::approval::ApprovalState;
use crate::idempotency::{Evidence, Idempotency};
use crate::policy::StopReason;
use crate::record::{AwaitingRecord, CallReport, Outcome, Settlement};
use crate::transport::BoxFuture;

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
    /// How an unknown outcome of the call can be settled, as it was declared.
    #[serde(flatten)]
    pub declared: Declared,
    /// The caller's payload (redacted).
    pub payload: Value,
    /// Where the call stands.
    pub state: CallState,
    /// Attempts recorded.
    pub attempts: u32,
    /// When the call started, and when its record last changed.
    #[serde(flatten)]
    pub times: EntryTimes,
    /// The key the caller chose and its request's digest, when it chose one.
    #[serde(flatten)]
    pub replay: ReplayKey,
    /// Which process runs (or ran) the call, and until when it holds it.
    #[serde(flatten)]
    pub lease: Lease,
    /// The call's record and what settled it, once it finished.
    #[serde(skip)]
    pub ended: Ended,
    /// Who made the call: a gateway caller's name; `None` for a call made
    /// outside a gateway (it counts as [`DEFAULT_CALLER`]'s).
    pub caller: Option<String>,
    /// The call's approval and the request it is asked for, when it needed one.
    #[serde(flatten)]
    pub asked: ApprovalAsked,
}

/// The caller a gateway with one token (or none) serves, and whose calls
/// are the ones recorded without a caller.
pub const DEFAULT_CALLER: &str = "default";

impl JournalEntry {
    /// An entry with only its id and state, every other field empty (no
    /// target, no payload, no attempts, no lease): for tests and examples —
    /// a journal's entries come from its store.
    pub fn new(call_id: impl Into<String>, state: CallState) -> Self {
        Self {
            call_id: call_id.into(),
            target: String::new(),
            capability: None,
            idempotency_key: None,
            operation_id: None,
            declared: Declared::default(),
            payload: Value::Null,
            state,
            attempts: 0,
            times: EntryTimes::default(),
            replay: ReplayKey::default(),
            lease: Lease::default(),
            ended: Ended::default(),
            caller: None,
            asked: ApprovalAsked::default(),
        }
    }

    /// The entry as read from a journal: its record's attempts given the
    /// call's payload where they were stored without it
    /// ([`RecordJson::with_payloads`]).
    #[must_use]
    pub fn with_record_payloads(mut self) -> Self {
        if let Some(record) = self.ended.record.take() {
            self.ended.record = Some(RecordJson::with_payloads(record, &self.payload));
        }
        self
    }

    /// Whose call this is: its caller, or [`DEFAULT_CALLER`] when none was recorded.
    pub fn caller(&self) -> &str {
        self.caller.as_deref().unwrap_or(DEFAULT_CALLER)
    }

    /// Whether a process holds the call at `now` (an unexpired lease): pass
    /// the injected clock's [`wall`](crate::clock::Clock::wall) time.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use recourse_core::journal::{CallState, JournalEntry};
    ///
    /// let mut entry = JournalEntry::new("c-1", CallState::InFlight);
    /// let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    /// entry.lease.until = Some(recourse_core::journal::rfc3339(now + Duration::from_secs(30)));
    /// assert!(entry.is_leased(now));
    /// assert!(!entry.is_leased(now + Duration::from_secs(30)));
    /// ```
    pub fn is_leased(&self, now: SystemTime) -> bool {
        self.lease
            .until
            .as_deref()
            .is_some_and(|until| until > rfc3339(now).as_str())
    }

    /// The call's record: the stored one, or — for a call whose process
    /// stopped before it wrote one, or that is still running — the record
    /// the journal alone gives ([`JournalEntry::report`]); for a call
    /// awaiting approval, its [`AwaitingRecord`]. Always a full record, with
    /// `stop_kind` and `next`; a call that needed approval's says where
    /// its approval stands (`approval`).
    pub fn record_json(&self) -> Value {
        let mut record = match (&self.ended.record, &self.asked.approval) {
            (_, Some(approval)) if self.state == CallState::AwaitingApproval => {
                return AwaitingRecord::new(&self.call_id, approval).to_json();
            }
            (Some(record), _) => record.clone(),
            (None, _) => self.report().to_json(),
        };
        if let (Value::Object(fields), Some(approval)) = (&mut record, &self.asked.approval) {
            fields.insert(
                "approval".to_owned(),
                serde_json::to_value(approval).unwrap_or(Value::Null),
            );
        }
        record
    }

    /// Whether the call waits for an approval that is due to expire at
    /// `now` (RFC 3339, UTC).
    pub fn approval_is_due(&self, now: &str) -> bool {
        self.state == CallState::AwaitingApproval
            && self.asked.approval.as_ref().is_some_and(|a| a.is_due(now))
    }

    /// The report the journal alone gives of this call: its outcome by its
    /// state (a call in flight, or left in flight by a process that died, is
    /// `unknown`: it may have written), its key and operation id, and as
    /// `http_calls` the attempts the journal recorded; no attempts' details,
    /// and — since the journal does not keep the evidence — not idempotent.
    pub fn report(&self) -> CallReport {
        let outcome = match self.state {
            CallState::Succeeded => Outcome::Succeeded {
                data: Value::Null.into(),
            },
            CallState::Failed => Outcome::Failed {
                error: None,
                reason: self.failed_reason(),
            },
            // Never dispatched: nothing can have been written.
            CallState::AwaitingApproval => Outcome::Failed {
                error: None,
                reason: StopReason::NotCommitted,
            },
            CallState::Unknown | CallState::InFlight => Outcome::Unknown {
                error: None,
                reason: StopReason::OutcomeUnknown,
            },
        };
        let not_idempotent = Idempotency {
            idempotent: false,
            from: Evidence::Default,
        };
        let mut report = CallReport::new(self.call_id.clone(), outcome, not_idempotent);
        report.http_calls = self.attempts;
        report.idempotency_key.clone_from(&self.idempotency_key);
        report.operation_id.clone_from(&self.operation_id);
        report
    }

    /// Why a failed call failed, as far as the journal tells: its approval,
    /// when a person rejected it or it expired; else nothing was committed.
    fn failed_reason(&self) -> StopReason {
        match self.asked.approval.as_ref().map(|a| a.state) {
            Some(ApprovalState::Rejected) => StopReason::ApprovalRejected,
            Some(ApprovalState::Expired) => StopReason::ApprovalExpired,
            _ => StopReason::NotCommitted,
        }
    }

    /// This call's record once `settlement` decided it as `outcome`: the
    /// journal's report ([`JournalEntry::report`]) with that outcome and
    /// settlement, keeping — when the call's process wrote a record — that
    /// record's history: its attempts, what they cost, how long it took.
    pub fn settled_record(&self, outcome: Outcome, settlement: Settlement) -> Value {
        let mut report = self.report();
        report.outcome = outcome;
        report.settlement = Some(settlement);
        let mut settled = report.to_json();
        if let (Some(Value::Object(first)), Value::Object(record)) =
            (&self.ended.record, &mut settled)
        {
            for name in HISTORY {
                if let Some(value) = first.get(name) {
                    record.insert(name.to_owned(), value.clone());
                }
            }
        }
        settled
    }
}

/// The fields of a call's first record that a settlement keeps: what its
/// attempts did, not how it ended.
const HISTORY: [&str; 8] = [
    "http_calls",
    "llm_calls",
    "tokens",
    "llm_ms",
    "idempotency",
    "verification",
    "elapsed_ms",
    "attempts",
];

/// The result of an attempt, recorded after it.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptResult {
    /// The HTTP status, if the tool answered.
    pub status: Option<u16>,
    /// The transport failure (redacted), if it did not.
    pub transport_error: Option<crate::transport::TransportFailure>,
    /// What the policy decided (stored by its name).
    pub action: crate::policy::Action,
}

impl AttemptResult {
    /// The transport failure as stored: `kind: message`.
    pub fn transport_error_text(&self) -> Option<String> {
        self.transport_error.as_ref().map(ToString::to_string)
    }
}

mod error;

pub use error::{JournalError, JournalErrorKind};

/// What a journal without approvals answers when asked about one.
fn no_approvals<T>() -> JournalResult<T> {
    Err(JournalError::new(
        JournalErrorKind::Unsupported,
        "approvals",
        "this journal keeps no approvals",
    ))
}

/// Result of a journal operation.
pub type JournalResult<T> = Result<T, JournalError>;

/// A durable record of calls and attempts.
pub trait Journal: Send + Sync {
    /// Claims `claim.caller_key` for a new call, atomically: the first claim
    /// wins, a later one finds the existing entry.
    fn claim_key<'a>(&'a self, claim: &'a KeyClaim) -> BoxFuture<'a, JournalResult<Claimed>>;
    /// Records a call as in flight, held by its owner's lease. Called before
    /// the first dispatch; completes the entry of a claimed key. A call that
    /// ended `failed` is begun again only by a run taking it over because it
    /// sent nothing ([`KeyedAnswer::TakeOver`]): the attempts its first run
    /// recorded, and never sent, are forgotten with its count.
    fn begin_call<'a>(&'a self, call: &'a NewCall) -> BoxFuture<'a, JournalResult<()>>;
    /// Records attempt `n` with the payload about to be sent — `None` when
    /// it is the call's own payload, as [`begin_call`](Journal::begin_call)
    /// recorded it (then it is not stored again). Called before dispatch.
    /// An attempt is recorded once: recorded already, it is a
    /// [`JournalErrorKind::Conflict`] (another run of the call sends it).
    fn begin_attempt<'a>(
        &'a self,
        call_id: &'a str,
        n: u32,
        payload: Option<&'a Value>,
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
    /// Removes finished calls — `succeeded` or `failed`, no lease held —
    /// last changed before `before` (RFC 3339, UTC), with their attempts,
    /// at most `limit` of them; how many went. A call `in_flight` or
    /// `unknown` is never removed: it still has an outcome to settle. Nor
    /// is a call awaiting approval, or one whose approval a person rejected
    /// or that expired: the record of a decision about a write is kept.
    fn prune<'a>(&'a self, before: &'a str, limit: u32) -> BoxFuture<'a, JournalResult<u64>>;
    /// The call whose caller key is `caller_key`, if recorded.
    fn get_by_key<'a>(
        &'a self,
        caller_key: &'a str,
    ) -> BoxFuture<'a, JournalResult<Option<JournalEntry>>> {
        let _ = caller_key;
        Box::pin(async { no_approvals() })
    }
    /// Records `call` as awaiting approval, with no lease and nothing sent:
    /// a new entry, or the entry of its claimed key (then taken from the
    /// process that claimed it).
    fn await_approval<'a>(&'a self, call: &'a AwaitingCall) -> BoxFuture<'a, JournalResult<()>> {
        let _ = call;
        Box::pin(async { no_approvals() })
    }
    /// Applies `decision`, atomically, only if its approval is pending and
    /// its call awaits it — and, for an approval or a rejection, its expiry
    /// is after `decision.at`; for an expiry, at or before it: `false` when
    /// it did not apply (another decision came first). Of two decisions at
    /// once, in any process, exactly one applies.
    fn decide_approval<'a>(
        &'a self,
        decision: &'a ApprovalDecision,
    ) -> BoxFuture<'a, JournalResult<bool>> {
        let _ = decision;
        Box::pin(async { no_approvals() })
    }
    /// The call whose approval is `approval_id`, if recorded.
    fn get_by_approval<'a>(
        &'a self,
        approval_id: &'a str,
    ) -> BoxFuture<'a, JournalResult<Option<JournalEntry>>> {
        let _ = approval_id;
        Box::pin(async { no_approvals() })
    }
    /// The secret kept with the journal under `name`: `fresh` is kept when
    /// none is yet, and the one kept first is what every process sharing
    /// the journal reads — so what one seals, another opens. Never listed,
    /// never part of an entry.
    fn secret<'a>(
        &'a self,
        name: &'a str,
        fresh: &'a [u8],
    ) -> BoxFuture<'a, JournalResult<Vec<u8>>> {
        let _ = (name, fresh);
        Box::pin(async {
            Err(JournalError::new(
                JournalErrorKind::Unsupported,
                "secrets",
                "this journal keeps no secrets",
            ))
        })
    }

    /// How many calls `seen` admits, by state: the journal's size as that
    /// viewer sees it (a gateway's console shows it).
    ///
    /// The stores count in one query; this default reads every admitted
    /// call, a page of [`MAX_LIST`] at a time, for a journal of a test's or
    /// another crate's that has no such query.
    fn count<'a>(&'a self, seen: &'a Seen) -> BoxFuture<'a, JournalResult<StateCounts>> {
        Box::pin(async move {
            let mut counts = StateCounts::default();
            let mut query = ListQuery {
                limit: Some(MAX_LIST),
                seen: seen.clone(),
                ..ListQuery::default()
            };
            loop {
                let page = self.list(&query).await?;
                for entry in &page {
                    counts.add(entry.state, 1);
                }
                match page.last() {
                    Some(last) if page.len() == MAX_LIST as usize => {
                        query.before = Some(last.call_id.clone());
                    }
                    _ => return Ok(counts),
                }
            }
        })
    }
}

/// The most calls one list returns.
pub const MAX_LIST: u32 = 1000;
