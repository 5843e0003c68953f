//! One `tools/call` through the executor: the tool's policy and hints make
//! the call, the caller's key (if any) makes it keyed — in the caller's
//! own key space when the HTTP front names one ([`Client`]) — and the
//! record becomes the answer.
//!
//! # Why a write outlives the client's patience
//!
//! A client that stops waiting (`notifications/cancelled`, a timeout, a
//! closed session) has not undone anything: a write already sent may
//! commit. Cancelling it mid-flight would leave the journal saying
//! `in_flight` with no one to settle it. So a call that may write runs in
//! the proxy's task tracker to its end — journaled, settled by its lookup or
//! read, its key answering a retry — and only the waiting stops. A read with
//! no key has nothing to finish: the client's cancellation stops it.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use recourse::approval::Asked;
use recourse::config::CallField;
use recourse::journal::{CallState, JournalError};
use recourse::keyed::{Keyed, request_hash};
use recourse::{Call, CallBuilder};
use recourse_protocol::mcp::FailureClass;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::answer::{self, Failure};
use crate::ask::{self, Asking};
use crate::capture::Capture;
use crate::catalog::Offered;
use crate::client::Client;
use crate::proxy::Shared;

/// A request the proxy cannot route: a JSON-RPC error, not a tool's failure.
#[derive(Debug)]
pub(crate) enum Fault {
    /// No upstream offers a tool by this name.
    UnknownTool(String),
    /// The caller's idempotency key is not one (`-32602` too).
    BadKey(String),
    /// The client cancelled the request; the call, if it writes, goes on.
    Cancelled,
}

/// Runs the call the client asked for and answers it.
pub(crate) async fn run(
    shared: &Arc<Shared>,
    name: &str,
    arguments: Map<String, Value>,
    key: Option<String>,
    client: Option<&Client>,
    cancel: CancellationToken,
) -> Result<Value, Fault> {
    let catalog = shared.catalog();
    let Some(offered) = catalog.find(name) else {
        return Err(Fault::UnknownTool(name.to_owned()));
    };
    let call_id = uuid::Uuid::now_v7().to_string();
    let payload = Value::Object(arguments);
    // The request's digest, for a call looked up by its request (keyed, or
    // waiting for a person): a read sent as it comes needs none.
    let digest = |payload: &Value| request_hash(&json!({"tool": name, "arguments": payload}));
    let approval = offered.policy.as_ref().and_then(|p| p.approval.as_ref());
    let asked_hash = approval.map(|_| digest(&payload));
    // Calling again is how a call that waits for a person gets its result:
    // without the client's key, the request's own names it.
    let key = key.or_else(|| asked_hash.as_deref().map(ask::derived_key));
    let mut call = described(offered, payload, &call_id, key);
    if let Some(client) = client {
        call = call.caller(client.name(), client.keys());
    }
    let call = match call.build() {
        Ok(call) => call,
        Err(e) if e.field() == Some(CallField::IdempotencyKey) => {
            return Err(Fault::BadKey(e.problem().to_owned()));
        }
        Err(e) => return Ok(invalid(&call_id, e.problem())),
    };
    let keyed = call.idempotency_key().is_some();
    if keyed && shared.journal.is_none() {
        return Ok(journal_required(&call_id));
    }
    let upstream = &shared.upstreams[offered.upstream];
    if let (Some(approval), Some(journal)) = (approval, &shared.journal) {
        let required = match approval.required() {
            Ok(required) => required,
            Err(e) => return Ok(invalid(&call_id, &e.to_string())),
        };
        let asking = Asking {
            offered,
            target: upstream.upstream.target(),
            approval,
            required: &required,
            call_id: &call_id,
            payload: call.payload(),
            caller: call.caller(),
            key: call.idempotency_key().unwrap_or_default(),
            request_hash: asked_hash.as_deref().unwrap_or_default(),
        };
        let lease = upstream.executor.config().lease;
        let asked = ask::held(journal.as_ref(), &asking, SystemTime::now(), lease).await;
        return Ok(asked_answer(asked, &call_id, lease));
    }
    let capture = Arc::new(Capture::new(
        Arc::clone(&upstream.transport),
        offered.tool.name.clone(),
    ));
    let executor = upstream.executor.with_transport(Arc::clone(&capture) as _);
    if call.traits().idempotent && !keyed {
        let report = executor.execute_with_cancel(call, cancel).await;
        return Ok(answer::ran(
            &report,
            capture.take(),
            offered.output.as_ref(),
            SystemTime::now(),
        ));
    }
    let hash = digest(call.payload());
    let lease = executor.config().lease;
    let running = shared
        .calls
        .spawn(async move { executor.execute_keyed(call, &hash).await });
    let finished = tokio::select! {
        finished = running => finished,
        () = cancel.cancelled() => return Err(Fault::Cancelled),
    };
    let now = SystemTime::now();
    Ok(match finished {
        Ok(Ok(Keyed::Ran(report))) => {
            answer::ran(&report, capture.take(), offered.output.as_ref(), now)
        }
        Ok(Ok(Keyed::Replayed { record, .. })) => answer::replayed(&record, now),
        Ok(Ok(Keyed::InProgress { call_id })) => in_progress(&call_id, lease),
        Ok(Ok(Keyed::KeyReused { call_id })) => key_reused(&call_id),
        Ok(Err(e)) => journal_unavailable(&call_id, &e.to_string()),
        Err(_) => aborted(&call_id),
    })
}

