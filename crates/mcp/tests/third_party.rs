//! recourse's MCP client against real third-party MCP servers, installed from
//! the package registries by `.ci/run`:
//!
//! - `RECOURSE_TEST_MCP_TIME_CMD`: the command line of `mcp-server-time` (PyPI).
//! - `RECOURSE_TEST_MCP_FILESYSTEM_CMD`: the command line of
//!   `@modelcontextprotocol/server-filesystem` (npm), without its directory
//!   argument (each test appends a temporary directory it owns).
//!
//! When a variable is unset the test is skipped with a notice on stderr, or
//! fails when `RECOURSE_TEST_NO_SKIP=1` (as `.ci/run` sets, with both
//! variables), so CI never skips them.

use std::collections::HashMap;
use std::sync::Arc;

use recourse::record::PayloadSource;
use recourse::{Action, CallReport, CorrectionChain, Executor, ExecutorConfig, ManualClock};
use recourse_mcp::{McpTarget, McpTransport, UNKNOWN_TOOL};
use recourse_protocol::ErrorCategory;
use recourse_test_support::{FakeLlm, Reply, service_var};
use serde_json::{Value, json};

/// The server `var` names as a command line; `None` (and a notice) when unset.
fn server(var: &str) -> Option<McpTarget> {
    let line = service_var(var)?;
    Some(McpTarget::command_line(&line).expect("a valid command line"))
}

fn config() -> ExecutorConfig {
    ExecutorConfig {
        deadline: None,
        ..ExecutorConfig::default()
    }
}

/// A correction chain whose model, if any, is the fake OpenAI-compatible server.
fn chain(config: &ExecutorConfig, llm: Option<&FakeLlm>) -> CorrectionChain {
    let mut vars = HashMap::new();
    if let Some(llm) = llm {
        vars.insert("RECOURSE_LLM_BASE_URL".to_owned(), llm.base_url.clone());
        vars.insert("RECOURSE_LLM_API_KEY".to_owned(), "test-key".to_owned());
        vars.insert("RECOURSE_LLM_MODEL".to_owned(), "fake-model".to_owned());
    }
    CorrectionChain::from_vars(config, &vars).unwrap()
}

/// Runs `payload` against `tool` with the model `llm` (if any), the way `recourse call` does.
async fn call(
    target: McpTarget,
    tool: &str,
    payload: Value,
    llm: Option<&FakeLlm>,
) -> (CallReport, Arc<McpTransport>) {
    let config = config();
    let transport = Arc::new(McpTransport::new(target));
    let mut call = recourse::Call::builder(tool, payload);
    if let Some(tool) = transport.tool(tool).await.expect("the server starts") {
        call = tool.prepare(call);
    }
    let call = call.build().unwrap();
    let executor = Executor::builder_arc(transport.clone())
        .with_config(config.clone())
        .unwrap()
        .with_clock(Arc::new(ManualClock::new()))
        .with_corrector(Arc::new(chain(&config, llm)))
        .build();
    (executor.execute(call).await, transport)
}

#[tokio::test]
async fn time_an_invalid_timezone_is_corrected_by_the_model_and_succeeds() {
    let Some(target) = server("RECOURSE_TEST_MCP_TIME_CMD") else {
        return;
    };
    let llm = FakeLlm::start(vec![Reply::json(json!({
        "can_fix": true,
        "analysis": "IANA zone names use an underscore: America/New_York",
        "corrected_payload": {"timezone": "America/New_York"}
    }))])
    .await;
    let (report, _) = call(
        target,
        "get_current_time",
        json!({"timezone": "America/NewYork"}),
        Some(&llm),
    )
    .await;

    assert_eq!(report.outcome.name(), "succeeded", "{}", report.to_json());
    assert_eq!(report.attempts.len(), 2);
    let first = &report.attempts[0];
    assert_eq!(first.category, Some(ErrorCategory::InputError));
    assert_eq!(first.action, Action::Correct);
    let second = &report.attempts[1];
    assert_eq!(second.source, PayloadSource::Llm);
    assert_eq!(second.payload, json!({"timezone": "America/New_York"}));
    assert_eq!(llm.hits(), 1);
    // The model saw the server's own error text and the tool's schema.
    let prompt = llm.seen()[0].prompt();
    assert!(
        prompt.contains("America/NewYork") && prompt.contains("timezone"),
        "{prompt}"
    );
    let json = report.to_json();
    assert_eq!(json["data"]["timezone"], "America/New_York", "{json}");
}

