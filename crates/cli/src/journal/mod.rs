//! `recourse journal list|show|reconcile|settle|prune`: the calls a journal
//! keeps — by default this user's journals, the MCP proxy's and the
//! gateway's (`places`) — listed (`list`), one shown whole (`show`), and
//! the open ones settled.

mod list;
pub(crate) mod places;
mod show;

use std::sync::Arc;

use anyhow::Result;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Subcommand};
use recourse::Journal;
use recourse::journal::{
    CallState, HandSettleError, HandSettlement, JournalEntry, ListQuery, SettleOptions,
    settle_by_hand, settle_with,
};
use recourse_gateway::CallEntry;
use recourse_mcp::{McpTarget, McpTransport};
use serde_json::Value;
use strum::VariantNames;

use crate::settings::Settings;

/// `--state`: one of the state names (`--help` lists them), read as a [`CallState`].
fn state_parser() -> impl TypedValueParser<Value = CallState> {
    PossibleValuesParser::new(CallState::VARIANTS).try_map(|name| name.parse::<CallState>())
}

/// The journal `recourse journal` read when none was named, before it read
/// the user's default journals: still in many a working directory, and
/// pointed at when it is there.
const OLD_DEFAULT: &str = "recourse.db";

/// `recourse journal …`.
#[derive(Debug, Args)]
pub(crate) struct JournalArgs {
    #[command(subcommand)]
    command: JournalCommand,
    /// The journal: a SQLite path or postgres:// URL [env: RECOURSE_JOURNAL] [default: the MCP
    /// proxy's and the gateway's, $XDG_STATE_HOME/recourse/{mcp-proxy,gateway}.db]. A SQLite file
    /// that does not exist is never created.
    #[arg(long, global = true, value_name = "PATH|URL", value_parser = crate::settings::location)]
    journal: Option<String>,
}

#[derive(Debug, Subcommand)]
enum JournalCommand {
    /// List journaled calls, newest first.
    #[command(
        after_help = r#"Example: recourse journal --journal recourse.db list --state unknown --json"#
    )]
    List {
        /// Only calls in this state.
        #[arg(long, value_parser = state_parser())]
        state: Option<CallState>,
        /// Print a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Show one call whole: its request (redacted), each attempt with what it sent and what
    /// came back, the waits and why, the corrections and what they changed, the lookups and
    /// read-backs, its approval, how it ended and how it was settled.
    #[command(after_help = r#"Example: recourse journal show CALL_ID --json"#)]
    Show {
        /// The call's id (`journal list` shows it).
        call_id: String,
        /// Print JSON: {"state", "caller", "record"} as the gateway answers, with "call" (as
        /// `list --json` lists it) and "payload".
        #[arg(long)]
        json: bool,
    },
    /// Settle in-flight and unknown calls by reading back their verification, else through
    /// their reconcile lookup; a call another process still holds (its lease is unexpired:
    /// it may be running) is left alone.
    #[command(
        after_help = r#"Example: recourse journal --journal recourse.db reconcile --header 'Authorization: Bearer $TOOL_TOKEN'"#
    )]
    Reconcile {
        /// Print a JSON array of what each call became.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        lease: crate::settings::LeaseArg,
        /// A header every verification read sends, 'Name: value' (the credentials a read
        /// needs; the journal never keeps headers). Repeatable.
        #[arg(long = "header", value_name = "'K: V'")]
        headers: Vec<String>,
        /// Read MCP tools (a verification's `tool`) on the server started as this command.
        #[arg(long, value_name = "\"CMD ARGS\"", conflicts_with = "mcp_url")]
        mcp_command: Option<String>,
        /// Read MCP tools on the server at this streamable HTTP endpoint.
        #[arg(long, value_name = "URL")]
        mcp_url: Option<String>,
    },
    /// Settle an open call by hand (unknown, or left in flight past its lease): record what
    /// a person found, who and why. Nothing is sent.
    #[command(
        after_help = r#"Example: recourse journal --journal recourse.db settle CALL_ID --state succeeded --note "the export is in the tool's console""#
    )]
    Settle {
        /// The call's id (`journal list` shows it).
        call_id: String,
        /// What the person found: succeeded (the write took effect) or failed (it did not).
        #[arg(long, value_parser = ["succeeded", "failed"])]
        state: String,
        /// How they know, in words (1–2000 characters; stored redacted).
        #[arg(long)]
        note: String,
        /// Who settles it; without --by, $USER (and without either, nothing is settled).
        #[arg(long, value_name = "NAME", env = "USER", hide_env_values = true)]
        by: Option<String>,
        /// Print the settled call as JSON ({"state", "caller", "record"}).
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        lease: crate::settings::LeaseArg,
    },
    /// Remove finished calls (succeeded or failed) last changed longer ago than
    /// --older-than; a call in flight or unknown is never removed. A removed call's
    /// idempotency key starts a new call.
    #[command(
        after_help = r#"Example: recourse journal --journal recourse.db prune --older-than 7d"#
    )]
    Prune {
        /// An integer with s, m, h or d (0: every finished call).
        #[arg(long = "older-than", value_name = "DURATION", default_value = "7d",
              value_parser = duration)]
        older_than: std::time::Duration,
        /// Print `{"removed": N}`.
        #[arg(long)]
        json: bool,
    },
}

