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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_coerced_call_lists_each_coercion_change_in_the_json_record() {
    let t = tools().await;
    let schema = schema_file(
        "convert",
        r#"{"type":"object","properties":{"amount":{"type":"number"},"from":{"type":"string"},"to":{"type":"string"},"memo":{"type":"string"}},"required":["amount","from","to"]}"#,
    );
    let out = call(
        &format!("{}/api/currency/convert", t.base_url()),
        r#"{"amount":"100","from":"USD","to":"EUR","memo":null}"#,
        &["--schema", schema.to_str().unwrap()],
    );
    let r = report(&out);
    assert_eq!(out.status.code(), Some(0), "{r:#}");
    assert_eq!(r["record_version"], 1);
    let first = &r["attempts"][0];
    assert_eq!(first["source"], "coercion");
    assert_eq!(
        first["payload"],
        serde_json::json!({"amount": 100, "from": "USD", "to": "EUR"})
    );
    let coerced = first["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "coerced")
        .unwrap_or_else(|| panic!("no coerced event: {first:#}"));
    assert_eq!(
        coerced["changes"],
        serde_json::json!([
            {"pointer": "/amount", "from": "100", "to": 100, "rule": "integer_string"},
            {"pointer": "/memo", "from": null, "rule": "null_omitted"}
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_llm_correction_rejected_by_the_gate_names_the_rule() {
    use recourse_test_support::{FakeLlm, Reply};
    let t = tools().await;
    let model = FakeLlm::start(vec![Reply::json(serde_json::json!({
        "can_fix": true,
        "analysis": "Add an override so the tool accepts it.",
        "corrected_payload": {"location": "Atlantis, Ocean, XX", "admin_override": true}
    }))])
    .await;
    let schema = schema_file(
        "weather-closed",
        r#"{"type":"object","properties":{"location":{"type":"string"}},"required":["location"],"additionalProperties":false}"#,
    );
    let url = format!("{}/api/weather/current", t.base_url());
    let base = model.base_url.clone();
    let out = tokio::task::spawn_blocking(move || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_recourse"));
        command
            .args([
                "call",
                &url,
                "--payload",
                r#"{"location":"Atlantis"}"#,
                "--json",
            ])
            .args(["--schema", schema.to_str().unwrap()])
            .env_remove("RECOURSE_JOURNAL");
        for var in MODEL_VARS {
            command.env_remove(var);
        }
        command
            .env("RECOURSE_LLM_BASE_URL", base)
            .env("RECOURSE_LLM_MODEL", "fake")
            .env("RECOURSE_SEMANTIC_RETRY", "false")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let r = report(&out);
    assert_eq!(out.status.code(), Some(1), "{r:#}");
    assert_eq!(r["reason"], "cannot_fix");
    assert_eq!(r["http_calls"], 1, "the rejected payload was never sent");
    let events = r["attempts"][0]["events"].as_array().unwrap();
    let llm = events
        .iter()
        .find(|e| e["kind"] == "correction" && e["layer"] == "llm")
        .unwrap_or_else(|| panic!("no llm correction event: {events:#?}"));
    assert_eq!(llm["verdict"], "rejected_by_gate");
    assert_eq!(llm["rule"], "unknown_field");
    assert!(llm["reason"].as_str().unwrap().contains("/admin_override"));
}
