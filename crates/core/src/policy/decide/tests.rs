//! One test per rule of protocol §3, on the pure policy.

use std::time::Duration;

use recourse_protocol::{CategoryBasis, ParsedResponse, parse_response};

use super::*;
use crate::policy::machine::AfterLookup;
use serde_json::json;

fn envelope(status: u16, category: &str, retryable: Option<bool>) -> ParsedResponse {
    let flag = retryable.map_or(String::new(), |b| format!(r#","retryable":{b}"#));
    let body = format!(
        r#"{{"success":false,"error":{{"code":"X","message":"m","category":"{category}"{flag}}}}}"#
    );
    parse_response(
        status,
        [("content-type", "application/json")],
        body.as_bytes(),
    )
}

fn plain(status: u16) -> ParsedResponse {
    parse_response(
        status,
        [("content-type", "text/html")],
        b"<html><title>oops</title></html>",
    )
}

fn decide(r: &ParsedResponse, s: Situation) -> Action {
    Policy::default().decide(Observation::Response(r), &s)
}

fn first() -> Situation {
    Situation::first_attempt(Traits::default())
}

fn non_idempotent() -> Situation {
    Situation::first_attempt(Traits {
        idempotent: false,
        delegated: false,
    })
}

fn transport(kind: TransportFailureKind) -> TransportFailure {
    TransportFailure::new(kind, "boom")
}

#[test]
fn rule1_2xx_without_failure_succeeds() {
    let r = parse_response(200, [("a", "b")], br#"{"success":true,"data":1}"#);
    assert_eq!(decide(&r, first()), Action::Succeed);
    assert_eq!(decide(&plain(204), first()), Action::Succeed);
}

#[test]
fn rule1_2xx_with_success_false_is_a_failure_routed_by_category() {
    let r = parse_response(
        200,
        [("a", "b")],
        br#"{"success":false,"error":{"code":"Q","message":"m","category":"RATE_LIMIT"}}"#,
    );
    assert!(matches!(decide(&r, first()), Action::RetrySame { .. }));
    let r = parse_response(
        200,
        [("a", "b")],
        br#"{"success":false,"error":{"code":"Q","message":"m"}}"#,
    );
    assert_eq!(decide(&r, first()), Action::stop(StopReason::Unclassified));
}

#[test]
fn rule2_delegated_stops_after_one_dispatch_whatever_failed() {
    let delegated = Situation::first_attempt(Traits {
        idempotent: true,
        delegated: true,
    });
    for r in [
        plain(503),
        envelope(400, "INPUT_ERROR", Some(true)),
        envelope(500, "UNKNOWN_OUTCOME", None),
    ] {
        assert_eq!(
            decide(&r, delegated),
            Action::stop(StopReason::DelegatedSingleDispatch)
        );
    }
}

#[test]
fn rule3_unknown_outcome_reconciles_even_when_refused() {
    assert_eq!(
        decide(&envelope(500, "UNKNOWN_OUTCOME", Some(false)), first()),
        Action::reconcile()
    );
}

#[test]
fn rule3_without_a_reconciler_the_outcome_stays_unknown() {
    let mut s = non_idempotent();
    s.reconciler_available = false;
    assert_eq!(
        decide(&envelope(500, "UNKNOWN_OUTCOME", None), s),
        Action::stop(StopReason::OutcomeUnknown)
    );
}

#[test]
fn rule3_non_idempotent_failure_after_send_reconciles() {
    let p = Policy::default();
    for kind in [
        TransportFailureKind::TimedOutAfterSend,
        TransportFailureKind::FailedAfterSend,
    ] {
        let t = transport(kind);
        assert_eq!(
            p.decide(Observation::Transport(&t), &non_idempotent()),
            Action::reconcile()
        );
    }
    for status in [500, 502, 504] {
        assert_eq!(
            decide(&plain(status), non_idempotent()),
            Action::reconcile(),
            "{status}"
        );
    }
    // 503 says the server did not do it; an enveloped 500 names its own category.
    assert!(matches!(
        decide(&plain(503), non_idempotent()),
        Action::RetrySame { .. }
    ));
    assert!(matches!(
        decide(&envelope(500, "SERVICE_ERROR", None), non_idempotent()),
        Action::RetrySame { .. }
    ));
}

fn rpc_error(code: i64, data: &str) -> ParsedResponse {
    let body =
        format!(r#"{{"jsonrpc":"2.0","id":1,"error":{{"code":{code},"message":"m"{data}}}}}"#);
    parse_response(200, [("content-type", "application/json")], body.as_bytes())
}

fn mcp_is_error(text: &str) -> ParsedResponse {
    let body =
        serde_json::to_vec(&json!({"content": [{"type": "text", "text": text}], "isError": true}))
            .unwrap();
    parse_response(200, [("content-type", "application/json")], &body)
}

#[test]
fn rule3_an_opaque_json_rpc_error_is_a_bare_500_unknown_for_a_write() {
    for code in [-32603, -32000] {
        let r = rpc_error(code, "");
        assert_eq!(r.basis, CategoryBasis::Opaque);
        assert_eq!(decide(&r, non_idempotent()), Action::reconcile(), "{code}");
        assert!(
            matches!(decide(&r, first()), Action::RetrySame { .. }),
            "an idempotent call is resent, as after a bare 500"
        );
    }
    // A JSON-RPC code with a meaning is not opaque: the request was refused.
    assert_eq!(
        decide(&rpc_error(-32602, ""), non_idempotent()),
        Action::Correct
    );
}

#[test]
fn rule3_a_body_over_the_cap_after_a_2xx_leaves_a_write_unknown() {
    let p = Policy::default();
    let oversized = |status: Option<u16>| {
        let t = transport(TransportFailureKind::ResponseTooLarge);
        match status {
            Some(s) => t.with_status(s),
            None => t,
        }
    };
    for status in [Some(200), Some(201), Some(500), Some(502), None] {
        let t = oversized(status);
        assert_eq!(
            p.decide(Observation::Transport(&t), &non_idempotent()),
            Action::reconcile(),
            "{status:?}"
        );
        assert_eq!(
            p.decide(Observation::Transport(&t), &first()),
            Action::stop(StopReason::ResponseTooLarge),
            "an idempotent call stops as before ({status:?})"
        );
    }
    for status in [400, 404, 429, 503] {
        let t = oversized(Some(status));
        assert_eq!(
            p.decide(Observation::Transport(&t), &non_idempotent()),
            Action::stop(StopReason::ResponseTooLarge),
            "{status}: the tool refused"
        );
    }
}

#[test]
fn rule3_connect_failure_is_not_unknown() {
    let t = transport(TransportFailureKind::ConnectFailed);
    let a = Policy::default().decide(Observation::Transport(&t), &non_idempotent());
    assert!(matches!(a, Action::RetrySame { .. }));
}

#[test]
fn rule4_refused_stops_on_every_status() {
    for (status, cat) in [
        (503, "SERVICE_ERROR"),
        (429, "RATE_LIMIT"),
        (400, "INPUT_ERROR"),
        (404, "NOT_FOUND"),
    ] {
        assert_eq!(
            decide(&envelope(status, cat, Some(false)), first()),
            Action::stop(StopReason::RetryRefused),
            "{status}"
        );
    }
}

#[test]
fn rule5_auth_permission_method_policy_stop() {
    assert_eq!(
        decide(&plain(401), first()),
        Action::stop(StopReason::AuthenticationFailed)
    );
    assert_eq!(
        decide(&plain(403), first()),
        Action::stop(StopReason::PermissionDenied)
    );
    assert_eq!(
        decide(&plain(405), first()),
        Action::stop(StopReason::MethodNotAllowed)
    );
    assert_eq!(
        decide(&envelope(422, "POLICY_REJECTION", None), first()),
        Action::stop(StopReason::PolicyRejected)
    );
    // Allowed permission does not override rule 5.
    assert_eq!(
        decide(&envelope(403, "PERMISSION_DENIED", Some(true)), first()),
        Action::stop(StopReason::PermissionDenied)
    );
    assert_eq!(
        decide(&envelope(400, "AUTH_ERROR", Some(true)), first()),
        Action::stop(StopReason::AuthenticationFailed)
    );
}

#[test]
fn rule5_a_call_that_needs_input_or_configuration_stops() {
    let input = parse_response(
        200,
        [("content-type", "application/json")],
        br#"{"resultType":"input_required","requestState":"s"}"#,
    );
    for s in [first(), non_idempotent()] {
        assert_eq!(decide(&input, s), Action::stop(StopReason::NeedsInput));
        for code in [-32020, -32021, -32022] {
            assert_eq!(
                decide(&rpc_error(code, ""), s),
                Action::stop(StopReason::ProtocolMismatch),
                "{code}"
            );
        }
    }
}

#[test]
fn rule6_the_draft_mcp_rate_limit_waits_as_asked() {
    let r = rpc_error(-32023, r#","data":{"retryAfterMs":1500}"#);
    for s in [first(), non_idempotent()] {
        assert_eq!(
            decide(&r, s),
            Action::RetrySame {
                wait: Duration::from_millis(1500),
                cause: WaitCause::RetryAfter,
            }
        );
    }
}

#[test]
fn rule6_a_guessed_transient_failure_resends_only_an_idempotent_call() {
    for text in [
        "upstream 503, try later",
        "rate limit exceeded",
        "request timed out",
    ] {
        let r = mcp_is_error(text);
        assert_eq!(r.basis, CategoryBasis::FreeText, "{text}");
        assert!(
            matches!(decide(&r, first()), Action::RetrySame { .. }),
            "{text}"
        );
        assert_eq!(
            decide(&r, non_idempotent()),
            Action::stop(StopReason::UnstructuredFailure),
            "{text}: a write is never resent on a guess"
        );
    }
    let mut spent = first();
    spent.retries_used = Limits::default().max_retries;
    assert_eq!(
        decide(&mcp_is_error("upstream 503"), spent),
        Action::stop(StopReason::RetriesExhausted)
    );
}

#[test]
fn rule7_a_guessed_category_never_goes_to_a_model() {
    let mut guessed = mcp_is_error("upstream 404");
    guessed.basis = CategoryBasis::FreeText;
    assert_eq!(
        decide(&guessed, first()),
        Action::stop(StopReason::UnstructuredFailure)
    );
    // Text naming nothing transient is the MCP rule's INPUT_ERROR, assumed
    // (the tool named no category): it routes as one, so it is corrected.
    let plain = mcp_is_error("Invalid timezone: America/NewYork");
    assert_eq!(plain.basis, CategoryBasis::Assumed);
    assert_eq!(decide(&plain, first()), Action::Correct);
}

#[test]
fn rule6_transient_statuses_retry_with_the_longer_wait() {
    let mut s = first();
    s.backoff = Duration::from_millis(300);
    for status in [408, 429, 500, 502, 503, 504] {
        assert_eq!(
            decide(&plain(status), s),
            Action::RetrySame {
                wait: Duration::from_millis(300),
                cause: WaitCause::Backoff,
            },
            "{status}"
        );
    }
    let r = parse_response(429, [("Retry-After", "2")], b"");
    assert_eq!(
        decide(&r, s),
        Action::RetrySame {
            wait: Duration::from_secs(2),
            cause: WaitCause::RetryAfter,
        }
    );
    // Our own backoff is capped; a server demand shorter than it is met by it.
    s.backoff = Duration::from_secs(3600);
    let r = parse_response(429, [("Retry-After", "1")], b"");
    assert_eq!(
        decide(&r, s),
        Action::RetrySame {
            wait: Limits::default().max_backoff,
            cause: WaitCause::Backoff,
        }
    );
}

#[test]
fn rule6_a_demand_longer_than_max_backoff_stops_now_never_resends_early() {
    let s = first();
    let r = parse_response(429, [("Retry-After", "3600")], b"");
    assert_eq!(
        decide(&r, s),
        Action::stop(StopReason::RateLimited {
            retry_after: Duration::from_secs(3600)
        })
    );
    // A demand too large to represent counts as longer than any limit.
    let r = parse_response(429, [("Retry-After", "99999999999999999999")], b"");
    assert!(matches!(
        decide(&r, s),
        Action::Stop {
            reason: StopReason::RateLimited { .. }
        }
    ));
}

#[test]
fn rule6_wait_crossing_the_deadline_stops_now() {
    let mut s = first();
    s.remaining = Some(Duration::from_secs(1));
    let r = parse_response(429, [("Retry-After", "5")], b"");
    assert_eq!(
        decide(&r, s),
        Action::stop(StopReason::RateLimited {
            retry_after: Duration::from_secs(5)
        })
    );
    s.backoff = Duration::from_secs(2);
    assert_eq!(
        decide(&plain(503), s),
        Action::stop(StopReason::DeadlineExceeded)
    );
}

#[test]
fn attempts_are_cut_to_the_time_left() {
    let p = Policy::default();
    let per = Duration::from_secs(30);
    assert_eq!(p.attempt_timeout(per, None), Some(per));
    assert_eq!(
        p.attempt_timeout(per, Some(Duration::from_secs(3))),
        Some(Duration::from_secs(3))
    );
    assert_eq!(p.attempt_timeout(per, Some(Duration::ZERO)), None);
}

#[test]
fn rule6_retries_are_bounded() {
    let mut s = first();
    s.retries_used = Limits::default().max_retries;
    assert_eq!(
        decide(&plain(503), s),
        Action::stop(StopReason::RetriesExhausted)
    );
}

#[test]
fn rule7_other_4xx_corrects_when_eligible() {
    for status in [400, 404, 409, 410, 422] {
        assert_eq!(decide(&plain(status), first()), Action::Correct, "{status}");
    }
}

#[test]
fn rule7_ineligible_correction_stops_with_the_reason() {
    let r = envelope(400, "INPUT_ERROR", None);
    let mut s = first();
    s.corrector_available = false;
    assert_eq!(decide(&r, s), Action::stop(StopReason::NoCorrector));
    let mut s = first();
    s.has_mutable_inputs = false;
    assert_eq!(decide(&r, s), Action::stop(StopReason::NothingMutable));
    let mut s = first();
    s.corrections_used = 2;
    assert_eq!(
        decide(&r, s),
        Action::stop(StopReason::CorrectionBudgetExhausted)
    );
    let opt_in = Policy::new(Limits {
        require_opt_in: true,
        ..Limits::default()
    });
    assert_eq!(
        opt_in.decide(Observation::Response(&r), &first()),
        Action::stop(StopReason::NotOptedIn)
    );
    let allowed = envelope(400, "INPUT_ERROR", Some(true));
    assert_eq!(
        opt_in.decide(Observation::Response(&allowed), &first()),
        Action::Correct
    );
}

#[test]
fn rule8_anything_else_stops() {
    assert_eq!(
        decide(&plain(302), first()),
        Action::stop(StopReason::UnexpectedStatus)
    );
}

#[test]
fn oversized_response_stops() {
    let t = transport(TransportFailureKind::ResponseTooLarge);
    assert_eq!(
        Policy::default().decide(Observation::Transport(&t), &first()),
        Action::stop(StopReason::ResponseTooLarge)
    );
}

fn after(found: &Reconciliation, permission: RetryPermission, s: Situation) -> AfterLookup {
    Policy::default().after_lookup(found.clone(), permission, &s)
}

#[test]
fn lookup_committed_succeeds() {
    let found = Reconciliation::Committed(json!({"id": 1}));
    assert_eq!(
        after(&found, RetryPermission::Refused, non_idempotent()),
        AfterLookup::Succeed(json!({"id": 1}))
    );
}

#[test]
fn lookup_not_committed_resends_once_unless_refused_or_out_of_budget() {
    let found = Reconciliation::NotCommitted;
    assert_eq!(
        after(&found, RetryPermission::Unspecified, non_idempotent()),
        AfterLookup::Resend
    );
    assert_eq!(
        after(&found, RetryPermission::Refused, non_idempotent()),
        AfterLookup::Stop(StopReason::NotCommitted),
        "rule 4 holds for the resend after a lookup"
    );
    let mut spent = non_idempotent();
    spent.retries_used = Limits::default().max_retries;
    assert_eq!(
        after(&found, RetryPermission::Allowed, spent),
        AfterLookup::Stop(StopReason::RetriesExhausted)
    );
    let mut late = non_idempotent();
    late.remaining = Some(Duration::ZERO);
    assert_eq!(
        after(&found, RetryPermission::Allowed, late),
        AfterLookup::Stop(StopReason::DeadlineExceeded)
    );
}

#[test]
fn lookup_pending_waits_within_the_deadline_and_the_lookup_limit() {
    let found = Reconciliation::Pending {
        wait: Some(Duration::from_millis(250)),
    };
    assert_eq!(
        after(&found, RetryPermission::Unspecified, non_idempotent()),
        AfterLookup::LookAgain {
            wait: Duration::from_millis(250)
        }
    );
    let mut late = non_idempotent();
    late.remaining = Some(Duration::from_millis(100));
    assert_eq!(
        after(&found, RetryPermission::Unspecified, late),
        AfterLookup::Stop(StopReason::OutcomeUnknown)
    );
    let mut many = non_idempotent();
    many.lookups_used = Limits::default().max_lookups;
    assert_eq!(
        after(&found, RetryPermission::Unspecified, many),
        AfterLookup::Stop(StopReason::OutcomeUnknown)
    );
    let mut s = non_idempotent();
    s.backoff = Duration::from_millis(40);
    assert_eq!(
        after(
            &Reconciliation::Pending { wait: None },
            RetryPermission::Unspecified,
            s
        ),
        AfterLookup::LookAgain {
            wait: Duration::from_millis(40)
        },
        "without a server wait, the backoff draw"
    );
}

#[test]
fn lookup_that_cannot_tell_leaves_the_outcome_unknown() {
    let found = Reconciliation::Unknown("lookup answered HTTP 500".to_owned());
    assert_eq!(
        after(&found, RetryPermission::Allowed, non_idempotent()),
        AfterLookup::Stop(StopReason::OutcomeUnknown)
    );
}

#[test]
fn a_request_that_could_not_be_built_is_never_sent_and_stops() {
    let t = transport(TransportFailureKind::RequestNotBuilt);
    assert_eq!(
        Policy::default().decide(Observation::Transport(&t), &non_idempotent()),
        Action::stop(StopReason::InvalidCall)
    );
    assert!(!TransportFailureKind::RequestNotBuilt.was_sent());
    assert!(!TransportFailureKind::ConnectFailed.was_sent());
    assert!(TransportFailureKind::TimedOutAfterSend.was_sent());
}

#[test]
fn a_tls_failure_or_a_refused_login_stops_at_once_and_is_never_resent() {
    for (kind, reason) in [
        (TransportFailureKind::TlsFailed, StopReason::TlsFailed),
        (TransportFailureKind::AuthRequired, StopReason::AuthRequired),
    ] {
        let t = transport(kind);
        for situation in [non_idempotent(), first()] {
            assert_eq!(
                Policy::default().decide(Observation::Transport(&t), &situation),
                Action::stop(reason.clone()),
                "{}",
                kind.as_str()
            );
        }
        assert!(
            !kind.is_transient() && !kind.may_have_committed(),
            "{}",
            kind.as_str()
        );
        assert!(kind.names_a_fix(), "{}", kind.as_str());
    }
    assert!(
        !TransportFailureKind::TlsFailed.was_sent(),
        "the handshake comes first"
    );
    assert!(
        TransportFailureKind::AuthRequired.was_sent(),
        "refused, and answered"
    );
}
