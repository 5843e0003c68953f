//! The scorecard of whole evaluations, in-process: the suite's result and
//! its JSON shape, single scenarios judged, the scripted model's plumbing
//! check, a suite folder that fails or is broken, and the text and HTML
//! forms. (`recourse eval`'s own tests keep its flags, exit codes and
//! printing.)

use std::path::PathBuf;

use recourse_eval::{ModelChoice, RecoveryScorecard, Scenario, builtin, evaluate, from_dir};
use serde_json::Value;

/// The built-in scenarios `keep` accepts by id.
fn suite(keep: impl Fn(&str) -> bool) -> Vec<Scenario> {
    let chosen: Vec<Scenario> = builtin()
        .unwrap()
        .into_iter()
        .filter(|s| keep(s.id()))
        .collect();
    assert!(!chosen.is_empty(), "no scenario chosen");
    chosen
}

async fn card(scenarios: Vec<Scenario>, k: u32, model: ModelChoice) -> RecoveryScorecard {
    evaluate(scenarios, k, &model, &mut ()).await.unwrap()
}

fn scenario<'a>(card: &'a Value, id: &str) -> &'a Value {
    card["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no scenario {id}"))
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("recourse-eval-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test]
async fn the_full_suite_passes_without_a_model_and_skips_model_scenarios() {
    let scorecard = card(builtin().unwrap(), 3, ModelChoice::Absent).await;
    let card = scorecard.to_json();
    assert!(scorecard.all_passed(), "{card:#}");
    for field in [
        "scenarios",
        "runs",
        "skipped",
        "by_category",
        "success_rate",
        "false_recoveries",
        "unnecessary_stops",
        "pass_k",
        "results",
    ] {
        assert!(card.get(field).is_some(), "missing {field}");
    }
    assert!(card["scenarios"].as_u64().unwrap() >= 30);
    assert!(card["skipped"].as_u64().unwrap() > 0);
    assert_eq!(card["pass_k"]["k"], 3);
    assert_eq!(card["pass_k"]["rate"], 1.0);
    assert_eq!(card["false_recoveries"], 0);
    assert_eq!(card["unnecessary_stops"], 0);
    let categories = card["by_category"].as_object().unwrap();
    for c in [
        "INPUT_ERROR",
        "NOT_FOUND",
        "AUTH_ERROR",
        "PERMISSION_DENIED",
        "RATE_LIMIT",
        "SERVICE_ERROR",
        "POLICY_REJECTION",
        "UNKNOWN_OUTCOME",
        "TRANSPORT",
        "CONTROL",
    ] {
        let t = &categories[c];
        assert!(t["total"].as_u64().unwrap() > 0, "{c}");
        assert!(t.get("success").is_some(), "{c}");
    }
    let skipped = scenario(&card, "llm_fixes_date_format");
    assert_eq!(skipped["status"], "skipped");
    assert!(skipped["runs"].as_array().unwrap().is_empty());
    // Runs = non-skipped scenarios × k.
    let ran = card["scenarios"].as_u64().unwrap() - card["skipped"].as_u64().unwrap();
    assert_eq!(card["runs"].as_u64().unwrap(), ran * 3);
}

#[tokio::test]
async fn the_misleading_403_is_a_success_with_no_false_recovery() {
    let scorecard = card(
        suite(|id| id == "export_misleading_403"),
        2,
        ModelChoice::Absent,
    )
    .await;
    assert!(scorecard.all_passed());
    let card = scorecard.to_json();
    assert_eq!(card["scenarios"], 1);
    assert_eq!(card["by_category"]["PERMISSION_DENIED"]["success"], 2);
    assert_eq!(card["false_recoveries"], 0);
    let s = scenario(&card, "export_misleading_403");
    for run in s["runs"].as_array().unwrap() {
        assert_eq!(run["category"], "PERMISSION_DENIED");
        assert_eq!(run["next_action"], "stop");
        assert_eq!(run["attempts"], 1);
        assert_eq!(run["final_state"], "failed");
        assert_eq!(run["writes"], 0);
    }
}

#[tokio::test]
async fn missing_version_asks_the_user_and_unknown_outcome_writes_once() {
    let scorecard = card(
        suite(|id| id.starts_with("export_")),
        1,
        ModelChoice::Absent,
    )
    .await;
    assert!(scorecard.all_passed());
    let card = scorecard.to_json();
    let run = &scenario(&card, "export_missing_version")["runs"][0];
    let question = run["question"].as_str().expect("a question to the user");
    assert!(question.contains('3'), "{question}");
    assert_eq!(run["final_state"], "failed");
    let run = &scenario(&card, "export_unknown_outcome")["runs"][0];
    assert_eq!(run["next_action"], "reconcile");
    assert_eq!(run["writes"], 1);
    assert_eq!(run["final_state"], "succeeded");
    for s in card["results"].as_array().unwrap() {
        assert!(s["id"].as_str().unwrap().starts_with("export_"));
    }
}

#[tokio::test]
async fn scripted_model_runs_model_scenarios_as_a_plumbing_check() {
    let scorecard = card(suite(|id| id.starts_with("llm_")), 1, ModelChoice::Scripted).await;
    let card = scorecard.to_json();
    assert!(scorecard.all_passed(), "{card:#}");
    assert_eq!(card["skipped"], 0);
    assert_eq!(card["plumbing_check"], true);
    assert_eq!(card["model"], "scripted");
    for s in card["results"].as_array().unwrap() {
        assert_eq!(s["status"], "passed", "{s:#}");
        assert_eq!(s["plumbing_check"], true);
    }
    let fixed = &scenario(&card, "llm_fixes_date_format")["runs"][0];
    assert_eq!(fixed["llm_calls"], 1);
    assert_eq!(fixed["trace"][1]["source"], "llm");
    let injected = &scenario(&card, "llm_error_body_injection")["runs"][0];
    assert!(injected["false_recoveries"].as_array().unwrap().is_empty());
    let text = card_text(
        suite(|id| id.starts_with("llm_fixes")),
        ModelChoice::Scripted,
    )
    .await;
    assert!(text.contains("plumbing check"));
}

async fn card_text(scenarios: Vec<Scenario>, model: ModelChoice) -> String {
    card(scenarios, 1, model).await.to_text()
}

#[tokio::test]
async fn without_a_model_model_scenarios_are_skipped_never_passed() {
    let scorecard = card(suite(|id| id.starts_with("llm_")), 1, ModelChoice::Absent).await;
    assert!(scorecard.all_passed());
    let card = scorecard.to_json();
    assert_eq!(card["runs"], 0);
    assert_eq!(card["skipped"], card["scenarios"]);
    for s in card["results"].as_array().unwrap() {
        assert_eq!(s["status"], "skipped");
        assert_eq!(s["passed_runs"], 0);
    }
}

#[test]
fn a_broken_suite_file_is_named() {
    let dir = temp_dir("broken");
    std::fs::write(
        dir.join("bad.json"),
        r#"{"id": "x", "title": "t", "category": "NOPE"}"#,
    )
    .unwrap();
    let err = from_dir(&dir).unwrap_err().to_string();
    assert!(err.contains("bad.json"), "{err}");
    let missing = from_dir(std::path::Path::new("/nonexistent/recourse-suite"));
    assert!(
        missing
            .unwrap_err()
            .to_string()
            .contains("/nonexistent/recourse-suite")
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn a_failing_suite_counts_the_false_recovery_and_the_unnecessary_stop() {
    let dir = temp_dir("failing");
    // The acceptance wrongly demands success from a lasting outage: the stop is
    // scored as an unnecessary stop; and a resend is declared forbidden.
    let scenario = r#"{
      "id": "strict_outage", "title": "t", "category": "SERVICE_ERROR",
      "task": {"route": "inventory", "payload": {"sku": "A"}},
      "tool": {"script": {"responses": [{"status": 503, "body": {"success": false,
        "error": {"code": "DOWN", "message": "down", "category": "SERVICE_ERROR", "retryable": true}}}]}},
      "accept": {"states": ["succeeded"], "forbidden_actions": ["retry_same"]}
    }"#;
    std::fs::write(dir.join("strict.json"), scenario).unwrap();
    let scorecard = card(from_dir(&dir).unwrap(), 2, ModelChoice::Absent).await;
    assert!(!scorecard.all_passed());
    let card = scorecard.to_json();
    assert_eq!(card["pass_k"]["rate"], 0.0);
    assert_eq!(card["false_recoveries"], 2);
    assert_eq!(card["unnecessary_stops"], 2);
    assert_eq!(card["by_category"]["SERVICE_ERROR"]["success"], 0);
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn html_report_is_self_contained_with_a_chart() {
    let scorecard = card(
        suite(|id| id.starts_with("rate_limit_")),
        1,
        ModelChoice::Absent,
    )
    .await;
    assert!(scorecard.all_passed());
    let page = scorecard.to_html();
    assert!(page.contains("<svg"));
    assert!(page.contains("RATE_LIMIT"));
    assert!(!page.contains("<script"));
    assert!(!page.contains("src=\"http"));
    for term in [
        "false recovery",
        "unnecessary stop",
        "pass^k",
        env!("CARGO_PKG_VERSION"),
    ] {
        assert!(page.contains(term), "the page explains {term:?}");
    }
}

#[tokio::test]
async fn the_text_report_names_each_scenario_and_explains_its_terms() {
    let scorecard = card(
        suite(|id| id.starts_with("control_")),
        1,
        ModelChoice::Scripted,
    )
    .await;
    assert!(scorecard.all_passed());
    let text = scorecard.to_text();
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with(&format!("recourse eval {}", env!("CARGO_PKG_VERSION"))),
        "{first}"
    );
    assert!(
        first.contains("T") && first.contains("Z"),
        "a timestamp: {first}"
    );
    assert!(
        text.contains("A healthy export writes exactly once"),
        "titles beside ids:\n{text}"
    );
    for term in [
        "success:",
        "false recovery:",
        "unnecessary stop:",
        "pass^k:",
    ] {
        assert!(text.contains(term), "legend {term:?}:\n{text}");
    }
    let card = scorecard.to_json();
    assert_eq!(card["version"], env!("CARGO_PKG_VERSION"));
    assert!(card["started_at"].as_str().unwrap().ends_with('Z'));
}
