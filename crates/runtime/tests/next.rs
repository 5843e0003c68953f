//! What the record tells the model (`next`, `stop_kind`), on real calls to
//! the reference tools over loopback HTTP: a 401, a 422 policy refusal, a
//! missing version, an unknown-outcome export and an exhausted rate limit.

use std::sync::Arc;
use std::time::Duration;

use recourse::record::NextStep;
use recourse::{
    Call, CallBuilder, CallReport, CorrectionChain, Executor, ExecutorConfig, HttpTransport,
    ManualClock, StopKind,
};
use recourse_reference_tools::{RunningTools, ToolsConfig, spawn};
use serde_json::json;

/// A credential the caller holds; it must appear nowhere in the record.
const SECRET: &str = "sk-proj-Zq81mXv03KdP9wLr7TbN";

async fn tools(config: ToolsConfig, faults: &[&str]) -> RunningTools {
    let mut config = config.with_seed(1);
    for f in faults {
        config = config.with_fault(f.parse().unwrap());
    }
    spawn(config).await.unwrap()
}

/// The executor `recourse call` builds, without a model, on a manual clock.
fn executor(config: ExecutorConfig) -> Executor {
    let chain = Arc::new(CorrectionChain::new(&config));
    let transport = Arc::new(HttpTransport::builder().build().unwrap());
    Executor::standard(transport, config, chain)
        .unwrap()
        .with_clock(Arc::new(ManualClock::new()))
        .with_jitter_seed(5)
        .build()
}

async fn run(call: CallBuilder, config: ExecutorConfig) -> CallReport {
    let call = call
        .header("Authorization", format!("Bearer {SECRET}"))
        .build()
        .unwrap();
    executor(config).execute(call).await
}

/// The guarantees every record's `next` keeps, checked on its JSON form.
fn assert_fit_for_the_model(report: &CallReport) -> serde_json::Value {
    let json = report.to_json();
    let text = json.to_string();
    assert!(!text.contains(SECRET), "{text}");
    assert!(!text.contains("rk_live_"), "{text}");
    let message = json["next"]["model_message"].as_str().unwrap();
    assert!(message.chars().count() < 600, "{message}");
    assert!(!message.contains('\n'), "{message}");
    assert!(
        !message.contains("    at ") && !message.contains(".rs:"),
        "{message}"
    );
    assert_eq!(
        message.matches("<<<").count(),
        message.matches(">>>").count()
    );
    assert_eq!(report.next().model_message, message);
    json
}

#[tokio::test]
async fn a_401_says_fix_the_configuration() {
    let t = tools(ToolsConfig::default(), &["stock:auth"]).await;
    let call = Call::builder(
        format!("{}/api/stock/quote", t.base_url()),
        json!({"symbol": "TSLA"}),
    );
    let report = run(call, ExecutorConfig::default()).await;
    let json = assert_fit_for_the_model(&report);
    assert_eq!(json["reason"], "retry_refused");
    assert_eq!(json["stop_kind"], "auth");
    assert_eq!(json["next"]["step"], "fix_configuration");
    assert_eq!(report.stop_kind(), Some(StopKind::Auth));
    let message = json["next"]["model_message"].as_str().unwrap();
    assert!(message.contains("HTTP 401"), "{message}");
    assert!(message.contains("credentials"), "{message}");
    assert!(message.contains("api_key=[REDACTED]"), "{message}");
    assert!(json["next"].get("question").is_none());
}

#[tokio::test]
async fn a_422_policy_refusal_says_explain_it() {
    let t = tools(ToolsConfig::default(), &[]).await;
    let call = Call::builder(
        format!("{}/api/orders/refund", t.base_url()),
        json!({"order_id": "ORD-2002"}),
    )
    .protect("/order_id");
    let report = run(call, ExecutorConfig::default()).await;
    let json = assert_fit_for_the_model(&report);
    // The same reason as the 401: the kind tells them apart.
    assert_eq!(json["reason"], "retry_refused");
    assert_eq!(json["stop_kind"], "policy");
    assert_eq!(json["next"]["step"], "explain_refusal");
    let message = json["next"]["model_message"].as_str().unwrap();
    assert!(message.contains("HTTP 422"), "{message}");
    assert!(message.contains("refunds are possible within"), "{message}");
    assert!(message.contains("do not retry"), "{message}");
}

