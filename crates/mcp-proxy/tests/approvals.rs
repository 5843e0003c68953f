//! A tool whose policy needs a person's approval, the proxy served over its
//! stdio front (an in-memory duplex) and a gateway on the same journal,
//! where an approver decides — both in this process: the client is told
//! `approval_required` with the call's id and nothing is sent; an approval
//! has the call sent once, and the client's next identical call gets its
//! result; a rejection reaches the client as the call's end, nothing
//! written. (In one process the gateway is the proxy's own process, and
//! sends it; that a gateway in another process leaves it to the proxy —
//! no second copy of the server — is in the CLI's tests, `approvals.rs`.)

mod support;

use serde_json::json;
use support::approvals::{AGENT, ApprovalSetup, LEAD, awaiting, decide, ended};
use support::duplex::StdioClient;
use support::export;
use support::tools::McpTools;

/// How many exports of [`export`] the proxy's upstream has.
async fn exports(proxy: &mut StdioClient) -> u64 {
    let found = proxy.call("exports_lookup", &export(), None).await;
    assert_eq!(found["isError"], false, "{found}");
    found["structuredContent"]["count"].as_u64().unwrap()
}

#[tokio::test]
async fn an_approved_call_is_written_once_and_the_same_call_then_gets_its_result() {
    let tools = McpTools::start(&[]).await;
    let setup = ApprovalSetup::new();
    let gateway = setup.gateway(&[]).await;
    let mut proxy = setup.proxy(tools.upstream(Some("tools"))).await;

    let first = proxy
        .call("exports_create", &export(), Some("export-1"))
        .await;
    let (call_id, approval_id) = awaiting(&first);
    assert_eq!(
        exports(&mut proxy).await,
        0,
        "nothing is sent before a person decides"
    );
    // Asking again asks nothing new: the same call, the same approval.
    let again = proxy
        .call("exports_create", &export(), Some("export-1"))
        .await;
    assert_eq!(awaiting(&again), (call_id.clone(), approval_id.clone()));
    assert_eq!(again["_meta"]["recourse/call"]["replayed"], true);
    let other = json!({"source_id": "sales-2025", "format": "pdf"});
    let reused = proxy.call("exports_create", &other, Some("export-1")).await;
    assert_eq!(
        reused["_meta"]["io.modelcontextprotocol/toolFailure"]["code"], "IDEMPOTENCY_KEY_REUSED",
        "{reused}"
    );

    // The agent may not decide; the lead may, once.
    assert_eq!(
        decide(&gateway, AGENT, &approval_id, "approve").await.0,
        403
    );
    let (status, approval) = decide(&gateway, LEAD, &approval_id, "approve").await;
    assert_eq!(
        (status, &approval["state"]),
        (200, &json!("approved")),
        "{approval}"
    );
    let record = ended(&gateway, &call_id).await;
    assert_eq!(record["outcome"], "succeeded", "{record}");

    let done = proxy
        .call("exports_create", &export(), Some("export-1"))
        .await;
    assert_eq!(done["isError"], false, "{done}");
    assert_eq!(done["_meta"]["recourse/call"]["call_id"], call_id.as_str());
    assert_eq!(done["_meta"]["recourse/call"]["replayed"], true, "{done}");
    assert_eq!(
        done["structuredContent"]["source_id"], "sales-2024",
        "{done}"
    );
    assert_eq!(exports(&mut proxy).await, 1, "one write, the gateway's");
    let once_more = proxy
        .call("exports_create", &export(), Some("export-1"))
        .await;
    assert_eq!(once_more["isError"], false, "{once_more}");
    assert_eq!(
        exports(&mut proxy).await,
        1,
        "a repeat is answered, never sent"
    );
    assert_eq!(proxy.close().await.calls_left, 0);
}

#[tokio::test]
async fn a_rejected_call_is_never_written_and_identical_calls_without_a_key_are_one() {
    let tools = McpTools::start(&[]).await;
    let setup = ApprovalSetup::new();
    let gateway = setup.gateway(&[]).await;
    let mut proxy = setup.proxy(tools.upstream(Some("tools"))).await;

    let (call_id, approval_id) = awaiting(&proxy.call("exports_create", &export(), None).await);
    // No key: the request's own hash finds the same call.
    let again = proxy.call("exports_create", &export(), None).await;
    assert_eq!(awaiting(&again), (call_id.clone(), approval_id.clone()));
    let (status, approval) = decide(&gateway, LEAD, &approval_id, "reject").await;
    assert_eq!(
        (status, &approval["state"]),
        (200, &json!("rejected")),
        "{approval}"
    );

    let rejected = proxy.call("exports_create", &export(), None).await;
    assert_eq!(rejected["isError"], true, "{rejected}");
    let failure = &rejected["_meta"]["io.modelcontextprotocol/toolFailure"];
    assert_eq!(failure["class"], "governance", "{rejected}");
    assert_eq!(failure["code"], "approval_rejected", "{rejected}");
    assert_eq!(failure["retryable"], false, "{rejected}");
    assert_eq!(failure["correlationId"], call_id.as_str());
    assert_eq!(rejected["_meta"]["recourse/call"]["outcome"], "failed");
    assert_eq!(exports(&mut proxy).await, 0, "nothing was ever sent");
}
