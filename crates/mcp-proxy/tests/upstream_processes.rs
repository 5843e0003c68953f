//! The proxy in this process in front of upstreams that are processes it
//! starts over stdio — the reference tools, served by this test binary
//! started again with [`SERVE_FLAG`] — which die and are started again: a write lost with its upstream is never
//! resent, and a restarted upstream's tools are offered anew. (An approved
//! call is sent by the proxy that holds the upstream, never by a gateway
//! starting a copy of its server: that takes two processes, and is in the
//! CLI's tests, `approvals.rs`.)
//!
//! Hence `harness = false` and the small runner in `main`: libtest would
//! write to the stdout that carries the served protocol.

mod support;

use std::process::{Command, ExitCode};
use std::sync::Arc;

use recourse::journal::{CallState, ListQuery};
use recourse_mcp::McpTarget;
use recourse_mcp_proxy::{ToolPolicies, Upstream};
use recourse_test_support::harness::{self, Test};
use serde_json::json;
use support::tools::{SERVE_FLAG, serve_stdio, stdio_command};
use support::{
    CALL_META, FAILURE_META, WAIT, Warnings, builder, export, exports, journal_in, names, ok,
    scripted, served, wait_for,
};

const TESTS: [(&str, Test); 2] = [
    (
        "mcp_proxy_restarts_a_dead_upstream_and_never_resends_the_write_it_was_running",
        || {
            Box::pin(
                mcp_proxy_restarts_a_dead_upstream_and_never_resends_the_write_it_was_running(),
            )
        },
    ),
    (
        "mcp_proxy_offers_what_a_restarted_upstream_lists_and_warns_of_a_policy_left_unused",
        || {
            Box::pin(
                mcp_proxy_offers_what_a_restarted_upstream_lists_and_warns_of_a_policy_left_unused(
                ),
            )
        },
    ),
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(SERVE_FLAG) {
        serve_stdio(&args[1..]);
        return ExitCode::SUCCESS;
    }
    harness::run(&TESTS, &args)
}

/// `sh -c SCRIPT ARGS…` as an upstream (`$0` is the first of `args`).
fn shell(script: &str, args: &[String]) -> Upstream {
    let mut words = vec!["-c".to_owned(), script.to_owned()];
    words.extend(args.iter().cloned());
    Upstream::unnamed(McpTarget::Command {
        program: "sh".to_owned(),
        args: words,
        pass_env: Vec::new(),
        env: recourse_mcp::ChildEnv::Cleared,
    })
}

/// Words quoted for `sh`.
fn quoted(words: &[String]) -> String {
    words
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', r"'\''")))
        .collect::<Vec<_>>()
        .join(" ")
}

async fn mcp_proxy_restarts_a_dead_upstream_and_never_resends_the_write_it_was_running() {
    let dir = tempfile::tempdir().unwrap();
    let (pids, log) = (dir.path().join("pids"), dir.path().join("stderr"));
    // The first upstream process hangs in the export; later ones are healthy.
    let hanging = quoted(&stdio_command(&[
        "--fault",
        "exports:slow",
        "--slow-ms",
        "600000",
    ]));
    let healthy = quoted(&stdio_command(&[]));
    let script = format!(
        r#"echo $$ >> "$0"; if [ "$(wc -l < "$0")" -eq 1 ]; then exec {hanging} 2>>"$1"; else exec {healthy} 2>>"$1"; fi"#
    );
    let journal = journal_in(dir.path()).await;
    let upstream = shell(
        &script,
        &[pids.display().to_string(), log.display().to_string()],
    );
    let proxy = builder()
        .upstream(upstream)
        .with_journal(Arc::clone(&journal));
    let (proxied, _front) = served(proxy).await;
    let proxied = Arc::new(proxied);
    proxied.listed_tools(WAIT).await.unwrap();

    let calling = Arc::clone(&proxied);
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
    let entries = journal.list(&ListQuery::default()).await.unwrap();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0].state, CallState::Unknown, "{entries:?}");
    assert_eq!(entries[0].call_id, failure["correlationId"]);
}

async fn mcp_proxy_offers_what_a_restarted_upstream_lists_and_warns_of_a_policy_left_unused() {
    let dir = tempfile::tempdir().unwrap();
    let starts = dir.path().join("starts");
    // The first upstream is the scripted one (its first write kills it);
    // started again, it is the reference tools, which have no `read`.
    let first = quoted(&scripted("drop", &dir.path().join("upstream.log")));
    let then = quoted(&stdio_command(&[]));
    let script = format!(
        r#"echo x >> "$0"; if [ "$(wc -l < "$0")" -eq 1 ]; then exec {first}; else exec {then}; fi"#
    );
    let warnings = Warnings::default();
    let proxy = warnings
        .on(builder())
        .upstream(shell(&script, &[starts.display().to_string()]))
        .with_policies(
            ToolPolicies::from_json(br#"{"tools": {"read": {"idempotent": true}}}"#).unwrap(),
        )
        .with_journal(journal_in(dir.path()).await);
    let (proxied, _front) = served(proxy).await;
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
    warnings.wait_for("which no upstream offers").await;
    let warned = warnings.text();
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
