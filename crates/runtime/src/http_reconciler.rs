//! Reconciling by HTTP lookup: GET a URL template, read `state` from the envelope.

use std::time::Duration;

use recourse_protocol::parse_response;
use serde_json::Value;

use crate::transport::BoxFuture;
use crate::{ConfigError, ReconcileRequest, Reconciler, Reconciliation};

/// Looks up a write's outcome at a URL built from a template with `{key}` and
/// `{operation_id}` placeholders (`{operation_id}` falls back to the key when
/// the tool gave none). The answer is an envelope whose `data.state` is
/// `committed` (with `data.result`, or the data itself, as the result),
/// `pending` or `not_committed`; anything else, or a failed lookup, is unknown.
///
/// ```
/// use recourse::HttpReconciler;
/// let r = HttpReconciler::new("http://127.0.0.1:8700/api/exports/{operation_id}").unwrap();
/// assert_eq!(r.url_for(Some("k-1"), None).unwrap(), "http://127.0.0.1:8700/api/exports/k-1");
/// assert!(HttpReconciler::new("http://h/exports").is_err(), "a template needs a placeholder");
/// ```
#[derive(Debug, Clone)]
pub struct HttpReconciler {
    template: String,
    client: reqwest::Client,
}

impl HttpReconciler {
    /// A reconciler for `template`.
    ///
    /// # Errors
    /// When the template is not an http(s) URL or has no placeholder.
    pub fn new(template: impl Into<String>) -> Result<Self, ConfigError> {
        let template = template.into();
        if !(template.starts_with("http://") || template.starts_with("https://")) {
            return Err(ConfigError::new(
                "reconcile template",
                format!("{template:?} is not an http(s) URL"),
            ));
        }
        if !(template.contains("{key}") || template.contains("{operation_id}")) {
            return Err(ConfigError::new(
                "reconcile template",
                "it needs a {key} or {operation_id} placeholder",
            ));
        }
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ConfigError::new("reconcile client", e.to_string()))?;
        Ok(Self { template, client })
    }

    /// The template.
    pub fn template(&self) -> &str {
        &self.template
    }

    /// The lookup URL for a key and operation id; `None` when a placeholder has no value.
    pub fn url_for(&self, key: Option<&str>, operation_id: Option<&str>) -> Option<String> {
        let op = operation_id.or(key);
        let mut url = self.template.clone();
        if url.contains("{key}") {
            url = url.replace("{key}", &encode(key?));
        }
        if url.contains("{operation_id}") {
            url = url.replace("{operation_id}", &encode(op?));
        }
        Some(url)
    }

    async fn lookup(&self, request: ReconcileRequest<'_>) -> Reconciliation {
        let Some(url) = self.url_for(request.idempotency_key, request.operation_id) else {
            return Reconciliation::Unknown("no key or operation id to look up".to_owned());
        };
        let response = match self.client.get(&url).send().await {
            Ok(r) => r,
            Err(e) => return Reconciliation::Unknown(format!("lookup failed: {e}")),
        };
        let status = response.status().as_u16();
        let headers: Vec<(String, String)> = response
            .headers()
            .iter()
            .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect();
        let body = match response.bytes().await {
            Ok(b) => b,
            Err(e) => return Reconciliation::Unknown(format!("lookup body: {e}")),
        };
        let parsed = parse_response(status, headers, &body);
        if !parsed.success {
            return Reconciliation::Unknown(format!("lookup answered HTTP {status}"));
        }
        read_state(parsed.data.unwrap_or(Value::Null), parsed.server_wait)
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

/// Percent-encodes a path segment (RFC 3986 unreserved characters pass).
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
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
    fn placeholders_fall_back_and_are_encoded() {
        let r = HttpReconciler::new("http://h/x/{operation_id}?k={key}").unwrap();
        assert_eq!(
            r.url_for(Some("a b"), Some("op/1")).unwrap(),
            "http://h/x/op%2F1?k=a%20b"
        );
        assert_eq!(r.url_for(Some("k"), None).unwrap(), "http://h/x/k?k=k");
        assert_eq!(r.url_for(None, Some("op")), None);
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
