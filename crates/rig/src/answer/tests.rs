//! The answer for each kind of record: success as sent, success after work,
//! and one failure per step.

use std::time::Duration;

use recourse::Action;
use recourse::idempotency::{Evidence, Idempotency};
use recourse::record::{AttemptRecord, LookupResult, PayloadSource, TokenUsage};
use recourse_protocol::{RetryPermission, ToolError};
use serde_json::json;

use super::*;

fn attempt(status: Option<u16>, action: Action, source: PayloadSource) -> AttemptRecord {
    AttemptRecord {
        n: 1,
        payload: json!({"location": "Paris, Ile-de-France, FR"}),
        status,
        transport_error: None,
        category: None,
        code: None,
        retry_permission: RetryPermission::Refused,
        action,
        timeout_ms: 5000,
        source,
        facts: Default::default(),
        events: Vec::new(),
    }
}

fn report(outcome: Outcome, attempts: Vec<AttemptRecord>) -> CallReport {
    CallReport {
        call_id: "c-1".into(),
        outcome,
        http_calls: u32::try_from(attempts.len()).unwrap(),
        attempts,
        llm_calls: 0,
        tokens: TokenUsage::default(),
        llm_time: Duration::ZERO,
        idempotency: Idempotency {
            idempotent: false,
            from: Evidence::Default,
        },
        idempotency_key: None,
        operation_id: None,
        verification: None,
        elapsed: Duration::from_millis(5),
        settlement: None,
        answer: None,
        ended_at: None,
    }
}

fn failed(error: ToolError, reason: StopReason, status: u16) -> CallReport {
    report(
        Outcome::Failed {
            error: Some(error),
            reason: reason.clone(),
        },
        vec![attempt(
            Some(status),
            Action::stop(reason),
            PayloadSource::Caller,
        )],
    )
}

#[test]
fn a_call_that_went_as_sent_answers_with_its_data_alone() {
    let data = json!({"temperature_c": 18.5});
    let r = report(
        Outcome::Succeeded {
            data: data.clone().into(),
        },
        vec![attempt(Some(200), Action::Succeed, PayloadSource::Caller)],
    );
    let output = tool_answer(&r).unwrap();
    assert_eq!(output.as_json(), Some(&data));
}

#[test]
fn a_success_after_a_correction_or_lookup_also_says_what_recourse_did() {
    let data = json!({"temperature_c": 18.5});
    let corrected = report(
        Outcome::Succeeded {
            data: data.clone().into(),
        },
        vec![
            attempt(Some(404), Action::Correct, PayloadSource::Caller),
            attempt(Some(200), Action::Succeed, PayloadSource::Repair),
        ],
    );
    let output = tool_answer(&corrected).unwrap();
    assert_eq!(output.as_content().len(), 2);
    assert!(output.render().contains("recourse corrected the arguments"));

    let mut looked_up = attempt(Some(500), Action::Succeed, PayloadSource::Caller);
    looked_up.events.push(Event::Lookup {
        result: LookupResult::Committed,
        detail: None,
    });
    let r = report(Outcome::Succeeded { data: data.into() }, vec![looked_up]);
    let text = tool_answer(&r).unwrap().render();
    assert!(text.contains("do not repeat it"), "{text}");
}

#[test]
fn an_unknown_outcome_is_do_not_repeat_everywhere_the_model_and_rig_look() {
    let error = ToolError::unknown_outcome("UNKNOWN_OUTCOME", "the export may have been written");
    let r = report(
        Outcome::Unknown {
            error: Some(error),
            reason: StopReason::OutcomeUnknown,
        },
        vec![attempt(
            Some(500),
            Action::stop(StopReason::OutcomeUnknown),
            PayloadSource::Caller,
        )],
    );
    let error = tool_answer(&r).unwrap_err();
    assert_eq!(error.code(), Some("do_not_repeat"));
    assert_eq!(error.retryable(), Some(false));
    assert_eq!(error.kind(), ToolErrorKind::Other);
    assert_eq!(error.http_status(), Some(500));
    let text = error.model_feedback().unwrap();
    assert!(text.starts_with(DO_NOT_REPEAT_LINE), "{text}");
    assert!(
        text.contains("recourse: next step do_not_repeat."),
        "{text}"
    );
    assert!(text.contains(&r.next().model_message), "{text}");
}

#[test]
fn each_step_has_its_code_and_kind_and_nothing_is_retryable() {
    let cases = [
        (
            failed(
                ToolError::input_error("INVALID_AMOUNT", "amount must be positive"),
                StopReason::RetryRefused,
                400,
            ),
            "fix_arguments",
            ToolErrorKind::InvalidArgs,
        ),
        (
            failed(
                ToolError::auth_error("AUTH_ERROR", "upstream key rejected"),
                StopReason::AuthenticationFailed,
                401,
            ),
            "fix_configuration",
            ToolErrorKind::PermissionDenied,
        ),
        (
            failed(
                ToolError::rate_limit("RATE_LIMIT", "slow down"),
                StopReason::RateLimited {
                    retry_after: Duration::from_secs(90),
                },
                429,
            ),
            "give_up",
            ToolErrorKind::RateLimited,
        ),
        (
            failed(
                ToolError::service_error("DOWN", "restarting"),
                StopReason::RetriesExhausted,
                503,
            ),
            "give_up",
            ToolErrorKind::Provider,
        ),
        (
            failed(
                ToolError::service_error("DOWN", "restarting"),
                StopReason::DeadlineExceeded,
                503,
            ),
            "give_up",
            ToolErrorKind::Timeout,
        ),
    ];
    for (r, code, kind) in cases {
        let error = tool_answer(&r).unwrap_err();
        assert_eq!(error.code(), Some(code));
        assert_eq!(error.kind(), kind, "{code}");
        assert_eq!(error.retryable(), Some(false), "{code}");
        assert!(!error.is_refusal());
        let text = error.model_feedback().unwrap();
        assert!(
            text.starts_with(&format!("recourse: next step {code}.")),
            "{text}"
        );
        assert!(!text.contains(DO_NOT_REPEAT_LINE));
    }
}

#[test]
fn a_business_rule_is_a_refusal() {
    let r = failed(
        ToolError::policy_rejection("REFUND_WINDOW_CLOSED", "the refund window closed"),
        StopReason::PolicyRejected,
        422,
    );
    let error = tool_answer(&r).unwrap_err();
    assert!(error.is_refusal());
    assert_eq!(error.code(), Some("explain_refusal"));
    assert_eq!(error.retryable(), Some(false));
}

#[test]
fn a_transport_failure_that_passes_with_time_is_a_network_error() {
    let mut unanswered = attempt(
        None,
        Action::stop(StopReason::RetriesExhausted),
        PayloadSource::Caller,
    );
    unanswered.transport_error = Some(recourse::transport::TransportFailure::new(
        recourse::transport::TransportFailureKind::ConnectFailed,
        "connection refused",
    ));
    let r = report(
        Outcome::Failed {
            error: None,
            reason: StopReason::RetriesExhausted,
        },
        vec![unanswered],
    );
    let error = tool_answer(&r).unwrap_err();
    assert_eq!(error.kind(), ToolErrorKind::Network);
    assert_eq!(error.http_status(), None);
    assert_eq!(error.code(), Some("give_up"));
}
