//! A journal that fails once between claiming a request's idempotency key
//! and recording its call, as a PostgreSQL restarting between the two
//! statements does — which the soak (`crates/cli/tests/cli/soak.rs`) hit
//! about once in ten minutes. The gateway answers 503 `JOURNAL_UNAVAILABLE`,
//! "nothing was sent", with `Retry-After`: the request may be sent again.

use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use recourse::ExecutorConfig;
use recourse::journal::open_journal;
use recourse_gateway::GatewayConfig;
use recourse_test_support::{FaultyJournal, export, keyed, tools};
use support::{TestGateway, journal_path};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_request_refused_journal_unavailable_runs_when_sent_again() {
    let t = tools(&[], Duration::ZERO).await;
    let state = tempfile::tempdir().unwrap();
    let journal = FaultyJournal::new(open_journal(&journal_path(state.path())).await.unwrap())
        .failing_begins(1);
    // A lease far longer than the test: the refused call gives its claim
    // back at once rather than holding the key until it runs out.
    let config = ExecutorConfig {
        lease: Duration::from_secs(60),
        ..support::config()
    };
    let gw = TestGateway::new(
        GatewayConfig::new(config).with_journal(Arc::new(journal)),
        None,
    );
    let body = keyed(export(&t), "blip-1");

    let (status, refused) = gw.post(&body).await;
    assert_eq!(status, 503, "{refused}");
    assert_eq!(refused["error"]["code"], "JOURNAL_UNAVAILABLE");
    // Nothing was sent: the same request, sent again as told, runs.
    let started = Instant::now();
    let answer = loop {
        let (status, answer) = gw.post(&body).await;
        if status == 200 {
            break answer;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{status} {answer}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(answer["outcome"], "succeeded", "{answer}");
    assert_eq!(answer["replayed"], false, "it ran");
    assert_eq!(t.exports_committed(), 1, "the export was made");
    // And from then on the key answers with that call's record.
    let (status, again) = gw.post(&body).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["replayed"], true);
    assert_eq!(again["call_id"], answer["call_id"]);
    assert_eq!(t.exports_committed(), 1);
}
