//! [`Door`]: the call path both doors share — a call run once per key,
//! finished when its client leaves, or held for a person's approval — each
//! ending in a [`DoorAnswer`] the door renders.
//!
//! # Why a write outlives its client's patience
//!
//! A client that stops waiting (its timeout, a dropped connection, an MCP
//! `notifications/cancelled`) has not undone anything: a write already
//! sent may commit. Cancelling it mid-flight would leave the journal saying
//! `in_flight` with no one to settle it. So a call that [may
//! write](recourse::Call::may_write) runs to its end in the door's task
//! tracker — journaled, settled by its lookup or read, its key answering a
//! retry — and only the waiting stops. A read has nothing to finish: its
//! client's leaving stops it.

use std::sync::Arc;
use std::time::Duration;

use recourse::approval::{AskApproval, Asked, ask};
use recourse::clock::{Clock, SystemClock};
use recourse::journal::Journal;
use recourse::metrics::Metrics;
use recourse::{Call, CallReport, Executor};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::answer::DoorAnswer;
use crate::digest::RequestDigest;
use crate::finish::finishing;
use crate::refused::Refused;

/// The client stopped waiting (its cancellation fired) before the answer;
/// a call that may write goes on in the door's tracker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientLeft;

/// What a door's calls share: the journal, the tracker that finishes
/// writes whose client left, the clock approvals expire by, the lease, and
/// where finished calls are counted.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use recourse::{Call, Executor, InProcessTransport};
/// use recourse_door::{Door, DoorAnswer, RequestDigest};
/// use recourse_protocol::ToolResponse;
/// use serde_json::json;
/// use tokio_util::sync::CancellationToken;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let tool = InProcessTransport::from_tool(|_| async { ToolResponse::ok(json!({"id": 7})) });
/// let executor = Arc::new(Executor::builder(tool).build());
/// let door = Door::new(Duration::from_secs(30));
/// let call = Call::builder("orders.create", json!({"sku": "A"})).build().unwrap();
/// let spec = serde_json::from_value(json!({"payload": {"sku": "A"}})).unwrap();
/// let answer = door.run(executor, call, Some(&RequestDigest::of(&spec)), &CancellationToken::new()).await;
/// assert!(matches!(answer, Ok(DoorAnswer::Ran(_))));
/// # });
/// ```
#[derive(Clone)]
pub struct Door {
    journal: Option<Arc<dyn Journal>>,
    calls: TaskTracker,
    clock: Arc<dyn Clock>,
    lease: Duration,
    metrics: Option<Arc<Metrics>>,
}

impl std::fmt::Debug for Door {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Door")
            .field("journal", &self.journal.is_some())
            .field("running", &self.calls.len())
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

impl Door {
    /// A door without a journal, on real time, whose journaled calls hold
    /// leases of `lease`.
    pub fn new(lease: Duration) -> Self {
        Self {
            journal: None,
            calls: TaskTracker::new(),
            clock: Arc::new(SystemClock),
            lease,
            metrics: None,
        }
    }

    /// Journals keyed calls, writes and approvals in `journal`.
    #[must_use]
    pub fn with_journal(mut self, journal: Option<Arc<dyn Journal>>) -> Self {
        self.journal = journal;
        self
    }

    /// Approvals expire by `clock`'s wall time.
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Counts every call that ran in `metrics`.
    #[must_use]
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// The journal, when the door keeps one.
    pub fn journal(&self) -> Option<&Arc<dyn Journal>> {
        self.journal.as_ref()
    }

    /// The lease journaled calls hold.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// The clock approvals expire by.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The calls still running in the door's tracker (writes whose client
    /// left among them); shutdown waits for these.
    pub fn calls(&self) -> &TaskTracker {
        &self.calls
    }

    /// A keyed request needs the journal to answer its resends.
    ///
    /// # Errors
    /// [`Refused::journal_required`] when the door keeps none.
    pub fn check_keyed(&self, key: Option<&str>) -> Result<(), Refused> {
        match (key, &self.journal) {
            (Some(_), None) => Err(Refused::journal_required(
                "idempotency_key",
                "a keyed request is answered again from the journal",
            )),
            _ => Ok(()),
        }
    }

    /// Runs `call` on `executor`: a keyed call once per key (its resends
    /// answered from the journal, `digest` telling the same request from
    /// another), a call that may write finished even when `cancel` fires
    /// first. `digest` is the request's ([`RequestDigest::of`]): a keyed
    /// call needs it (without one it is refused, nothing sent); others need
    /// not compute it.
    ///
    /// # Errors
    /// [`ClientLeft`] when `cancel` fired before the answer.
    pub async fn run(
        &self,
        executor: Arc<Executor>,
        call: Call,
        digest: Option<&RequestDigest>,
        cancel: &CancellationToken,
    ) -> Result<DoorAnswer, ClientLeft> {
        self.enter(executor, call, digest, Some(cancel)).await
    }

