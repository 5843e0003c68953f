//! Plain HTTP, straight over hyper's HTTP/1 connections.
//!
//! Most tools sit next to their agent and speak plain HTTP. For them the
//! request goes out over hyper's connections, kept in a pool of our own
//! ([`super::pool`]), without reqwest's layers, which re-parse the URL for
//! redirects that are never followed here and box each request several
//! times — about a sixth of a gateway call's cost. Everything else (https, a
//! proxy from the environment, credentials in the URL) goes through reqwest,
//! which knows those. Both paths tell failures apart the same way: a
//! connection that never opened, a timeout after sending, a failure after
//! sending.

use std::time::Duration;

use bytes::Bytes;
use http::header::{
    ACCEPT, CONTENT_LENGTH, CONTENT_TYPE, HOST, HeaderName, HeaderValue, USER_AGENT,
};
use http_body_util::{BodyExt, Full};

use super::pool::Pool;
use super::wire::after_send;
use super::{Delivery, RawResponse, Request, TransportFailure, TransportFailureKind};

const AGENT: &str = concat!("recourse/", env!("CARGO_PKG_VERSION"));

/// Environment variables through which reqwest would send plain HTTP via a proxy.
const PROXY_VARS: [&str; 4] = ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"];

/// How long an unused connection stays open.
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// HTTP/1 over pooled connections for `http://` targets.
#[derive(Debug, Clone)]
pub(super) struct Plain {
    pool: Pool,
    /// A proxy is named for plain HTTP: only loopback hosts are carried here.
    loopback_only: bool,
}

/// Whether `url` names this machine (`localhost`, `127.0.0.0/8`, `::1`).
fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

impl Plain {
    /// The client; when the environment names a proxy for plain HTTP it
    /// carries only calls to this machine, and reqwest, which honours the
    /// proxy, the rest.
    pub(super) fn from_env(connect_timeout: Duration) -> Self {
        let proxied = PROXY_VARS
            .iter()
            .any(|var| std::env::var_os(var).is_some_and(|v| !v.is_empty()));
        Self {
            loopback_only: proxied,
            ..Self::new(connect_timeout)
        }
    }

    pub(super) fn new(connect_timeout: Duration) -> Self {
        Self {
            pool: Pool::new(connect_timeout, IDLE_TIMEOUT),
            loopback_only: false,
        }
    }

    /// Whether this path carries a call to `url`: plain HTTP without
    /// credentials in the URL (reqwest turns those into a header) — to this
    /// machine only, when a proxy is named for the rest. A call to a
    /// loopback host never goes through a proxy.
    pub(super) fn carries(&self, url: &url::Url) -> bool {
        url.scheme() == "http"
            && url.username().is_empty()
            && url.password().is_none()
            && (!self.loopback_only || is_loopback(url))
    }

    /// One exchange, body read up to `max_body_bytes`, within `request.timeout`.
    pub(super) async fn exchange(
        &self,
        url: &url::Url,
        body: Option<Vec<u8>>,
        request: &Request,
        max_body_bytes: usize,
    ) -> Delivery {
        let sent = self.send(url, body, request, max_body_bytes);
        match tokio::time::timeout(request.timeout, sent).await {
            Ok(delivery) => delivery,
            Err(_) => Err(TransportFailure::new(
                TransportFailureKind::TimedOutAfterSend,
                format!("timed out: no complete answer within {:?}", request.timeout),
            )),
        }
    }

    async fn send(
        &self,
        url: &url::Url,
        body: Option<Vec<u8>>,
        request: &Request,
        max_body_bytes: usize,
    ) -> Delivery {
        let origin = origin(url);
        let outgoing = build(url, body, request)
            .map_err(|why| TransportFailure::new(TransportFailureKind::RequestNotBuilt, why))?;
        let (response, lease) = self.pool.send(url, origin, outgoing).await?;
        let status = response.status().as_u16();
        let headers = super::text_headers(response.headers());
        let declared = response
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if declared.is_some_and(|n| n > max_body_bytes as u64) {
            return Err(super::wire::too_large(max_body_bytes, status));
        }
        let mut incoming = response.into_body();
        let mut body = Vec::with_capacity(declared.map_or(0, |n| n as usize));
        while let Some(frame) = incoming.frame().await {
            let frame = frame.map_err(|e| after_send(&e))?;
            let Ok(chunk) = frame.into_data() else {
                continue;
            };
            super::wire::push_capped(&mut body, &chunk, max_body_bytes, status)?;
        }
        // Read to its end: the connection is free for the next call.
        self.pool.give_back(origin, lease);
        Ok(RawResponse {
            status,
            headers,
            body,
            read: None,
        })
    }
}

