//! TLS for every HTTPS connection recourse makes: which certificate
//! authorities it trusts ([`trust_ca_file`], [`client_builder`]), and what a
//! failed handshake was ([`TlsProblem`]).
//!
//! ```no_run
//! use recourse::tls;
//!
//! # fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! // Once, at start, before any client is built: the platform's roots and a private CA.
//! tls::trust_ca_file(std::path::Path::new("/etc/company/ca.pem"))?;
//! let client = tls::client_builder().build()?;
//! # Ok(()) }
//! ```
//!
//! # Why one set of roots for the process
//!
//! An HTTPS server recourse talks to is reached through many clients: the
//! HTTP transport of a call, a lookup settling a write, a tool's manifest,
//! an MCP server's session, its OAuth endpoints. Each built its own
//! `reqwest` client, and a private CA given to one would leave the others
//! refusing the same server. So the roots are the process's: the
//! platform's (the operating system's store, as `rustls-platform-verifier`
//! reads it), plus the certificates of one PEM file, chosen once at start
//! ([`trust_ca_file`]: the CLI's `--ca-file` and `RECOURSE_CA_FILE`), and every
//! client recourse builds starts from [`client_builder`].
//!
//! # Why a TLS failure is a stop, never a resend
//!
//! A certificate from an issuer nobody trusts, one that expired, one for
//! another name: none passes with time, and nothing was sent — the
//! handshake comes before the request. A failure is read by its type (the
//! `rustls` error inside the HTTP client's), named ([`TlsProblem`]), and
//! reported as [`TransportFailureKind::TlsFailed`](recourse_core::transport::TransportFailureKind::TlsFailed),
//! which the policy stops on at once, whatever the call's idempotency.

mod problem;
mod roots;

pub use problem::TlsProblem;
pub use roots::{CaFileError, client_builder, trust_ca_file, trusted_ca_file};
