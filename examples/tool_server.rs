//! A tool server with `recourse-tool`, called through the executor.
//!
//! ```sh
//! cargo run --example tool_server
//! ```
//!
//! One tool, a temperature converter, that reports failures honestly: an
//! unknown unit is an `INPUT_ERROR` that says which field is wrong and which
//! values it takes, and permits a corrected call (`retryable: true`); a
//! temperature below absolute zero is refused outright, since only the user
//! knows what they meant. The server answers every bad body with an
//! envelope and lists the tool at `GET /api/capabilities`. The example
//! serves it on a loopback port, then calls it through the executor: a typo
//! in a unit is repaired without a model, the impossible temperature stops
//! with what to tell the model, and a body missing a field gets an envelope
//! naming it.

use std::future::IntoFuture;
use std::process::ExitCode;
use std::sync::Arc;

use recourse::record::NextStep;
use recourse::{Call, CorrectionChain, Executor, ExecutorConfig, HttpTransport};
use recourse_tool::protocol::ToolError;
use recourse_tool::{
    Capability, ServerLimits, Success, ToolFailure, ToolJson, ToolResult, ToolServer,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Input of `POST /api/temperature/convert`.
#[derive(Deserialize, schemars::JsonSchema)]
struct ConvertInput {
    /// The temperature to convert.
    value: f64,
    /// Its unit: celsius, fahrenheit or kelvin.
    from: String,
    /// The unit wanted: celsius, fahrenheit or kelvin.
    to: String,
}

#[derive(Serialize)]
struct Converted {
    value: f64,
    unit: &'static str,
}

const UNITS: [&str; 3] = ["celsius", "fahrenheit", "kelvin"];

async fn convert(ToolJson(input): ToolJson<ConvertInput>) -> ToolResult<Converted> {
    let from = unit(&input.from, "from")?;
    let to = unit(&input.to, "to")?;
    let kelvin = match from {
        "celsius" => input.value + 273.15,
        "fahrenheit" => (input.value - 32.0) * 5.0 / 9.0 + 273.15,
        _ => input.value,
    };
    if kelvin < 0.0 {
        // Not retryable: no correction of ours knows what the user meant.
        return Err(ToolError::input_error(
            "BELOW_ABSOLUTE_ZERO",
            format!("{} {from} is below absolute zero", input.value),
        )
        .detail("field", "value")
        .into());
    }
    let value = match to {
        "celsius" => kelvin - 273.15,
        "fahrenheit" => (kelvin - 273.15) * 9.0 / 5.0 + 32.0,
        _ => kelvin,
    };
    Ok(Success(Converted {
        value: (value * 100.0).round() / 100.0,
        unit: to,
    }))
}

/// The unit named `name`, or an input error that says how to fix `field`.
fn unit(name: &str, field: &str) -> Result<&'static str, ToolFailure> {
    UNITS.iter().copied().find(|u| *u == name).ok_or_else(|| {
        ToolError::input_error(
            "UNKNOWN_UNIT",
            format!("{name:?} is not a unit this tool knows"),
        )
        .retryable(true)
        .detail("field", field)
        .detail("allowed_values", UNITS.join(", "))
        .into()
    })
}

#[tokio::main]
async fn main() -> Result<ExitCode, Box<dyn std::error::Error>> {
    let app = ToolServer::new()
        .tool(
            Capability::post::<ConvertInput>(
                "temperature_convert",
                "/api/temperature/convert",
                "Convert a temperature between celsius, fahrenheit and kelvin.",
            )
            .idempotent(),
            convert,
        )
        .into_router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = recourse_tool::serve(listener, app)
        .with_limits(ServerLimits::default())
        .with_graceful_shutdown(async {
            let _ = stopped.await;
        });
    let served = tokio::spawn(server.into_future());
    println!("serving the tool at {base}");

    let http = reqwest::Client::new();
    let manifest: Value = http
        .get(format!("{base}/api/capabilities"))
        .send()
        .await?
        .json()
        .await?;
    let capability = &manifest["data"]["capabilities"][0];
    println!(
        "manifest: {} at {} {}, idempotent: {}, required: {}",
        capability["name"],
        capability["method"],
        capability["endpoint"],
        capability["idempotent"],
        capability["input_schema"]["required"]
    );

    let config = ExecutorConfig::default();
    let chain = Arc::new(CorrectionChain::new(&config));
    let transport = Arc::new(HttpTransport::builder().build()?);
    let executor = Executor::standard(transport, config, chain)?.build();
    let url = format!("{base}/api/temperature/convert");
    let schema = capability["input_schema"].clone();

    println!("\n1. a typo in a unit: \"farenheit\"");
    let call = Call::builder(
        &url,
        json!({"value": 100, "from": "celsius", "to": "farenheit"}),
    )
    .schema(schema.clone())
    .build()?;
    let typo = executor.execute(call).await;
    let next = typo.next();
    println!(
        "   {} after {} attempt(s): {}",
        typo.outcome.name(),
        typo.attempts.len(),
        typo.to_json()["data"]
    );
    println!("   the model reads: {}", next.model_message);
    let repaired = next.step == NextStep::UseResult && typo.to_json()["data"]["value"] == 212.0;

    println!("\n2. a temperature below absolute zero");
    let call = Call::builder(
        &url,
        json!({"value": -300, "from": "celsius", "to": "kelvin"}),
    )
    .schema(schema)
    .build()?;
    let impossible = executor.execute(call).await;
    let next = impossible.next();
    println!(
        "   {} after {} attempt(s), next step {}",
        impossible.outcome.name(),
        impossible.attempts.len(),
        next.step
    );
    println!("   the model reads: {}", next.model_message);
    let stopped_once = next.step == NextStep::FixArguments && impossible.http_calls == 1;

    println!("\n3. a body without the field `to`, sent as it is");
    let reply = http
        .post(&url)
        .json(&json!({"value": 1, "from": "celsius"}))
        .send()
        .await?;
    let status = reply.status().as_u16();
    let envelope: Value = reply.json().await?;
    println!("   HTTP {status}: {envelope}");
    let named = status == 400 && envelope["error"]["details"]["field"] == "to";

    let _ = stop.send(());
    served.await?;
    Ok(if repaired && stopped_once && named {
        println!("\nall three went as described");
        ExitCode::SUCCESS
    } else {
        println!("\nsomething went otherwise than described");
        ExitCode::FAILURE
    })
}
