//! [`FakeLlm`]: a fake OpenAI-compatible chat-completions server on loopback.
//!
//! It answers each `POST /v1/chat/completions` with the next scripted reply
//! and records what it was sent. When the script runs out it answers 500, so
//! an unexpected model call shows up as a failure, not a silent success.
//!
//! A reply is a message's content, a raw status and body, or tool calls in
//! the OpenAI tool-calling format (an assistant message with `tool_calls`,
//! `finish_reason: "tool_calls"`), which an agent loop answers with `tool`
//! messages on its next request ([`SeenRequest::tool_results`]).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A chat completion whose message content is this text.
    Content(String),
    /// This status and body, as they are.
    Raw(u16, String),
    /// An assistant message calling these tools, in order.
    ToolCalls(Vec<ToolCall>),
}

/// One scripted tool call: the function's name and its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The function (tool) name.
    pub name: String,
    /// The arguments, sent as a JSON string as the OpenAI format has them.
    pub arguments: Value,
}

impl Reply {
    /// A completion whose content is `value` as compact JSON.
    pub fn json(value: Value) -> Self {
        Self::Content(value.to_string())
    }

    /// A completion with this exact text.
    pub fn text(text: &str) -> Self {
        Self::Content(text.to_owned())
    }

    /// A completion calling one tool, `name`, with `arguments`.
    pub fn tool_call(name: &str, arguments: Value) -> Self {
        Self::ToolCalls(vec![ToolCall {
            name: name.to_owned(),
            arguments,
        }])
    }
}

/// A request as the fake model received it.
#[derive(Debug, Clone)]
pub struct SeenRequest {
    /// The JSON body.
    pub body: Value,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
}

impl SeenRequest {
    /// Every message's content, joined: what the model was told.
    pub fn prompt(&self) -> String {
        self.body["messages"]
            .as_array()
            .map(|ms| {
                ms.iter()
                    .filter_map(|m| m["content"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    }

    /// The `tool` messages of the request, in order: `(tool_call_id, content)`,
    /// with content as the text the model reads (array parts' texts joined).
    pub fn tool_results(&self) -> Vec<(String, String)> {
        self.body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["role"] == "tool")
            .map(|m| {
                let id = m["tool_call_id"].as_str().unwrap_or_default().to_owned();
                let content = match &m["content"] {
                    Value::String(text) => text.clone(),
                    Value::Array(parts) => parts
                        .iter()
                        .filter_map(|p| p["text"].as_str())
                        .collect::<Vec<_>>()
                        .join("\n"),
                    _ => String::new(),
                };
                (id, content)
            })
            .collect()
    }
}

#[derive(Debug, Default)]
struct Shared {
    script: Mutex<VecDeque<Reply>>,
    seen: Mutex<Vec<SeenRequest>>,
}

/// A running fake model; it serves until the test's runtime ends.
#[derive(Debug)]
pub struct FakeLlm {
    /// The base URL to configure (`http://127.0.0.1:PORT/v1`).
    pub base_url: String,
    shared: Arc<Shared>,
}

impl FakeLlm {
    /// Starts serving `script` on a free loopback port.
    ///
    /// # Panics
    /// No loopback port could be bound.
    pub async fn start(script: Vec<Reply>) -> Self {
        let shared = Arc::new(Shared {
            script: Mutex::new(script.into()),
            seen: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(complete))
            .with_state(Arc::clone(&shared));
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a free loopback port");
        let base_url = format!(
            "http://{}/v1",
            listener.local_addr().expect("a bound address")
        );
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { base_url, shared }
    }

    /// Every request received, in order.
    pub fn seen(&self) -> Vec<SeenRequest> {
        self.shared.seen.lock().unwrap().clone()
    }

    /// How many requests were received.
    pub fn hits(&self) -> usize {
        self.shared.seen.lock().unwrap().len()
    }
}

async fn complete(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: String) -> Response {
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    shared.seen.lock().unwrap().push(SeenRequest {
        body: body.clone(),
        authorization: headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
    });
    let next = shared.script.lock().unwrap().pop_front();
    let served = shared.seen.lock().unwrap().len();
    match next {
        None => (StatusCode::INTERNAL_SERVER_ERROR, "script exhausted").into_response(),
        Some(Reply::Raw(status, text)) => (
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            text,
        )
            .into_response(),
        Some(Reply::Content(content)) => {
            let usage = usage(&body, content.len());
            let message = json!({"role": "assistant", "content": content});
            completion(&body, message, "stop", usage)
        }
        Some(Reply::ToolCalls(calls)) => {
            let tool_calls: Vec<Value> = calls
                .iter()
                .enumerate()
                .map(|(i, call)| {
                    json!({
                        "id": format!("call_{served}_{i}"),
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments.to_string()}
                    })
                })
                .collect();
            let usage = usage(&body, Value::from(tool_calls.clone()).to_string().len());
            let message = json!({"role": "assistant", "content": null, "tool_calls": tool_calls});
            completion(&body, message, "tool_calls", usage)
        }
    }
}

/// A chat completion whose one choice is `message`.
fn completion(body: &Value, message: Value, finish_reason: &str, usage: Value) -> Response {
    axum::Json(json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": body["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage
    }))
    .into_response()
}

/// Rough token counts: four characters a token.
fn usage(body: &Value, completion_chars: usize) -> Value {
    let prompt_chars: usize = body["messages"]
        .as_array()
        .map(|ms| {
            ms.iter()
                .filter_map(|m| m["content"].as_str())
                .map(str::len)
                .sum()
        })
        .unwrap_or(0);
    json!({"prompt_tokens": prompt_chars / 4, "completion_tokens": completion_chars / 4, "total_tokens": 0})
}
