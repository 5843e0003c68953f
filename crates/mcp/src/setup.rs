//! [`SetupFailure`]: a session that could not start, and what kind of
//! transport failure that is for a call waiting on it.
//!
//! # Why a kind beside the error
//!
//! A call whose session cannot start has sent nothing, and most such
//! failures pass with time (a process slow to start, a server restarting):
//! the executor may try again. Two never do: a TLS handshake the server's
//! certificate fails, and a login the server refuses. Those are told apart
//! here, by the failure's type, so the call stops at once — for
//! configuration — instead of spending its retries on them.

use recourse::transport::{TransportFailure, TransportFailureKind};
use recourse_protocol::mcp::McpError;

/// A session that could not be started.
#[derive(Debug)]
pub(crate) struct SetupFailure {
    /// What the caller of the setup is told.
    pub(crate) error: McpError,
    /// What a call waiting on the setup fails with.
    pub(crate) kind: TransportFailureKind,
}

impl SetupFailure {
    /// A failure that may pass with time: the server could not be started or reached.
    pub(crate) fn unreachable(error: McpError) -> Self {
        Self {
            error,
            kind: TransportFailureKind::ConnectFailed,
        }
    }

    /// A failure only a change of configuration mends, of `kind`
    /// ([`TransportFailureKind::TlsFailed`] or [`TransportFailureKind::AuthRequired`]).
    pub(crate) fn configuration(kind: TransportFailureKind, message: String) -> Self {
        Self {
            error: McpError::config(message),
            kind,
        }
    }

    /// The failure of a call that waited on this setup.
    pub(crate) fn for_call(&self) -> TransportFailure {
        TransportFailure::new(self.kind, self.error.to_string())
    }
}

impl From<SetupFailure> for McpError {
    fn from(failure: SetupFailure) -> Self {
        failure.error
    }
}
