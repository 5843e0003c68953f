//! The skip notice as `cargo test` shows it: this test binary runs itself as a
//! child, with output captured as usual, and reads what the child printed.

use std::process::{Command, Output};

use recourse_test_support::{NO_SKIP_VAR, service_var};

/// The variable the probe asks for; the parent sets or removes it.
const PROBE_VAR: &str = "RECOURSE_TEST_SUPPORT_PROBE_URL";

/// Run only as the child of the tests below (`--ignored --exact probe`).
#[test]
#[ignore = "run as a child process by the skip-notice tests"]
fn probe() {
    if let Some(value) = service_var(PROBE_VAR) {
        assert_eq!(value, "tcp://127.0.0.1:1", "the value comes back as set");
    }
}

fn run_probe(value: Option<&str>, no_skip: Option<&str>) -> Output {
    let mut child = Command::new(std::env::current_exe().unwrap());
    child.args(["--ignored", "--exact", "probe", "--test-threads", "1"]);
    match value {
        Some(v) => child.env(PROBE_VAR, v),
        None => child.env_remove(PROBE_VAR),
    };
    match no_skip {
        Some(v) => child.env(NO_SKIP_VAR, v),
        None => child.env_remove(NO_SKIP_VAR),
    };
    child.output().unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn an_unset_variable_passes_and_says_skipped_on_stderr_despite_capture() {
    let out = run_probe(None, None);
    assert!(out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("SKIPPED probe:") && stderr.contains(PROBE_VAR),
        "the notice is not captured: {}",
        text(&out)
    );
}

#[test]
fn with_no_skip_on_an_unset_variable_fails_and_names_it() {
    let out = run_probe(None, Some("1"));
    assert!(!out.status.success(), "{}", text(&out));
    let all = text(&out);
    assert!(
        all.contains(&format!("{PROBE_VAR} is not set")) && all.contains(NO_SKIP_VAR),
        "{all}"
    );
    assert!(!all.contains("SKIPPED"), "{all}");
}

#[test]
fn a_set_variable_runs_silently_with_or_without_no_skip() {
    for no_skip in [None, Some("1")] {
        let out = run_probe(Some("tcp://127.0.0.1:1"), no_skip);
        assert!(out.status.success(), "{}", text(&out));
        assert!(!text(&out).contains("SKIPPED"), "{}", text(&out));
    }
}
