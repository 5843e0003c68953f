//! `recourse mcp proxy` (the built binary) started as an MCP client starts
//! it, and spoken to by recourse's own rmcp client (`McpTransport`): tools
//! listed and called through it, in front of `recourse tools serve --mcp`
//! and `mcp-server-time`; keys, restarts and startup errors.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use recourse_mcp::{ListChange, McpTarget, McpTransport, RpcError};
use recourse_test_support::service_var;
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_recourse");
const WAIT: Duration = Duration::from_secs(60);
const CALL_META: &str = "recourse/call";
const FAILURE_META: &str = "io.modelcontextprotocol/toolFailure";

/// `recourse tools serve --mcp` with `args`, as one command line.
fn reference_tools(args: &str) -> String {
    format!("'{BIN}' tools serve --mcp --port 0 {args}")
}

/// `recourse mcp proxy ARGS`, started when first asked something.
fn proxy(args: &[&str]) -> McpTransport {
    let mut all = vec!["mcp".to_owned(), "proxy".to_owned()];
    all.extend(args.iter().map(|a| (*a).to_owned()));
    McpTransport::new(McpTarget::Command {
        program: BIN.to_owned(),
        args: all,
        pass_env: Vec::new(),
    })
}

/// `recourse mcp proxy ARGS -- recourse tools serve --mcp UPSTREAM_ARGS`.
fn proxy_of_reference_tools(args: &[&str], upstream_args: &[&str]) -> McpTransport {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--", BIN, "tools", "serve", "--mcp", "--port", "0"]);
    all.extend(upstream_args);
    proxy(&all)
}

/// One `tools/call`, with the caller's idempotency key when given.
async fn call(
    server: &McpTransport,
    tool: &str,
    arguments: Value,
    key: Option<Value>,
) -> Result<Value, RpcError> {
    let mut params = json!({"name": tool, "arguments": arguments});
    if let Some(key) = key {
        params["_meta"] = json!({ "recourse/idempotency-key": key });
    }
    server
        .forward("tools/call", Some(params), WAIT)
        .await
        .expect("the proxy answers")
}

async fn ok(server: &McpTransport, tool: &str, arguments: Value) -> Value {
    call(server, tool, arguments, None)
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e:?}"))
}

fn export() -> Value {
    json!({"source_id": "sales-2024", "format": "pdf"})
}

/// How many exports the upstream committed (its read, through `server`).
async fn exports(server: &McpTransport, tool: &str) -> u64 {
    let read = ok(server, tool, export()).await;
    assert_eq!(read["isError"], false, "{read}");
    read["structuredContent"]["count"].as_u64().unwrap()
}

fn names(listed: &[Value]) -> Vec<&str> {
    listed.iter().map(|t| t["name"].as_str().unwrap()).collect()
}

fn journal_in(dir: &tempfile::TempDir) -> String {
    dir.path().join("proxy.db").display().to_string()
}

