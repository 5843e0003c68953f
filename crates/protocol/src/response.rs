//! `ToolResponse`: the envelope every recourse tool answers with.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ToolError;

/// The envelope: `{"success": bool, "data"?: any, "error"?: ToolError}`.
///
/// ```
/// use recourse_protocol::{ToolError, ToolResponse};
/// use serde_json::json;
///
/// let ok = ToolResponse::ok(json!({"price": 468.285}));
/// assert_eq!(serde_json::to_value(&ok).unwrap(), json!({"success": true, "data": {"price": 468.285}}));
///
/// let failed = ToolResponse::failure(ToolError::policy_rejection("REFUND_WINDOW_CLOSED", "Past 30 days"));
/// assert_eq!(failed.http_status(), 422);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResponse {
    /// Whether the tool did what was asked.
    pub success: bool,
    /// The result, on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// The failure, when `success` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
}

impl ToolResponse {
    /// A success carrying `data`.
    pub fn ok(data: Value) -> Self {
        Self {
            success: true,
            data: (!data.is_null()).then_some(data),
            error: None,
        }
    }

    /// A failure carrying `error`.
    pub fn failure(error: ToolError) -> Self {
        Self {
            success: false,
            data: None,
            error: Some(error),
        }
    }

    /// The HTTP status a tool sends with this envelope: 200 on success, else
    /// the status of the error's category (500 when a failure has no error).
    pub fn http_status(&self) -> u16 {
        match (&self.error, self.success) {
            (_, true) => 200,
            (Some(e), false) => e.http_status(),
            (None, false) => 500,
        }
    }

    /// The envelope as JSON bytes. Serialising this type cannot fail.
    pub fn to_json_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_else(|_| br#"{"success":false}"#.to_vec())
    }
}

impl From<ToolError> for ToolResponse {
    fn from(e: ToolError) -> Self {
        Self::failure(e)
    }
}
