//! How a call ended, and the report that explains it.

use recourse_protocol::{ToolData, ToolError};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use strum::{EnumIter, EnumString, IntoStaticStr, VariantNames};

use crate::policy::StopReason;

/// How a logical call ended.
///
/// Serializes as the record's `outcome` (`succeeded|failed|unknown`), `data`
/// (the result, or `null`), `error` (redacted, or `null`), `reason` (the stop
/// reason's code) and `reason_text` (its sentence) — flattened into the
/// record, not as an object of its own.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The tool did what was asked.
    Succeeded {
        /// The result, as the tool sent it.
        data: ToolData,
    },
    /// The call stopped without success, and nothing is in doubt.
    Failed {
        /// The last error, if the tool (or transport) gave one.
        error: Option<ToolError>,
        /// Why the executor stopped.
        reason: StopReason,
    },
    /// A write may or may not have committed; a person or a later
    /// reconciliation must check before writing again.
    Unknown {
        /// The last error, if any.
        error: Option<ToolError>,
        /// Why the executor stopped.
        reason: StopReason,
    },
}

impl Outcome {
    /// How the call ended, without what it ended with.
    ///
    /// ```
    /// use recourse_core::record::{Outcome, OutcomeKind};
    ///
    /// let done = Outcome::Succeeded { data: serde_json::Value::Null.into() };
    /// assert_eq!(done.kind(), OutcomeKind::Succeeded);
    /// assert_eq!(done.name(), "succeeded");
    /// ```
    pub fn kind(&self) -> OutcomeKind {
        match self {
            Self::Succeeded { .. } => OutcomeKind::Succeeded,
            Self::Failed { .. } => OutcomeKind::Failed,
            Self::Unknown { .. } => OutcomeKind::Unknown,
        }
    }

    /// `succeeded`, `failed` or `unknown`: the [`kind`](Self::kind)'s name.
    pub fn name(&self) -> &'static str {
        self.kind().as_str()
    }

    /// The stop reason, unless the call succeeded.
    pub fn reason(&self) -> Option<&StopReason> {
        match self {
            Self::Succeeded { .. } => None,
            Self::Failed { reason, .. } | Self::Unknown { reason, .. } => Some(reason),
        }
    }

    /// The last error, unless the call succeeded.
    pub fn error(&self) -> Option<&ToolError> {
        match self {
            Self::Succeeded { .. } => None,
            Self::Failed { error, .. } | Self::Unknown { error, .. } => error.as_ref(),
        }
    }

    /// The process exit code the CLI uses: 0 succeeded, 1 failed, 3 unknown.
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::Succeeded { .. } => 0,
            Self::Failed { .. } => 1,
            Self::Unknown { .. } => 3,
        }
    }
}

/// Model token usage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TokenUsage {
    /// Prompt tokens.
    pub prompt: u64,
    /// Completion tokens.
    pub completion: u64,
}

/// How a call ended, without its data or reason: the record's `outcome`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
// The API document's name and words for it, from before it was public.
#[cfg_attr(
    feature = "schema",
    schemars(rename = "OutcomeName", description = "`outcome`'s value.")
)]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, EnumString, EnumIter, VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum OutcomeKind {
    /// The tool did what was asked.
    Succeeded,
    /// The call stopped without success, and nothing is in doubt.
    Failed,
    /// A write may or may not have committed: check before writing again.
    Unknown,
}

impl OutcomeKind {
    /// `succeeded`, `failed` or `unknown`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The outcome's fields of the record.
#[derive(Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct OutcomeFields<'a> {
    /// How the call ended.
    outcome: OutcomeKind,
    /// The tool's result when the call succeeded; `null` otherwise.
    data: Option<&'a ToolData>,
    /// The last error (the tool's or the transport's), redacted; `null` on success or when none came.
    error: Option<ToolError>,
    /// Why the executor stopped; `null` on success.
    reason: Option<&'a StopReason>,
    /// The stop reason as a sentence, for people; `null` on success.
    reason_text: Option<String>,
}

// `CallReport::write_json` (json.rs) writes these fields by hand too; its
// property test fails until a change here is made there.
impl Serialize for Outcome {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let data = match self {
            Self::Succeeded { data } => Some(data),
            Self::Failed { .. } | Self::Unknown { .. } => None,
        };
        OutcomeFields {
            outcome: self.kind(),
            data,
            error: self.error().map(ToolError::redacted),
            reason: self.reason(),
            reason_text: self.reason().map(ToString::to_string),
        }
        .serialize(serializer)
    }
}

/// The fields [`Outcome`] adds to the record (it is flattened into it).
#[cfg(feature = "schema")]
impl schemars::JsonSchema for Outcome {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Outcome".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <OutcomeFields<'static> as schemars::JsonSchema>::json_schema(generator)
    }
}
