//! A rig agent whose tools run through recourse.
//!
//! ```sh
//! cargo run --example rig_agent
//! ```
//!
//! rig's own agent loop and OpenAI client, talking to a scripted
//! OpenAI-compatible model on loopback. The tools are the reference tools,
//! started in-process: the weather tool over HTTP, wrapped from the server's
//! capability manifest, and the export tool over MCP, wrapped from
//! `tools/list` of recourse's MCP server in front of it. The export tool is
//! set to write and then lose its answer. The model asks for the weather in
//! a place the tool does not know as written (recourse repairs it), then
//! for an export (its outcome is unknown: the model is told not to repeat
//! it), then — ignoring that — for the same export again, which the adapter
//! does not send. The tool counts one write.
//!
//! To use a real model, build the client from the environment instead:
//! `OpenAIConfig::from_env()?` (with rig-core's `rustls` feature for https).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use recourse::{CallReport, CorrectionChain, Executor, ExecutorConfig, HttpTransport};
use recourse_mcp::{McpTarget, McpTransport};
use recourse_reference_tools::{RunningTools, ToolsConfig, spawn};
use recourse_rig::{RecourseTool, http_tools, mcp_tools};
use recourse_test_support::{FakeLlm, Reply};
use rig_agent::AgentBuilder;
use rig_core::providers::openai::OpenAIConfig;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<ExitCode, Box<dyn std::error::Error>> {
    let tools =
        spawn(ToolsConfig::default().with_fault("exports:unknown_outcome".parse()?)).await?;
    let export = json!({"source_id": "sales-2024", "format": "pdf"});
    let llm = FakeLlm::start(vec![
        Reply::tool_call("weather_current", json!({"location": "Flower Mound, TX"})),
        Reply::tool_call("exports_create", export.clone()),
        Reply::tool_call("exports_create", export),
        Reply::text(
            "It is sunny in Flower Mound, Texas. The export may or may not have been written: \
             please check before I try again.",
        ),
    ])
    .await;

    // One executor (deterministic repair, no model of its own) for both kinds of tool.
    let config = ExecutorConfig::default();
    let chain = Arc::new(CorrectionChain::new(&config));
    let executor =
        Executor::standard(Arc::new(HttpTransport::builder().build()?), config, chain)?.build();

    // The weather tool over HTTP, from the manifest; the export tool over MCP, from tools/list.
    let mut wrapped: Vec<RecourseTool> = http_tools(&executor, &tools.base_url())
        .await?
        .into_iter()
        .filter(|t| t.name() == "weather_current")
        .collect();
    let mcp = McpTransport::connect(
        McpTarget::url(&mcp_endpoint(&tools).await?)?,
        Duration::from_secs(20),
    )
    .await?;
    wrapped.extend(
        mcp_tools(&executor, mcp)
            .await?
            .into_iter()
            .filter(|t| t.name() == "exports_create"),
    );

    let model = OpenAIConfig::new("sk-example")
        .with_base_url(&llm.base_url)
        .client()
        .chat("scripted-model");
    let agent = AgentBuilder::new(model)
        .preamble("You help with weather and exports. Use the tools.")
        .dynamic_tools(
            wrapped
                .into_iter()
                .map(|t| t.with_report_hook(narrate).into_dynamic())
                .collect(),
        )
        .build();

    let response = agent
        .prompt("What's the weather in Flower Mound, TX? And export sales-2024 as a PDF.")
        .max_turns(6)
        .await?;

    println!("\nwhat the model read after each tool call:");
    let seen = llm.seen();
    for (n, (_, content)) in seen
        .last()
        .map(|s| s.tool_results())
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        println!("{}. {}\n", n + 1, content.replace('\n', "\n   "));
    }
    println!("model: {}", response.output());
    let writes = tools.exports_committed();
    println!("exports written: {writes}");
    Ok(if writes == 1 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Prints what recourse did for each call it ran.
fn narrate(tool: &str, report: &CallReport) {
    let attempts = report.attempts.len();
    let next = report.next();
    println!(
        "{tool}: {} after {attempts} attempt(s), next step {}",
        report.outcome.name(),
        next.step
    );
}

/// The reference tools behind recourse's MCP server (Streamable HTTP) on loopback.
async fn mcp_endpoint(tools: &RunningTools) -> Result<String, Box<dyn std::error::Error>> {
    let server = recourse_mcp_server::McpToolServer::from_manifest(&tools.base_url()).await?;
    let app = axum::Router::new()
        .nest_service("/mcp", recourse_mcp_server::streamable_http_service(server));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(url)
}
