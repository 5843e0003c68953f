//! The journal over HTTP: `GET /v1/calls/{call_id}`, `GET /v1/calls` and
//! `POST /v1/calls/{call_id}/reconcile`.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use recourse::journal::{CallState, JournalEntry, ListQuery, MAX_LIST, settle_with};
use recourse_tool::ToolFailure;
use recourse_tool::protocol::ToolError;

use crate::refusal::Refusal;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::entry::CallEntry;
use crate::gateway::Gateway;
use crate::keyed::{in_progress, journal_unavailable};

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
    journal_unavailable(e.to_string())
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
pub(crate) struct JournaledCall {
    /// Where the call stands.
    state: CallState,
    /// The call's record: the one its process wrote, or — while it runs,
    /// or when its process stopped mid-call — the record the journal alone
    /// gives (its outcome `unknown`, its attempts counted but not detailed);
    /// a settled call's record says what settled it.
    #[schemars(with = "recourse::CallReport")]
    record: Value,
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
        record: entry.record_json(),
    })
    .into_response()
}

/// `{"state", "record"}` of one call.
pub(crate) async fn one(State(g): State<Arc<Gateway>>, Path(call_id): Path<String>) -> Response {
    let Some(journal) = g.journal.as_ref() else {
        return no_journal();
    };
    match journal.get(&call_id).await {
        Ok(Some(entry)) => journaled(&entry),
        Ok(None) => unknown_call(&call_id),
        Err(e) => unavailable(&e),
    }
}

/// `{"calls": [...], "next_before"}`, newest first.
pub(crate) async fn list(
    State(g): State<Arc<Gateway>>,
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
                        "state {given:?} is not one of in_flight, succeeded, failed, unknown"
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
    };
    match journal.list(&query).await {
        Ok(entries) => {
            let next_before = (entries.len() == limit as usize)
                .then(|| entries.last().map(|e| e.call_id.clone()))
                .flatten();
            let calls = entries.iter().map(CallEntry::from).collect();
            Json(CallPage { calls, next_before }).into_response()
        }
        Err(e) => unavailable(&e),
    }
}

/// Settles the call through its recorded lookup; 409 while another process holds it.
pub(crate) async fn reconcile(
    State(g): State<Arc<Gateway>>,
    Path(call_id): Path<String>,
) -> Response {
    let Some(journal) = g.journal.as_ref() else {
        return no_journal();
    };
    let entry = match journal.get(&call_id).await {
        Ok(Some(entry)) => entry,
        Ok(None) => return unknown_call(&call_id),
        Err(e) => return unavailable(&e),
    };
    if matches!(entry.state, CallState::InFlight | CallState::Unknown) {
        if let Some(template) = &entry.reconcile
            && let Err(refused) = g.targets.check_template(template)
        {
            return ToolFailure::from(refused).into_response();
        }
        let lease = g.executor.config().lease;
        let options = &g.settle;
        match settle_with(journal.as_ref(), &entry, options).await {
            Ok(s) if s.held => return in_progress(&call_id, lease),
            Ok(_) => {}
            Err(e) => return unavailable(&e),
        }
    }
    match journal.get(&call_id).await {
        Ok(Some(entry)) => journaled(&entry),
        Ok(None) => unknown_call(&call_id),
        Err(e) => unavailable(&e),
    }
}
