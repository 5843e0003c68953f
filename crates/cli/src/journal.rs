//! `recourse journal list` and `recourse journal reconcile`.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use recourse::{
    CallState, HttpReconciler, Journal, JournalEntry, ReconcileRequest, Reconciler, Reconciliation,
    Target, open_journal,
};
use serde_json::{Value, json};

use crate::settings::Settings;

/// The journal used when neither --journal nor RECOURSE_JOURNAL names one.
const DEFAULT_JOURNAL: &str = "recourse.db";

/// `recourse journal …`.
#[derive(Debug, Args)]
pub(crate) struct JournalArgs {
    #[command(subcommand)]
    command: JournalCommand,
    /// The journal: a SQLite path or postgres:// URL [env: RECOURSE_JOURNAL] [default: recourse.db].
    #[arg(long, global = true, value_name = "PATH|URL", value_parser = crate::settings::location)]
    journal: Option<String>,
}

#[derive(Debug, Subcommand)]
enum JournalCommand {
    /// List journaled calls, newest first.
    List {
        /// Only calls in this state.
        #[arg(long, value_parser = ["in_flight", "succeeded", "failed", "unknown"])]
        state: Option<String>,
        /// Print a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Settle in-flight and unknown calls through their reconcile lookups.
    Reconcile {
        /// Print a JSON array of what each call became.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) async fn run(args: &JournalArgs, settings: &Settings) -> Result<i32> {
    let location = settings
        .journal(args.journal.as_deref())
        .unwrap_or(DEFAULT_JOURNAL);
    let journal = open_journal(location).await?;
    match &args.command {
        JournalCommand::List { state, json } => {
            list(journal.as_ref(), state.as_deref(), *json).await
        }
        JournalCommand::Reconcile { json } => reconcile(journal, *json).await,
    }
}

fn entry_json(e: &JournalEntry) -> Value {
    json!({
        "call_id": e.call_id,
        "capability": e.capability,
        "url": e.target,
        "idempotency_key": e.idempotency_key,
        "operation_id": e.operation_id,
        "state": e.state.as_str(),
        "attempts": e.attempts,
        "started_at": e.started_at,
        "updated_at": e.updated_at,
    })
}

async fn list(journal: &dyn Journal, state: Option<&str>, as_json: bool) -> Result<i32> {
    let state = match state {
        Some(s) => match CallState::parse(s) {
            Some(st) => Some(st),
            None => bail!("unknown state {s:?}"),
        },
        None => None,
    };
    let entries = journal.list(state).await?;
    if as_json {
        let all: Vec<Value> = entries.iter().map(entry_json).collect();
        outln!("{}", serde_json::to_string_pretty(&all)?);
        return Ok(0);
    }
    if entries.is_empty() {
        outln!("no calls");
    }
    for e in &entries {
        let key = e.idempotency_key.as_deref().unwrap_or("-");
        outln!(
            "{}  {:<9}  {} attempt(s)  key {key}  {}  (updated {})",
            e.call_id,
            e.state,
            e.attempts,
            e.target,
            e.updated_at
        );
    }
    Ok(0)
}

/// How many times a pending write is looked up before it is left unknown.
const PENDING_LOOKUPS: u32 = 10;

async fn reconcile(journal: Arc<dyn Journal>, as_json: bool) -> Result<i32> {
    let mut open = journal.list(Some(CallState::InFlight)).await?;
    open.extend(journal.list(Some(CallState::Unknown)).await?);
    let mut results = Vec::new();
    let mut unresolved = 0;
    for entry in &open {
        let (state, note) = settle(entry).await;
        if state != entry.state {
            journal.set_state(&entry.call_id, state, None).await?;
        }
        if matches!(state, CallState::InFlight | CallState::Unknown) {
            unresolved += 1;
        }
        if !as_json {
            outln!("{}  {} → {}  {note}", entry.call_id, entry.state, state);
        }
        results.push(json!({"call_id": entry.call_id, "from": entry.state.as_str(), "state": state.as_str(), "note": note}));
    }
    if as_json {
        outln!("{}", serde_json::to_string_pretty(&results)?);
    } else if open.is_empty() {
        outln!("nothing to reconcile");
    }
    Ok(if unresolved == 0 { 0 } else { 3 })
}

/// What a journaled call's lookup says it became.
async fn settle(entry: &JournalEntry) -> (CallState, String) {
    if entry.attempts == 0 {
        return (CallState::Failed, "never dispatched".to_owned());
    }
    let Some(template) = &entry.reconcile else {
        let key = entry.idempotency_key.as_deref().unwrap_or("none");
        return (
            CallState::Unknown,
            format!("no reconcile lookup configured; check by hand (key {key})"),
        );
    };
    let reconciler = match HttpReconciler::new(template.clone()) {
        Ok(r) => r,
        Err(e) => return (CallState::Unknown, e.to_string()),
    };
    let target = match Target::parse(&entry.target) {
        Ok(t) => t,
        Err(e) => return (CallState::Unknown, e.to_string()),
    };
    for _ in 0..PENDING_LOOKUPS {
        let request = ReconcileRequest {
            target: &target,
            idempotency_key: entry.idempotency_key.as_deref(),
            operation_id: entry.operation_id.as_deref(),
            payload: &entry.payload,
        };
        match reconciler.reconcile(request).await {
            Reconciliation::Committed(_) => return (CallState::Succeeded, "committed".to_owned()),
            Reconciliation::NotCommitted => {
                return (
                    CallState::Failed,
                    "not committed; nothing was written".to_owned(),
                );
            }
            Reconciliation::Pending { wait } => {
                tokio::time::sleep(
                    wait.unwrap_or(Duration::from_millis(500))
                        .min(Duration::from_secs(5)),
                )
                .await;
            }
            Reconciliation::Unknown(why) => return (CallState::Unknown, why),
        }
    }
    (CallState::Unknown, "still pending".to_owned())
}
