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
