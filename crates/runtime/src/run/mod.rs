//! The executor loop: one logical call, from admission to outcome.
//!
//! This is the only place that sends, sleeps, or asks a corrector or
//! reconciler. Each turn dispatches the admitted payload, parses what came
//! back, asks the pure [`Policy`](crate::Policy), and carries out its action —
//! and only its action: what to do after a lookup, how long an attempt may
//! take before the deadline, whether to resend, all come from the policy.

use std::time::{Duration, Instant};

use recourse_protocol::{
    ParsedResponse, RetryPermission, ToolData, ToolError, parse_response, redact, redact_value,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

mod correct;
mod journal;
mod reconcile;
mod resilience;
pub(crate) mod span;
mod verify;

use crate::record::millis;
use crate::transport::{Delivery, Request, TransportFailure};
use crate::{
    Action, AttemptRecord, AttemptResult, Backoff, Call, CallReport, CoercionChange,
    EndpointHealth, Event, Evidence, Executor, Idempotency, Observation, Outcome, PayloadSource,
    Policy, Protected, Situation, StopReason, TokenUsage, Traits, Verification, VerifyResult,
    WaitCause, WriteAnswer, is_unknown_outcome,
};

pub(crate) struct Run<'e> {
    exec: &'e Executor,
    policy: Policy,
    deadline: Option<Duration>,
    call_id: String,
    call: Call,
    cancel: CancellationToken,
    protected: Protected,
    idempotency: Idempotency,
    key: Option<String>,
    backoff: Backoff,
    started: Instant,
    payload: Value,
    source: PayloadSource,
    retries: u32,
    corrections: u32,
    lookups: u32,
    last_error: Option<ToolError>,
    last_data: Option<ToolData>,
    last_permission: RetryPermission,
    operation_id: Option<String>,
    attempts: Vec<AttemptRecord>,
    /// Events that belong to the next attempt (its payload's coercion, the journal).
    upcoming: Vec<Event>,
    http_calls: u32,
    llm_calls: u32,
    tokens: TokenUsage,
    llm_time: Duration,
    /// Held while the call is journaled: its lease, renewed.
    lease: Option<journal::LeaseRenewal>,
    /// How the last attempt ended, not yet in the journal: it goes with the
    /// journal's next write.
    ended: Option<(u32, AttemptResult)>,
    /// The verification read before the first dispatch, and what it found
    /// (boxed: few calls verify, and every call's future holds this struct).
    before: Option<Box<(crate::verify::ResolvedRead, VerifyResult)>>,
    /// What the last verification read after the write established.
    verification: Option<Verification>,
    /// The next success is read back: it answers a resend of a write a
    /// verification found not committed.
    verify_next_success: bool,
}

enum Flow {
    Next,
    Done(Outcome),
}

/// A fresh id (a call's, an idempotency key): a UUIDv7, hyphenated, written
/// straight into its string rather than through `Display`'s formatter.
pub(crate) fn new_id() -> String {
    let mut buf = uuid::Uuid::encode_buffer();
    uuid::Uuid::now_v7()
        .hyphenated()
        .encode_lower(&mut buf)
        .to_owned()
}

impl<'e> Run<'e> {
    pub(crate) fn start(exec: &'e Executor, mut call: Call, cancel: CancellationToken) -> Self {
        let config = &exec.config;
        let mut limits = config.limits;
        if let Some(n) = call.limits.max_retries {
            limits.max_retries = n;
        }
        if let Some(n) = call.limits.max_corrections {
            limits.max_corrections = n;
        }
        let backoff = Backoff::full_jitter(config.backoff_base, limits.max_backoff)
            .with_seed(exec.next_jitter_seed());
        Self {
            exec,
            policy: Policy::new(limits),
            deadline: call.limits.deadline.or(config.deadline),
            call_id: call.call_id.clone().unwrap_or_else(new_id),
            idempotency: call.idempotency,
            protected: Protected::snapshot(&call.protected, &call.payload),
            // The run owns the payload from here; `call.payload` is left empty.
            payload: std::mem::take(&mut call.payload),
            call,
            cancel,
            key: None,
            backoff,
            started: exec.clock.now(),
            source: PayloadSource::Caller,
            retries: 0,
            corrections: 0,
            lookups: 0,
            last_error: None,
            last_data: None,
            last_permission: RetryPermission::Unspecified,
            operation_id: None,
            attempts: Vec::new(),
            upcoming: Vec::new(),
            http_calls: 0,
            llm_calls: 0,
            tokens: TokenUsage::default(),
            llm_time: Duration::ZERO,
            lease: None,
            ended: None,
            before: None,
            verification: None,
            verify_next_success: false,
        }
    }

