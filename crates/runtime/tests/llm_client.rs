//! The OpenAI-compatible client against a fake server on loopback.

use recourse::llm::{ChatMessage, CompletionRequest, LanguageModel, LlmConfig, OpenAiCompatible};
use recourse_test_support::{FakeLlm, Reply};

fn ask() -> CompletionRequest {
    CompletionRequest {
        messages: vec![ChatMessage::system("be brief"), ChatMessage::user("hi")],
        temperature: 0.1,
        max_tokens: 50,
    }
}

#[tokio::test]
async fn a_completion_carries_text_and_usage() {
    let llm = FakeLlm::start(vec![Reply::text("hello there")]).await;
    let model = OpenAiCompatible::new(LlmConfig::new(&llm.base_url, "m")).unwrap();
    let reply = model.complete(&ask()).await.unwrap();
    assert_eq!(reply.text, "hello there");
    assert_eq!(reply.usage.completion, 2);
    let seen = &llm.seen()[0];
    assert_eq!(seen.authorization, None, "no key, no Authorization header");
    assert_eq!(seen.body["messages"][0]["role"], "system");
    assert_eq!(seen.body["max_tokens"], 50);
}

#[tokio::test]
async fn the_key_is_sent_as_a_bearer_token_and_never_shown() {
    let llm = FakeLlm::start(vec![Reply::Raw(
        401,
        "bad key sk-abcdefghijklmnopqrstuvwxyz".into(),
    )])
    .await;
    let config = LlmConfig::new(&llm.base_url, "m").with_api_key("sk-abcdefghijklmnopqrstuvwxyz");
    let model = OpenAiCompatible::new(config).unwrap();
    let error = model.complete(&ask()).await.unwrap_err();
    assert_eq!(error.status_code(), Some(401));
    assert!(
        !error.to_string().contains("sk-abcdefghijklmnopqrstuvwxyz"),
        "{error}"
    );
    assert!(!format!("{model:?}").contains("sk-abcdefghijklmnopqrstuvwxyz"));
    assert_eq!(
        llm.seen()[0].authorization.as_deref(),
        Some("Bearer sk-abcdefghijklmnopqrstuvwxyz")
    );
}

#[tokio::test]
async fn garbage_and_empty_replies_are_errors() {
    for raw in [
        "not json",
        r#"{"choices": []}"#,
        r#"{"choices": [{"message": {"content": "  "}}]}"#,
    ] {
        let llm = FakeLlm::start(vec![Reply::Raw(200, raw.into())]).await;
        let model = OpenAiCompatible::new(LlmConfig::new(&llm.base_url, "m")).unwrap();
        let error = model.complete(&ask()).await.unwrap_err();
        assert!(error.is_bad_reply(), "{raw}: {error}");
    }
}

#[tokio::test]
async fn an_unreachable_server_is_a_connect_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let model = OpenAiCompatible::new(LlmConfig::new(url, "m")).unwrap();
    let error = model.complete(&ask()).await.unwrap_err();
    assert!(error.is_connect(), "{error}");
}

#[test]
fn invalid_settings_are_refused_at_construction() {
    assert!(OpenAiCompatible::new(LlmConfig::new("not a url", "m")).is_err());
    assert!(OpenAiCompatible::new(LlmConfig::new("http://127.0.0.1:1/v1", " ")).is_err());
}
