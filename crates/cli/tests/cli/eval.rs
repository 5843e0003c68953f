//! `recourse eval` as a process: its exit codes (0 when every scenario that
//! ran passed, 1 when one failed, 2 for usage errors), the `--json` object on
//! stdout, the text scorecard and the `--html` file. What the scorecard says
//! is tested in-process, in `recourse-eval`.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

const LLM_VARS: [&str; 5] = [
    "RECOURSE_LLM_BASE_URL",
    "RECOURSE_LLM_API_KEY",
    "RECOURSE_LLM_MODEL",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
];

fn eval(args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_recourse"));
    cmd.arg("eval").args(args);
    for var in LLM_VARS {
        cmd.env_remove(var);
    }
    cmd.output().unwrap()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("recourse-eval-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn usage_errors_exit_2_and_say_what_is_wrong() {
    let out = eval(&["--scenario", "[unclosed"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unclosed"));
    let out = eval(&["--scenario", "no_such_scenario_*"]);
    assert_eq!(out.status.code(), Some(2));
    let out = eval(&["--suite", "/nonexistent/recourse-suite"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/recourse-suite"));
    let out = eval(&["--model", "gpt-5"]);
    assert_eq!(out.status.code(), Some(2));
    let out = eval(&["--k", "0"]);
    assert_eq!(out.status.code(), Some(2));
    let dir = temp_dir("broken");
    std::fs::write(dir.join("bad.json"), r#"{"id": "x"}"#).unwrap();
    let out = eval(&["--suite", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.json"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn eval_prints_the_scorecard_writes_the_page_and_exits_by_what_passed() {
    let dir = temp_dir("print");
    let page = dir.join("report.html");
    let out = eval(&[
        "--k",
        "1",
        "--scenario",
        "rate_limit_*",
        "--scenario",
        "control_stock_quote",
        "--html",
        page.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("recourse eval "), "{text}");
    assert!(text.contains("control_stock_quote"), "{text}");
    assert!(
        text.ends_with(&format!("HTML report: {}\n", page.display())),
        "{text}"
    );
    assert!(std::fs::read_to_string(&page).unwrap().contains("<svg"));

    let card = json(&eval(&["--json", "--k", "2", "--scenario", "control_*"]));
    assert_eq!(card["pass_k"]["k"], 2);

    // A suite whose acceptance cannot be met: exit 1, the scorecard printed.
    let scenario = r#"{
      "id": "strict_outage", "title": "t", "category": "SERVICE_ERROR",
      "task": {"route": "inventory", "payload": {"sku": "A"}},
      "tool": {"script": {"responses": [{"status": 503, "body": {"success": false,
        "error": {"code": "DOWN", "message": "down", "category": "SERVICE_ERROR", "retryable": true}}}]}},
      "accept": {"states": ["succeeded"]}
    }"#;
    std::fs::write(dir.join("strict.json"), scenario).unwrap();
    let out = eval(&["--json", "--k", "1", "--suite", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["unnecessary_stops"], 1);
    std::fs::remove_dir_all(dir).unwrap();
}
