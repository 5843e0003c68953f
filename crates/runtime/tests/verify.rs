//! Settling unknown outcomes by reading back, over loopback HTTP: the
//! reference export tool with its read route, and a scripted tool that
//! answers success without doing anything.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::http::HeaderMap;
use axum::routing::post;
use recourse::policy::{Verification, VerifyResult};
use recourse::record::{Event, VerifyPhase};
use recourse::transport::{BoxFuture, Delivery, Request};
use recourse::{
    Call, CallBuilder, CallReport, Executor, HttpTransport, ManualClock, Method, StopReason,
    Transport, VerifySpec,
};
use recourse_reference_tools::{RunningTools, ToolsConfig, spawn};
use serde_json::{Value, json};

async fn tools(faults: &[&str]) -> Arc<RunningTools> {
    let mut config = ToolsConfig::default().with_seed(1);
    for f in faults {
        config = config.with_fault(f.parse().unwrap());
    }
    Arc::new(spawn(config).await.unwrap())
}

/// Clears the tools' faults after the first write is sent: the fault hit
/// one write, and the tool is healthy again for whatever follows.
struct FaultOnce {
    http: HttpTransport,
    tools: Arc<RunningTools>,
}

impl Transport for FaultOnce {
    fn send<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Delivery> {
        Box::pin(async move {
            let delivery = self.http.send(request).await;
            if request.target.as_str().ends_with("/api/exports") {
                self.tools.set_faults(Vec::new());
            }
            delivery
        })
    }
}

fn executor(tools: &Arc<RunningTools>) -> Executor {
    let http = HttpTransport::builder().build().unwrap();
    Executor::builder(FaultOnce {
        http,
        tools: Arc::clone(tools),
    })
    .with_clock(Arc::new(ManualClock::new()))
    .with_jitter_seed(3)
    .build()
}

/// Read back by its inputs: an export of this source in this format exists.
fn exported(tools: &RunningTools) -> VerifySpec {
    VerifySpec::url(format!("{}/api/exports/lookup", tools.base_url()))
        .args(json!({"source_id": "{{payload.source_id}}", "format": "{{payload.format}}"}))
        .expect("/latest exists")
        .expect("/latest/source_id == {{payload.source_id}}")
}

fn export(tools: &RunningTools, source: &str, format: &str) -> CallBuilder {
    Call::builder(
        format!("{}/api/exports", tools.base_url()),
        json!({"source_id": source, "format": format}),
    )
    .non_idempotent()
}

