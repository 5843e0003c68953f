//! A journal that stays small: finished calls are pruned, and their keys
//! start new calls; a call whose outcome is open is never pruned.

use std::time::Duration;

use recourse::journal::prune_older_than;
use recourse_test_support::{export, keyed, tools_without_lookups};
use serde_json::json;

use crate::support::{TestGateway, journal_path};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pruned_calls_key_starts_a_new_call_and_an_unknown_one_is_never_pruned() {
    let t = tools_without_lookups(&["exports:crash_after_commit:1.0"]).await;
    let state = tempfile::tempdir().unwrap();
    let gw = TestGateway::journaled(&journal_path(state.path())).await;
    let quote = keyed(
        json!({"url": format!("{}/api/stock/quote", t.base_url()), "payload": {"symbol": "TSLA"}}),
        "quote-1",
    );
    let (status, read) = gw.post(&quote).await;
    assert_eq!(
        (status, &read["outcome"]),
        (200, &json!("succeeded")),
        "{read}"
    );
    let (status, write) = gw.post(&keyed(export(&t), "export-1")).await;
    assert_eq!(
        (status, &write["outcome"]),
        (200, &json!("unknown")),
        "{write}"
    );

    tokio::time::sleep(Duration::from_millis(20)).await;
    let journal = gw.gateway.journal().unwrap();
    let removed = prune_older_than(journal.as_ref(), Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(removed, 1, "the finished read; never the unknown write");

    let (status, again) = gw.post(&quote).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(
        again["replayed"], false,
        "its key started a new call: {again}"
    );
    assert_ne!(again["call_id"], read["call_id"]);
    let (status, still) = gw.post(&keyed(export(&t), "export-1")).await;
    assert_eq!(status, 200, "{still}");
    assert_eq!(still["replayed"], true, "the unknown call is kept: {still}");
    assert_eq!(t.exports_committed(), 1);
}
