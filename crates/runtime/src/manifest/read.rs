//! How a manifest is read: whether an answer says what it is, the approval
//! an entry asks for, and which origin, URL and endpoint an entry names.

use std::borrow::Cow;

use recourse_core::approval::ApprovalSpec;
use serde_json::Value;
use url::Url;

/// Whether an answer of `status` says what the origin's manifest is, for
/// now: a 5xx, 408 (timeout) or 429 (too many requests) says only that it
/// cannot be read at the moment; so does a 1xx or 3xx (no redirect is
/// followed).
pub(super) fn answers_for_now(status: u16) -> bool {
    matches!(status, 200..=299 | 400..=499) && !matches!(status, 408 | 429)
}

/// The approval a manifest entry's `approval` asks for: none when it is
/// `null` or `false`; as written when it can be used; otherwise — the tool
/// asked for one, in a form recourse cannot read — one with a reason of its
/// own and the default time to decide. Never none for a malformed one.
pub(super) fn declared_approval(value: &Value) -> Option<ApprovalSpec> {
    if matches!(value, Value::Null | Value::Bool(false)) {
        return None;
    }
    let written = serde_json::from_value::<ApprovalSpec>(value.clone())
        .ok()
        .filter(|spec| spec.required().is_ok());
    Some(written.unwrap_or_else(|| {
        ApprovalSpec::new("the tool's manifest asks for a person's approval of this call")
    }))
}

/// `scheme://host:port`, the key manifests are remembered by.
pub(super) fn origin(url: &Url) -> Cow<'_, str> {
    // For http(s) without credentials, the serialised URL up to its path is
    // the origin's serialisation already (scheme, host, non-default port):
    // borrowed, where building it formats the host (asked on every call).
    let plain = url.username().is_empty() && url.password().is_none();
    if plain && matches!(url.scheme(), "http" | "https") {
        return Cow::Borrowed(&url[..url::Position::BeforePath]);
    }
    Cow::Owned(url.origin().ascii_serialization())
}

/// `path` (a manifest's `/api/…`, or an absolute URL) as an absolute URL on
/// `origin`; `None` for a URL on another origin (a manifest never points
/// recourse elsewhere) or no URL at all.
pub(super) fn on_origin(origin: &str, path: &str) -> Option<String> {
    if path.starts_with('/') && !path.starts_with("//") {
        return Some(format!("{origin}{path}"));
    }
    let rest = path.strip_prefix(origin)?;
    rest.starts_with('/').then(|| path.to_owned())
}

/// Whether a manifest endpoint (`/api/exports/{operation_id}`) names `path`:
/// the same segments, a `{placeholder}` standing for any one segment.
pub(super) fn path_matches(endpoint: &str, path: &str) -> bool {
    // Most endpoints have no placeholder: then only the same text names them.
    if !endpoint.contains('{') {
        return endpoint == path;
    }
    segments_match(endpoint, path)
}

/// [`path_matches`], segment by segment.
pub(super) fn segments_match(endpoint: &str, path: &str) -> bool {
    let (mut e, mut p) = (endpoint.split('/'), path.split('/'));
    loop {
        match (e.next(), p.next()) {
            (None, None) => return true,
            (Some(a), Some(b)) if a == b => {}
            (Some(a), Some(b)) if a.starts_with('{') && a.ends_with('}') && !b.is_empty() => {}
            _ => return false,
        }
    }
}
