//! What a failed `tools/call` becomes: the server's own answer when it gave
//! one (a JSON-RPC error, an HTTP status), else a transport failure that says
//! whether the call may have run, and whether the session is still usable.
//!
//! # Why errors are read by type
//!
//! rmcp reports many different things as a [`ServiceError`]: a JSON-RPC error
//! the server sent, an HTTP 429 or 5xx from a Streamable HTTP server (its
//! `HttpStatusError`, with the `Retry-After`), a session the server no longer
//! knows (HTTP 404: the call never ran), a response stream that closed
//! before its answer (the call may have run). Each is told apart by its type,
//! never by its text, and becomes what an HTTP tool answering the same would:
//! a 503 is resent, a bare 500 leaves a write unknown, a 404'd session is
//! replaced and the call sent again, since it did not run. A TLS handshake
//! that failed, or a login the server refused when no fresh token could be
//! had, stops the call at once: nothing took effect, and only a change of
//! configuration mends either (the sentence says which).

use recourse::transport::{Delivery, TransportFailure, TransportFailureKind};
use rmcp::service::ServiceError;
use rmcp::transport::streamable_http_client::StreamableHttpError;

use crate::access::OAuthLogin;
use crate::blocked::{Blocked, HttpError};
use crate::reply;
use crate::target::McpTarget;

/// A failed call, read.
pub(crate) struct Failed {
    /// What the executor gets.
    pub(crate) delivery: Delivery,
    /// Whether the session is unusable, so the next attempt starts another.
    pub(crate) ends_session: bool,
}

impl Failed {
    fn kept(delivery: Delivery) -> Self {
        Self {
            delivery,
            ends_session: false,
        }
    }

    fn ended(kind: TransportFailureKind, message: String) -> Self {
        Self {
            delivery: Err(TransportFailure::new(kind, message)),
            ends_session: true,
        }
    }
}

/// Reads `error`, which a `tools/call` to `target` (logged in with
/// `login`, when it is) ended with.
pub(crate) fn read(target: &McpTarget, login: Option<&OAuthLogin>, error: ServiceError) -> Failed {
    match error {
        ServiceError::McpError(error) => Failed::kept(reply::rpc_error(&error)),
        ServiceError::TransportSend(error) => match error.error.downcast_ref::<HttpError>() {
            Some(http) if let Some(blocked) = Blocked::of(http) => {
                let failure =
                    TransportFailure::new(blocked.kind(), blocked.sentence(target, login));
                Failed {
                    delivery: Err(failure),
                    // A failed handshake leaves no connection to keep; a
                    // refused login leaves the session as it was.
                    ends_session: matches!(blocked, Blocked::Tls(_)),
                }
            }
            Some(StreamableHttpError::InsufficientScope(_)) => {
                Failed::kept(reply::http_status(403, None))
            }
            // No connection was made (refused, unresolved): nothing was sent.
            Some(StreamableHttpError::Client(client)) if client.is_connect() => Failed::ended(
                TransportFailureKind::ConnectFailed,
                format!("{target}: could not connect ({client}); nothing was sent"),
            ),
            Some(StreamableHttpError::HttpStatus(status)) => Failed::kept(reply::http_status(
                status.status,
                status.retry_after.as_deref(),
            )),
            Some(StreamableHttpError::SessionExpired) => Failed::ended(
                TransportFailureKind::ConnectFailed,
                format!(
                    "{target}: the server no longer knows the MCP session (HTTP 404), so the call \
                         did not run; the next attempt starts a new session"
                ),
            ),
            Some(StreamableHttpError::ResponseBodyTooLarge { max_size }) => {
                Failed::kept(Err(TransportFailure::new(
                    TransportFailureKind::ResponseTooLarge,
                    format!("{target}: the MCP answer was over {max_size} bytes"),
                )))
            }
            _ => session_lost(target, &error),
        },
        ServiceError::TransportClosed => session_lost(target, &error),
        ServiceError::Timeout { timeout } => Failed::ended(
            TransportFailureKind::TimedOutAfterSend,
            format!("{target}: no answer within {timeout:?}"),
        ),
        other => Failed::kept(Err(TransportFailure::new(
            TransportFailureKind::FailedAfterSend,
            format!("{target}: the MCP answer could not be used: {other}"),
        ))),
    }
}

/// The session ended while the call was in flight: it may have run.
fn session_lost(target: &McpTarget, error: &dyn std::fmt::Display) -> Failed {
    Failed::ended(
        TransportFailureKind::FailedAfterSend,
        format!(
            "{target}: the MCP session ended mid-call ({error}); the next attempt starts a new one"
        ),
    )
}
