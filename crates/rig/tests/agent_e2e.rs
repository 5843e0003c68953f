//! A rig agent end to end: rig's own agent loop and OpenAI client, driven by a
//! scripted OpenAI-compatible model on loopback, calling the reference tools
//! through recourse-rig — over HTTP from their manifest, and over MCP from
//! `tools/list` (recourse's MCP server in front of the same tools).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use recourse::record::{Event, NextStep, PayloadSource, WaitCause};
use recourse::transport::{BoxFuture, Delivery, Request};
use recourse::{CallReport, CorrectionChain, Executor, ExecutorConfig, HttpTransport, Transport};
use recourse_mcp::{McpTarget, McpTransport};
use recourse_reference_tools::{RunningTools, ToolsConfig, spawn};
use recourse_rig::{DO_NOT_REPEAT_LINE, RecourseTool, http_tools, mcp_tools};
use recourse_test_support::{FakeLlm, Reply};
use rig_agent::agent::{AgentHook, HookContext, OutcomeAction, OutcomeEvent};
use rig_agent::{Agent, AgentBuilder};
use rig_core::effect::Outcome;
use rig_core::providers::openai::OpenAIConfig;
use rig_core::tool::ToolResult;
use serde_json::json;

/// Every record the tools ran, with the tool's name.
type Reports = Arc<Mutex<Vec<(String, CallReport)>>>;

/// Keeps every tool result rig's loop received, as rig saw it.
#[derive(Clone, Default)]
struct ToolResults(Arc<Mutex<Vec<ToolResult>>>);

impl AgentHook for ToolResults {
    async fn on_outcome(&self, _ctx: &HookContext, event: OutcomeEvent<'_>) -> OutcomeAction {
        if let Ok(Outcome::ToolResult { result }) = event.outcome {
            self.0.lock().unwrap().push(result.clone());
        }
        OutcomeAction::proceed()
    }
}

impl ToolResults {
    fn all(&self) -> Vec<ToolResult> {
        self.0.lock().unwrap().clone()
    }
}

/// The standard executor with deterministic repair and no model of its own.
fn executor(transport: Arc<dyn Transport>) -> Executor {
    let config = ExecutorConfig::default();
    let chain = Arc::new(CorrectionChain::new(&config));
    Executor::standard(transport, config, chain)
        .unwrap()
        .build()
}

fn http_executor() -> Executor {
    executor(Arc::new(HttpTransport::builder().build().unwrap()))
}

/// rig's agent on the scripted model, with `tools`, keeping their records.
fn agent(llm: &FakeLlm, tools: Vec<RecourseTool>, reports: &Reports) -> Agent {
    let model = OpenAIConfig::new("sk-scripted")
        .with_base_url(&llm.base_url)
        .client()
        .chat("scripted-model");
    let tools = tools
        .into_iter()
        .map(|tool| {
            let reports = Arc::clone(reports);
            tool.with_report_hook(move |name, report| {
                reports
                    .lock()
                    .unwrap()
                    .push((name.to_owned(), report.clone()));
            })
            .into_dynamic()
        })
        .collect();
    AgentBuilder::new(model)
        .preamble("You help with weather and exports. Use the tools.")
        .dynamic_tools(tools)
        .build()
}

/// Runs `prompt` to its end and returns the agent's final text.
async fn run(agent: &Agent, prompt: &str, hook: &ToolResults) -> String {
    agent
        .prompt(prompt)
        .max_turns(6)
        .add_hook(hook.clone())
        .await
        .expect("the agent run ends with an answer")
        .output()
}

fn only_report(reports: &Reports) -> (String, CallReport) {
    let reports = reports.lock().unwrap();
    assert_eq!(reports.len(), 1, "one call ran through the executor");
    reports[0].clone()
}

