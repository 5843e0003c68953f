//! A `recourse serve` process for tests, and the reference tools' export
//! call, shared by the gateway test files (`#[path]`-included; each uses
//! a part).
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use recourse_reference_tools::{RunningTools, ToolsConfig, spawn};
use serde_json::{Value, json};

/// `recourse serve` on a free loopback port, killed on drop.
pub(crate) struct Gateway {
    pub(crate) child: Child,
    pub(crate) url: String,
}

impl Gateway {
    /// A gateway whose state (and default journal) lives under `state`.
    pub(crate) fn start(state: &std::path::Path, args: &[&str]) -> Self {
        Self::start_with_env(state, args, &[])
    }

    /// The same, with `env` set on top (a token, a journal URL…).
    pub(crate) fn start_with_env(
        state: &std::path::Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_recourse"))
            .args(["serve", "--port", "0"])
            .args(args)
            .env("XDG_STATE_HOME", state)
            .env("RECOURSE_BACKOFF_MS", "0")
            .env_remove("RECOURSE_JOURNAL")
            .env_remove("RECOURSE_GATEWAY_TOKEN")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line.trim().rsplit(' ').next().unwrap().to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "{line}");
        Self { child, url }
    }

    pub(crate) async fn post(&self, body: &Value) -> (u16, Value) {
        self.post_with(body, &[]).await.0
    }

    /// POSTs `body` to `/v1/calls` with `headers`; the status, the body and
    /// the `Retry-After` header.
    pub(crate) async fn post_with(
        &self,
        body: &Value,
        headers: &[(&str, &str)],
    ) -> ((u16, Value), Option<String>) {
        let mut req = reqwest::Client::new()
            .post(format!("{}/v1/calls", self.url))
            .json(body);
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let resp = req.send().await.unwrap();
        let retry_after = resp
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_owned());
        let status = resp.status().as_u16();
        (
            (status, resp.json().await.unwrap_or(Value::Null)),
            retry_after,
        )
    }

    pub(crate) async fn get(&self, path: &str) -> (u16, Value) {
        let resp = reqwest::get(format!("{}{path}", self.url)).await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    /// Polls `path` until `done` holds of its body, for at most 15 s.
    pub(crate) async fn wait_for(&self, path: &str, done: impl Fn(&Value) -> bool) -> Value {
        let started = Instant::now();
        loop {
            let (status, body) = self.get(path).await;
            if status == 200 && done(&body) {
                return body;
            }
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "{path} never got there: {status} {body}"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    pub(crate) fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) async fn tools(faults: &[&str], slow: Duration) -> RunningTools {
    let mut config = ToolsConfig::default().with_slow_latency(slow);
    for f in faults {
        config = config.with_fault(f.parse().unwrap());
    }
    spawn(config).await.unwrap()
}

pub(crate) fn export(tools: &RunningTools) -> Value {
    json!({
        "url": format!("{}/api/exports", tools.base_url()),
        "payload": {"source_id": "sales-2024", "format": "pdf"},
    })
}

pub(crate) fn keyed(mut body: Value, key: &str) -> Value {
    body["idempotency_key"] = json!(key);
    body
}

/// Waits until the tools have received the export with idempotency key
/// `key` (the journal has it before it is sent).
pub(crate) async fn wait_until_the_tool_has(tools: &RunningTools, key: &str) {
    let started = Instant::now();
    loop {
        let seen: Value = reqwest::get(format!("{}/api/exports/{key}", tools.base_url()))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if seen["data"]["state"] != "not_committed" {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the tool never got the write"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
