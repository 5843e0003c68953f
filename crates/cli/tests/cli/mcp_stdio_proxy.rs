//! `recourse mcp proxy` spoken to by hand over its stdio, one JSON-RPC
//! message a line: a test may send a request without waiting for its
//! answer, and kill the proxy mid-call.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_recourse");

/// The proxy's process, past its handshake; killed when dropped.
pub(crate) struct StdioProxy {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// The id of the next request [`request`](Self::request) sends (the
    /// handshake's is 0).
    next_id: u64,
}

impl StdioProxy {
    /// Starts `recourse ARGS` (no `RECOURSE_JOURNAL` from the test's
    /// environment) and shakes hands with it as a 2025-11-25 client.
    pub(crate) fn start(args: &[String]) -> Self {
        let mut child = Command::new(BIN)
            .args(args)
            .env_remove("RECOURSE_JOURNAL")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut proxy = Self {
            child,
            stdin,
            stdout,
            next_id: 0,
        };
        let answer = proxy.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "stdio-test", "version": "0"}}),
        );
        assert!(answer["serverInfo"].is_object(), "{answer}");
        proxy.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        proxy
    }

    /// Writes one message, not waiting for any answer.
    pub(crate) fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and reads lines until its answer: its `result`.
    pub(crate) fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "the proxy ended"
            );
            let message: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
            if message["id"] == id {
                assert!(message.get("error").is_none(), "{message}");
                return message["result"].clone();
            }
        }
    }

    /// Kills the proxy with SIGKILL and reaps it.
    pub(crate) fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for StdioProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