    /// Runs the call; its clock (elapsed time, deadline) starts at the first
    /// poll, as an `async fn`'s would, though the run was set up before.
    pub(crate) async fn run(mut self) -> CallReport {
        self.started = self.exec.clock.now();
        let span = span::call(&self.call, &self.call_id);
        let outcome = self.drive().instrument(span.clone()).await;
        let report = CallReport {
            call_id: self.call_id.clone(),
            outcome,
            attempts: std::mem::take(&mut self.attempts),
            http_calls: self.http_calls,
            llm_calls: self.llm_calls,
            tokens: self.tokens,
            llm_time: self.llm_time,
            idempotency: self.idempotency,
            idempotency_key: self.key.clone(),
            operation_id: self.operation_id.clone(),
            verification: self.verification,
            elapsed: self
                .exec
                .clock
                .now()
                .saturating_duration_since(self.started),
        };
        let report = self.journal_outcome(report).instrument(span.clone()).await;
        span::call_finished(&span, &report);
        report
    }

    /// The payload as admission normalises it (schema coercion), kept only
    /// when every protected value is as the caller gave it.
    fn admit_payload(&mut self) {
        let schema = self.call.schema.as_ref();
        if self.exec.admission.leaves_unchanged(schema) {
            return;
        }
        let admitted = self
            .exec
            .admission
            .admit(self.payload.clone(), schema, &self.protected);
        if !admitted.changes.is_empty() && self.protected.check(&admitted.payload).is_ok() {
            self.payload = admitted.payload;
            self.source = PayloadSource::Coercion;
            self.coerced(admitted.changes);
        }
    }

    async fn drive(&mut self) -> Outcome {
        self.resolve_idempotency().await;
        if let Err(e) = self.journal_call().await {
            self.last_error = Some(ToolError::service_error(
                "JOURNAL_UNAVAILABLE",
                e.to_string(),
            ));
            return self.stopped(StopReason::JournalUnavailable);
        }
        self.deposit().await;
        self.admit_payload();
        self.verify_before().await;
        loop {
            if self.cancel.is_cancelled() {
                return self.stopped(StopReason::Cancelled);
            }
            match self.attempt().await {
                Flow::Next => {}
                Flow::Done(outcome) => return outcome,
            }
        }
    }

    /// Asks the tool's manifest when neither the caller nor the tool said
    /// whether the call is idempotent — spending at most a quarter of the
    /// time left (and never more than the attempt timeout) on it — then
    /// settles the key every attempt carries: the caller's, or a fresh one
    /// for a non-idempotent call.
    async fn resolve_idempotency(&mut self) {
        let per_attempt = self.exec.config.request_timeout;
        let budget = self
            .remaining()
            .map_or(per_attempt, |left| (left / 4).min(per_attempt));
        if self.call.ask_manifest
            && let (Some(manifests), Some(url)) = (&self.exec.manifests, self.call.target.url())
            && let Some(idempotent) = manifests.declares(url, self.call.method, budget).await
        {
            self.idempotency = Idempotency {
                idempotent,
                from: Evidence::Manifest,
            };
        }
        tracing::debug!(
            idempotent = self.idempotency.idempotent,
            from = self.idempotency.from.as_str(),
            "idempotency decided"
        );
        self.key = self
            .call
            .caller_key
            .clone()
            .or_else(|| (!self.idempotency.idempotent).then(new_id));
    }

    fn traits(&self) -> Traits {
        Traits {
            idempotent: self.idempotency.idempotent,
            delegated: self.call.delegated,
        }
    }

