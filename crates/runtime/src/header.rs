//! Headers a caller sets on a call: checked once, and never one that frames
//! the request or belongs to one hop.

use recourse_core::config::{CallField, ConfigError};

/// Headers a caller may not set: they frame the request or belong to one hop.
const RESERVED_HEADERS: [&str; 9] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
];

/// Checks a caller's header: a valid name, a value without control
/// characters, and not one that frames the request or belongs to one hop.
///
/// # Errors
/// For the setting `headers`, naming the header.
pub fn check_header(name: &str, value: &str) -> Result<(), ConfigError> {
    let invalid = |why: String| ConfigError::new(CallField::Headers, why);
    if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
        return Err(invalid(format!("{name:?} is not a valid header name")));
    }
    if RESERVED_HEADERS
        .iter()
        .any(|r| r.eq_ignore_ascii_case(name))
    {
        return Err(invalid(format!(
            "{name} frames the request or belongs to one hop; recourse sets it itself"
        )));
    }
    if reqwest::header::HeaderValue::from_str(value).is_err() {
        return Err(invalid(format!(
            "header {name} has a control or non-ASCII character in its value"
        )));
    }
    Ok(())
}
