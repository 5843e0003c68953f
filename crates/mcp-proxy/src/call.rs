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

use recourse::approval::AskApproval;
use recourse::clock::Clock;
use recourse::config::CallField;
use recourse::journal::{CallState, JournalEntry};
use recourse::timing;
use recourse_door::{ClientLeft, DoorAnswer, Refusal, Refused, RequestDigest};
use rmcp::model::{CallToolResponse, CallToolResult};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::answer;
use crate::ask;
use crate::capture::Capture;
use crate::client::Client;
use crate::fault::Fault;
use crate::hold;
use crate::proxy::Shared;
use crate::reach::Reach;
use crate::tasks;

/// Runs the call the client asked for and answers it. `reach` says how
/// the client can be asked while a call waits ([`hold`](crate::hold)) and
/// whether it takes tasks: then a write still running after a short wait
/// is answered with a task ([`tasks`](crate::tasks)) and goes on.
pub(crate) async fn run(
    shared: &Arc<Shared>,
    name: &str,
    arguments: Map<String, Value>,
    key: Option<String>,
    client: Option<&Client>,
    reach: &Reach,
    cancel: CancellationToken,
) -> Result<CallToolResponse, Fault> {
    let catalog = shared.catalog();
    let Some(offered) = catalog.find(name) else {
        return Err(Fault::UnknownTool(name.to_owned()));
    };
    let call_id = uuid::Uuid::now_v7().to_string();
    let payload = Value::Object(arguments);
    let upstream = &shared.upstreams[offered.upstream];
    let approval = offered.policy.as_ref().and_then(|p| p.approval.as_ref());
    // The request as a door describes it, and its digest — only for a call
    // looked up by its request (keyed, or waiting for a person): a read
    // sent as it comes needs neither.
    let spec = (key.is_some() || approval.is_some())
        .then(|| ask::spec(offered, upstream.upstream.target(), &payload));
    let digest = spec.as_ref().map(RequestDigest::of);
    // Calling again is how a call that waits for a person gets its result:
    // without the client's key, the request's own names it.
    let key = key.or_else(|| {
        approval
            .and(digest.as_ref())
            .map(|d| ask::derived_key(d.as_str()))
    });
    // The key an approval's kept request is sent under (the digest leaves it out).
    let kept_key = approval.and(key.clone());
    let mut call = offered.described(payload, &call_id, key);
    if let Some(client) = client {
        call = call.caller(client.name(), client.keys());
    }
    let call = match call.build() {
        Ok(call) => call,
        Err(e) if e.field() == Some(CallField::IdempotencyKey) => {
            return Err(Fault::BadKey(e.problem().to_owned()));
        }
        Err(e) => return Ok(invalid(&call_id, e.problem()).into()),
    };
    if let (Some(approval), Some(mut spec), Some(digest)) = (approval, spec, &digest) {
        let required = match approval.required() {
            Ok(required) => required,
            Err(e) => return Ok(invalid(&call_id, &e.to_string()).into()),
        };
        spec.idempotency_key = kept_key;
        let asking = AskApproval {
            call_id: Some(call_id.clone()),
            target: offered.tool.name.clone(),
            capability: None,
            caller: call.caller().map(str::to_owned),
            caller_key: call.idempotency_key().map(str::to_owned),
            request_hash: digest.as_str().to_owned(),
            request: spec,
            required,
            // This proxy holds the upstream: it sends the call once
            // approved, wherever a person decides it.
            dispatched_by_asker: true,
        };
        return hold::hold(shared, offered, &call, &asking, digest, reach).await;
    }
    let capture = Arc::new(Capture::new(
        Arc::clone(&upstream.transport),
        offered.tool.name.clone(),
    ));
    let executor = Arc::new(upstream.executor.with_transport(Arc::clone(&capture) as _));
    // A client that takes tasks is not kept waiting on a journaled write:
    // after a short wait it is handed the call as a task, and the write
    // goes on (the door finishes what may write whoever waits).
    let journaled = shared.journal.is_some() && call.may_write();
    let waiting = if reach.tasks && journaled {
        let waiting = cancel.child_token();
        let stop = waiting.clone();
        tokio::spawn(async move {
            recourse::SystemClock
                .sleep_in_background(timing::WRITE_TASK_AFTER)
                .await;
            stop.cancel();
        });
        waiting
    } else {
        cancel.clone()
    };
    match shared
        .door
        .run(executor, call, digest.as_ref(), &waiting)
        .await
    {
        Ok(answered) => Ok(answer::door_answer(
            answered,
            &call_id,
            capture.take(),
            offered.output.as_ref(),
            SystemTime::now(),
        )
        .into()),
        Err(ClientLeft) if !cancel.is_cancelled() => {
            Ok(still_running(shared, &call_id, shared.lease(offered.upstream)).await)
        }
        Err(ClientLeft) => Err(Fault::Cancelled),
    }
}

/// The task a write still running is, from the journal (which holds it
/// from before its first dispatch).
async fn still_running(shared: &Shared, call_id: &str, lease: Duration) -> CallToolResponse {
    let entry = match &shared.journal {
        Some(journal) => journal.get(call_id).await.ok().flatten(),
        None => None,
    };
    let entry = entry.unwrap_or_else(|| {
        // Not readable yet: a task of it now, all the same.
        let mut entry = JournalEntry::new(call_id, CallState::InFlight);
        entry.times.started_at = recourse::journal::rfc3339_now();
        entry.times.updated_at.clone_from(&entry.times.started_at);
        entry
    });
    tasks::created(&entry, lease).into()
}
/// The call cannot be made as asked: nothing was sent.
fn invalid(call_id: &str, problem: &str) -> CallToolResult {
    let refused = Refused::new(
        Refusal::InvalidCall,
        format!(
            "the call could not be made: {}. Nothing was sent",
            recourse_protocol::redact(problem)
        ),
    );
    answer::door_answer(
        DoorAnswer::Refused(refused),
        call_id,
        None,
        None,
        SystemTime::now(),
    )
}
