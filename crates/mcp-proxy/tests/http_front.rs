//! The proxy's Streamable HTTP front ([`router`](recourse_mcp_proxy::router))
//! on a loopback port, spoken to by recourse's own rmcp client and by hand,
//! behind the gateway's rules: the bearer token when one is set (401
//! without it), loopback `Host` names only without one (403).

mod support;

use recourse_door::Access;
use serde_json::{Value, json};
use support::tools::McpTools;
use support::{HttpFront, WAIT, builder, export, journal_in};

const TOKEN: &str = "proxy-token-7f3a";

/// The proxy in front of the reference tools, journaled, behind `access`.
async fn start(access: &Access) -> (HttpFront, McpTools, tempfile::TempDir) {
    let tools = McpTools::start(&[]).await;
    let dir = tempfile::tempdir().unwrap();
    let proxy = builder()
        .upstream(tools.upstream(None))
        .with_journal(journal_in(dir.path()).await)
        .connect()
        .await
        .unwrap();
    (HttpFront::start(&proxy, access).await, tools, dir)
}

/// An `initialize` POSTed with `headers`: its status, the session it opened
/// (if any) and its body.
async fn initialize_answer(url: &str, headers: &[(&str, &str)]) -> (u16, Option<String>, String) {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "http-test", "version": "0"},
            }})
            .to_string(),
        );
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, session, response.text().await.unwrap())
}

/// An `initialize` POSTed with `headers`: its status and body.
async fn initialize(url: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let (status, _, body) = initialize_answer(url, headers).await;
    (status, body)
}

/// An `initialize` POSTed with `headers`: its status and the session it opened.
async fn open_session(url: &str, headers: &[(&str, &str)]) -> (u16, Option<String>) {
    let (status, session, _) = initialize_answer(url, headers).await;
    (status, session)
}

async fn call(server: &recourse_mcp::McpTransport, tool: &str) -> Value {
    server
        .forward(
            "tools/call",
            Some(json!({"name": tool, "arguments": export()})),
            WAIT,
        )
        .await
        .expect("the proxy answers")
        .unwrap_or_else(|e| panic!("{tool}: {e:?}"))
}

