//! What came back from one probe, read the way recourse reads it.

use recourse::transport::RawResponse;
use recourse_protocol::{BodyFormat, ParsedResponse, parse_response, redact, truncate_chars};
use serde_json::{Value, json};

use super::battery::{Over, Probe, ProbeKind};

/// The largest answer kept; a larger one is reported as no usable answer.
pub(crate) const MAX_ANSWER_BYTES: usize = 1024 * 1024;
/// How much of a message the report quotes.
const MESSAGE_CHARS: usize = 160;
/// How much of a category or code the report quotes.
const NAME_CHARS: usize = 64;

/// One probe and what it got.
#[derive(Debug, Clone)]
pub(crate) struct Answer {
    pub(crate) probe: ProbeKind,
    /// The field the probe broke, if any.
    pub(crate) field: Option<String>,
    pub(crate) reply: Reply,
}

/// A response, or why there was none.
#[derive(Debug, Clone)]
pub(crate) enum Reply {
    Response(Box<Response>),
    /// No usable answer (a transport failure, or an answer over the cap),
    /// described without secrets.
    NoAnswer(String),
}

/// A response as recourse understands it, plus the body's structure.
#[derive(Debug, Clone)]
pub(crate) struct Response {
    pub(crate) parsed: ParsedResponse,
    /// The body as JSON, when it is JSON.
    pub(crate) json: Option<Value>,
    /// The body as text (lossy), for bodies that are not JSON.
    pub(crate) text: String,
    /// Whether the status is an HTTP server's (over MCP it is a stand-in).
    pub(crate) http: bool,
}

impl Answer {
    pub(crate) fn new(probe: &Probe, reply: Reply) -> Self {
        Self {
            probe: probe.kind,
            field: probe.field.clone(),
            reply,
        }
    }

    /// The response, when there was one.
    pub(crate) fn response(&self) -> Option<&Response> {
        match &self.reply {
            Reply::Response(r) => Some(r),
            Reply::NoAnswer(_) => None,
        }
    }

    /// The answer for the report: status (HTTP only), format, success, the
    /// category recourse read and whether the tool named it, code, retry
    /// permission and a redacted message excerpt.
    pub(crate) fn to_json(&self) -> Value {
        let mut out = json!({"id": self.probe.id()});
        if let Some(field) = &self.field {
            out["field"] = json!(field);
        }
        match &self.reply {
            Reply::NoAnswer(why) => out["no_answer"] = json!(why),
            Reply::Response(r) => {
                let p = &r.parsed;
                out["status"] = json!(r.http.then_some(p.status));
                out["format"] = json!(p.format.as_str());
                out["success"] = json!(p.success);
                out["category"] = json!(p.category.as_ref().map(|c| short(c.as_str())));
                out["names_category"] = json!(r.names_category());
                out["code"] = json!(p.code.as_deref().map(short));
                out["retry_permission"] = json!(p.permission.as_str());
                out["message"] = json!(r.message_excerpt());
            }
        }
        out
    }
}

impl Response {
    /// Reads a raw response with the protocol's parser.
    pub(crate) fn read(raw: &RawResponse, over: Over) -> Reply {
        if raw.body.len() > MAX_ANSWER_BYTES {
            return Reply::NoAnswer(format!(
                "{}: an answer over the {} KiB cap",
                raw.status,
                MAX_ANSWER_BYTES / 1024
            ));
        }
        // An answer the transport read already (an MCP result it holds
        // typed): the whole result is its `answer`, or its data.
        let (parsed, json) = match &raw.read {
            Some(read) => {
                let parsed = (**read).clone();
                let json = parsed
                    .answer
                    .clone()
                    .or_else(|| parsed.data.as_ref().map(|d| d.to_value()));
                (parsed, json)
            }
            None => (
                parse_response(
                    raw.status,
                    raw.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
                    &raw.body,
                ),
                serde_json::from_slice(&raw.body).ok(),
            ),
        };
        let text = if json.is_some() {
            String::new()
        } else {
            String::from_utf8_lossy(&raw.body).into_owned()
        };
        Reply::Response(Box::new(Self {
            parsed,
            json,
            text,
            http: over == Over::Http,
        }))
    }

    /// The message, redacted and cut for display.
    pub(crate) fn message_excerpt(&self) -> Option<String> {
        self.parsed
            .message
            .as_deref()
            .map(|m| truncate_chars(&redact(m), MESSAGE_CHARS))
    }

