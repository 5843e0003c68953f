//! HTTP tools from their capability manifest: [`http_tools`] reads it and
//! makes each [`HttpEndpoint`] a rig tool.
//!
//! A recourse tool server lists its operations at `GET /api/capabilities`:
//! each with a name, a description written for the model, the route, the
//! method, whether it is idempotent, the JSON Schema of its input and, for a
//! write, the lookup that reconciles an unknown outcome. That is everything a
//! rig tool needs (name, description, parameters) and everything the executor
//! needs (target, idempotency evidence, schema, reconciler), read once.
//!
//! A manifest names routes, not hosts: an endpoint or lookup that is not a
//! path on the server the manifest came from is refused, so a manifest cannot
//! send the agent's calls anywhere else.

use std::time::Duration;

use recourse::Executor;
use recourse::target::{TargetUrl, Url};
use serde_json::Value;

use crate::endpoint::HttpEndpoint;
use crate::error::SetupError;
use crate::tool::RecourseTool;

/// The path a tool server lists its capabilities at.
pub const MANIFEST_PATH: &str = "/api/capabilities";

/// The most bytes of a manifest read.
const MAX_MANIFEST_BYTES: usize = 1024 * 1024;
/// How long reading a manifest may take.
const MANIFEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Reads the manifest of the tool server at `base_url` (its base URL, or the
/// full `…/api/capabilities` URL) and wraps each of its operations as a rig
/// tool calling through `executor` (one built on an
/// [`HttpTransport`](recourse::HttpTransport)).
///
/// The manifest is read once, within 10 s, at most 1 MiB, following no
/// redirect.
///
/// # Errors
/// A base URL that is not http(s) or carries credentials, an unreachable
/// server, an answer that is not a successful envelope, or a manifest
/// [`HttpEndpoint::from_manifest`] refuses.
pub async fn http_tools(
    executor: &Executor,
    base_url: &str,
) -> Result<Vec<RecourseTool>, SetupError> {
    let base = base_of(base_url)?;
    let manifest = fetch_manifest(&base).await?;
    HttpEndpoint::from_manifest(&base, &manifest)?
        .into_iter()
        .map(|endpoint| RecourseTool::http(executor.clone(), endpoint))
        .collect()
}

/// The server's base URL from `text`, without a trailing `/api/capabilities`.
fn base_of(text: &str) -> Result<Url, SetupError> {
    let checked =
        TargetUrl::parse(text.trim()).map_err(|e| SetupError::new(text, e.to_string()))?;
    let mut base = checked.url().clone();
    base.set_query(None);
    base.set_fragment(None);
    let path = base.path().trim_end_matches('/');
    let path = path.strip_suffix(MANIFEST_PATH).unwrap_or(path).to_owned();
    base.set_path(&path);
    Ok(base)
}

async fn fetch_manifest(base: &Url) -> Result<Value, SetupError> {
    let url = format!("{}{MANIFEST_PATH}", base.as_str().trim_end_matches('/'));
    let client = reqwest::Client::builder()
        .timeout(MANIFEST_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| SetupError::new(&url, format!("no HTTP client: {e}")))?;
    let mut response = client
        .get(&url)
        .send()
        .await
        .map_err(|e| SetupError::unreachable(&url, format!("unreachable: {e}")))?;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| SetupError::unreachable(&url, format!("the answer broke off: {e}")))?
    {
        if body.len() + chunk.len() > MAX_MANIFEST_BYTES {
            return Err(SetupError::new(&url, "the manifest is larger than 1 MiB"));
        }
        body.extend_from_slice(&chunk);
    }
    let parsed = recourse_protocol::parse_response(status, [("content-type", content_type)], &body);
    match (parsed.success, parsed.data) {
        (true, Some(data)) => Ok(data.into_value()),
        _ => Err(SetupError::new(
            &url,
            format!("answered HTTP {status} without a manifest"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use recourse::Method;
    use serde_json::json;

    fn base() -> Url {
        "http://127.0.0.1:8700".parse().unwrap()
    }

    #[test]
    fn entries_keep_what_the_tool_said_and_no_more() {
        let manifest = json!({"capabilities": [
            {"name": "a", "endpoint": "/api/a"},
            {"name": "b", "endpoint": "/api/b", "method": "get", "idempotent": true}
        ]});
        let endpoints = HttpEndpoint::from_manifest(&base(), &manifest).unwrap();
        assert_eq!(endpoints[0].method, Method::Post);
        assert_eq!(endpoints[0].idempotent, None, "silent is not 'no'");
        assert_eq!(endpoints[0].description, "");
        assert_eq!(endpoints[1].method, Method::Get);
        assert_eq!(endpoints[1].idempotent, Some(true));
    }

    #[test]
    fn routes_must_stay_on_the_server() {
        for endpoint in [
            "//evil.example/x",
            "https://evil.example/x",
            "api/x",
            "/a\\b",
            "/a\nb",
        ] {
            let manifest = json!({"capabilities": [{"name": "x", "endpoint": endpoint}]});
            assert!(
                HttpEndpoint::from_manifest(&base(), &manifest).is_err(),
                "{endpoint:?} accepted"
            );
        }
        let lookup = json!({"capabilities": [{"name": "x", "endpoint": "/x", "reconcile": "http://evil/{operation_id}"}]});
        assert!(HttpEndpoint::from_manifest(&base(), &lookup).is_err());
    }

    #[test]
    fn bad_manifests_say_what_is_wrong() {
        let cases = [
            json!({"data": {}}),
            json!({"capabilities": [{"endpoint": "/x"}]}),
            json!({"capabilities": [{"name": "x"}]}),
            json!({"capabilities": [{"name": "x", "endpoint": "/x", "method": "BREW"}]}),
            json!({"capabilities": [{"name": "x", "endpoint": "/x"}, {"name": "x", "endpoint": "/y"}]}),
        ];
        for manifest in cases {
            let error = HttpEndpoint::from_manifest(&base(), &manifest).unwrap_err();
            assert!(!error.to_string().is_empty());
            assert!(!error.is_unreachable());
        }
    }

    #[test]
    fn the_base_url_may_name_the_manifest_and_a_prefix_is_kept() {
        let base = base_of("http://127.0.0.1:8700/tools/api/capabilities?x=1").unwrap();
        assert_eq!(base.as_str(), "http://127.0.0.1:8700/tools");
        let manifest = json!({"capabilities": [{"name": "x", "endpoint": "/api/x"}]});
        let endpoints = HttpEndpoint::from_manifest(&base, &manifest).unwrap();
        assert_eq!(
            endpoints[0].url.as_str(),
            "http://127.0.0.1:8700/tools/api/x"
        );
        assert!(base_of("http://user:pw@127.0.0.1/").is_err());
        assert!(base_of("ftp://127.0.0.1/").is_err());
    }
}
