//! A scripted retail MCP server over stdio that keeps its state in files,
//! so it survives being restarted: run by re-executing the test binary with
//! [`SERVE_FLAG`], a directory and a fault.
//!
//! `DIR/orders.json` holds each order's status (`W1` starts `pending`);
//! every committed `cancel_pending_order` appends its idempotency key to
//! `DIR/writes`. The fault strikes the first cancel only (`DIR/faulted`
//! remembers it across restarts):
//!
//! - `die_after_commit`: commit, then exit without answering;
//! - `internal_error`: commit, then answer JSON-RPC `-32603`;
//! - `die_before`: exit without committing;
//! - `none`: no fault.
//!
//! `get_order_details` reads an order (`structuredContent`);
//! `get_order_text` answers the same as JSON text only, as many servers do.

use std::io::Write;
use std::path::Path;

use recourse_protocol::mcp::IDEMPOTENCY_META_KEY;
use serde_json::{Value, json};

/// The first argument that makes the test binary this server.
pub const SERVE_FLAG: &str = "--stateful-mcp-server";

const TOOLS: [(&str, bool); 3] = [
    ("cancel_pending_order", false),
    ("get_order_details", true),
    ("get_order_text", true),
];

fn orders(dir: &Path) -> Value {
    std::fs::read_to_string(dir.join("orders.json"))
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_else(|| json!({"W1": "pending"}))
}

fn order(dir: &Path, id: &str) -> Value {
    let status = orders(dir).get(id).cloned().unwrap_or(Value::Null);
    json!({"order_id": id, "status": status})
}

/// Cancels `id` and records the write with its key.
fn commit(dir: &Path, id: &str, key: &str) {
    let mut all = orders(dir);
    all[id] = json!("cancelled");
    std::fs::write(dir.join("orders.json"), all.to_string()).unwrap();
    let mut writes = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("writes"))
        .unwrap();
    writeln!(writes, "{key}").unwrap();
}

/// Whether the fault strikes now: the first cancel, once across restarts.
fn strikes(dir: &Path, fault: &str) -> bool {
    let marker = dir.join("faulted");
    if fault == "none" || marker.exists() {
        return false;
    }
    std::fs::write(marker, "").unwrap();
    true
}

fn ok(data: Value) -> (&'static str, Value) {
    let text = data.to_string();
    (
        "result",
        json!({"content": [{"type": "text", "text": text}], "structuredContent": data}),
    )
}

fn call(dir: &Path, fault: &str, params: &Value) -> (&'static str, Value) {
    let id = params["arguments"]["order_id"].as_str().unwrap_or("none");
    match params["name"].as_str().unwrap_or_default() {
        "cancel_pending_order" => {
            let key = params["_meta"][IDEMPOTENCY_META_KEY]
                .as_str()
                .unwrap_or("no-key");
            let strike = strikes(dir, fault);
            match fault {
                "die_before" if strike => std::process::exit(1),
                "die_after_commit" if strike => {
                    commit(dir, id, key);
                    std::process::exit(1)
                }
                "internal_error" if strike => {
                    commit(dir, id, key);
                    (
                        "error",
                        json!({"code": -32603, "message": "Internal error"}),
                    )
                }
                _ => {
                    commit(dir, id, key);
                    ok(order(dir, id))
                }
            }
        }
        "get_order_details" => ok(order(dir, id)),
        "get_order_text" => {
            let text = order(dir, id).to_string();
            (
                "result",
                json!({"content": [{"type": "text", "text": text}]}),
            )
        }
        _ => ("error", json!({"code": -32602, "message": "unknown tool"})),
    }
}

fn answer(dir: &Path, fault: &str, method: &str, params: &Value) -> (&'static str, Value) {
    match method {
        "initialize" => (
            "result",
            json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                   "serverInfo": {"name": "stateful-stdio", "version": "1"}}),
        ),
        "tools/list" => {
            let tools: Vec<Value> = TOOLS
                .iter()
                .map(|(name, read)| {
                    json!({"name": name, "inputSchema": {"type": "object"},
                           "annotations": {"idempotentHint": read, "readOnlyHint": read}})
                })
                .collect();
            ("result", json!({"tools": tools}))
        }
        "tools/call" => call(dir, fault, params),
        "ping" => ("result", json!({})),
        _ => (
            "error",
            json!({"code": -32601, "message": "method not found"}),
        ),
    }
}

/// Serves stdin/stdout until stdin closes (or the fault ends the process).
pub fn serve(dir: &Path, fault: &str) {
    super::stdio_server::serve_lines(|method, params| answer(dir, fault, method, params));
}

/// The keys of the writes the server committed, in order.
pub fn writes(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("writes"))
        .map(|text| text.lines().map(str::to_owned).collect())
        .unwrap_or_default()
}
