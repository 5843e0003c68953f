//! [`TlsProblem`]: what a failed TLS handshake was, read from the `rustls`
//! error an HTTP client's error carries.

use std::error::Error;
use std::fmt;

use rustls::CertificateError;

use recourse_core::transport::{TransportFailure, TransportFailureKind};

/// Why a TLS handshake failed, by the error's type.
///
/// ```
/// use recourse::tls::TlsProblem;
///
/// let io = std::io::Error::new(
///     std::io::ErrorKind::InvalidData,
///     rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
/// );
/// assert_eq!(TlsProblem::of(&io), Some(TlsProblem::UnknownIssuer));
/// assert_eq!(TlsProblem::of(&std::io::Error::other("refused")), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TlsProblem {
    /// The server's certificate chains to no certificate authority this
    /// process trusts (a private CA not given, a self-signed certificate).
    UnknownIssuer,
    /// The server's certificate has expired, or is not valid yet.
    Expired,
    /// The server's certificate is for another name than the one connected to.
    NameMismatch,
    /// The handshake failed otherwise: the server does not speak TLS, no
    /// common protocol version or cipher, a certificate that is malformed,
    /// revoked or not for a server.
    Handshake,
}

impl TlsProblem {
    /// The problem a TLS failure somewhere in `error`'s chain of sources
    /// names, `None` when there is none (a refused connection, a timeout).
    ///
    /// The chain is walked by type: each source, and the error an
    /// [`std::io::Error`] wraps (which `source()` skips), is looked at for a
    /// [`rustls::Error`].
    pub fn of(error: &(dyn Error + 'static)) -> Option<Self> {
        let mut next = Some(error);
        // A chain is short; the bound only keeps a cyclic one finite.
        for _ in 0..32 {
            let current = next?;
            if let Some(tls) = tls_error(current) {
                return Some(Self::of_rustls(tls));
            }
            next = current.source();
        }
        None
    }

    /// The problem `error` is.
    pub fn of_rustls(error: &rustls::Error) -> Self {
        match error {
            rustls::Error::InvalidCertificate(certificate) => match certificate {
                CertificateError::UnknownIssuer => Self::UnknownIssuer,
                CertificateError::Expired
                | CertificateError::ExpiredContext { .. }
                | CertificateError::NotValidYet
                | CertificateError::NotValidYetContext { .. } => Self::Expired,
                CertificateError::NotValidForName
                | CertificateError::NotValidForNameContext { .. } => Self::NameMismatch,
                _ => Self::Handshake,
            },
            _ => Self::Handshake,
        }
    }

    /// A stable snake-case name: `unknown_issuer`, `expired`, `name_mismatch`, `handshake`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnknownIssuer => "unknown_issuer",
            Self::Expired => "expired",
            Self::NameMismatch => "name_mismatch",
            Self::Handshake => "handshake",
        }
    }

    /// The transport failure of a handshake with `place` (`host:port`)
    /// that failed this way, saying what to check: nothing was sent.
    ///
    /// ```
    /// use recourse::tls::TlsProblem;
    /// use recourse::transport::TransportFailureKind;
    ///
    /// let failure = TlsProblem::UnknownIssuer.failure("mcp.example:443");
    /// assert_eq!(failure.kind, TransportFailureKind::TlsFailed);
    /// assert!(failure.message.contains("unknown issuer") && failure.message.contains("--ca-file"));
    /// ```
    pub fn failure(self, place: &str) -> TransportFailure {
        TransportFailure::new(
            TransportFailureKind::TlsFailed,
            format!("TLS with {place} failed: {self}; nothing was sent"),
        )
    }
}

/// What went wrong, and what to check.
impl fmt::Display for TlsProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::UnknownIssuer => {
                "its certificate is signed by no authority this machine trusts (unknown issuer): \
                 give the CA that signed it with --ca-file PEM (or RECOURSE_CA_FILE)"
            }
            Self::Expired => {
                "its certificate has expired or is not valid yet (expired): the server's \
                 certificate needs renewing, or this machine's clock is wrong"
            }
            Self::NameMismatch => {
                "its certificate is for another name (name mismatch): use the name the \
                 certificate was issued for"
            }
            Self::Handshake => {
                "the TLS handshake failed (handshake): is it an https server, and does it \
                 accept TLS 1.2 or 1.3?"
            }
        })
    }
}

/// The `rustls` error `error` is, or wraps as an I/O error.
fn tls_error<'a>(error: &'a (dyn Error + 'static)) -> Option<&'a rustls::Error> {
    if let Some(tls) = error.downcast_ref::<rustls::Error>() {
        return Some(tls);
    }
    let inner = error.downcast_ref::<std::io::Error>()?.get_ref()?;
    tls_error(inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that wraps another only as its source, as HTTP clients do.
    #[derive(Debug)]
    struct Wrapped(Box<dyn Error + Send + Sync>);

    impl fmt::Display for Wrapped {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("error sending request")
        }
    }

    impl Error for Wrapped {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(self.0.as_ref())
        }
    }

    fn wrapped(tls: rustls::Error) -> Wrapped {
        let io = std::io::Error::new(std::io::ErrorKind::InvalidData, tls);
        Wrapped(Box::new(Wrapped(Box::new(io))))
    }

    #[test]
    fn each_certificate_problem_is_named_through_the_chain() {
        let cases = [
            (CertificateError::UnknownIssuer, TlsProblem::UnknownIssuer),
            (CertificateError::Expired, TlsProblem::Expired),
            (CertificateError::NotValidYet, TlsProblem::Expired),
            (CertificateError::NotValidForName, TlsProblem::NameMismatch),
            (CertificateError::BadSignature, TlsProblem::Handshake),
            (CertificateError::Revoked, TlsProblem::Handshake),
        ];
        for (certificate, problem) in cases {
            let error = wrapped(rustls::Error::InvalidCertificate(certificate));
            assert_eq!(TlsProblem::of(&error), Some(problem));
        }
        let handshake = wrapped(rustls::Error::PeerIncompatible(
            rustls::PeerIncompatible::ServerDoesNotSupportTls12Or13,
        ));
        assert_eq!(TlsProblem::of(&handshake), Some(TlsProblem::Handshake));
    }

    #[test]
    fn a_failure_without_tls_in_it_is_no_tls_problem() {
        let refused = Wrapped(Box::new(std::io::Error::from(
            std::io::ErrorKind::ConnectionRefused,
        )));
        assert_eq!(TlsProblem::of(&refused), None);
        let text = Wrapped(Box::new(std::io::Error::other(
            "certificate unknown issuer",
        )));
        assert_eq!(TlsProblem::of(&text), None, "read by type, never by text");
    }

    #[test]
    fn every_problem_says_what_to_check_and_stops() {
        for problem in [
            TlsProblem::UnknownIssuer,
            TlsProblem::Expired,
            TlsProblem::NameMismatch,
            TlsProblem::Handshake,
        ] {
            let failure = problem.failure("h:443");
            assert_eq!(failure.kind, TransportFailureKind::TlsFailed);
            let named = problem.as_str().replace('_', " ");
            assert!(
                failure.message.contains(&format!("({named})")),
                "{}",
                failure.message
            );
            assert!(!failure.kind.is_transient() && !failure.kind.was_sent());
        }
    }
}
