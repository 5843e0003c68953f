//! What both HTTP clients share on the wire — reqwest's (`http`) and the
//! plain-HTTP one on hyper (`plain_http`, `pool`): the method, a body read within
//! its cap, and a failure said the same way whichever client met it.

use recourse_core::transport::{TransportFailure, TransportFailureKind};

pub(super) fn method(m: recourse_core::method::Method) -> reqwest::Method {
    match m {
        recourse_core::method::Method::Get => reqwest::Method::GET,
        recourse_core::method::Method::Head => reqwest::Method::HEAD,
        recourse_core::method::Method::Options => reqwest::Method::OPTIONS,
        recourse_core::method::Method::Put => reqwest::Method::PUT,
        recourse_core::method::Method::Delete => reqwest::Method::DELETE,
        recourse_core::method::Method::Patch => reqwest::Method::PATCH,
        recourse_core::method::Method::Post => reqwest::Method::POST,
    }
}

/// Appends `chunk` to the answer's `body`, or fails once it would pass `cap`.
pub(super) fn push_capped(
    body: &mut Vec<u8>,
    chunk: &[u8],
    cap: usize,
    status: u16,
) -> Result<(), TransportFailure> {
    if body.len() + chunk.len() > cap {
        return Err(too_large(cap, status));
    }
    body.extend_from_slice(chunk);
    Ok(())
}

/// The tool answered `status` with a body over `cap`: the status is kept,
/// since a 2xx means a write was done even though its result cannot be read.
pub(super) fn too_large(cap: usize, status: u16) -> TransportFailure {
    TransportFailure::new(
        TransportFailureKind::ResponseTooLarge,
        format!("HTTP {status} with a response body over {cap} bytes"),
    )
    .with_status(status)
}

/// `host:port` of `url`, as failures name where they went.
pub(super) fn place(url: &url::Url) -> String {
    url.host_str().zip(url.port_or_known_default()).map_or_else(
        || "the tool".to_owned(),
        |(host, port)| format!("{host}:{port}"),
    )
}

/// A failure once the request was (or may have been) sent.
pub(super) fn after_send(error: &dyn std::error::Error) -> TransportFailure {
    TransportFailure::new(TransportFailureKind::FailedAfterSend, error_chain(error))
}

/// "could not connect to `place` — is the tool server running? (`innermost cause`)".
pub(super) fn not_running_at(place: &str, error: &dyn std::error::Error) -> String {
    let mut cause: &dyn std::error::Error = error;
    while let Some(source) = cause.source() {
        cause = source;
    }
    format!("could not connect to {place} — is the tool server running? ({cause})")
}

pub(super) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