#[tokio::test]
async fn mcp_proxy_offers_the_upstreams_tools_and_results_unchanged() {
    let direct = McpTransport::new(McpTarget::command_line(&reference_tools("")).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let journal = journal_in(&dir);
    let proxied = proxy_of_reference_tools(&["--journal", &journal], &[]);

    let listed = proxied.listed_tools(WAIT).await.unwrap();
    assert_eq!(listed, direct.listed_tools(WAIT).await.unwrap());

    // A success is the upstream's own result, plus the record's summary.
    let read = json!({"source_id": "inventory", "format": "csv"});
    let mut through = ok(&proxied, "exports_lookup", read.clone()).await;
    let summary = through["_meta"]
        .as_object_mut()
        .unwrap()
        .remove(CALL_META)
        .unwrap();
    assert_eq!(summary["outcome"], "succeeded");
    assert_eq!(summary["attempts"], 1);
    assert!(summary["call_id"].is_string());
    if through["_meta"]
        .as_object()
        .is_some_and(serde_json::Map::is_empty)
    {
        through.as_object_mut().unwrap().remove("_meta");
    }
    assert_eq!(through, ok(&direct, "exports_lookup", read).await);

    // A tool no upstream offers is a protocol fault, as MCP says.
    let unknown = call(&proxied, "exports_creat", export(), None)
        .await
        .unwrap_err();
    assert_eq!(unknown.code, -32602, "{unknown:?}");
    assert!(unknown.message.contains("exports_create"), "{unknown:?}");
}

#[tokio::test]
async fn mcp_proxy_answers_a_repeated_key_from_its_journal() {
    let dir = tempfile::tempdir().unwrap();
    let journal = journal_in(&dir);
    let proxied = proxy_of_reference_tools(&["--journal", &journal], &[]);
    let key = || Some(json!("export-k-1"));

    let first = call(&proxied, "exports_create", export(), key())
        .await
        .unwrap();
    assert_eq!(first["isError"], false, "{first}");
    let again = call(&proxied, "exports_create", export(), key())
        .await
        .unwrap();
    assert_eq!(again["isError"], false, "{again}");
    assert_eq!(again["_meta"][CALL_META]["replayed"], true, "{again}");
    assert_eq!(
        again["_meta"][CALL_META]["call_id"],
        first["_meta"][CALL_META]["call_id"]
    );
    assert_eq!(again["structuredContent"], first["structuredContent"]);
    assert_eq!(
        exports(&proxied, "exports_lookup").await,
        1,
        "nothing resent"
    );

    let other = json!({"source_id": "sales-2024", "format": "csv"});
    let reused = call(&proxied, "exports_create", other, key())
        .await
        .unwrap();
    assert_eq!(reused["isError"], true, "{reused}");
    assert_eq!(
        reused["_meta"][FAILURE_META]["code"],
        "IDEMPOTENCY_KEY_REUSED"
    );
    assert_eq!(reused["_meta"][FAILURE_META]["retryable"], false);
    assert_eq!(exports(&proxied, "exports_lookup").await, 1);

    // A key that is not a string is the client's protocol fault.
    let bad = call(&proxied, "exports_create", export(), Some(json!(7)))
        .await
        .unwrap_err();
    assert_eq!(bad.code, -32602, "{bad:?}");

    // Without a journal, a keyed call cannot be answered twice: refused, nothing sent.
    let unjournaled = proxy_of_reference_tools(&["--journal", "none"], &[]);
    let refused = call(&unjournaled, "exports_create", export(), key())
        .await
        .unwrap();
    assert_eq!(refused["_meta"][FAILURE_META]["code"], "JOURNAL_REQUIRED");
    assert_eq!(exports(&unjournaled, "exports_lookup").await, 0);
}

#[tokio::test]
async fn mcp_proxy_offers_each_upstreams_tools_under_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let journal = journal_in(&dir);
    let a = format!("a={}", reference_tools(""));
    let b = format!("b={}", reference_tools(""));
    let proxied = proxy(&["--journal", &journal, "--upstream", &a, "--upstream", &b]);

    let listed = proxied.listed_tools(WAIT).await.unwrap();
    let direct = McpTransport::new(McpTarget::command_line(&reference_tools("")).unwrap());
    let own = direct.listed_tools(WAIT).await.unwrap();
    assert_eq!(listed.len(), 2 * own.len());
    for (prefix, offered) in [("a", &listed[..own.len()]), ("b", &listed[own.len()..])] {
        for (tool, offered) in own.iter().zip(offered) {
            let mut renamed = tool.clone();
            renamed["name"] = json!(format!("{prefix}__{}", tool["name"].as_str().unwrap()));
            assert_eq!(offered, &renamed, "schemas and annotations unchanged");
        }
    }
    assert!(names(&listed).contains(&"b__exports_create"));

    // Each call reaches its own upstream.
    let made = ok(&proxied, "b__exports_create", export()).await;
    assert_eq!(made["isError"], false, "{made}");
    assert_eq!(exports(&proxied, "b__exports_lookup").await, 1);
    assert_eq!(exports(&proxied, "a__exports_lookup").await, 0);
    let unprefixed = call(&proxied, "exports_create", export(), None)
        .await
        .unwrap_err();
    assert_eq!(unprefixed.code, -32602);
}

