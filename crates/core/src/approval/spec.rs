//! What a call's caller, or its tool's manifest, asks of an approval:
//! [`ApprovalSpec`], checked into what is [`Required`].

use std::fmt;
use std::time::Duration;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::duration::parse_duration;

/// How long a person has to decide, unless the request says.
pub const DEFAULT_EXPIRES_IN: Duration = Duration::from_secs(24 * 3600);
/// The longest a call may wait for approval: 30 days (a call awaiting
/// approval is never pruned).
pub const MAX_EXPIRES_IN: Duration = Duration::from_secs(30 * 24 * 3600);
/// The longest reason, in characters.
pub const MAX_REASON: usize = 500;

/// An approval a call asks for (the gateway request's `approval`, a tool
/// manifest entry's): why, and how long a person has to decide.
///
/// ```
/// use recourse_core::approval::ApprovalSpec;
///
/// let spec: ApprovalSpec = serde_json::from_str(r#"{"reason": "refund over 500 EUR"}"#).unwrap();
/// assert_eq!(spec.required().unwrap().expires_in.as_secs(), 24 * 3600);
/// let seconds: ApprovalSpec = serde_json::from_str(r#"{"reason": "r", "expires_in": 90}"#).unwrap();
/// assert_eq!(seconds.required().unwrap().expires_in.as_secs(), 90);
/// let refused = serde_json::from_str::<ApprovalSpec>(r#"{"reason": "r", "expires_in": "soon"}"#);
/// assert!(refused.unwrap_err().to_string().contains("90s, 15m, 24h"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ApprovalSpec {
    /// Why the call needs a person's approval, shown to the approver and
    /// the model (1–500 characters).
    pub reason: String,
    /// How long a person has to decide: a duration (`90s`, `15m`, `24h`,
    /// `7d`) or a number of seconds; at most 30 days. Default `24h`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in: Option<ExpiresIn>,
    /// Where a person is asked: `console` (the gateway's console and API,
    /// always) and `client` (the MCP client's own UI, through elicitation,
    /// when the client offers it — `recourse mcp proxy` only). Default
    /// `["console"]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<Vec<Via>>,
}

/// Where a person may be asked to approve a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// The gateway's console and `POST /v1/approvals/{id}` (always open).
    Console,
    /// The MCP client's own UI: an elicitation form, for a client that
    /// declares elicitation.
    Client,
}

/// What an approval requires, checked: the reason (trimmed), how long a
/// person has, and where they may be asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Required {
    /// Why (1–500 characters, trimmed).
    pub reason: String,
    /// How long a person has to decide.
    pub expires_in: Duration,
    /// Where a person is asked: never empty (`[console]` by default).
    pub via: Vec<Via>,
}

impl Required {
    /// Whether the person may be asked in the MCP client.
    pub fn in_client(&self) -> bool {
        self.via.contains(&Via::Client)
    }
}

/// An approval that cannot be asked for as written, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalSpecError {
    /// The reason is empty or longer than [`MAX_REASON`] characters.
    Reason,
    /// The time to decide is zero or longer than [`MAX_EXPIRES_IN`].
    ExpiresIn,
    /// `via` names no place to ask.
    Via,
}

impl ApprovalSpecError {
    /// The field at fault: `reason` or `expires_in`.
    pub fn field(&self) -> &'static str {
        match self {
            Self::Reason => "reason",
            Self::ExpiresIn => "expires_in",
            Self::Via => "via",
        }
    }
}

impl fmt::Display for ApprovalSpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Reason => write!(
                f,
                "approval.reason says why the call needs approval, in 1–{MAX_REASON} characters"
            ),
            Self::ExpiresIn => {
                f.write_str("approval.expires_in is more than zero and at most 30 days (720h, 30d)")
            }
            Self::Via => f.write_str(
                "approval.via names where a person is asked: [\"console\"], [\"client\"] or both",
            ),
        }
    }
}

impl std::error::Error for ApprovalSpecError {}

impl ApprovalSpec {
    /// An approval asked for `reason`, with the default time to decide.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            expires_in: None,
            via: None,
        }
    }

    /// What it requires, checked.
    ///
    /// # Errors
    /// A reason that is empty (or blank) or over 500 characters; a time to
    /// decide that is zero or over 30 days.
    pub fn required(&self) -> Result<Required, ApprovalSpecError> {
        let reason = self.reason.trim();
        if reason.is_empty() || reason.chars().count() > MAX_REASON {
            return Err(ApprovalSpecError::Reason);
        }
        let expires_in = self.expires_in.map_or(DEFAULT_EXPIRES_IN, |e| e.0);
        if expires_in.is_zero() || expires_in > MAX_EXPIRES_IN {
            return Err(ApprovalSpecError::ExpiresIn);
        }
        let via = match &self.via {
            None => vec![Via::Console],
            Some(via) if via.is_empty() => return Err(ApprovalSpecError::Via),
            Some(via) => {
                let mut via = via.clone();
                via.dedup();
                via
            }
        };
        Ok(Required {
            reason: reason.to_owned(),
            expires_in,
            via,
        })
    }
}