    async fn attempt(&mut self) -> Flow {
        if !self.admit().await {
            self.last_error.get_or_insert_with(|| {
                ToolError::service_error("CIRCUIT_OPEN", "circuit breaker open; not dispatched")
                    .retryable(true)
            });
            return Flow::Done(self.stopped(StopReason::CircuitOpen));
        }
        let Some(timeout) = self
            .policy
            .attempt_timeout(self.exec.config.request_timeout, self.remaining())
        else {
            return Flow::Done(self.stopped(StopReason::DeadlineExceeded));
        };
        let n = u32::try_from(self.attempts.len())
            .unwrap_or(u32::MAX)
            .saturating_add(1);
        if let Err(e) = self.journal_attempt_start(n).await {
            self.last_error = Some(ToolError::service_error(
                "JOURNAL_UNAVAILABLE",
                e.to_string(),
            ));
            return Flow::Done(self.stopped(StopReason::JournalUnavailable));
        }
        let span = span::attempt(n, millis(timeout));
        let delivery = self.dispatch(timeout).instrument(span.clone()).await;
        if delivery
            .as_ref()
            .map_or_else(|t| t.kind.was_sent(), |_| true)
        {
            self.http_calls += 1;
        }
        let parsed = delivery.as_ref().map(|raw| {
            parse_response(
                raw.status,
                raw.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
                &raw.body,
            )
        });
        let observation = match &parsed {
            Ok(p) => Observation::Response(p),
            Err(t) => Observation::Transport(t),
        };
        let health = self.observe(observation);
        self.record_health(health).await;
        let situation = self.situation();
        let action = self.policy.decide(observation, &situation);
        let action = self.gate_retry(action).await;
        self.record(n, observation, &action, timeout);
        // A success's data, moved out of the response rather than copied.
        if let Ok(response) = parsed
            && response.success
        {
            self.last_data = Some(response.data.unwrap_or_default());
        }
        if let Some(record) = self.attempts.last() {
            span::attempt_decided(&span, record);
        }
        self.journal_attempt_end(n);
        self.carry_out(action).await
    }

    async fn dispatch(&self, timeout: Duration) -> Delivery {
        let mut headers = self.call.headers.clone();
        if let Some(key) = &self.key {
            headers.push((self.exec.config.idempotency_header.clone(), key.clone()));
        }
        let request = Request {
            target: self.call.target.clone(),
            method: self.call.method,
            headers,
            idempotency_key: self.key.clone(),
            payload: self.payload.clone(),
            timeout,
        };
        if self.exec.transport.enforces_timeout() {
            return self.exec.transport.send(&request).await;
        }
        // A guard for transports that may ignore it (in-process tools that hang).
        let guard = timeout + Duration::from_secs(1);
        match tokio::time::timeout(guard, self.exec.transport.send(&request)).await {
            Ok(delivery) => delivery,
            Err(_) => Err(TransportFailure::new(
                crate::TransportFailureKind::TimedOutAfterSend,
                format!("no answer within {guard:?}"),
            )),
        }
    }

    /// Remembers what the attempt said, and how the endpoint is, for its breaker.
    fn observe(&mut self, observation: Observation<'_>) -> EndpointHealth {
        let unknown = is_unknown_outcome(observation, self.traits());
        let transient = match observation {
            Observation::Response(r) => {
                self.remember_response(r, unknown);
                matches!(r.routing_status(), Some(408 | 429 | 500..=599))
            }
            Observation::Transport(t) => {
                let code = t.kind.as_str().to_ascii_uppercase();
                let resendable = !unknown && t.kind.is_transient();
                self.last_error =
                    Some(ToolError::service_error(code, redact(&t.message)).retryable(resendable));
                self.last_permission = RetryPermission::Unspecified;
                t.kind.is_transient()
            }
        };
        if transient {
            EndpointHealth::TransientFailure
        } else {
            EndpointHealth::Healthy
        }
    }

    fn remember_response(&mut self, r: &ParsedResponse, unknown: bool) {
        self.last_permission = r.permission;
        if r.success {
            // Its data is taken once the attempt is recorded (`attempt`).
            return;
        }
        self.last_error = r.to_tool_error().map(|mut error| {
            // The tool did not say; say what recourse made of it, so a call
            // that was resent does not end reading "retryable: false".
            if r.permission == RetryPermission::Unspecified {
                error.retryable =
                    !unknown && matches!(r.routing_status(), Some(408 | 429 | 500..=599));
            }
            error
        });
        if let Some(op) = r.details.get("operation_id").and_then(Value::as_str) {
            self.operation_id = Some(op.to_owned());
        }
    }

    fn remaining(&self) -> Option<Duration> {
        let elapsed = self
            .exec
            .clock
            .now()
            .saturating_duration_since(self.started);
        self.deadline.map(|d| d.saturating_sub(elapsed))
    }