#[tokio::test]
async fn mcp_proxy_in_front_of_mcp_server_time() {
    let Some(command) = service_var("RECOURSE_TEST_MCP_TIME_CMD") else {
        return;
    };
    let McpTarget::Command { program, args, .. } = McpTarget::command_line(&command).unwrap()
    else {
        unreachable!("a command line");
    };
    let mut all = vec!["--journal", "none", "--", program.as_str()];
    all.extend(args.iter().map(String::as_str));
    let proxied = proxy(&all);
    let direct = McpTransport::new(McpTarget::command_line(&command).unwrap());

    let listed = proxied.listed_tools(WAIT).await.unwrap();
    assert_eq!(listed, direct.listed_tools(WAIT).await.unwrap());
    assert!(names(&listed).contains(&"get_current_time"), "{listed:?}");

    let now = ok(&proxied, "get_current_time", json!({"timezone": "UTC"})).await;
    assert_eq!(now["isError"], false, "{now}");
    assert!(
        now["content"][0]["text"].as_str().unwrap().contains("UTC"),
        "{now}"
    );
    assert_eq!(now["_meta"][CALL_META]["outcome"], "succeeded");

    // The server's own isError: input the model must fix, not resent.
    let wrong = ok(
        &proxied,
        "get_current_time",
        json!({"timezone": "America/NewYork"}),
    )
    .await;
    assert_eq!(wrong["isError"], true, "{wrong}");
    assert_eq!(
        wrong["_meta"][FAILURE_META]["class"], "capability",
        "{wrong}"
    );
    assert_eq!(wrong["_meta"][FAILURE_META]["retryable"], false);
    assert_eq!(
        wrong["_meta"][CALL_META]["step"], "fix_arguments",
        "{wrong}"
    );
    let guidance = wrong["_meta"][FAILURE_META]["agentGuidance"]
        .as_str()
        .unwrap();
    assert_eq!(wrong["content"][0]["text"], guidance);
    assert!(guidance.contains("America/NewYork"), "{guidance}");
}

