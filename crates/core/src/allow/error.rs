//! [`TargetError`]: why a target, template or pattern was refused.

use std::fmt;

use recourse_protocol::ToolError;

/// The most of a caller's text an error message quotes.
const QUOTE_LIMIT: usize = 120;

/// What kind of [`TargetError`] this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TargetErrorKind {
    /// The target is not an http(s) URL one may call (an input error).
    Invalid,
    /// The target is valid but no pattern allows it (permission denied).
    NotAllowed,
    /// An allowlist pattern is malformed (a configuration error).
    Pattern,
}

/// Why a target, template or pattern was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetError {
    kind: TargetErrorKind,
    message: String,
}

impl TargetError {
    pub(super) fn new(kind: TargetErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    pub(super) fn invalid(message: impl Into<String>) -> Self {
        Self::new(TargetErrorKind::Invalid, message)
    }

    /// What kind of refusal this is.
    pub fn kind(&self) -> TargetErrorKind {
        self.kind
    }

    /// The envelope code: `INVALID_TARGET`, `TARGET_NOT_ALLOWED` or `INVALID_TARGET_PATTERN`.
    pub fn code(&self) -> &'static str {
        match self.kind {
            TargetErrorKind::Invalid => "INVALID_TARGET",
            TargetErrorKind::NotAllowed => "TARGET_NOT_ALLOWED",
            TargetErrorKind::Pattern => "INVALID_TARGET_PATTERN",
        }
    }

    /// The refusal as an envelope: `PERMISSION_DENIED` for a target not
    /// allowed, `INPUT_ERROR` otherwise.
    pub fn to_tool_error(&self) -> ToolError {
        match self.kind {
            TargetErrorKind::NotAllowed => ToolError::permission_denied(self.code(), &self.message),
            TargetErrorKind::Invalid | TargetErrorKind::Pattern => {
                ToolError::input_error(self.code(), &self.message)
            }
        }
    }
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TargetError {}

/// `text` quoted for a message, cut short when long.
pub(super) fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTE_LIMIT) {
        Some((end, _)) => format!("{:?}…", &text[..end]),
        None => format!("{text:?}"),
    }
}
