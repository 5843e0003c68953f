//! Absence as an answer: a read that reports "not there" as an error.
//!
//! Many reads answer a missing thing with an error — `cat` of a file that
//! does not exist, `GET /orders/{id}` of one never made — rather than with
//! a result an expectation could read. Left alone, such a read "cannot
//! tell", and a write lost before it reached the server stays `unknown`.
//! [`AbsentWhen`] names the errors that mean *the effect is absent*: the
//! read then counts as answered, its expectations not held.
//!
//! What is never absence, whatever is declared: a read that got no answer
//! (its transport failed, it timed out), and — for `"error"` — an error
//! that says the read itself is in trouble: the server failing or busy
//! (a transient category), the caller not allowed, a JSON-RPC error (the
//! protocol's, not the tool's answer), or a request for input. A read
//! failing for its own reasons stays "cannot tell", so it never leads to a
//! resend.

use recourse_protocol::{BodyFormat, ErrorCategory, ParsedResponse};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Which errors a read answers when the write's effect is absent: `"error"`
/// (any error the tool itself answers about the thing read), or a list of
/// codes (an envelope's `error.code`, an MCP `toolFailure`'s `code`).
///
/// ```
/// use recourse::verify::AbsentWhen;
///
/// let codes: AbsentWhen = serde_json::from_str(r#"["NOT_FOUND", "FILE_NOT_FOUND"]"#).unwrap();
/// assert_eq!(codes, AbsentWhen::Codes(vec!["NOT_FOUND".into(), "FILE_NOT_FOUND".into()]));
/// let any: AbsentWhen = serde_json::from_str(r#""error""#).unwrap();
/// assert_eq!(serde_json::to_string(&any).unwrap(), r#""error""#);
/// assert!(serde_json::from_str::<AbsentWhen>(r#""errors""#).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AbsentWhen {
    /// Any error the tool answers about what was read (`"error"`), but
    /// one that says the read itself failed.
    AnyError,
    /// An error with one of these codes.
    Codes(Vec<String>),
}

/// The most codes one verification may name.
const MAX_CODES: usize = 32;

impl AbsentWhen {
    /// Whether `answer` (a read that did not succeed) says the effect is absent.
    pub(crate) fn says_absent(&self, answer: &ParsedResponse) -> bool {
        if answer.success || answer.needs.is_some() {
            return false;
        }
        match self {
            Self::Codes(codes) => answer
                .code
                .as_deref()
                .is_some_and(|code| codes.iter().any(|c| c == code)),
            Self::AnyError => {
                let the_tools = matches!(
                    answer.format,
                    BodyFormat::Envelope
                        | BodyFormat::DictConvention
                        | BodyFormat::McpResult
                        | BodyFormat::Problem
                );
                let about_the_thing = matches!(
                    answer.category,
                    Some(ErrorCategory::InputError | ErrorCategory::NotFound)
                );
                the_tools && about_the_thing
            }
        }
    }

    /// Checks the codes: at least one, none blank, at most 32.
    pub(crate) fn check(&self) -> Result<(), String> {
        match self {
            Self::AnyError => Ok(()),
            Self::Codes(codes) if codes.is_empty() => {
                Err("absent_when lists at least one code, or is \"error\"".to_owned())
            }
            Self::Codes(codes) if codes.len() > MAX_CODES => {
                Err(format!("absent_when lists at most {MAX_CODES} codes"))
            }
            Self::Codes(codes) => match codes.iter().find(|c| c.trim().is_empty()) {
                Some(_) => Err("absent_when has a blank code".to_owned()),
                None => Ok(()),
            },
        }
    }
}

