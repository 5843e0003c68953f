//! Unknown outcomes against the reference export tool (protocol §5): reconcile
//! before any new write, never a blind resend.

use std::sync::Arc;

use recourse::reconcile::{ReconcileRequest, Reconciliation};
use recourse::record::{Event, LookupResult};
use recourse::transport::BoxFuture;
use recourse::{
    Call, CallBuilder, CallReport, Executor, HttpReconciler, HttpTransport, ManualClock,
    Reconciler, StopReason,
};
use recourse_reference_tools::{RunningTools, ToolsConfig, spawn};
use serde_json::json;

async fn tools(faults: &[&str]) -> RunningTools {
    let mut config = ToolsConfig::default().with_seed(1);
    for f in faults {
        config = config.with_fault(f.parse().unwrap());
    }
    spawn(config).await.unwrap()
}

fn executor() -> Executor {
    Executor::builder(HttpTransport::builder().build().unwrap())
        .with_clock(Arc::new(ManualClock::new()))
        .with_jitter_seed(3)
        .build()
}

fn export_call(tools: &RunningTools) -> CallBuilder {
    Call::builder(
        format!("{}/api/exports", tools.base_url()),
        json!({"source_id": "sales-2024", "format": "pdf"}),
    )
    .non_idempotent()
}

fn lookup_template(tools: &RunningTools) -> String {
    format!("{}/api/exports/{{operation_id}}", tools.base_url())
}

async fn run(call: CallBuilder) -> CallReport {
    executor().execute(call.build().unwrap()).await
}

#[tokio::test]
async fn unknown_outcome_is_reconciled_to_committed_with_one_write() {
    let tools = tools(&["exports:unknown_outcome"]).await;
    let call = export_call(&tools)
        .reconcile_url(lookup_template(&tools))
        .unwrap();
    let report = run(call).await;
    assert_eq!(report.outcome.name(), "succeeded", "{:?}", report.outcome);
    assert_eq!(tools.exports_committed(), 1);
    assert_eq!(report.http_calls, 1);
    assert_eq!(report.attempts[0].action.name(), "reconcile");
    assert!(report.operation_id.is_some());
    assert!(report.to_json()["data"]["operation_id"].is_string());
}

#[tokio::test]
async fn crash_after_commit_never_produces_a_second_export() {
    let tools = tools(&["exports:crash_after_commit"]).await;
    let call = export_call(&tools)
        .reconcile_url(lookup_template(&tools))
        .unwrap();
    let report = run(call).await;
    assert_eq!(report.outcome.name(), "succeeded");
    assert_eq!(tools.exports_committed(), 1);
    assert_eq!(report.http_calls, 1);
    assert!(report.attempts[0].transport_error.is_some());
}

/// Clears the tool's faults when it is asked to look up: the outage ended
/// while the agent checked.
struct OutageEnds {
    tools: Arc<RunningTools>,
    inner: HttpReconciler,
}

impl Reconciler for OutageEnds {
    fn reconcile<'a>(&'a self, request: ReconcileRequest<'a>) -> BoxFuture<'a, Reconciliation> {
        self.tools.set_faults(Vec::new());
        self.inner.reconcile(request)
    }
}

#[tokio::test]
async fn not_committed_leads_to_one_resend_with_the_same_key() {
    let tools = Arc::new(tools(&["exports:drop"]).await);
    let reconciler = OutageEnds {
        tools: Arc::clone(&tools),
        inner: HttpReconciler::new(lookup_template(&tools)).unwrap(),
    };
    let call = export_call(&tools).reconciler(Arc::new(reconciler));
    let report = run(call).await;
    assert_eq!(report.outcome.name(), "succeeded", "{:?}", report.outcome);
    assert_eq!(report.http_calls, 2);
    assert_eq!(tools.exports_committed(), 1);
    assert!(report.attempts[0].events.contains(&Event::Lookup {
        result: LookupResult::NotCommitted,
        detail: None
    }));
}

#[tokio::test]
async fn a_failed_lookup_stops_as_unknown_with_the_key_and_operation_id() {
    let tools = tools(&["exports:unknown_outcome"]).await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let template = format!(
        "http://{}/api/exports/{{operation_id}}",
        closed.local_addr().unwrap()
    );
    drop(closed);
    let report = run(export_call(&tools).reconcile_url(template).unwrap()).await;
    assert_eq!(report.outcome.name(), "unknown");
    assert_eq!(report.outcome.exit_code(), 3);
    assert_eq!(report.outcome.reason(), Some(&StopReason::OutcomeUnknown));
    assert_eq!(tools.exports_committed(), 1, "no second write");
    let json = report.to_json();
    assert!(json["idempotency_key"].is_string());
    assert!(json["operation_id"].is_string());
}

#[tokio::test]
async fn without_a_reconciler_an_unknown_outcome_stops_as_unknown() {
    let tools = tools(&["exports:unknown_outcome"]).await;
    let report = run(export_call(&tools)).await;
    assert_eq!(report.outcome.name(), "unknown");
    assert_eq!(report.http_calls, 1);
    assert_eq!(tools.exports_committed(), 1);
}

#[tokio::test]
async fn idempotent_capabilities_still_resend_on_5xx() {
    let tools = tools(&["stock:unavailable"]).await;
    let call = Call::builder(
        format!("{}/api/stock/quote", tools.base_url()),
        json!({"symbol": "TSLA"}),
    );
    let report = run(call).await;
    assert_eq!(report.outcome.reason(), Some(&StopReason::RetriesExhausted));
    assert_eq!(report.http_calls, 4);
    assert!(
        report.attempts[..3]
            .iter()
            .all(|a| a.action.name() == "retry_same" && a.status == Some(503))
    );
}
