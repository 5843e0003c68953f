//! A lookup template kept at rest with its placeholder, whatever the query
//! parameter holding it is called: `POST /v1/calls/{id}/reconcile` settles a
//! call whose template is `?key={key}` (`key` is a credential's name to the
//! redactor, `{key}` is no credential).

use std::time::Duration;

use recourse_test_support::{KeyLookup, export, keyed, tools};
use serde_json::json;

use crate::support::{TestGateway, journal_path};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_placeholder_under_a_credential_name_settles_through_the_reconcile_route() {
    let t = tools(&["exports:crash_after_commit:1.0"], Duration::ZERO).await;
    let lookup = KeyLookup::start(&t).await;
    let state = tempfile::tempdir().unwrap();
    let location = journal_path(state.path());
    let gw = TestGateway::journaled(&location).await;
    let mut body = keyed(export(&t), "k-template-1");
    body["reconcile"] = json!(lookup.template);

    let (status, record) = gw.post(&body).await;
    assert_eq!(status, 200, "{record}");
    assert_eq!(
        record["outcome"], "unknown",
        "the lookup was down: {record}"
    );
    let id = record["call_id"].as_str().unwrap();

    lookup.switch_on();
    let answer = gw
        .raw(
            "POST",
            &format!("/v1/calls/{id}/reconcile"),
            axum::body::Body::empty(),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.body["state"], "succeeded", "{}", answer.text);
    assert_eq!(answer.body["record"]["settlement"]["by"], "lookup");
    assert_eq!(t.exports_committed(), 1, "settled by looking, never resent");
    let journal = recourse::journal::open_journal(&location).await.unwrap();
    let kept = journal.get(id).await.unwrap().unwrap().declared.reconcile;
    assert_eq!(kept.as_deref(), Some(lookup.template.as_str()));
}
