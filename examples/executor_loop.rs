//! recourse in your own agent loop: an OpenAI-compatible tool-calling loop
//! over plain reqwest, every tool call run by the executor.
//!
//! ```sh
//! cargo run --example executor_loop
//! ```
//!
//! It starts the reference tools in-process (the export tool set to lose its
//! answer after writing) and a scripted OpenAI-compatible model on loopback,
//! which asks for two tools at once: the weather in a place the tool does
//! not know as written, and an export. The loop offers the model the tools
//! of the server's capability manifest, runs each call the model makes
//! through the executor, and hands the model the record's `next` — never the
//! tool's raw error. Point `base_url` at any OpenAI-compatible server (with
//! its key) to drive it with a real model instead.

use std::process::ExitCode;
use std::sync::Arc;

use recourse::idempotency::Evidence;
use recourse::record::NextStep;
use recourse::workflow::{Catalogue, CatalogueEntry};
use recourse::{
    Call, CallReport, CorrectionChain, Executor, ExecutorConfig, HttpTransport, Method, Outcome,
};
use recourse_reference_tools::{ToolsConfig, spawn};
use recourse_test_support::{FakeLlm, Reply, ToolCall};
use serde_json::{Value, json};

/// The most model calls the loop makes before giving up.
const MAX_TURNS: usize = 6;

#[tokio::main]
async fn main() -> Result<ExitCode, Box<dyn std::error::Error>> {
    // The tools, and a model whose replies are scripted.
    let tools =
        spawn(ToolsConfig::default().with_fault("exports:unknown_outcome".parse()?)).await?;
    let llm = FakeLlm::start(vec![
        Reply::ToolCalls(vec![
            tool_call("weather_current", json!({"location": "Flower Mound, TX"})),
            tool_call("exports_create", json!({"source_id": "sales-2024", "format": "pdf"})),
        ]),
        Reply::text("It is sunny and 31.5 °C in Flower Mound, Texas, and your PDF export of sales-2024 is done."),
    ])
    .await;
    let base_url = llm.base_url.clone();

    // The executor: deterministic repair, no model of its own.
    let config = ExecutorConfig::default();
    let chain = Arc::new(CorrectionChain::new(&config));
    let transport = Arc::new(HttpTransport::builder().build()?);
    let executor = Executor::standard(transport, config, chain)?.build();

    // The tools the model may call: the server's manifest, as OpenAI function definitions.
    let catalogue = Catalogue::fetch(&tools.base_url()).await?;
    let definitions: Vec<Value> = catalogue.entries().map(definition).collect();

    let http = reqwest::Client::new();
    let mut messages = vec![
        json!({"role": "system", "content": "You help with weather and exports. Use the tools."}),
        json!({"role": "user", "content": "Weather in Flower Mound, TX? And export sales-2024 as a PDF."}),
    ];
    for _ in 0..MAX_TURNS {
        let reply: Value = http
            .post(format!("{base_url}/chat/completions"))
            .bearer_auth("sk-example")
            .json(&json!({"model": "scripted", "messages": messages, "tools": definitions}))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let message = reply["choices"][0]["message"].clone();
        messages.push(message.clone());
        let calls = message["tool_calls"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if calls.is_empty() {
            println!("model: {}", message["content"].as_str().unwrap_or_default());
            let writes = tools.exports_committed();
            println!("exports written: {writes}");
            return Ok(if writes == 1 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            });
        }
        for call in &calls {
            let content = answer(&executor, &catalogue, call).await;
            messages.push(json!({"role": "tool", "tool_call_id": call["id"], "content": content}));
        }
    }
    println!("the model did not finish within {MAX_TURNS} turns");
    Ok(ExitCode::FAILURE)
}

fn tool_call(name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        name: name.to_owned(),
        arguments,
    }
}

/// A capability as an OpenAI function definition.
fn definition(entry: &CatalogueEntry) -> Value {
    json!({"type": "function", "function": {
        "name": entry.name,
        "description": entry.description,
        "parameters": entry.input_schema.clone().unwrap_or_else(|| json!({"type": "object"})),
    }})
}

/// Runs one tool call through the executor; returns what the model reads.
async fn answer(executor: &Executor, catalogue: &Catalogue, call: &Value) -> String {
    let name = call["function"]["name"].as_str().unwrap_or_default();
    let arguments = call["function"]["arguments"].as_str().unwrap_or("{}");
    println!("model calls {name} {arguments}");
    let Some(entry) = catalogue.get(name) else {
        return format!("There is no tool called {name:?}.");
    };
    let Ok(arguments) = serde_json::from_str::<Value>(arguments) else {
        return "The arguments were not JSON; call the tool again with a JSON object.".to_owned();
    };
    let report = match prepare(entry, arguments) {
        Ok(call) => executor.execute(call).await,
        Err(e) => return format!("The call could not be built ({e}); nothing was sent."),
    };
    narrate(&report);
    // What the model reads: the record's decision, computed from its types.
    let next = report.next();
    let content = match (&report.outcome, next.step) {
        (Outcome::Succeeded { data }, NextStep::UseResult) => {
            json!({"result": data, "note": next.model_message})
        }
        _ => {
            json!({"next_step": next.step, "message": next.model_message, "question": next.question})
        }
    };
    println!("  the model reads: {content}");
    content.to_string()
}

/// The call, with everything the manifest says about the capability.
fn prepare(entry: &CatalogueEntry, arguments: Value) -> Result<Call, recourse::ConfigError> {
    let mut call = Call::builder(entry.url.clone(), arguments)
        .method(entry.method.parse::<Method>()?)
        .declared_by_tool(entry.idempotent, Evidence::Manifest)
        .capability(entry.name.clone());
    if let Some(schema) = &entry.input_schema {
        call = call.schema(schema.clone());
    }
    if let Some(lookup) = &entry.reconcile {
        call = call.reconcile_url(lookup.clone())?;
    }
    call.build()
}

fn narrate(report: &CallReport) {
    for attempt in &report.attempts {
        let status = attempt
            .status
            .map_or("no answer".to_owned(), |s| format!("HTTP {s}"));
        println!(
            "  attempt {} ({}): {status}, then {}",
            attempt.n,
            attempt.source.as_str(),
            attempt.action.name()
        );
        for note in attempt.notes() {
            println!("    {note}");
        }
    }
    println!("  outcome: {}", report.outcome.name());
}
