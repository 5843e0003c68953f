//! Catalogues: what tools a plan may name, read from `GET {base}/api/capabilities`.
//!
//! A plan says `"capability": "currency_convert"`, not a URL. The catalogue
//! turns the name into everything a call needs: the endpoint (relative to the
//! catalogue's base URL), whether it is idempotent, its input schema (for
//! coercion and for checking corrections) and, for writes, its reconcile lookup.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use super::PlanError;

/// The path a tool server lists its capabilities at.
pub const CAPABILITIES_PATH: &str = "/api/capabilities";

/// One capability, resolved against its catalogue's base URL.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogueEntry {
    /// The capability's name.
    pub name: String,
    /// What it does, as the tool describes it.
    pub description: String,
    /// The absolute URL to call.
    pub url: String,
    /// The HTTP method, upper case.
    pub method: String,
    /// Whether repeating a call is harmless.
    pub idempotent: bool,
    /// The input JSON Schema, if the tool gave one.
    pub input_schema: Option<Value>,
    /// The absolute reconcile URL template, if the tool gave one.
    pub reconcile: Option<String>,
    /// The base URL of the catalogue it came from.
    pub base_url: String,
}

/// Capabilities by name, from one or more tool servers.
///
/// ```
/// use recourse::workflow::Catalogue;
/// use serde_json::json;
///
/// let manifest = json!({"success": true, "data": {"capabilities": [
///     {"name": "stock_quote", "description": "Latest price", "endpoint": "/api/stock/quote",
///      "method": "POST", "idempotent": true, "input_schema": {"type": "object"}}
/// ]}});
/// let catalogue = Catalogue::from_manifest("http://127.0.0.1:8700/", &manifest).unwrap();
/// assert_eq!(catalogue.get("stock_quote").unwrap().url, "http://127.0.0.1:8700/api/stock/quote");
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalogue {
    entries: BTreeMap<String, CatalogueEntry>,
    sources: Vec<String>,
}

/// `http://host:port` from `http://host:port/`, or `…/api/capabilities`.
fn base_of(url: &str) -> Result<String, PlanError> {
    let trimmed = url.trim();
    if !(trimmed.starts_with("http://") || trimmed.starts_with("https://")) {
        return Err(PlanError::catalogue(
            url,
            "the URL must start with http:// or https://",
        ));
    }
    let base = trimmed.trim_end_matches('/');
    Ok(base
        .strip_suffix(CAPABILITIES_PATH)
        .unwrap_or(base)
        .to_owned())
}

/// `relative` against `base` (absolute URLs pass through).
pub(crate) fn join(base: &str, relative: &str) -> String {
    if relative.starts_with("http://") || relative.starts_with("https://") {
        relative.to_owned()
    } else if relative.starts_with('/') {
        format!("{base}{relative}")
    } else {
        format!("{base}/{relative}")
    }
}

fn text(item: &Value, key: &str) -> Option<String> {
    item.get(key).and_then(Value::as_str).map(str::to_owned)
}

impl Catalogue {
    /// An empty catalogue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads a manifest (an envelope whose data holds `capabilities`, or the
    /// bare `{"capabilities": […]}`) served at `base_url`.
    ///
    /// # Errors
    /// A manifest without a `capabilities` array, or an entry without a
    /// `name` or `endpoint`, or a name listed twice.
    pub fn from_manifest(base_url: &str, manifest: &Value) -> Result<Self, PlanError> {
        let base = base_of(base_url)?;
        let list = manifest
            .pointer("/data/capabilities")
            .or_else(|| manifest.get("capabilities"))
            .and_then(Value::as_array)
            .ok_or_else(|| PlanError::catalogue(&base, "the manifest has no capabilities list"))?;
        let mut catalogue = Self {
            entries: BTreeMap::new(),
            sources: vec![base.clone()],
        };
        for item in list {
            let (Some(name), Some(endpoint)) = (text(item, "name"), text(item, "endpoint")) else {
                return Err(PlanError::catalogue(
                    &base,
                    "a capability lacks a name or an endpoint",
                ));
            };
            let entry = CatalogueEntry {
                description: text(item, "description").unwrap_or_default(),
                url: join(&base, &endpoint),
                method: text(item, "method")
                    .map_or_else(|| "POST".to_owned(), |m| m.to_uppercase()),
                idempotent: item
                    .get("idempotent")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                input_schema: item.get("input_schema").filter(|s| s.is_object()).cloned(),
                reconcile: text(item, "reconcile").map(|r| join(&base, &r)),
                base_url: base.clone(),
                name,
            };
            catalogue.insert(entry)?;
        }
        Ok(catalogue)
    }

