//! Transports: how an attempt reaches a tool.
//!
//! A transport sends one request and reports what came back — a response, or a
//! [`TransportFailure`] as data. The distinction that matters most is *when*
//! it failed: a connection refused before anything was sent is always safe to
//! retry, while a timeout after the request left may mean the write happened.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use recourse_protocol::ParsedResponse;
use serde::{Deserialize, Serialize};
use strum::{EnumIter, EnumString, IntoStaticStr, VariantNames};

use crate::method::Method;
use crate::target::Target;

/// A boxed, sendable future, as transports and other extension traits return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One request to a tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Where to send it: a parsed URL for HTTP, a tool name for others.
    pub target: Target,
    /// The HTTP method (HTTP transports; others ignore it).
    pub method: Method,
    /// Extra headers, checked when the call was built. For non-idempotent
    /// calls the executor adds the idempotency key under the configured
    /// header name (`Idempotency-Key`).
    pub headers: Vec<(String, String)>,
    /// The idempotency key, for non-idempotent calls (also in `headers`, for
    /// HTTP; other transports carry it their own way).
    pub idempotency_key: Option<String>,
    /// The JSON payload.
    pub payload: serde_json::Value,
    /// How long the whole exchange may take.
    pub timeout: Duration,
}

/// A tool's raw answer.
#[derive(Debug, Clone, PartialEq)]
pub struct RawResponse {
    /// HTTP status.
    pub status: u16,
    /// Response headers whose values are valid text.
    pub headers: Vec<(String, String)>,
    /// The body, at most the transport's cap.
    pub body: Vec<u8>,
    /// The answer already read, by a transport that holds it typed (an MCP
    /// result) rather than as bytes: the executor takes it instead of
    /// parsing the body, which is then empty. Boxed: most answers have none.
    pub read: Option<Box<ParsedResponse>>,
}

impl RawResponse {
    /// An answer of `status` with `headers` and `body`, to be parsed.
    pub fn new(status: u16, headers: Vec<(String, String)>, body: Vec<u8>) -> Self {
        Self {
            status,
            headers,
            body,
            read: None,
        }
    }

    /// An answer already read (its body left empty).
    pub fn read(parsed: ParsedResponse) -> Self {
        Self {
            status: parsed.status,
            headers: Vec::new(),
            body: Vec::new(),
            read: Some(Box::new(parsed)),
        }
    }
}

/// When and how a transport failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, EnumString, EnumIter, VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum TransportFailureKind {
    /// The connection could not be made: nothing was sent.
    ConnectFailed,
    /// The request was sent (or may have been), then the exchange timed out.
    TimedOutAfterSend,
    /// The request was sent (or may have been), then the connection failed.
    FailedAfterSend,
    /// The tool answered with a body larger than the cap (its status, when
    /// known, is [`TransportFailure::status`]).
    ResponseTooLarge,
    /// The request could not be built (a URL or header the HTTP stack
    /// refused): nothing was sent.
    RequestNotBuilt,
    /// The TLS handshake failed — the server's certificate is from an
    /// issuer this process does not trust, expired, or for another name, or
    /// the handshake itself broke down: nothing was sent, and sending again
    /// changes nothing until the configuration does.
    TlsFailed,
    /// The server refused the credentials (HTTP 401) and no fresh ones
    /// could be had (a login that expired or was revoked): refused before
    /// any effect, and refused again until someone logs in.
    AuthRequired,
}

impl TransportFailureKind {
    /// Whether a write may have committed without us learning its result.
    pub fn may_have_committed(self) -> bool {
        matches!(self, Self::TimedOutAfterSend | Self::FailedAfterSend)
    }

    /// Whether resending after this failure can help (and, for idempotent
    /// calls, is harmless): connect failures, timeouts and broken connections
    /// — never a TLS failure or a refused login, which only a change of
    /// configuration mends.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            Self::ConnectFailed | Self::TimedOutAfterSend | Self::FailedAfterSend
        )
    }

    /// Whether the request was (or may have been) sent: false when the
    /// connection never opened, its TLS handshake failed, or the request
    /// could not be built.
    pub fn was_sent(self) -> bool {
        !matches!(
            self,
            Self::ConnectFailed | Self::RequestNotBuilt | Self::TlsFailed
        )
    }

    /// Whether the failure's message says what to fix in the setup (which
    /// CA to trust, which login to renew): recourse's own words, shown to
    /// whoever reads the call's message.
    pub fn names_a_fix(self) -> bool {
        matches!(self, Self::TlsFailed | Self::AuthRequired)
    }

    /// The snake-case name used in reports.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A transport failure, as data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportFailure {
    /// When and how it failed.
    pub kind: TransportFailureKind,
    /// A human-readable description, redacted as it is made
    /// ([`TransportFailure::new`]): a URL's `user:pass@` or a secret query
    /// parameter in an HTTP client's error never reaches a record, a log
    /// line or a model.
    pub message: String,
    /// The status the tool answered with before the exchange failed, when
    /// it answered: a body over the cap came with one. A 2xx there means the
    /// tool acted, so a write's outcome is unknown, not failed.
    pub status: Option<u16>,
}

impl TransportFailure {
    /// A failure of `kind`, its message redacted ([`recourse_protocol::redact`]).
    ///
    /// ```
    /// use recourse_core::transport::{TransportFailure, TransportFailureKind};
    ///
    /// let failure = TransportFailure::new(
    ///     TransportFailureKind::FailedAfterSend,
    ///     "error sending request for url (http://ops:hunter2@10.0.0.7/x?api_key=0123456789abcdef)",
    /// );
    /// assert!(!failure.message.contains("hunter2"));
    /// assert!(!failure.message.contains("0123456789abcdef"));
    /// ```
    pub fn new(kind: TransportFailureKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: recourse_protocol::redact(&message.into()),
            status: None,
        }
    }

    /// The same failure, after the tool answered with `status`.
    #[must_use]
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }
}

impl fmt::Display for TransportFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.as_str(), self.message)
    }
}

/// What one dispatch produced.
pub type Delivery = Result<RawResponse, TransportFailure>;

/// Sends requests to tools.
pub trait Transport: Send + Sync {
    /// Sends `request` and reports what came back. Never panics; failures are data.
    fn send<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Delivery>;

    /// Whether `send` itself ends every exchange within `request.timeout`
    /// (reporting [`TransportFailureKind::TimedOutAfterSend`]). When it does
    /// not — the default — the executor adds a guard timer of its own.
    fn enforces_timeout(&self) -> bool {
        false
    }
}
