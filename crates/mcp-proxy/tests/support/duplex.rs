//! A client speaking to a proxy over its stdio front — one JSON-RPC
//! message a line — through an in-memory duplex instead of a process's
//! pipes ([`McpProxy::serve_io`]).

use recourse_mcp_proxy::{McpProxy, ProxyError, Served};
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};
use tokio::task::JoinHandle;

/// The client's end, past its handshake.
pub struct StdioClient {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    writer: WriteHalf<DuplexStream>,
    /// The proxy serving the other end.
    serving: JoinHandle<Result<Served, ProxyError>>,
    /// The id of the next request (the handshake's is 0).
    next_id: u64,
}

impl StdioClient {
    /// Serves `proxy` over a duplex and shakes hands with it as a
    /// 2025-11-25 client.
    pub async fn start(proxy: McpProxy) -> Self {
        let (ours, theirs) = tokio::io::duplex(1 << 20);
        let (reader, writer) = tokio::io::split(theirs);
        let grace = proxy.calls_grace();
        let serving = tokio::spawn(proxy.serve_io(reader, writer, grace));
        let (reader, writer) = tokio::io::split(ours);
        let mut client = Self {
            lines: BufReader::new(reader).lines(),
            writer,
            serving,
            next_id: 0,
        };
        let answer = client
            .request(
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "stdio-test", "version": "0"}}),
            )
            .await;
        assert!(answer["serverInfo"].is_object(), "{answer}");
        client
            .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        client
    }

    /// Writes one message, not waiting for any answer.
    pub async fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.writer.write_all(line.as_bytes()).await.unwrap();
        self.writer.flush().await.unwrap();
    }

    /// Sends a request and reads lines until its answer: its `result`.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let (_, line) = self.request_line(method, params).await;
        let message: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        assert!(message.get("error").is_none(), "{message}");
        message["result"].clone()
    }

    /// Sends a request and reads lines until its answer: the request's id,
    /// and the answer's line as the proxy wrote it.
    pub async fn request_line(&mut self, method: &str, params: Value) -> (u64, String) {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let line = self
                .lines
                .next_line()
                .await
                .unwrap()
                .expect("the proxy answers before it ends");
            let message: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
            if message["id"] == id {
                return (id, line);
            }
        }
    }

    /// `tools/call` of `tool` with `arguments`, under `key` when given.
    pub async fn call(&mut self, tool: &str, arguments: &Value, key: Option<&str>) -> Value {
        let mut params = json!({"name": tool, "arguments": arguments});
        if let Some(key) = key {
            params["_meta"] = json!({"recourse/idempotency-key": key});
        }
        self.request("tools/call", params).await
    }

    /// Ends the session (the client's end closes) and how the proxy's
    /// serving ended.
    pub async fn close(self) -> Served {
        drop(self.writer);
        drop(self.lines);
        self.serving
            .await
            .expect("the proxy's task ends")
            .expect("the session was served")
    }
}
