//! Writes through the gateway, in-process: what a keyed retry gets (the
//! first call's record, from the journal, across a restart), a retry while
//! the first runs, the reconcile route, the journal's routes, and a client
//! that stops waiting. (A gateway killed or stopped mid-call is tested
//! against the binary, in the CLI's tests.)

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use recourse_reference_tools::RunningTools;
use recourse_test_support::{PostgresSchema, service_var};
use recourse_test_support::{export, keyed, tools, tools_without_lookups};
use serde_json::{Value, json};
use support::{TestGateway, journal_path};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_retry_gets_the_first_record_and_the_tool_one_write() {
    let t = tools_without_lookups(&["exports:crash_after_commit:1.0"]).await;
    let state = tempfile::tempdir().unwrap();
    let gw = TestGateway::journaled(&journal_path(state.path())).await;
    let body = keyed(export(&t), "order-7-export");

    let (status, first) = gw.post(&body).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["outcome"], "unknown");
    assert_eq!(first["replayed"], false);
    assert_eq!(
        first["idempotency_key"], "order-7-export",
        "the caller's key is the tool's"
    );

    // The retry differs only in its limits and sends the key as a header.
    let mut retry = export(&t);
    retry["deadline_secs"] = json!(5);
    let ((status, second), _) = gw
        .post_with(&retry, &[("Idempotency-Key", "order-7-export")])
        .await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["replayed"], true);
    assert_eq!(second["call_id"], first["call_id"]);
    assert_eq!(
        second["outcome"], "unknown",
        "an unknown stays unknown, never re-run"
    );
    let record = |answer: &Value| {
        let mut record = answer.clone();
        record.as_object_mut().unwrap().remove("replayed");
        record
    };
    assert_eq!(
        record(&second),
        record(&first),
        "the journal kept the record the first answer was"
    );
    assert_eq!(t.exports_committed(), 1);

    let mut other = body.clone();
    other["payload"]["format"] = json!("csv");
    let (status, refused) = gw.post(&other).await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(refused["error"]["code"], "IDEMPOTENCY_KEY_REUSED");
    assert_eq!(refused["error"]["details"]["call_id"], first["call_id"]);

    let ((status, disagree), _) = gw.post_with(&body, &[("Idempotency-Key", "another")]).await;
    assert_eq!(status, 400, "{disagree}");
    assert_eq!(disagree["error"]["details"]["field"], "idempotency_key");
    assert_eq!(t.exports_committed(), 1, "refusals send nothing");
}

/// A write sent with nothing but its URL and payload (as curl sends it):
/// the tool's manifest names the lookup, and the gateway settles the lost
/// answer through it — one export, the call `succeeded`, the lookup
/// journaled with the call for any later settler.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_curl_sent_write_is_settled_through_the_manifests_lookup() {
    let t = tools(&["exports:crash_after_commit:1.0"], Duration::ZERO).await;
    let state = tempfile::tempdir().unwrap();
    let gw = TestGateway::journaled(&journal_path(state.path())).await;
    let (status, r) = gw.post(&export(&t)).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["outcome"], "succeeded", "{r}");
    assert_eq!(r["idempotency"]["from"], "manifest");
    assert_eq!(t.exports_committed(), 1);
    let id = r["call_id"].as_str().unwrap();
    let entry = gw
        .gateway
        .journal()
        .unwrap()
        .get(id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        entry.declared.reconcile.as_deref(),
        Some(format!("{}/api/exports/{{operation_id}}", t.base_url()).as_str()),
        "the manifest's lookup is journaled with the call"
    );
    // The same tools without the declared lookup: the write stays unknown.
    let silent = tools_without_lookups(&["exports:crash_after_commit:1.0"]).await;
    let (_, r) = gw.post(&export(&silent)).await;
    assert_eq!(r["outcome"], "unknown", "{r}");
}