/// The URL's host and port as it writes them: a default port left out, an
/// IPv6 address in brackets — what `Host` carries and the pool is keyed by.
pub(super) fn origin(url: &url::Url) -> &str {
    &url[url::Position::BeforeHost..url::Position::AfterPort]
}

/// The outgoing request: reqwest's default headers (`accept`, `user-agent`,
/// `content-type` for a JSON body), then the call's own, then `Host` unless
/// the call gave one.
fn build(
    url: &url::Url,
    body: Option<Vec<u8>>,
    request: &Request,
) -> Result<http::Request<Full<Bytes>>, String> {
    // A request to the tool itself names only the path and query (origin
    // form); the host goes in `Host`.
    let target = &url[url::Position::BeforePath..url::Position::AfterQuery];
    let uri: http::Uri = target
        .parse()
        .map_err(|e| format!("{url} is not a request target: {e}"))?;
    let json = body.is_some();
    let mut outgoing = http::Request::builder()
        .method(super::wire::method(request.method))
        .uri(uri)
        .body(Full::new(Bytes::from(body.unwrap_or_default())))
        .map_err(|e| e.to_string())?;
    let headers = outgoing.headers_mut();
    headers.insert(ACCEPT, HeaderValue::from_static("*/*"));
    headers.insert(USER_AGENT, HeaderValue::from_static(AGENT));
    if json {
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    }
    for (name, value) in &request.headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("{name:?} is not a header name"))?;
        let value = HeaderValue::from_str(value)
            .map_err(|_| format!("the value of header {name} is not a header value"))?;
        headers.append(name, value);
    }
    if !headers.contains_key(HOST) {
        let authority = origin(url);
        let host = HeaderValue::from_str(authority)
            .map_err(|_| format!("{authority:?} is not a Host header value"))?;
        headers.insert(HOST, host);
    }
    Ok(outgoing)
}

#[cfg(test)]
mod tests {
    //! The plain path and reqwest's must tell the same story of every
    //! exchange: each case runs through both.

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;
    use crate::transport::{HttpTransport, Transport};
    use recourse_core::method::Method;
    use recourse_core::target::Target;

