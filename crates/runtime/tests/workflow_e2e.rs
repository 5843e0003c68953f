//! Workflows end to end over loopback: the reference tools, their catalogue,
//! the HTTP transport, and a fake OpenAI-compatible model (protocol §4 L4, §6).

use std::collections::HashMap;
use std::sync::Arc;

use recourse::record::PayloadSource;
use recourse::workflow::{ApproveAll, Catalogue, Plan, Workflow, WorkflowReport, WorkflowRunner};
use recourse::{CorrectionChain, Executor, ExecutorConfig, HttpTransport};
use recourse_reference_tools::{RunningTools, ToolsConfig, spawn};
use recourse_test_support::{FakeLlm, Reply};
use serde_json::{Value, json};

const REQUEST: &str = "Sell 100 Tesla shares and convert the proceeds to EUR";

async fn tools() -> RunningTools {
    spawn(ToolsConfig::default().with_correctable_amounts())
        .await
        .unwrap()
}

async fn run(tools: &RunningTools, llm: &FakeLlm, plan: Value) -> WorkflowReport {
    let config = ExecutorConfig {
        deadline: None,
        ..ExecutorConfig::default()
    };
    let vars = HashMap::from([
        ("RECOURSE_LLM_BASE_URL".to_owned(), llm.base_url.clone()),
        ("RECOURSE_LLM_API_KEY".to_owned(), "test-key".to_owned()),
        ("RECOURSE_LLM_MODEL".to_owned(), "fake-model".to_owned()),
    ]);
    let chain = Arc::new(CorrectionChain::from_vars(&config, &vars).unwrap());
    let executor = Executor::builder(HttpTransport::builder().build().unwrap())
        .with_config(config)
        .unwrap()
        .with_corrector(chain.clone())
        .build();
    let catalogue = Catalogue::fetch(&tools.base_url()).await.unwrap();
    let plan = Plan::from_json(plan.to_string().as_bytes()).unwrap();
    let workflow = Workflow::new(plan, &catalogue).unwrap();
    WorkflowRunner::new(executor)
        .with_correction_chain(chain)
        .with_approver(Arc::new(ApproveAll))
        .run(&workflow)
        .await
}

fn sell_and_convert(convert: Value) -> Value {
    let mut convert_step = json!({
        "step_id": "convert", "capability": "currency_convert", "depends_on": ["quote"],
        "parameters": {"amount": 0, "from": "USD", "to": "EUR"}
    });
    convert_step
        .as_object_mut()
        .unwrap()
        .extend(convert.as_object().unwrap().clone());
    json!({
        "plan_id": "sell-and-convert",
        "original_request": REQUEST,
        "steps": [
            {"step_id": "quote", "capability": "stock_quote", "parameters": {"symbol": "TSLA"}},
            convert_step
        ]
    })
}

#[tokio::test]
async fn the_convert_step_recovers_the_amount_from_the_quote_through_l4() {
    let tools = tools().await;
    let llm = FakeLlm::start(vec![
        Reply::json(json!({"can_fix": false, "analysis": "The error does not say what the amount should be."})),
        Reply::text(
            "Proceeds are 100 × 468.285.\n```json\n{\"should_retry\": true, \"analysis\": \"100 shares at 468.285 USD = 46828.5\", \"corrected_parameters\": {\"amount\": 46828.5, \"from\": \"USD\", \"to\": \"EUR\"}, \"is_transient_error\": false}\n```",
        ),
    ])
    .await;
    let report = run(&tools, &llm, sell_and_convert(json!({}))).await;

    assert!(report.success(), "{:#}", report.to_json());
    let convert = report.step("convert").unwrap();
    let call = convert.call.as_ref().unwrap();
    assert_eq!(call.attempts.len(), 2);
    assert_eq!(call.attempts[0].code.as_deref(), Some("INVALID_AMOUNT"));
    assert_eq!(call.attempts[1].source, PayloadSource::Semantic);
    assert_eq!(call.attempts[1].payload["amount"], json!(46828.5));
    let json = report.to_json();
    assert_eq!(json["steps"]["convert"]["data"]["amount"], json!(46828.5));
    assert_eq!(
        json["steps"]["convert"]["data"]["converted"],
        json!(43082.22)
    );
    assert_eq!(json["steps"]["convert"]["outcome"], "succeeded");
    assert_eq!(
        json["steps"]["convert"]["attempts"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    assert_eq!(llm.hits(), 2, "L3 once, then L4 once");
    let l4 = llm.seen()[1].prompt();
    assert!(l4.contains(REQUEST), "{l4}");
    assert!(l4.contains("STEP quote"), "{l4}");
    assert!(l4.contains("\"price\":468.285"), "{l4}");
    assert!(l4.contains(r#""amount":0"#), "the failed parameters: {l4}");
    assert!(l4.contains("INVALID_AMOUNT"), "the error: {l4}");
    tools.shutdown().await;
}

#[tokio::test]
async fn an_approved_amount_the_tool_refuses_is_never_changed() {
    let tools = tools().await;
    // A model that would happily "fix" the amount, if anyone asked it.
    let llm = FakeLlm::start(vec![Reply::json(json!({
        "should_retry": true, "analysis": "use the proceeds",
        "corrected_parameters": {"amount": 46828.5, "from": "USD", "to": "EUR"}, "is_transient_error": false
    }))])
    .await;
    let report = run(&tools, &llm, sell_and_convert(json!({"approval": true}))).await;

    let convert = report.step("convert").unwrap();
    assert_eq!(convert.outcome.name(), "failed", "{:#}", report.to_json());
    assert_eq!(
        convert.outcome.reason(),
        Some("every input is protected; nothing may be corrected")
    );
    assert_eq!(convert.outcome.error().unwrap().code, "INVALID_AMOUNT");
    let call = convert.call.as_ref().unwrap();
    assert_eq!(call.attempts.len(), 1, "sent once, as approved");
    assert_eq!(
        call.attempts[0].payload,
        json!({"amount": 0, "from": "USD", "to": "EUR"})
    );
    assert_eq!(
        llm.hits(),
        0,
        "no model was asked to change an approved value"
    );
    assert_eq!(report.exit_code(), 1);
    tools.shutdown().await;
}

#[tokio::test]
async fn without_the_tools_opt_in_the_refused_amount_stops_honestly() {
    let tools = spawn(ToolsConfig::default()).await.unwrap();
    let llm = FakeLlm::start(Vec::new()).await;
    let report = run(&tools, &llm, sell_and_convert(json!({}))).await;
    let convert = report.step("convert").unwrap();
    assert_eq!(convert.outcome.name(), "failed");
    assert_eq!(
        convert.outcome.reason(),
        Some("the tool refused retries (retryable: false)")
    );
    assert_eq!(llm.hits(), 0, "a refused retry never reaches a model");
    tools.shutdown().await;
}
