//! Reconciling by HTTP lookup: GET a URL template, read `state` from the envelope.

use std::sync::Arc;
use std::time::Duration;

use recourse_protocol::parse_response;
use serde_json::Value;

use crate::transport::BoxFuture;
use recourse_core::allow::{TargetAllowlist, TargetUrl};
use recourse_core::config::ConfigError;
use recourse_core::reconcile::{ReconcileRequest, Reconciler, Reconciliation};

/// Looks up a write's outcome at a URL built from a template with `{key}` and
/// `{operation_id}` placeholders (`{operation_id}` falls back to the key when
/// the tool gave none). The answer is an envelope whose `data.state` is
/// `committed` (with `data.result`, or the data itself, as the result),
/// `pending` or `not_committed`; anything else, or a failed lookup, is unknown.
///
/// Placeholders may appear only in the template's path or query, and their
/// values are percent-encoded, so a key can never change the host; a value
/// that is only `.` or `..` (which would climb the path) is never used. With
/// [`with_allowlist`](Self::with_allowlist) every lookup URL is checked
/// before it is sent.
///
/// ```
/// use recourse::HttpReconciler;
/// let r = HttpReconciler::new("http://127.0.0.1:8700/api/exports/{operation_id}").unwrap();
/// assert_eq!(r.url_for(Some("k-1"), None).unwrap(), "http://127.0.0.1:8700/api/exports/k-1");
/// assert_eq!(r.url_for(Some(".."), None), None);
/// assert!(HttpReconciler::new("http://h/exports").is_err(), "a template needs a placeholder");
/// assert!(HttpReconciler::new("http://{key}.h/exports").is_err(), "only in the path or query");
/// ```
#[derive(Debug, Clone)]
pub struct HttpReconciler {
    template: String,
    /// The template parsed once: where every lookup must stay.
    parsed: recourse_core::allow::Template,
    client: reqwest::Client,
    allowlist: Option<Arc<TargetAllowlist>>,
    headers: Headers,
}

/// Headers a lookup sends (credentials): shown by name only.
#[derive(Clone, Default)]
struct Headers(Vec<(String, String)>);

impl std::fmt::Debug for Headers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(name, _)| name))
            .finish()
    }
}

/// The HTTP client every lookup shares (10 s per lookup, no redirects):
/// built once per process. A reconciler is made per call that has a lookup
/// (a manifest's, a request's), and building a client — its TLS roots
/// loaded — cost more than the rest of a call.
fn lookup_client() -> Result<reqwest::Client, ConfigError> {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    if let Some(client) = CLIENT.get() {
        return Ok(client.clone());
    }
    let client = crate::tls::client_builder()
        .timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| ConfigError::new("reconcile client", e.to_string()))?;
    Ok(CLIENT.get_or_init(|| client).clone())
}

impl HttpReconciler {
    /// A reconciler for `template`.
    ///
    /// # Errors
    /// When the template is not an http(s) URL without user info, or has no
    /// placeholder, or has one outside its path and query.
    pub fn new(template: impl Into<String>) -> Result<Self, ConfigError> {
        let template = template.into();
        let parsed = recourse_core::allow::validate_template(&template)
            .map_err(|e| ConfigError::new("reconcile template", e.to_string()))?;
        let client = lookup_client()?;
        Ok(Self {
            template,
            parsed,
            client,
            allowlist: None,
            headers: Headers::default(),
        })
    }

