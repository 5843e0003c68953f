//! The question an agent owes the user when a call stops on a choice that is
//! the user's to make.
//!
//! A tool that says "no version 4; the latest is 3" offers an alternative, but
//! taking it would silently change the evidence the user asked for. The
//! policy does not take it (the value is the user's, or the tool refused a
//! retry); the honest next step is to ask. This module turns a stopped call's
//! structured error into that question, or into none when nothing is left to
//! choose (a policy rejection, an outage, a denied permission).

use recourse::{CallReport, Outcome};
use recourse_protocol::{ErrorCategory, ToolError};
use serde_json::Value;

/// The question to put to the user after `report`, if any.
pub(crate) fn question_for(report: &CallReport, sent: Option<&Value>) -> Option<String> {
    let Outcome::Failed {
        error: Some(error), ..
    } = &report.outcome
    else {
        return None;
    };
    if !matches!(
        error.category,
        ErrorCategory::InputError | ErrorCategory::NotFound
    ) {
        return None;
    }
    let field = detail(error, "field");
    let given = match (&field, sent) {
        (Some(f), Some(payload)) => payload.get(f.as_str()).map(show),
        _ => None,
    };
    let what = match (&field, &given) {
        (Some(f), Some(v)) => format!("{f} {v}"),
        (Some(f), None) => f.clone(),
        _ => "that value".to_owned(),
    };
    if let Some(latest) = detail(error, "latest_version") {
        return Some(format!(
            "The tool has no {what}; the latest is {latest}. Should I use {latest} instead?"
        ));
    }
    if let Some(suggestion) = detail(error, "suggestion") {
        return Some(format!(
            "The tool could not use {what} and suggests {suggestion:?}. Should I use it?"
        ));
    }
    if let Some(candidates) = detail(error, "candidates") {
        return Some(format!(
            "{what} is ambiguous. Which did you mean: {candidates}?"
        ));
    }
    if let Some(allowed) = detail(error, "allowed_values") {
        return Some(format!(
            "The tool does not accept {what}; it accepts {allowed}. Which should I use?"
        ));
    }
    None
}

fn detail(error: &ToolError, key: &str) -> Option<String> {
    match error.details.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}
