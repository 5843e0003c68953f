//! A journal that fails once between claiming a request's idempotency key
//! and recording its call, as a PostgreSQL restarting between the two
//! statements does — which the soak (`crates/cli/tests/cli/soak.rs`) hit
//! about once in ten minutes. The gateway answers 503 `JOURNAL_UNAVAILABLE`,
//! "nothing was sent", with `Retry-After`: the request may be sent again.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use recourse::ExecutorConfig;
use recourse::journal::{
    AttemptResult, CallState, Claimed, Journal, JournalEntry, JournalError, JournalErrorKind,
    JournalResult, KeyClaim, ListQuery, NewCall, RecordJson, open_journal,
};
use recourse::transport::BoxFuture;
use recourse_gateway::GatewayConfig;
use recourse_test_support::{export, keyed, tools};
use serde_json::Value;
use support::{TestGateway, journal_path};

/// A journal whose first `begin_call` fails; everything else is `inner`'s.
struct FailsOnceAfterTheClaim {
    inner: Arc<dyn Journal>,
    failed: AtomicBool,
}

impl Journal for FailsOnceAfterTheClaim {
    fn claim_key<'a>(&'a self, claim: &'a KeyClaim) -> BoxFuture<'a, JournalResult<Claimed>> {
        self.inner.claim_key(claim)
    }
    fn begin_call<'a>(&'a self, call: &'a NewCall) -> BoxFuture<'a, JournalResult<()>> {
        if self.failed.swap(true, Ordering::SeqCst) {
            return self.inner.begin_call(call);
        }
        Box::pin(async {
            Err(JournalError::new(
                JournalErrorKind::Operation,
                "recording call",
                "the database is restarting",
            ))
        })
    }
    fn begin_attempt<'a>(
        &'a self,
        call_id: &'a str,
        n: u32,
        payload: Option<&'a Value>,
    ) -> BoxFuture<'a, JournalResult<()>> {
        self.inner.begin_attempt(call_id, n, payload)
    }
    fn finish_attempt<'a>(
        &'a self,
        call_id: &'a str,
        n: u32,
        result: &'a AttemptResult,
    ) -> BoxFuture<'a, JournalResult<()>> {
        self.inner.finish_attempt(call_id, n, result)
    }
    fn finish_call<'a>(
        &'a self,
        call_id: &'a str,
        state: CallState,
        operation_id: Option<&'a str>,
        record: Option<&'a RecordJson>,
    ) -> BoxFuture<'a, JournalResult<()>> {
        self.inner.finish_call(call_id, state, operation_id, record)
    }
    fn renew_lease<'a>(
        &'a self,
        call_id: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, JournalResult<bool>> {
        self.inner.renew_lease(call_id, owner, lease)
    }
    fn take_over<'a>(
        &'a self,
        call_id: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, JournalResult<bool>> {
        self.inner.take_over(call_id, owner, lease)
    }
    fn get<'a>(&'a self, call_id: &'a str) -> BoxFuture<'a, JournalResult<Option<JournalEntry>>> {
        self.inner.get(call_id)
    }
    fn list<'a>(&'a self, query: &'a ListQuery) -> BoxFuture<'a, JournalResult<Vec<JournalEntry>>> {
        self.inner.list(query)
    }
    fn prune<'a>(&'a self, before: &'a str, limit: u32) -> BoxFuture<'a, JournalResult<u64>> {
        self.inner.prune(before, limit)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_request_refused_journal_unavailable_runs_when_sent_again() {
    let t = tools(&[], Duration::ZERO).await;
    let state = tempfile::tempdir().unwrap();
    let journal = FailsOnceAfterTheClaim {
        inner: open_journal(&journal_path(state.path())).await.unwrap(),
        failed: AtomicBool::new(false),
    };
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