/// Waits (bounded) until `path` holds `needle`.
async fn wait_for(path: &Path, needle: &str) {
    for _ in 0..600 {
        if std::fs::read_to_string(path).is_ok_and(|t| t.contains(needle)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{} never held {needle:?}", path.display());
}

#[tokio::test]
async fn mcp_proxy_restarts_a_dead_upstream_and_never_resends_the_write_it_was_running() {
    let dir = tempfile::tempdir().unwrap();
    let (pids, log) = (dir.path().join("pids"), dir.path().join("stderr"));
    // The first upstream process hangs in the export; later ones are healthy.
    let script = format!(
        r#"echo $$ >> "$0"; if [ "$(wc -l < "$0")" -eq 1 ]; then exec "{BIN}" tools serve --mcp --port 0 --fault exports:slow --slow-ms 600000 2>>"$1"; else exec "{BIN}" tools serve --mcp --port 0 2>>"$1"; fi"#
    );
    let journal = journal_in(&dir);
    let (pids_arg, log_arg) = (pids.display().to_string(), log.display().to_string());
    let proxied = std::sync::Arc::new(proxy(&[
        "--journal",
        &journal,
        "--",
        "sh",
        "-c",
        &script,
        &pids_arg,
        &log_arg,
    ]));
    proxied.listed_tools(WAIT).await.unwrap();

    let calling = std::sync::Arc::clone(&proxied);
    let running = tokio::spawn(async move { ok(&calling, "exports_create", export()).await });
    wait_for(&log, "tools/call exports_create").await;
    let first = std::fs::read_to_string(&pids).unwrap().trim().to_owned();
    let killed = Command::new("kill").args(["-9", &first]).status().unwrap();
    assert!(killed.success());

    let lost = running.await.unwrap();
    assert_eq!(lost["isError"], true, "{lost}");
    let failure = &lost["_meta"][FAILURE_META];
    assert_eq!(failure["code"], "outcome_unknown", "{lost}");
    assert_eq!(failure["class"], "reliability");
    assert_eq!(failure["retryable"], false);
    assert_eq!(lost["_meta"][CALL_META]["step"], "do_not_repeat");

    // The next call starts a fresh upstream; the write was never sent again.
    assert_eq!(exports(&proxied, "exports_lookup").await, 0);
    let started = std::fs::read_to_string(&pids).unwrap();
    assert_eq!(started.lines().count(), 2, "{started}");
    let sent = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        sent.matches("tools/call exports_create").count(),
        1,
        "{sent}"
    );

    // The journal has the call, unknown, for `recourse journal` to settle.
    let listed = Command::new(BIN)
        .args(["journal", "--journal", &journal, "list", "--json"])
        .output()
        .unwrap();
    let entries: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(entries.as_array().unwrap().len(), 1, "{entries}");
    assert_eq!(entries[0]["state"], "unknown", "{entries}");
    assert_eq!(entries[0]["call_id"], failure["correlationId"]);
}

/// `recourse mcp proxy ARGS` run to its exit, with no client.
fn refused(args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(["mcp", "proxy"])
        .args(args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    assert!(out.stdout.is_empty(), "stdout carries MCP only: {args:?}");
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn mcp_proxy_startup_errors_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let policy = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let upstream = ["--", BIN, "tools", "serve", "--mcp", "--port", "0"];
    let with = |flags: &[&str]| -> Vec<String> {
        let mut all: Vec<String> = ["--journal", "none"].map(str::to_owned).to_vec();
        all.extend(flags.iter().map(|f| (*f).to_owned()));
        all.extend(upstream.map(str::to_owned));
        all
    };
    let run = |args: Vec<String>| refused(&args.iter().map(String::as_str).collect::<Vec<_>>());

    let typo = policy(
        "typo.json",
        r#"{"tools": {"exports_create": {"idempotnt": false}}}"#,
    );
    let said = run(with(&["--tools", &typo]));
    assert!(
        said.contains("exports_create") && said.contains("idempotnt"),
        "{said}"
    );

    let unknown = policy(
        "unknown.json",
        r#"{"tools": {"exports_creat": {"idempotent": false}}}"#,
    );
    let said = run(with(&["--tools", &unknown]));
    assert!(
        said.contains("\"exports_creat\"") && said.contains("no upstream offers"),
        "{said}"
    );

    let elsewhere = policy(
        "read.json",
        r#"{"tools": {"exports_create": {"verify": {"tool": "exports_lookp", "expect": ["/latest exists"]}}}}"#,
    );
    let said = run(with(&["--tools", &elsewhere]));
    assert!(said.contains("exports_lookp"), "{said}");

    let not_json = policy("broken.json", "{");
    assert!(run(with(&["--tools", &not_json])).contains("not JSON"));

    let said = refused(&["--upstream", "a=x", "--", "y"]);
    assert!(said.contains("cannot be used with"), "{said}");
    let said = refused(&["--journal", "none", "--upstream", "two words=x"]);
    assert!(said.contains("two words"), "{said}");
    let said = refused(&[
        "--journal",
        "none",
        "--upstream",
        "a=x",
        "--upstream",
        "a=y",
    ]);
    assert!(said.contains("\"a\""), "{said}");
    let said = refused(&["--journal", "none"]);
    assert!(said.contains("no upstream"), "{said}");
    let said = refused(&["--journal", "none", "--", "/nonexistent/mcp-server"]);
    assert!(said.contains("/nonexistent/mcp-server"), "{said}");
}

#[tokio::test]
async fn mcp_proxies_share_their_breakers_through_redis() {
    if service_var("RECOURSE_TEST_REDIS_URL").is_none() {
        return;
    }
    // A Redis of this test's own: no other test's breakers in it.
    let redis = recourse_test_support::OwnedRedis::start();
    let url = redis.url();
    let down = ["--fault", "stock:unavailable"];
    let flags = [
        "--shared-state",
        &url,
        "--journal",
        "none",
        "--max-retries",
        "0",
    ];
    let first = proxy_of_reference_tools(&flags, &down);
    let quote = || json!({"symbol": "TSLA"});
    for _ in 0..5 {
        let failed = ok(&first, "stock_quote", quote()).await;
        assert_eq!(
            failed["_meta"][FAILURE_META]["code"], "retries_exhausted",
            "{failed}"
        );
    }
    // Another proxy of the fleet finds the breaker open: nothing is sent.
    let second = proxy_of_reference_tools(&flags, &down);
    let refused = ok(&second, "stock_quote", quote()).await;
    let failure = &refused["_meta"][FAILURE_META];
    assert_eq!(failure["code"], "circuit_open", "{refused}");
    assert_eq!(failure["class"], "reliability");
    assert_eq!(failure["retryable"], true);
}

#[tokio::test]
async fn mcp_proxy_in_front_of_the_filesystem_server() {
    let Some(command) = service_var("RECOURSE_TEST_MCP_FILESYSTEM_CMD") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let root_path = root.path().canonicalize().unwrap();
    let line = format!("{command} '{}'", root_path.display());
    let McpTarget::Command { program, args, .. } = McpTarget::command_line(&line).unwrap() else {
        unreachable!("a command line");
    };
    let journal = journal_in(&root);
    let mut all = vec!["--journal", journal.as_str(), "--", program.as_str()];
    all.extend(args.iter().map(String::as_str));
    let proxied = proxy(&all);
    let direct = McpTransport::new(McpTarget::command_line(&line).unwrap());
    assert_eq!(
        proxied.listed_tools(WAIT).await.unwrap(),
        direct.listed_tools(WAIT).await.unwrap()
    );

    let file = root_path.join("note.txt");
    let wrote = ok(
        &proxied,
        "write_file",
        json!({"path": file.display().to_string(), "content": "kept"}),
    )
    .await;
    // The server's own result: it leaves out `isError`, and so does the proxy.
    assert!(wrote.get("isError").is_none(), "{wrote}");
    assert_eq!(wrote["_meta"][CALL_META]["outcome"], "succeeded");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "kept");

    // A path outside the root: the server's own refusal, for the model to fix.
    let outside = ok(
        &proxied,
        "write_file",
        json!({"path": "/nonexistent-root/note.txt", "content": "no"}),
    )
    .await;
    assert_eq!(outside["isError"], true, "{outside}");
    assert_eq!(outside["_meta"][FAILURE_META]["class"], "capability");
    assert_eq!(outside["_meta"][CALL_META]["step"], "fix_arguments");
}

/// `python3 servers/scripted.py --script SCRIPT --log LOG` (the Python MCP
/// clients' scripted server; the standard library is all it needs), as
/// words of a command line.
fn scripted(script: &str, log: &Path) -> Vec<String> {
    let found = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs the scripted MCP server");
    let python = String::from_utf8(found.stdout).unwrap().trim().to_owned();
    let server = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/mcp-clients/python/servers/scripted.py"
    );
    [python.as_str(), server, "--script", script, "--log"]
        .iter()
        .map(|w| (*w).to_owned())
        .chain([log.display().to_string()])
        .collect()
}

