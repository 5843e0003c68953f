//! recourse's MCP server (`recourse tools serve --mcp`, the built binary as a
//! child process) called by recourse's MCP client.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use recourse::transport::TransportFailureKind;
use recourse::{Call, CallReport, Executor, ExecutorConfig, HttpTransport, ManualClock};
use recourse_mcp::{McpTarget, McpTransport};
use recourse_reference_tools::{Fault, ToolsConfig, spawn};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_recourse");

fn executor(transport: Arc<dyn recourse::Transport>) -> Executor {
    let config = ExecutorConfig {
        deadline: None,
        ..ExecutorConfig::default()
    };
    Executor::builder_arc(transport)
        .with_config(config)
        .unwrap()
        .with_clock(Arc::new(ManualClock::new()))
        .build()
}

fn served(args: &[&str]) -> McpTarget {
    let mut all = vec!["tools", "serve", "--mcp", "--port", "0"];
    all.extend_from_slice(args);
    McpTarget::Command {
        program: BIN.to_owned(),
        args: all.into_iter().map(str::to_owned).collect(),
        pass_env: Vec::new(),
        env: recourse_mcp::ChildEnv::Cleared,
    }
}

async fn over_mcp(target: McpTarget, tool: &str, payload: Value) -> CallReport {
    let transport = Arc::new(McpTransport::new(target));
    let info = transport
        .tool(tool)
        .await
        .unwrap()
        .expect("the tool is listed");
    let call = info.prepare(Call::builder(tool, payload)).build().unwrap();
    executor(transport).execute(call).await
}

async fn over_http(faults: Vec<Fault>, endpoint: &str, payload: Value) -> CallReport {
    let tools = spawn(ToolsConfig {
        faults,
        port: 0,
        ..ToolsConfig::default()
    })
    .await
    .unwrap();
    let transport = Arc::new(HttpTransport::builder().build().unwrap());
    let call = Call::builder(format!("{}{endpoint}", tools.base_url()), payload)
        .build()
        .unwrap();
    executor(transport).execute(call).await
}

#[tokio::test]
async fn the_envelope_survives_the_mcp_round_trip() {
    let payload = json!({"location": "Flower Mound, Texas, US"});
    let mcp = over_mcp(
        served(&["--fault", "weather:auth"]),
        "weather_current",
        payload.clone(),
    )
    .await;
    let http = over_http(
        vec!["weather:auth".parse().unwrap()],
        "/api/weather/current",
        payload,
    )
    .await;

    let (m, h) = (&mcp.attempts[0], &http.attempts[0]);
    assert_eq!(
        m.category.as_ref().map(ToString::to_string).as_deref(),
        Some("AUTH_ERROR"),
        "{}",
        mcp.to_json()
    );
    assert_eq!((&m.category, &m.code), (&h.category, &h.code));
    assert_eq!(m.retry_permission, h.retry_permission);
    assert_eq!(m.action, h.action);
    assert_eq!(mcp.attempts.len(), http.attempts.len());
    assert_eq!(mcp.outcome.name(), "failed");

    let ok = over_mcp(served(&[]), "stock_quote", json!({"symbol": "TSLA"})).await;
    assert_eq!(ok.outcome.name(), "succeeded", "{}", ok.to_json());
    assert!(
        ok.to_json()["data"]["price"].is_number(),
        "{}",
        ok.to_json()
    );
}

#[tokio::test]
async fn a_rate_limit_keeps_its_permission_and_wait_over_mcp() {
    let payload = json!({"symbol": "TSLA"});
    let transport = Arc::new(McpTransport::new(served(&["--fault", "stock:rate_limit"])));
    let info = transport.tool("stock_quote").await.unwrap().unwrap();
    // One dispatch: we only want to read the first answer.
    let call = info
        .prepare(Call::builder("stock_quote", payload).delegated())
        .build()
        .unwrap();
    let report = executor(transport).execute(call).await;
    let first = &report.attempts[0];
    assert_eq!(
        first.category.as_ref().map(ToString::to_string).as_deref(),
        Some("RATE_LIMIT"),
        "{}",
        report.to_json()
    );
    let http = over_http(
        vec!["stock:rate_limit".parse().unwrap()],
        "/api/stock/quote",
        json!({"symbol": "TSLA"}),
    )
    .await;
    assert_eq!(first.retry_permission, http.attempts[0].retry_permission);
}

