//! Shared by the MCP signal tests: an executor as `recourse call` builds one
//! (a manual clock, no deadline, no reconciler), a call prepared from the
//! server's tool list, and fresh directories for a scripted server's counts.

#![allow(dead_code, unreachable_pub)]

pub mod changing_server;
pub mod http_server;
pub mod state_server;
pub mod stdio_server;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use recourse::{Call, CallReport, CorrectionChain, Executor, ExecutorConfig, ManualClock};
use recourse_mcp::McpTransport;
use recourse_test_support::FakeLlm;

pub fn config() -> ExecutorConfig {
    ExecutorConfig {
        deadline: None,
        backoff_base: Duration::from_millis(10),
        request_timeout: Duration::from_secs(20),
        ..ExecutorConfig::default()
    }
}

/// An executor over `transport`, correcting with the fake model `llm` if any.
pub fn executor(transport: Arc<McpTransport>, llm: Option<&FakeLlm>) -> Executor {
    let config = config();
    let mut vars = HashMap::new();
    if let Some(llm) = llm {
        vars.insert("RECOURSE_LLM_BASE_URL".to_owned(), llm.base_url.clone());
        vars.insert("RECOURSE_LLM_API_KEY".to_owned(), "test-key".to_owned());
        vars.insert("RECOURSE_LLM_MODEL".to_owned(), "fake-model".to_owned());
    }
    let chain = CorrectionChain::from_vars(&config, &vars).unwrap();
    Executor::builder_arc(transport)
        .with_config(config)
        .unwrap()
        .with_clock(Arc::new(ManualClock::new()))
        .with_corrector(Arc::new(chain))
        .without_circuit_breakers()
        .build()
}

/// A call to `tool` as the server describes it (its hints tighten the traits).
pub async fn prepared(transport: &McpTransport, tool: &str) -> Call {
    let info = transport
        .tool(tool)
        .await
        .expect("the server starts")
        .unwrap_or_else(|| panic!("the server lists {tool}"));
    info.prepare(Call::builder(tool, serde_json::json!({"id": "W123"})))
        .build()
        .unwrap()
}

/// Runs one call to `tool` through `transport`.
pub async fn run(transport: &Arc<McpTransport>, tool: &str) -> CallReport {
    let call = prepared(transport, tool).await;
    executor(Arc::clone(transport), None).execute(call).await
}

/// A fresh, empty directory under the system's temporary one, removed when dropped.
pub struct FreshDir(pub PathBuf);

impl Drop for FreshDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh, empty directory under the system's temporary one.
pub fn fresh_dir(name: &str) -> FreshDir {
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "recourse-mcp-{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    FreshDir(dir)
}
