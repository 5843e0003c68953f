//! The executor loop: one logical call, from admission to outcome.
//!
//! This is the only place that sends, sleeps, or asks a corrector or
//! reconciler. Each turn dispatches the admitted payload, parses what came
//! back, asks the pure [`Policy`](crate::Policy), and carries out its action.

use std::time::{Duration, Instant};

use recourse_protocol::{ParsedResponse, RetryPermission, ToolError, parse_response, redact_value};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

mod correct;
mod journal;
mod reconcile;

use crate::transport::{Delivery, Request, TransportFailure};
use crate::{
    Action, AttemptRecord, Backoff, Call, CallReport, Executor, Observation, Outcome,
    PayloadSource, Protected, Situation, StopReason, TokenUsage,
};

pub(crate) struct Run<'e> {
    exec: &'e Executor,
    call_id: String,
    call: Call,
    cancel: CancellationToken,
    protected: Protected,
    key: Option<String>,
    backoff: Backoff,
    started: Instant,
    payload: Value,
    source: PayloadSource,
    retries: u32,
    corrections: u32,
    last_error: Option<ToolError>,
    last_data: Option<Value>,
    last_permission: RetryPermission,
    operation_id: Option<String>,
    attempts: Vec<AttemptRecord>,
    http_calls: u32,
    llm_calls: u32,
    tokens: TokenUsage,
    llm_time: Duration,
}

enum Flow {
    Next,
    Done(Outcome),
}

impl<'e> Run<'e> {
    pub(crate) fn start(exec: &'e Executor, call: Call, cancel: CancellationToken) -> Self {
        let config = &exec.config;
        let mut backoff = Backoff::full_jitter(config.backoff_base, config.limits.max_backoff);
        if let Some(seed) = exec.jitter_seed {
            backoff = backoff.with_seed(seed);
        }
        let key = (!call.traits.idempotent).then(|| uuid::Uuid::now_v7().to_string());
        Self {
            exec,
            call_id: uuid::Uuid::now_v7().to_string(),
            protected: Protected::snapshot(&call.protected, &call.payload),
            payload: call.payload.clone(),
            call,
            cancel,
            key,
            backoff,
            started: exec.clock.now(),
            source: PayloadSource::Caller,
            retries: 0,
            corrections: 0,
            last_error: None,
            last_data: None,
            last_permission: RetryPermission::Unspecified,
            operation_id: None,
            attempts: Vec::new(),
            http_calls: 0,
            llm_calls: 0,
            tokens: TokenUsage::default(),
            llm_time: Duration::ZERO,
        }
    }

    pub(crate) async fn run(mut self) -> CallReport {
        let span = tracing::info_span!("call", target = %self.call.target, idempotent = self.call.traits.idempotent);
        let outcome = self.drive().instrument(span).await;
        tracing::info!(
            outcome = outcome.name(),
            attempts = self.attempts.len(),
            "call finished"
        );
        self.journal_outcome(&outcome).await;
        CallReport {
            call_id: self.call_id,
            outcome,
            attempts: self.attempts,
            http_calls: self.http_calls,
            llm_calls: self.llm_calls,
            tokens: self.tokens,
            llm_time: self.llm_time,
            idempotency_key: self.key,
            operation_id: self.operation_id,
            elapsed: self
                .exec
                .clock
                .now()
                .saturating_duration_since(self.started),
        }
    }