/// Waits (bounded) until `path` holds `needle`.
async fn wait_for(path: &Path, needle: &str) -> String {
    for _ in 0..600 {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(needle) {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{} never held {needle:?}", path.display());
}

#[tokio::test]
async fn a_killed_child_mid_call_is_transient_and_the_next_attempt_starts_a_fresh_one() {
    let dir = std::env::temp_dir().join(format!("recourse-mcp-kill-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (pids, log) = (dir.join("pids"), dir.join("stderr"));
    let _ = std::fs::remove_file(&pids);
    // The first process is slow to answer weather; later ones are healthy.
    let script = format!(
        r#"echo $$ >> "$0"; if [ "$(wc -l < "$0")" -eq 1 ]; then exec "{BIN}" tools serve --mcp --port 0 --fault weather:slow --slow-ms 600000 2>>"$1"; else exec "{BIN}" tools serve --mcp --port 0 2>>"$1"; fi"#
    );
    let target = McpTarget::Command {
        program: "sh".into(),
        args: vec![
            "-c".into(),
            script,
            pids.display().to_string(),
            log.display().to_string(),
        ],
        pass_env: Vec::new(),
        env: recourse_mcp::ChildEnv::Cleared,
    };
    let transport = Arc::new(McpTransport::new(target));
    let info = transport.tool("weather_current").await.unwrap().unwrap();
    let call = info
        .prepare(Call::builder(
            "weather_current",
            json!({"location": "Flower Mound, Texas, US"}),
        ))
        .build()
        .unwrap();
    let exec = executor(transport.clone());
    let running = tokio::spawn(async move { exec.execute(call).await });

    wait_for(&log, "tools/call weather_current").await;
    let first = std::fs::read_to_string(&pids).unwrap().trim().to_owned();
    let killed = std::process::Command::new("kill")
        .args(["-9", &first])
        .status()
        .unwrap();
    assert!(killed.success());

    let report = running.await.unwrap();
    assert_eq!(report.outcome.name(), "succeeded", "{}", report.to_json());
    assert_eq!(report.attempts.len(), 2);
    let dead = &report.attempts[0];
    assert!(
        dead.transport_error
            .as_ref()
            .is_some_and(|e| e.kind == TransportFailureKind::FailedAfterSend),
        "{:?}",
        dead.transport_error
    );
    assert_eq!(dead.action.name(), "retry_same");
    assert_eq!(transport.sessions_started(), 2);
    let all: Vec<String> = std::fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(all.len(), 2);
    assert_ne!(all[0], all[1], "a fresh process served the second attempt");
    let _ = std::fs::remove_dir_all(dir);
}

/// `recourse tools serve --mcp-http`: the endpoint URL is the second stdout line.
struct HttpServed {
    child: std::process::Child,
    mcp_url: String,
}

impl HttpServed {
    fn start(args: &[&str]) -> Self {
        use std::io::BufRead;
        let mut child = std::process::Command::new(BIN)
            .args(["tools", "serve", "--port", "0", "--mcp-http"])
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let _base = lines.next().unwrap().unwrap();
        let mcp_url = lines.next().unwrap().unwrap();
        assert!(mcp_url.ends_with("/mcp"), "{mcp_url}");
        Self { child, mcp_url }
    }
}

impl Drop for HttpServed {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn streamable_http_round_trip_preserves_category_and_permission() {
    let served = HttpServed::start(&["--fault", "weather:auth"]);
    let target = McpTarget::url(&served.mcp_url).unwrap();
    let ok = over_mcp(target.clone(), "stock_quote", json!({"symbol": "TSLA"})).await;
    assert_eq!(ok.outcome.name(), "succeeded");
    assert_eq!(ok.to_json()["data"]["price"], 468.285);

    let denied = over_mcp(
        target,
        "weather_current",
        json!({"location": "Paris, Ile-de-France, FR"}),
    )
    .await;
    let first = &denied.attempts[0];
    assert_eq!(
        first.category.as_ref().map(ToString::to_string).as_deref(),
        Some("AUTH_ERROR")
    );
    assert_eq!(
        first.retry_permission,
        recourse_protocol::RetryPermission::Refused
    );
    assert_eq!(first.action.name(), "stop");
    assert_eq!(denied.http_calls, 1);
}

#[tokio::test]
async fn a_dropped_http_session_is_a_transient_failure() {
    let mut served = HttpServed::start(&[]);
    let transport = Arc::new(McpTransport::new(McpTarget::url(&served.mcp_url).unwrap()));
    assert!(
        transport.tool("stock_quote").await.unwrap().is_some(),
        "session up"
    );
    served.child.kill().unwrap();
    served.child.wait().unwrap();
    let config = ExecutorConfig {
        deadline: None,
        limits: recourse::Limits {
            max_retries: 1,
            ..recourse::Limits::default()
        },
        ..ExecutorConfig::default()
    };
    let report = Executor::builder_arc(transport)
        .with_config(config)
        .unwrap()
        .with_clock(Arc::new(ManualClock::new()))
        .build()
        .execute(
            // A read the caller declares idempotent (no tools/list here to say so).
            Call::builder("stock_quote", json!({"symbol": "TSLA"}))
                .idempotent(true)
                .build()
                .unwrap(),
        )
        .await;
    assert_eq!(report.outcome.name(), "failed");
    let first = &report.attempts[0];
    assert!(first.transport_error.is_some(), "{first:?}");
    assert_eq!(
        first.action.name(),
        "retry_same",
        "a dropped session is transient"
    );
}

const ENV_SERVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/env_mcp.sh");

/// The variable names `recourse call --mcp-command` showed the env server.
fn child_env_names(extra: &[&str]) -> Vec<String> {
    let out = std::process::Command::new(BIN)
        .args(["call", "--mcp-command", &format!("sh '{ENV_SERVER}'")])
        .args(["--tool", "env", "--payload", "{}", "--json"])
        .args(extra)
        .env("RECOURSE_TEST_SECRET", "sk-not-for-children")
        .env("RECOURSE_TEST_PASSED", "yes")
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    assert_eq!(report["outcome"], "succeeded", "{report}");
    report["data"]["names"]
        .as_array()
        .unwrap_or_else(|| panic!("the server lists its environment: {report}"))
        .iter()
        .filter_map(|n| n.as_str().map(str::to_owned))
        .collect()
}

#[test]
fn an_mcp_command_child_inherits_only_the_base_and_named_variables() {
    let names = child_env_names(&[]);
    assert!(names.iter().any(|n| n == "PATH"), "{names:?}");
    for withheld in ["RECOURSE_TEST_SECRET", "RECOURSE_TEST_PASSED"] {
        assert!(
            !names.iter().any(|n| n == withheld),
            "{withheld}: {names:?}"
        );
    }
    let names = child_env_names(&["--mcp-env", "RECOURSE_TEST_PASSED"]);
    assert!(
        names.iter().any(|n| n == "RECOURSE_TEST_PASSED"),
        "{names:?}"
    );
    assert!(
        !names.iter().any(|n| n == "RECOURSE_TEST_SECRET"),
        "{names:?}"
    );
}

/// The variable names the env server saw behind `recourse mcp proxy FLAGS`
/// (its tool offered as `tool`), started as a client config with `"env"`
/// starts it.
fn proxy_child_env_names(flags: &[&str], tool: &str) -> Vec<String> {
    let args: Vec<String> = ["mcp", "proxy", "--journal", "none"]
        .iter()
        .chain(flags)
        .map(|a| (*a).to_owned())
        .collect();
    let mut proxy = crate::mcp_stdio_proxy::StdioProxy::start_with_env(
        &args,
        &[
            ("SERVER_API_TOKEN", "for-the-server"),
            ("RECOURSE_TEST_SECRET", "sk-not-for-children"),
            ("OPENAI_API_KEY", "sk-the-proxys-model"),
            ("NOTES_KEY", "k-for-the-http-upstream-only"),
        ],
    );
    let result = proxy.request("tools/call", json!({"name": tool, "arguments": {}}));
    result["structuredContent"]["names"]
        .as_array()
        .unwrap_or_else(|| panic!("the server lists its environment: {result}"))
        .iter()
        .filter_map(|n| n.as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_proxys_stdio_upstream_inherits_what_the_client_set_but_recourses_own_variables() {
    let has = |names: &[String], name: &str| names.iter().any(|n| n == name);
    let names = |flags: &[&str]| {
        let mut all = flags.to_vec();
        all.extend(["--", "sh", ENV_SERVER]);
        proxy_child_env_names(&all, "env")
    };
    let seen = names(&[]);
    assert!(has(&seen, "SERVER_API_TOKEN"), "{seen:?}");
    assert!(has(&seen, "PATH"), "{seen:?}");
    for withheld in ["RECOURSE_TEST_SECRET", "OPENAI_API_KEY"] {
        assert!(!has(&seen, withheld), "{withheld}: {seen:?}");
    }
    let seen = names(&["--mcp-env", "OPENAI_API_KEY"]);
    assert!(has(&seen, "OPENAI_API_KEY"), "{seen:?}");
    assert!(!has(&seen, "RECOURSE_TEST_SECRET"), "{seen:?}");
    let seen = names(&["--mcp-env-clear"]);
    assert!(!has(&seen, "SERVER_API_TOKEN"), "{seen:?}");
    assert!(has(&seen, "PATH"), "{seen:?}");
    let seen = names(&["--mcp-env-clear", "--mcp-env", "SERVER_API_TOKEN"]);
    assert!(has(&seen, "SERVER_API_TOKEN"), "{seen:?}");
}

/// A header's `${VARIABLE}` is a secret for its http(s) upstream: a stdio
/// upstream of the same proxy does not inherit the variable.
#[test]
fn a_variable_a_header_reads_is_kept_from_the_proxys_stdio_upstreams() {
    let tools = crate::mcp_http_tools::McpHttpTools::start(&[]);
    let env_server = format!("env=sh '{ENV_SERVER}'");
    let http = format!("tools={}", tools.mcp_url);
    let flags = [
        "--upstream",
        &env_server,
        "--upstream",
        &http,
        "--upstream-header",
        "tools=X-Api-Key: ${NOTES_KEY}",
    ];
    let seen = proxy_child_env_names(&flags, "env__env");
    assert!(seen.iter().any(|n| n == "SERVER_API_TOKEN"), "{seen:?}");
    assert!(!seen.iter().any(|n| n == "NOTES_KEY"), "{seen:?}");
}

/// `tools serve --mcp` binds no port: it serves while another process holds
/// the port it was given (the default 8700, say, held by `tools serve`).
#[tokio::test]
async fn the_stdio_server_binds_no_port() {
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port().to_string();
    let target = McpTarget::Command {
        program: BIN.to_owned(),
        args: ["tools", "serve", "--mcp", "--port", &port]
            .map(str::to_owned)
            .to_vec(),
        pass_env: Vec::new(),
        env: recourse_mcp::ChildEnv::Cleared,
    };
    let report = over_mcp(
        target,
        "weather_current",
        json!({"location": "Flower Mound, Texas, US"}),
    )
    .await;
    assert_eq!(report.outcome.name(), "succeeded", "{:?}", report.outcome);
}

/// In process, a write that commits and then loses its answer is still an
/// unknown outcome for the MCP client — never a failure it may resend.
#[tokio::test]
async fn a_write_that_loses_its_answer_in_process_is_unknown() {
    let report = over_mcp(
        served(&["--fault", "exports:crash_after_commit"]),
        "exports_create",
        json!({"source_id": "sales-2024", "format": "pdf"}),
    )
    .await;
    assert_eq!(report.outcome.name(), "unknown", "{:?}", report.outcome);
    assert_eq!(report.http_calls, 1, "sent once");
    assert_eq!(report.to_json()["error"]["code"], "TOOL_CONNECTION_LOST");
}

/// `recourse call` over MCP narrates calls, not HTTP: no status a tool never
/// sent, no "HTTP call(s)".
#[test]
fn an_mcp_trace_speaks_of_calls() {
    let server = format!("{BIN} tools serve --mcp --fault stock:rate_limit:1.0 --retry-after 0");
    let out = std::process::Command::new(BIN)
        .args(["call", "--mcp-command", &server, "--tool", "stock_quote"])
        .args(["--payload", r#"{"symbol":"AAPL"}"#, "--max-retries", "1"])
        .args(["--backoff-ms", "0"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("← RATE_LIMIT"), "{stdout}");
    assert!(!stdout.contains("← 200"), "{stdout}");
    assert!(stdout.contains("2 tool call(s)"), "{stdout}");
    assert!(!stdout.contains("HTTP call"), "{stdout}");
}