/// The first gateway answers, is gone, and a second one on the same
/// journal answers the retry from the record.
async fn replayed_across_a_restart(journal: &str) {
    let t = tools_without_lookups(&["exports:crash_after_commit:1.0"]).await;
    let body = keyed(export(&t), "restart-1");

    let first = TestGateway::journaled(journal).await;
    let (status, record) = first.post(&body).await;
    assert_eq!(status, 200, "{record}");
    assert_eq!(record["outcome"], "unknown");
    drop(first);

    let second = TestGateway::journaled(journal).await;
    let (status, again) = second.post(&body).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["replayed"], true, "{again}");
    assert_eq!(again["call_id"], record["call_id"]);
    assert_eq!(t.exports_committed(), 1, "one write across both gateways");

    let id = record["call_id"].as_str().unwrap();
    let (status, one) = second.get(&format!("/v1/calls/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(one["state"], "unknown");
    assert_eq!(one["record"]["call_id"], id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_retry_is_replayed_after_a_restart_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    replayed_across_a_restart(&journal_path(dir.path())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_retry_is_replayed_after_a_restart_on_postgres() {
    let Some(url) = service_var("RECOURSE_TEST_POSTGRES_URL") else {
        return;
    };
    let schema = PostgresSchema::create(&url).await;
    replayed_across_a_restart(&schema.url).await;
    schema.remove().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_while_the_first_runs_is_told_to_wait() {
    let t = tools(&["exports:slow:1.0"], Duration::from_millis(1500)).await;
    let state = tempfile::tempdir().unwrap();
    let gw = Arc::new(TestGateway::journaled_with_lease(&journal_path(state.path()), 3000).await);
    let body = keyed(export(&t), "slow-1");

    let running = {
        let (gw, body) = (Arc::clone(&gw), body.clone());
        tokio::spawn(async move { gw.post(&body).await })
    };
    gw.wait_for("/v1/calls?state=in_flight", |b| {
        b["calls"].as_array().is_some_and(|c| !c.is_empty())
    })
    .await;
    let ((status, busy), retry_after) = gw.post_with(&body, &[]).await;
    assert_eq!(status, 409, "{busy}");
    assert_eq!(busy["error"]["code"], "CALL_IN_PROGRESS");
    assert_eq!(busy["error"]["retryable"], true);
    assert_eq!(
        retry_after.as_deref(),
        Some("1"),
        "a third of the lease, at least 1 s"
    );

    let (status, first) = running.await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(first["outcome"], "succeeded", "{first}");
    let (status, after) = gw.post(&body).await;
    assert_eq!(status, 200);
    assert_eq!(after["replayed"], true);
    assert_eq!(after["outcome"], "succeeded");
    assert_eq!(t.exports_committed(), 1);
}

/// A lookup endpoint in front of the reference tools' that answers 503
/// until it is switched on; with a `credential`, then only to a request
/// carrying it as `?token=` or as `Authorization: Bearer` (its template
/// holds the query form).
async fn switchable_lookup(
    tools: &RunningTools,
    credential: Option<&'static str>,
) -> (String, Arc<AtomicBool>) {
    #[derive(Clone)]
    struct Lookup {
        up: Arc<AtomicBool>,
        tools: String,
        credential: Option<&'static str>,
    }
    async fn answer(
        State(l): State<Lookup>,
        Path(id): Path<String>,
        axum::extract::RawQuery(query): axum::extract::RawQuery,
        headers: axum::http::HeaderMap,
    ) -> Response {
        if !l.up.load(Ordering::SeqCst) {
            return StatusCode::SERVICE_UNAVAILABLE.into_response();
        }
        if let Some(secret) = l.credential {
            let by_query = query.as_deref() == Some(&format!("token={secret}"));
            let by_header = headers
                .get("authorization")
                .is_some_and(|v| *v == *format!("Bearer {secret}"));
            if !(by_query || by_header) {
                return StatusCode::UNAUTHORIZED.into_response();
            }
        }
        let resp = reqwest::get(format!("{}/api/exports/{id}", l.tools))
            .await
            .unwrap();
        let body: Value = resp.json().await.unwrap();
        axum::Json(body).into_response()
    }
    let up = Arc::new(AtomicBool::new(false));
    let state = Lookup {
        up: Arc::clone(&up),
        tools: tools.base_url(),
        credential,
    };
    let app = axum::Router::new()
        .route("/lookup/{id}", axum::routing::get(answer))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let query = credential.map_or(String::new(), |secret| format!("?token={secret}"));
    (format!("http://{addr}/lookup/{{operation_id}}{query}"), up)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reconcile_route_settles_an_unknown_through_its_lookup() {
    let t = tools(&["exports:crash_after_commit:1.0"], Duration::ZERO).await;
    let (template, up) = switchable_lookup(&t, None).await;
    let state = tempfile::tempdir().unwrap();
    let gw = TestGateway::journaled(&journal_path(state.path())).await;
    let mut body = export(&t);
    body["reconcile"] = json!(template);

    let (status, record) = gw.post(&body).await;
    assert_eq!(status, 200);
    assert_eq!(
        record["outcome"], "unknown",
        "the lookup was down: {record}"
    );
    let id = record["call_id"].as_str().unwrap();

    up.store(true, Ordering::SeqCst);
    let answer = gw
        .raw(
            "POST",
            &format!("/v1/calls/{id}/reconcile"),
            axum::body::Body::empty(),
        )
        .await;
    assert_eq!(answer.status, 200);
    let settled = answer.body;
    assert_eq!(settled["state"], "succeeded", "{settled}");
    let settled_record = &settled["record"];
    assert_eq!(settled_record["outcome"], "succeeded");
    assert_eq!(settled_record["settlement"]["by"], "lookup", "{settled}");
    assert_eq!(settled_record["next"]["step"], "use_result");
    assert_eq!(
        settled_record["attempts"], record["attempts"],
        "the first record's attempts are kept"
    );
    assert_eq!(
        t.exports_committed(),
        1,
        "settled by looking, never by resending"
    );

    let (status, missing) = gw.get("/v1/calls/no-such-call").await;
    assert_eq!(status, 404);
    assert_eq!(missing["error"]["code"], "CALL_NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_journal_routes_page_and_refuse_bad_queries() {
    let t = tools(&["exports:crash_after_commit:1.0"], Duration::ZERO).await;
    let state = tempfile::tempdir().unwrap();
    let gw = TestGateway::journaled(&journal_path(state.path())).await;
    let mut ids = Vec::new();
    for n in 0..3 {
        let (_, record) = gw.post(&keyed(export(&t), &format!("page-{n}"))).await;
        ids.push(record["call_id"].as_str().unwrap().to_owned());
    }
    let (status, page) = gw.get("/v1/calls?limit=2").await;
    assert_eq!(status, 200);
    let first: Vec<&str> = page["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(first, [ids[2].as_str(), ids[1].as_str()], "newest first");
    let before = page["next_before"].as_str().unwrap();
    let (_, rest) = gw.get(&format!("/v1/calls?limit=2&before={before}")).await;
    assert_eq!(rest["calls"].as_array().unwrap().len(), 1);
    assert_eq!(rest["calls"][0]["call_id"], ids[0]);
    assert_eq!(rest["next_before"], Value::Null);

    for (query, field) in [
        ("state=done", "state"),
        ("limit=0", "limit"),
        ("limit=1001", "limit"),
    ] {
        let (status, refused) = gw.get(&format!("/v1/calls?{query}")).await;
        assert_eq!(status, 400, "{query}: {refused}");
        assert_eq!(refused["error"]["details"]["field"], field, "{query}");
    }
    let (status, refused) = gw.get("/v1/calls?colour=red").await;
    assert_eq!(status, 400, "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_journal_keyed_requests_are_refused_and_nothing_is_sent() {
    let t = tools(&[], Duration::ZERO).await;
    let gw = TestGateway::plain();

    let (status, refused) = gw.post(&keyed(export(&t), "k-1")).await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["code"], "JOURNAL_REQUIRED");
    assert_eq!(t.exports_committed(), 0);
    let (status, no_journal) = gw.get("/v1/calls").await;
    assert_eq!(status, 404);
    assert_eq!(no_journal["error"]["code"], "NO_JOURNAL");

    let (status, record) = gw.post(&export(&t)).await;
    assert_eq!(status, 200, "an unkeyed call still runs: {record}");
    assert_eq!(record["outcome"], "succeeded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_waiting_does_not_cancel_the_call() {
    let t = tools(&["exports:slow:1.0"], Duration::from_millis(1000)).await;
    let state = tempfile::tempdir().unwrap();
    let gw = TestGateway::journaled_with_lease(&journal_path(state.path()), 3000).await;
    let body = keyed(export(&t), "impatient-1");
    // A client that waits 200 ms for the answer, then goes: its request is dropped.
    let gave_up = tokio::time::timeout(Duration::from_millis(200), gw.post(&body)).await;
    assert!(gave_up.is_err(), "the client stopped waiting");
    // Asked again with the same key, the gateway answers 409 while the call
    // runs, then the finished call's own record: it ran to the end.
    let started = Instant::now();
    let record = loop {
        let (status, record) = gw.post(&body).await;
        if status == 200 {
            break record;
        }
        assert_eq!(status, 409, "{record}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "never finished"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(record["replayed"], true);
    assert_eq!(record["outcome"], "succeeded", "{record}");
    assert_eq!(
        record["next"]["step"], "use_result",
        "the full record, not a summary"
    );
    assert_eq!(t.exports_committed(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lookups_credential_is_not_kept_and_a_settler_gets_it_from_configuration() {
    let t = tools(&["exports:crash_after_commit:1.0"], Duration::ZERO).await;
    let (template, up) = switchable_lookup(&t, Some("s3cret-lookup")).await;
    let state = tempfile::tempdir().unwrap();
    let location = journal_path(state.path());
    let journal = recourse::journal::open_journal(&location).await.unwrap();
    let config = recourse_gateway::GatewayConfig::new(support::config())
        .with_journal(journal)
        .with_settle_header("Authorization", "Bearer s3cret-lookup");
    let gw = TestGateway::new(config, None);
    let mut body = export(&t);
    body["reconcile"] = json!(template);

    let (status, record) = gw.post(&body).await;
    assert_eq!(status, 200);
    assert_eq!(
        record["outcome"], "unknown",
        "the lookup was down: {record}"
    );
    let id = record["call_id"].as_str().unwrap();
    let stored = std::fs::read(&location).unwrap();
    let wal = std::fs::read(format!("{location}-wal")).unwrap_or_default();
    for bytes in [&stored, &wal] {
        assert!(
            !String::from_utf8_lossy(bytes).contains("s3cret-lookup"),
            "the journal keeps the lookup's credential"
        );
    }

    // The journal's template says `token=[REDACTED]`: the settler's header is what opens the door.
    up.store(true, Ordering::SeqCst);
    let answer = gw
        .raw(
            "POST",
            &format!("/v1/calls/{id}/reconcile"),
            axum::body::Body::empty(),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.body["state"], "succeeded", "{}", answer.text);
    assert_eq!(t.exports_committed(), 1);
}

/// A keyed resend is the first answer again, byte for byte, but for
/// `"replayed":true` — a success, a failure the tool answered, and a write
/// whose outcome is unknown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_replay_is_the_first_answer_byte_for_byte() {
    let t = tools_without_lookups(&["exports:crash_after_commit:1.0"]).await;
    let dir = tempfile::tempdir().unwrap();
    let gw = TestGateway::journaled(&journal_path(dir.path())).await;
    let base = t.base_url();
    let bodies = [
        keyed(
            json!({"url": format!("{base}/api/stock/quote"), "payload": {"symbol": "TSLA"}, "idempotent": false}),
            "bytes-success",
        ),
        keyed(
            json!({"url": format!("{base}/api/orders/refund"), "payload": {"order_id": "ORD-2002"}}),
            "bytes-refused",
        ),
        keyed(export(&t), "bytes-unknown"),
    ];
    for body in &bodies {
        let first = gw.post_answer(body, &[]).await;
        let again = gw.post_answer(body, &[]).await;
        assert_eq!(first.status, again.status, "{}", first.text);
        assert!(
            first.text.ends_with(r#","replayed":false}"#),
            "{}",
            first.text
        );
        assert!(
            again.text.ends_with(r#","replayed":true}"#),
            "{}",
            again.text
        );
        assert_eq!(
            again
                .text
                .replace(r#","replayed":true}"#, r#","replayed":false}"#),
            first.text,
            "{body}"
        );
    }
    assert_eq!(t.exports_committed(), 1, "the unknown write ran once");
}
