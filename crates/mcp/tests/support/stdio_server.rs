//! A scripted MCP server over stdio (the 2025-06-18 protocol, newline-
//! delimited JSON-RPC), run by re-executing the test binary with
//! [`SERVE_FLAG`] and a directory.
//!
//! Every `tools/call` of a tool T first commits (appends a line to
//! `DIR/T.calls`), then answers as T's script says for that call. The tests
//! read `DIR/T.calls` to see how often each tool really ran.

use std::io::{BufRead, Write};
use std::path::Path;
use std::time::{Duration, SystemTime};

use recourse_protocol::ErrorCategory;
use recourse_protocol::mcp::{TOOL_FAILURE_META_KEY, tool_failure_meta};
use serde_json::{Value, json};

/// The first argument that makes the test binary this server.
pub const SERVE_FLAG: &str = "--scripted-mcp-server";

/// The tools, with their `idempotentHint`.
pub const TOOLS: [(&str, bool); 12] = [
    ("modify_user_address", false),
    ("cancel_pending_order", false),
    ("get_order", true),
    ("header_mismatch", true),
    ("missing_capability", true),
    ("unsupported_version", true),
    ("rate_limited", false),
    ("needs_confirmation", false),
    ("flaky_upstream", true),
    ("flaky_write", false),
    ("bad_timezone", true),
    ("quota", true),
];

fn error(code: i64, message: &str, data: Value) -> (&'static str, Value) {
    let mut error = json!({"code": code, "message": message});
    if !data.is_null() {
        error["data"] = data;
    }
    ("error", error)
}

fn is_error(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

/// What `tool` answers to its `n`th call.
fn script(tool: &str, n: usize) -> (&'static str, Value) {
    let ok =
        json!({"content": [{"type": "text", "text": "done"}], "structuredContent": {"ok": true}});
    match (tool, n) {
        // A retail server that commits the write, then answers -32603.
        ("modify_user_address" | "cancel_pending_order", 1) | ("get_order", 1) => {
            error(-32603, "Internal error", Value::Null)
        }
        ("modify_user_address", _) => error(-32603, "Internal error", Value::Null),
        ("cancel_pending_order", _) => ("result", is_error("order #W123 is not pending")),
        ("header_mismatch", _) => error(-32020, "Mcp-Method header does not match", Value::Null),
        ("missing_capability", _) => error(
            -32021,
            "Missing required client capability",
            json!({"requiredCapabilities": {"elicitation": {}}}),
        ),
        ("unsupported_version", _) => error(
            -32022,
            "Unsupported protocol version",
            json!({"requested": "2026-07-28", "supported": ["2025-06-18"]}),
        ),
        ("rate_limited", 1) => error(-32023, "Rate limited", json!({"retryAfterMs": 1500})),
        ("needs_confirmation", _) => (
            "result",
            json!({"resultType": "input_required",
                   "inputRequests": {"roots": {"method": "roots/list"}},
                   "requestState": "confirm-1"}),
        ),
        ("flaky_upstream" | "flaky_write", 1) => ("result", is_error("upstream 503, try later")),
        ("bad_timezone", _) => ("result", is_error("Invalid timezone: America/NewYork")),
        ("quota", 1) => {
            let at = SystemTime::now() + Duration::from_secs(5);
            let meta = tool_failure_meta(&ErrorCategory::RateLimit, "QUOTA", Some(true), Some(at));
            let mut result = is_error("something went wrong");
            result["_meta"] = json!({ TOOL_FAILURE_META_KEY: meta });
            ("result", result)
        }
        _ => ("result", ok),
    }
}

/// Appends a line to `dir/tool.calls`; how many calls that makes.
fn commit(dir: &Path, tool: &str) -> usize {
    let path = dir.join(format!("{tool}.calls"));
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .unwrap();
    writeln!(file, "call").unwrap();
    std::fs::read_to_string(&path).unwrap().lines().count()
}

fn answer(dir: &Path, method: &str, params: &Value) -> (&'static str, Value) {
    match method {
        "initialize" => (
            "result",
            json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                   "serverInfo": {"name": "scripted-stdio", "version": "1"}}),
        ),
        "tools/list" => {
            let tools: Vec<Value> = TOOLS
                .iter()
                .map(|(name, idempotent)| {
                    json!({"name": name, "inputSchema": {"type": "object"},
                           "annotations": {"idempotentHint": idempotent, "readOnlyHint": false}})
                })
                .collect();
            ("result", json!({"tools": tools}))
        }
        "tools/call" => {
            let tool = params["name"].as_str().unwrap_or_default();
            if !TOOLS.iter().any(|(name, _)| *name == tool) {
                return error(-32602, "unknown tool", Value::Null);
            }
            script(tool, commit(dir, tool))
        }
        "ping" => ("result", json!({})),
        _ => error(-32601, "method not found", Value::Null),
    }
}

/// Serves stdin/stdout until stdin closes.
pub fn serve(dir: &Path) {
    serve_lines(|method, params| answer(dir, method, params));
}

/// Answers JSON-RPC requests, one per line on stdin, with `answer`'s
/// `("result" | "error", value)`, until stdin or stdout closes;
/// notifications and replies to us are read and left unanswered.
pub fn serve_lines(mut answer: impl FnMut(&str, &Value) -> (&'static str, Value)) {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return };
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let (Some(id), Some(method)) = (message.get("id"), message["method"].as_str()) else {
            continue; // a notification, or a reply to us
        };
        let (kind, value) = answer(method, &message["params"]);
        let reply = json!({"jsonrpc": "2.0", "id": id, kind: value});
        if writeln!(stdout, "{reply}")
            .and_then(|()| stdout.flush())
            .is_err()
        {
            return;
        }
    }
}
