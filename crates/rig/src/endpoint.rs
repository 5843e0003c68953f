//! One HTTP operation of a tool server, as its capability manifest
//! describes it: [`HttpEndpoint`].
//!
//! A manifest names routes, not hosts: an endpoint or lookup that is not a
//! path on the server the manifest came from is refused, so a manifest cannot
//! send the agent's calls anywhere else.

use recourse::Method;
use recourse::target::Url;
use serde_json::Value;

use crate::error::SetupError;

/// One HTTP operation of a tool server, as its manifest describes it.
///
/// ```
/// use recourse_rig::HttpEndpoint;
/// use serde_json::json;
///
/// let manifest = json!({"success": true, "data": {"capabilities": [
///     {"name": "exports_create", "description": "Export a data source.", "endpoint": "/api/exports",
///      "method": "POST", "idempotent": false, "input_schema": {"type": "object"},
///      "reconcile": "/api/exports/{operation_id}"}
/// ]}});
/// let base = "http://127.0.0.1:8700".parse().unwrap();
/// let endpoints = HttpEndpoint::from_manifest(&base, &manifest).unwrap();
/// assert_eq!(endpoints[0].url.as_str(), "http://127.0.0.1:8700/api/exports");
/// assert_eq!(endpoints[0].idempotent, Some(false));
/// assert_eq!(endpoints[0].reconcile.as_deref(), Some("http://127.0.0.1:8700/api/exports/{operation_id}"));
///
/// let elsewhere = json!({"capabilities": [{"name": "x", "endpoint": "http://other.example/x"}]});
/// assert!(HttpEndpoint::from_manifest(&base, &elsewhere).is_err());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct HttpEndpoint {
    /// The tool name the model calls it by.
    pub name: String,
    /// What it does, written for the model.
    pub description: String,
    /// The absolute URL called.
    pub url: Url,
    /// The HTTP method.
    pub method: Method,
    /// Whether the tool declares repeating a call harmless; `None` when it
    /// says nothing (the call is then not idempotent unless its method is).
    pub idempotent: Option<bool>,
    /// The JSON Schema of the input, when the tool gave one.
    pub input_schema: Option<Value>,
    /// The absolute lookup URL template (`…/{operation_id}`) that
    /// reconciles an unknown outcome, when the tool names one.
    pub reconcile: Option<String>,
}

impl HttpEndpoint {
    /// The endpoints of `manifest` (an envelope whose data holds
    /// `capabilities`, or the bare `{"capabilities": […]}`) served at `base`.
    ///
    /// # Errors
    /// No `capabilities` list; an entry without a name or endpoint, with a
    /// method recourse does not know, or with an endpoint or lookup that is
    /// not a path on `base`'s server; a name listed twice.
    pub fn from_manifest(base: &Url, manifest: &Value) -> Result<Vec<Self>, SetupError> {
        let list = manifest
            .pointer("/data/capabilities")
            .or_else(|| manifest.get("capabilities"))
            .and_then(Value::as_array)
            .ok_or_else(|| {
                SetupError::new(base.as_str(), "the manifest has no capabilities list")
            })?;
        let mut endpoints: Vec<Self> = Vec::with_capacity(list.len());
        for item in list {
            let endpoint = Self::from_entry(base, item)?;
            if endpoints.iter().any(|e| e.name == endpoint.name) {
                return Err(SetupError::new(
                    &endpoint.name,
                    "the manifest lists this name twice",
                ));
            }
            endpoints.push(endpoint);
        }
        Ok(endpoints)
    }

    fn from_entry(base: &Url, item: &Value) -> Result<Self, SetupError> {
        let text = |key: &str| item.get(key).and_then(Value::as_str);
        let name = text("name")
            .filter(|n| !n.trim().is_empty())
            .ok_or_else(|| SetupError::new(base.as_str(), "a capability has no name"))?
            .to_owned();
        let endpoint = text("endpoint")
            .ok_or_else(|| SetupError::new(&name, "the capability has no endpoint"))?;
        let method = match text("method") {
            Some(m) => m
                .parse::<Method>()
                .map_err(|e| SetupError::new(&name, e.to_string()))?,
            None => Method::Post,
        };
        let url = on_server(base, endpoint).map_err(|why| SetupError::new(&name, why))?;
        let url = Url::parse(&url)
            .map_err(|e| SetupError::new(&name, format!("endpoint {endpoint:?}: {e}")))?;
        let reconcile = text("reconcile")
            .map(|lookup| on_server(base, lookup))
            .transpose()
            .map_err(|why| SetupError::new(&name, why))?;
        Ok(Self {
            description: text("description").unwrap_or_default().to_owned(),
            url,
            method,
            idempotent: item.get("idempotent").and_then(Value::as_bool),
            input_schema: item.get("input_schema").filter(|s| s.is_object()).cloned(),
            reconcile,
            name,
        })
    }
}

/// `path` on `base`'s server (under `base`'s path), or why not.
fn on_server(base: &Url, path: &str) -> Result<String, String> {
    let is_path = path.starts_with('/')
        && !path.starts_with("//")
        && !path.contains('\\')
        && !path.chars().any(char::is_control);
    if !is_path {
        return Err(format!(
            "{path:?} is not a path on the tool server (a manifest names routes, not hosts)"
        ));
    }
    Ok(format!("{}{path}", base.as_str().trim_end_matches('/')))
}
