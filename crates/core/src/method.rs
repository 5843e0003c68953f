//! The HTTP method a call is sent with, and what RFC 9110 says about resending it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize};

use crate::config::{CallField, ConfigError};

/// An HTTP method recourse sends calls with.
///
/// `GET`, `HEAD`, `OPTIONS` and `DELETE` carry the payload as query
/// parameters; `POST`, `PUT` and `PATCH` as a JSON body.
///
/// ```
/// use recourse_core::method::Method;
///
/// let m: Method = "put".parse().unwrap();
/// assert!(m.is_idempotent());
/// assert!(!Method::Post.is_idempotent());
/// assert!(Method::Delete.sends_query());
/// assert!("TRACE".parse::<Method>().is_err());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    /// `GET`.
    Get,
    /// `HEAD`.
    Head,
    /// `OPTIONS`.
    Options,
    /// `PUT`.
    Put,
    /// `DELETE`.
    Delete,
    /// `PATCH`.
    Patch,
    /// `POST`, the default.
    #[default]
    Post,
}

impl Method {
    /// Whether RFC 9110 §9.2.2 calls the method idempotent: `GET`, `HEAD`,
    /// `OPTIONS`, `PUT` and `DELETE`.
    pub fn is_idempotent(self) -> bool {
        !matches!(self, Self::Post | Self::Patch)
    }

    /// Whether RFC 9110 §9.2.1 calls the method safe — it only reads:
    /// `GET`, `HEAD` and `OPTIONS`. Every other method may write.
    pub fn is_safe(self) -> bool {
        matches!(self, Self::Get | Self::Head | Self::Options)
    }

    /// Whether the payload travels as query parameters rather than a body.
    pub fn sends_query(self) -> bool {
        matches!(self, Self::Get | Self::Head | Self::Options | Self::Delete)
    }

    /// The method's name, upper case.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Head => "HEAD",
            Self::Options => "OPTIONS",
            Self::Put => "PUT",
            Self::Delete => "DELETE",
            Self::Patch => "PATCH",
            Self::Post => "POST",
        }
    }
}

impl FromStr for Method {
    type Err = ConfigError;

    /// Any case; one of `GET`, `HEAD`, `OPTIONS`, `PUT`, `DELETE`, `PATCH`, `POST`.
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        Ok(match s.trim().to_ascii_uppercase().as_str() {
            "GET" => Self::Get,
            "HEAD" => Self::Head,
            "OPTIONS" => Self::Options,
            "PUT" => Self::Put,
            "DELETE" => Self::Delete,
            "PATCH" => Self::Patch,
            "POST" => Self::Post,
            _ => {
                return Err(ConfigError::new(
                    CallField::Method,
                    format!("{s:?} is not one of GET, HEAD, OPTIONS, PUT, DELETE, PATCH, POST"),
                ));
            }
        })
    }
}

impl<'de> Deserialize<'de> for Method {
    /// From its name, any case.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
