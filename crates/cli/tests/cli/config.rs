//! Every command checks its configuration the same way before printing
//! anything, and every command that prints ends quietly when its reader
//! closes standard output.

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};

fn recourse(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_recourse"))
        .args(args)
        .env_remove("RECOURSE_JOURNAL")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// A port nobody listens on.
fn closed_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://{}/api/x", listener.local_addr().unwrap())
}

/// One invocation of every command (each would print or serve if it ran).
fn every_command(dir: &std::path::Path) -> Vec<Vec<String>> {
    let db = dir.join("j.db").display().to_string();
    let plan = dir.join("plan.json");
    std::fs::write(
        &plan,
        format!(
            r#"{{"plan_id": "p", "steps": [{{"step_id": "a", "url": "{}"}}]}}"#,
            closed_url()
        ),
    )
    .unwrap();
    let url = closed_url();
    [
        vec!["demo"],
        vec![
            "eval",
            "--k",
            "1",
            "--model",
            "scripted",
            "--scenario",
            "control_*",
        ],
        vec!["explain", "--status", "503"],
        vec!["call", &url, "--payload", "{}"],
        vec!["serve", "--port", "0"],
        vec!["journal", "--journal", &db, "list"],
        vec!["journal", "--journal", &db, "reconcile"],
        vec!["run", &plan.display().to_string()],
        vec!["tools", "serve", "--port", "0"],
    ]
    .into_iter()
    .map(|args| args.into_iter().map(str::to_owned).collect())
    .collect()
}

fn assert_refused(out: &Output, what: &str, named: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
    assert!(
        out.stdout.is_empty(),
        "{what} printed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(stderr.contains(named), "{what} must name {named}: {stderr}");
}

#[test]
fn every_command_refuses_a_bad_setting_before_any_output() {
    let dir = tempdir();
    for (name, value) in [
        ("RECOURSE_MAX_RETRIES", "lots"),
        ("RECOURSE_AI_CORRECTION", "maybe"),
        ("RECOURSE_JOURNAL", ""),
        ("RECOURSE_LLM_BASE_URL", "ftp://127.0.0.1/v1"),
        ("RECOURSE_GATEWAY_TOKEN", " "),
    ] {
        for args in every_command(&dir) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = recourse(&args, &[(name, value)]);
            assert_refused(&out, &format!("{name}={value:?} recourse {args:?}"), name);
        }
    }
}

