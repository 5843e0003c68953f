//! The reference tools as an MCP server: in this process over Streamable
//! HTTP (what `recourse tools serve --mcp-http` serves), or over stdio as a
//! child process that is the test binary itself, started again with
//! [`SERVE_FLAG`] (what `recourse tools serve --mcp` serves).

use std::time::Duration;

use recourse_mcp::McpTarget;
use recourse_mcp_proxy::Upstream;
use recourse_mcp_server::{McpToolServer, streamable_http_service};
use recourse_reference_tools::{ToolsConfig, router};
use tokio_util::sync::CancellationToken;

/// The first argument that makes a test binary serve the reference tools
/// over stdio instead of running tests.
pub const SERVE_FLAG: &str = "--serve-reference-tools";

/// The reference tools with `faults` (`TOOL:KIND[:RATE]`), their slow calls
/// taking `slow`.
pub fn config(faults: &[&str], slow: Duration) -> ToolsConfig {
    let mut config = ToolsConfig::default().with_slow_latency(slow);
    for fault in faults {
        config = config.with_fault(fault.parse().expect("a fault"));
    }
    config
}

/// The reference tools over Streamable HTTP on a loopback port, in this
/// process (one store of exports for every session); stopped when dropped.
pub struct McpTools {
    /// The MCP endpoint.
    pub url: String,
    stop: CancellationToken,
}

impl McpTools {
    /// The tools with `faults`.
    pub async fn start(faults: &[&str]) -> Self {
        Self::with(config(faults, Duration::from_secs(2))).await
    }

    /// The tools as `config` says.
    pub async fn with(config: ToolsConfig) -> Self {
        let server = McpToolServer::from_router(router(&config))
            .await
            .expect("the tools list themselves");
        let app = axum::Router::new().nest_service("/mcp", streamable_http_service(server));
        let stop = CancellationToken::new();
        let url = format!("http://{}/mcp", super::on_loopback(app, &stop).await);
        Self { url, stop }
    }

    /// The proxy's upstream named `name` (its tools offered as `NAME__TOOL`
    /// beside others), or unnamed.
    pub fn upstream(&self, name: Option<&str>) -> Upstream {
        match name {
            Some(name) => Upstream::parse(&format!("{name}={}", self.url)).unwrap(),
            None => Upstream::unnamed(McpTarget::url(&self.url).unwrap()),
        }
    }
}

impl Drop for McpTools {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The words that start this test binary as the reference tools on stdio,
/// with `args` (`--fault TOOL:KIND`, `--slow-ms MS`).
pub fn stdio_command(args: &[&str]) -> Vec<String> {
    let exe = std::env::current_exe().expect("the test binary's path");
    [exe.display().to_string(), SERVE_FLAG.to_owned()]
        .into_iter()
        .chain(args.iter().map(|a| (*a).to_owned()))
        .collect()
}

/// Serves the reference tools over stdio, as the arguments after
/// [`SERVE_FLAG`] say (`--fault TOOL:KIND`, `--slow-ms MS`), each call
/// logged on stderr (`tools/call NAME`), until the client leaves.
pub fn serve_stdio(args: &[String]) {
    let mut faults = Vec::new();
    let mut slow = Duration::from_secs(2);
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let value = words.next().expect("a value after each flag");
        match word.as_str() {
            "--fault" => faults.push(value.as_str()),
            "--slow-ms" => slow = Duration::from_millis(value.parse().expect("milliseconds")),
            other => panic!("unknown flag {other}"),
        }
    }
    let config = config(&faults, slow);
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    runtime.block_on(async {
        let server = McpToolServer::from_router(router(&config))
            .await
            .expect("the tools list themselves")
            .with_call_log();
        recourse_mcp_server::serve_stdio(server)
            .await
            .expect("served over stdio");
    });
}