impl Serialize for AbsentWhen {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::AnyError => serializer.serialize_str("error"),
            Self::Codes(codes) => codes.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for AbsentWhen {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Word(String),
            Codes(Vec<String>),
        }
        let wrong = || {
            serde::de::Error::custom(
                "absent_when is \"error\" or a list of error codes, such as [\"NOT_FOUND\"]",
            )
        };
        match Wire::deserialize(deserializer).map_err(|_| wrong())? {
            Wire::Word(word) if word == "error" => Ok(Self::AnyError),
            Wire::Word(_) => Err(wrong()),
            Wire::Codes(codes) => Ok(Self::Codes(codes)),
        }
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for AbsentWhen {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "AbsentWhen".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Which errors of the read mean the write's effect is absent: \"error\", or a list of codes.",
            "oneOf": [
                {"const": "error"},
                {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1, "maxItems": MAX_CODES}
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use recourse_protocol::parse_response;
    use serde_json::json;

    use super::*;

    fn mcp(result: serde_json::Value) -> ParsedResponse {
        parse_response(
            200,
            [("content-type", "application/json")],
            result.to_string().as_bytes(),
        )
    }

    fn envelope(status: u16, category: &str, code: &str) -> ParsedResponse {
        let body = json!({"success": false, "error": {"code": code, "message": "x", "category": category}});
        parse_response(
            status,
            [("content-type", "application/json")],
            body.to_string().as_bytes(),
        )
    }

    #[test]
    fn listed_codes_are_absence_and_nothing_else_is() {
        let codes = AbsentWhen::Codes(vec!["FILE_NOT_FOUND".into()]);
        assert!(codes.says_absent(&envelope(404, "NOT_FOUND", "FILE_NOT_FOUND")));
        assert!(!codes.says_absent(&envelope(404, "NOT_FOUND", "ORDER_NOT_FOUND")));
        let failure = json!({"content": [{"type": "text", "text": "no such file"}], "isError": true,
            "_meta": {"io.modelcontextprotocol/toolFailure": {"class": "capability", "code": "FILE_NOT_FOUND"}}});
        assert!(codes.says_absent(&mcp(failure)));
        let ok = json!({"content": [{"type": "text", "text": "hi"}], "isError": false});
        assert!(!codes.says_absent(&mcp(ok)));
    }

    #[test]
    fn any_error_is_the_tools_answer_about_the_thing_read() {
        let any = AbsentWhen::AnyError;
        let text = |t: &str| json!({"content": [{"type": "text", "text": t}], "isError": true});
        assert!(any.says_absent(&mcp(text("cat: notes.txt: No such file or directory"))));
        assert!(any.says_absent(&envelope(404, "NOT_FOUND", "ORDER_NOT_FOUND")));
        assert!(any.says_absent(&envelope(400, "INPUT_ERROR", "BAD_ID")));
        // The read's own trouble is never absence.
        assert!(!any.says_absent(&mcp(text("503 Service Unavailable"))));
        assert!(!any.says_absent(&envelope(503, "SERVICE_ERROR", "DOWN")));
        assert!(!any.says_absent(&envelope(429, "RATE_LIMIT", "SLOW_DOWN")));
        assert!(!any.says_absent(&envelope(403, "PERMISSION_DENIED", "NO")));
        let rpc =
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "internal"}});
        assert!(!any.says_absent(&mcp(rpc)));
        let unknown_tool =
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "no"}});
        assert!(!any.says_absent(&mcp(unknown_tool)));
        let bare = parse_response(404, [("content-type", "text/html")], b"<h1>Not Found</h1>");
        assert!(
            !any.says_absent(&bare),
            "a page that is not the tool's answer"
        );
    }

    #[test]
    fn the_wire_form_is_error_or_codes() {
        for bad in [json!("errors"), json!(3), json!({"codes": []}), json!([1])] {
            let err = serde_json::from_value::<AbsentWhen>(bad.clone()).unwrap_err();
            assert!(err.to_string().contains("absent_when is"), "{bad}: {err}");
        }
        assert!(AbsentWhen::Codes(Vec::new()).check().is_err());
        assert!(AbsentWhen::Codes(vec![" ".into()]).check().is_err());
        assert!(AbsentWhen::Codes(vec!["NOT_FOUND".into()]).check().is_ok());
    }
}
