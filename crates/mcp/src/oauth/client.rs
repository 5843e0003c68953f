//! The HTTP client of every OAuth exchange (discovery, registration, the
//! token endpoint): the process's trusted roots, bounded answers, and
//! redirects only where rmcp asks for them, only within one origin.

use std::time::Duration;

use futures_util::StreamExt;
use rmcp::transport::auth::{
    OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRedirectPolicy,
    OAuthHttpRequest,
};

/// How long one OAuth exchange may take when rmcp does not say.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest OAuth answer read (metadata and token responses are small).
const MAX_ANSWER_BYTES: usize = 1024 * 1024;
/// The most redirects followed in one exchange that allows them.
const MAX_REDIRECTS: usize = 5;

/// Two clients: one that follows same-origin redirects (discovery, where
/// rmcp allows them), one that follows none (the token endpoint).
pub(crate) struct OAuthHttp {
    following: reqwest::Client,
    stopping: reqwest::Client,
}

impl OAuthHttp {
    /// # Errors
    /// The TLS backend could not be set up.
    pub(crate) fn new() -> Result<Self, reqwest::Error> {
        let same_origin = reqwest::redirect::Policy::custom(|attempt| {
            let first = attempt.previous().first().map(reqwest::Url::origin);
            if attempt.previous().len() > MAX_REDIRECTS {
                attempt.error("too many redirects")
            } else if first.is_some_and(|o| o != attempt.url().origin()) {
                attempt.error("a redirect to another origin")
            } else {
                attempt.follow()
            }
        });
        let build = |redirect| {
            recourse::tls::client_builder()
                .redirect(redirect)
                .user_agent(concat!("recourse/", env!("CARGO_PKG_VERSION")))
                .build()
        };
        Ok(Self {
            following: build(same_origin)?,
            stopping: build(reqwest::redirect::Policy::none())?,
        })
    }
}

impl OAuthHttpClient for OAuthHttp {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        let client = match request.redirect_policy {
            OAuthHttpRedirectPolicy::Stop => &self.stopping,
            _ => &self.following,
        };
        let timeout = request.timeout.unwrap_or(EXCHANGE_TIMEOUT);
        Box::pin(async move {
            let boxed = |e: reqwest::Error| Box::new(e) as OAuthHttpClientError;
            let mut outgoing = reqwest::Request::try_from(request.request).map_err(boxed)?;
            *outgoing.timeout_mut() = Some(timeout);
            let response = client.execute(outgoing).await.map_err(boxed)?;
            let mut answer = http::Response::builder().status(response.status());
            for (name, value) in response.headers() {
                answer = answer.header(name, value);
            }
            let mut body = Vec::new();
            let mut chunks = response.bytes_stream();
            while let Some(chunk) = chunks.next().await {
                let chunk = chunk.map_err(boxed)?;
                if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                    return Err(format!("an OAuth answer over {MAX_ANSWER_BYTES} bytes").into());
                }
                body.extend_from_slice(&chunk);
            }
            answer
                .body(body)
                .map_err(|e| Box::new(e) as OAuthHttpClientError)
        })
    }
}
