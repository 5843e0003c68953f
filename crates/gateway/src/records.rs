//! The journal over HTTP: `GET /v1/calls/{call_id}` (waiting, with `Prefer:
//! wait=N`, for a call held for approval or in flight to move on),
//! `GET /v1/calls`, `POST /v1/calls/{call_id}/reconcile` and
//! `POST /v1/calls/{call_id}/settle`. An approval past its expiry is
//! expired as its call is read.

use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use recourse::approval::refreshed;
use recourse::journal::{
    CallState, HandSettleError, HandSettlement, Journal, JournalEntry, ListQuery, MAX_LIST,
    rfc3339, settle_by_hand, settle_with,
};
use recourse_tool::protocol::ToolError;
use recourse_tool::{ToolFailure, ToolJsonBody};

use recourse_door::Refusal;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::entry::CallEntry;
use crate::gateway::Gateway;
use crate::render::{journal_unavailable, refusal};
use crate::wait::{self, PREFERENCE_APPLIED};
use recourse_door::Caller;
use recourse_door::Refused;

/// How many calls a page holds unless `limit` says otherwise.
const DEFAULT_LIMIT: u32 = 100;

/// `GET /v1/calls?state=…&limit=…&before=…`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListParams {
    state: Option<String>,
    limit: Option<u32>,
    before: Option<String>,
}

fn no_journal() -> Response {
    fail(Refusal::NoJournal.error("this gateway keeps no journal (--journal none)"))
}

fn fail(error: ToolError) -> Response {
    ToolFailure::from(error).into_response()
}

fn unavailable(e: &recourse::journal::JournalError) -> Response {
    journal_unavailable(&e.to_string())
}

fn unknown_call(call_id: &str) -> Response {
    fail(
        Refusal::CallNotFound
            .error("no call with this id in the journal")
            .detail("call_id", call_id),
    )
}

/// One journaled call: `GET /v1/calls/{call_id}` and reconcile answer it.
#[derive(Serialize, JsonSchema)]
pub(crate) struct JournaledCall<'a> {
    /// Where the call stands.
    state: CallState,
    /// Whose call it is: the gateway caller's name.
    caller: &'a str,
    /// The call's record: the one its process wrote, or — while it runs,
    /// or when its process stopped mid-call — the record the journal alone
    /// gives (its outcome `unknown`, its attempts counted but not detailed);
    /// a settled call's record says what settled it. While the call awaits
    /// a person's approval, its record says so (`outcome:
    /// "awaiting_approval"`); a call that needed approval's record has
    /// `approval`, where it stands.
    #[schemars(with = "RecordSchema")]
    record: Value,
}

/// A call's record: the record of a call that ran (or was settled or
/// decided), or of one awaiting approval.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum RecordSchema {
    Ran(Box<recourse::CallReport>),
    Awaiting(Box<recourse::record::AwaitingRecord<'static>>),
}

/// A page of `GET /v1/calls`.
#[derive(Serialize, JsonSchema)]
pub(crate) struct CallPage<'a> {
    /// The calls, newest first.
    calls: Vec<CallEntry<'a>>,
    /// Pass as `before` for the next page; `null` on the last.
    next_before: Option<String>,
}

fn journaled(entry: &JournalEntry) -> Response {
    Json(JournaledCall {
        state: entry.state,
        caller: entry.caller(),
        record: entry.record_json(),
    })
    .into_response()
}

/// The call `call_id`, if `caller` may see it: another caller's call is
/// answered exactly as an absent one.
async fn visible(
    journal: &dyn Journal,
    caller: &Caller,
    call_id: &str,
) -> Result<JournalEntry, Response> {
    match journal.get(call_id).await {
        Ok(Some(entry)) if caller.seen().admits_entry(&entry) => Ok(entry),
        Ok(_) => Err(unknown_call(call_id)),
        Err(e) => Err(unavailable(&e)),
    }
}

