//! Sending probes over HTTP: bounded in time and size, never redirected.

use std::time::Duration;

use recourse::target::Url;
use recourse::transport::RawResponse;
use recourse_protocol::redact;

use super::answer::{MAX_ANSWER_BYTES, Reply, Response};
use super::battery::{Body, OVERSIZED_BYTES, Over};
use super::error::ProbeError;

/// An HTTP client for probes: a per-request timeout covering the whole
/// exchange, answers capped at [`MAX_ANSWER_BYTES`], redirects not followed
/// (a redirect is an answer to score, and following one would send the
/// battery somewhere the user did not point it).
#[derive(Debug, Clone)]
pub(crate) struct HttpChannel {
    client: reqwest::Client,
    headers: Vec<(String, String)>,
    timeout: Duration,
}

impl HttpChannel {
    /// A client sending `headers` with every request.
    pub(crate) fn new(
        headers: Vec<(String, String)>,
        timeout: Duration,
    ) -> Result<Self, ProbeError> {
        let client = reqwest::Client::builder()
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("recourse-probe/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ProbeError::because("building the HTTP client", &e))?;
        Ok(Self {
            client,
            headers,
            timeout,
        })
    }

    /// `GET url`, for the manifest.
    pub(crate) async fn get(&self, url: &Url) -> Result<RawResponse, String> {
        self.exchange(self.client.get(url.clone())).await
    }

    /// Sends `body` to `url` with `method`, and the idempotency key if any.
    pub(crate) async fn send(
        &self,
        method: &reqwest::Method,
        url: &Url,
        body: &Body,
        key: Option<&str>,
    ) -> Reply {
        let (bytes, content_type) = match body {
            Body::Json(value) => (value.to_string().into_bytes(), "application/json"),
            Body::Raw {
                bytes,
                content_type,
            } => (bytes.clone(), *content_type),
        };
        let bytes_len = bytes.len();
        let mut request = self
            .client
            .request(method.clone(), url.clone())
            .header(reqwest::header::CONTENT_TYPE, content_type)
            .body(bytes);
        if let Some(key) = key {
            request = request.header("Idempotency-Key", key);
        }
        if bytes_len > OVERSIZED_BYTES {
            // A server refusing a body it did not read closes the connection
            // after answering; never reuse it for the next probe.
            request = request.header(reqwest::header::CONNECTION, "close");
        }
        match self.exchange(request).await {
            Ok(raw) => Response::read(&raw, Over::Http),
            Err(why) => Reply::NoAnswer(why),
        }
    }

    async fn exchange(&self, mut request: reqwest::RequestBuilder) -> Result<RawResponse, String> {
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        let mut response = request
            .timeout(self.timeout)
            .send()
            .await
            .map_err(|e| self.describe(&e))?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| self.describe(&e))? {
            if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(format!(
                    "{status}: an answer over the {} KiB cap",
                    MAX_ANSWER_BYTES / 1024
                ));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(RawResponse {
            status,
            headers,
            body,
            read: None,
        })
    }

    fn describe(&self, error: &reqwest::Error) -> String {
        if error.is_timeout() {
            return format!("no answer within {:?}", self.timeout);
        }
        let mut text = error.to_string();
        let mut source = std::error::Error::source(error);
        while let Some(s) = source {
            text.push_str(": ");
            text.push_str(&s.to_string());
            source = s.source();
        }
        redact(&text)
    }
}
