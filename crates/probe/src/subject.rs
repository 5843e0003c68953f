//! What gets probed: the tools of an HTTP manifest, one endpoint with a
//! schema, or the tools an MCP server lists; and which of them may write.
//!
//! Only a tool that says it reads is read-only: a manifest entry whose
//! method is `GET` or `HEAD`, an MCP tool with `readOnlyHint: true`, an
//! `--endpoint` given `--read-only`. Idempotent is not read-only: a second
//! cancel of the same order changes nothing, but the first one cancels it.

use recourse::target::Url;
use recourse::transport::RawResponse;
use recourse_mcp::McpTool;
use recourse_protocol::{ToolData, parse_response, redact};
use serde::Deserialize;
use serde_json::Value;

use super::error::ProbeError;
use super::http::HttpChannel;
use super::schema::SchemaView;

/// Where a tool is reached.
#[derive(Debug, Clone)]
pub(crate) enum Address {
    /// An HTTP endpoint taking a JSON body.
    Http { method: reqwest::Method, url: Url },
    /// An MCP tool, by name.
    Mcp(String),
}

/// One tool to probe.
#[derive(Debug, Clone)]
pub(crate) struct Subject {
    pub(crate) name: String,
    pub(crate) address: Address,
    pub(crate) schema: Value,
    /// Why calling it may write, when it may: a manifest method other than
    /// `GET` or `HEAD`, an MCP tool without `readOnlyHint: true`, an
    /// `--endpoint` without `--read-only`. `None` for a read-only tool.
    pub(crate) may_write: Option<String>,
    /// Whether repeating a call is declared harmless (manifest `idempotent`,
    /// `--idempotent`, MCP `idempotentHint`, or read-only); when not, a
    /// probed tool gets the replay check.
    pub(crate) idempotent: bool,
    /// Why the battery is not sent to it, when it is not.
    pub(crate) not_probed: Option<String>,
    /// The valid payload the battery varies: `--payload`, or derived from the schema.
    pub(crate) baseline: Value,
}

impl Subject {
    fn new(
        name: String,
        address: Address,
        schema: Value,
        may_write: Option<String>,
        idempotent: bool,
    ) -> Self {
        let baseline = SchemaView::new(&schema).baseline();
        let idempotent = idempotent || may_write.is_none();
        Self {
            name,
            address,
            schema,
            may_write,
            idempotent,
            not_probed: None,
            baseline,
        }
    }

    /// Whether calling it may write.
    pub(crate) fn writes(&self) -> bool {
        self.may_write.is_some()
    }

    /// `POST http://…/api/x`, or the MCP tool name.
    pub(crate) fn endpoint(&self) -> String {
        match &self.address {
            Address::Http { method, url } => format!("{method} {}", shown(url)),
            Address::Mcp(name) => name.clone(),
        }
    }
}

/// The manifest's URL and the base its relative paths resolve against, for
/// `recourse probe URL`: `URL/api/capabilities`, or `URL` itself when it
/// already ends there.
pub(crate) fn manifest_url(base: &Url) -> Result<(Url, Url), ProbeError> {
    const PATH: &str = "api/capabilities";
    let mut dir = base.clone();
    dir.set_query(None);
    dir.set_fragment(None);
    let path = dir.path().trim_end_matches('/').to_owned();
    if let Some(parent) = path.strip_suffix(PATH) {
        dir.set_path(parent);
    } else {
        dir.set_path(&format!("{path}/"));
    }
    let manifest = dir
        .join(PATH)
        .map_err(|e| ProbeError::because("the manifest URL", &e))?;
    Ok((manifest, dir))
}

/// One manifest entry, read leniently: a missing method means POST, a
/// missing `idempotent` not idempotent.
#[derive(Debug, Deserialize)]
struct Entry {
    name: String,
    endpoint: String,
    #[serde(default = "post")]
    method: String,
    #[serde(default)]
    idempotent: bool,
    #[serde(default)]
    input_schema: Value,
}

fn post() -> String {
    "POST".to_owned()
}

/// Reads `GET /api/capabilities` at `manifest` and makes a subject of every
/// operation, resolved against `dir`.
pub(crate) async fn from_manifest(
    channel: &HttpChannel,
    manifest: &Url,
    dir: &Url,
) -> Result<Vec<Subject>, ProbeError> {
    let shown = shown(manifest);
    let raw = channel
        .get(manifest)
        .await
        .map_err(|e| ProbeError::new(format!("cannot read the manifest at {shown}: {e}")))?;
    let entries =
        entries(&raw).map_err(|e| ProbeError::new(format!("the manifest at {shown}: {e}")))?;
    Ok(entries
        .into_iter()
        .map(|entry| from_entry(entry, dir))
        .collect())
}

