//! `write_json` against serde_json over arbitrary records: the same bytes.

use std::time::Duration;

use proptest::prelude::*;
use recourse_protocol::{ErrorCategory, RetryPermission, ToolData, ToolError};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::idempotency::{Evidence, Idempotency};
use crate::policy::{Action, StopReason, Verification, VerifyResult};
use crate::record::CallState;
use crate::record::{
    AttemptRecord, CallReport, CoercionChange, CoercionRule, CorrectionLayer, Event, GateRule,
    LookupResult, Outcome, PayloadSource, SettledBy, Settlement, TokenUsage, Verdict, VerifyPhase,
    WaitCause,
};
use crate::transport::{TransportFailure, TransportFailureKind};

/// Any text: quotes, backslashes, control characters and non-ASCII included.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_0-9-]{0,12}",
        "(?s).{0,16}",
        prop::sample::select(vec!["\"", "\\", "\n\t\u{1}", "é ✓ 😀", "\u{7f}</script>"])
            .prop_map(str::to_owned),
    ]
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map(text(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn data() -> impl Strategy<Value = ToolData> {
    prop_oneof![
        json().prop_map(ToolData::from),
        // As the tool sent it: spacing kept.
        json().prop_map(|v| {
            let text = serde_json::to_string_pretty(&v).unwrap();
            ToolData::from_raw(RawValue::from_string(text).unwrap())
        }),
    ]
}

fn category() -> impl Strategy<Value = ErrorCategory> {
    prop_oneof![
        prop::sample::select(ErrorCategory::KNOWN.to_vec()),
        text().prop_map(ErrorCategory::Other),
    ]
}

fn error() -> impl Strategy<Value = ToolError> {
    (
        category(),
        text(),
        text(),
        any::<bool>(),
        prop::option::of(json()),
    )
        .prop_map(|(category, code, message, retryable, detail)| {
            let mut error = ToolError::new(category, code, message);
            error.retryable = retryable;
            if let Some(detail) = detail {
                error.details = serde_json::json!({ "detail": detail });
            }
            error
        })
}

fn reason() -> impl Strategy<Value = StopReason> {
    prop_oneof![
        prop::sample::select(vec![
            StopReason::DelegatedSingleDispatch,
            StopReason::RetryRefused,
            StopReason::AuthenticationFailed,
            StopReason::PermissionDenied,
            StopReason::RetriesExhausted,
            StopReason::DeadlineExceeded,
            StopReason::CircuitOpen,
            StopReason::CannotFix,
            StopReason::Unclassified,
            StopReason::OutcomeUnknown,
            StopReason::NotCommitted,
            StopReason::NotApplied,
            StopReason::Cancelled,
            StopReason::NeedsInput,
            StopReason::UnstructuredFailure,
        ]),
        (0u64..100_000).prop_map(|ms| StopReason::RateLimited {
            retry_after: Duration::from_millis(ms)
        }),
    ]
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        data().prop_map(|data| Outcome::Succeeded { data }),
        (prop::option::of(error()), reason())
            .prop_map(|(error, reason)| Outcome::Failed { error, reason }),
        (prop::option::of(error()), reason())
            .prop_map(|(error, reason)| Outcome::Unknown { error, reason }),
    ]
}

fn action() -> impl Strategy<Value = Action> {
    let wait = (0u64..100_000).prop_map(Duration::from_millis);
    prop_oneof![
        Just(Action::Succeed),
        (
            wait.clone(),
            prop::sample::select(vec![
                WaitCause::Backoff,
                WaitCause::RetryAfter,
                WaitCause::PendingLookup
            ])
        )
            .prop_map(|(wait, cause)| Action::RetrySame { wait, cause }),
        Just(Action::Correct),
        wait.prop_map(|wait| Action::Reconcile { wait }),
        Just(Action::Verify),
        reason().prop_map(Action::stop),
    ]
}

fn event() -> impl Strategy<Value = Event> {
    let rule = prop::sample::select(vec![
        CoercionRule::IntegerString,
        CoercionRule::NumericString,
        CoercionRule::BooleanString,
        CoercionRule::NumberToString,
        CoercionRule::SingleFieldObject,
    ]);
    let change =
        (text(), json(), prop::option::of(json()), rule).prop_map(|(pointer, from, to, rule)| {
            CoercionChange {
                pointer,
                from,
                to,
                rule,
            }
        });
    let verdict = prop::sample::select(vec![
        Verdict::Fixed,
        Verdict::CannotFix,
        Verdict::Skipped,
        Verdict::RejectedByGate {
            rule: GateRule::ProtectedChanged,
        },
        Verdict::RejectedByGate {
            rule: GateRule::SchemaInvalid,
        },
    ]);
    let layer = prop::sample::select(vec![
        CorrectionLayer::Repair,
        CorrectionLayer::Llm,
        CorrectionLayer::Semantic,
    ]);
    prop_oneof![
        prop::collection::vec(change, 0..3).prop_map(|changes| Event::Coerced { changes }),
        (layer, verdict, text()).prop_map(|(layer, verdict, reason)| Event::Correction {
            layer,
            verdict,
            reason
        }),
        any::<u64>().prop_map(|ms| Event::Waited {
            ms,
            cause: WaitCause::Backoff
        }),
        (
            prop::sample::select(vec![
                LookupResult::Committed,
                LookupResult::NotCommitted,
                LookupResult::Pending,
                LookupResult::CannotTell
            ]),
            prop::option::of(text())
        )
            .prop_map(|(result, detail)| Event::Lookup { result, detail }),
        (
            prop::sample::select(vec![VerifyPhase::Before, VerifyPhase::After]),
            prop::sample::select(vec![
                VerifyResult::Holds,
                VerifyResult::NotHeld,
                VerifyResult::CannotTell
            ]),
            prop::option::of(text())
        )
            .prop_map(|(phase, result, detail)| Event::Verify {
                phase,
                result,
                detail
            }),
        prop::sample::select(vec![
            CallState::InFlight,
            CallState::Succeeded,
            CallState::Failed,
            CallState::Unknown
        ])
        .prop_map(|state| Event::Journal { state }),
    ]
}

fn attempt() -> impl Strategy<Value = AttemptRecord> {
    let failure = (
        prop::sample::select(vec![
            TransportFailureKind::ConnectFailed,
            TransportFailureKind::TimedOutAfterSend,
            TransportFailureKind::FailedAfterSend,
        ]),
        text(),
    )
        .prop_map(|(kind, message)| TransportFailure::new(kind, message));
    (
        (
            any::<u32>(),
            json(),
            prop::option::of(any::<u16>()),
            prop::option::of(failure),
            prop::option::of(category()),
            prop::option::of(text()),
        ),
        (
            prop::sample::select(vec![
                RetryPermission::Allowed,
                RetryPermission::Refused,
                RetryPermission::Unspecified,
            ]),
            action(),
            any::<u64>(),
            prop::sample::select(vec![
                PayloadSource::Caller,
                PayloadSource::Coercion,
                PayloadSource::Repair,
                PayloadSource::Llm,
                PayloadSource::Semantic,
            ]),
            prop::collection::vec(event(), 0..3),
        ),
    )
        .prop_map(
            |(
                (n, payload, status, transport_error, category, code),
                (retry_permission, action, timeout_ms, source, events),
            )| AttemptRecord {
                n,
                payload,
                status,
                transport_error,
                category,
                code,
                retry_permission,
                action,
                timeout_ms,
                source,
                facts: Default::default(),
                events,
            },
        )
}

fn report() -> impl Strategy<Value = CallReport> {
    let evidence = prop::sample::select(vec![
        Evidence::Caller,
        Evidence::Manifest,
        Evidence::McpAnnotation,
        Evidence::Method,
        Evidence::Default,
    ]);
    let verification = prop::option::of(prop::sample::select(vec![
        Verification::Verified,
        Verification::AlreadyApplied,
        Verification::NotCommitted,
        Verification::NotApplied,
        Verification::CannotTell,
        Verification::NotApplicable,
        Verification::Unneeded,
    ]));
    (
        (text(), outcome(), prop::collection::vec(attempt(), 0..4)),
        (any::<u32>(), any::<u32>(), any::<u64>(), any::<u64>()),
        (
            any::<u64>(),
            any::<bool>(),
            evidence,
            prop::option::of(text()),
        ),
        (
            prop::option::of(text()),
            verification,
            any::<u64>(),
            prop::option::of(settlement()),
        ),
        (
            prop::option::of(json()),
            prop::option::of(0u64..4_000_000_000_000),
        ),
    )
        .prop_map(
            |(
                (call_id, outcome, attempts),
                (http_calls, llm_calls, prompt, completion),
                (llm_ms, idempotent, from, idempotency_key),
                (operation_id, verification, elapsed_ms, settlement),
                (answer, ended_ms),
            )| CallReport {
                call_id,
                outcome,
                attempts,
                http_calls,
                llm_calls,
                tokens: TokenUsage { prompt, completion },
                llm_time: Duration::from_millis(llm_ms),
                idempotency: Idempotency { idempotent, from },
                idempotency_key,
                operation_id,
                verification,
                elapsed: Duration::from_millis(elapsed_ms),
                settlement,
                answer,
                ended_at: ended_ms.map(|ms| std::time::UNIX_EPOCH + Duration::from_millis(ms)),
            },
        )
}

fn settlement() -> impl Strategy<Value = Settlement> {
    let by = prop::sample::select(vec![
        SettledBy::Verification,
        SettledBy::Lookup,
        SettledBy::Person,
        SettledBy::Journal,
    ]);
    (
        by,
        text(),
        prop::option::of(text()),
        prop::option::of(text()),
    )
        .prop_map(|(by, at, who, note)| Settlement { by, at, who, note })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn write_json_gives_the_bytes_serde_json_gives(report in report(), before in "[a-z\\[,]{0,3}") {
        // The record is appended: what the buffer held stays.
        let mut fast = before.clone().into_bytes();
        report.write_json(&mut fast).unwrap();
        let serde = serde_json::to_vec(&report).unwrap();
        prop_assert_eq!(
            String::from_utf8(fast).unwrap(),
            before + &String::from_utf8(serde).unwrap()
        );
    }

    #[test]
    fn a_record_stored_beside_its_payload_reads_back_whole(
        report in report(),
        pick in any::<prop::sample::Index>(),
    ) {
        // The call's payload: one attempt's (so some are left out), or another.
        let payload = match report.attempts.len() {
            0 => serde_json::json!({"not": "sent"}),
            n => report.attempts[pick.index(n)].payload.clone(),
        };
        let stored = crate::journal::RecordJson::beside(&report, &payload).unwrap();
        let read: Value = serde_json::from_str(stored.as_str()).unwrap();
        // The payload as a journal reads it back from its own column.
        let payload_read: Value = serde_json::from_str(&payload.to_string()).unwrap();
        let whole = crate::journal::RecordJson::with_payloads(read, &payload_read);
        // As values read back the same way: the tool's data is kept as the
        // tool wrote it (its spacing too), and a number is read back as a
        // journal reads it.
        let read_whole: Value = serde_json::from_str(&serde_json::to_string(&report).unwrap()).unwrap();
        prop_assert_eq!(whole, read_whole);
    }
}
