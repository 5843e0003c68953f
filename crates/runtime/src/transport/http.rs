//! HTTP transport: POST JSON, capped bodies, failures as data — plain HTTP
//! straight over hyper ([`super::plain_http`]), the rest over `reqwest`.

use std::borrow::Cow;
use std::time::Duration;

use reqwest::header::CONTENT_TYPE;

use super::plain_http::Plain;
use super::wire::{error_chain, method, not_running_at, place, push_capped, too_large};
use super::{
    BoxFuture, Delivery, RawResponse, Request, Transport, TransportFailure, TransportFailureKind,
};

/// The default cap on a response body: 4 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Sends requests over HTTP: `POST`, `PUT` and `PATCH` with a JSON body;
/// `GET`, `HEAD`, `OPTIONS` and `DELETE` with the payload's fields as query
/// parameters.
///
/// Redirects are not followed: a tool that answers 3xx is reporting something
/// the policy should see, and following it would let a response steer the call.
#[derive(Debug, Clone)]
pub struct HttpTransport {
    client: reqwest::Client,
    /// Plain HTTP's own client (`None` only in tests that hold the two
    /// paths to one behaviour).
    plain: Option<Plain>,
    max_body_bytes: usize,
}

/// Configures an [`HttpTransport`].
#[derive(Debug, Clone)]
pub struct HttpTransportBuilder {
    connect_timeout: Duration,
    max_body_bytes: usize,
}

impl Default for HttpTransportBuilder {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(5),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }
}

impl HttpTransportBuilder {
    /// How long establishing a connection may take (separate from the request timeout).
    #[must_use]
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The largest response body accepted; larger ones are a failure, never an OOM.
    #[must_use]
    pub fn with_max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Builds the transport. Over https it trusts the platform's roots and
    /// the CA file chosen with [`trust_ca_file`](crate::tls::trust_ca_file).
    ///
    /// # Errors
    /// When the TLS backend cannot be initialised.
    pub fn build(self) -> Result<HttpTransport, recourse_core::config::ConfigError> {
        let client = crate::tls::client_builder()
            .connect_timeout(self.connect_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("recourse/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| recourse_core::config::ConfigError::new("http client", e.to_string()))?;
        Ok(HttpTransport {
            client,
            plain: Some(Plain::from_env(self.connect_timeout)),
            max_body_bytes: self.max_body_bytes,
        })
    }
}

impl HttpTransport {
    /// A builder with defaults: 5 s connect timeout, 4 MiB body cap.
    pub fn builder() -> HttpTransportBuilder {
        HttpTransportBuilder::default()
    }

    /// The same transport with plain HTTP left to reqwest, for tests that
    /// hold the two paths to one behaviour.
    #[cfg(test)]
    pub(super) fn reqwest_only(&self) -> (bool, Self) {
        let mut reqwest = self.clone();
        (reqwest.plain.take().is_some(), reqwest)
    }

    async fn exchange(&self, request: &Request) -> Delivery {
        let Some(url) = request.target.url() else {
            return Err(TransportFailure::new(
                TransportFailureKind::RequestNotBuilt,
                format!("{} is not an http(s) URL", request.target),
            ));
        };
        // A query method carries the payload in the URL, any other as a JSON body.
        let (url, body) = if request.method.sends_query() {
            let mut url = url.clone();
            append_query(&mut url, &request.payload);
            (Cow::Owned(url), None)
        } else {
            let body = serde_json::to_vec(&request.payload).map_err(|e| {
                TransportFailure::new(TransportFailureKind::RequestNotBuilt, e.to_string())
            })?;
            (Cow::Borrowed(url), Some(body))
        };
        if let Some(plain) = &self.plain
            && plain.carries(&url)
        {
            return plain
                .exchange(&url, body, request, self.max_body_bytes)
                .await;
        }
        let mut builder = self
            .client
            .request(method(request.method), url.into_owned())
            .timeout(request.timeout);
        if let Some(body) = body {
            builder = builder.header(CONTENT_TYPE, "application/json").body(body);
        }
        for (name, value) in &request.headers {
            builder = builder.header(name, value);
        }
        let mut response = builder.send().await.map_err(|e| failure(&e))?;
        let status = response.status().as_u16();
        let headers = super::text_headers(response.headers());
        if response
            .content_length()
            .is_some_and(|n| n > self.max_body_bytes as u64)
        {
            return Err(too_large(self.max_body_bytes, status));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| failure(&e))? {
            push_capped(&mut body, &chunk, self.max_body_bytes, status)?;
        }
        Ok(RawResponse {
            status,
            headers,
            body,
            read: None,
        })
    }
}

/// The payload's top-level fields as query parameters: strings as they are,
/// other scalars as JSON text, arrays as one parameter per item, objects as
/// JSON text; `null` fields are left out.
fn append_query(url: &mut url::Url, payload: &serde_json::Value) {
    let serde_json::Value::Object(fields) = payload else {
        return;
    };
    if fields.is_empty() {
        return;
    }
    let mut query = url.query_pairs_mut();
    for (name, value) in crate::json_order::sorted_entries(fields) {
        let items = match value {
            serde_json::Value::Array(items) => items.iter().collect(),
            other => vec![other],
        };
        for item in items {
            match item {
                serde_json::Value::Null => {}
                serde_json::Value::String(s) => {
                    query.append_pair(name, s);
                }
                other => {
                    query.append_pair(name, &other.to_string());
                }
            }
        }
    }
}

fn failure(error: &reqwest::Error) -> TransportFailure {
    // Read by type: a handshake that failed sent nothing, and never passes with time.
    if let Some(problem) = crate::tls::TlsProblem::of(error) {
        let place = error.url().map_or_else(|| "the tool".to_owned(), place);
        return problem.failure(&place);
    }
    let kind = if error.is_builder() {
        TransportFailureKind::RequestNotBuilt
    } else if error.is_connect() {
        TransportFailureKind::ConnectFailed
    } else if error.is_timeout() {
        TransportFailureKind::TimedOutAfterSend
    } else {
        TransportFailureKind::FailedAfterSend
    };
    let message = match kind {
        TransportFailureKind::ConnectFailed => not_running(error),
        _ => error_chain(error),
    };
    TransportFailure::new(kind, message)
}

/// A connection that never opened, said so a person knows what to check:
/// "could not connect to 127.0.0.1:8700 — is the tool server running?
/// (Connection refused)". Only the host and port are named, never the path
/// or query.
fn not_running(error: &reqwest::Error) -> String {
    let place = error.url().map_or_else(|| "the tool".to_owned(), place);
    not_running_at(&place, error)
}

impl Transport for HttpTransport {
    fn send<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Delivery> {
        Box::pin(self.exchange(request))
    }

    /// The per-request timeout covers the whole exchange, body included.
    fn enforces_timeout(&self) -> bool {
        true
    }
}