/// A clap value parser for a duration: an integer with s, m, h or d, or 0.
pub(crate) fn duration(value: &str) -> Result<std::time::Duration, String> {
    recourse::duration::parse_duration(value).map_err(|e| e.to_string())
}

pub(crate) async fn run(args: &JournalArgs, settings: &Settings) -> Result<i32> {
    let journals = places::open(settings.journal(args.journal.as_deref())).await?;
    match &args.command {
        JournalCommand::List { state, json } => list::list(&journals, *state, *json).await,
        JournalCommand::Show { call_id, json } => show::show(&journals, call_id, *json).await,
        JournalCommand::Prune { older_than, json } => {
            let mut removed = 0;
            for opened in &journals {
                removed +=
                    recourse::journal::prune_older_than(opened.journal.as_ref(), *older_than)
                        .await?;
            }
            if *json {
                outln!("{}", serde_json::json!({ "removed": removed }));
            } else {
                outln!("removed {removed} finished call(s)");
            }
            Ok(0)
        }
        JournalCommand::Settle {
            call_id,
            state,
            note,
            by,
            json,
            lease,
        } => {
            let mut config = settings.executor.clone();
            lease.apply(&mut config);
            // Who settled a call is part of its record: never made up.
            let Some(who) = by.as_deref().map(str::trim).filter(|who| !who.is_empty()) else {
                eprintln!(
                    "recourse: give --by NAME: who settles a call is recorded with it, and \
                     $USER is not set (or empty)"
                );
                return Ok(2);
            };
            let settlement = HandSettlement {
                state: state.parse().unwrap_or(CallState::Failed),
                who: who.to_owned(),
                note: note.clone(),
            };
            let holding = holding(&journals, call_id).await?;
            let journal = holding.map(|j| j.journal.as_ref());
            settle(journal, call_id, &settlement, config.lease, *json).await
        }
        JournalCommand::Reconcile {
            json,
            lease,
            headers,
            mcp_command,
            mcp_url,
        } => {
            let mut config = settings.executor.clone();
            lease.apply(&mut config);
            let mut options = SettleOptions::from_config(&config);
            for (name, value) in crate::input::headers(headers)? {
                options = options.with_header(name, value)?;
            }
            let server = match (mcp_command, mcp_url) {
                (Some(line), _) => Some(McpTarget::command_line(line)?),
                (None, Some(url)) => Some(McpTarget::url(url)?),
                (None, None) => None,
            };
            if let Some(server) = server {
                // Started only if a call's verification reads a tool.
                options = options.with_tool_transport(Arc::new(McpTransport::new(server)));
            }
            reconcile(&journals, &options, *json).await
        }
    }
}