#[tokio::test]
async fn mcp_proxy_http_lists_and_calls_tools_and_serves_loopback_hosts_only() {
    let (front, _tools, _dir) = start(&Access::default()).await;
    assert!(
        front.url.starts_with("http://127.0.0.1:") && front.url.ends_with("/mcp"),
        "{}",
        front.url
    );
    let client = front.client();

    let listed = client.listed_tools(WAIT).await.unwrap();
    let names: Vec<&str> = listed.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"exports_create"), "{names:?}");

    // A write through the executor: one export, the record's summary added.
    let created = call(&client, "exports_create").await;
    assert_eq!(created["isError"], false, "{created}");
    assert_eq!(created["_meta"]["recourse/call"]["outcome"], "succeeded");
    let read = call(&client, "exports_lookup").await;
    assert_eq!(read["structuredContent"]["count"], 1, "{read}");

    // Without a token, a request naming another host is refused.
    let (status, body) = initialize(&front.url, &[("host", "evil.example:8790")]).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("HOST_NOT_ALLOWED"), "{body}");
    let (status, body) = initialize(&front.url, &[("host", "localhost")]).await;
    assert_eq!(status, 200, "{body}");
    // A session's answer comes as one JSON body, not a stream of events.
    let answer: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(
        answer["result"]["protocolVersion"], "2025-11-25",
        "{answer}"
    );

    // Exposed without a token on purpose: any host is served.
    let (anywhere, _tools, _dir) = start(&Access::default().serve_any_host()).await;
    let (status, body) = initialize(&anywhere.url, &[("host", "10.0.0.7:8790")]).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn mcp_proxy_http_requires_the_gateway_token_when_one_is_set() {
    let access = Access::new(None, Some(TOKEN)).unwrap();
    let (front, _tools, _dir) = start(&access).await;

    let (status, body) = initialize(&front.url, &[]).await;
    assert_eq!(status, 401, "{body}");
    let (status, body) = initialize(&front.url, &[("authorization", "Bearer not-the-token")]).await;
    assert_eq!(status, 401, "{body}");

    let bearer = format!("Bearer {TOKEN}");
    let (status, body) = initialize(&front.url, &[("authorization", &bearer)]).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("recourse-mcp-proxy"), "{body}");
    // Behind a token, any host name is served.
    let (status, body) = initialize(
        &front.url,
        &[("authorization", &bearer), ("host", "proxy.example:443")],
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

/// A client ending its session with `DELETE` is told it ended: 204, as the
/// SDKs expect (the Python SDK logs `Session termination failed: 202`
/// otherwise); the session is gone after it.
#[tokio::test]
async fn a_session_ended_with_delete_is_answered_204() {
    let (front, _tools, _dir) = start(&Access::default()).await;
    let (_, session) = open_session(&front.url, &[]).await;
    let session = session.expect("a session");
    let ended = reqwest::Client::new()
        .delete(&front.url)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(ended.status().as_u16(), 204);
    assert!(ended.bytes().await.unwrap().is_empty());
    // The session is gone: a request in it is refused.
    assert_eq!(
        in_session(&front.url, "tools/list", &session, &[]).await,
        404
    );
}

/// `method` in `session`, with `headers`: its status.
async fn in_session(url: &str, method: &str, session: &str, headers: &[(&str, &str)]) -> u16 {
    let client = reqwest::Client::new();
    let mut request = if method == "DELETE" {
        client.delete(url)
    } else {
        client
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(json!({"jsonrpc": "2.0", "id": 2, "method": method}).to_string())
    };
    request = request
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap().status().as_u16()
}

#[tokio::test]
async fn a_session_is_its_openers_alone() {
    let callers = recourse_door::Callers::parse(
        r#"{"callers": [{"name": "agentA", "token": "agent-a-token-0123456789"},
                         {"name": "agentB", "token": "agent-b-token-0123456789"}]}"#,
    )
    .unwrap();
    let access = Access::new(Some(callers), None).unwrap();
    let (front, _tools, _dir) = start(&access).await;
    let a = [("authorization", "Bearer agent-a-token-0123456789")];
    let b = [("authorization", "Bearer agent-b-token-0123456789")];
    let (status, session) = open_session(&front.url, &a).await;
    assert_eq!(status, 200);
    let session = session.unwrap();
    // agentB holding agentA's session id can neither use nor end it.
    assert_eq!(
        in_session(&front.url, "tools/list", &session, &b).await,
        404
    );
    assert_eq!(in_session(&front.url, "DELETE", &session, &b).await, 404);
    // It is still agentA's.
    assert_eq!(
        in_session(&front.url, "tools/list", &session, &a).await,
        200
    );
    assert_eq!(in_session(&front.url, "DELETE", &session, &a).await, 204);
}

#[tokio::test]
async fn sessions_are_capped_and_a_cross_site_origin_is_refused() {
    let tools = McpTools::start(&[]).await;
    let proxy = builder()
        .upstream(tools.upstream(None))
        .connect()
        .await
        .unwrap();
    let stop = tokio_util::sync::CancellationToken::new();
    let app = recourse_mcp_proxy::router_with_sessions(&proxy, &Access::default(), stop.clone(), 2);
    let addr = support::on_loopback(app, &stop).await;
    let url = format!("http://{addr}{}", recourse_mcp_proxy::MCP_PATH);
    let (_, first) = open_session(&url, &[]).await;
    let (status, _) = open_session(&url, &[]).await;
    assert_eq!(status, 200);
    let (status, _) = open_session(&url, &[]).await;
    assert_eq!(status, 503, "past the cap");
    // One ends: there is room again.
    assert_eq!(in_session(&url, "DELETE", &first.unwrap(), &[]).await, 204);
    let (status, _) = open_session(&url, &[]).await;
    assert_eq!(status, 200);

    let (front, _tools, _dir) = start(&Access::default()).await;
    let (status, _) = open_session(&front.url, &[("origin", "https://evil.example")]).await;
    assert_eq!(status, 403, "a page of another site");
    let (status, _) = open_session(&front.url, &[("origin", "http://localhost:6274")]).await;
    assert_eq!(
        status, 200,
        "a page on this machine (the MCP Inspector's, say)"
    );
    stop.cancel();
}
