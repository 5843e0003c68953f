//! [`DoorAnswer`]: what a call at the door came to, before any door renders it.

use recourse::CallReport;
use recourse::journal::CallState;
use recourse::keyed::Keyed;
use serde_json::Value;

use crate::refused::Refused;

/// What a call at the door came to. Each door renders every variant — the
/// gateway as an HTTP answer, the MCP proxy as a `CallToolResult` — and
/// decides nothing of its own about it.
///
/// ```
/// use recourse::journal::CallState;
/// use recourse::keyed::Keyed;
/// use recourse_door::DoorAnswer;
/// use serde_json::json;
///
/// let record = json!({"call_id": "c-1", "outcome": "awaiting_approval"});
/// let resent = DoorAnswer::of_keyed(
///     Keyed::Replayed { state: CallState::AwaitingApproval, record: Box::new(record) },
///     std::time::Duration::from_secs(30),
/// );
/// assert!(matches!(resent, DoorAnswer::Awaiting { replayed: true, .. }));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum DoorAnswer {
    /// The call ran for this request: its record.
    Ran(Box<CallReport>),
    /// A keyed resend of a call that ended (or was left by a process that
    /// died running it): where it stands and its record. Nothing was sent.
    Replayed {
        /// The journal's state of the call (`in_flight` left behind reads `unknown`).
        state: CallState,
        /// The first call's record.
        record: Box<Value>,
    },
    /// The call waits for a person's approval: its record. Nothing was sent.
    Awaiting {
        /// The waiting call's record (`outcome: "awaiting_approval"`).
        record: Box<Value>,
        /// Whether it was asked for before (a resend under its key).
        replayed: bool,
    },
    /// The door did not run the request, or could not finish it.
    Refused(Refused),
}

impl DoorAnswer {
    /// What a keyed request's journal answer means at the door (`lease`
    /// tells a client when to ask again for a call still running).
    pub fn of_keyed(keyed: Keyed, lease: std::time::Duration) -> Self {
        match keyed {
            Keyed::Ran(report) => Self::of_report(report),
            Keyed::Replayed {
                state: CallState::AwaitingApproval,
                record,
            } => Self::Awaiting {
                record,
                replayed: true,
            },
            Keyed::Replayed { state, record } => Self::Replayed { state, record },
            Keyed::InProgress { call_id } => Self::Refused(Refused::in_progress(&call_id, lease)),
            Keyed::KeyReused { call_id } => Self::Refused(Refused::key_reused(&call_id)),
        }
    }

    /// A call that ran: its record — unless the journal failed before
    /// anything was sent, which is the door's refusal (send it again once
    /// the journal answers), not a tool's failure.
    pub fn of_report(report: Box<CallReport>) -> Self {
        if report.is_unsent_for_the_journal() {
            let why = report
                .outcome
                .error()
                .map_or_else(|| "it did not answer".to_owned(), |e| e.message.clone());
            return Self::Refused(Refused::journal_away(&why).of_call(&report.call_id));
        }
        Self::Ran(report)
    }
}
