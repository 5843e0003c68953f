//! The proxy in this process, served over Streamable HTTP on a loopback
//! port and spoken to by recourse's own rmcp client (`McpTransport`): tools
//! listed and called through it, in front of the reference tools,
//! `mcp-server-time`, the filesystem server and a scripted server; keys,
//! several upstreams, a fleet's breakers, tools an upstream adds.

mod support;

use recourse::ExecutorConfig;
use recourse::shared::{RedisSharedState, SharedState};
use recourse_mcp::{ListChange, McpTarget, McpTransport};
use recourse_mcp_proxy::Upstream;
use recourse_test_support::service_var;
use serde_json::json;
use support::tools::McpTools;
use support::{
    CALL_META, FAILURE_META, WAIT, builder, builder_with, call, export, exports, journal_in, names,
    ok, scripted, served,
};

/// A third-party server's command line as an upstream, with `more` words after it.
fn command(line: &str, more: &[&str]) -> Upstream {
    let McpTarget::Command {
        program, mut args, ..
    } = McpTarget::command_line(line).unwrap()
    else {
        unreachable!("a command line");
    };
    args.extend(more.iter().map(|w| (*w).to_owned()));
    Upstream::unnamed(McpTarget::Command {
        program,
        args,
        pass_env: Vec::new(),
    })
}