#[tokio::test]
async fn mcp_proxy_offers_the_tool_an_upstream_adds_and_tells_its_client() {
    let dir = tempfile::tempdir().unwrap();
    let journal = journal_in(&dir);
    let upstream = scripted("grow", &dir.path().join("upstream.log"));
    let mut args = vec!["--journal", journal.as_str(), "--"];
    args.extend(upstream.iter().map(String::as_str));
    let proxied = proxy(&args);
    let mut changes = proxied.list_changes();
    let declared = proxied.capabilities(WAIT).await.unwrap();
    assert_eq!(declared["tools"]["listChanged"], true, "{declared}");
    assert_eq!(declared["prompts"]["listChanged"], true, "{declared}");
    let listed = proxied.listed_tools(WAIT).await.unwrap();
    assert_eq!(names(&listed), ["write", "read", "grow"]);

    let grown = ok(&proxied, "grow", json!({})).await;
    assert_eq!(grown["isError"], false, "{grown}");
    // Told (this client speaks 2025-11-25 to the proxy), and already listed again.
    loop {
        let change = tokio::time::timeout(WAIT, changes.recv()).await;
        if change.expect("told within the wait").unwrap() == ListChange::Tools {
            break;
        }
    }
    let listed = proxied.listed_tools(WAIT).await.unwrap();
    assert_eq!(names(&listed), ["write", "read", "grow", "grown"]);
    assert_eq!(listed[3]["annotations"]["readOnlyHint"], true, "{listed:?}");
    let called = ok(&proxied, "grown", json!({})).await;
    assert_eq!(
        called["structuredContent"],
        json!({"grown": true}),
        "{called}"
    );
    assert_eq!(called["_meta"][CALL_META]["outcome"], "succeeded");
}

