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
        "exports written by this scene: 1",
        "exports written by this scene: 0",
        "(permission_denied)",
        "422 POLICY_REJECTION",
        "scenes behaved as a careful engineer would",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    assert!(!text.contains('✗'), "a scene misbehaved:\n{text}");
    assert!(!text.contains("\x1b["), "no colour when not on a terminal");
}