#[tokio::test]
async fn mcp_proxy_offers_the_upstreams_tools_and_results_unchanged() {
    let tools = McpTools::start(&[]).await;
    let direct = McpTransport::new(McpTarget::url(&tools.url).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let proxy = builder()
        .upstream(tools.upstream(None))
        .with_journal(journal_in(dir.path()).await);
    let (proxied, _front) = served(proxy).await;

    let listed = proxied.listed_tools(WAIT).await.unwrap();
    assert_eq!(listed, direct.listed_tools(WAIT).await.unwrap());

    // A success is the upstream's own result, plus the record's summary.
    let read = json!({"source_id": "inventory", "format": "csv"});
    let mut through = ok(&proxied, "exports_lookup", read.clone()).await;
    let summary = through["_meta"]
        .as_object_mut()
        .unwrap()
        .remove(CALL_META)
        .unwrap();
    assert_eq!(summary["outcome"], "succeeded");
    assert_eq!(summary["attempts"], 1);
    assert!(summary["call_id"].is_string());
    if through["_meta"]
        .as_object()
        .is_some_and(serde_json::Map::is_empty)
    {
        through.as_object_mut().unwrap().remove("_meta");
    }
    assert_eq!(through, ok(&direct, "exports_lookup", read).await);

    // A tool no upstream offers is a protocol fault, as MCP says.
    let unknown = call(&proxied, "exports_creat", export(), None)
        .await
        .unwrap_err();
    assert_eq!(unknown.code, -32602, "{unknown:?}");
    assert!(unknown.message.contains("exports_create"), "{unknown:?}");
}

#[tokio::test]
async fn mcp_proxy_answers_a_repeated_key_from_its_journal() {
    let tools = McpTools::start(&[]).await;
    let dir = tempfile::tempdir().unwrap();
    let proxy = builder()
        .upstream(tools.upstream(None))
        .with_journal(journal_in(dir.path()).await);
    let (proxied, _front) = served(proxy).await;
    let key = || Some(json!("export-k-1"));

    let first = call(&proxied, "exports_create", export(), key())
        .await
        .unwrap();
    assert_eq!(first["isError"], false, "{first}");
    let again = call(&proxied, "exports_create", export(), key())
        .await
        .unwrap();
    assert_eq!(again["isError"], false, "{again}");
    assert_eq!(again["_meta"][CALL_META]["replayed"], true, "{again}");
    assert_eq!(
        again["_meta"][CALL_META]["call_id"],
        first["_meta"][CALL_META]["call_id"]
    );
    assert_eq!(again["structuredContent"], first["structuredContent"]);
    assert_eq!(
        exports(&proxied, "exports_lookup").await,
        1,
        "nothing resent"
    );

    let other = json!({"source_id": "sales-2024", "format": "csv"});
    let reused = call(&proxied, "exports_create", other, key())
        .await
        .unwrap();
    assert_eq!(reused["isError"], true, "{reused}");
    assert_eq!(
        reused["_meta"][FAILURE_META]["code"],
        "IDEMPOTENCY_KEY_REUSED"
    );
    assert_eq!(reused["_meta"][FAILURE_META]["retryable"], false);
    assert_eq!(exports(&proxied, "exports_lookup").await, 1);

    // A key that is not a string is the client's protocol fault.
    let bad = call(&proxied, "exports_create", export(), Some(json!(7)))
        .await
        .unwrap_err();
    assert_eq!(bad.code, -32602, "{bad:?}");

    // Without a journal, a keyed call cannot be answered twice: refused, nothing sent.
    let fresh = McpTools::start(&[]).await;
    let (unjournaled, _front) = served(builder().upstream(fresh.upstream(None))).await;
    let refused = call(&unjournaled, "exports_create", export(), key())
        .await
        .unwrap();
    assert_eq!(refused["_meta"][FAILURE_META]["code"], "JOURNAL_REQUIRED");
    assert_eq!(exports(&unjournaled, "exports_lookup").await, 0);
}

#[tokio::test]
async fn mcp_proxy_offers_each_upstreams_tools_under_its_name() {
    let (a, b) = (McpTools::start(&[]).await, McpTools::start(&[]).await);
    let dir = tempfile::tempdir().unwrap();
    let proxy = builder()
        .upstream(a.upstream(Some("a")))
        .upstream(b.upstream(Some("b")))
        .with_journal(journal_in(dir.path()).await);
    let (proxied, _front) = served(proxy).await;

    let listed = proxied.listed_tools(WAIT).await.unwrap();
    let direct = McpTransport::new(McpTarget::url(&a.url).unwrap());
    let own = direct.listed_tools(WAIT).await.unwrap();
    assert_eq!(listed.len(), 2 * own.len());
    for (prefix, offered) in [("a", &listed[..own.len()]), ("b", &listed[own.len()..])] {
        for (tool, offered) in own.iter().zip(offered) {
            let mut renamed = tool.clone();
            renamed["name"] = json!(format!("{prefix}__{}", tool["name"].as_str().unwrap()));
            assert_eq!(offered, &renamed, "schemas and annotations unchanged");
        }
    }
    assert!(names(&listed).contains(&"b__exports_create"));

    // Each call reaches its own upstream.
    let made = ok(&proxied, "b__exports_create", export()).await;
    assert_eq!(made["isError"], false, "{made}");
    assert_eq!(exports(&proxied, "b__exports_lookup").await, 1);
    assert_eq!(exports(&proxied, "a__exports_lookup").await, 0);
    let unprefixed = call(&proxied, "exports_create", export(), None)
        .await
        .unwrap_err();
    assert_eq!(unprefixed.code, -32602);
}

#[tokio::test]
async fn mcp_proxy_in_front_of_mcp_server_time() {
    let Some(line) = service_var("RECOURSE_TEST_MCP_TIME_CMD") else {
        return;
    };
    let (proxied, _front) = served(builder().upstream(command(&line, &[]))).await;
    let direct = McpTransport::new(McpTarget::command_line(&line).unwrap());

    let listed = proxied.listed_tools(WAIT).await.unwrap();
    assert_eq!(listed, direct.listed_tools(WAIT).await.unwrap());
    assert!(names(&listed).contains(&"get_current_time"), "{listed:?}");

    let now = ok(&proxied, "get_current_time", json!({"timezone": "UTC"})).await;
    assert_eq!(now["isError"], false, "{now}");
    assert!(
        now["content"][0]["text"].as_str().unwrap().contains("UTC"),
        "{now}"
    );
    assert_eq!(now["_meta"][CALL_META]["outcome"], "succeeded");

    // The server's own isError: input the model must fix, not resent. Its
    // words come first, whole; recourse's guidance is one more block.
    let wrong = ok(
        &proxied,
        "get_current_time",
        json!({"timezone": "America/NewYork"}),
    )
    .await;
    assert_eq!(wrong["isError"], true, "{wrong}");
    assert_eq!(
        wrong["_meta"][FAILURE_META]["class"], "capability",
        "{wrong}"
    );
    assert_eq!(wrong["_meta"][FAILURE_META]["retryable"], false);
    assert_eq!(
        wrong["_meta"][CALL_META]["step"], "fix_arguments",
        "{wrong}"
    );
    let content = wrong["content"].as_array().unwrap();
    assert_eq!(content.len(), 2, "{wrong}");
    let said = content[0]["text"].as_str().unwrap();
    assert!(
        said.starts_with("Error executing tool get_current_time")
            && said.contains("America/NewYork"),
        "{said}"
    );
    let guidance = wrong["_meta"][FAILURE_META]["agentGuidance"]
        .as_str()
        .unwrap();
    assert_eq!(content[1]["text"], guidance);
    // The server named no category, and the guidance does not claim one.
    assert!(
        guidance.starts_with(
            "The call failed (the tool reported an error without a category, MCP isError)."
        ),
        "{guidance}"
    );
    assert!(!guidance.contains("HTTP 200"), "{guidance}");
}

#[tokio::test]
async fn mcp_proxies_share_their_breakers_through_redis() {
    if service_var("RECOURSE_TEST_REDIS_URL").is_none() {
        return;
    }
    // A Redis of this test's own: no other test's breakers in it.
    let redis = recourse_test_support::OwnedRedis::start();
    let tools = McpTools::start(&["stock:unavailable"]).await;
    let mut config = ExecutorConfig::default();
    config.limits.max_retries = 0;
    let fleet_member = || async {
        let shared = RedisSharedState::builder(&redis.url())
            .unwrap()
            .connect()
            .await;
        builder_with(config.clone())
            .upstream(tools.upstream(None))
            .with_shared_state(shared as std::sync::Arc<dyn SharedState>)
    };
    let (first, _first_front) = served(fleet_member().await).await;
    let quote = || json!({"symbol": "TSLA"});
    for _ in 0..5 {
        let failed = ok(&first, "stock_quote", quote()).await;
        // The tool's own failure metadata reaches the client unchanged;
        // recourse's judgement is its own summary's.
        assert_eq!(
            failed["_meta"][FAILURE_META]["code"], "SERVICE_UNAVAILABLE",
            "{failed}"
        );
        assert_eq!(
            failed["_meta"][CALL_META]["reason"], "retries_exhausted",
            "{failed}"
        );
    }
    // Another proxy of the fleet finds the breaker open: nothing is sent,
    // and the failure is recourse's alone.
    let (second, _second_front) = served(fleet_member().await).await;
    let refused = ok(&second, "stock_quote", quote()).await;
    let failure = &refused["_meta"][FAILURE_META];
    assert_eq!(failure["code"], "circuit_open", "{refused}");
    assert_eq!(failure["class"], "reliability");
    assert_eq!(failure["retryable"], true);
    assert_eq!(refused["_meta"][CALL_META]["reason"], "circuit_open");
}

#[tokio::test]
async fn mcp_proxy_in_front_of_the_filesystem_server() {
    let Some(line) = service_var("RECOURSE_TEST_MCP_FILESYSTEM_CMD") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let root_path = root.path().canonicalize().unwrap();
    let root_arg = root_path.display().to_string();
    let proxy = builder()
        .upstream(command(&line, &[&root_arg]))
        .with_journal(journal_in(root.path()).await);
    let (proxied, _front) = served(proxy).await;
    let direct =
        McpTransport::new(McpTarget::command_line(&format!("{line} '{root_arg}'")).unwrap());
    assert_eq!(
        proxied.listed_tools(WAIT).await.unwrap(),
        direct.listed_tools(WAIT).await.unwrap()
    );

    let file = root_path.join("note.txt");
    let wrote = ok(
        &proxied,
        "write_file",
        json!({"path": file.display().to_string(), "content": "kept"}),
    )
    .await;
    // The server's own result: it leaves out `isError`, and so does the proxy.
    assert!(wrote.get("isError").is_none(), "{wrote}");
    assert_eq!(wrote["_meta"][CALL_META]["outcome"], "succeeded");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "kept");

    // A path outside the root: the server's own refusal, for the model to fix.
    let outside = ok(
        &proxied,
        "write_file",
        json!({"path": "/nonexistent-root/note.txt", "content": "no"}),
    )
    .await;
    assert_eq!(outside["isError"], true, "{outside}");
    assert_eq!(outside["_meta"][FAILURE_META]["class"], "capability");
    assert_eq!(outside["_meta"][CALL_META]["step"], "fix_arguments");
}

