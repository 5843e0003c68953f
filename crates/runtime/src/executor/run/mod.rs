//! The executor loop: one logical call, from admission to outcome.
//!
//! This is the only place that sends, sleeps, or asks a corrector or
//! reconciler — and it decides nothing: the call's
//! [`CallMachine`](recourse_core::machine::CallMachine) says what to do next, and the
//! loop does it and tells the machine what happened. Whether to resend, how
//! long an attempt may take, what follows a lookup, a spent budget or an open
//! breaker, all come from the machine.

use std::time::{Duration, Instant};

use recourse_protocol::{ToolData, ToolError, parse_response, redact_value};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

mod attempts;
mod correct;
mod evidence;
mod journal;
mod outcome;
mod reconcile;
mod resilience;
mod verify;

use crate::call::{Call, new_id};
use crate::executor::Executor;
use crate::shared::EndpointHealth;
use crate::span;
use crate::transport::{Delivery, Request, TransportFailure};
use recourse_core::backoff::Backoff;
use recourse_core::idempotency::Idempotency;
use recourse_core::journal::AttemptResult;
use recourse_core::machine::{
    CallMachine, Command, DecisionMade, Dispatch, Finish, Resend, Ruling, SuccessFrom,
};
use recourse_core::policy::{Limits, Observation, Verification};
use recourse_core::protect::Protected;
use recourse_core::record::millis;
use recourse_core::record::{
    AttemptRecord, CallReport, CoercionChange, Event, Outcome, PayloadSource, TokenUsage, WaitCause,
};
use recourse_core::timing::attempt_guard;

pub(crate) struct Run<'e> {
    exec: &'e Executor,
    limits: Limits,
    deadline: Option<Duration>,
    call_id: String,
    call: Call,
    cancel: CancellationToken,
    /// Whether the call is idempotent, and the key its attempts carry.
    keying: Keying,
    /// Drawn from for waits: seeded per call from the executor.
    backoff: Option<Backoff>,
    started: Instant,
    /// The payload the next attempt sends.
    payload: Payload,
    /// What the tool said last.
    last: LastAnswer,
    /// The attempts made, and what belongs to the next.
    history: History,
    /// What the call has cost.
    spent: Spent,
    /// The call's journal entry, while it has one.
    journaling: Journaling,
    /// What the verification read, and the lookups under way.
    reads: Reads,
}

/// Whether the call is idempotent (and by what evidence), and the key
/// every attempt carries.
struct Keying {
    idempotency: Idempotency,
    key: Option<String>,
}

/// The payload the next attempt sends: where it came from, and the values
/// no correction may change.
struct Payload {
    value: Value,
    source: PayloadSource,
    protected: Protected,
}

/// What the tool said last.
#[derive(Default)]
struct LastAnswer {
    error: Option<ToolError>,
    data: Option<ToolData>,
    /// The tool's whole last answer, when its data (or error) is a part of
    /// it, and whether it was a success.
    answer: Option<(bool, Value)>,
    operation_id: Option<String>,
}

/// The attempts made, and the events gathered for the next.
#[derive(Default)]
struct History {
    attempts: Vec<AttemptRecord>,
    /// Events that belong to the next attempt (its payload's coercion, the journal).
    upcoming: Vec<Event>,
}

/// What the call has cost: calls to the tool and to models, tokens, model time.
#[derive(Default)]
struct Spent {
    http_calls: u32,
    llm_calls: u32,
    tokens: TokenUsage,
    llm_time: Duration,
}

/// The call's journal entry, while it has one.
#[derive(Default)]
struct Journaling {
    /// Held while the call is journaled: its lease, renewed.
    lease: Option<crate::journal::LeaseKeeper>,
    /// How the last attempt ended, not yet in the journal: it goes with the
    /// journal's next write.
    ended: Option<(u32, AttemptResult)>,
    /// The payload being sent, redacted for the journal: its record shows
    /// the same (the payload does not change between the two).
    redacted: Option<Value>,
    /// The call's payload as the journal recorded it (redacted): an
    /// attempt, or a record's attempt, that sent it is stored without it.
    journaled: Option<Value>,
}