fn verify_events(report: &CallReport) -> Vec<(VerifyPhase, VerifyResult)> {
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

#[tokio::test]
async fn a_commit_whose_reply_was_lost_is_verified_by_reading_back() {
    let tools = tools(&["exports:crash_after_commit"]).await;
    let call = export(&tools, "inventory", "csv").verify(exported(&tools));
    let report = executor(&tools).execute(call.build().unwrap()).await;
    assert_eq!(report.outcome.name(), "succeeded", "{}", report.to_json());
    assert_eq!(report.verification, Some(Verification::Verified));
    assert_eq!(report.to_json()["verification"], "verified");
    assert_eq!(tools.exports_committed(), 1);
    assert_eq!(report.attempts.len(), 1, "never resent");
    assert_eq!(report.http_calls, 1, "reads are not attempts");
    assert_eq!(report.attempts[0].action.name(), "reconcile");
    assert_eq!(
        verify_events(&report),
        [
            (VerifyPhase::Before, VerifyResult::NotHeld),
            (VerifyPhase::After, VerifyResult::Holds)
        ]
    );
    let data = report.to_json()["data"].clone();
    assert_eq!(data["latest"]["file_name"], "inventory-v2.csv", "{data}");
}

#[tokio::test]
async fn a_dropped_write_is_found_not_applied_and_resent_once_with_the_same_key() {
    let tools = tools(&["exports:drop"]).await;
    let call = export(&tools, "inventory", "csv").verify(exported(&tools));
    let report = executor(&tools).execute(call.build().unwrap()).await;
    assert_eq!(report.outcome.name(), "succeeded", "{}", report.to_json());
    assert_eq!(report.verification, Some(Verification::Verified));
    assert_eq!(tools.exports_committed(), 1);
    assert_eq!(report.attempts.len(), 2);
    assert_eq!(report.attempts[0].action.name(), "reconcile");
    assert_eq!(
        report.attempts[1].action.name(),
        "verify",
        "the resend is read back too"
    );
    assert_eq!(
        verify_events(&report),
        [
            (VerifyPhase::Before, VerifyResult::NotHeld),
            (VerifyPhase::After, VerifyResult::NotHeld),
            (VerifyPhase::After, VerifyResult::Holds)
        ]
    );
    assert!(report.idempotency_key.is_some());
}

/// Read back a create that is not unique: one more export of this source
/// and format than before, not merely one.
fn one_more_export(tools: &RunningTools) -> VerifySpec {
    VerifySpec::url(format!("{}/api/exports/lookup", tools.base_url()))
        .args(json!({"source_id": "{{payload.source_id}}", "format": "{{payload.format}}"}))
        .expect(r#"/exports any {"/source_id": "{{payload.source_id}}", "/format": "{{payload.format}}"}"#)
        .expect("/exports grew_by 1")
}

#[tokio::test]
async fn a_create_made_before_is_not_taken_for_the_lost_one() {
    for (fault, resent) in [
        ("exports:crash_after_commit", false),
        ("exports:drop", true),
    ] {
        let tools = tools(&[]).await;
        let first = export(&tools, "sales-2024", "pdf").build().unwrap();
        assert_eq!(
            executor(&tools).execute(first).await.outcome.name(),
            "succeeded"
        );
        tools.set_faults(vec![fault.parse().unwrap()]);
        let call = export(&tools, "sales-2024", "pdf").verify(one_more_export(&tools));
        let report = executor(&tools).execute(call.build().unwrap()).await;
        assert_eq!(
            report.outcome.name(),
            "succeeded",
            "{fault}: {}",
            report.to_json()
        );
        assert_eq!(
            report.verification,
            Some(Verification::Verified),
            "{fault}: never already_applied for a change"
        );
        assert_eq!(
            tools.exports_committed(),
            2,
            "{fault}: exactly one more export"
        );
        assert_eq!(report.attempts.len(), 1 + usize::from(resent), "{fault}");
        let expected: &[(VerifyPhase, VerifyResult)] = if resent {
            &[
                (VerifyPhase::Before, VerifyResult::NotHeld),
                (VerifyPhase::After, VerifyResult::NotHeld),
                (VerifyPhase::After, VerifyResult::Holds),
            ]
        } else {
            &[
                (VerifyPhase::Before, VerifyResult::NotHeld),
                (VerifyPhase::After, VerifyResult::Holds),
            ]
        };
        assert_eq!(verify_events(&report), expected, "{fault}");
    }
}

#[tokio::test]
async fn a_verification_that_does_not_apply_leaves_the_write_as_undeclared() {
    let tools = tools(&["exports:crash_after_commit"]).await;
    let spec = exported(&tools).expect("/latest/version == {{payload.version}}");
    let call = export(&tools, "inventory", "csv").verify_if_applicable(spec.clone());
    let report = executor(&tools).execute(call.build().unwrap()).await;
    assert_eq!(report.outcome.name(), "unknown", "{}", report.to_json());
    assert_eq!(report.verification, Some(Verification::NotApplicable));
    assert_eq!(report.to_json()["verification"], "not_applicable");
    assert!(verify_events(&report).is_empty(), "no read was made");
    assert_eq!(tools.exports_committed(), 1, "the write was sent, once");
    let strict = export(&tools, "inventory", "csv").verify(spec).build();
    assert_eq!(strict.unwrap_err().setting(), "verify");
}

#[tokio::test]
async fn an_effect_present_before_the_write_is_already_applied() {
    let tools = tools(&[]).await;
    let first = export(&tools, "sales-2024", "pdf").build().unwrap();
    assert_eq!(
        executor(&tools).execute(first).await.outcome.name(),
        "succeeded"
    );
    tools.set_faults(vec!["exports:unknown_outcome".parse().unwrap()]);
    let call = export(&tools, "sales-2024", "pdf").verify(exported(&tools));
    let report = executor(&tools).execute(call.build().unwrap()).await;
    assert_eq!(report.outcome.name(), "succeeded", "{}", report.to_json());
    assert_eq!(report.verification, Some(Verification::AlreadyApplied));
    assert_eq!(report.attempts.len(), 1);
}

#[tokio::test]
async fn a_read_that_fails_leaves_the_outcome_unknown() {
    let tools = tools(&["exports:crash_after_commit"]).await;
    let spec = VerifySpec::url(format!("{}/api/nothing-here", tools.base_url()))
        .expect("/latest exists")
        .after_only();
    let call = export(&tools, "inventory", "csv").verify(spec);
    let report = executor(&tools).execute(call.build().unwrap()).await;
    assert_eq!(report.outcome.name(), "unknown");
    assert_eq!(report.outcome.reason(), Some(&StopReason::OutcomeUnknown));
    assert_eq!(report.verification, Some(Verification::CannotTell));
    assert_eq!(
        verify_events(&report),
        [(VerifyPhase::After, VerifyResult::CannotTell)],
        "after_only skips the read before"
    );
    assert_eq!(tools.exports_committed(), 1);
}

#[test]
fn a_malformed_verification_is_refused_before_anything_is_sent() {
    let call = |spec: VerifySpec| {
        Call::builder("http://127.0.0.1:1/api/exports", json!({"source_id": "s"}))
            .verify(spec)
            .build()
            .unwrap_err()
    };
    let e = call(VerifySpec::url("http://127.0.0.1:1/r").expect("/x == {{payload.format}}"));
    assert_eq!(e.setting(), "verify");
    assert!(e.to_string().contains("\"format\""), "{e}");
    let e = call(VerifySpec::url("http://127.0.0.1:1/r").expect("x exists"));
    assert!(e.to_string().contains("JSON Pointer"), "{e}");
    let e = call(VerifySpec::tool("get_export").expect("/x exists"));
    assert!(e.to_string().contains("this call is HTTP"), "{e}");
}

/// A scripted order service whose cancel answers success and changes
/// nothing (a silent no-op); its read needs the caller's bearer token.
async fn no_op_service() -> (String, Arc<AtomicU32>) {
    let reads = Arc::new(AtomicU32::new(0));
    let status = Arc::new(Mutex::new("pending"));
    let counted = Arc::clone(&reads);
    let app = axum::Router::new()
        .route(
            "/orders/cancel",
            post(|Json(body): Json<Value>| async move {
                Json(json!({"success": true, "data": {"order_id": body["order_id"], "status": "cancelled"}}))
            }),
        )
        .route(
            "/orders/get",
            post(move |headers: HeaderMap, Json(body): Json<Value>| {
                let status = Arc::clone(&status);
                let counted = Arc::clone(&counted);
                async move {
                    counted.fetch_add(1, Ordering::SeqCst);
                    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some("Bearer t") {
                        return (
                            axum::http::StatusCode::UNAUTHORIZED,
                            Json(json!({"success": false, "error": {"code": "NO_TOKEN", "message": "token", "category": "AUTH_ERROR"}})),
                        );
                    }
                    let now = *status.lock().unwrap();
                    (
                        axum::http::StatusCode::OK,
                        Json(json!({"success": true, "data": {"order_id": body["order_id"], "status": now}})),
                    )
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, reads)
}

fn cancel(base: &str) -> CallBuilder {
    Call::builder(format!("{base}/orders/cancel"), json!({"order_id": "W7"}))
        .non_idempotent()
        .header("Authorization", "Bearer t")
}

fn cancelled(base: &str) -> VerifySpec {
    VerifySpec::url(format!("{base}/orders/get"))
        .args(json!({"order_id": "{{payload.order_id}}"}))
        .expect(r#"/status == "cancelled""#)
}

fn plain_executor() -> Executor {
    Executor::builder(HttpTransport::builder().build().unwrap())
        .with_clock(Arc::new(ManualClock::new()))
        .build()
}

#[tokio::test]
async fn a_success_that_did_nothing_is_failed_not_applied_with_verify_always() {
    let (base, reads) = no_op_service().await;
    let call = cancel(&base).verify(cancelled(&base).always());
    let report = plain_executor().execute(call.build().unwrap()).await;
    assert_eq!(report.outcome.name(), "failed", "{}", report.to_json());
    assert_eq!(report.outcome.reason(), Some(&StopReason::NotApplied));
    assert_eq!(report.outcome.exit_code(), 1);
    assert_eq!(report.verification, Some(Verification::NotApplied));
    let json = report.to_json();
    assert_eq!(json["reason"], "not_applied");
    assert_eq!(json["next"]["step"], "do_not_repeat");
    assert_eq!(report.attempts.len(), 1, "a silent no-op is never resent");
    assert_eq!(report.attempts[0].action.name(), "verify");
    assert_eq!(
        reads.load(Ordering::SeqCst),
        2,
        "before and after, with the caller's token"
    );

    // Without `always`, the tool's word stands (and the record says nothing had to be settled).
    let report = plain_executor()
        .execute(cancel(&base).verify(cancelled(&base)).build().unwrap())
        .await;
    assert_eq!(report.outcome.name(), "succeeded");
    assert_eq!(report.verification, Some(Verification::Unneeded));
    assert_eq!(report.to_json()["verification"], "unneeded");
}

#[tokio::test]
async fn a_get_read_sends_the_arguments_as_query_parameters() {
    let app = axum::Router::new().route(
        "/orders",
        axum::routing::get(
            |axum::extract::Query(q): axum::extract::Query<std::collections::HashMap<String, String>>| async move {
                Json(json!({"success": true, "data": {"order_id": q.get("order_id"), "status": "cancelled"}}))
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let (write_base, _) = no_op_service().await;
    let spec = VerifySpec::url(format!("{base}/orders"))
        .method(Method::Get)
        .args(json!({"order_id": "{{payload.order_id}}"}))
        .expect("/order_id == {{payload.order_id}}")
        .expect(r#"/status == "cancelled""#)
        .always();
    let report = plain_executor()
        .execute(cancel(&write_base).verify(spec).build().unwrap())
        .await;
    assert_eq!(report.outcome.name(), "succeeded", "{}", report.to_json());
    assert_eq!(report.verification, Some(Verification::AlreadyApplied));
}
