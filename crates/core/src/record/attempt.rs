//! One attempt of a call, as the policy saw and decided it.

use recourse_protocol::{ErrorCategory, RetryPermission};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use strum::{EnumIter, EnumString, IntoStaticStr, VariantNames};

use super::notes;

#[cfg(feature = "schema")]
use crate::policy::ActionKind;
use crate::policy::{Action, AnswerFacts, StopReason};
use crate::record::{CorrectionLayer, Event};
use crate::transport::TransportFailure;

/// Which layer produced the payload an attempt sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, EnumString, EnumIter, VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum PayloadSource {
    /// The caller's payload, as given.
    Caller,
    /// The caller's payload, changed by schema coercion (L2).
    Coercion,
    /// Deterministic repair (L2.5).
    Repair,
    /// LLM correction (L3).
    Llm,
    /// Contextual re-resolution (L4).
    Semantic,
}

impl PayloadSource {
    /// The snake-case name used in reports.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl From<CorrectionLayer> for PayloadSource {
    fn from(layer: CorrectionLayer) -> Self {
        match layer {
            CorrectionLayer::Repair => Self::Repair,
            CorrectionLayer::Llm => Self::Llm,
            CorrectionLayer::Semantic => Self::Semantic,
        }
    }
}

/// One dispatch, what came back, what the policy made of it, and what
/// recourse did around it.
///
/// Serializes to the attempt object of the JSON record: `action`, `wait_ms`
/// and `reason` come from [`action`](Self::action), `transport_error` is the
/// failure as text, and `notes` are sentences generated from
/// [`events`](Self::events).
// `CallReport::write_json` (json.rs) writes this serialization by hand too;
// its property test fails until a change here is made there.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AttemptRecord {
    /// 1-based attempt number.
    pub n: u32,
    /// The payload sent, redacted.
    pub payload: Value,
    /// The HTTP status, when the tool answered.
    pub status: Option<u16>,
    /// The transport failure (redacted), when the tool did not answer.
    #[serde(serialize_with = "failure_text")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    pub transport_error: Option<TransportFailure>,
    /// The category the tool named, if any.
    pub category: Option<ErrorCategory>,
    /// The error code the tool named, if any.
    pub code: Option<String>,
    /// The tool's retry permission.
    pub retry_permission: RetryPermission,
    /// What the policy decided.
    #[serde(flatten, serialize_with = "decision")]
    #[cfg_attr(feature = "schema", schemars(with = "Decision<'static>"))]
    pub action: Action,
    /// How long the attempt was allowed to take: the per-attempt timeout,
    /// cut to the time left before the deadline.
    pub timeout_ms: u64,
    /// Which layer produced this attempt's payload.
    pub source: PayloadSource,
    /// What the answer says about whether a write ran: what rule 3 read
    /// (not serialized; the record's `status`, `category` and
    /// `transport_error` say it in words).
    #[serde(skip)]
    #[cfg_attr(feature = "schema", schemars(skip))]
    pub facts: AnswerFacts,
    /// What recourse did for this attempt, in order.
    #[serde(flatten, serialize_with = "events_and_notes")]
    #[cfg_attr(feature = "schema", schemars(with = "EventsAndNotes<'static>"))]
    pub events: Vec<Event>,
}

impl AttemptRecord {
    /// The wait before the next dispatch, when the policy chose to resend.
    pub fn wait_ms(&self) -> Option<u64> {
        match &self.action {
            Action::RetrySame { wait, .. } => Some(millis(*wait)),
            _ => None,
        }
    }

    /// The sentences `notes` holds: one per event, for people to read.
    pub fn notes(&self) -> Vec<String> {
        self.events.iter().filter_map(notes::describe).collect()
    }

    /// Whether the request may have reached the tool: it answered, or the
    /// transport failed after (possibly) sending.
    pub fn was_sent(&self) -> bool {
        self.transport_error
            .as_ref()
            .is_none_or(|t| t.kind.was_sent())
    }
}

/// `d` in whole milliseconds, as the record writes durations (`u64::MAX` past it).
pub fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn failure_text<S: Serializer>(
    failure: &Option<TransportFailure>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match failure {
        Some(f) => serializer.collect_str(f),
        None => serializer.serialize_none(),
    }
}

/// An attempt's decision, as the record shows it.
#[derive(Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct Decision<'a> {
    /// What the policy decided: `succeed`, `retry_same`, `correct`,
    /// `reconcile`, `verify` or `stop`.
    #[cfg_attr(feature = "schema", schemars(extend("enum" = ActionKind::VARIANTS)))]
    action: &'static str,
    /// With `retry_same`: the wait before the resend, in milliseconds.
    wait_ms: Option<u64>,
    /// With `stop`: the stop reason's code.
    reason: Option<&'a StopReason>,
}

fn decision<S: Serializer>(action: &Action, serializer: S) -> Result<S::Ok, S::Error> {
    Decision {
        action: action.name(),
        wait_ms: match action {
            Action::RetrySame { wait, .. } => Some(millis(*wait)),
            _ => None,
        },
        reason: match action {
            Action::Stop { reason } => Some(reason),
            _ => None,
        },
    }
    .serialize(serializer)
}

/// An attempt's events, and the sentences they make for people.
#[derive(Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct EventsAndNotes<'a> {
    /// One sentence per event, for people to read (absent when there are none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    notes: Vec<String>,
    /// What recourse did for this attempt, in order.
    events: &'a [Event],
}

fn events_and_notes<S: Serializer>(events: &[Event], serializer: S) -> Result<S::Ok, S::Error> {
    EventsAndNotes {
        notes: events.iter().filter_map(notes::describe).collect(),
        events,
    }
    .serialize(serializer)
}

#[cfg(all(test, feature = "schema"))]
mod tests {
    use super::*;

    #[test]
    fn the_schema_names_every_action() {
        let schema = schemars::schema_for!(Decision);
        let names = &schema.as_value()["properties"]["action"]["enum"];
        for action in [
            Action::Succeed,
            Action::RetrySame {
                wait: std::time::Duration::ZERO,
                cause: crate::policy::WaitCause::Backoff,
            },
            Action::Correct,
            Action::Reconcile {
                wait: std::time::Duration::ZERO,
            },
            Action::Verify,
            Action::stop(StopReason::CannotFix),
        ] {
            assert!(
                names.as_array().unwrap().contains(&action.name().into()),
                "{}",
                action.name()
            );
        }
        assert_eq!(
            names,
            &serde_json::json!(ActionKind::VARIANTS),
            "and only those"
        );
    }
}
