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

/// An export whose answer is lost and whose lookup (`?key={key}`) is down:
/// the call is `unknown` in `journal`, its template stored for later.
async fn an_unknown_export(tools_url: &str, template: &str, journal: &Path) -> Value {
    let out = recourse(
        &[
            "call",
            &format!("{tools_url}/api/exports"),
            "--payload",
            r#"{"source_id":"sales-2024","format":"pdf"}"#,
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
    an_unknown_export(&t.base_url(), &lookup.template, &journal).await;

    lookup.switch_on();
    let path = journal.to_str().unwrap();
    let out = recourse(&["journal", "--journal", path, "reconcile", "--json"], &[]).await;
    let settled = stdout_json(&out);
    assert_eq!(out.status.code(), Some(0), "{settled}");
    assert_eq!(settled[0]["state"], "succeeded", "{settled}");
    assert_eq!(t.exports_committed(), 1, "looked up, never resent");
}