/// `{"state", "caller", "record"}` of one call — with `Prefer: wait=N`,
/// once it leaves `awaiting_approval` or `in_flight`, or after N seconds
/// (at most 60), answered with `Preference-Applied: wait=N`.
pub(crate) async fn one(
    State(g): State<Arc<Gateway>>,
    Extension(caller): Extension<Arc<Caller>>,
    Path(call_id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let Some(journal) = g.journal.as_ref() else {
        return no_journal();
    };
    let entry = match visible(journal.as_ref(), &caller, &call_id).await {
        Ok(entry) => entry,
        Err(answer) => return answer,
    };
    let Some(wait) = wait::preferred(&headers) else {
        return match wait::current(g.clock.as_ref(), journal.as_ref(), entry).await {
            Ok(entry) => journaled(&entry),
            Err(e) => unavailable(&e),
        };
    };
    // Past the cap on waiting requests, answered at once, the wait not applied.
    let Ok(_permit) = Arc::clone(&g.waiting.permits).try_acquire_owned() else {
        return match wait::current(g.clock.as_ref(), journal.as_ref(), entry).await {
            Ok(entry) => journaled(&entry),
            Err(e) => unavailable(&e),
        };
    };
    let mut answer = match wait::waited(
        g.clock.as_ref(),
        &g.waiting.changed,
        journal.as_ref(),
        entry,
        wait,
    )
    .await
    {
        // Seen when the wait began is not seen now: an approver follows
        // another caller's call only while it waits for a person, or
        // when they decided it.
        Ok(entry) if caller.seen().admits_entry(&entry) => journaled(&entry),
        Ok(_) => return unknown_call(&call_id),
        Err(e) => return unavailable(&e),
    };
    if let Ok(applied) = HeaderValue::from_str(&format!("wait={}", wait.as_secs())) {
        answer.headers_mut().insert(PREFERENCE_APPLIED, applied);
    }
    answer
}

/// `{"calls": [...], "next_before"}`, newest first: the calls `caller` sees.
pub(crate) async fn list(
    State(g): State<Arc<Gateway>>,
    Extension(caller): Extension<Arc<Caller>>,
    params: Result<Query<ListParams>, QueryRejection>,
) -> Response {
    let Some(journal) = g.journal.as_ref() else {
        return no_journal();
    };
    let params = match params {
        Ok(Query(params)) => params,
        Err(rejection) => {
            return fail(Refusal::InvalidQuery.error(format!(
                "{}; the query takes state, limit and before",
                rejection.body_text().chars().take(200).collect::<String>()
            )));
        }
    };
    let state = match params.state.as_deref().map(|s| (s, CallState::parse(s))) {
        None => None,
        Some((_, Some(state))) => Some(state),
        Some((given, None)) => {
            return fail(
                Refusal::InvalidQuery
                    .error(format!(
                        "state {given:?} is not one of {}",
                        CallState::names().join(", ")
                    ))
                    .detail("field", "state"),
            );
        }
    };
    let limit = params.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIST).contains(&limit) {
        return fail(
            Refusal::InvalidQuery
                .error(format!("limit must be 1..={MAX_LIST}"))
                .detail("field", "limit"),
        );
    }
    let query = ListQuery {
        state,
        limit: Some(limit),
        before: params.before,
        seen: caller.seen(),
    };
    let entries = match journal.list(&query).await {
        Ok(entries) => entries,
        Err(e) => return unavailable(&e),
    };
    let next_before = (entries.len() == limit as usize)
        .then(|| entries.last().map(|e| e.call_id.clone()))
        .flatten();
    let entries = match expired_as_listed(&g, journal.as_ref(), entries, &query).await {
        Ok(entries) => entries,
        Err(e) => return unavailable(&e),
    };
    let calls = entries.iter().map(CallEntry::from).collect();
    Json(CallPage { calls, next_before }).into_response()
}

/// `entries` with every approval past its expiry expired, and those that no
/// longer fit `query` (its state, what its viewer sees) left out.
pub(crate) async fn expired_as_listed(
    g: &Gateway,
    journal: &dyn Journal,
    entries: Vec<JournalEntry>,
    query: &ListQuery,
) -> Result<Vec<JournalEntry>, recourse::journal::JournalError> {
    let now = g.clock.wall();
    let at = rfc3339(now);
    if !entries.iter().any(|e| e.approval_is_due(&at)) {
        return Ok(entries);
    }
    let mut listed = Vec::with_capacity(entries.len());
    for entry in entries {
        let entry = refreshed(journal, entry, now).await?;
        if query.state.is_none_or(|s| s == entry.state) && query.seen.admits_entry(&entry) {
            listed.push(entry);
        }
    }
    Ok(listed)
}

/// Settles the call through its recorded lookup; 409 while another process holds it.
pub(crate) async fn reconcile(
    State(g): State<Arc<Gateway>>,
    Extension(caller): Extension<Arc<Caller>>,
    Path(call_id): Path<String>,
) -> Response {
    let Some(journal) = g.journal.as_ref() else {
        return no_journal();
    };
    let entry = match visible(journal.as_ref(), &caller, &call_id).await {
        Ok(entry) => entry,
        Err(answer) => return answer,
    };
    if matches!(entry.state, CallState::InFlight | CallState::Unknown) {
        if let Some(template) = &entry.declared.reconcile
            && let Err(refused) = g.targets.check_template(template)
        {
            return ToolFailure::from(refused).into_response();
        }
        let lease = g.executor.config().lease;
        let options = &g.settle;
        match settle_with(journal.as_ref(), &entry, options).await {
            Ok(s) if s.held => return refusal(Refused::in_progress(&call_id, lease)),
            Ok(_) => {}
            Err(e) => return unavailable(&e),
        }
    }
    // Settled, it may have left what `caller` sees (an approver's call in
    // doubt): the record is answered all the same, having been theirs to settle.
    match journal.get(&call_id).await {
        Ok(Some(entry)) => journaled(&entry),
        Ok(None) => unknown_call(&call_id),
        Err(e) => unavailable(&e),
    }
}

