//! `RECOURSE_LLM_DEBUG_DIR` and `recourse debug llm`: a call corrected by a
//! scripted model leaves one redacted file per exchange, and the command
//! lists them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use recourse_reference_tools::{ToolsConfig, spawn};
use recourse_test_support::{FakeLlm, Reply};
use serde_json::{Value, json};

/// A credential the call's payload (and so the tool's error) carries.
const SECRET: &str = "ghp_PLa1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q7";

const MODEL_VARS: [&str; 5] = [
    "RECOURSE_LLM_BASE_URL",
    "RECOURSE_LLM_API_KEY",
    "RECOURSE_LLM_MODEL",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
];

fn recourse(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_recourse"));
    command
        .args(args)
        .env_remove("RECOURSE_JOURNAL")
        .env_remove("RECOURSE_LLM_DEBUG")
        .env_remove("RECOURSE_LLM_DEBUG_DIR");
    for var in MODEL_VARS {
        command.env_remove(var);
    }
    command.envs(env.iter().copied());
    command.output().unwrap()
}

fn scratch() -> PathBuf {
    std::env::temp_dir().join(format!("recourse-llm-debug-{}", uuid::Uuid::now_v7()))
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrected_call_leaves_redacted_files_that_debug_llm_lists() {
    let tools = spawn(ToolsConfig::default()).await.unwrap();
    let model = FakeLlm::start(vec![Reply::json(json!({
        "can_fix": true,
        "analysis": "The place is a myth; use a real one.",
        "corrected_payload": {"location": "Flower Mound, Texas, US"}
    }))])
    .await;
    let dir = scratch();
    let url = format!("{}/api/weather/current", tools.base_url());
    let payload = json!({"location": format!("Atlantis {SECRET}")}).to_string();
    let (base, dir_text) = (model.base_url.clone(), dir.display().to_string());
    let out = tokio::task::spawn_blocking(move || {
        recourse(
            &["call", &url, "--payload", &payload, "--json"],
            &[
                ("RECOURSE_LLM_BASE_URL", &base),
                ("RECOURSE_LLM_MODEL", "fake"),
                ("RECOURSE_SEMANTIC_RETRY", "false"),
                ("RECOURSE_LLM_DEBUG_DIR", &dir_text),
            ],
        )
    })
    .await
    .unwrap();
    // The location holds a secret, so the model saw it as `Atlantis
    // [REDACTED]`, and the value is protected: its rewrite of the whole
    // location would drop the caller's secret, and the gate refuses it.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let refused = report["attempts"][0]["events"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["verdict"] == "rejected_by_gate" && e["rule"] == "protected_changed");
    assert!(refused, "{report}");
    assert_eq!(
        report["http_calls"], 1,
        "the refused proposal was never sent"
    );
    assert_eq!(model.hits(), 1);
    assert!(
        model.seen()[0].prompt().contains("Atlantis"),
        "the model saw the failing payload"
    );

    let files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let written = std::fs::read_to_string(&files[0]).unwrap();
    assert!(!written.contains("PLa1b2c3"), "redacted: {written}");
    let record: Value = serde_json::from_str(&written).unwrap();
    assert_eq!(record["layer"], "llm");
    assert_eq!(record["answered"], true);
    assert!(
        record["prompt"][1]["content"]
            .as_str()
            .unwrap()
            .contains("Atlantis")
    );
    assert!(record["reply"].as_str().unwrap().contains("Flower Mound"));
    assert!(record["prompt_tokens"].as_u64().unwrap() > 0);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&files[0]), 0o600);
    }

    let listed = recourse(
        &[
            "debug",
            "llm",
            "--dir",
            &dir.display().to_string(),
            "--json",
        ],
        &[],
    );
    assert_eq!(listed.status.code(), Some(0), "{}", text(&listed));
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let entry = &listed.as_array().unwrap()[0];
    assert_eq!(entry["layer"], "llm");
    assert_eq!(entry["attempt"], 1);
    assert_eq!(entry["answered"], true);
    assert_eq!(
        entry["target"],
        format!("{}/api/weather/current", tools.base_url())
    );
    assert_eq!(entry["prompt_tokens"], record["prompt_tokens"]);

    // The variable names the directory as well as the flag does.
    let human = recourse(
        &["debug", "llm"],
        &[("RECOURSE_LLM_DEBUG_DIR", &dir.display().to_string())],
    );
    let human = text(&human);
    assert!(
        human.contains("llm") && human.contains("answered"),
        "{human}"
    );
    assert!(
        human.contains(&record["at"].as_str().unwrap()[..19]),
        "{human}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn debug_llm_needs_a_directory_it_can_read() {
    let out = recourse(&["debug", "llm"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("RECOURSE_LLM_DEBUG_DIR"),
        "{}",
        text(&out)
    );
    let missing = scratch();
    let out = recourse(
        &["debug", "llm", "--dir", &missing.display().to_string()],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("reading the LLM debug directory"),
        "{}",
        text(&out)
    );
    assert!(!missing.exists(), "listing creates nothing");
}

#[test]
fn an_unwritable_debug_dir_stops_a_call_before_it_runs() {
    let file = scratch();
    std::fs::write(&file, "a file, not a directory").unwrap();
    let out = recourse(
        &["call", "http://127.0.0.1:9/tool", "--payload", "{}"],
        &[("RECOURSE_LLM_DEBUG_DIR", &file.display().to_string())],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("RECOURSE_LLM_DEBUG_DIR"),
        "{}",
        text(&out)
    );
    std::fs::remove_file(&file).unwrap();
}