/// How long a person has to decide: read from a duration string (`90s`,
/// `15m`, `24h`, `7d`), or a whole number of seconds — as a JSON number or
/// a string of digits. Written back as a duration string.
///
/// ```
/// use recourse_core::approval::ExpiresIn;
///
/// for written in [r#""24h""#, "86400", r#""86400""#] {
///     let read: ExpiresIn = serde_json::from_str(written).unwrap();
///     assert_eq!(read.duration().as_secs(), 86_400);
///     assert_eq!(serde_json::to_string(&read).unwrap(), r#""24h""#);
/// }
/// assert!(serde_json::from_str::<ExpiresIn>("1.5").is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpiresIn(Duration);

impl ExpiresIn {
    /// `duration`, as it is.
    pub fn new(duration: Duration) -> Self {
        Self(duration)
    }

    /// The duration.
    pub fn duration(self) -> Duration {
        self.0
    }

    /// Reads `text`: a duration string, or digits as seconds.
    ///
    /// # Errors
    /// Anything else, in the duration parser's words.
    pub fn parse(text: &str) -> Result<Self, String> {
        if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
            return text
                .parse::<u64>()
                .map(|secs| Self(Duration::from_secs(secs)))
                .map_err(|_| format!("{text:?} is too many seconds"));
        }
        parse_duration(text).map(Self).map_err(|e| e.to_string())
    }
}

impl fmt::Display for ExpiresIn {
    /// The largest whole unit of hours, minutes or seconds: `24h`, `90s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.0.as_secs();
        if secs > 0 && secs.is_multiple_of(3600) {
            write!(f, "{}h", secs / 3600)
        } else if secs > 0 && secs.is_multiple_of(60) {
            write!(f, "{}m", secs / 60)
        } else {
            write!(f, "{secs}s")
        }
    }
}

impl Serialize for ExpiresIn {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ExpiresIn {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Read;
        impl Visitor<'_> for Read {
            type Value = ExpiresIn;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration (90s, 15m, 24h, 7d) or a whole number of seconds")
            }

            fn visit_u64<E: de::Error>(self, secs: u64) -> Result<ExpiresIn, E> {
                Ok(ExpiresIn(Duration::from_secs(secs)))
            }

            fn visit_i64<E: de::Error>(self, n: i64) -> Result<ExpiresIn, E> {
                u64::try_from(n)
                    .map(|secs| ExpiresIn(Duration::from_secs(secs)))
                    .map_err(|_| E::invalid_value(de::Unexpected::Signed(n), &self))
            }

            fn visit_f64<E: de::Error>(self, n: f64) -> Result<ExpiresIn, E> {
                Err(E::invalid_value(de::Unexpected::Float(n), &self))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<ExpiresIn, E> {
                ExpiresIn::parse(text).map_err(E::custom)
            }
        }
        deserializer.deserialize_any(Read)
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for ExpiresIn {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ExpiresIn".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A duration (`90s`, `15m`, `24h`, `7d`), or a whole number of seconds.",
            "oneOf": [
                {"type": "string", "pattern": "^([0-9]+|[0-9]+[smhd])$"},
                {"type": "integer", "minimum": 1}
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: &str) -> Result<ApprovalSpec, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    #[test]
    fn a_spec_is_checked_once_into_what_it_requires() {
        let ok = spec(r#"{"reason": "  moves money  ", "expires_in": "15m"}"#).unwrap();
        assert_eq!(
            ok.required(),
            Ok(Required {
                reason: "moves money".into(),
                expires_in: Duration::from_secs(900),
                via: vec![Via::Console],
            })
        );
        let both = spec(r#"{"reason": "r", "via": ["console", "client"]}"#).unwrap();
        let required = both.required().unwrap();
        assert!(required.in_client());
        assert_eq!(required.via, [Via::Console, Via::Client]);
        assert!(!ok.required().unwrap().in_client());
        assert_eq!(
            spec(r#"{"reason": "r", "via": []}"#)
                .unwrap()
                .required()
                .unwrap_err()
                .field(),
            "via"
        );
        assert!(spec(r#"{"reason": "r", "via": ["email"]}"#).is_err());
        for (bad, field) in [
            (r#"{"reason": "   "}"#, "reason"),
            (r#"{"reason": "r", "expires_in": 0}"#, "expires_in"),
            (r#"{"reason": "r", "expires_in": "0"}"#, "expires_in"),
            (r#"{"reason": "r", "expires_in": "31d"}"#, "expires_in"),
        ] {
            let e = spec(bad).unwrap().required().unwrap_err();
            assert_eq!(e.field(), field, "{bad}");
        }
        let long = ApprovalSpec::new("x".repeat(MAX_REASON + 1));
        assert_eq!(long.required(), Err(ApprovalSpecError::Reason));
    }

    #[test]
    fn what_is_not_a_duration_is_refused_as_it_is_read() {
        for bad in [
            r#"{"reason": "r", "expires_in": -5}"#,
            r#"{"reason": "r", "expires_in": 1.5}"#,
            r#"{"reason": "r", "expires_in": "1 day"}"#,
            r#"{"reason": "r", "expires_in": true}"#,
            r#"{"reason": "r", "why": "x"}"#,
            r#"{"expires_in": "1h"}"#,
        ] {
            assert!(spec(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_spec_writes_back_what_it_read() {
        let read = spec(r#"{"reason": "r", "expires_in": 5400}"#).unwrap();
        assert_eq!(
            serde_json::to_value(&read).unwrap(),
            serde_json::json!({"reason": "r", "expires_in": "90m"})
        );
        assert_eq!(spec(&serde_json::to_string(&read).unwrap()).unwrap(), read);
    }
}
