//! Settling a lost MCP reply by reading back through the server's own read
//! tool: a scripted stdio server (`tests/support/state_server.rs`) that keeps
//! its orders in files, commits a cancel and then dies or answers `-32603`,
//! or dies before it commits — and is restarted by the transport.
//!
//! The server is this test binary itself, started again with
//! [`SERVE_FLAG`]; hence `harness = false` and the small runner in `main`
//! (libtest would write to the stdout that carries the protocol).

mod support;

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use recourse::policy::{Verification, VerifyResult};
use recourse::record::{Event, VerifyPhase};
use recourse::{Call, CallReport, StopReason, VerifySpec};
use recourse_mcp::{McpTarget, McpTransport};
use recourse_test_support::harness::{self, Test};
use serde_json::json;
use support::state_server::{self, SERVE_FLAG};
use support::{FreshDir, executor, fresh_dir};

const TESTS: [(&str, Test); 5] = [
    ("a_commit_then_death_is_verified_with_one_write", || {
        Box::pin(a_commit_then_death_is_verified_with_one_write())
    }),
    (
        "a_commit_then_internal_error_is_verified_with_one_write",
        || Box::pin(a_commit_then_internal_error_is_verified_with_one_write()),
    ),
    (
        "a_death_before_the_write_is_resent_once_with_the_same_key_then_verified",
        || Box::pin(a_death_before_the_write_is_resent_once_with_the_same_key_then_verified()),
    ),
    ("without_a_verification_the_outcome_stays_unknown", || {
        Box::pin(without_a_verification_the_outcome_stays_unknown())
    }),
    ("a_read_tool_answering_json_text_is_read_too", || {
        Box::pin(a_read_tool_answering_json_text_is_read_too())
    }),
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(SERVE_FLAG) {
        let dir = args.get(1).expect("a directory");
        let fault = args.get(2).map_or("none", String::as_str);
        state_server::serve(Path::new(dir), fault);
        return ExitCode::SUCCESS;
    }
    harness::run(&TESTS, &args)
}

/// The stateful server (this binary) with `fault`, in a fresh directory.
fn server(fault: &str) -> (Arc<McpTransport>, FreshDir) {
    let dir = fresh_dir("state");
    let exe = std::env::current_exe().expect("the test binary's path");
    let target = McpTarget::Command {
        program: exe.display().to_string(),
        args: vec![
            SERVE_FLAG.to_owned(),
            dir.0.display().to_string(),
            fault.to_owned(),
        ],
        pass_env: Vec::new(),
    };
    (Arc::new(McpTransport::new(target)), dir)
}

fn cancelled(read_tool: &str) -> VerifySpec {
    VerifySpec::tool(read_tool)
        .args(json!({"order_id": "{{payload.order_id}}"}))
        .expect(r#"/status == "cancelled""#)
        .expect("/order_id == {{payload.order_id}}")
}

/// Cancels order W1 through `transport`, reading back with `spec`.
async fn cancel(transport: &Arc<McpTransport>, spec: Option<VerifySpec>) -> CallReport {
    let tool = transport
        .tool("cancel_pending_order")
        .await
        .expect("the server starts")
        .expect("the server lists the tool");
    let mut call = tool.prepare(Call::builder(
        "cancel_pending_order",
        json!({"order_id": "W1"}),
    ));
    if let Some(spec) = spec {
        call = call.verify(spec);
    }
    executor(Arc::clone(transport), None)
        .execute(call.build().unwrap())
        .await
}

fn reads(report: &CallReport) -> Vec<(VerifyPhase, VerifyResult)> {
    report
        .attempts
        .iter()
        .flat_map(|a| &a.events)
        .filter_map(|e| match e {
            Event::Verify { phase, result, .. } => Some((*phase, *result)),
            _ => None,
        })
        .collect()
}

fn assert_verified_once(report: &CallReport, dir: &FreshDir) {
    assert_eq!(report.outcome.name(), "succeeded", "{}", report.to_json());
    assert_eq!(report.verification, Some(Verification::Verified));
    assert_eq!(report.to_json()["verification"], "verified");
    assert_eq!(
        state_server::writes(&dir.0).len(),
        1,
        "the server counts one write"
    );
    assert_eq!(report.to_json()["data"]["status"], "cancelled");
}

async fn a_commit_then_death_is_verified_with_one_write() {
    let (transport, dir) = server("die_after_commit");
    let report = cancel(&transport, Some(cancelled("get_order_details"))).await;
    assert_verified_once(&report, &dir);
    assert_eq!(report.attempts.len(), 1, "never resent");
    assert!(report.attempts[0].transport_error.is_some());
    assert_eq!(
        reads(&report),
        [
            (VerifyPhase::Before, VerifyResult::NotHeld),
            (VerifyPhase::After, VerifyResult::Holds)
        ]
    );
    assert_eq!(
        transport.sessions_started(),
        2,
        "the read ran on a restarted server"
    );
}

async fn a_commit_then_internal_error_is_verified_with_one_write() {
    let (transport, dir) = server("internal_error");
    let report = cancel(&transport, Some(cancelled("get_order_details"))).await;
    assert_verified_once(&report, &dir);
    assert_eq!(report.attempts.len(), 1, "never resent");
    assert_eq!(report.attempts[0].action.name(), "reconcile");
}

async fn a_death_before_the_write_is_resent_once_with_the_same_key_then_verified() {
    let (transport, dir) = server("die_before");
    let report = cancel(&transport, Some(cancelled("get_order_details"))).await;
    assert_verified_once(&report, &dir);
    assert_eq!(report.attempts.len(), 2, "one resend");
    assert_eq!(
        reads(&report),
        [
            (VerifyPhase::Before, VerifyResult::NotHeld),
            (VerifyPhase::After, VerifyResult::NotHeld),
            (VerifyPhase::After, VerifyResult::Holds)
        ]
    );
    let key = report
        .idempotency_key
        .clone()
        .expect("a write carries a key");
    assert_eq!(
        state_server::writes(&dir.0),
        [key],
        "the resend carried the same key"
    );
    assert!(
        transport.sessions_started() >= 2,
        "the transport restarted the server"
    );
}

async fn without_a_verification_the_outcome_stays_unknown() {
    let (transport, dir) = server("die_after_commit");
    let report = cancel(&transport, None).await;
    assert_eq!(report.outcome.name(), "unknown");
    assert_eq!(report.outcome.reason(), Some(&StopReason::OutcomeUnknown));
    assert_eq!(report.verification, None);
    assert_eq!(state_server::writes(&dir.0).len(), 1);
}

async fn a_read_tool_answering_json_text_is_read_too() {
    let (transport, dir) = server("internal_error");
    let report = cancel(&transport, Some(cancelled("get_order_text"))).await;
    assert_verified_once(&report, &dir);
}