fn entries(raw: &RawResponse) -> Result<Vec<Entry>, String> {
    let parsed = parse_response(
        raw.status,
        raw.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        &raw.body,
    );
    if !parsed.success {
        return Err(format!("answered HTTP {}, not a manifest", raw.status));
    }
    let list = match parsed.data.map(ToolData::into_value) {
        Some(Value::Object(mut body)) => body.remove("capabilities"),
        Some(list @ Value::Array(_)) => Some(list),
        _ => None,
    };
    let Some(list) = list else {
        return Err("has no `capabilities` list".to_owned());
    };
    serde_json::from_value(list).map_err(|e| {
        format!("is not a list of {{name, endpoint, method, idempotent, input_schema}}: {e}")
    })
}

fn from_entry(entry: Entry, dir: &Url) -> Subject {
    let may_write = may_write(&entry);
    let method = reqwest::Method::from_bytes(entry.method.to_ascii_uppercase().as_bytes());
    let url = dir.join(&entry.endpoint);
    let (address, not_probed) = match (method, url) {
        (Ok(method), Ok(url)) if same_origin(&url, dir) => {
            let takes_body = ["POST", "PUT", "PATCH"].contains(&method.as_str());
            let why = (!takes_body).then(|| {
                format!("{method}: the battery sends request bodies, so only POST, PUT and PATCH are probed")
            });
            (Address::Http { method, url }, why)
        }
        (Ok(method), Ok(url)) => (
            Address::Http { method, url },
            Some("its endpoint is on another origin than the manifest: never probed".to_owned()),
        ),
        _ => (
            Address::Mcp(entry.endpoint.clone()),
            Some(format!(
                "method {:?} or endpoint {:?} is not usable",
                entry.method, entry.endpoint
            )),
        ),
    };
    let mut subject = Subject::new(
        entry.name,
        address,
        entry.input_schema,
        may_write,
        entry.idempotent,
    );
    subject.not_probed = not_probed;
    subject
}

/// Why an entry may write: every method but `GET` and `HEAD` may, whatever
/// `idempotent` says (a repeat that changes nothing still follows a first
/// call that did).
fn may_write(entry: &Entry) -> Option<String> {
    let method = entry.method.trim().to_ascii_uppercase();
    if method == "GET" || method == "HEAD" {
        return None;
    }
    Some(if entry.idempotent {
        format!("{method}, declared idempotent, which is not read-only")
    } else {
        format!("{method}, not declared idempotent")
    })
}

/// A URL for display: its query's credentials redacted.
pub(crate) fn shown(url: &Url) -> String {
    redact(url.as_str())
}

fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host() == b.host()
        && a.port_or_known_default() == b.port_or_known_default()
}

/// What is claimed of an endpoint probed on its own (`--read-only`,
/// `--idempotent`): by default, a write that is not idempotent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EndpointClaims {
    /// It only reads: probed even when writes are not allowed.
    pub read_only: bool,
    /// A repeat is harmless: no replay check. Still a write.
    pub idempotent: bool,
}

/// `--endpoint URL --schema FILE`: one subject, POSTed, a write unless
/// `--read-only`.
pub(crate) fn from_endpoint(url: Url, schema: Value, claims: EndpointClaims) -> Subject {
    let name = url.path().to_owned();
    let may_write = (!claims.read_only).then(|| {
        if claims.idempotent {
            "a POST, --idempotent, which is not --read-only".to_owned()
        } else {
            "a POST, not --read-only".to_owned()
        }
    });
    Subject::new(
        name,
        Address::Http {
            method: reqwest::Method::POST,
            url,
        },
        schema,
        may_write,
        claims.idempotent,
    )
}

