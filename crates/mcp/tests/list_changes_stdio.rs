//! A server's list changes, as [`McpTransport::list_changes`] passes them
//! on: from a scripted server over stdio (`tests/support/changing_server.rs`)
//! whose `grow` tool adds a tool and announces it — on the session up to
//! 2025-11-25, on a `subscriptions/listen` stream the transport opened from
//! 2026-07-28 — and from a server started again that lists other tools.
//!
//! The server is this test binary itself, started again with
//! [`SERVE_FLAG`]; hence `harness = false` (see `signals_stdio.rs`).

mod support;

use std::collections::HashSet;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use recourse_mcp::{ListChange, McpTarget, McpTransport};
use recourse_test_support::harness::{self, Test};
use serde_json::json;
use support::changing_server::{self, SERVE_FLAG};
use support::{FreshDir, fresh_dir};
use tokio::sync::broadcast::Receiver;

const WAIT: Duration = Duration::from_secs(20);

const TESTS: [(&str, Test); 3] = [
    (
        "a_session_up_to_2025_passes_a_change_on_once_listed_again",
        || Box::pin(a_session_up_to_2025_passes_a_change_on_once_listed_again()),
    ),
    (
        "a_2026_session_hears_changes_on_the_stream_it_opened",
        || Box::pin(a_2026_session_hears_changes_on_the_stream_it_opened()),
    ),
    (
        "a_server_started_again_with_other_tools_is_a_tools_change",
        || Box::pin(a_server_started_again_with_other_tools_is_a_tools_change()),
    ),
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(SERVE_FLAG) {
        let dir = Path::new(args.get(1).expect("a directory"));
        changing_server::serve(dir, args.get(2).expect("a protocol version"));
        return ExitCode::SUCCESS;
    }
    harness::run(&TESTS, &args)
}

/// The changing server (this binary) answering `initialize` with `version`.
fn changing(version: &str) -> (McpTransport, FreshDir) {
    let dir = fresh_dir("changes");
    let exe = std::env::current_exe().expect("the test binary's path");
    let target = McpTarget::Command {
        program: exe.display().to_string(),
        args: vec![
            SERVE_FLAG.to_owned(),
            dir.0.display().to_string(),
            version.to_owned(),
        ],
        pass_env: Vec::new(),
    };
    (McpTransport::new(target), dir)
}

async fn names(transport: &McpTransport) -> Vec<String> {
    let tools = transport.tools().await.expect("the server lists its tools");
    tools.into_iter().map(|t| t.name).collect()
}

async fn next(changes: &mut Receiver<ListChange>) -> ListChange {
    tokio::time::timeout(WAIT, changes.recv())
        .await
        .expect("a change within the wait")
        .expect("the transport is there")
}

/// Calls `grow`, then hears of both changes: the tools already listed again.
async fn grow_and_hear(transport: &McpTransport) {
    let mut changes = transport.list_changes();
    assert_eq!(names(transport).await, ["grow", "die"]);
    let params = json!({"name": "grow", "arguments": {}});
    let grown = transport.forward("tools/call", Some(params), WAIT).await;
    assert!(matches!(grown, Ok(Ok(_))), "{grown:?}");
    // Each once at least (a 2026 session may also hear the tools change by
    // reading them again after its stream opened).
    let mut heard = HashSet::new();
    while heard.len() < 2 {
        heard.insert(next(&mut changes).await);
    }
    assert_eq!(
        heard,
        HashSet::from([ListChange::Prompts, ListChange::Tools])
    );
    assert_eq!(names(transport).await, ["grow", "die", "grown"]);
    let listed = transport.listed_tools(WAIT).await.unwrap();
    assert_eq!(listed.len(), 3, "{listed:?}");
}

async fn a_session_up_to_2025_passes_a_change_on_once_listed_again() {
    let (transport, dir) = changing("2025-11-25");
    grow_and_hear(&transport).await;
    assert!(
        !dir.0.join("listen").exists(),
        "no stream before 2026-07-28"
    );
    assert_eq!(transport.sessions_started(), 1);
}

async fn a_2026_session_hears_changes_on_the_stream_it_opened() {
    let (transport, dir) = changing("2026-07-28");
    // The stream opens in the background once the session started.
    transport.tools().await.unwrap();
    for _ in 0..200 {
        if dir.0.join("listen").exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let asked = std::fs::read_to_string(dir.0.join("listen")).expect("a stream was opened");
    let asked: serde_json::Value = serde_json::from_str(&asked).unwrap();
    assert_eq!(
        asked,
        json!({"toolsListChanged": true, "promptsListChanged": true})
    );
    grow_and_hear(&transport).await;
}

async fn a_server_started_again_with_other_tools_is_a_tools_change() {
    let (transport, dir) = changing("2025-11-25");
    assert_eq!(names(&transport).await, ["grow", "die"]);
    let mut changes = transport.list_changes();
    let died = transport
        .forward("tools/call", Some(json!({"name": "die"})), WAIT)
        .await;
    assert!(died.is_err(), "{died:?}");
    std::fs::write(dir.0.join("grown"), "").unwrap();
    // A request once the session is seen gone starts the server again, and
    // it lists `grown` too.
    for _ in 0..200 {
        if names(&transport).await.len() == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(names(&transport).await, ["grow", "die", "grown"]);
    assert_eq!(transport.sessions_started(), 2);
    assert_eq!(next(&mut changes).await, ListChange::Tools);
}