#[tokio::test]
async fn a_missing_version_asks_the_user_about_the_latest() {
    let t = tools(ToolsConfig::default(), &[]).await;
    let call = Call::builder(
        format!("{}/api/exports", t.base_url()),
        json!({"source_id": "sales-2024", "version": 4, "format": "pdf"}),
    )
    .non_idempotent()
    .protect("/source_id")
    .protect("/version");
    let report = run(call, ExecutorConfig::default()).await;
    let json = assert_fit_for_the_model(&report);
    assert_eq!(json["error"]["category"], "NOT_FOUND");
    assert_eq!(json["stop_kind"], "input");
    assert_eq!(json["next"]["step"], "ask_user");
    let question = "The tool has no version 4; the latest is 3. Should I use 3 instead?";
    assert_eq!(json["next"]["question"], question);
    let message = json["next"]["model_message"].as_str().unwrap();
    assert!(message.contains(question), "{message}");
    assert_eq!(t.exports_committed(), 0);
}

#[tokio::test]
async fn an_unknown_outcome_export_says_do_not_repeat_with_the_operation() {
    let t = tools(
        ToolsConfig::default().without_declared_lookups(),
        &["exports:unknown_outcome"],
    )
    .await;
    let call = Call::builder(
        format!("{}/api/exports", t.base_url()),
        json!({"source_id": "sales-2024", "format": "csv"}),
    )
    .non_idempotent();
    let report = run(call, ExecutorConfig::default()).await;
    let json = assert_fit_for_the_model(&report);
    assert_eq!(json["outcome"], "unknown");
    assert_eq!(json["reason"], "outcome_unknown");
    assert_eq!(json["stop_kind"], "unknown_outcome");
    assert_eq!(json["next"]["step"], "do_not_repeat");
    let op = report
        .operation_id
        .clone()
        .expect("the tool named the operation");
    assert_eq!(json["next"]["operation_id"], op.as_str());
    let message = json["next"]["model_message"].as_str().unwrap();
    assert!(
        message.contains(&format!("lookup /api/exports/{op}")),
        "{message}"
    );
    assert!(message.contains("do not repeat it"), "{message}");
    assert_eq!(t.exports_committed(), 1);
}

#[tokio::test]
async fn an_exhausted_rate_limit_gives_up_saying_when() {
    let slow = ToolsConfig::default().with_retry_after(Duration::from_secs(120));
    let t = tools(slow, &["weather:rate_limit"]).await;
    let call = Call::builder(
        format!("{}/api/weather/current", t.base_url()),
        json!({"location": "Dallas, Texas, US", "api_key": SECRET}),
    )
    .deadline(Duration::from_secs(10));
    let report = run(call, ExecutorConfig::default()).await;
    let json = assert_fit_for_the_model(&report);
    assert_eq!(json["reason"], "rate_limited");
    assert_eq!(json["stop_kind"], "transient");
    assert_eq!(json["next"]["step"], "give_up");
    assert_eq!(json["next"]["retry_after_ms"], 120_000);
    let message = json["next"]["model_message"].as_str().unwrap();
    assert!(message.contains("try again in 120 s or later"), "{message}");
    assert_eq!(report.http_calls, 1);
}

#[tokio::test]
async fn a_success_says_use_the_result() {
    let t = tools(ToolsConfig::default(), &[]).await;
    let call = Call::builder(
        format!("{}/api/stock/quote", t.base_url()),
        json!({"symbol": "TSLA"}),
    );
    let report = run(call, ExecutorConfig::default()).await;
    let json = assert_fit_for_the_model(&report);
    assert_eq!(json["stop_kind"], serde_json::Value::Null);
    assert_eq!(report.next().step, NextStep::UseResult);
    assert_eq!(
        json["next"]["model_message"],
        "The call succeeded. Now: use the result."
    );
}