/// What the verification read, and the lookups of an unknown outcome.
#[derive(Default)]
struct Reads {
    /// The verification read before the first dispatch, and what it found
    /// (boxed: few calls verify, and every call's future holds this struct).
    before: Option<Box<(crate::verify::ResolvedRead, crate::verify::Reading)>>,
    /// What the last verification read after the write established.
    verification: Option<Verification>,
    /// The span of the lookups of the current unknown outcome.
    reconciling: Option<tracing::Span>,
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
        let backoff = Backoff::seeded(
            config.backoff_base,
            limits.max_backoff,
            exec.next_jitter_seed(),
        );
        let not_applicable = call
            .settling
            .verify_not_applicable
            .then_some(Verification::NotApplicable);
        Self {
            exec,
            limits,
            deadline: call.limits.deadline.or(config.deadline),
            call_id: call.call_id.clone().unwrap_or_else(new_id),
            keying: Keying {
                idempotency: call.idempotency,
                key: None,
            },
            payload: Payload {
                protected: Protected::snapshot(&call.protected, &call.payload),
                // The run owns the payload from here; `call.payload` is left empty.
                value: std::mem::take(&mut call.payload),
                source: PayloadSource::Caller,
            },
            call,
            cancel,
            backoff: Some(backoff),
            started: exec.clock.now(),
            last: LastAnswer::default(),
            history: History::default(),
            spent: Spent::default(),
            journaling: Journaling::default(),
            reads: Reads {
                verification: not_applicable,
                ..Reads::default()
            },
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
            attempts: std::mem::take(&mut self.history.attempts),
            http_calls: self.spent.http_calls,
            llm_calls: self.spent.llm_calls,
            tokens: self.spent.tokens,
            llm_time: self.spent.llm_time,
            idempotency: self.keying.idempotency,
            idempotency_key: self.keying.key.clone(),
            operation_id: self.last.operation_id.clone(),
            verification: self.reads.verification.or(self
                .call
                .settling
                .verifier
                .is_some()
                .then_some(Verification::Unneeded)),
            elapsed: self
                .exec
                .clock
                .now()
                .saturating_duration_since(self.started),
            settlement: None,
            answer: self.last.answer.take().map(|(_, answer)| answer),
            ended_at: Some(self.exec.clock.wall()),
        };
        let report = self.journal_outcome(report).instrument(span.clone()).await;
        span::call_finished(&span, &report);
        report
    }

    /// The payload as admission normalises it (schema coercion), kept only
    /// when every protected value is as the caller gave it.
    fn admit_payload(&mut self) {
        let schema = self.call.described.schema.as_ref();
        if self.exec.admission.leaves_unchanged(schema) {
            return;
        }
        let admitted =
            self.exec
                .admission
                .admit(self.payload.value.clone(), schema, &self.payload.protected);
        if !admitted.changes.is_empty() && self.payload.protected.check(&admitted.payload).is_ok() {
            self.payload.value = admitted.payload;
            self.payload.source = PayloadSource::Coercion;
            self.coerced(admitted.changes);
        }
    }

    /// Sets the call up, then carries out what its machine says until it finishes.
    async fn drive(&mut self) -> Outcome {
        self.resolve_idempotency().await;
        let mut machine = CallMachine::new(self.setup());
        if let Err(e) = self.journal_call().await {
            self.give_back_claim();
            self.journal_failed(&e);
            return self.finished(machine.journal_failed());
        }
        self.deposit().await;
        self.admit_payload();
        machine.set_mutable_inputs(
            self.payload
                .protected
                .has_mutable_inputs(&self.payload.value),
        );
        let mut command = machine.start(self.started);
        loop {
            command = match command {
                Command::ReadBefore(read) => {
                    let timeout = machine.read_timeout(self.exec.clock.now());
                    self.verify_before(timeout).await;
                    machine.read_before(read)
                }
                Command::Admit(_) if self.cancel.is_cancelled() => {
                    Command::Finish(machine.cancelled())
                }
                Command::Admit(admit) => {
                    if self.admit().await {
                        machine.admitted(admit, true, self.exec.clock.now())
                    } else {
                        let refused = machine.refused(admit);
                        self.last.error.get_or_insert(refused.error);
                        Command::Finish(refused.finish)
                    }
                }
                Command::Dispatch(dispatch) => self.attempt(&mut machine, dispatch).await,
                Command::Wait(wait) => {
                    if self.wait(wait.duration(), wait.cause()).await {
                        machine.waited(wait)
                    } else {
                        Command::Finish(machine.cancelled())
                    }
                }
                Command::Correct(correct) => {
                    let corrected = self.correct(correct.n()).await;
                    machine.corrected(correct, corrected)
                }
                Command::LookUp(lookup) => self.look_up(&mut machine, lookup).await,
                Command::ReadBack(read) => self.verify_after(&mut machine, read).await,
                Command::Finish(finish) => return self.finished(finish),
            };
        }
    }

    /// Sends attempt `dispatch`, and tells the machine what came back.
    async fn attempt(&mut self, machine: &mut CallMachine, dispatch: Dispatch) -> Command {
        let (n, timeout) = (dispatch.attempt(), dispatch.timeout());
        if let Err(e) = self.journal_attempt_start(n).await {
            self.journal_failed(&e);
            return Command::Finish(machine.journal_failed());
        }
        let span = span::attempt(n, millis(timeout));
        let delivery = self.dispatch(timeout).instrument(span.clone()).await;
        if delivery
            .as_ref()
            .map_or_else(|t| t.kind.was_sent(), |_| true)
        {
            self.spent.http_calls += 1;
        }
        // An answer the transport read already (an MCP result it holds
        // typed) is taken as read; any other is parsed from its bytes.
        let parsed = delivery.map(|mut raw| match raw.read.take() {
            Some(read) => *read,
            None => parse_response(
                raw.status,
                raw.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
                &raw.body,
            ),
        });
        let observation = match &parsed {
            Ok(p) => Observation::Response(p),
            Err(t) => Observation::Transport(t),
        };
        let answered = machine.answered(dispatch, observation, self.exec.clock.now());
        self.remember(observation, answered.assessment);
        self.record_health(if answered.assessment.transient {
            EndpointHealth::TransientFailure
        } else {
            EndpointHealth::Healthy
        })
        .await;
        let decided = self.gated(answered.verdict).await;
        self.record(
            n,
            observation,
            decided.action(),
            timeout,
            answered.assessment,
        );
        // A success's data, and the tool's whole answer when the data is
        // only a part of it, moved out of the response rather than copied.
        self.last.answer = None;
        if let Ok(response) = parsed {
            if response.success {
                self.last.data = Some(response.data.unwrap_or_default());
            }
            self.last.answer = response.answer.map(|answer| (response.success, answer));
        }
        if let Some(record) = self.history.attempts.last() {
            span::attempt_decided(&span, record);
        }
        self.journal_attempt_end(n);
        machine.follow(decided)
    }

    async fn dispatch(&self, timeout: Duration) -> Delivery {
        let mut headers = self.call.headers.clone();
        if let Some(key) = &self.keying.key {
            headers.push((self.exec.config.idempotency_header.clone(), key.clone()));
        }
        let request = Request {
            target: self.call.target.clone(),
            method: self.call.method,
            headers,
            idempotency_key: self.keying.key.clone(),
            payload: self.payload.value.clone(),
            timeout,
        };
        if self.exec.transport.enforces_timeout() {
            return self.exec.transport.send(&request).await;
        }
        // A guard for transports that may ignore it (in-process tools that
        // hang), on real time: it bounds a hung task, not the call's clock.
        let guard = attempt_guard(timeout);
        match tokio::time::timeout(guard, self.exec.transport.send(&request)).await {
            Ok(delivery) => delivery,
            Err(_) => Err(TransportFailure::new(
                recourse_core::transport::TransportFailureKind::TimedOutAfterSend,
                format!("no answer within {guard:?}"),
            )),
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

    /// A decision, once the retry budget has answered when it resends.
    async fn gated<A: Resend>(&self, verdict: Ruling<A>) -> DecisionMade<A> {
        match verdict {
            Ruling::DecisionMade(decided) => decided,
            Ruling::AskBudget(ask) => ask.answer(self.withdraw().await),
        }
    }

    /// Adds an event to the attempt just made.
    fn event(&mut self, event: Event) {
        match self.history.attempts.last_mut() {
            Some(last) => last.events.push(event),
            None => self.history.upcoming.push(event),
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
        self.history.upcoming.push(Event::Coerced { changes });
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

    /// The call's outcome, as the machine finished it.
    fn finished(&mut self, finish: Finish) -> Outcome {
        self.reads.reconciling = None;
        match finish {
            Finish::Succeeded(SuccessFrom::Answered | SuccessFrom::ReadBack) => {
                // The tool's answer is the success's only when it said so: a
                // write whose answer was lost and was read back has none.
                self.last.answer = self.last.answer.take().filter(|(ok, _)| *ok);
                Outcome::Succeeded {
                    data: self.last.data.take().unwrap_or_default(),
                }
            }
            Finish::Succeeded(SuccessFrom::Committed(result)) => {
                // A lookup's result, not the tool's answer to the write.
                self.last.answer = None;
                Outcome::Succeeded {
                    data: result.into(),
                }
            }
            Finish::Stopped(reason) => {
                // A failure's answer reaches people and models: redacted.
                self.last.answer = self
                    .last
                    .answer
                    .take()
                    .map(|(ok, answer)| (ok, redact_value(&answer)));
                let error = self.last.error.clone();
                if reason.leaves_outcome_unknown() {
                    Outcome::Unknown { error, reason }
                } else {
                    Outcome::Failed { error, reason }
                }
            }
        }
    }
}