/// The tools an MCP server listed: a tool may write unless it says
/// `readOnlyHint: true` (`idempotentHint` is not read-only), and is
/// idempotent only when it says so (or is read-only).
pub(crate) fn from_mcp(tools: Vec<McpTool>) -> Vec<Subject> {
    tools
        .into_iter()
        .map(|tool| {
            let may_write =
                (tool.read_only_hint != Some(true)).then(|| "no readOnlyHint: true".to_owned());
            Subject::new(
                tool.name.clone(),
                Address::Mcp(tool.name),
                tool.input_schema,
                may_write,
                tool.idempotent_hint == Some(true),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn the_manifest_sits_under_the_given_url() {
        let (m, dir) = manifest_url(&url("http://127.0.0.1:8700")).unwrap();
        assert_eq!(
            (m.as_str(), dir.as_str()),
            (
                "http://127.0.0.1:8700/api/capabilities",
                "http://127.0.0.1:8700/"
            )
        );
        let (m, dir) = manifest_url(&url("http://h/tools?x=1")).unwrap();
        assert_eq!(
            (m.as_str(), dir.as_str()),
            ("http://h/tools/api/capabilities", "http://h/tools/")
        );
        let (m, dir) = manifest_url(&url("http://h/t/api/capabilities/")).unwrap();
        assert_eq!(
            (m.as_str(), dir.as_str()),
            ("http://h/t/api/capabilities", "http://h/t/")
        );
    }

    #[test]
    fn entries_become_subjects_and_other_origins_are_never_probed() {
        let dir = url("http://127.0.0.1:8700/");
        let entry = |endpoint: &str, method: &str, idempotent| Entry {
            name: "t".into(),
            endpoint: endpoint.into(),
            method: method.into(),
            idempotent,
            input_schema: serde_json::json!({"type": "object", "required": ["q"], "properties": {"q": {"type": "string"}}}),
        };
        let s = from_entry(entry("/api/x", "post", true), &dir);
        assert!(s.not_probed.is_none() && s.idempotent);
        assert_eq!(s.endpoint(), "POST http://127.0.0.1:8700/api/x");
        assert_eq!(s.baseline, serde_json::json!({"q": "probe"}));
        for elsewhere in [
            "http://example.com/api/x",
            "//example.com/x",
            "http://127.0.0.1:8701/x",
        ] {
            let s = from_entry(entry(elsewhere, "POST", true), &dir);
            assert!(
                s.not_probed.unwrap().contains("another origin"),
                "{elsewhere}"
            );
        }
        assert!(
            from_entry(entry("/api/x", "GET", true), &dir)
                .not_probed
                .is_some()
        );
        assert!(
            from_entry(entry("/api/x", "NOT A METHOD", true), &dir)
                .not_probed
                .is_some()
        );
    }

    #[test]
    fn only_get_and_head_entries_are_read_only_and_idempotent_is_not() {
        let dir = url("http://127.0.0.1:8700/");
        let entry = |method: &str, idempotent| Entry {
            name: "t".into(),
            endpoint: "/api/x".into(),
            method: method.into(),
            idempotent,
            input_schema: serde_json::json!({}),
        };
        for (method, idempotent) in [
            ("POST", true),
            ("post", false),
            ("DELETE", true),
            ("PUT", true),
        ] {
            let s = from_entry(entry(method, idempotent), &dir);
            let why = s.may_write.unwrap_or_default();
            assert!(
                why.starts_with(&method.to_ascii_uppercase()),
                "{method}: {why}"
            );
            assert_eq!(why.contains("not read-only"), idempotent, "{why}");
            assert_eq!(s.idempotent, idempotent);
        }
        for method in ["GET", "head"] {
            let s = from_entry(entry(method, false), &dir);
            assert!(!s.writes() && s.idempotent, "{method}");
        }
        let endpoint = |read_only, idempotent| {
            from_endpoint(
                dir.clone(),
                serde_json::json!({}),
                EndpointClaims {
                    read_only,
                    idempotent,
                },
            )
        };
        assert!(endpoint(false, true).writes() && endpoint(false, true).idempotent);
        assert!(endpoint(false, false).writes() && !endpoint(false, false).idempotent);
        assert!(!endpoint(true, false).writes() && endpoint(true, false).idempotent);
    }

    #[test]
    fn manifests_are_read_enveloped_or_bare() {
        let raw = |status, body: &str| RawResponse {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.as_bytes().to_vec(),
            read: None,
        };
        let one = r#"{"name":"a","endpoint":"/a"}"#;
        assert_eq!(
            entries(&raw(
                200,
                &format!(r#"{{"success":true,"data":{{"capabilities":[{one}]}}}}"#)
            ))
            .unwrap()
            .len(),
            1
        );
        assert_eq!(entries(&raw(200, &format!("[{one}]"))).unwrap().len(), 1);
        assert!(!entries(&raw(200, &format!("[{one}]"))).unwrap()[0].idempotent);
        assert!(entries(&raw(404, "not found")).is_err());
        assert!(entries(&raw(200, r#"{"tools":[]}"#)).is_err());
        assert!(entries(&raw(200, r#"[{"name":1}]"#)).is_err());
    }
}
