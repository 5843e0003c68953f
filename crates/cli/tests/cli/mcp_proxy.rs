//! `recourse mcp proxy` (the built binary) run to its exit: the startup
//! errors it names on stderr with exit code 2 and nothing on stdout (which
//! carries MCP only), a policy that needs a journal it was not given, and
//! `--http` refusing to bind beyond loopback without a token. What the proxy
//! does for its clients is tested in-process, in `recourse-mcp-proxy`;
//! `mcp_proxy_orphans.rs` kills the process mid-write.

use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_recourse");
const POLICY: &str = r#"{"tools": {"exports_create": {"approval":
  {"reason": "an export leaves the building", "expires_in": "1h"}}}}"#;

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

#[test]
fn a_proxy_without_a_journal_refuses_a_tool_that_needs_approval() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("tools.json");
    std::fs::write(&policy, POLICY).unwrap();
    let out = Command::new(BIN)
        .args(["mcp", "proxy", "--journal", "none", "--tools"])
        .arg(&policy)
        .args(["--", BIN, "tools", "serve", "--mcp"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("tools.exports_create.approval") && stderr.contains("--journal"),
        "{stderr}"
    );
}

#[test]
fn mcp_proxy_http_refuses_to_bind_beyond_loopback_without_a_token() {
    let out = Command::new(BIN)
        .args(["mcp", "proxy", "--http", "--bind", "0.0.0.0", "--port", "0"])
        .args(["--journal", "none", "--", "/nonexistent/mcp-server"])
        .env_remove("RECOURSE_GATEWAY_TOKEN")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("RECOURSE_GATEWAY_TOKEN"), "{said}");

    let out = Command::new(BIN)
        .args(["mcp", "proxy", "--port", "0", "--journal", "none"])
        .args(["--", "/nonexistent/mcp-server"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("--http"), "--port needs --http: {said}");
}

/// With `--http`, the port is taken before any upstream starts: a port in
/// use stops the proxy (exit 2, the address named) without starting a
/// server it would then have to stop.
#[test]
fn mcp_proxy_http_takes_its_port_before_starting_an_upstream() {
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port().to_string();
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started");
    let upstream = format!(
        "touch '{}'; exec '{BIN}' tools serve --mcp --port 0",
        started.display()
    );
    let out = Command::new(BIN)
        .args([
            "mcp",
            "proxy",
            "--http",
            "--port",
            &port,
            "--journal",
            "none",
        ])
        .args(["--", "sh", "-c", &upstream])
        .env_remove("RECOURSE_GATEWAY_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains(&format!("127.0.0.1:{port}")), "{said}");
    assert!(!started.exists(), "the upstream was started: {said}");
}

/// A proxy a client starts with a flag it cannot parse, or a `RECOURSE_*`
/// value it refuses, answers the client's `initialize` with why, as it
/// does a policy file's typo (exit 2 once stdin closes): the client shows
/// that, not "connection closed".
#[test]
fn mcp_proxy_on_stdio_answers_a_flag_or_setting_it_refuses_with_why() {
    use std::io::Write;
    let initialize = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    let answered = |args: &[&str], vars: &[(&str, &str)]| -> String {
        let mut child = Command::new(BIN)
            .args(["mcp", "proxy"])
            .args(args)
            .envs(vars.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        writeln!(child.stdin.take().unwrap(), "{initialize}").unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(answer["id"], 0, "{answer}");
        let said = answer["error"]["message"].as_str().unwrap().to_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(said.lines().next().unwrap()), "{stderr}");
        said
    };
    let said = answered(
        &["--jounral", "none", "--", BIN, "tools", "serve", "--mcp"],
        &[],
    );
    assert!(said.contains("--jounral"), "{said}");
    let said = answered(
        &["--journal", "none", "--", BIN, "tools", "serve", "--mcp"],
        &[("RECOURSE_MAX_RETRIES", "lots")],
    );
    assert!(said.contains("RECOURSE_MAX_RETRIES"), "{said}");
}
