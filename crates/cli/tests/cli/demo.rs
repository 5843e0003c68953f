//! `recourse demo` runs offline, exits 0, and narrates what actually happened.

use std::process::Command;

#[test]
fn the_demo_plays_every_scene_from_the_real_trace() {
    let out = Command::new(env!("CARGO_BIN_EXE_recourse"))
        .arg("demo")
        .env("NO_COLOR", "1")
        .env_remove("RECOURSE_LLM_BASE_URL")
        .env_remove("RECOURSE_LLM_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for expected in [
        r#"(repair) POST"#,
        "Flower Mound, Texas, US",
        "retry_same, waited 1000 ms",
        "401 AUTH_ERROR",
        "api_key=[REDACTED]",
        "503 SERVICE_ERROR",
        "reconcile: committed",
        "verify (before): not held",
        "verify (after): holds",
        "verification: verified",
        "exports written by this scene: 1",
        "exports written by this scene: 0",
        "(permission_denied)",
        "422 POLICY_REJECTION",
        "scenes behaved as a careful engineer would",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    assert!(!text.contains('✗'), "a scene misbehaved:\n{text}");
    assert!(
        text.contains("1 more needs a model"),
        "the scene that could not show its recovery is not counted as behaving:\n{text}"
    );
    assert!(!text.contains("\x1b["), "no colour when not on a terminal");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_model_the_workflow_scene_recovers_the_amount() {
    use recourse_test_support::{FakeLlm, Reply};
    use serde_json::json;
    // L3 cannot fix a missing amount; L4, given the quote and the request, can.
    let model = FakeLlm::start(vec![
        Reply::json(json!({"can_fix": false, "analysis": "the amount is unknowable from the error", "corrected_payload": {}})),
        Reply::json(json!({
            "should_retry": true,
            "analysis": "100 shares at 468.285 USD",
            "corrected_parameters": {"amount": 46828.5, "from": "USD", "to": "EUR"},
            "is_transient_error": false
        })),
    ])
    .await;
    let out = tokio::task::spawn_blocking({
        let base = model.base_url.clone();
        move || {
            Command::new(env!("CARGO_BIN_EXE_recourse"))
                .arg("demo")
                .env("NO_COLOR", "1")
                .env("RECOURSE_LLM_BASE_URL", base)
                .env("RECOURSE_LLM_MODEL", "fake")
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains(r#"(semantic) POST"#), "{text}");
    assert!(text.contains("46828.5"), "{text}");
    assert!(text.contains("L4 re-resolved the amount"), "{text}");
    assert_eq!(
        model.hits(),
        2,
        "one L3 and one L4 exchange, nothing for the other scenes"
    );
}
