//! The Tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28): a
//! durable handle for a call that waits — for a person's approval, or for a
//! write to be settled — answered from the journal.
//!
//! # Why the journal answers, and the call's id is the task's
//!
//! A task outlives the request that made it, and may outlive the proxy: a
//! client polls after a restart, or through another proxy on the same
//! journal. So a task is nothing but a journaled call seen through
//! `tasks/get` — its id the call's, its status the call's state — and
//! nothing about it lives in this process. `tasks/update` takes the answer
//! to the approval form (only where the policy lets the client decide),
//! and this process, which holds the upstream, sends the call. `tasks/cancel`
//! withdraws a call still waiting for its approval; a call in flight may
//! be writing and is never cancelled.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use recourse::approval::{ApprovalOf, ApprovalState, DecideError, find, withdraw};
use recourse::journal::{CallState, JournalEntry};
use recourse::{StopReason, timing};
use rmcp::model::{
    CancelTaskParams, CreateTaskResult, DetailedTask, ErrorData, GetTaskParams, GetTaskResult,
    JsonObject, Task, TaskPayload, TaskStatus, UpdateTaskParams,
};
use serde_json::Value;

use crate::answer;
use crate::approved;
use crate::catalog::Offered;
use crate::elicit;
use crate::proxy::Shared;

/// The task a waiting call `entry` is, as a client is first handed it.
pub(crate) fn created(entry: &JournalEntry, lease: Duration) -> CreateTaskResult {
    CreateTaskResult::new(task(entry, TaskStatus::Working, lease))
}

/// `entry` as a task with `status`, polled every third of `lease`.
fn task(entry: &JournalEntry, status: TaskStatus, lease: Duration) -> Task {
    let every = u64::try_from(timing::task_poll_every(lease).as_millis()).unwrap_or(u64::MAX);
    Task::new(
        entry.call_id.clone(),
        status,
        entry.times.started_at.clone(),
        entry.times.updated_at.clone(),
    )
    .with_poll_interval_ms(every)
}

/// Who asks about a task, and what their client can be asked.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Asker<'a> {
    /// The caller the HTTP front named; `None` over stdio.
    pub(crate) caller: Option<&'a str>,
    /// Whether the client takes form elicitation.
    pub(crate) takes_forms: bool,
}

/// A task's journaled call, with the tool it calls: only a call of a tool
/// this proxy offers, made by the same caller — any other id is no task.
async fn visible(
    shared: &Arc<Shared>,
    task_id: &str,
    asker: Asker<'_>,
) -> Result<(JournalEntry, Offered), ErrorData> {
    let no_task = || ErrorData::invalid_params(format!("no task {task_id:?}"), None);
    let journal = shared.journal.as_ref().ok_or_else(no_task)?;
    let entry = find(
        journal.as_ref(),
        ApprovalOf::Call(task_id),
        SystemTime::now(),
    )
    .await
    .map_err(|e| ErrorData::internal_error(format!("the journal: {e}"), None))?
    .filter(|e| e.caller.as_deref() == asker.caller)
    .ok_or_else(no_task)?;
    let offered = shared
        .catalog()
        .tools()
        .iter()
        .find(|o| o.tool.name == entry.target)
        .cloned()
        .ok_or_else(no_task)?;
    Ok((entry, offered))
}

/// Whether the policy lets the client's user decide `offered`'s approvals.
fn decided_in_client(offered: &Offered) -> bool {
    offered
        .policy
        .as_ref()
        .and_then(|p| p.approval.as_ref())
        .and_then(|a| a.required().ok())
        .is_some_and(|r| r.in_client())
}

/// `tasks/get`: where the call stands, from the journal.
pub(crate) async fn get(
    shared: &Arc<Shared>,
    params: &GetTaskParams,
    asker: Asker<'_>,
) -> Result<GetTaskResult, ErrorData> {
    let (entry, offered) = visible(shared, &params.task_id, asker).await?;
    let lease = shared.lease(offered.upstream);
    let payload = payload(&entry, &offered, asker);
    let task = task(&entry, payload.status(), lease);
    Ok(GetTaskResult::new(DetailedTask::new(task, payload)))
}