#[test]
fn empty_paths_are_refused() {
    let url = closed_url();
    for args in [
        vec!["call", &url, "--payload", "{}", "--journal", ""],
        vec!["call", &url, "--payload", "{}", "--schema", ""],
        vec!["call", &url, "--payload", "@"],
        vec!["journal", "--journal", "", "list"],
        vec!["journal", "list", "--journal", " "],
        vec!["eval", "--suite", ""],
        vec!["eval", "--html", "", "--scenario", "none-such"],
        vec!["run", ""],
    ] {
        let out = recourse(&args, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(
            stderr.contains("empty") || stderr.contains("file name"),
            "{args:?}: {stderr}"
        );
    }
}

/// A fresh directory under the target dir, removed by nobody (small).
fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("recourse-config-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `args` with stdout a pipe whose reader is already closed.
fn with_closed_stdout(args: &[&str], env: &[(&str, &str)]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    Command::new(env!("CARGO_BIN_EXE_recourse"))
        .args(args)
        .env_remove("RECOURSE_JOURNAL")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn a_closed_stdout_ends_every_printing_command_quietly() {
    let dir = tempdir();
    let db = dir.join("j.db").display().to_string();
    let url = closed_url();
    for args in [
        vec!["journal", "--journal", &db, "list"],
        vec!["journal", "--journal", &db, "list", "--json"],
        vec!["journal", "--journal", &db, "reconcile"],
        vec!["explain", "--status", "503"],
        vec!["explain", "--status", "503", "--json"],
        vec!["call", &url, "--payload", "{}", "--max-retries", "0"],
        vec![
            "call",
            &url,
            "--payload",
            "{}",
            "--max-retries",
            "0",
            "--json",
        ],
        vec![
            "eval",
            "--k",
            "1",
            "--model",
            "scripted",
            "--scenario",
            "control_*",
        ],
        vec!["serve", "--port", "0", "--journal", "none"],
        vec!["tools", "serve", "--port", "0"],
    ] {
        let out = with_closed_stdout(&args, &[("RECOURSE_BACKOFF_MS", "0")]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(!stderr.contains("Broken pipe"), "{args:?}: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn journal_list_piped_into_head_stops_quietly() {
    // Enough calls that the listing outgrows the pipe's buffer, so the
    // command is still writing when its reader goes.
    let dir = tempdir();
    let db = dir.join("many.db").display().to_string();
    let journal = recourse::journal::open_journal(&db).await.unwrap();
    for i in 0..2000 {
        let call = recourse::journal::NewCall {
            call_id: format!("call-{i:05}"),
            target: "http://127.0.0.1:9/api/orders/refund".to_owned(),
            capability: None,
            idempotency_key: Some(format!("key-{i:05}-0123456789abcdef")),
            reconcile: None,
            verification: None,
            payload: serde_json::json!({}),
            owner: "test".to_owned(),
            lease: std::time::Duration::from_secs(1),
            caller: None,
        };
        journal.begin_call(&call).await.unwrap();
    }
    drop(journal);
    let (reader, writer) = std::io::pipe().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_recourse"))
        .args(["journal", "--journal", &db, "list"])
        .env_remove("RECOURSE_JOURNAL")
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(reader).read_line(&mut first).unwrap();
    assert!(first.contains("call-"), "{first}");
    // The reader is dropped here, as `head -1` exits after its line.
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.is_empty(), "quietly: {stderr}");
}

#[test]
fn a_port_in_use_is_reported_once_with_its_cause() {
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port().to_string();
    for args in [
        vec!["tools", "serve", "--port", &port],
        vec!["serve", "--port", &port, "--journal", "none"],
    ] {
        let out = recourse(&args, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{args:?}");
        assert_eq!(
            stderr.matches("in use").count(),
            1,
            "{args:?}: the cause once: {stderr}"
        );
        assert!(stderr.contains(&port), "{args:?}: {stderr}");
    }
}

#[test]
fn usage_messages_name_every_alternative() {
    let explain = recourse(&["explain"], &[]);
    let stderr = String::from_utf8_lossy(&explain.stderr);
    assert_eq!(explain.status.code(), Some(2));
    assert!(
        stderr.contains("--status") && stderr.contains("--transport"),
        "{stderr}"
    );
    let call = recourse(&["call", "--payload", "{}"], &[]);
    let stderr = String::from_utf8_lossy(&call.stderr);
    assert_eq!(call.status.code(), Some(2));
    for alternative in ["URL", "--mcp-command", "--mcp-url"] {
        assert!(stderr.contains(alternative), "{alternative}: {stderr}");
    }
}

#[test]
fn a_journal_urls_password_never_reaches_the_terminal() {
    // Nothing listens on port 1: opening the journal fails, and says where.
    let location = "postgres://recourse:Hunter2Hunter2@127.0.0.1:1/journal";
    for args in [
        vec!["serve", "--port", "0", "--journal", location],
        vec!["journal", "--journal", location, "list"],
    ] {
        let out = recourse(&args, &[]);
        assert!(!out.status.success(), "{args:?}");
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(said.contains("127.0.0.1:1"), "{args:?}: {said}");
        assert!(!said.contains("Hunter2Hunter2"), "{args:?}: {said}");
    }
}

#[test]
fn durations_are_checked_and_journal_prune_removes_finished_calls() {
    let dir = tempdir();
    let journal = dir.join("j.db").display().to_string();
    for args in [
        vec!["serve", "--port", "0", "--journal-retain", "7", "--check"],
        vec![
            "journal",
            "--journal",
            &journal,
            "prune",
            "--older-than",
            "1 week",
        ],
    ] {
        let out = recourse(&args, &[]);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.contains("integer with s, m, h or d"),
            "{args:?}: {said}"
        );
    }
    let ok = recourse(
        &["serve", "--port", "0", "--journal-retain", "0", "--check"],
        &[],
    );
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let pruned = recourse(
        &[
            "journal",
            "--journal",
            &journal,
            "prune",
            "--older-than",
            "0",
            "--json",
        ],
        &[],
    );
    assert_eq!(
        pruned.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&pruned.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&pruned.stdout).trim(),
        r#"{"removed":0}"#
    );
}

#[cfg(unix)]
#[test]
fn a_tokens_file_is_checked_before_the_gateway_starts() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempdir();
    let path = dir.join("tokens.json");
    let file = path.display().to_string();
    let write = |text: &str, mode: u32| {
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    let good = r#"{"callers": [{"name": "ops", "token": "ops-token-0123456789", "admin": true}]}"#;
    for (text, mode, says) in [
        (good, 0o644, "chmod 600"),
        (
            r#"{"callers": [{"name": "ops", "token": "ops-token-0123456789", "role": "admin"}]}"#,
            0o600,
            "role",
        ),
        (
            r#"{"callers": [{"name": "a", "token": "a-token-0123456789"}, {"name": "a", "token": "b-token-0123456789"}]}"#,
            0o600,
            "named twice",
        ),
    ] {
        write(text, mode);
        let out = recourse(&["serve", "--port", "0", "--tokens", &file, "--check"], &[]);
        let said = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{text}: {said}");
        assert!(said.contains(says), "{text}: {said}");
        assert!(!said.contains("ops-token-0123456789"), "{said}");
        assert!(out.stdout.is_empty());
    }
    // Beyond loopback, a token of 20 characters is refused; the file is
    // read where the variable names it too.
    write(good, 0o600);
    let short = recourse(
        &["serve", "--port", "0", "--bind", "0.0.0.0", "--check"],
        &[("RECOURSE_GATEWAY_TOKENS", &file)],
    );
    let said = String::from_utf8_lossy(&short.stderr);
    assert_eq!(short.status.code(), Some(2), "{said}");
    assert!(
        said.contains("at least 32") && said.contains("has 20"),
        "{said}"
    );
    assert!(!said.contains("ops-token-0123456789"), "{said}");
    // A file others may write is refused whatever it holds.
    write(good, 0o622);
    let writable = recourse(&["serve", "--port", "0", "--tokens", &file, "--check"], &[]);
    let said = String::from_utf8_lossy(&writable.stderr);
    assert!(said.contains("may write"), "{said}");
    // Named by the variable, the file is a token: a gateway beyond loopback may start.
    let long = r#"{"callers": [{"name": "ops", "token": "ops-token-0123456789-0123456789-0123", "admin": true}]}"#;
    write(long, 0o600);
    let ok = recourse(
        &["serve", "--port", "0", "--bind", "0.0.0.0", "--check"],
        &[("RECOURSE_GATEWAY_TOKENS", &file)],
    );
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
}

#[tokio::test]
async fn journal_settle_records_a_persons_finding_once() {
    let dir = tempdir();
    let db = dir.join("settle.db").display().to_string();
    let journal = recourse::journal::open_journal(&db).await.unwrap();
    let call = recourse::journal::NewCall {
        call_id: "call-open".to_owned(),
        target: "http://127.0.0.1:9/api/exports".to_owned(),
        capability: None,
        idempotency_key: Some("key-open-0123456789".to_owned()),
        reconcile: None,
        verification: None,
        payload: serde_json::json!({"source_id": "sales-2024"}),
        owner: "test".to_owned(),
        lease: std::time::Duration::ZERO,
        caller: None,
    };
    journal.begin_call(&call).await.unwrap();
    journal
        .finish_call(
            "call-open",
            recourse::journal::CallState::Unknown,
            None,
            None,
        )
        .await
        .unwrap();
    drop(journal);
    let settle = |id: &str| {
        recourse(
            &[
                "journal",
                "--journal",
                &db,
                "settle",
                id,
                "--state",
                "failed",
                "--note",
                "the tool's owner says no export ran",
                "--by",
                "dana",
                "--json",
            ],
            &[],
        )
    };
    let out = settle("call-open");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let settled: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(settled["state"], "failed");
    assert_eq!(settled["record"]["settlement"]["by"], "person");
    assert_eq!(settled["record"]["settlement"]["who"], "dana");
    let again = settle("call-open");
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("CALL_NOT_SETTLEABLE"));
    let absent = settle("call-never-was");
    assert_eq!(absent.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&absent.stderr).contains("CALL_NOT_FOUND"));
}
