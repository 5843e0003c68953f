//! The manifest cache's tests: entries, origins, matching, one lookup for many calls, expiry.

use super::read::segments_match;
use super::*;
use recourse_core::clock::ManualClock;
use serde_json::json;

#[test]
fn an_entry_that_asks_for_approval_in_any_form_gets_one() {
    let manifest = json!({"capabilities": [
        {"endpoint": "/a", "idempotent": false, "approval": {"reason": "moves money", "expires_in": "1h"}},
        {"endpoint": "/b", "idempotent": false, "approval": true},
        {"endpoint": "/c", "idempotent": false, "approval": {"reason": "", "expires_in": "forever"}},
        {"endpoint": "/d", "idempotent": false, "approval": null},
        {"endpoint": "/e", "idempotent": false, "approval": false},
        {"endpoint": "/f", "idempotent": false}
    ]});
    let manifests = CapabilityManifests::new();
    let at = |path: &str| -> Url { format!("http://127.0.0.1:9{path}").parse().unwrap() };
    manifests.remember(&at("/a"), &manifest);
    let approval = |path: &str| {
        manifests
            .cached_declaration(&at(path), Method::Post)
            .unwrap()
            .unwrap()
            .approval
            .clone()
    };
    let a = approval("/a").unwrap().required().unwrap();
    assert_eq!(
        (a.reason.as_str(), a.expires_in.as_secs()),
        ("moves money", 3600)
    );
    for asked in ["/b", "/c"] {
        let required = approval(asked).unwrap().required().unwrap();
        assert!(required.reason.contains("manifest"), "{asked}");
        assert_eq!(required.expires_in.as_secs(), 24 * 3600);
    }
    for none in ["/d", "/e", "/f"] {
        assert_eq!(approval(none), None, "{none}");
    }
}

#[test]
fn lookups_and_read_backs_are_kept_only_on_the_tools_own_allowed_origin() {
    let manifest = json!({"capabilities": [
        {"endpoint": "/api/a", "idempotent": false, "reconcile": "/api/a/{operation_id}",
         "verify": {"url": "/api/a/lookup", "args": {"id": "{{payload.id}}"}, "expect": ["/found == true"]}},
        {"endpoint": "/api/b", "idempotent": false,
         "reconcile": "http://evil.example/steal/{key}",
         "verify": {"url": "http://evil.example/read", "expect": ["/x == 1"]}},
        {"endpoint": "/api/c", "idempotent": false, "reconcile": "//evil.example/{key}",
         "verify": {"url": "/api/c", "expect": ["/x == 1"], "bogus": 1}},
        {"endpoint": "/api/d", "idempotent": false, "reconcile": "/outside/{key}"}
    ]});
    let allow = TargetAllowlist::loopback_only();
    let manifests = CapabilityManifests::new().with_allowlist(Arc::new(allow));
    let at = |path: &str| -> Url { format!("http://127.0.0.1:9/{path}").parse().unwrap() };
    manifests.remember(&at("api/a"), &manifest);
    let a = manifests
        .cached_declaration(&at("api/a"), Method::Post)
        .unwrap()
        .unwrap();
    assert_eq!(
        a.reconcile.as_deref(),
        Some("http://127.0.0.1:9/api/a/{operation_id}")
    );
    assert_eq!(
        a.verify.as_ref().unwrap().url.as_deref(),
        Some("http://127.0.0.1:9/api/a/lookup")
    );
    let b = manifests
        .cached_declaration(&at("api/b"), Method::Post)
        .unwrap()
        .unwrap();
    assert_eq!((&b.reconcile, &b.verify), (&None, &None), "another origin");
    let c = manifests
        .cached_declaration(&at("api/c"), Method::Post)
        .unwrap()
        .unwrap();
    assert_eq!(
        (&c.reconcile, &c.verify),
        (&None, &None),
        "not a path; not a spec"
    );
    // On the origin, and loopback is allowed: kept.
    let d = manifests
        .cached_declaration(&at("api/d"), Method::Post)
        .unwrap()
        .unwrap();
    assert_eq!(
        d.reconcile.as_deref(),
        Some("http://127.0.0.1:9/outside/{key}")
    );
    assert!(!d.idempotent);
}

#[test]
fn endpoints_match_whole_segments_and_placeholders_one_segment() {
    assert!(path_matches("/api/exports", "/api/exports"));
    assert!(path_matches("/api/exports/{id}", "/api/exports/op-1"));
    assert!(!path_matches("/api/exports/{id}", "/api/exports/op-1/x"));
    assert!(!path_matches("/api/exports/{id}", "/api/exports/"));
    assert!(!path_matches("/api/exports", "/api/exports/x"));
    assert!(!path_matches("/api/export", "/api/exports"));
}

proptest::proptest! {
    #[test]
    fn the_quick_match_of_a_literal_endpoint_is_the_segment_match(
        endpoint in "[a/{}]{0,8}",
        path in "[a/{}]{0,8}",
    ) {
        proptest::prop_assert_eq!(
            path_matches(&endpoint, &path),
            segments_match(&endpoint, &path)
        );
    }
}