    async fn drive(&mut self) -> Outcome {
        if let Err(e) = self.call.validate() {
            self.last_error = Some(ToolError::input_error("INVALID_CALL", e.to_string()));
            return self.stopped(StopReason::InvalidCall);
        }
        if let Err(e) = self.journal_call().await {
            self.last_error = Some(ToolError::service_error(
                "JOURNAL_UNAVAILABLE",
                e.to_string(),
            ));
            return self.stopped(StopReason::JournalUnavailable);
        }
        if let Some(budget) = &self.exec.budget {
            budget.deposit();
        }
        let admitted = self.exec.admission.admit(
            self.payload.clone(),
            self.call.schema.as_ref(),
            &self.protected,
        );
        if !admitted.changes.is_empty() && self.protected.check(&admitted.payload).is_ok() {
            self.payload = admitted.payload;
            self.source = PayloadSource::Coercion;
        }
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

    async fn attempt(&mut self) -> Flow {
        if let Some(breakers) = &self.exec.breakers
            && !breakers.admit(&self.call.target)
        {
            self.last_error.get_or_insert_with(|| {
                ToolError::service_error("CIRCUIT_OPEN", "circuit breaker open; not dispatched")
            });
            return Flow::Done(self.stopped(StopReason::CircuitOpen));
        }
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
        let delivery = self
            .dispatch()
            .instrument(tracing::debug_span!("attempt", n))
            .await;
        self.http_calls += 1;
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
        self.observe(observation);
        let situation = self.situation();
        let action = self.gate_retry(self.exec.policy.decide(observation, &situation));
        self.record(n, observation, &action);
        self.journal_attempt_end(n).await;
        self.carry_out(action).await
    }

    async fn dispatch(&self) -> Delivery {
        let mut headers = self.call.headers.clone();
        if let Some(key) = &self.key {
            headers.push((self.exec.config.idempotency_header.clone(), key.clone()));
        }
        let timeout = self.exec.config.request_timeout;
        let request = Request {
            target: self.call.target.clone(),
            headers,
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

    /// Remembers what the attempt said, and tells the breaker how the endpoint is.
    fn observe(&mut self, observation: Observation<'_>) {
        let transient = match observation {
            Observation::Response(r) => {
                self.remember_response(r);
                matches!(r.routing_status(), Some(408 | 429 | 500..=599))
            }
            Observation::Transport(t) => {
                let code = t.kind.as_str().to_ascii_uppercase();
                self.last_error = Some(ToolError::service_error(code, t.message.clone()));
                self.last_permission = RetryPermission::Unspecified;
                true
            }
        };
        if let Some(breakers) = &self.exec.breakers {
            if transient {
                breakers.record_transient_failure(&self.call.target);
            } else {
                breakers.record_healthy(&self.call.target);
            }
        }
    }

    fn remember_response(&mut self, r: &ParsedResponse) {
        self.last_permission = r.permission;
        if r.success {
            self.last_data = Some(r.data.clone().unwrap_or(Value::Null));
            return;
        }
        self.last_error = r.to_tool_error();
        if let Some(op) = r.details.get("operation_id").and_then(Value::as_str) {
            self.operation_id = Some(op.to_owned());
        }
    }

    fn situation(&mut self) -> Situation {
        let elapsed = self
            .exec
            .clock
            .now()
            .saturating_duration_since(self.started);
        Situation {
            traits: self.call.traits,
            retries_used: self.retries,
            corrections_used: self.corrections,
            backoff: self.backoff.next().unwrap_or_default(),
            remaining: self.exec.config.deadline.map(|d| d.saturating_sub(elapsed)),
            corrector_available: self.exec.corrector.is_some(),
            has_mutable_inputs: self.protected.has_mutable_inputs(&self.payload),
        }
    }

    /// A resend also needs a token from the shared budget.
    fn gate_retry(&self, action: Action) -> Action {
        match (&action, &self.exec.budget) {
            (Action::RetrySame { .. }, Some(budget)) if !budget.withdraw() => {
                Action::stop(StopReason::RetryBudgetExhausted)
            }
            _ => action,
        }
    }

    fn record(&mut self, n: u32, observation: Observation<'_>, action: &Action) {
        let (status, transport_error, category, code) = match observation {
            Observation::Response(r) => (
                Some(r.status),
                None,
                r.category.as_ref().map(ToString::to_string),
                r.code.clone(),
            ),
            Observation::Transport(t) => (
                None,
                Some(recourse_protocol::redact(&t.to_string())),
                None,
                None,
            ),
        };
        let (wait_ms, reason) = match action {
            Action::RetrySame { wait } => (
                Some(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX)),
                None,
            ),
            Action::Stop { reason } => (None, Some(reason.code())),
            _ => (None, None),
        };
        tracing::debug!(n, status, action = action.name(), reason, "attempt decided");
        self.attempts.push(AttemptRecord {
            n,
            payload: redact_value(&self.payload),
            status,
            transport_error,
            category,
            code,
            retry_permission: self.last_permission,
            action: action.name(),
            wait_ms,
            source: self.source,
            reason,
            notes: Vec::new(),
        });
    }

    fn note(&mut self, text: impl Into<String>) {
        if let Some(last) = self.attempts.last_mut() {
            last.notes.push(text.into());
        }
    }

    async fn carry_out(&mut self, action: Action) -> Flow {
        match action {
            Action::Succeed => Flow::Done(Outcome::Succeeded {
                data: self.last_data.take().unwrap_or(Value::Null),
            }),
            Action::RetrySame { wait } => {
                if !self.sleep(wait).await {
                    return Flow::Done(self.stopped(StopReason::Cancelled));
                }
                self.retries += 1;
                Flow::Next
            }
            Action::Correct => self.correct().await,
            Action::Reconcile => self.reconcile().await,
            Action::Stop { reason } => Flow::Done(self.stopped(reason)),
        }
    }

    /// Sleeps on the executor's clock; `false` if cancelled first.
    async fn sleep(&self, wait: Duration) -> bool {
        tokio::select! {
            () = self.exec.clock.sleep(wait) => true,
            () = self.cancel.cancelled() => false,
        }
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