/// The text the model read for its `n`th tool call (0-based), from the
/// request that followed it.
fn told(llm: &FakeLlm, n: usize) -> String {
    let seen = llm.seen();
    let results = seen.last().expect("the model was asked").tool_results();
    results
        .get(n)
        .map(|(_, content)| content.clone())
        .unwrap_or_else(|| panic!("no tool message {n} in {results:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_location_the_tool_does_not_know_is_corrected_before_the_model_sees_it() {
    let tools = spawn(ToolsConfig::default()).await.unwrap();
    let llm = FakeLlm::start(vec![
        Reply::tool_call("weather_current", json!({"location": "Flower Mound, TX"})),
        Reply::text("It is mild in Flower Mound, Texas."),
    ])
    .await;
    let reports = Reports::default();
    let hook = ToolResults::default();
    let wrapped = http_tools(&http_executor(), &tools.base_url())
        .await
        .unwrap();
    let agent = agent(&llm, wrapped, &reports);

    let answer = run(&agent, "What's the weather in Flower Mound, TX?", &hook).await;
    assert_eq!(answer, "It is mild in Flower Mound, Texas.");

    let first = &llm.seen()[0].body;
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(offered.contains(&"weather_current"), "{offered:?}");
    assert!(offered.contains(&"exports_create"), "{offered:?}");

    let (name, report) = only_report(&reports);
    assert_eq!(name, "weather_current");
    assert_eq!(report.outcome.name(), "succeeded");
    assert_eq!(
        report.attempts.len(),
        2,
        "the failed call, then the repaired one"
    );
    assert_eq!(report.attempts[1].source, PayloadSource::Repair);
    assert_eq!(
        report.attempts[1].payload["location"],
        "Flower Mound, Texas, US"
    );
    assert_eq!(report.llm_calls, 0, "the repair needed no model");

    let text = told(&llm, 0);
    assert!(
        text.contains("Flower Mound"),
        "the data reached the model: {text}"
    );
    assert!(text.contains("recourse corrected the arguments"), "{text}");
    assert!(
        !text.contains("LOCATION_NOT_FOUND"),
        "the model never saw the 404: {text}"
    );
    let results = hook.all();
    assert_eq!(results.len(), 1);
    assert!(results[0].is_success());
    assert_eq!(llm.hits(), 2, "one model call to ask, one to answer");
}

/// The reference tools' transport, clearing their faults after the first
/// request: a quota window that ends.
struct Recovering {
    inner: HttpTransport,
    tools: Arc<RunningTools>,
    sent: AtomicU32,
}

impl Transport for Recovering {
    fn send<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Delivery> {
        Box::pin(async move {
            let delivery = self.inner.send(request).await;
            if self.sent.fetch_add(1, Ordering::SeqCst) == 0 {
                self.tools.set_faults(Vec::new());
            }
            delivery
        })
    }

    fn enforces_timeout(&self) -> bool {
        self.inner.enforces_timeout()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limit_is_waited_out_inside_one_tool_call() {
    let config = ToolsConfig::default()
        .with_fault("weather:rate_limit".parse().unwrap())
        .with_retry_after(Duration::from_millis(200));
    let tools = Arc::new(spawn(config).await.unwrap());
    let transport = Recovering {
        inner: HttpTransport::builder().build().unwrap(),
        tools: Arc::clone(&tools),
        sent: AtomicU32::new(0),
    };
    let llm = FakeLlm::start(vec![
        Reply::tool_call(
            "weather_current",
            json!({"location": "Paris, Ile-de-France, FR"}),
        ),
        Reply::text("Paris is pleasant today."),
    ])
    .await;
    let reports = Reports::default();
    let hook = ToolResults::default();
    let wrapped = http_tools(&executor(Arc::new(transport)), &tools.base_url())
        .await
        .unwrap();
    let agent = agent(&llm, wrapped, &reports);

    let answer = run(&agent, "Weather in Paris?", &hook).await;
    assert_eq!(answer, "Paris is pleasant today.");

    let (_, report) = only_report(&reports);
    assert_eq!(report.outcome.name(), "succeeded");
    assert_eq!(report.http_calls, 2, "the 429, then the same payload again");
    assert_eq!(report.attempts[0].status, Some(429));
    assert_eq!(report.attempts[0].payload, report.attempts[1].payload);
    assert!(
        report.attempts[0].events.iter().any(|e| matches!(
            e,
            Event::Waited { ms, cause: WaitCause::RetryAfter } if *ms >= 200
        )),
        "waited what the tool asked: {:?}",
        report.attempts[0].events
    );
    let text = told(&llm, 0);
    assert!(
        !text.contains("RATE_LIMIT"),
        "the model never saw the 429: {text}"
    );
    assert!(text.contains("temperature"), "{text}");
    assert!(hook.all()[0].is_success());
    assert_eq!(llm.hits(), 2, "the wait cost no model call");
}

/// The reference tools behind recourse's MCP server, on loopback.
async fn mcp_endpoint(tools: &RunningTools) -> String {
    let server = recourse_mcp_server::McpToolServer::from_manifest(&tools.base_url())
        .await
        .unwrap();
    let app = axum::Router::new()
        .nest_service("/mcp", recourse_mcp_server::streamable_http_service(server));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_with_an_unknown_outcome_is_not_repeated_even_when_the_model_asks_again() {
    let tools =
        spawn(ToolsConfig::default().with_fault("exports:unknown_outcome".parse().unwrap()))
            .await
            .unwrap();
    let url = mcp_endpoint(&tools).await;
    let transport = McpTransport::connect(McpTarget::url(&url).unwrap(), Duration::from_secs(20))
        .await
        .unwrap();
    let export = json!({"source_id": "sales-2024", "format": "pdf"});
    let llm = FakeLlm::start(vec![
        Reply::tool_call("exports_create", export.clone()),
        // A model that ignores what it was told, and asks for the same write.
        Reply::tool_call("exports_create", export.clone()),
        Reply::text("I could not confirm the export; please check before I try again."),
    ])
    .await;
    let reports = Reports::default();
    let hook = ToolResults::default();
    let wrapped = mcp_tools(&http_executor(), transport).await.unwrap();
    assert!(wrapped.iter().any(|t| t.name() == "exports_create"));
    let agent = agent(&llm, wrapped, &reports);

    let answer = run(&agent, "Export sales-2024 as a PDF.", &hook).await;
    assert!(answer.starts_with("I could not confirm the export"));

    assert_eq!(tools.exports_committed(), 1, "the tool counts one write");
    let (name, report) = only_report(&reports);
    assert_eq!(name, "exports_create");
    assert_eq!(report.outcome.name(), "unknown");
    assert_eq!(report.next().step, NextStep::DoNotRepeat);
    assert_eq!(
        report.http_calls, 1,
        "the executor did not resend the write"
    );

    let first = told(&llm, 0);
    assert!(first.starts_with(DO_NOT_REPEAT_LINE), "{first}");
    assert!(
        first.contains("recourse: next step do_not_repeat."),
        "{first}"
    );
    assert!(first.contains(&report.next().model_message), "{first}");
    let second = told(&llm, 1);
    assert!(second.starts_with(DO_NOT_REPEAT_LINE), "{second}");
    assert!(
        second.contains("recourse did not send this call"),
        "{second}"
    );

    let results = hook.all();
    assert_eq!(results.len(), 2);
    for result in &results {
        let error = result.error().expect("a failure, as rig sees it");
        assert_eq!(error.code(), Some("do_not_repeat"));
        assert_eq!(error.retryable(), Some(false));
        assert_eq!(
            error.http_status(),
            None,
            "the MCP exchange itself was HTTP 200"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_write_the_tool_lost_is_looked_up_and_the_model_told_it_happened() {
    let tools =
        spawn(ToolsConfig::default().with_fault("exports:unknown_outcome".parse().unwrap()))
            .await
            .unwrap();
    let llm = FakeLlm::start(vec![
        Reply::tool_call(
            "exports_create",
            json!({"source_id": "sales-2024", "format": "csv"}),
        ),
        Reply::text("Your export is ready."),
    ])
    .await;
    let reports = Reports::default();
    let hook = ToolResults::default();
    let wrapped = http_tools(&http_executor(), &tools.base_url())
        .await
        .unwrap();
    let agent = agent(&llm, wrapped, &reports);

    let answer = run(&agent, "Export sales-2024 as CSV.", &hook).await;
    assert_eq!(answer, "Your export is ready.");
    assert_eq!(tools.exports_committed(), 1);
    let (_, report) = only_report(&reports);
    assert_eq!(
        report.outcome.name(),
        "succeeded",
        "the manifest's lookup settled it"
    );
    assert_eq!(report.http_calls, 1, "looked up, not resent");
    let text = told(&llm, 0);
    assert!(
        text.contains("a lookup found the write committed"),
        "{text}"
    );
    assert!(text.contains("do not repeat it"), "{text}");
    assert!(hook.all()[0].is_success());
}
