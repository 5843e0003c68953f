//! The certificate authorities every HTTPS client of this process trusts:
//! the platform's, plus one PEM file's ([`trust_ca_file`]).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The largest CA file read: a bundle of a few hundred certificates fits.
const MAX_CA_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The CA file trusted besides the platform's roots, once chosen.
static TRUSTED: OnceLock<Trusted> = OnceLock::new();

struct Trusted {
    path: PathBuf,
    certificates: Vec<reqwest::Certificate>,
}

/// Trusts the certificates in the PEM file at `path` (one CA, or a bundle)
/// besides the platform's roots, in every client [`client_builder`] gives
/// from now on: call it once, at start, before any client is built.
///
/// # Errors
/// A file that cannot be read, is larger than 4 MiB, holds no PEM
/// certificate or one that cannot be used; or another file was chosen
/// before (the same file again is fine).
///
/// ```
/// let missing = std::path::Path::new("/nonexistent/ca.pem");
/// let error = recourse::tls::trust_ca_file(missing).unwrap_err();
/// assert!(error.to_string().contains("/nonexistent/ca.pem"));
/// ```
pub fn trust_ca_file(path: &Path) -> Result<(), CaFileError> {
    if let Some(trusted) = TRUSTED.get() {
        return if trusted.path == path {
            Ok(())
        } else {
            Err(CaFileError::new(
                path,
                format!(
                    "another CA file ({}) is trusted already",
                    trusted.path.display()
                ),
            ))
        };
    }
    let certificates = read(path)?;
    let _ = TRUSTED.set(Trusted {
        path: path.to_owned(),
        certificates,
    });
    // Two threads racing to choose different files: one won, the other is told.
    match TRUSTED.get() {
        Some(trusted) if trusted.path != path => Err(CaFileError::new(
            path,
            format!(
                "another CA file ({}) is trusted already",
                trusted.path.display()
            ),
        )),
        _ => Ok(()),
    }
}

/// The CA file trusted besides the platform's roots, if one was chosen.
pub fn trusted_ca_file() -> Option<&'static Path> {
    TRUSTED.get().map(|t| t.path.as_path())
}

/// A `reqwest` client builder that trusts the platform's roots and the CA
/// file chosen with [`trust_ca_file`]: what every HTTPS client of recourse
/// starts from.
///
/// It honours the environment's proxies (`HTTPS_PROXY`, `HTTP_PROXY`,
/// `ALL_PROXY`, `NO_PROXY`), but never for a loopback host: a call, a
/// lookup or a manifest meant for this machine — a bearer token with it —
/// is never handed to a proxy, as Go's HTTP client does.
pub fn client_builder() -> reqwest::ClientBuilder {
    let builder = with_proxies(reqwest::Client::builder());
    match TRUSTED.get() {
        Some(trusted) => builder.tls_certs_merge(trusted.certificates.iter().cloned()),
        None => builder,
    }
}

/// How a proxy URL becomes a proxy for one scheme.
type ProxyFor = fn(&str) -> reqwest::Result<reqwest::Proxy>;

/// Hosts no proxy is ever asked for: this machine.
const LOOPBACK: &str = "localhost,127.0.0.0/8,::1";

/// `builder` with the environment's proxies, loopback hosts left out of
/// each (adding one turns reqwest's own reading of the environment off).
fn with_proxies(mut builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
    let var = |names: [&str; 2]| {
        names
            .into_iter()
            .find_map(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
    };
    let no_proxy = match var(["NO_PROXY", "no_proxy"]) {
        Some(listed) => format!("{listed},{LOOPBACK}"),
        None => LOOPBACK.to_owned(),
    };
    let schemes: [(&str, [&str; 2], ProxyFor); 3] = [
        ("https", ["HTTPS_PROXY", "https_proxy"], |u| {
            reqwest::Proxy::https(u)
        }),
        ("http", ["HTTP_PROXY", "http_proxy"], |u| {
            reqwest::Proxy::http(u)
        }),
        ("all", ["ALL_PROXY", "all_proxy"], |u| {
            reqwest::Proxy::all(u)
        }),
    ];
    for (scheme, names, proxy) in schemes {
        let Some(url) = var(names) else { continue };
        match proxy(&url) {
            Ok(proxy) => {
                builder = builder.proxy(proxy.no_proxy(reqwest::NoProxy::from_string(&no_proxy)));
            }
            Err(e) => {
                tracing::warn!(scheme, error = %e, "the environment's proxy is not a URL; not used")
            }
        }
    }
    builder
}

/// The certificates of the PEM file at `path`, checked usable.
fn read(path: &Path) -> Result<Vec<reqwest::Certificate>, CaFileError> {
    use std::io::Read;
    let unreadable = |e: std::io::Error| CaFileError::new(path, format!("cannot be read: {e}"));
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .map_err(unreadable)?
        .take(MAX_CA_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > MAX_CA_FILE_BYTES {
        return Err(CaFileError::new(
            path,
            format!("is larger than {} MiB", MAX_CA_FILE_BYTES / (1024 * 1024)),
        ));
    }
    let certificates = reqwest::Certificate::from_pem_bundle(&bytes)
        .map_err(|e| CaFileError::new(path, format!("is not PEM: {e}")))?;
    if certificates.is_empty() {
        return Err(CaFileError::new(
            path,
            "holds no certificate (-----BEGIN CERTIFICATE-----)",
        ));
    }
    // The roots are read into the verifier when a client is built: a
    // certificate it cannot use fails here, named, rather than at the first call.
    reqwest::Client::builder()
        .tls_certs_merge(certificates.iter().cloned())
        .build()
        .map_err(|e| {
            let mut error = CaFileError::new(path, "holds a certificate that cannot be trusted");
            error.source = Some(Box::new(e));
            error
        })?;
    Ok(certificates)
}

/// A CA file that cannot be trusted, and why (the TLS stack's own reason,
/// when it gave one, as the source).
#[derive(Debug)]
pub struct CaFileError {
    path: PathBuf,
    why: String,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl CaFileError {
    fn new(path: &Path, why: impl Into<String>) -> Self {
        Self {
            path: path.to_owned(),
            why: why.into(),
            source: None,
        }
    }
}

impl fmt::Display for CaFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the CA file {}: {}", self.path.display(), self.why)
    }
}

impl std::error::Error for CaFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file holding `text`, removed when dropped.
    struct Pem(PathBuf);

    impl Pem {
        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Pem {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn file(text: &str) -> Pem {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("recourse-ca-{}-{n}.pem", std::process::id()));
        std::fs::write(&path, text).unwrap();
        Pem(path)
    }

    #[test]
    fn a_file_without_a_usable_certificate_is_refused_naming_it() {
        for (text, why) in [
            ("", "holds no certificate"),
            ("just words\n", "holds no certificate"),
            (
                "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n",
                "cannot be trusted",
            ),
        ] {
            let f = file(text);
            let error = read(f.path()).unwrap_err().to_string();
            assert!(
                error.contains(&f.path().display().to_string()) && error.contains(why),
                "{text:?}: {error}"
            );
        }
        let error = read(Path::new("/nonexistent/ca.pem")).unwrap_err();
        assert!(error.to_string().contains("cannot be read"), "{error}");
    }
}
