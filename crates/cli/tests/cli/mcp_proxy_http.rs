//! `recourse mcp proxy --http`: the proxy over Streamable HTTP at `/mcp`,
//! spoken to by recourse's own rmcp client, and behind the gateway's rules —
//! the bearer token when `RECOURSE_GATEWAY_TOKEN` is set (401 without it),
//! loopback `Host` names only without one (403), no binding beyond loopback
//! without one.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use recourse_mcp::{McpTarget, McpTransport};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_recourse");
const WAIT: Duration = Duration::from_secs(60);
const TOKEN: &str = "proxy-token-7f3a";

/// `recourse mcp proxy --http --port 0` in front of `recourse tools serve
/// --mcp`, with the gateway token `token` when given.
struct Front {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Front {
    fn start(token: Option<&str>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("proxy.db").display().to_string();
        let mut command = Command::new(BIN);
        command
            .args([
                "mcp",
                "proxy",
                "--http",
                "--port",
                "0",
                "--journal",
                &journal,
            ])
            .args(["--", BIN, "tools", "serve", "--mcp", "--port", "0"])
            .env_remove("RECOURSE_GATEWAY_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(token) = token {
            command.env("RECOURSE_GATEWAY_TOKEN", token);
        }
        let mut child = command.spawn().unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let url = first
            .trim_end()
            .strip_prefix("recourse mcp proxy listening on ")
            .unwrap_or_else(|| panic!("the first stdout line: {first:?}"))
            .to_owned();
        assert!(
            url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
            "{url}"
        );
        Self {
            child,
            url,
            _dir: dir,
        }
    }

    /// An `initialize` POSTed with `headers`: its status and body.
    async fn initialize(&self, headers: &[(&str, &str)]) -> (u16, String) {
        let mut request = reqwest::Client::new()
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "http-test", "version": "0"},
                }})
                .to_string(),
            );
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.text().await.unwrap())
    }
}

impl Drop for Front {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn export() -> Value {
    json!({"source_id": "sales-2024", "format": "pdf"})
}

async fn call(server: &McpTransport, tool: &str) -> Value {
    server
        .forward(
            "tools/call",
            Some(json!({"name": tool, "arguments": export()})),
            WAIT,
        )
        .await
        .expect("the proxy answers")
        .unwrap_or_else(|e| panic!("{tool}: {e:?}"))
}

#[tokio::test]
async fn mcp_proxy_http_lists_and_calls_tools_and_serves_loopback_hosts_only() {
    let front = Front::start(None);
    let client = McpTransport::new(McpTarget::url(&front.url).unwrap());

    let listed = client.listed_tools(WAIT).await.unwrap();
    let names: Vec<&str> = listed.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"exports_create"), "{names:?}");

    // A write through the executor: one export, the record's summary added.
    let created = call(&client, "exports_create").await;
    assert_eq!(created["isError"], false, "{created}");
    assert_eq!(created["_meta"]["recourse/call"]["outcome"], "succeeded");
    let read = call(&client, "exports_lookup").await;
    assert_eq!(read["structuredContent"]["count"], 1, "{read}");

    // Without a token, a request naming another host is refused.
    let (status, body) = front.initialize(&[("host", "evil.example:8790")]).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("HOST_NOT_ALLOWED"), "{body}");
    let (status, body) = front.initialize(&[("host", "localhost")]).await;
    assert_eq!(status, 200, "{body}");
    // A session's answer comes as one JSON body, not a stream of events.
    let answer: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(
        answer["result"]["protocolVersion"], "2025-11-25",
        "{answer}"
    );
}

#[tokio::test]
async fn mcp_proxy_http_requires_the_gateway_token_when_one_is_set() {
    let front = Front::start(Some(TOKEN));

    let (status, body) = front.initialize(&[]).await;
    assert_eq!(status, 401, "{body}");
    let (status, body) = front
        .initialize(&[("authorization", "Bearer not-the-token")])
        .await;
    assert_eq!(status, 401, "{body}");

    let bearer = format!("Bearer {TOKEN}");
    let (status, body) = front.initialize(&[("authorization", &bearer)]).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("recourse-mcp-proxy"), "{body}");
    // Behind a token, any host name is served.
    let (status, body) = front
        .initialize(&[("authorization", &bearer), ("host", "proxy.example:443")])
        .await;
    assert_eq!(status, 200, "{body}");
}

#[test]
fn mcp_proxy_http_refuses_to_bind_beyond_loopback_without_a_token() {
    let out = Command::new(BIN)
        .args(["mcp", "proxy", "--http", "--bind", "0.0.0.0", "--port", "0"])
        .args(["--journal", "none", "--", "/nonexistent/mcp-server"])
        .env_remove("RECOURSE_GATEWAY_TOKEN")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("RECOURSE_GATEWAY_TOKEN"), "{said}");

    let out = Command::new(BIN)
        .args(["mcp", "proxy", "--port", "0", "--journal", "none"])
        .args(["--", "/nonexistent/mcp-server"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("--http"), "--port needs --http: {said}");
}
