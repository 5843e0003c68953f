//! A database failover as the gateway sees it: every connection of its
//! PostgreSQL journal cut. Calls answer 503 `JOURNAL_UNAVAILABLE` with
//! `Retry-After` (nothing sent) at worst, and work again without a restart;
//! `/readyz` follows.

use std::time::{Duration, Instant};

use recourse_test_support::{PostgresSchema, export, keyed, service_var, tools};

use crate::support::TestGateway;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_works_again_after_its_database_connections_are_cut() {
    let Some(url) = service_var("RECOURSE_TEST_POSTGRES_URL") else {
        return;
    };
    let t = tools(&[], Duration::ZERO).await;
    let schema = PostgresSchema::create(&url).await;
    let app = format!("recourse-failover-{}", uuid::Uuid::now_v7().simple());
    let gw = TestGateway::journaled(&schema.url_as(&app)).await;
    let (status, first) = gw.post(&keyed(export(&t), "failover-1")).await;
    assert_eq!(status, 200, "{first}");

    assert!(
        schema.cut(&app).await >= 1,
        "the gateway's connections were found"
    );

    let started = Instant::now();
    let mut unavailable = 0;
    loop {
        let ((status, answer), retry_after) =
            gw.post_with(&keyed(export(&t), "failover-2"), &[]).await;
        if status == 200 {
            assert_eq!(answer["outcome"], "succeeded", "{answer}");
            break;
        }
        assert_eq!(status, 503, "{answer}");
        assert_eq!(answer["error"]["code"], "JOURNAL_UNAVAILABLE");
        assert_eq!(retry_after.as_deref(), Some("1"));
        unavailable += 1;
        assert!(started.elapsed() < Duration::from_secs(10), "{answer}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!("after the cut: {unavailable} answer(s) 503 before the journal was back");
    let (status, ready) = gw.get("/readyz").await;
    assert_eq!(status, 200, "{ready}");
    assert_eq!(
        t.exports_committed(),
        2,
        "one export per key, none lost, none twice"
    );
    schema.remove().await;
}

/// A locked journal table: a keyed write whose deadline is shorter than the
/// database's own lock timeout fails within its deadline (503
/// `JOURNAL_UNAVAILABLE`, nothing sent, the statement cancelled), `/readyz`
/// says so, and both recover once the lock is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_journal_fails_a_call_within_its_deadline_and_readyz_says_so() {
    let Some(url) = service_var("RECOURSE_TEST_POSTGRES_URL") else {
        return;
    };
    let t = tools(&[], Duration::ZERO).await;
    let schema = PostgresSchema::create(&url).await;
    let gw = TestGateway::journaled(&schema.url).await;
    let (status, warm) = gw.post(&keyed(export(&t), "locked-0")).await;
    assert_eq!(status, 200, "{warm}");

    schema.lock("recourse_calls").await;
    let mut body = keyed(export(&t), "locked-1");
    body["deadline_secs"] = serde_json::json!(0.5);
    let ((status, refused), retry_after) = gw.post_with(&body, &[]).await;
    assert_eq!(status, 503, "{refused}");
    assert_eq!(refused["error"]["code"], "JOURNAL_UNAVAILABLE");
    assert_eq!(retry_after.as_deref(), Some("1"));
    // The call's deadline ended the wait, not the server's own 2 s lock timeout.
    let said = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(said.contains("deadline passed"), "{said}");
    let (status, ready) = gw.get("/readyz").await;
    assert_eq!(status, 503, "{ready}");
    assert_eq!(ready["journal"], "unreachable");

    schema.unlock().await;
    let started = Instant::now();
    loop {
        let (status, answer) = gw.post(&keyed(export(&t), "locked-1")).await;
        if status == 200 {
            assert_eq!(answer["outcome"], "succeeded", "{answer}");
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{answer}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (status, ready) = gw.get("/readyz").await;
    assert_eq!(status, 200, "{ready}");
    assert_eq!(t.exports_committed(), 2, "nothing was sent while locked");
    schema.remove().await;
}
