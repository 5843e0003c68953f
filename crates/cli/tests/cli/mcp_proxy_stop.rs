//! `recourse mcp proxy` on stdio stopped as MCP clients and terminals stop
//! it — SIGTERM, SIGINT, its stdin closed — while a write is in flight: the
//! write finishes, its answer reaches the client and the journal holds it,
//! the upstream's stdin is closed so that it exits by itself, cleanly, and
//! the proxy exits 0.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::mcp_proxy_orphans::listed;
use crate::mcp_stdio_proxy::StdioProxy;

const BIN: &str = env!("CARGO_BIN_EXE_recourse");
const WAIT: Duration = Duration::from_secs(60);
/// How long the upstream's export takes: the write is in flight meanwhile.
const SLOW_MS: &str = "3000";

/// The proxy's arguments: its journal in `dir`, in front of the reference
/// tools over stdio, whose exit code the shell writes to `dir/upstream-exit`.
fn proxy_args(dir: &Path) -> Vec<String> {
    let exit = dir.join("upstream-exit");
    let upstream = format!(
        "'{BIN}' tools serve --mcp --port 0 --fault exports:slow --slow-ms {SLOW_MS}; \
         echo $? > '{}'",
        exit.display()
    );
    let journal = dir.join("proxy.db").display().to_string();
    [
        "mcp",
        "proxy",
        "--journal",
        &journal,
        "--",
        "sh",
        "-c",
        &upstream,
    ]
    .map(str::to_owned)
    .to_vec()
}

/// Sends an export and waits until the journal shows it sent and not
/// finished: a write in flight.
fn write_in_flight(proxy: &mut StdioProxy, dir: &Path) {
    proxy.send(&json!({"jsonrpc": "2.0", "id": "w", "method": "tools/call",
        "params": {"name": "exports_create",
                   "arguments": {"source_id": "sales-2024", "format": "pdf"}}}));
    let started = Instant::now();
    loop {
        let calls = listed(dir);
        if let [call] = calls.as_slice()
            && call["attempts"].as_u64() >= Some(1)
        {
            assert_eq!(call["state"], "in_flight", "{call}");
            return;
        }
        assert!(
            started.elapsed() < WAIT,
            "the write was never sent: {calls:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// After `stop`: the write answered and journaled, the upstream's exit
/// clean, the proxy's exit 0.
fn stopped_well(stop: impl FnOnce(&StdioProxy)) {
    let dir = tempfile::tempdir().unwrap();
    let mut proxy = StdioProxy::start(&proxy_args(dir.path()));
    write_in_flight(&mut proxy, dir.path());

    stop(&proxy);
    let answer = proxy.answer(&json!("w"));
    let result = &answer["result"];
    assert_eq!(result["isError"], false, "{answer}");
    assert_eq!(
        result["_meta"]["recourse/call"]["outcome"], "succeeded",
        "{answer}"
    );
    let status = proxy.exited(WAIT);
    assert_eq!(status.code(), Some(0), "{status:?}");

    let calls = listed(dir.path());
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["state"], "succeeded", "{calls:?}");
    let exit = std::fs::read_to_string(dir.path().join("upstream-exit")).unwrap_or_default();
    assert_eq!(exit.trim(), "0", "the upstream exited by itself, cleanly");
}

#[test]
fn sigterm_mid_write_finishes_and_journals_it_closes_the_upstream_and_exits_0() {
    stopped_well(|proxy| proxy.signal("TERM"));
}

#[test]
fn sigint_mid_write_finishes_and_journals_it_closes_the_upstream_and_exits_0() {
    stopped_well(|proxy| proxy.signal("INT"));
}

/// Ctrl-C at a terminal: SIGINT to the proxy's whole process group. Its
/// upstream, in a group of its own, is not killed mid-write: the proxy
/// closes its stdin once the write is done.
#[test]
fn ctrl_c_at_a_terminal_mid_write_finishes_it_and_the_upstream_exits_by_itself() {
    stopped_well(|proxy| proxy.signal_group("INT"));
}

/// The client closes stdin mid-write (what the SDKs do first): the write
/// still finishes and is journaled, and the proxy exits 0.
#[test]
fn stdin_closed_mid_write_finishes_and_journals_it_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let mut proxy = StdioProxy::start(&proxy_args(dir.path()));
    write_in_flight(&mut proxy, dir.path());

    proxy.close_stdin();
    let status = proxy.exited(WAIT);
    assert_eq!(status.code(), Some(0), "{status:?}");
    let calls = listed(dir.path());
    assert_eq!(calls[0]["state"], "succeeded", "{calls:?}");
    let exit = std::fs::read_to_string(dir.path().join("upstream-exit")).unwrap_or_default();
    assert_eq!(exit.trim(), "0", "the upstream exited by itself, cleanly");
}

/// SIGTERM to a proxy in front of `@modelcontextprotocol/server-filesystem`
/// just after a write: the server, its stdin closed rather than its pipe
/// cut, exits without the `EPIPE` stack trace it printed when the proxy
/// died under it, and the proxy exits 0.
#[test]
fn sigterm_in_front_of_the_filesystem_server_ends_it_without_an_epipe() {
    let Some(line) = recourse_test_support::service_var("RECOURSE_TEST_MCP_FILESYSTEM_CMD") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("files");
    std::fs::create_dir(&root).unwrap();
    let root = root.canonicalize().unwrap().display().to_string();
    let journal = dir.path().join("proxy.db").display().to_string();
    let mut args: Vec<String> = ["mcp", "proxy", "--journal", &journal, "--"]
        .map(str::to_owned)
        .to_vec();
    args.extend(shell_words(&line));
    args.push(root.clone());
    let stderr = dir.path().join("stderr");
    let mut proxy = StdioProxy::start_with_stderr(&args, std::fs::File::create(&stderr).unwrap());
    let note = format!("{root}/note.txt");
    let written = proxy.request(
        "tools/call",
        json!({"name": "write_file", "arguments": {"path": note, "content": "kept"}}),
    );
    assert_ne!(written["isError"], true, "{written}");

    proxy.signal("TERM");
    let status = proxy.exited(WAIT);
    assert_eq!(status.code(), Some(0), "{status:?}");
    let said = std::fs::read_to_string(&stderr).unwrap();
    assert!(!said.contains("EPIPE") && !said.contains("Error"), "{said}");
    assert_eq!(std::fs::read_to_string(&note).unwrap(), "kept");
}

/// `line` split as a shell splits words (single quotes only, as the
/// variables `.ci/run` sets use them).
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                word.get_or_insert_with(String::new);
            }
            c if c.is_whitespace() && !quoted => words.extend(word.take()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    words
}
