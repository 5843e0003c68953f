//! Shared by the proxy's behaviour tests: the reference tools over MCP (in
//! this process over Streamable HTTP, or as a stdio process that is this
//! test binary), a proxy built as `recourse mcp proxy` builds one, its two
//! fronts in this process — the router on a loopback port, stdio over an
//! in-memory duplex — and a gateway on the same journal.

#![allow(dead_code, unreachable_pub)]

pub mod approvals;
pub mod duplex;
pub mod gateway;
pub mod tools;

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use recourse::journal::open_journal;
use recourse::{ExecutorConfig, Journal};
use recourse_door::Access;
use recourse_mcp::{McpTarget, McpTransport, RpcError};
use recourse_mcp_proxy::{McpProxy, McpProxyBuilder, router};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// How long a test waits for an answer.
pub const WAIT: Duration = Duration::from_secs(60);
/// Where the proxy puts the record's summary of a call.
pub const CALL_META: &str = "recourse/call";
/// Where the proxy puts a failure's structured form.
pub const FAILURE_META: &str = "io.modelcontextprotocol/toolFailure";

/// The reference tools' export call's arguments.
pub fn export() -> Value {
    json!({"source_id": "sales-2024", "format": "pdf"})
}

/// The journal at `dir/proxy.db`, opened as `recourse mcp proxy --journal` opens it.
pub async fn journal_in(dir: &Path) -> Arc<dyn Journal> {
    journal_at(&dir.join("proxy.db")).await
}

/// The SQLite journal at `path`.
pub async fn journal_at(path: &Path) -> Arc<dyn Journal> {
    open_journal(&path.display().to_string())
        .await
        .expect("the journal opens")
}

/// A proxy builder as `recourse mcp proxy` starts one with no flags.
pub fn builder() -> McpProxyBuilder {
    builder_with(ExecutorConfig::default())
}

/// A proxy builder whose calls run with `config`.
pub fn builder_with(config: ExecutorConfig) -> McpProxyBuilder {
    McpProxy::builder(config).with_warnings(|line| eprintln!("recourse mcp proxy: {line}"))
}

/// The warnings a proxy gives, kept.
#[derive(Clone, Default)]
pub struct Warnings(Arc<Mutex<Vec<String>>>);

impl Warnings {
    /// Has `builder` give its warnings here.
    pub fn on(&self, builder: McpProxyBuilder) -> McpProxyBuilder {
        let kept = Arc::clone(&self.0);
        builder.with_warnings(move |line| {
            kept.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(line);
        })
    }

    /// Every warning so far, one a line.
    pub fn text(&self) -> String {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .join("\n")
    }

    /// Waits (bounded) until a warning holds `needle`.
    pub async fn wait_for(&self, needle: &str) {
        for _ in 0..600 {
            if self.text().contains(needle) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no warning held {needle:?}: {}", self.text());
    }
}

/// A proxy served over Streamable HTTP ([`router`]) on a loopback port,
/// in this process; its sessions end when dropped.
pub struct HttpFront {
    /// The endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    stop: CancellationToken,
}

impl HttpFront {
    /// Serves `proxy` behind `access`.
    pub async fn start(proxy: &McpProxy, access: &Access) -> Self {
        let stop = CancellationToken::new();
        let addr = on_loopback(router(proxy, access, stop.clone()), &stop).await;
        let url = format!("http://{addr}{}", recourse_mcp_proxy::MCP_PATH);
        Self { url, stop }
    }

    /// Serves `proxy` with no token: loopback hosts only.
    pub async fn open(proxy: &McpProxy) -> Self {
        Self::start(proxy, &Access::default()).await
    }

    /// recourse's own MCP client, speaking to it.
    pub fn client(&self) -> McpTransport {
        McpTransport::new(McpTarget::url(&self.url).unwrap())
    }
}

impl Drop for HttpFront {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Serves `app` on a free loopback port until `stop` is cancelled: its address.
pub async fn on_loopback(app: axum::Router, stop: &CancellationToken) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stopped = stop.clone().cancelled_owned();
    tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(stopped)
            .await
    });
    addr
}

/// The proxy `builder` connects, served over HTTP, and a client of it.
pub async fn served(builder: McpProxyBuilder) -> (McpTransport, HttpFront) {
    let proxy = builder.connect().await.expect("the proxy starts");
    let front = HttpFront::open(&proxy).await;
    (front.client(), front)
}

/// One `tools/call`, with the caller's idempotency key when given.
pub async fn call(
    server: &McpTransport,
    tool: &str,
    arguments: Value,
    key: Option<Value>,
) -> Result<Value, RpcError> {
    let mut params = json!({"name": tool, "arguments": arguments});
    if let Some(key) = key {
        params["_meta"] = json!({ "recourse/idempotency-key": key });
    }
    server
        .forward("tools/call", Some(params), WAIT)
        .await
        .expect("the proxy answers")
}

/// A `tools/call` that the proxy answers with a result.
pub async fn ok(server: &McpTransport, tool: &str, arguments: Value) -> Value {
    call(server, tool, arguments, None)
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e:?}"))
}

/// How many exports the upstream committed (its read, through `server`).
pub async fn exports(server: &McpTransport, tool: &str) -> u64 {
    let read = ok(server, tool, export()).await;
    assert_eq!(read["isError"], false, "{read}");
    read["structuredContent"]["count"].as_u64().unwrap()
}

/// The names of listed tools.
pub fn names(listed: &[Value]) -> Vec<&str> {
    listed.iter().map(|t| t["name"].as_str().unwrap()).collect()
}

/// Waits (bounded) until `path` holds `needle`.
pub async fn wait_for(path: &Path, needle: &str) {
    for _ in 0..600 {
        if std::fs::read_to_string(path).is_ok_and(|t| t.contains(needle)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{} never held {needle:?}", path.display());
}

/// `python3 servers/scripted.py --script SCRIPT --log LOG` (the Python MCP
/// clients' scripted server; the standard library is all it needs), as
/// words of a command line.
pub fn scripted(script: &str, log: &Path) -> Vec<String> {
    let found = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs the scripted MCP server");
    let python = String::from_utf8(found.stdout).unwrap().trim().to_owned();
    let server = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/mcp-clients/python/servers/scripted.py"
    );
    [python.as_str(), server, "--script", script, "--log"]
        .iter()
        .map(|w| (*w).to_owned())
        .chain([log.display().to_string()])
        .collect()
}