    /// Sends `name: value` with every lookup (the credentials it needs,
    /// which a journal never keeps).
    ///
    /// # Errors
    /// As [`check_header`](crate::header::check_header).
    pub fn with_header(
        mut self,
        name: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<Self, ConfigError> {
        let (name, value) = (name.into(), value.into());
        crate::header::check_header(&name, &value)?;
        self.headers.0.push((name, value));
        Ok(self)
    }

    /// Sends a lookup only when `allowlist` allows its URL; any other lookup
    /// is an unknown outcome, and nothing is sent.
    #[must_use]
    pub fn with_allowlist(mut self, allowlist: Arc<TargetAllowlist>) -> Self {
        self.allowlist = Some(allowlist);
        self
    }

    /// The template.
    pub fn template(&self) -> &str {
        &self.template
    }

    /// The lookup URL for a key and operation id; `None` when a placeholder
    /// has no usable value.
    pub fn url_for(&self, key: Option<&str>, operation_id: Option<&str>) -> Option<String> {
        self.lookup_url(key, operation_id)
            .map(|url| url.as_str().to_owned())
    }

    fn lookup_url(&self, key: Option<&str>, operation_id: Option<&str>) -> Option<TargetUrl> {
        let op = operation_id.or(key);
        let mut url = self.template.clone();
        if url.contains("{key}") {
            url = url.replace("{key}", &encode(key?)?);
        }
        if url.contains("{operation_id}") {
            url = url.replace("{operation_id}", &encode(op?)?);
        }
        TargetUrl::parse(&url)
            .ok()
            .filter(|lookup| self.parsed.contains(lookup))
    }

    async fn lookup(&self, request: ReconcileRequest<'_>) -> Reconciliation {
        let Some(url) = self.lookup_url(request.idempotency_key, request.operation_id) else {
            return Reconciliation::Unknown("no usable key or operation id to look up".to_owned());
        };
        if let Some(allowlist) = &self.allowlist
            && let Err(e) = allowlist.check_url(&url)
        {
            return Reconciliation::Unknown(format!("lookup not sent: {e}"));
        }
        let mut get = self.client.get(url.into_url());
        for (name, value) in &self.headers.0 {
            get = get.header(name, value);
        }
        let response = match get.send().await {
            Ok(r) => r,
            Err(e) => return Reconciliation::Unknown(format!("lookup failed: {e}")),
        };
        let status = response.status().as_u16();
        let headers: Vec<(String, String)> = response
            .headers()
            .iter()
            .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect();
        let body = match read_capped(response, MAX_LOOKUP_BYTES).await {
            Ok(b) => b,
            Err(why) => return Reconciliation::Unknown(why),
        };
        let parsed = parse_response(status, headers, &body);
        if !parsed.success {
            return Reconciliation::Unknown(format!("lookup answered HTTP {status}"));
        }
        read_state(
            parsed.data.unwrap_or_default().into_value(),
            parsed.server_wait,
        )
    }
}

/// The most bytes of a lookup's answer read: what a tool's answer may be.
const MAX_LOOKUP_BYTES: usize = crate::transport::DEFAULT_MAX_BODY_BYTES;

/// `response`'s body, read a chunk at a time and given up on past `max`
/// bytes: a lookup's answer is the tool's to size, and the gateway's memory
/// is not.
async fn read_capped(mut response: reqwest::Response, max: usize) -> Result<Vec<u8>, String> {
    let too_large = || format!("the lookup's answer is larger than {max} bytes");
    if response.content_length().is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) if body.len() + chunk.len() > max => return Err(too_large()),
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) => return Ok(body),
            Err(e) => return Err(format!("lookup body: {e}")),
        }
    }
}

fn read_state(data: Value, wait: Option<Duration>) -> Reconciliation {
    match data.get("state").and_then(Value::as_str) {
        Some("committed") => {
            let result = data.get("result").cloned().unwrap_or_else(|| data.clone());
            Reconciliation::Committed(result)
        }
        Some("not_committed") => Reconciliation::NotCommitted,
        Some("pending") => Reconciliation::Pending { wait },
        Some(other) => Reconciliation::Unknown(format!("lookup state {other:?}")),
        None => Reconciliation::Unknown("lookup gave no state".to_owned()),
    }
}

/// Percent-encodes a path segment (RFC 3986 unreserved characters pass);
/// `None` for `.` and `..`, which a URL parser reads as dot segments.
fn encode(s: &str) -> Option<String> {
    if s.is_empty() || s == "." || s == ".." {
        return None;
    }
    let encoded = s
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    Some(encoded)
}