    fn situation(&mut self) -> Situation {
        Situation {
            traits: self.traits(),
            retries_used: self.retries,
            corrections_used: self.corrections,
            lookups_used: self.lookups,
            backoff: self.backoff.next().unwrap_or_default(),
            remaining: self.remaining(),
            corrector_available: self.exec.corrector.is_some(),
            reconciler_available: self.call.verifier.is_some()
                || self.call.reconciler.is_some()
                || self.exec.reconciler.is_some(),
            verify_success: self.verify_next_success
                || self.call.verifier.as_ref().is_some_and(|v| v.always()),
            has_mutable_inputs: self.protected.has_mutable_inputs(&self.payload),
        }
    }

    /// A resend also needs a token from the shared budget.
    async fn gate_retry(&self, action: Action) -> Action {
        match action {
            Action::RetrySame { .. } if !self.withdraw().await => {
                Action::stop(StopReason::RetryBudgetExhausted)
            }
            _ => action,
        }
    }

    fn record(&mut self, n: u32, observation: Observation<'_>, action: &Action, timeout: Duration) {
        let (status, transport_error, category, code) = match observation {
            Observation::Response(r) => (Some(r.status), None, r.category.clone(), r.code.clone()),
            Observation::Transport(t) => {
                let mut failure = t.clone();
                failure.message = redact(&t.message);
                (t.status, Some(failure), None, None)
            }
        };
        self.attempts.push(AttemptRecord {
            n,
            payload: redact_value(&self.payload),
            status,
            transport_error,
            category,
            code,
            retry_permission: self.last_permission,
            action: action.clone(),
            timeout_ms: millis(timeout),
            source: self.source,
            events: std::mem::take(&mut self.upcoming),
        });
    }

    /// Adds an event to the attempt just made.
    fn event(&mut self, event: Event) {
        match self.attempts.last_mut() {
            Some(last) => last.events.push(event),
            None => self.upcoming.push(event),
        }
    }

    /// Records coercion of the payload the next attempt sends.
    fn coerced(&mut self, changes: Vec<CoercionChange>) {
        if changes.is_empty() {
            return;
        }
        let changes = changes
            .into_iter()
            .map(|c| CoercionChange {
                from: redact_value(&c.from),
                to: c.to.as_ref().map(redact_value),
                ..c
            })
            .collect();
        self.upcoming.push(Event::Coerced { changes });
    }

    async fn carry_out(&mut self, action: Action) -> Flow {
        match action {
            Action::Succeed => Flow::Done(Outcome::Succeeded {
                data: self.last_data.take().unwrap_or_default(),
            }),
            Action::RetrySame { wait, cause } => {
                if !self.wait(wait, cause).await {
                    return Flow::Done(self.stopped(StopReason::Cancelled));
                }
                self.retries += 1;
                Flow::Next
            }
            Action::Correct => self.correct().await,
            Action::Reconcile { .. } if self.call.verifier.is_some() => {
                let permission = self.last_permission;
                self.verify_after(WriteAnswer::Unknown { permission }).await
            }
            Action::Reconcile { .. } => self.reconcile().await,
            Action::Verify => self.verify_after(WriteAnswer::Succeeded).await,
            Action::Stop { reason } => Flow::Done(self.stopped(reason)),
        }
    }

    /// Waits on the executor's clock and records it; `false` if cancelled first.
    async fn wait(&mut self, wait: Duration, cause: WaitCause) -> bool {
        if wait.is_zero() {
            return !self.cancel.is_cancelled();
        }
        let slept = tokio::select! {
            () = self.exec.clock.sleep(wait) => true,
            () = self.cancel.cancelled() => false,
        };
        if slept {
            self.event(Event::Waited {
                ms: millis(wait),
                cause,
            });
        }
        slept
    }

    fn stopped(&self, reason: StopReason) -> Outcome {
        let error = self.last_error.clone();
        if reason.leaves_outcome_unknown() {
            Outcome::Unknown { error, reason }
        } else {
            Outcome::Failed { error, reason }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_new_id_is_a_hyphenated_lowercase_uuid_v7() {
        let id = super::new_id();
        let parsed = uuid::Uuid::parse_str(&id).unwrap();
        assert_eq!(parsed.get_version_num(), 7);
        assert_eq!(id, parsed.to_string());
        assert_ne!(id, super::new_id());
    }
}
