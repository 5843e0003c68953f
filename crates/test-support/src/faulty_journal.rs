//! A journal that fails where a test says, as a database restarting does:
//! everything else is the journal it wraps.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use recourse_core::journal::{
    AttemptResult, CallState, Claimed, Journal, JournalEntry, JournalError, JournalErrorKind,
    JournalResult, KeyClaim, ListQuery, NewCall, RecordJson,
};
use recourse_core::transport::BoxFuture;
use serde_json::Value;

/// `inner`, but its first `begin_call`s and `renew_lease`s fail — as many
/// as [`failing_begins`](Self::failing_begins) and
/// [`failing_renewals`](Self::failing_renewals) say — and it counts the
/// renewals asked of it.
pub struct FaultyJournal {
    inner: Arc<dyn Journal>,
    begins_failing: AtomicU32,
    renewals_failing: AtomicU32,
    renewals: AtomicU32,
}

impl FaultyJournal {
    /// `inner`, failing nothing yet.
    pub fn new(inner: Arc<dyn Journal>) -> Self {
        Self {
            inner,
            begins_failing: AtomicU32::new(0),
            renewals_failing: AtomicU32::new(0),
            renewals: AtomicU32::new(0),
        }
    }

    /// The next `n` calls of `begin_call` fail (`u32::MAX`: every one).
    #[must_use]
    pub fn failing_begins(self, n: u32) -> Self {
        self.begins_failing.store(n, Ordering::SeqCst);
        self
    }

    /// The next `n` calls of `renew_lease` fail.
    #[must_use]
    pub fn failing_renewals(self, n: u32) -> Self {
        self.renewals_failing.store(n, Ordering::SeqCst);
        self
    }

    /// How many lease renewals were asked so far, failed or not.
    pub fn renewals(&self) -> u32 {
        self.renewals.load(Ordering::SeqCst)
    }

    /// Whether this call of a failing operation fails (one fewer to go).
    fn fails(left: &AtomicU32) -> bool {
        left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| match n {
            0 => None,
            u32::MAX => Some(u32::MAX),
            n => Some(n - 1),
        })
        .is_ok()
    }
}

fn restarting<T: Send + 'static>(doing: &'static str) -> BoxFuture<'static, JournalResult<T>> {
    Box::pin(async move {
        Err(JournalError::new(
            JournalErrorKind::Operation,
            doing,
            "the database is restarting",
        ))
    })
}

impl Journal for FaultyJournal {
    fn claim_key<'a>(&'a self, claim: &'a KeyClaim) -> BoxFuture<'a, JournalResult<Claimed>> {
        self.inner.claim_key(claim)
    }
    fn begin_call<'a>(&'a self, call: &'a NewCall) -> BoxFuture<'a, JournalResult<()>> {
        if Self::fails(&self.begins_failing) {
            return restarting("recording call");
        }
        self.inner.begin_call(call)
    }
    fn begin_attempt<'a>(
        &'a self,
        call_id: &'a str,
        n: u32,
        payload: Option<&'a Value>,
    ) -> BoxFuture<'a, JournalResult<()>> {
        self.inner.begin_attempt(call_id, n, payload)
    }
    fn finish_attempt<'a>(
        &'a self,
        call_id: &'a str,
        n: u32,
        result: &'a AttemptResult,
    ) -> BoxFuture<'a, JournalResult<()>> {
        self.inner.finish_attempt(call_id, n, result)
    }
    fn finish_call<'a>(
        &'a self,
        call_id: &'a str,
        state: CallState,
        operation_id: Option<&'a str>,
        record: Option<&'a RecordJson>,
    ) -> BoxFuture<'a, JournalResult<()>> {
        self.inner.finish_call(call_id, state, operation_id, record)
    }
    fn renew_lease<'a>(
        &'a self,
        call_id: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, JournalResult<bool>> {
        self.renewals.fetch_add(1, Ordering::SeqCst);
        if Self::fails(&self.renewals_failing) {
            return restarting("renewing a lease");
        }
        self.inner.renew_lease(call_id, owner, lease)
    }
    fn take_over<'a>(
        &'a self,
        call_id: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, JournalResult<bool>> {
        self.inner.take_over(call_id, owner, lease)
    }
    fn get<'a>(&'a self, call_id: &'a str) -> BoxFuture<'a, JournalResult<Option<JournalEntry>>> {
        self.inner.get(call_id)
    }
    fn list<'a>(&'a self, query: &'a ListQuery) -> BoxFuture<'a, JournalResult<Vec<JournalEntry>>> {
        self.inner.list(query)
    }
    fn prune<'a>(&'a self, before: &'a str, limit: u32) -> BoxFuture<'a, JournalResult<u64>> {
        self.inner.prune(before, limit)
    }
}
