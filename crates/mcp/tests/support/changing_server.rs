//! A scripted MCP server over stdio whose lists change, run by re-executing
//! the test binary with [`SERVE_FLAG`], a directory and the protocol
//! version it answers `initialize` with.
//!
//! It lists `grow` and `die`, and `grown` once `DIR/grown` exists. `grow`
//! creates that file, then announces that its tools and its prompts
//! changed: on the session up to 2025-11-25, from 2026-07-28 on each
//! `subscriptions/listen` stream that asked (whose filter it writes to
//! `DIR/listen`). `die` exits before answering.

use std::io::{BufRead, Write};
use std::path::Path;

use serde_json::{Value, json};

/// The first argument that makes the test binary this server.
pub const SERVE_FLAG: &str = "--changing-mcp-server";

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

fn tools(dir: &Path) -> Value {
    let mut names = vec!["grow", "die"];
    if dir.join("grown").exists() {
        names.push("grown");
    }
    let tools: Vec<Value> = names
        .into_iter()
        .map(|name| json!({"name": name, "inputSchema": {"type": "object"}}))
        .collect();
    json!({ "tools": tools })
}

/// Serves stdin/stdout until stdin closes.
pub fn serve(dir: &Path, version: &str) {
    let mut out = std::io::stdout();
    let mut send = |message: Value| {
        writeln!(out, "{message}")
            .and_then(|()| out.flush())
            .is_ok()
    };
    // The open `subscriptions/listen` streams: each request's id and filter.
    let mut streams: Vec<(Value, Value)> = Vec::new();
    for line in std::io::stdin().lock().lines() {
        let Ok(message) = line.map(|l| serde_json::from_str::<Value>(&l).unwrap_or_default())
        else {
            return;
        };
        let (Some(id), Some(method)) = (message.get("id").cloned(), message["method"].as_str())
        else {
            continue; // a notification, or a reply to us
        };
        let result = match method {
            "initialize" => json!({
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": true}, "prompts": {"listChanged": true}},
                "serverInfo": {"name": "changing", "version": "1"}}),
            "tools/list" => tools(dir),
            "subscriptions/listen" => {
                let filter = message["params"]["notifications"].clone();
                std::fs::write(dir.join("listen"), filter.to_string()).unwrap();
                let ack = json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                                 "params": {"notifications": filter, "_meta": {SUBSCRIPTION_ID: id}}});
                streams.push((id, filter));
                send(ack);
                continue; // answered when the stream ends
            }
            "tools/call" if message["params"]["name"] == "die" => std::process::exit(1),
            "tools/call" if message["params"]["name"] == "grow" => {
                std::fs::write(dir.join("grown"), "").unwrap();
                for (kind, key) in [
                    ("tools", "toolsListChanged"),
                    ("prompts", "promptsListChanged"),
                ] {
                    let method = format!("notifications/{kind}/list_changed");
                    if version < "2026-07-28" {
                        send(json!({"jsonrpc": "2.0", "method": method}));
                    }
                    for (stream, _) in streams.iter().filter(|(_, f)| f[key] == true) {
                        send(json!({"jsonrpc": "2.0", "method": method,
                                    "params": {"_meta": {SUBSCRIPTION_ID: stream}}}));
                    }
                }
                json!({"content": [{"type": "text", "text": "grown"}], "isError": false})
            }
            "tools/call" => json!({"content": [{"type": "text", "text": "ok"}], "isError": false}),
            _ => json!({}),
        };
        if !send(json!({"jsonrpc": "2.0", "id": id, "result": result})) {
            return;
        }
    }
}