    /// [`run`](Self::run) for a front whose client's leaving drops this
    /// future (an HTTP request's handler) rather than firing a
    /// cancellation: a read stops with it, a call that may write is finished
    /// in the door's tracker. Nothing is waited on besides the call — no
    /// cancellation made, registered or polled for each call.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use recourse::{Call, Executor, InProcessTransport};
    /// use recourse_door::{Door, DoorAnswer};
    /// use recourse_protocol::ToolResponse;
    /// use serde_json::json;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let tool = InProcessTransport::from_tool(|_| async { ToolResponse::ok(json!({"price": 7})) });
    /// let executor = Arc::new(Executor::builder(tool).build());
    /// let door = Door::new(Duration::from_secs(30));
    /// let call = Call::builder("quotes.get", json!({"sku": "A"})).build().unwrap();
    /// let answer = door.run_until_dropped(executor, call, None).await;
    /// assert!(matches!(answer, DoorAnswer::Ran(_)));
    /// # });
    /// ```
    pub async fn run_until_dropped(
        &self,
        executor: Arc<Executor>,
        call: Call,
        digest: Option<&RequestDigest>,
    ) -> DoorAnswer {
        match self.enter(executor, call, digest, None).await {
            Ok(answer) => answer,
            // Without a cancellation, no client can be seen to leave.
            Err(ClientLeft) => DoorAnswer::Refused(Refused::aborted(None)),
        }
    }

    /// The call path of [`run`](Self::run), `cancel` watched when given.
    async fn enter(
        &self,
        executor: Arc<Executor>,
        call: Call,
        digest: Option<&RequestDigest>,
        cancel: Option<&CancellationToken>,
    ) -> Result<DoorAnswer, ClientLeft> {
        if let Err(refused) = self.check_keyed(call.idempotency_key()) {
            return Ok(DoorAnswer::Refused(refused));
        }
        let digest = match (digest, call.idempotency_key()) {
            (Some(digest), _) => digest.as_str().to_owned(),
            (None, None) => String::new(),
            // A keyed call is looked up by its request: without its digest
            // a resend could not be told from another request.
            (None, Some(_)) => {
                debug_assert!(false, "a keyed call reached the door without its digest");
                return Ok(DoorAnswer::Refused(Refused::aborted(call.call_id())));
            }
        };
        if !call.may_write() {
            // A read: nothing to finish; its client's leaving stops it. The
            // run's future (some 4 KB) is boxed as it is made, so the door's
            // own future — and each request's future around it, which axum
            // moves into a box of its own — stays small.
            let report = match cancel {
                Some(cancel) => {
                    let report = Box::pin(executor.execute_with_cancel(call, cancel.clone())).await;
                    if cancel.is_cancelled() {
                        return Err(ClientLeft);
                    }
                    report
                }
                None => Box::pin(executor.execute(call)).await,
            };
            self.observe(&report);
            return Ok(DoorAnswer::of_report(Box::new(report)));
        }
        let call_id = call.call_id().map(str::to_owned);
        let metrics = self.metrics.clone();
        let running = finishing(&self.calls, async move {
            let keyed = executor.execute_keyed(call, &digest).await;
            if let (Ok(recourse::keyed::Keyed::Ran(report)), Some(metrics)) = (&keyed, &metrics) {
                metrics.observe(report);
            }
            keyed
        });
        let finished = match cancel {
            Some(cancel) => tokio::select! {
                finished = running => finished,
                () = cancel.cancelled() => return Err(ClientLeft),
            },
            // Dropped instead: `Finishing` hands the call to the tracker.
            None => running.await,
        };
        Ok(match finished {
            Ok(Ok(keyed)) => DoorAnswer::of_keyed(keyed, self.lease),
            Ok(Err(e)) => DoorAnswer::Refused(Refused::journal_unavailable(&e)),
            Err(_aborted) => DoorAnswer::Refused(Refused::aborted(call_id.as_deref())),
        })
    }

    /// Holds a call for a person's approval: journaled as
    /// `awaiting_approval`, nothing sent — or, under a key claimed already,
    /// where that key's call stands.
    pub async fn hold(&self, asking: &AskApproval) -> DoorAnswer {
        let Some(journal) = self.journal.as_ref() else {
            return DoorAnswer::Refused(Refused::journal_required(
                "approval",
                "this call waits for a person's approval in the journal",
            ));
        };
        match ask(journal.as_ref(), asking, self.clock.wall(), self.lease).await {
            Ok(Asked::Awaiting(entry)) => DoorAnswer::Awaiting {
                record: Box::new(entry.record_json()),
                replayed: false,
            },
            // Asking never runs a call: a key that says it ran is a fault.
            Ok(Asked::Keyed(recourse::keyed::Keyed::Ran(report))) => {
                DoorAnswer::Refused(Refused::aborted(Some(&report.call_id)))
            }
            Ok(Asked::Keyed(keyed)) => DoorAnswer::of_keyed(keyed, self.lease),
            Err(e) => DoorAnswer::Refused(Refused::journal_unavailable(&e)),
        }
    }

    /// Stops taking calls into account and waits, at most `grace`, for the
    /// running ones to finish: how many were still running after it (each
    /// stays in flight in the journal, settled once its lease runs out).
    pub async fn finish_calls(&self, grace: Duration) -> usize {
        self.calls.close();
        match tokio::time::timeout(grace, self.calls.wait()).await {
            Ok(()) => 0,
            Err(_) => self.calls.len(),
        }
    }

    fn observe(&self, report: &CallReport) {
        if let Some(metrics) = &self.metrics {
            metrics.observe(report);
        }
    }
}
