//! Helpers shared by the contract tests: real HTTP against spawned tools.

#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use recourse_reference_tools::{Fault, RunningTools, ToolsConfig, spawn};
use recourse_tool::protocol::{ParsedResponse, parse_response};
use serde_json::Value;

pub struct ToolReply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
    pub parsed: ParsedResponse,
}

impl ToolReply {
    /// Asserts a failure envelope with this status, category, code and permission.
    pub fn assert_failure(&self, status: u16, category: &str, code: &str, retryable: bool) {
        assert_eq!(self.status, status, "status of {}", self.body);
        assert_eq!(self.body["success"], false, "{}", self.body);
        assert_eq!(self.body["error"]["category"], category, "{}", self.body);
        assert_eq!(self.body["error"]["code"], code, "{}", self.body);
        assert_eq!(self.body["error"]["retryable"], retryable, "{}", self.body);
        assert!(self.body.get("data").is_none());
    }

    pub fn detail(&self, key: &str) -> &Value {
        &self.body["error"]["details"][key]
    }

    pub fn data(&self) -> &Value {
        assert_eq!(self.status, 200, "{}", self.body);
        assert_eq!(self.body["success"], true, "{}", self.body);
        &self.body["data"]
    }
}

pub async fn start(faults: &[&str]) -> RunningTools {
    let mut config = ToolsConfig::default()
        .with_seed(42)
        .with_slow_latency(Duration::from_millis(150))
        .with_retry_after(Duration::from_secs(2));
    for f in faults {
        config = config.with_fault(f.parse::<Fault>().unwrap());
    }
    spawn(config).await.unwrap()
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

pub async fn post(tools: &RunningTools, path: &str, body: Value) -> ToolReply {
    send(
        client()
            .post(format!("{}{path}", tools.base_url()))
            .json(&body),
    )
    .await
}

pub async fn post_keyed(tools: &RunningTools, path: &str, key: &str, body: Value) -> ToolReply {
    let req = client()
        .post(format!("{}{path}", tools.base_url()))
        .header("Idempotency-Key", key)
        .json(&body);
    send(req).await
}

pub async fn get(tools: &RunningTools, path: &str) -> ToolReply {
    send(client().get(format!("{}{path}", tools.base_url()))).await
}

/// Sends and reads an envelope; every answer must be JSON with the JSON content type.
pub async fn send(req: reqwest::RequestBuilder) -> ToolReply {
    let resp = req.send().await.expect("the tool answered");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = resp.bytes().await.expect("a complete body");
    assert_eq!(
        headers["content-type"], "application/json",
        "status {status}"
    );
    let parsed = parse_response(
        status,
        headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.to_str().unwrap_or(""))),
        &bytes,
    );
    let body = serde_json::from_slice(&bytes).expect("a JSON body");
    ToolReply {
        status,
        headers,
        body,
        parsed,
    }
}