/// What asking for approval came to, as the client sees it: the call
/// waiting (asked now, or before under the key), or the key's call as it
/// stands — ended (replayed), running, or another request's.
fn asked_answer(asked: Result<Asked, JournalError>, call_id: &str, lease: Duration) -> Value {
    let now = SystemTime::now();
    match asked {
        Ok(Asked::Awaiting(entry)) => answer::awaiting(&entry.record_json(), false, now),
        Ok(Asked::Keyed(Keyed::Replayed {
            state: CallState::AwaitingApproval,
            record,
        })) => answer::awaiting(&record, true, now),
        Ok(Asked::Keyed(Keyed::Replayed { record, .. })) => answer::replayed(&record, now),
        Ok(Asked::Keyed(Keyed::InProgress { call_id })) => in_progress(&call_id, lease),
        Ok(Asked::Keyed(Keyed::KeyReused { call_id })) => key_reused(&call_id),
        // Asking never runs a call.
        Ok(Asked::Keyed(Keyed::Ran(report))) => aborted(&report.call_id),
        Err(e) => journal_unavailable(call_id, &e.to_string()),
    }
}

/// The call `offered` describes, with the operator's policy for it and the
/// caller's key.
fn described(offered: &Offered, payload: Value, call_id: &str, key: Option<String>) -> CallBuilder {
    let mut call = Call::builder(offered.tool.name.clone(), payload).call_id(call_id);
    // Compiled with the catalog: `prepare` compiles only a schema not given.
    if let Some(input) = &offered.input {
        call = call.compiled_schema(input.clone());
    }
    let mut call = offered.tool.prepare(call);
    if let Some(policy) = &offered.policy {
        if let Some(idempotent) = policy.idempotent {
            call = call.idempotent(idempotent);
        }
        if let Some(verify) = &policy.verify {
            call = call.verify(verify.clone());
        }
        for pointer in &policy.protect {
            call = call.protect(pointer.clone());
        }
        if let Some(n) = policy.max_retries {
            call = call.max_retries(n);
        }
    }
    if let Some(key) = key {
        call = call.idempotency_key(key);
    }
    call
}

fn refusal(failure: &Failure<'_>) -> Value {
    answer::refused(failure, SystemTime::now())
}

/// The key's call is still running: ask again in a third of a lease.
fn in_progress(call_id: &str, lease: Duration) -> Value {
    refusal(&Failure {
        class: FailureClass::Reliability,
        code: "CALL_IN_PROGRESS",
        retryable: true,
        wait: Some(recourse::timing::in_progress_retry_after(lease)),
        call_id,
        message: "The call with this idempotency key is still running; nothing was sent again. \
                  Call again later with the same key and arguments to get its result.",
    })
}

fn key_reused(call_id: &str) -> Value {
    refusal(&Failure {
        class: FailureClass::Capability,
        code: "IDEMPOTENCY_KEY_REUSED",
        retryable: false,
        wait: None,
        call_id,
        message: "This idempotency key belongs to a different request (another tool or other \
                  arguments); nothing was sent. Use a new key for a new request.",
    })
}

fn journal_required(call_id: &str) -> Value {
    refusal(&Failure {
        class: FailureClass::Capability,
        code: "JOURNAL_REQUIRED",
        retryable: false,
        wait: None,
        call_id,
        message: "This proxy keeps no journal, so it cannot answer a repeat of a keyed call from \
                  its record; nothing was sent. Call without an idempotency key, or run the \
                  proxy with a journal.",
    })
}

fn journal_unavailable(call_id: &str, why: &str) -> Value {
    let message = format!(
        "The journal could not record the call ({}); nothing was sent. Try again shortly.",
        recourse_protocol::redact(why)
    );
    refusal(&Failure {
        class: FailureClass::Reliability,
        code: "JOURNAL_UNAVAILABLE",
        retryable: true,
        wait: Some(recourse::timing::JOURNAL_RETRY_AFTER),
        call_id,
        message: &message,
    })
}

fn aborted(call_id: &str) -> Value {
    refusal(&Failure {
        class: FailureClass::Reliability,
        code: "CALL_ABORTED",
        retryable: false,
        wait: None,
        call_id,
        message: "The call stopped unexpectedly; its outcome is unknown. Do not repeat it: check \
                  whether it took effect first.",
    })
}

fn invalid(call_id: &str, problem: &str) -> Value {
    let message = format!(
        "The call could not be made: {}. Nothing was sent.",
        recourse_protocol::redact(problem)
    );
    refusal(&Failure {
        class: FailureClass::Capability,
        code: "INVALID_CALL",
        retryable: false,
        wait: None,
        call_id,
        message: &message,
    })
}
