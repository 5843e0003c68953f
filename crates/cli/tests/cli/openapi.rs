//! The gateway's OpenAPI document describes what `recourse serve` answers:
//! each reachable error status — those of the router and those of the
//! server around it (limits, a header too large) — is an envelope that
//! validates against the schema the document gives for that route and
//! status. (Records and the journal's routes are checked in-process, in
//! `recourse-gateway`'s tests.)

use std::time::Duration;

use recourse_test_support::check_openapi;
use serde_json::{Value, json};

use crate::support;

use recourse_test_support::{export, keyed, tools};
use support::Gateway;

async fn send(req: reqwest::RequestBuilder) -> (u16, Value) {
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_reachable_error_status_is_a_documented_envelope() {
    let t = tools(&["exports:slow:1.0"], Duration::from_millis(1500)).await;
    let state = tempfile::tempdir().unwrap();
    let gw = Gateway::start(state.path(), &[]);
    let (_, doc) = gw.get("/openapi.json").await;
    let client = reqwest::Client::new();
    let post = || client.post(format!("{}/v1/calls", gw.url));
    let base = t.base_url();
    let mut seen = Vec::new();
    let mut expect = |status: u16, got: (u16, Value), method: &str, path: &str| {
        assert_eq!(got.0, status, "{}", got.1);
        check_openapi(&doc, method, path, status, &got.1);
        seen.push(status);
    };

    expect(
        400,
        send(post().json(&json!({"payload": {}}))).await,
        "post",
        "/v1/calls",
    );
    expect(
        403,
        send(post().json(&json!({"url": "http://192.0.2.1/x", "payload": {}}))).await,
        "post",
        "/v1/calls",
    );
    let huge = json!({"url": format!("{base}/api/stock/quote"), "payload": {"pad": "x".repeat(1_100_000)}});
    expect(413, send(post().json(&huge)).await, "post", "/v1/calls");
    expect(
        415,
        send(post().body("{}").header("content-type", "text/plain")).await,
        "post",
        "/v1/calls",
    );
    expect(
        431,
        send(post().header("x-pad", "y".repeat(20_000)).json(&json!({}))).await,
        "post",
        "/v1/calls",
    );
    expect(
        404,
        send(client.get(format!("{}/v1/calls/nope", gw.url))).await,
        "get",
        "/v1/calls/{call_id}",
    );
    expect(
        400,
        send(client.get(format!("{}/v1/calls?state=bogus", gw.url))).await,
        "get",
        "/v1/calls",
    );

    // A slow keyed write: the same key while it runs is 409, another request under it 422.
    let body = keyed(export(&t), "openapi-2");
    let first = tokio::spawn(send(post().json(&body)));
    recourse_test_support::wait_until_the_tool_has(&t, "openapi-2").await;
    expect(409, send(post().json(&body)).await, "post", "/v1/calls");
    let (status, record) = first.await.unwrap();
    assert_eq!(status, 200, "{record}");
    let mut other = body.clone();
    other["payload"]["format"] = json!("csv");
    expect(422, send(post().json(&other)).await, "post", "/v1/calls");

    // At its in-flight limit, a gateway answers 503.
    let busy_state = tempfile::tempdir().unwrap();
    let busy = Gateway::start(busy_state.path(), &["--max-in-flight", "1"]);
    let slow = tokio::spawn(send(
        client
            .post(format!("{}/v1/calls", busy.url))
            .json(&keyed(export(&t), "openapi-3")),
    ));
    recourse_test_support::wait_until_the_tool_has(&t, "openapi-3").await;
    expect(
        503,
        send(client.get(format!("{}/v1/calls", busy.url))).await,
        "get",
        "/v1/calls",
    );
    slow.await.unwrap();

    let token_state = tempfile::tempdir().unwrap();
    let gated = Gateway::start_with_env(
        token_state.path(),
        &[],
        &[("RECOURSE_GATEWAY_TOKEN", "ci-token-openapi")],
    );
    let url = &gated.url;
    expect(
        401,
        send(client.post(format!("{url}/v1/calls")).json(&json!({}))).await,
        "post",
        "/v1/calls",
    );
    drop(gated);

    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen, [400, 401, 403, 404, 409, 413, 415, 422, 431, 503]);
}