#[tokio::test]
async fn mcp_proxy_offers_the_tool_an_upstream_adds_and_tells_its_client() {
    let dir = tempfile::tempdir().unwrap();
    let words = scripted("grow", &dir.path().join("upstream.log"));
    let upstream = Upstream::unnamed(McpTarget::Command {
        program: words[0].clone(),
        args: words[1..].to_vec(),
        pass_env: Vec::new(),
    });
    let proxy = builder()
        .upstream(upstream)
        .with_journal(journal_in(dir.path()).await);
    let (proxied, _front) = served(proxy).await;
    let mut changes = proxied.list_changes();
    let declared = proxied.capabilities(WAIT).await.unwrap();
    assert_eq!(declared["tools"]["listChanged"], true, "{declared}");
    assert_eq!(declared["prompts"]["listChanged"], true, "{declared}");
    let listed = proxied.listed_tools(WAIT).await.unwrap();
    assert_eq!(names(&listed), ["write", "read", "grow"]);

    let grown = ok(&proxied, "grow", json!({})).await;
    assert_eq!(grown["isError"], false, "{grown}");
    // Told (this client speaks 2025-11-25 to the proxy), and already listed again.
    loop {
        let change = tokio::time::timeout(WAIT, changes.recv()).await;
        if change.expect("told within the wait").unwrap() == ListChange::Tools {
            break;
        }
    }
    let listed = proxied.listed_tools(WAIT).await.unwrap();
    assert_eq!(names(&listed), ["write", "read", "grow", "grown"]);
    assert_eq!(listed[3]["annotations"]["readOnlyHint"], true, "{listed:?}");
    let called = ok(&proxied, "grown", json!({})).await;
    assert_eq!(
        called["structuredContent"],
        json!({"grown": true}),
        "{called}"
    );
    assert_eq!(called["_meta"][CALL_META]["outcome"], "succeeded");
}

