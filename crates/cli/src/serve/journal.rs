//! The gateway's journal flags: where it is (by default, where
//! `recourse_gateway::open_server_journal` puts it), and how long it keeps
//! finished calls.

use std::time::Duration;

use clap::Args;

/// The gateway's journal flags.
#[derive(Debug, Args)]
pub(crate) struct JournalArgs {
    /// Where keyed and non-idempotent calls are journaled: a SQLite path, a postgres:// URL,
    /// or `none` (then requests with an idempotency_key are refused) [env: RECOURSE_JOURNAL]
    /// [default: $XDG_STATE_HOME/recourse/gateway.db].
    #[arg(long, value_name = "PATH|URL|none", value_parser = crate::settings::location)]
    journal: Option<String>,
    /// Remove finished calls (succeeded or failed; never in flight or unknown) last changed
    /// longer ago than this, in the background: an integer with s, m, h or d; 0 keeps
    /// everything. A removed call's idempotency key starts a new call.
    #[arg(long = "journal-retain", value_name = "DURATION", default_value = "7d",
          value_parser = crate::journal::duration)]
    pub(crate) retain: Duration,
    /// A header every lookup and verification read that settles a journaled call sends,
    /// 'Name: value' (the credentials they need: the journal keeps a lookup template's
    /// `?token=` redacted). Repeatable.
    #[arg(long = "reconcile-header", value_name = "'K: V'")]
    pub(crate) reconcile_headers: Vec<String>,
}

impl JournalArgs {
    /// The location the flag gives, if it gives one.
    pub(crate) fn location(&self) -> Option<&str> {
        self.journal.as_deref()
    }
}