    /// Whether the tool itself named the failure's category in a structure
    /// recourse reads: the envelope, the dict convention, a problem document
    /// with a `category`, a JSON-RPC error (its code maps to one), or an MCP
    /// error result carrying an envelope in `structuredContent`. A plain MCP
    /// `isError` text names none: the parser's `INPUT_ERROR` is a default.
    pub(crate) fn names_category(&self) -> bool {
        let p = &self.parsed;
        !p.success
            && p.category.is_some()
            && match p.format {
                BodyFormat::Envelope
                | BodyFormat::DictConvention
                | BodyFormat::Problem
                | BodyFormat::JsonRpcError => true,
                BodyFormat::McpResult => self
                    .json
                    .as_ref()
                    .and_then(|b| b.get("structuredContent"))
                    .is_some_and(Value::is_object),
                BodyFormat::Empty | BodyFormat::Json | BodyFormat::Text => false,
            }
    }

    /// A success whose body carries an error all the same: a top-level
    /// `error` or `errors` member that is not empty, outside any envelope.
    pub(crate) fn error_inside_success(&self) -> bool {
        if !self.parsed.success || self.parsed.format == BodyFormat::Envelope {
            return false;
        }
        let Some(Value::Object(body)) = &self.json else {
            return false;
        };
        ["error", "errors"].iter().any(|key| match body.get(*key) {
            None | Some(Value::Null | Value::Bool(false)) => false,
            Some(Value::String(s)) => !s.is_empty(),
            Some(Value::Array(a)) => !a.is_empty(),
            Some(Value::Object(o)) => !o.is_empty(),
            Some(_) => true,
        })
    }

    /// `500 text`, `400 envelope INPUT_ERROR [CODE]`, `isError text`: the
    /// status (HTTP only), the format, and the category and code when the
    /// tool named them (not the parser's defaults).
    pub(crate) fn describe(&self) -> String {
        let p = &self.parsed;
        let format = match p.format {
            BodyFormat::McpResult if !p.success && !self.names_category() => "isError text",
            format => format.as_str(),
        };
        let mut out = if self.http {
            format!("{} {format}", p.status)
        } else {
            format.to_owned()
        };
        if self.names_category() {
            if let Some(c) = &p.category {
                out.push_str(&format!(" {}", short(c.as_str())));
            }
            if let Some(code) = &p.code {
                out.push_str(&format!(" [{}]", short(code)));
            }
        }
        out
    }
}

/// A tool-chosen name (category, code) as reports show it: redacted, and
/// cut to [`NAME_CHARS`].
fn short(name: &str) -> String {
    truncate_chars(&redact(name), NAME_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(status: u16, content_type: &str, body: &str) -> Response {
        let raw = RawResponse {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            body: body.as_bytes().to_vec(),
            read: None,
        };
        match Response::read(&raw, Over::Http) {
            Reply::Response(r) => *r,
            Reply::NoAnswer(why) => panic!("{why}"),
        }
    }

    #[test]
    fn who_named_the_category() {
        let envelope = read(
            400,
            "application/json",
            r#"{"success":false,"error":{"code":"X","message":"m","category":"INPUT_ERROR"}}"#,
        );
        assert!(envelope.names_category());
        assert!(!read(500, "text/plain", "Internal Server Error").names_category());
        let mcp_text = read(
            200,
            "application/json",
            r#"{"content":[{"type":"text","text":"bad"}],"isError":true}"#,
        );
        assert_eq!(mcp_text.parsed.format, BodyFormat::McpResult);
        assert!(mcp_text.parsed.category.is_some() && !mcp_text.names_category());
        let mcp_envelope = read(
            200,
            "application/json",
            r#"{"content":[],"isError":true,"structuredContent":{"success":false,"error":{"code":"X","message":"m","category":"NOT_FOUND"}}}"#,
        );
        assert!(mcp_envelope.names_category());
        let rpc = read(
            200,
            "application/json",
            r#"{"jsonrpc":"2.0","error":{"code":-32602,"message":"bad"}}"#,
        );
        assert!(rpc.names_category());
    }

    #[test]
    fn an_error_inside_a_success_is_seen() {
        assert!(read(200, "application/json", r#"{"error":"boom"}"#).error_inside_success());
        assert!(read(200, "application/json", r#"{"errors":[{"m":1}]}"#).error_inside_success());
        for fine in [
            r#"{"error":null,"v":1}"#,
            r#"{"v":1}"#,
            r#"{"success":true,"data":{"error":"x"}}"#,
        ] {
            assert!(
                !read(200, "application/json", fine).error_inside_success(),
                "{fine}"
            );
        }
        assert!(!read(400, "application/json", r#"{"error":"boom"}"#).error_inside_success());
    }

    #[test]
    fn oversized_answers_are_not_read() {
        let raw = RawResponse {
            status: 200,
            headers: Vec::new(),
            body: vec![b' '; MAX_ANSWER_BYTES + 1],
            read: None,
        };
        assert!(matches!(
            Response::read(&raw, Over::Http),
            Reply::NoAnswer(_)
        ));
    }
}
