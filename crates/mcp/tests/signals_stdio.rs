//! How recourse reads what an MCP server says, over stdio: a scripted server
//! (`tests/support/stdio_server.rs`) that commits each call (counted in a
//! file) and then answers as its script says.
//!
//! The server is this test binary itself, started again with
//! [`SERVE_FLAG`], so the tests need nothing but the Rust toolchain; hence
//! `harness = false` and the small runner in `main` (libtest would write to
//! the stdout that carries the protocol).

mod support;

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use recourse::record::WaitCause;
use recourse::{Action, StopReason};
use recourse_mcp::{McpTarget, McpTransport};
use recourse_protocol::{ErrorCategory, RetryPermission};
use recourse_test_support::harness::{self, Test};
use recourse_test_support::{FakeLlm, Reply};
use serde_json::json;
use support::stdio_server::{self, SERVE_FLAG};
use support::{FreshDir, executor, fresh_dir, prepared, run};

const TESTS: [(&str, Test); 8] = [
    (
        "a_write_the_server_committed_then_answered_internal_error_is_never_resent",
        || Box::pin(a_write_the_server_committed_then_answered_internal_error_is_never_resent()),
    ),
    (
        "an_idempotent_call_is_resent_after_an_internal_error",
        || Box::pin(an_idempotent_call_is_resent_after_an_internal_error()),
    ),
    ("a_refused_protocol_setup_stops_for_configuration", || {
        Box::pin(a_refused_protocol_setup_stops_for_configuration())
    }),
    (
        "the_draft_rate_limit_error_waits_its_retry_after_ms",
        || Box::pin(the_draft_rate_limit_error_waits_its_retry_after_ms()),
    ),
    ("a_result_asking_for_input_stops_with_needs_input", || {
        Box::pin(a_result_asking_for_input_stops_with_needs_input())
    }),
    (
        "a_transient_failure_in_text_is_resent_only_for_an_idempotent_call",
        || Box::pin(a_transient_failure_in_text_is_resent_only_for_an_idempotent_call()),
    ),
    (
        "text_naming_nothing_transient_is_an_input_error_for_correction",
        || Box::pin(text_naming_nothing_transient_is_an_input_error_for_correction()),
    ),
    (
        "failure_metadata_outranks_the_text_and_sets_the_wait",
        || Box::pin(failure_metadata_outranks_the_text_and_sets_the_wait()),
    ),
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(SERVE_FLAG) {
        stdio_server::serve(Path::new(args.get(1).expect("a directory")));
        return ExitCode::SUCCESS;
    }
    harness::run(&TESTS, &args)
}

/// The scripted server (this binary), counting its calls in a fresh directory.
fn scripted() -> (Arc<McpTransport>, FreshDir) {
    let dir = fresh_dir("stdio");
    let exe = std::env::current_exe().expect("the test binary's path");
    let target = McpTarget::Command {
        program: exe.display().to_string(),
        args: vec![SERVE_FLAG.to_owned(), dir.0.display().to_string()],
        pass_env: Vec::new(),
    };
    (Arc::new(McpTransport::new(target)), dir)
}

/// How often `tool` ran on the server.
fn calls(dir: &FreshDir, tool: &str) -> usize {
    std::fs::read_to_string(dir.0.join(format!("{tool}.calls")))
        .map(|text| text.lines().count())
        .unwrap_or(0)
}

async fn a_write_the_server_committed_then_answered_internal_error_is_never_resent() {
    let (transport, dir) = scripted();
    for tool in ["modify_user_address", "cancel_pending_order"] {
        let report = run(&transport, tool).await;
        assert_eq!(
            report.outcome.name(),
            "unknown",
            "{tool}: {}",
            report.to_json()
        );
        assert_eq!(report.outcome.exit_code(), 3);
        assert_eq!(report.outcome.reason(), Some(&StopReason::OutcomeUnknown));
        assert_eq!(report.attempts.len(), 1, "{tool}");
        assert_eq!(calls(&dir, tool), 1, "{tool} ran once");
        let attempt = &report.attempts[0];
        assert_eq!(attempt.category, Some(ErrorCategory::ServiceError));
        assert_eq!(attempt.code.as_deref(), Some("INTERNAL_ERROR"));
    }
}

async fn an_idempotent_call_is_resent_after_an_internal_error() {
    let (transport, dir) = scripted();
    let report = run(&transport, "get_order").await;
    assert_eq!(report.outcome.name(), "succeeded", "{}", report.to_json());
    assert!(matches!(
        report.attempts[0].action,
        Action::RetrySame { .. }
    ));
    assert_eq!(calls(&dir, "get_order"), 2);
}