/// A keyed resend is the first answer again, byte for byte — content,
/// `structuredContent`, `isError`, the tool's own `_meta` — but for
/// `"replayed":true` in recourse's summary: a success, and a failure the
/// tool answered itself.
#[tokio::test]
async fn a_keyed_replay_is_the_first_answer_byte_for_byte() {
    let tools = McpTools::start(&[]).await;
    let dir = tempfile::tempdir().unwrap();
    let proxy = builder()
        .upstream(tools.upstream(None))
        .with_journal(journal_in(dir.path()).await)
        .connect()
        .await
        .unwrap();
    let mut client = support::duplex::StdioClient::start(proxy).await;
    let cases = [
        ("exports_create", export(), "replay-write"),
        (
            "orders_refund",
            json!({"order_id": "ORD-2002"}),
            "replay-refused",
        ),
    ];
    for (tool, arguments, key) in cases {
        let params = json!({"name": tool, "arguments": arguments,
                            "_meta": {"recourse/idempotency-key": key}});
        let (first_id, first) = client.request_line("tools/call", params.clone()).await;
        let (again_id, again) = client.request_line("tools/call", params).await;
        let first = first.replacen(&format!(r#""id":{first_id},"#), "", 1);
        let again = again.replacen(&format!(r#""id":{again_id},"#), "", 1);
        assert!(again.contains(r#","replayed":true"#), "{again}");
        assert!(!first.contains(r#""replayed""#), "{first}");
        assert_eq!(
            again.replacen(r#","replayed":true"#, "", 1),
            first,
            "{tool}"
        );
    }
    // The write ran once, however often it was asked for.
    let lookup = client.call("exports_lookup", &export(), None).await;
    assert_eq!(lookup["structuredContent"]["count"], 1, "{lookup}");
}
