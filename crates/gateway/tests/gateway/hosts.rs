//! DNS rebinding: a web page whose name now resolves to 127.0.0.1 makes the
//! browser send its requests to a local gateway, naming the page's host. A
//! gateway without a token answers only requests that name a loopback host;
//! with a token, the token decides; exposed without one on purpose
//! (`serve_any_host`, `--insecure-no-auth`), any host is served.

use axum::body::Body;
use axum::http::Request;
use recourse_gateway::GatewayConfig;
use serde_json::json;

use crate::support::{TestGateway, config};

fn with_host(method: &str, path: &str, host: &str) -> Request<Body> {
    let body = match method {
        "POST" => Body::from(json!({"url": "http://127.0.0.1:9/x", "payload": {}}).to_string()),
        _ => Body::empty(),
    };
    Request::builder()
        .method(method)
        .uri(path)
        .header("host", host)
        .header("content-type", "application/json")
        .body(body)
        .unwrap()
}

#[tokio::test]
async fn without_a_token_only_loopback_hosts_are_served() {
    let gw = TestGateway::plain();
    for (method, path) in [
        ("POST", "/v1/calls"),
        ("GET", "/v1/calls"),
        ("GET", "/healthz"),
        ("GET", "/openapi.json"),
    ] {
        let rebound = gw
            .send(with_host(method, path, "attacker.example:8780"))
            .await;
        assert_eq!(rebound.status, 403, "{method} {path}: {}", rebound.text);
        assert_eq!(rebound.body["error"]["code"], "HOST_NOT_ALLOWED");
        assert_eq!(rebound.body["error"]["category"], "PERMISSION_DENIED");
    }
    for host in ["127.0.0.1:8780", "localhost:8780", "[::1]:8780"] {
        let local = gw.send(with_host("GET", "/healthz", host)).await;
        assert_eq!(local.status, 200, "{host}: {}", local.text);
    }
}

#[tokio::test]
async fn with_a_token_the_token_decides() {
    let gw = TestGateway::new(GatewayConfig::new(config()), Some("s3cret"));
    let named = gw
        .send(with_host("GET", "/openapi.json", "gateway.internal:8780"))
        .await;
    assert_eq!(named.status, 200, "{}", named.text);
}

#[tokio::test]
async fn exposed_without_a_token_on_purpose_any_host_is_served() {
    let gw = TestGateway::new(GatewayConfig::new(config()).serve_any_host(), None);
    let named = gw.send(with_host("GET", "/healthz", "10.1.2.3:8780")).await;
    assert_eq!(named.status, 200, "{}", named.text);
}