#[test]
fn the_borrowed_origin_is_the_origin() {
    for text in [
        "http://127.0.0.1:8700/api/stock/quote?x=1",
        "HTTPS://Example.COM:443/a",
        "http://example.com:8080",
        "http://[::1]:9/x",
        "https://b\u{fc}cher.example/x",
        "http://user@example.com/x",
        "ftp://example.com/x",
    ] {
        let url = Url::parse(text).unwrap();
        assert_eq!(origin(&url), url.origin().ascii_serialization(), "{text}");
    }
}

#[tokio::test]
async fn calls_arriving_together_make_one_lookup() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::sync::Semaphore;

    // A tool that counts manifest requests and answers none until released.
    let asked = Arc::new(AtomicUsize::new(0));
    let release = Arc::new(Semaphore::new(0));
    let (count, gate) = (Arc::clone(&asked), Arc::clone(&release));
    let app = axum::Router::new().route(
        MANIFEST_PATH,
        axum::routing::get(move || {
            let (count, gate) = (Arc::clone(&count), Arc::clone(&gate));
            async move {
                count.fetch_add(1, Ordering::SeqCst);
                gate.acquire().await.unwrap().forget();
                axum::Json(json!({"success": true, "data": {"capabilities": [
                    {"endpoint": "/x", "method": "POST", "idempotent": true}
                ]}}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url: Url = format!("http://{}/x", listener.local_addr().unwrap())
        .parse()
        .unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });

    let manifests = Arc::new(CapabilityManifests::new());
    let calls: Vec<_> = (0..50)
        .map(|_| {
            let (manifests, url) = (Arc::clone(&manifests), url.clone());
            tokio::spawn(async move {
                manifests
                    .declares(&url, Method::Post, Duration::from_secs(10))
                    .await
            })
        })
        .collect();
    while asked.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Time for every other call to ask too, if it were going to.
    tokio::time::sleep(Duration::from_millis(200)).await;
    release.add_permits(100);
    for call in calls {
        assert_eq!(call.await.unwrap(), Some(true));
    }
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    assert!(manifests.fetching.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_lookup_that_got_no_answer_is_asked_again_soon() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    // A tool whose first manifest request loses its connection (as one
    // reused just when the tool's idle timeout closes it does); later
    // ones are answered.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url: Url = format!("http://{}/x", listener.local_addr().unwrap())
        .parse()
        .unwrap();
    let asked = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&asked);
    tokio::spawn(async move {
        let body =
            r#"{"success":true,"data":{"capabilities":[{"endpoint":"/x","idempotent":true}]}}"#;
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut head = [0u8; 2048];
            let _ = socket.read(&mut head).await;
            if count.fetch_add(1, Ordering::SeqCst) == 0 {
                continue; // dropped unanswered
            }
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(answer.as_bytes()).await;
        }
    });
    let clock = ManualClock::new();
    let manifests = CapabilityManifests::new().with_clock(Arc::new(clock.clone()));
    let ask = || manifests.declares(&url, Method::Post, Duration::from_secs(5));

    assert_eq!(ask().await, None, "no answer: nothing known");
    assert_eq!(ask().await, None, "remembered for a moment");
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    clock.advance(UNANSWERED_TTL);
    assert_eq!(
        ask().await,
        Some(true),
        "asked again, not after a whole TTL"
    );
    assert_eq!(asked.load(Ordering::SeqCst), 2);
    // An answer is remembered for the TTL.
    clock.advance(Duration::from_secs(30));
    assert_eq!(ask().await, Some(true));
    assert_eq!(asked.load(Ordering::SeqCst), 2);
}

#[test]
fn a_remembered_manifest_expires_with_its_ttl() {
    let clock = ManualClock::new();
    let manifests = CapabilityManifests::new()
        .with_clock(Arc::new(clock.clone()))
        .with_ttl(Duration::from_secs(60));
    let url: Url = "http://h:1/x".parse().unwrap();
    manifests.remember(
        &url,
        &json!({"capabilities": [{"endpoint": "/x", "idempotent": true}]}),
    );
    assert_eq!(manifests.cached(&url, Method::Post), Some(Some(true)));
    clock.advance(Duration::from_secs(61));
    assert_eq!(manifests.cached(&url, Method::Post), None);
}

#[test]
fn entries_without_a_declaration_or_with_an_unknown_method_say_nothing() {
    let url: Url = "http://127.0.0.1:9/d".parse().unwrap();
    let declared = CapabilityManifests::new().declarations(
        &url,
        &json!({"capabilities": [
            {"endpoint": "/a"},
            {"endpoint": "/b", "idempotent": "yes"},
            {"endpoint": "/c", "method": "TRACE", "idempotent": true},
            {"endpoint": "/d", "method": "get", "idempotent": true},
        ]}),
    );
    assert_eq!(
        declared,
        [Declared {
            method: Method::Get,
            endpoint: "/d".into(),
            declaration: Arc::new(Declaration {
                idempotent: true,
                reconcile: None,
                verify: None,
                approval: None,
            }),
        }]
    );
}
