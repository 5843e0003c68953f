//! A call to a tool whose policy needs a person: held in the journal, then
//! put to the person where they are — in the client (a form, an
//! `input_required` result, a task to poll) when the policy allows it and
//! the client can ask, otherwise answered `approval_required` for the
//! console ([`ask`](crate::ask) says why the client calls again).

use std::sync::Arc;
use std::time::SystemTime;

use recourse::Call;
use recourse::approval::{ApprovalOf, ApprovalState, AskApproval, DecideError, Required, find};
use recourse::journal::JournalEntry;
use recourse_door::{DoorAnswer, Refused, RequestDigest};
use rmcp::model::{CallToolResponse, InputRequiredResult};

use crate::answer;
use crate::approved;
use crate::catalog::Offered;
use crate::elicit;
use crate::fault::Fault;
use crate::proxy::Shared;
use crate::reach::{Answered, Reach};
use crate::sealed::{Question, millis};
use crate::tasks;

/// Holds `asking` (the call `call` of `offered`, whose request has
/// `digest`) for a person, and answers as `reach` allows.
pub(crate) async fn hold(
    shared: &Arc<Shared>,
    offered: &Offered,
    call: &Call,
    asking: &AskApproval,
    digest: &RequestDigest,
    reach: &Reach,
) -> Result<CallToolResponse, Fault> {
    let required = &asking.required;
    let call_id = asking.call_id.as_deref().unwrap_or_default();
    // A 2026-07-28 client answering what it was asked.
    if let Some(answered) = &reach.answered {
        return answer_question(shared, offered, call, digest, answered).await;
    }
    let key = call.idempotency_key();
    // Approved since it was asked, and this proxy's to send: sent now,
    // this call waiting for its answer.
    if let Some(entry) = held_under(shared, key).await
        && approved::is_ours_to_send(&entry)
        && let Some(sent) = approved::send(shared, &entry).await
    {
        return Ok(sent.into());
    }
    let held = shared.door.hold(asking).await;
    if let DoorAnswer::Awaiting { .. } = &held
        && let Some(entry) = held_under(shared, key).await
        && entry.asked.approval.as_ref().map(|a| a.state) == Some(ApprovalState::Pending)
    {
        if reach.tasks {
            return Ok(tasks::created(&entry, shared.lease(offered.upstream)).into());
        }
        if required.in_client() {
            if reach.input_required {
                return Ok(question(shared, offered, call, digest, &entry, required)
                    .await
                    .map_or_else(|| awaiting(held, call_id), Into::into));
            }
            if let (Some(peer), Some(key)) = (&reach.form_session, key)
                && let Some(decided) =
                    elicit::decide_in_client(shared, peer, offered, required, key).await
            {
                return Ok(decided.into());
            }
        }
    }
    Ok(awaiting(held, call_id))
}

/// `held` as the client is answered when nobody can be asked in it.
fn awaiting(held: DoorAnswer, call_id: &str) -> CallToolResponse {
    answer::door_answer(held, call_id, None, None, SystemTime::now()).into()
}

/// The call held under `key`, where the journal has it.
async fn held_under(shared: &Shared, key: Option<&str>) -> Option<JournalEntry> {
    let journal = shared.journal.as_ref()?;
    find(journal.as_ref(), ApprovalOf::Key(key?), SystemTime::now())
        .await
        .ok()?
}

/// The `input_required` result that asks a 2026-07-28 client's user about
/// `entry`: the form, and the question sealed for this caller and request.
async fn question(
    shared: &Arc<Shared>,
    offered: &Offered,
    call: &Call,
    digest: &RequestDigest,
    entry: &JournalEntry,
    required: &Required,
) -> Option<InputRequiredResult> {
    let approval = entry.asked.approval.as_ref()?;
    let seal = shared.seal().await?;
    // No later than the approval can be decided (the journal holds its
    // exact expiry, and refuses a decision after it).
    let until = SystemTime::now() + required.expires_in;
    let asked = Question {
        call_id: entry.call_id.clone(),
        approval_id: approval.id.clone(),
        until_ms: millis(until),
    };
    let state = seal.seal(&asked, call.caller(), digest);
    Some(InputRequiredResult::new(
        Some(elicit::input_requests(entry, &offered.name)?),
        Some(state),
    ))
}

/// Decides the call a retry's state names, as its answer says, and answers
/// with how it ended — or refuses the state, deciding nothing.
async fn answer_question(
    shared: &Arc<Shared>,
    offered: &Offered,
    call: &Call,
    digest: &RequestDigest,
    answered: &Answered,
) -> Result<CallToolResponse, Fault> {
    let not_ours = || Fault::BadState(crate::sealed::Refused::NotOurs.problem());
    let seal = shared.seal().await.ok_or_else(not_ours)?;
    let asked = seal
        .open(&answered.state, call.caller(), digest, SystemTime::now())
        .map_err(|refused| Fault::BadState(refused.problem()))?;
    let entry = held_under(shared, call.idempotency_key())
        .await
        .filter(|e| e.call_id == asked.call_id)
        .ok_or_else(not_ours)?;
    let approval = entry
        .asked
        .approval
        .clone()
        .filter(|a| a.id == asked.approval_id)
        .ok_or_else(not_ours)?;
    if approval.state == ApprovalState::Expired {
        return Err(Fault::BadState(crate::sealed::Refused::Expired.problem()));
    }
    let decision = elicit::answer_in(&answered.responses).ok_or(Fault::BadState(
        "inputResponses holds no answer to the approval form: nothing was decided",
    ))?;
    let decided = match elicit::decide_answered(shared, offered.upstream, &approval, decision).await
    {
        Ok(decided) => decided,
        Err(DecideError::AlreadyDecided(_)) => {
            return Err(Fault::BadState(
                "the approval this requestState asks about is decided already (a requestState \
                 decides once): call again without it to learn where the call stands",
            ));
        }
        Err(DecideError::Journal(e)) => {
            let refused = Refused::journal_away(&e.to_string());
            return Ok(answer::door_answer(
                DoorAnswer::Refused(refused),
                &entry.call_id,
                None,
                None,
                SystemTime::now(),
            )
            .into());
        }
        Err(_) => return Err(not_ours()),
    };
    if decided.dispatch.is_none() {
        // Rejected: how the call ended.
        return Ok(answer::ended(&decided.entry.record_json(), offered.output.as_ref()).into());
    }
    // Approved: this proxy holds the upstream, and sends it now, once.
    match approved::send(shared, &decided.entry).await {
        Some(sent) => Ok(sent.into()),
        None => Ok(answer::door_answer(
            DoorAnswer::Refused(Refused::in_progress(
                &entry.call_id,
                shared.lease(offered.upstream),
            )),
            &entry.call_id,
            None,
            None,
            SystemTime::now(),
        )
        .into()),
    }
}