    /// The transport as built, and the same with plain HTTP left to reqwest.
    fn both() -> [(&'static str, HttpTransport); 2] {
        let plain = HttpTransport::builder()
            .with_max_body_bytes(64)
            .build()
            .unwrap();
        let (had_plain, reqwest) = plain.reqwest_only();
        assert!(had_plain, "the tests run without a proxy configured");
        [("plain", plain), ("reqwest", reqwest)]
    }

    fn request(url: &str, timeout: Duration) -> Request {
        Request {
            target: Target::parse(url).unwrap(),
            method: Method::Post,
            headers: vec![("x-trace".into(), "t-1".into())],
            idempotency_key: None,
            payload: serde_json::json!({"symbol": "TSLA"}),
            timeout,
        }
    }

    /// The failure `transport` reports for a call to `url` within `timeout`.
    async fn failing(transport: &HttpTransport, url: &str, timeout: Duration) -> TransportFailure {
        match transport.send(&request(url, timeout)).await {
            Ok(raw) => panic!("expected a failure, got HTTP {}", raw.status),
            Err(failure) => failure,
        }
    }

    /// A server that reads one request head and then does `then` with the socket.
    async fn serve_once<F, Fut>(then: F) -> String
    where
        F: FnOnce(tokio::net::TcpStream, String) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/api/quote", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut seen = Vec::new();
            let mut buf = [0u8; 1024];
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                match socket.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => seen.extend_from_slice(&buf[..n]),
                }
            }
            then(socket, String::from_utf8_lossy(&seen).into_owned()).await;
        });
        url
    }

    #[tokio::test]
    async fn an_answer_reads_the_same_through_both() {
        for (path, transport) in both() {
            let url = serve_once(|mut socket, head| async move {
                let lower = head.to_ascii_lowercase();
                let ok = lower.starts_with("post /api/quote http/1.1")
                    && lower.contains("content-type: application/json")
                    && lower.contains("x-trace: t-1")
                    && lower.contains("user-agent: recourse/");
                let body = if ok { r#"{"success":true}"# } else { r#"{"bad":true}"# };
                let answer = format!(
                    "HTTP/1.1 201 Created\r\ncontent-type: application/json\r\nx-seen: yes\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
            })
            .await;
            let raw = transport
                .send(&request(&url, Duration::from_secs(5)))
                .await
                .unwrap();
            assert_eq!(raw.status, 201, "{path}");
            assert_eq!(
                raw.body, br#"{"success":true}"#,
                "{path}: the request as sent was not as expected"
            );
            assert!(
                raw.headers.iter().any(|(k, v)| k == "x-seen" && v == "yes"),
                "{path}"
            );
        }
    }

    /// The `Host` lines of a request head, as a header `x-host` can carry.
    fn host_lines(head: &str) -> String {
        head.split("\r\n")
            .filter_map(|line| line.split_once(':'))
            .filter(|(name, _)| name.eq_ignore_ascii_case("host"))
            .map(|(_, value)| value.trim())
            .collect::<Vec<_>>()
            .join(" | ")
    }

    #[tokio::test]
    async fn the_host_header_is_the_urls_or_the_callers_through_both() {
        for caller_host in [None, Some("tools.internal:8080")] {
            for (path, transport) in both() {
                let url = serve_once(|mut socket, head| async move {
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\nx-host: {}\r\ncontent-length: 0\r\n\r\n",
                        host_lines(&head)
                    );
                    let _ = socket.write_all(answer.as_bytes()).await;
                })
                .await;
                let mut request = request(&url, Duration::from_secs(5));
                if let Some(host) = caller_host {
                    request.headers.push(("Host".into(), host.into()));
                }
                let raw = transport.send(&request).await.unwrap();
                let sent = raw.headers.iter().find(|(k, _)| k == "x-host").unwrap();
                let authority = url
                    .trim_start_matches("http://")
                    .trim_end_matches("/api/quote");
                assert_eq!(sent.1, caller_host.unwrap_or(authority), "{path}");
            }
        }
    }

    #[tokio::test]
    async fn a_refused_connection_is_connect_failed_through_both() {
        for (path, transport) in both() {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = listener.local_addr().unwrap().port();
            drop(listener);
            let url = format!("http://127.0.0.1:{port}/api/quote");
            let failure = failing(&transport, &url, Duration::from_secs(5)).await;
            assert_eq!(
                failure.kind,
                TransportFailureKind::ConnectFailed,
                "{path}: {failure:?}"
            );
            assert!(
                failure.message.starts_with(&format!(
                    "could not connect to 127.0.0.1:{port} — is the tool server running?"
                )),
                "{path}: {}",
                failure.message
            );
        }
    }

    #[tokio::test]
    async fn a_connection_closed_after_the_request_is_failed_after_send_through_both() {
        for (path, transport) in both() {
            let url = serve_once(|socket, _| async move { drop(socket) }).await;
            let failure = failing(&transport, &url, Duration::from_secs(5)).await;
            assert_eq!(
                failure.kind,
                TransportFailureKind::FailedAfterSend,
                "{path}: {failure:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_held_request_times_out_after_send_through_both() {
        for (path, transport) in both() {
            let url = serve_once(|socket, _| async move {
                tokio::time::sleep(Duration::from_secs(10)).await;
                drop(socket);
            })
            .await;
            let failure = failing(&transport, &url, Duration::from_millis(200)).await;
            assert_eq!(
                failure.kind,
                TransportFailureKind::TimedOutAfterSend,
                "{path}: {failure:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_body_over_the_cap_keeps_its_status_through_both() {
        for (path, transport) in both() {
            for declared in [true, false] {
                let url = serve_once(move |mut socket, _| async move {
                    let body = "x".repeat(200);
                    let answer = if declared {
                        format!("HTTP/1.1 200 OK\r\ncontent-length: 200\r\n\r\n{body}")
                    } else {
                        format!("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nc8\r\n{body}\r\n0\r\n\r\n")
                    };
                    let _ = socket.write_all(answer.as_bytes()).await;
                })
                .await;
                let failure = failing(&transport, &url, Duration::from_secs(5)).await;
                assert_eq!(
                    failure.kind,
                    TransportFailureKind::ResponseTooLarge,
                    "{path} {declared}"
                );
                assert_eq!(failure.status, Some(200), "{path} {declared}");
            }
        }
    }
}