    fn insert(&mut self, entry: CatalogueEntry) -> Result<(), PlanError> {
        if let Some(first) = self.entries.get(&entry.name) {
            return Err(PlanError::catalogue(
                &entry.base_url,
                format!(
                    "capability {:?} is also listed by {}; a plan could not tell which one it means",
                    entry.name, first.base_url
                ),
            ));
        }
        self.entries.insert(entry.name.clone(), entry);
        Ok(())
    }

    /// Adds every capability of `other`.
    ///
    /// # Errors
    /// A name both list.
    pub fn merge(&mut self, other: Catalogue) -> Result<(), PlanError> {
        self.sources.extend(other.sources);
        other.entries.into_values().try_for_each(|e| self.insert(e))
    }

    /// Reads the catalogue of the tool server at `url` (its base URL, or the
    /// full `…/api/capabilities` URL).
    ///
    /// # Errors
    /// An unreachable server, a non-2xx answer, or an unreadable manifest.
    pub async fn fetch(url: &str) -> Result<Self, PlanError> {
        let base = base_of(url)?;
        let manifest_url = format!("{base}{CAPABILITIES_PATH}");
        let client = crate::tls::client_builder()
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| PlanError::catalogue(&base, format!("no HTTP client: {e}")))?;
        let response = client
            .get(&manifest_url)
            .send()
            .await
            .map_err(|e| PlanError::catalogue(&manifest_url, format!("unreachable: {e}")))?;
        let status = response.status();
        if !status.is_success() {
            return Err(PlanError::catalogue(
                &manifest_url,
                format!("answered HTTP {}", status.as_u16()),
            ));
        }
        let manifest: Value = response
            .json()
            .await
            .map_err(|e| PlanError::catalogue(&manifest_url, format!("not JSON: {e}")))?;
        Self::from_manifest(&base, &manifest)
    }

    /// Reads and merges the catalogues at `urls`.
    ///
    /// # Errors
    /// As [`fetch`](Self::fetch) and [`merge`](Self::merge).
    pub async fn fetch_all(urls: &[String]) -> Result<Self, PlanError> {
        let mut all = Self::new();
        for url in urls {
            all.merge(Self::fetch(url).await?)?;
        }
        Ok(all)
    }

    /// The capability called `name`.
    pub fn get(&self, name: &str) -> Option<&CatalogueEntry> {
        self.entries.get(name)
    }

    /// Every capability, by name.
    pub fn entries(&self) -> impl Iterator<Item = &CatalogueEntry> {
        self.entries.values()
    }

    /// The base URLs read, in order.
    pub fn sources(&self) -> &[String] {
        &self.sources
    }

    /// Whether no capability is known.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn endpoints_and_reconcile_are_relative_to_the_base() {
        let c = Catalogue::from_manifest(
            "http://h:1/api/capabilities",
            &json!({"capabilities": [{"name": "x", "endpoint": "/api/x", "reconcile": "/api/x/{operation_id}"}]}),
        )
        .unwrap();
        let x = c.get("x").unwrap();
        assert_eq!(x.url, "http://h:1/api/x");
        assert_eq!(
            x.reconcile.as_deref(),
            Some("http://h:1/api/x/{operation_id}")
        );
        assert!(!x.idempotent, "not idempotent unless the tool says so");
        assert_eq!(x.method, "POST");
    }

    #[test]
    fn bad_manifests_and_duplicates_are_refused() {
        assert!(Catalogue::from_manifest("ftp://h", &json!({"capabilities": []})).is_err());
        assert!(Catalogue::from_manifest("http://h", &json!({"data": {}})).is_err());
        assert!(
            Catalogue::from_manifest("http://h", &json!({"capabilities": [{"name": "x"}]}))
                .is_err()
        );
        let one = json!({"capabilities": [{"name": "x", "endpoint": "/x"}]});
        let mut a = Catalogue::from_manifest("http://a", &one).unwrap();
        let err = a
            .merge(Catalogue::from_manifest("http://b", &one).unwrap())
            .unwrap_err();
        assert!(err.to_string().contains("also listed by http://a"), "{err}");
    }
}