impl Reconciler for HttpReconciler {
    fn reconcile<'a>(&'a self, request: ReconcileRequest<'a>) -> BoxFuture<'a, Reconciliation> {
        Box::pin(self.lookup(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_value_never_completes_a_dot_segment_the_template_began() {
        let up = HttpReconciler::new("http://127.0.0.1:9/exports/..{key}").unwrap();
        assert_eq!(up.url_for(Some(""), None), None, "empty values are refused");
        assert_eq!(
            up.url_for(Some("7"), None).as_deref(),
            Some("http://127.0.0.1:9/exports/..7")
        );
        let dot = HttpReconciler::new("http://127.0.0.1:9/exports/.{key}/status").unwrap();
        assert_eq!(dot.url_for(Some("."), None), None, "`.` + `.` is `..`");
        assert_eq!(dot.url_for(Some(".."), None), None);
        // Found by `cargo fuzz run target`: `http:"/..{operation_id}` with "".
        let fuzzed = HttpReconciler::new("http:\"/..{operation_id}").unwrap();
        assert_eq!(fuzzed.url_for(Some(""), Some("")), None);
    }

    #[test]
    fn placeholders_fall_back_and_are_encoded() {
        let r = HttpReconciler::new("http://h/x/{operation_id}?k={key}").unwrap();
        assert_eq!(
            r.url_for(Some("a b"), Some("op/1")).unwrap(),
            "http://h/x/op%2F1?k=a%20b"
        );
        assert_eq!(r.url_for(Some("k"), None).unwrap(), "http://h/x/k?k=k");
        assert_eq!(r.url_for(None, Some("op")), None);
        assert_eq!(r.url_for(Some("k"), Some("..")), None);
        assert_eq!(r.url_for(Some("."), Some("op")), None);
        assert_eq!(
            r.url_for(Some("%2e%2e"), Some("../x")).unwrap(),
            "http://h/x/..%2Fx?k=%252e%252e"
        );
    }

    #[tokio::test]
    async fn a_lookup_answer_past_the_cap_is_not_read_whole() {
        // An answer of 8 MiB, its length not announced (chunked).
        let app = axum::Router::new().route(
            "/exports/{key}",
            axum::routing::get(|| async {
                let chunk = bytes::Bytes::from(vec![b' '; 64 * 1024]);
                let chunks = std::iter::repeat_n(chunk, 128).map(Ok::<_, std::io::Error>);
                axum::body::Body::from_stream(futures_util::stream::iter(chunks))
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let r = HttpReconciler::new(format!("http://{addr}/exports/{{key}}")).unwrap();
        let target = recourse_core::target::Target::parse("http://127.0.0.1:1/exports").unwrap();
        let request = ReconcileRequest {
            target: &target,
            idempotency_key: Some("k-1"),
            operation_id: None,
            payload: &json!({}),
        };
        match r.reconcile(request).await {
            Reconciliation::Unknown(why) => assert!(why.contains("larger than"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn a_lookup_the_allowlist_refuses_is_never_sent() {
        // A documentation address: were it dialled, the answer would be a
        // connection failure or timeout, not a refusal.
        let r = HttpReconciler::new("http://192.0.2.1:9/exports/{key}")
            .unwrap()
            .with_allowlist(Arc::new(TargetAllowlist::loopback_only()));
        let request = ReconcileRequest {
            target: &recourse_core::target::Target::parse("http://127.0.0.1:1/exports").unwrap(),
            idempotency_key: Some("k-1"),
            operation_id: None,
            payload: &json!({}),
        };
        let Reconciliation::Unknown(why) = r.reconcile(request).await else {
            panic!("a refused lookup is unknown");
        };
        assert!(why.starts_with("lookup not sent:"), "{why}");
        assert!(why.contains("not allowed"), "{why}");
    }

    #[test]
    fn templates_keep_placeholders_in_the_path_or_query() {
        for bad in [
            "ftp://h/{key}",
            "http://h/x",
            "http://{key}.h/x",
            "http://u:{key}@h/x",
            "http://h/x#{key}",
        ] {
            assert!(HttpReconciler::new(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn states_are_read() {
        assert_eq!(
            read_state(json!({"state": "committed", "result": {"id": 1}}), None),
            Reconciliation::Committed(json!({"id": 1}))
        );
        assert_eq!(
            read_state(json!({"state": "committed"}), None),
            Reconciliation::Committed(json!({"state": "committed"}))
        );
        assert_eq!(
            read_state(json!({"state": "not_committed"}), None),
            Reconciliation::NotCommitted
        );
        assert_eq!(
            read_state(json!({"state": "pending"}), None),
            Reconciliation::Pending { wait: None }
        );
        assert!(matches!(
            read_state(json!({"state": "maybe"}), None),
            Reconciliation::Unknown(_)
        ));
        assert!(matches!(
            read_state(json!([]), None),
            Reconciliation::Unknown(_)
        ));
    }
}