async fn a_refused_protocol_setup_stops_for_configuration() {
    let (transport, dir) = scripted();
    for (tool, code) in [
        ("header_mismatch", "HEADER_MISMATCH"),
        ("missing_capability", "MISSING_CLIENT_CAPABILITY"),
        ("unsupported_version", "UNSUPPORTED_PROTOCOL_VERSION"),
    ] {
        let report = run(&transport, tool).await;
        assert_eq!(report.outcome.name(), "failed", "{tool}");
        assert_eq!(report.outcome.reason(), Some(&StopReason::ProtocolMismatch));
        assert_eq!(report.attempts[0].code.as_deref(), Some(code));
        assert_eq!(calls(&dir, tool), 1, "{tool} is not resent");
    }
}

async fn the_draft_rate_limit_error_waits_its_retry_after_ms() {
    let (transport, dir) = scripted();
    let report = run(&transport, "rate_limited").await;
    assert_eq!(report.outcome.name(), "succeeded", "{}", report.to_json());
    assert_eq!(report.attempts[0].category, Some(ErrorCategory::RateLimit));
    assert_eq!(
        report.attempts[0].action,
        Action::RetrySame {
            wait: Duration::from_millis(1500),
            cause: WaitCause::RetryAfter,
        }
    );
    assert_eq!(
        calls(&dir, "rate_limited"),
        2,
        "a rate limit says it did not run"
    );
}

async fn a_result_asking_for_input_stops_with_needs_input() {
    let (transport, dir) = scripted();
    let report = run(&transport, "needs_confirmation").await;
    assert_eq!(report.outcome.name(), "failed", "{}", report.to_json());
    assert_eq!(report.outcome.reason(), Some(&StopReason::NeedsInput));
    assert_eq!(report.outcome.reason().unwrap().code(), "needs_input");
    assert_eq!(report.attempts[0].code.as_deref(), Some("INPUT_REQUIRED"));
    assert_eq!(
        calls(&dir, "needs_confirmation"),
        1,
        "never answered and resent"
    );
}

async fn a_transient_failure_in_text_is_resent_only_for_an_idempotent_call() {
    let (transport, dir) = scripted();
    let report = run(&transport, "flaky_upstream").await;
    assert_eq!(report.outcome.name(), "succeeded", "{}", report.to_json());
    let first = &report.attempts[0];
    assert_eq!(first.category, Some(ErrorCategory::ServiceError));
    assert_eq!(first.retry_permission, RetryPermission::Unspecified);
    assert!(matches!(first.action, Action::RetrySame { .. }));
    assert_eq!(calls(&dir, "flaky_upstream"), 2);

    // A write with the same text stops, and no model sees it.
    let llm = FakeLlm::start(vec![Reply::json(json!({
        "can_fix": true, "analysis": "try again", "corrected_payload": {"id": "W124"}
    }))])
    .await;
    let call = prepared(&transport, "flaky_write").await;
    let report = executor(Arc::clone(&transport), Some(&llm))
        .execute(call)
        .await;
    assert_eq!(report.outcome.name(), "failed", "{}", report.to_json());
    assert_eq!(
        report.outcome.reason(),
        Some(&StopReason::UnstructuredFailure)
    );
    assert_eq!(calls(&dir, "flaky_write"), 1);
    assert_eq!(llm.hits(), 0, "a guessed category never goes to a model");
}

async fn text_naming_nothing_transient_is_an_input_error_for_correction() {
    let (transport, dir) = scripted();
    let report = run(&transport, "bad_timezone").await;
    assert_eq!(report.outcome.name(), "failed");
    assert_eq!(report.attempts[0].category, Some(ErrorCategory::InputError));
    assert_eq!(report.attempts[0].action, Action::Correct);
    assert_eq!(calls(&dir, "bad_timezone"), 1);
}

async fn failure_metadata_outranks_the_text_and_sets_the_wait() {
    let (transport, dir) = scripted();
    let report = run(&transport, "quota").await;
    assert_eq!(report.outcome.name(), "succeeded", "{}", report.to_json());
    let first = &report.attempts[0];
    // The metadata's `reliability` class: a service failure, resent as allowed.
    assert_eq!(first.category, Some(ErrorCategory::ServiceError));
    assert_eq!(first.code.as_deref(), Some("QUOTA"));
    assert_eq!(first.retry_permission, RetryPermission::Allowed);
    let Action::RetrySame { wait, cause } = first.action else {
        panic!("{:?}", first.action);
    };
    assert_eq!(cause, WaitCause::RetryAfter);
    // retryNotBefore was five seconds after the server's clock read it.
    assert!(
        wait > Duration::from_secs(2) && wait <= Duration::from_secs(5),
        "{wait:?}"
    );
    assert_eq!(calls(&dir, "quota"), 2);
}