#[tokio::test]
async fn time_without_a_model_stops_after_one_call() {
    let Some(target) = server("RECOURSE_TEST_MCP_TIME_CMD") else {
        return;
    };
    let (report, transport) = call(
        target,
        "get_current_time",
        json!({"timezone": "America/NewYork"}),
        None,
    )
    .await;
    assert_eq!(report.outcome.name(), "failed");
    assert_eq!(report.attempts.len(), 1);
    assert_eq!(report.attempts[0].category, Some(ErrorCategory::InputError));
    assert_eq!(report.llm_calls, 0);
    let error = report.outcome.error().expect("the server's error");
    assert!(error.message.contains("America/NewYork"), "{error}");
    assert_eq!(transport.sessions_started(), 1);
}

#[tokio::test]
async fn time_an_unknown_tool_fails_clearly_without_retrying() {
    let Some(target) = server("RECOURSE_TEST_MCP_TIME_CMD") else {
        return;
    };
    let llm = FakeLlm::start(Vec::new()).await;
    let (report, _) = call(
        target,
        "get_current_tiem",
        json!({"timezone": "UTC"}),
        Some(&llm),
    )
    .await;
    assert_eq!(report.outcome.name(), "failed");
    assert_eq!(report.attempts.len(), 1);
    assert_eq!(report.attempts[0].code.as_deref(), Some(UNKNOWN_TOOL));
    assert_eq!(llm.hits(), 0, "no model is asked to fix a missing tool");
    let message = &report.outcome.error().unwrap().message;
    assert!(
        message.contains("\"get_current_tiem\"") && message.contains("get_current_time"),
        "{message}"
    );
}

/// The filesystem server, allowed to touch only a fresh temporary directory.
fn filesystem() -> Option<(McpTarget, std::path::PathBuf)> {
    let McpTarget::Command {
        program,
        mut args,
        pass_env,
        env,
    } = server("RECOURSE_TEST_MCP_FILESYSTEM_CMD")?
    else {
        panic!("RECOURSE_TEST_MCP_FILESYSTEM_CMD must be a command");
    };
    let dir = std::env::temp_dir().join(format!("recourse-mcp-fs-{}", uuid_like()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir = dir.canonicalize().unwrap();
    args.push(dir.display().to_string());
    Some((
        McpTarget::Command {
            program,
            args,
            pass_env,
            env,
        },
        dir,
    ))
}

fn uuid_like() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{}-{nanos}", std::process::id())
}

#[tokio::test]
async fn filesystem_reading_an_allowed_file_succeeds() {
    let Some((target, dir)) = filesystem() else {
        return;
    };
    let file = dir.join("notes.txt");
    std::fs::write(&file, "recourse was here\n").unwrap();
    let (report, _) = call(
        target,
        "read_text_file",
        json!({"path": file.display().to_string()}),
        None,
    )
    .await;
    assert_eq!(report.outcome.name(), "succeeded", "{}", report.to_json());
    assert_eq!(report.attempts.len(), 1);
    assert!(
        report.to_json()["data"]
            .to_string()
            .contains("recourse was here")
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn filesystem_reading_a_missing_file_is_a_clear_failure_not_retried() {
    let Some((target, dir)) = filesystem() else {
        return;
    };
    let missing = dir.join("no-such-file.txt");
    let (report, transport) = call(
        target,
        "read_text_file",
        json!({"path": missing.display().to_string()}),
        None,
    )
    .await;
    assert_eq!(report.outcome.name(), "failed", "{}", report.to_json());
    assert_eq!(report.attempts.len(), 1, "never resent unchanged");
    assert!(!matches!(
        report.attempts[0].action,
        Action::RetrySame { .. }
    ));
    let message = &report.outcome.error().unwrap().message;
    assert!(
        message.contains("no-such-file.txt") || message.contains("ENOENT"),
        "{message}"
    );
    assert_eq!(transport.sessions_started(), 1);
    let _ = std::fs::remove_dir_all(dir);
}