#[tokio::test]
async fn mcp_proxy_offers_what_a_restarted_upstream_lists_and_warns_of_a_policy_left_unused() {
    let dir = tempfile::tempdir().unwrap();
    let (starts, stderr) = (dir.path().join("starts"), dir.path().join("stderr"));
    // The first upstream is the scripted one (its first write kills it);
    // started again, it is the reference tools, which have no `read`.
    let first = scripted("drop", &dir.path().join("upstream.log")).join(" ");
    let script = format!(
        r#"echo x >> "$0"; if [ "$(wc -l < "$0")" -eq 1 ]; then exec {first}; else exec "{BIN}" tools serve --mcp --port 0; fi"#
    );
    let policy = dir.path().join("tools.json");
    std::fs::write(&policy, r#"{"tools": {"read": {"idempotent": true}}}"#).unwrap();
    // The proxy's stderr goes to a file, to read its warning.
    let proxy_line = format!(
        r#"exec "{BIN}" mcp proxy --journal "{}" --tools "{}" -- sh -c '{script}' "{}" 2>>"{}""#,
        journal_in(&dir),
        policy.display(),
        starts.display(),
        stderr.display()
    );
    let proxied = McpTransport::new(McpTarget::Command {
        program: "sh".to_owned(),
        args: vec!["-c".to_owned(), proxy_line],
        pass_env: Vec::new(),
    });
    assert_eq!(
        names(&proxied.listed_tools(WAIT).await.unwrap()),
        ["write", "read"]
    );

    let lost = ok(&proxied, "write", json!({"text": "hello"})).await;
    assert_eq!(
        lost["_meta"][FAILURE_META]["code"], "outcome_unknown",
        "{lost}"
    );
    // The next call starts the upstream again: it has no `read` any more.
    let gone = ok(&proxied, "read", json!({})).await;
    assert_eq!(gone["isError"], true, "{gone}");
    wait_for(&stderr, "which no upstream offers").await;
    let warned = std::fs::read_to_string(&stderr).unwrap();
    assert!(
        warned.contains(r#"the policy file names the tool "read""#),
        "{warned}"
    );
    assert!(warned.contains("its policy is unused"), "{warned}");
    // This upstream did not announce list changes, so neither does the
    // proxy: the client learns of the new tools by listing them.
    let listed = proxied.forward("tools/list", None, WAIT).await.unwrap();
    let listed = listed.unwrap()["tools"].as_array().unwrap().clone();
    assert!(names(&listed).contains(&"exports_create"), "{listed:?}");
    assert_eq!(exports(&proxied, "exports_lookup").await, 0);
}
