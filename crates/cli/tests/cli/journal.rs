//! `recourse journal`: where it reads, what it shows, and what it settles —
//! the user's default journals when none is named (and never a file it was
//! only asked to read), one call whole with `show`, a list that names each
//! call's tool and arguments, a settlement that says who settled it, and a
//! lookup template kept with its placeholder.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use recourse_test_support::{KeyLookup, tools};
use serde_json::Value;

/// `recourse ARGS` with the environment `env` adds and no `RECOURSE_*` of
/// the test's own, run off the async runtime.
async fn recourse(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_recourse"));
    command.args(args).env_remove("RECOURSE_JOURNAL");
    for (name, value) in env {
        command.env(name, value);
    }
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// An export of `format` whose answer is lost and whose lookup (`template`)
/// is down: the call is `unknown` in `journal`, its template stored for later.
async fn an_unknown_export(tools_url: &str, format: &str, template: &str, journal: &Path) -> Value {
    let payload = format!(r#"{{"source_id":"sales-2024","format":"{format}"}}"#);
    let out = recourse(
        &[
            "call",
            &format!("{tools_url}/api/exports"),
            "--payload",
            &payload,
            "--non-idempotent",
            "--reconcile",
            template,
            "--journal",
            journal.to_str().unwrap(),
            "--json",
        ],
        &[],
    )
    .await;
    let record = stdout_json(&out);
    assert_eq!(record["outcome"], "unknown", "{record}");
    record
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_looks_up_through_a_placeholder_under_a_credential_name() {
    let t = tools(&["exports:crash_after_commit:1.0"], Duration::ZERO).await;
    let lookup = KeyLookup::start(&t).await;
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.db");
    an_unknown_export(&t.base_url(), "pdf", &lookup.template, &journal).await;

    lookup.switch_on();
    let path = journal.to_str().unwrap();
    let out = recourse(&["journal", "--journal", path, "reconcile", "--json"], &[]).await;
    let settled = stdout_json(&out);
    assert_eq!(out.status.code(), Some(0), "{settled}");
    assert_eq!(settled[0]["state"], "succeeded", "{settled}");
    assert_eq!(t.exports_committed(), 1, "looked up, never resent");
}

/// A call of `target` with `payload`, left `unknown` in the journal at `path`
/// (created), as a process that stopped mid-write leaves one.
async fn an_unknown_call(path: &Path, id: &str, target: &str, payload: Value) {
    use recourse::Journal;
    let journal = recourse::journal::SqliteJournal::open(path).unwrap();
    let call = recourse::journal::NewCall {
        call_id: id.to_owned(),
        target: target.to_owned(),
        capability: None,
        idempotency_key: Some(format!("key-{id}")),
        reconcile: None,
        verification: None,
        payload,
        owner: "a-process-that-stopped".to_owned(),
        lease: Duration::ZERO,
        caller: None,
    };
    journal.begin_call(&call).await.unwrap();
    journal.begin_attempt(id, 1, None).await.unwrap();
    journal
        .finish_call(id, recourse::journal::CallState::Unknown, None, None)
        .await
        .unwrap();
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_journal_named_it_reads_the_users_defaults_and_creates_nothing() {
    let state = tempfile::tempdir().unwrap();
    let here = tempfile::tempdir().unwrap();
    let xdg = state.path().to_str().unwrap();
    let in_here = |args: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_recourse"));
        command
            .args(args)
            .current_dir(here.path())
            .env("XDG_STATE_HOME", xdg)
            .env_remove("RECOURSE_JOURNAL");
        command.output().unwrap()
    };

    // Nothing journaled yet: no calls, both places named, nothing created anywhere.
    for args in [
        &["journal", "list"][..],
        &["journal", "list", "--json"],
        &["journal", "reconcile"],
        &["journal", "prune"],
        &["journal", "--journal", "named.db", "list"],
    ] {
        let out = in_here(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        if !args.contains(&"--journal") {
            for default in ["recourse/mcp-proxy.db", "recourse/gateway.db"] {
                assert!(
                    stderr.contains(default),
                    "{args:?} names {default}: {stderr}"
                );
            }
        }
    }
    let out = in_here(&["journal", "show", "c-none"]);
    assert_eq!(out.status.code(), Some(1), "CALL_NOT_FOUND");
    assert!(
        names_in(here.path()).is_empty(),
        "{:?}",
        names_in(here.path())
    );
    assert!(
        names_in(state.path()).is_empty(),
        "{:?}",
        names_in(state.path())
    );

    // The proxy's call (a tool) and the gateway's (a URL), each in its default journal.
    let dir = state.path().join("recourse");
    std::fs::create_dir_all(&dir).unwrap();
    let write = serde_json::json!({"path": "/tmp/r.txt", "content": "hello", "token": "s3cret"});
    an_unknown_call(&dir.join("mcp-proxy.db"), "c-proxy", "write_file", write).await;
    let export = serde_json::json!({"source_id": "sales-2024", "format": "pdf"});
    let url = "http://127.0.0.1:9/api/exports";
    an_unknown_call(&dir.join("gateway.db"), "c-gateway", url, export).await;

    let out = in_here(&["journal", "list"]);
    let (text, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        stderr.contains("reading the MCP proxy's journal"),
        "{stderr}"
    );
    assert!(stderr.contains("and the gateway's journal"), "{stderr}");
    assert!(
        text.contains(
            r#"tool write_file  {"path":"/tmp/r.txt","content":"hello","token":"[REDACTED]"}"#
        ),
        "{text}"
    );
    assert!(
        text.contains(
            r#"url http://127.0.0.1:9/api/exports  {"source_id":"sales-2024","format":"pdf"}"#
        ),
        "{text}"
    );
    assert!(!text.contains("s3cret"), "{text}");
    for id in ["c-proxy", "c-gateway"] {
        let out = in_here(&["journal", "show", id, "--json"]);
        assert_eq!(out.status.code(), Some(0), "{id}");
        let shown = stdout_json(&out);
        assert_eq!(shown["state"], "unknown", "{shown}");
        assert_eq!(shown["call"]["call_id"], id, "{shown}");
    }
    assert!(
        names_in(here.path()).is_empty(),
        "{:?}",
        names_in(here.path())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settle_without_by_or_user_refuses_and_records_nobody() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    an_unknown_call(&path, "c-1", "write_file", serde_json::json!({})).await;
    let j = path.to_str().unwrap();
    let settle = ["journal", "--journal", j, "settle", "c-1"];
    let found = ["--state", "succeeded", "--note", "seen in the tool"];
    let args: Vec<&str> = settle.iter().chain(&found).copied().collect();

    for user in [None, Some(""), Some("  ")] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_recourse"));
        command.args(&args).env_remove("RECOURSE_JOURNAL");
        match user {
            Some(value) => command.env("USER", value),
            None => command.env_remove("USER"),
        };
        let out = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "USER={user:?}: {stderr}");
        assert!(stderr.contains("--by"), "{stderr}");
    }
    let shown =
        stdout_json(&recourse(&["journal", "--journal", j, "show", "c-1", "--json"], &[]).await);
    assert_eq!(shown["state"], "unknown", "nothing settled: {shown}");

    let by: Vec<&str> = args
        .iter()
        .copied()
        .chain(["--by", "dana", "--json"])
        .collect();
    let out = recourse(&by, &[]).await;
    let settled = stdout_json(&out);
    assert_eq!(settled["record"]["settlement"]["who"], "dana", "{settled}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_prints_a_corrected_looked_up_and_settled_call_whole() {
    let t = tools(&["exports:crash_after_commit:1.0"], Duration::ZERO).await;
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.db");
    let dead_lookup = "http://127.0.0.1:9/exports/{operation_id}";
    let record = an_unknown_export(&t.base_url(), "pdff", dead_lookup, &journal).await;
    let id = record["call_id"].as_str().unwrap();
    let j = journal.to_str().unwrap();
    let note = "the export is in the tool's console";
    let by = [
        "journal",
        "--journal",
        j,
        "settle",
        id,
        "--state",
        "succeeded",
    ];
    let by: Vec<&str> = by
        .iter()
        .copied()
        .chain(["--note", note, "--by", "dana"])
        .collect();
    assert_eq!(recourse(&by, &[]).await.status.code(), Some(0));

    let out = recourse(&["journal", "--journal", j, "show", id], &[]).await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    for shown in [
        format!("call {id}  succeeded"),
        r#"request {"source_id":"sales-2024","format":"pdff"}"#.to_owned(),
        "← HTTP 400 INPUT_ERROR UNSUPPORTED_FORMAT".to_owned(),
        r#"· correction by repair: fixed"#.to_owned(),
        r#"→ attempt 2 (repair) {"source_id":"sales-2024","format":"pdf"}"#.to_owned(),
        r#"changed /format: "pdff" → "pdf""#.to_owned(),
        "⇒ reconcile".to_owned(),
        "· lookup: cannot_tell".to_owned(),
        "settled by person (dana) at ".to_owned(),
        format!(": {note}"),
        "next use_result".to_owned(),
    ] {
        assert!(text.contains(&shown), "{shown:?} in\n{text}");
    }
    let json =
        stdout_json(&recourse(&["journal", "--journal", j, "show", id, "--json"], &[]).await);
    assert_eq!(
        json["record"]["attempts"].as_array().unwrap().len(),
        2,
        "{json}"
    );
    assert_eq!(json["record"]["settlement"]["who"], "dana");
    assert_eq!(json["payload"]["format"], "pdff");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_and_the_proxy_say_where_they_journal_and_journal_reads_it() {
    let state = tempfile::tempdir().unwrap();
    let xdg = state.path().to_str().unwrap();
    let gateway_db = format!("{xdg}/recourse/gateway.db");
    let gw = crate::support::Gateway::spawn()
        .state(state.path())
        .keep_stderr()
        .start();
    let started = std::time::Instant::now();
    while !gw.stderr().contains(&format!("journal: {gateway_db}")) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{}",
            gw.stderr()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // (A keyed read: journaled as its key's call; a write to a port nobody
    // serves would be refused before it runs, its manifest unreadable.)
    let body = serde_json::json!({"url": "http://127.0.0.1:9/api/exports", "method": "GET",
                                  "payload": {}, "idempotency_key": "k-said"});
    let (status, record) = gw.post(&body).await;
    assert_eq!(status, 200, "{record}");
    let listed =
        stdout_json(&recourse(&["journal", "list", "--json"], &[("XDG_STATE_HOME", xdg)]).await);
    assert_eq!(listed[0]["call_id"], record["call_id"], "{listed}");
    gw.kill();

    let bin = env!("CARGO_BIN_EXE_recourse");
    let proxy = ["mcp", "proxy", "--", bin, "tools", "serve", "--mcp"];
    let out = recourse(&proxy, &[("XDG_STATE_HOME", xdg)]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("journal {xdg}/recourse/mcp-proxy.db")),
        "{stderr}"
    );
}
