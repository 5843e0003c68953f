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
    /// Taken when closed.
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// The id of the next request [`request`](Self::request) sends (the
    /// handshake's is 0).
    next_id: u64,
}

impl StdioProxy {
    /// Starts `recourse ARGS` (no `RECOURSE_JOURNAL` from the test's
    /// environment) and shakes hands with it as a 2025-11-25 client.
    pub(crate) fn start(args: &[String]) -> Self {
        Self::start_with_env(args, &[])
    }

    /// As [`start`](Self::start), with these variables set too.
    pub(crate) fn start_with_env(args: &[String], vars: &[(&str, &str)]) -> Self {
        Self::start_with(args, vars, Stdio::null())
    }

    /// As [`start`](Self::start), its stderr (and its upstreams') to `stderr`.
    pub(crate) fn start_with_stderr(args: &[String], stderr: std::fs::File) -> Self {
        Self::start_with(args, &[], Stdio::from(stderr))
    }

    fn start_with(args: &[String], vars: &[(&str, &str)], stderr: Stdio) -> Self {
        let mut command = Command::new(BIN);
        // A process group of its own, as a terminal gives the command it
        // runs: a signal to the group reaches the proxy, not this test.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command
            .args(args)
            .env_remove("RECOURSE_JOURNAL")
            .envs(vars.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
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
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Closes the proxy's stdin, as a client ending the session does.
    pub(crate) fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// Sends a request and reads lines until its answer: its `result`.
    pub(crate) fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let message = self.answer(&json!(id));
        assert!(message.get("error").is_none(), "{message}");
        message["result"].clone()
    }

    /// Reads lines until the answer to request `id`: the whole message.
    pub(crate) fn answer(&mut self, id: &Value) -> Value {
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "the proxy ended before answering {id}"
            );
            let message: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
            if message["id"] == *id {
                return message;
            }
        }
    }

    /// Sends the proxy signal `name` (`TERM`, `INT`), as a client stops it.
    pub(crate) fn signal(&self, name: &str) {
        self.send_signal(name, &self.child.id().to_string());
    }

    /// Sends signal `name` to the proxy's process group, as a terminal
    /// does on Ctrl-C (`INT`) to the command it runs.
    pub(crate) fn signal_group(&self, name: &str) {
        self.send_signal(name, &format!("-{}", self.child.id()));
    }

    fn send_signal(&self, name: &str, whom: &str) {
        let sent = Command::new("kill")
            .args(["-s", name, "--", whom])
            .status()
            .unwrap();
        assert!(sent.success(), "kill -s {name} -- {whom}");
    }

    /// Waits, at most `within`, for the proxy to exit: how it exited.
    pub(crate) fn exited(&mut self, within: std::time::Duration) -> std::process::ExitStatus {
        let started = std::time::Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(started.elapsed() < within, "the proxy did not exit");
            std::thread::sleep(std::time::Duration::from_millis(50));
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
