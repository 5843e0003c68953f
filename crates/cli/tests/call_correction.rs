//! `recourse call` with correction: `--schema`, `--intent`, repair without a model.

use std::process::{Command, Output};

use recourse_reference_tools::{RunningTools, ToolsConfig, spawn};
use serde_json::Value;

const MODEL_VARS: [&str; 5] = [
    "RECOURSE_LLM_BASE_URL",
    "RECOURSE_LLM_API_KEY",
    "RECOURSE_LLM_MODEL",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
];

async fn tools() -> RunningTools {
    spawn(ToolsConfig::default()).await.unwrap()
}

fn call(url: &str, payload: &str, extra: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_recourse"));
    command
        .args([
            "call",
            url,
            "--payload",
            payload,
            "--backoff-ms",
            "0",
            "--json",
        ])
        .args(extra)
        .env_remove("RECOURSE_JOURNAL");
    for var in MODEL_VARS {
        command.env_remove(var);
    }
    command.output().unwrap()
}

fn report(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn schema_file(name: &str, text: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("recourse-{}-{name}.json", uuid::Uuid::now_v7()));
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flower_mound_is_repaired_from_the_tools_suggestion_without_a_model() {
    let t = tools().await;
    let schema = schema_file(
        "weather",
        r#"{"type":"object","properties":{"location":{"type":"string"},"units":{"enum":["metric","imperial"]}},"required":["location"]}"#,
    );
    let out = call(
        &format!("{}/api/weather/current", t.base_url()),
        r#"{"location":"Flower Mound, TX","units":"Imperial"}"#,
        &["--schema", schema.to_str().unwrap()],
    );
    let r = report(&out);
    assert_eq!(out.status.code(), Some(0), "{r:#}");
    assert_eq!(r["llm_calls"], 0);
    // The tool rejects the units first, then the place; each is repaired in turn.
    assert_eq!(r["attempts"][1]["source"], "repair");
    assert_eq!(
        r["attempts"][1]["payload"]["units"], "imperial",
        "near-miss by case"
    );
    assert_eq!(r["attempts"][2]["source"], "repair");
    assert_eq!(
        r["attempts"][2]["payload"]["location"],
        "Flower Mound, Texas, US"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_model_an_uncorrectable_failure_says_how_to_configure_one() {
    let t = tools().await;
    let out = call(
        &format!("{}/api/weather/current", t.base_url()),
        r#"{"location":"Atlantis"}"#,
        &["--intent", "weather in Atlantis"],
    );
    let r = report(&out);
    assert_eq!(out.status.code(), Some(1), "{r:#}");
    assert_eq!(r["reason"], "cannot_fix");
    let notes = r["attempts"][0]["notes"].to_string();
    assert!(
        notes.contains("no model configured: set RECOURSE_LLM_BASE_URL"),
        "{notes}"
    );
}

#[test]
fn a_bad_schema_file_is_a_usage_error() {
    let invalid = schema_file("invalid", r#"{"type": 12}"#);
    let not_json = schema_file("not-json", "{");
    for path in [
        invalid.to_str().unwrap(),
        not_json.to_str().unwrap(),
        "/nonexistent/schema.json",
    ] {
        let out = call("http://127.0.0.1:9/x", "{}", &["--schema", path]);
        assert_eq!(out.status.code(), Some(2), "{path}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--schema"),
            "{path}"
        );
    }
}
