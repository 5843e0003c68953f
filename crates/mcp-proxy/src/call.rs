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
use std::time::SystemTime;

use recourse::approval::{ApprovalOf, AskApproval, find};
use recourse::config::CallField;
use recourse_door::{ClientLeft, DoorAnswer, Refusal, Refused, RequestDigest};
use rmcp::model::CallToolResult;
use rmcp::service::{Peer, RoleServer};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::answer;
use crate::approved;
use crate::ask;
use crate::capture::Capture;
use crate::client::Client;
use crate::elicit;
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
/// `in_client` is the client's user when they can be asked (the client
/// declared form elicitation): a held call whose policy says `via: client`
/// is put to them ([`elicit`](crate::elicit)).
pub(crate) async fn run(
    shared: &Arc<Shared>,
    name: &str,
    arguments: Map<String, Value>,
    key: Option<String>,
    client: Option<&Client>,
    in_client: Option<&Peer<RoleServer>>,
    cancel: CancellationToken,
) -> Result<CallToolResult, Fault> {
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
        Err(e) => return Ok(invalid(&call_id, e.problem())),
    };
    if let (Some(approval), Some(mut spec), Some(digest)) = (approval, spec, &digest) {
        let required = match approval.required() {
            Ok(required) => required,
            Err(e) => return Ok(invalid(&call_id, &e.to_string())),
        };
        // Approved since it was asked, and this proxy's to send: sent now,
        // this call waiting for its answer.
        if let (Some(journal), Some(claimed)) = (&shared.journal, call.idempotency_key())
            && let Ok(Some(entry)) = find(
                journal.as_ref(),
                ApprovalOf::Key(claimed),
                SystemTime::now(),
            )
            .await
            && approved::is_ours_to_send(&entry)
            && let Some(sent) = approved::send(shared, &entry).await
        {
            return Ok(sent);
        }
        spec.idempotency_key = kept_key;
        let asking = AskApproval {
            call_id: Some(call_id.clone()),
            target: offered.tool.name.clone(),
            capability: None,
            caller: call.caller().map(str::to_owned),
            caller_key: call.idempotency_key().map(str::to_owned),
            request_hash: digest.as_str().to_owned(),
            request: spec,
            required: required.clone(),
            // This proxy holds the upstream: it sends the call once
            // approved, wherever a person decides it.
            dispatched_by_asker: true,
        };
        let held = shared.door.hold(&asking).await;
        if let (DoorAnswer::Awaiting { .. }, Some(peer), Some(claimed)) =
            (&held, in_client, asking.caller_key.as_deref())
            && required.in_client()
            && let Some(decided) =
                elicit::decide_in_client(shared, peer, offered, &required, claimed).await
        {
            return Ok(decided);
        }
        return Ok(answer::door_answer(
            held,
            &call_id,
            None,
            None,
            SystemTime::now(),
        ));
    }
    let capture = Arc::new(Capture::new(
        Arc::clone(&upstream.transport),
        offered.tool.name.clone(),
    ));
    let executor = Arc::new(upstream.executor.with_transport(Arc::clone(&capture) as _));
    match shared
        .door
        .run(executor, call, digest.as_ref(), &cancel)
        .await
    {
        Ok(answered) => Ok(answer::door_answer(
            answered,
            &call_id,
            capture.take(),
            offered.output.as_ref(),
            SystemTime::now(),
        )),
        Err(ClientLeft) => Err(Fault::Cancelled),
    }
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