/// What a task of `entry` carries: the form while a person the client can
/// ask is awaited; the result once the call ended.
fn payload(entry: &JournalEntry, offered: &Offered, asker: Asker<'_>) -> TaskPayload {
    let pending = entry
        .asked
        .approval
        .as_ref()
        .is_some_and(|a| a.state == ApprovalState::Pending);
    match entry.state {
        CallState::AwaitingApproval
            if pending && asker.takes_forms && decided_in_client(offered) =>
        {
            match elicit::input_requests(entry, &offered.name) {
                Some(input_requests) => TaskPayload::InputRequired { input_requests },
                None => TaskPayload::Working,
            }
        }
        CallState::AwaitingApproval | CallState::InFlight => TaskPayload::Working,
        _ if withdrawn(entry) => TaskPayload::Cancelled,
        _ => {
            let result = answer::ended(&entry.record_json(), offered.output.as_ref());
            match serde_json::to_value(result) {
                Ok(Value::Object(result)) => TaskPayload::Completed { result },
                _ => TaskPayload::Failed {
                    error: error_object("the call's result could not be rendered"),
                },
            }
        }
    }
}

/// Whether `entry` ended because its asker withdrew it (`tasks/cancel`):
/// its record's reason, read by its type.
fn withdrawn(entry: &JournalEntry) -> bool {
    entry.state == CallState::Failed
        && entry
            .ended
            .record
            .as_ref()
            .and_then(|r| r["reason"].as_str())
            .and_then(|r| r.parse::<StopReason>().ok())
            == Some(StopReason::Cancelled)
}

fn error_object(message: &str) -> JsonObject {
    let mut error = JsonObject::new();
    error.insert("code".to_owned(), Value::from(-32603));
    error.insert("message".to_owned(), Value::from(message));
    error
}

/// `tasks/update`: the client's user answered the approval form. An
/// approval is sent by this process, in its call tracker; a rejection ends
/// the call. Only where the policy lets the client decide.
pub(crate) async fn update(
    shared: &Arc<Shared>,
    params: &UpdateTaskParams,
    asker: Asker<'_>,
) -> Result<(), ErrorData> {
    let (entry, offered) = visible(shared, &params.task_id, asker).await?;
    let refuse = |why: &str| Err(ErrorData::invalid_params(why.to_owned(), None));
    let Some(approval) = entry
        .asked
        .approval
        .clone()
        .filter(|a| a.state == ApprovalState::Pending)
    else {
        return refuse("the task asks for no input: its call awaits no decision");
    };
    if !decided_in_client(&offered) {
        return refuse(
            "this call's approval is decided by a person in the console, not in the client",
        );
    }
    let Some(decision) = elicit::answer_in(&params.input_responses) else {
        return refuse("inputResponses holds no answer to the approval form: nothing was decided");
    };
    let decided = match elicit::decide_answered(shared, offered.upstream, &approval, decision).await
    {
        Ok(decided) => decided,
        Err(DecideError::AlreadyDecided(_)) => return refuse("the approval is decided already"),
        Err(e) => return Err(ErrorData::internal_error(e.to_string(), None)),
    };
    if decided.dispatch.is_some() {
        let shared_for_send = Arc::clone(shared);
        shared.door.calls().spawn(async move {
            approved::send(&shared_for_send, &decided.entry).await;
        });
    }
    Ok(())
}

/// `tasks/cancel`: withdraws a call still waiting for its approval; a call
/// in flight (it may be writing) or ended is not cancelled.
pub(crate) async fn cancel(
    shared: &Arc<Shared>,
    params: &CancelTaskParams,
    asker: Asker<'_>,
) -> Result<(), ErrorData> {
    let (entry, _) = visible(shared, &params.task_id, asker).await?;
    let refuse = |why: &str| Err(ErrorData::invalid_params(why.to_owned(), None));
    match (entry.state, &entry.asked.approval) {
        (CallState::AwaitingApproval, Some(approval)) => {
            let journal = shared.journal.as_ref().ok_or_else(|| {
                ErrorData::internal_error("the proxy keeps no journal".to_owned(), None)
            })?;
            match withdraw(
                journal.as_ref(),
                &approval.id,
                elicit::CLIENT_DECIDER,
                SystemTime::now(),
            )
            .await
            {
                Ok(_) => Ok(()),
                Err(DecideError::AlreadyDecided(_)) => {
                    refuse("decided meanwhile: the call is not cancelled")
                }
                Err(e) => Err(ErrorData::internal_error(e.to_string(), None)),
            }
        }
        (CallState::InFlight, _) => refuse(
            "the call is in flight and may be writing: it is not cancelled (it runs to its end, \
             journaled)",
        ),
        _ => refuse("the call has ended: there is nothing to cancel"),
    }
}
