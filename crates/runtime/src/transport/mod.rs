//! Transports: how an attempt reaches a tool.
//!
//! A transport sends one request and reports what came back — a response, or a
//! [`TransportFailure`] as data. The distinction that matters most is *when*
//! it failed: a connection refused before anything was sent is always safe to
//! retry, while a timeout after the request left may mean the write happened.

mod http;
mod in_process;
mod plain_http;
mod pool;
mod wire;

pub use http::{DEFAULT_MAX_BODY_BYTES, HttpTransport, HttpTransportBuilder};
pub use in_process::InProcessTransport;
pub use recourse_core::transport::{
    BoxFuture, Delivery, RawResponse, Request, Transport, TransportFailure, TransportFailureKind,
};

/// `headers` as [`RawResponse::headers`] keeps them: those whose values are text.
pub(crate) fn text_headers(headers: &::http::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect()
}