/// `POST /v1/calls/{call_id}/settle`: what a person found.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "HandSettlement")]
pub(crate) struct SettleBody {
    /// `succeeded` (the write took effect) or `failed` (it did not).
    state: SettledState,
    /// How the person knows, in words (1–2000 characters; stored redacted).
    note: String,
}

/// The states a person settles a call as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SettledState {
    /// The write took effect.
    Succeeded,
    /// It did not.
    Failed,
}

/// Settles an open call by hand (an approver only): `unknown`, or left in
/// flight past its lease; answered as `GET /v1/calls/{call_id}`.
pub(crate) async fn settle(
    State(g): State<Arc<Gateway>>,
    Extension(caller): Extension<Arc<Caller>>,
    Path(call_id): Path<String>,
    ToolJsonBody(body): ToolJsonBody,
) -> Response {
    if !caller.is_approver() {
        return not_approver().into_response();
    }
    if g.journal.is_none() {
        return no_journal();
    }
    let body: SettleBody = match recourse_tool::parse_json(&body) {
        Ok(body) => body,
        Err(refused) => return refused.into_response(),
    };
    match settle_by(&g, &caller, &call_id, body.state, body.note).await {
        Ok(entry) => journaled(&entry),
        Err(refused) => refused.into_response(),
    }
}

/// Settles `call_id` as `state` because of `note`, by `caller`: what
/// `POST /v1/calls/{call_id}/settle` and the console's settle form both run.
pub(crate) async fn settle_by(
    g: &Gateway,
    caller: &Caller,
    call_id: &str,
    state: SettledState,
    note: String,
) -> Result<JournalEntry, NotSettled> {
    if !caller.is_approver() {
        return Err(NotSettled::Refused(not_approver()));
    }
    let Some(journal) = g.journal.as_ref() else {
        return Err(NotSettled::Refused(ToolFailure::from(
            Refusal::NoJournal.error("this gateway keeps no journal (--journal none)"),
        )));
    };
    // A call the caller does not see is absent to it, here as everywhere.
    match journal.get(call_id).await {
        Ok(Some(entry)) if caller.seen().admits_entry(&entry) => {}
        Ok(_) => {
            return Err(NotSettled::Refused(ToolFailure::from(
                Refusal::CallNotFound
                    .error("no call with this id in the journal")
                    .detail("call_id", call_id),
            )));
        }
        Err(e) => return Err(NotSettled::JournalUnavailable(e)),
    }
    let settlement = HandSettlement {
        state: match state {
            SettledState::Succeeded => CallState::Succeeded,
            SettledState::Failed => CallState::Failed,
        },
        who: caller.name().to_owned(),
        note,
    };
    let lease = g.executor.config().lease;
    let refused = match settle_by_hand(journal.as_ref(), call_id, &settlement, lease).await {
        Ok(Some(entry)) => return Ok(entry),
        Ok(None) => ToolFailure::from(
            Refusal::CallNotFound
                .error("no call with this id in the journal")
                .detail("call_id", call_id),
        ),
        Err(HandSettleError::NotSettleable(state)) => ToolFailure::from(
            Refusal::CallNotSettleable
                .error(HandSettleError::NotSettleable(state).to_string())
                .detail("call_id", call_id)
                .detail("state", state.as_str()),
        )
        .with_status(Refusal::CallNotSettleable.status()),
        Err(HandSettleError::Journal(e)) => return Err(NotSettled::JournalUnavailable(e)),
        Err(e @ (HandSettleError::BadNote | HandSettleError::NotAState(_))) => ToolFailure::from(
            Refusal::InvalidCall
                .error(e.to_string())
                .detail("field", "note"),
        ),
    };
    Err(NotSettled::Refused(refused))
}

/// Why a call was not settled by hand.
#[derive(Debug)]
pub(crate) enum NotSettled {
    /// The gateway refused: its envelope, with its status.
    Refused(ToolFailure),
    /// The journal did not answer (503 with `Retry-After`).
    JournalUnavailable(recourse::journal::JournalError),
}

impl NotSettled {
    /// The HTTP status the API answers with.
    pub(crate) fn status(&self) -> u16 {
        match self {
            Self::Refused(failure) => failure.http_status(),
            Self::JournalUnavailable(_) => Refusal::JournalUnavailable.status(),
        }
    }

    /// Why, in words.
    pub(crate) fn message(&self) -> String {
        match self {
            Self::Refused(failure) => failure.error().message.clone(),
            Self::JournalUnavailable(e) => e.to_string(),
        }
    }
}

impl IntoResponse for NotSettled {
    fn into_response(self) -> Response {
        match self {
            Self::Refused(failure) => failure.into_response(),
            Self::JournalUnavailable(e) => unavailable(&e),
        }
    }
}

fn not_approver() -> ToolFailure {
    ToolFailure::from(Refusal::NotApprover.error(
        "settling a call by hand needs a caller with the approver role (a tokens file's \"approver\": true)",
    ))
}
