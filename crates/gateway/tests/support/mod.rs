//! A gateway in this process, asked through its router as a client would
//! ask it over HTTP (`tower::ServiceExt::oneshot`), and the reference tools'
//! export call. Shared by the gateway's test files; each uses a part.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, header};
use recourse::journal::open_journal;
use recourse::{CorrectionChain, ExecutorConfig};
use recourse_gateway::{Gateway, GatewayConfig, router};
use serde_json::Value;
use tower::ServiceExt;

/// A gateway and the token its clients send (if it has one).
#[derive(Clone)]
pub(crate) struct TestGateway {
    pub(crate) gateway: Arc<Gateway>,
    pub(crate) token: Option<String>,
}

/// An answer: status, body (JSON, or `Value::Null`), and its headers.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: Value,
    pub(crate) text: String,
    pub(crate) headers: axum::http::HeaderMap,
}

impl Answer {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// The executor configuration tests run with: no backoff to wait out.
pub(crate) fn config() -> ExecutorConfig {
    ExecutorConfig {
        backoff_base: Duration::ZERO,
        ..ExecutorConfig::default()
    }
}

impl TestGateway {
    /// A gateway of `config` with the standard corrector (deterministic
    /// repair; no model), its clients sending its token when it has one.
    pub(crate) fn new(config: GatewayConfig, token: Option<&str>) -> Self {
        let chain =
            CorrectionChain::from_vars(config.executor_config(), &Default::default()).unwrap();
        let config = config.with_corrector(Arc::new(chain));
        let config = match token {
            Some(t) => config.with_token(t),
            None => config,
        };
        Self {
            gateway: Arc::new(config.build().unwrap()),
            token: token.map(str::to_owned),
        }
    }

    /// A gateway of the test configuration without a journal.
    pub(crate) fn plain() -> Self {
        Self::new(GatewayConfig::new(config()), None)
    }

    /// A gateway of the test configuration journaling in `location`.
    pub(crate) async fn journaled(location: &str) -> Self {
        let journal = open_journal(location).await.unwrap();
        Self::new(GatewayConfig::new(config()).with_journal(journal), None)
    }

    /// The same, its calls' leases lasting `lease_ms`.
    pub(crate) async fn journaled_with_lease(location: &str, lease_ms: u64) -> Self {
        let journal = open_journal(location).await.unwrap();
        let config = ExecutorConfig {
            lease: Duration::from_millis(lease_ms),
            ..config()
        };
        Self::new(GatewayConfig::new(config).with_journal(journal), None)
    }

    /// Sends `request` (with the token, when the gateway has one).
    pub(crate) async fn send(&self, mut request: Request<Body>) -> Answer {
        if let Some(token) = &self.token
            && !request.headers().contains_key(header::AUTHORIZATION)
        {
            request.headers_mut().insert(
                header::AUTHORIZATION,
                format!("Bearer {token}").parse().unwrap(),
            );
        }
        let response = router(Arc::clone(&self.gateway))
            .oneshot(request)
            .await
            .unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        Answer {
            status,
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            text,
            headers,
        }
    }

    /// POSTs `body` to `/v1/calls`.
    pub(crate) async fn post(&self, body: &Value) -> (u16, Value) {
        self.post_with(body, &[]).await.0
    }

    /// POSTs `body` to `/v1/calls` with `headers`: the status, the body and
    /// the `Retry-After` header.
    pub(crate) async fn post_with(
        &self,
        body: &Value,
        headers: &[(&str, &str)],
    ) -> ((u16, Value), Option<String>) {
        let a = self.post_answer(body, headers).await;
        let retry_after = a.header("retry-after").map(str::to_owned);
        ((a.status, a.body), retry_after)
    }

    /// POSTs `body` to `/v1/calls` with `headers`: the whole answer.
    pub(crate) async fn post_answer(&self, body: &Value, headers: &[(&str, &str)]) -> Answer {
        let mut request =
            Request::post("/v1/calls").header(header::CONTENT_TYPE, "application/json");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        self.send(request.body(Body::from(body.to_string())).unwrap())
            .await
    }

    /// `method path` with `body` as it is (raw bytes, JSON content type).
    pub(crate) async fn raw(&self, method: &str, path: &str, body: impl Into<Body>) -> Answer {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header(header::CONTENT_TYPE, "application/json")
            .body(body.into())
            .unwrap();
        self.send(request).await
    }

    /// GETs `path`.
    pub(crate) async fn get(&self, path: &str) -> (u16, Value) {
        let a = self
            .send(Request::get(path).body(Body::empty()).unwrap())
            .await;
        (a.status, a.body)
    }

    /// Polls `path` until `done` holds of its body, for at most 15 s.
    pub(crate) async fn wait_for(&self, path: &str, done: impl Fn(&Value) -> bool) -> Value {
        let started = Instant::now();
        loop {
            let (status, body) = self.get(path).await;
            if status == 200 && done(&body) {
                return body;
            }
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "{path} never got there: {status} {body}"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

/// A fresh SQLite journal path under `dir`.
pub(crate) fn journal_path(dir: &std::path::Path) -> String {
    dir.join("gateway.db").display().to_string()
}
