//! Configuration values, checked: the error that names the setting at
//! fault, and the parsers every `RECOURSE_*` setting and flag shares.

use std::borrow::Cow;
use std::fmt;

/// A configuration value that could not be used. Names the setting and says why.
///
/// ```
/// use recourse_core::config::{CallField, ConfigError};
///
/// let e = ConfigError::new(CallField::Headers, "\"Host\" is set by the transport");
/// assert_eq!(e.field(), Some(CallField::Headers));
/// assert_eq!(e.setting(), "headers");
/// let e = ConfigError::new("RECOURSE_MAX_RETRIES", "\"x\" is not a number");
/// assert_eq!((e.field(), e.setting()), (None, "RECOURSE_MAX_RETRIES"));
/// assert_eq!(e.to_string(), "invalid RECOURSE_MAX_RETRIES: \"x\" is not a number");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    setting: Setting,
    problem: String,
}

/// Which setting a [`ConfigError`] is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Setting {
    /// A field of a call, as a caller gave it.
    Call(CallField),
    /// Another setting, by its name: an environment variable
    /// (`RECOURSE_MAX_RETRIES`), a flag, or a part of the configuration
    /// (`LLM base URL`).
    Named(Cow<'static, str>),
}

/// The fields of a call a caller sets, each of which can be refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CallField {
    /// Where the call goes: a URL or a tool's name.
    Target,
    /// The tool's input.
    Payload,
    /// The HTTP method.
    Method,
    /// Extra headers.
    Headers,
    /// The protected JSON Pointers.
    Protect,
    /// The input schema.
    Schema,
    /// The caller's idempotency key.
    IdempotencyKey,
    /// The read-back verification.
    Verify,
    /// The reconcile lookup's URL template.
    Reconcile,
    /// The call's deadline.
    Deadline,
    /// The person's approval it asks for.
    Approval,
}

impl CallField {
    /// The field's snake-case name (what a `ConfigError` about it names).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Target => "target",
            Self::Payload => "payload",
            Self::Method => "method",
            Self::Headers => "headers",
            Self::Protect => "protect",
            Self::Schema => "schema",
            Self::IdempotencyKey => "idempotency_key",
            Self::Verify => "verify",
            Self::Reconcile => "reconcile",
            Self::Deadline => "deadline",
            Self::Approval => "approval",
        }
    }
}

impl From<CallField> for Setting {
    fn from(field: CallField) -> Self {
        Self::Call(field)
    }
}

impl From<&str> for Setting {
    fn from(name: &str) -> Self {
        Self::Named(Cow::Owned(name.to_owned()))
    }
}

impl From<String> for Setting {
    fn from(name: String) -> Self {
        Self::Named(Cow::Owned(name))
    }
}

impl From<&String> for Setting {
    fn from(name: &String) -> Self {
        Self::Named(Cow::Owned(name.clone()))
    }
}

impl ConfigError {
    /// An error about `setting`: a [`CallField`], or any setting by name.
    pub fn new(setting: impl Into<Setting>, problem: impl Into<String>) -> Self {
        Self {
            setting: setting.into(),
            problem: problem.into(),
        }
    }

    /// The setting (environment variable, flag or field) at fault, by name.
    pub fn setting(&self) -> &str {
        match &self.setting {
            Setting::Call(field) => field.as_str(),
            Setting::Named(name) => name,
        }
    }

    /// Why the value cannot be used (the message without the setting's name).
    pub fn problem(&self) -> &str {
        &self.problem
    }

    /// The call's field at fault, when it is one.
    pub fn field(&self) -> Option<CallField> {
        match self.setting {
            Setting::Call(field) => Some(field),
            Setting::Named(_) => None,
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {}: {}", self.setting(), self.problem)
    }
}

impl std::error::Error for ConfigError {}

/// Checks an HTTP header name: visible ASCII token characters only.
///
/// # Errors
/// When `value` is empty or holds characters a header name may not.
pub fn parse_header_name(setting: &str, value: &str) -> Result<String, ConfigError> {
    let ok = !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    if ok {
        Ok(value.to_owned())
    } else {
        Err(ConfigError::new(
            setting,
            format!("{value:?} is not a valid header name"),
        ))
    }
}

/// Parses a boolean setting: true/false/1/0/yes/no, case-insensitive.
///
/// # Errors
/// Anything else, naming `setting`.
pub fn parse_bool(setting: &str, value: &str) -> Result<bool, ConfigError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        _ => Err(ConfigError::new(
            setting,
            format!("{value:?} is not a boolean (use true/false/1/0/yes/no)"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans_take_six_words_and_name_the_setting_otherwise() {
        for (text, want) in [
            ("true", true),
            ("1", true),
            ("YES", true),
            ("false", false),
            ("0", false),
            ("no", false),
        ] {
            assert_eq!(parse_bool("X", text), Ok(want), "{text}");
        }
        let err = parse_bool("RECOURSE_SEMANTIC_RETRY", "maybe").unwrap_err();
        assert_eq!(err.setting(), "RECOURSE_SEMANTIC_RETRY");
    }

    #[test]
    fn header_names_are_tokens() {
        assert_eq!(
            parse_header_name("h", "Idempotency-Key").unwrap(),
            "Idempotency-Key"
        );
        assert!(parse_header_name("h", "").is_err());
        assert!(parse_header_name("h", "a b").is_err());
        assert!(parse_header_name("h", "a:b").is_err());
    }
}