/// The first of `journals` that holds `call_id`.
async fn holding<'a>(
    journals: &'a [places::Opened],
    call_id: &str,
) -> Result<Option<&'a places::Opened>> {
    for opened in journals {
        if opened.journal.get(call_id).await?.is_some() {
            return Ok(Some(opened));
        }
    }
    Ok(None)
}

/// `journal settle`: 0 when settled; 1 (with why) for a call that is absent
/// or not open.
async fn settle(
    journal: Option<&dyn Journal>,
    call_id: &str,
    settlement: &HandSettlement,
    lease: std::time::Duration,
    json: bool,
) -> Result<i32> {
    let settled = match journal {
        Some(journal) => settle_by_hand(journal, call_id, settlement, lease).await,
        None => Ok(None),
    };
    match settled {
        Ok(Some(entry)) => {
            if json {
                let record = entry.record_json();
                outln!(
                    "{}",
                    serde_json::json!({"state": entry.state, "caller": entry.caller(), "record": record})
                );
            } else {
                outln!(
                    "{}: {} (settled by {})",
                    entry.call_id,
                    entry.state.as_str(),
                    settlement.who
                );
            }
            Ok(0)
        }
        Ok(None) => {
            eprintln!("recourse: CALL_NOT_FOUND: no call {call_id} in the journal");
            Ok(1)
        }
        Err(HandSettleError::NotSettleable(state)) => {
            eprintln!(
                "recourse: CALL_NOT_SETTLEABLE: {}",
                HandSettleError::NotSettleable(state)
            );
            Ok(1)
        }
        Err(HandSettleError::Journal(e)) => Err(e.into()),
        Err(e) => {
            eprintln!("recourse: {e}");
            Ok(2)
        }
    }
}

/// A journal entry as `journal list --json` (and the gateway's `GET /v1/calls`) shows it.
pub(crate) fn entry_json(e: &JournalEntry) -> Value {
    serde_json::to_value(CallEntry::from(e)).unwrap_or(Value::Null)
}

async fn reconcile(
    journals: &[places::Opened],
    options: &SettleOptions,
    as_json: bool,
) -> Result<i32> {
    let open_in = |state| ListQuery {
        state: Some(state),
        ..ListQuery::default()
    };
    let mut results = Vec::new();
    let mut unresolved = 0;
    for opened in journals {
        let journal = opened.journal.as_ref();
        let mut open = journal.list(&open_in(CallState::InFlight)).await?;
        open.extend(journal.list(&open_in(CallState::Unknown)).await?);
        for entry in &open {
            let s = settle_with(journal, entry, options).await?;
            if s.held || matches!(s.state, CallState::InFlight | CallState::Unknown) {
                unresolved += 1;
            }
            if !as_json {
                outln!("{}  {} → {}  {}", s.call_id, s.from, s.state, s.note);
            }
            results.push(s);
        }
    }
    if as_json {
        outln!("{}", serde_json::to_string_pretty(&results)?);
    } else if results.is_empty() {
        outln!("nothing to reconcile");
    }
    Ok(if unresolved == 0 { 0 } else { 3 })
}

#[cfg(test)]
mod tests {
    use clap::{Arg, Command};
    use strum::IntoEnumIterator;

    use super::*;

    fn state(value: &str) -> Result<CallState, clap::Error> {
        let cmd =
            Command::new("list").arg(Arg::new("state").long("state").value_parser(state_parser()));
        let matches = cmd.try_get_matches_from(["list", "--state", value])?;
        Ok(*matches.get_one::<CallState>("state").unwrap())
    }

    #[test]
    fn state_reads_every_state_by_its_name_and_lists_them() {
        for s in CallState::iter() {
            assert_eq!(state(s.as_str()).unwrap(), s);
        }
        let err = state("done").unwrap_err().to_string();
        assert!(
            err.contains(
                "[possible values: in_flight, succeeded, failed, unknown, awaiting_approval]"
            ),
            "{err}"
        );
    }
}
