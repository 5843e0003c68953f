//! The reference tools for the gateway's tests (in-process and against the
//! binary), and the export call they write with.

use std::time::{Duration, Instant};

use recourse_reference_tools::{RunningTools, ToolsConfig, spawn};
use serde_json::{Value, json};

/// The reference tools with `faults`, their slow calls taking `slow`.
pub async fn tools(faults: &[&str], slow: Duration) -> RunningTools {
    let mut config = ToolsConfig::default().with_slow_latency(slow);
    for f in faults {
        config = config.with_fault(f.parse().expect("a fault"));
    }
    spawn(config).await.expect("the reference tools start")
}

/// The reference tools with `faults`, their manifest naming no lookup for
/// exports: an export whose answer is lost stays `unknown` through a gateway.
pub async fn tools_without_lookups(faults: &[&str]) -> RunningTools {
    let mut config = ToolsConfig::default().without_declared_lookups();
    for f in faults {
        config = config.with_fault(f.parse().expect("a fault"));
    }
    spawn(config).await.expect("the reference tools start")
}

/// The reference tools' export call: a write nobody declared idempotent.
pub fn export(tools: &RunningTools) -> Value {
    json!({
        "url": format!("{}/api/exports", tools.base_url()),
        "payload": {"source_id": "sales-2024", "format": "pdf"},
    })
}

/// `body` with an idempotency key.
pub fn keyed(mut body: Value, key: &str) -> Value {
    body["idempotency_key"] = json!(key);
    body
}

/// Waits (at most 10 s) until the tools have received the export with
/// idempotency key `key` (the journal has it before it is sent).
pub async fn wait_until_the_tool_has(tools: &RunningTools, key: &str) {
    let started = Instant::now();
    loop {
        let seen: Value = reqwest::get(format!("{}/api/exports/{key}", tools.base_url()))
            .await
            .expect("the tools answer")
            .json()
            .await
            .expect("an envelope");
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
