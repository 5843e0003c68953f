//! HTTP tools over https: the HTTP transport trusts the platform's roots
//! and the CA file chosen with `recourse::tls::trust_ca_file`, and a
//! handshake it cannot trust is a TLS failure named by its kind — never
//! resent, even for an idempotent call.
//!
//! The certificates are made in the test with the `openssl` command line
//! (`RECOURSE_TEST_OPENSSL`, which `.ci/run` sets to `openssl`; unset, the
//! test skips): a CA, a certificate it signs for 127.0.0.1, one for another
//! name, and one signed by another CA; the server is rustls on loopback.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use recourse::transport::TransportFailureKind;
use recourse::{Call, Executor, HttpTransport, StopReason};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn openssl(dir: &Path, args: &[&str]) {
    let program = std::env::var("RECOURSE_TEST_OPENSSL").unwrap_or_else(|_| "openssl".to_owned());
    let status = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("RECOURSE_TEST_OPENSSL: the openssl command line");
    assert!(
        status.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&status.stderr)
    );
}

/// A CA `name` (its certificate `NAME.pem`, key `NAME.key`).
fn ca(dir: &Path, name: &str) {
    openssl(
        dir,
        &[
            "ecparam",
            "-name",
            "prime256v1",
            "-genkey",
            "-noout",
            "-out",
            &format!("{name}.key"),
        ],
    );
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-new",
            "-key",
            &format!("{name}.key"),
            "-subj",
            &format!("/CN={name}"),
            "-days",
            "2",
            "-out",
            &format!("{name}.pem"),
        ],
    );
}

/// A server certificate `leaf` for `san`, signed by the CA `by`.
fn leaf(dir: &Path, leaf: &str, san: &str, by: &str) {
    std::fs::write(
        dir.join(format!("{leaf}.ext")),
        format!("subjectAltName={san}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"),
    )
    .unwrap();
    openssl(
        dir,
        &[
            "ecparam",
            "-name",
            "prime256v1",
            "-genkey",
            "-noout",
            "-out",
            &format!("{leaf}.key"),
        ],
    );
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-key",
            &format!("{leaf}.key"),
            "-subj",
            &format!("/CN={leaf}"),
            "-out",
            &format!("{leaf}.csr"),
        ],
    );
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &format!("{leaf}.csr"),
            "-CA",
            &format!("{by}.pem"),
            "-CAkey",
            &format!("{by}.key"),
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            &format!("{leaf}.ext"),
            "-out",
            &format!("{leaf}.pem"),
        ],
    );
}

/// An https server on loopback presenting `leaf`, answering every request
/// with a success envelope; its URL.
async fn serve(dir: &Path, leaf: &str) -> String {
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(dir.join(format!("{leaf}.pem")))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
    let key = PrivateKeyDer::from_pem_file(dir.join(format!("{leaf}.key"))).unwrap();
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}/api/read", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut head = Vec::new();
                let mut buffer = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut buffer).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buffer[..n]),
                    }
                }
                let body = br#"{"success":true,"data":{"read":true}}"#;
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = tls.write_all(answer.as_bytes()).await;
                let _ = tls.write_all(body).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    url
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("recourse-https-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test]
async fn https_with_a_private_ca_and_each_untrusted_certificate_named() {
    if recourse_test_support::service_var("RECOURSE_TEST_OPENSSL").is_none() {
        return;
    }
    let dir = scratch();
    ca(&dir, "ca");
    ca(&dir, "stranger");
    leaf(&dir, "local", "IP:127.0.0.1", "ca");
    leaf(&dir, "elsewhere", "DNS:elsewhere.test", "ca");
    leaf(&dir, "foreign", "IP:127.0.0.1", "stranger");
    // Once for this test binary: the roots are the process's.
    recourse::tls::trust_ca_file(&dir.join("ca.pem")).unwrap();
    assert_eq!(
        recourse::tls::trusted_ca_file(),
        Some(dir.join("ca.pem").as_path())
    );

    let executor = Executor::builder(HttpTransport::builder().build().unwrap()).build();
    let read = |url: &str| {
        Call::builder(url, json!({}))
            .idempotent(true)
            .build()
            .unwrap()
    };

    let trusted = serve(&dir, "local").await;
    let report = executor.execute(read(&trusted)).await;
    assert_eq!(report.outcome.name(), "succeeded", "{}", report.to_json());

    for (leaf, named) in [
        ("elsewhere", "(name mismatch)"),
        ("foreign", "(unknown issuer)"),
    ] {
        let url = serve(&dir, leaf).await;
        let report = executor.execute(read(&url)).await;
        assert_eq!(
            report.outcome.reason(),
            Some(&StopReason::TlsFailed),
            "{}",
            report.to_json()
        );
        assert_eq!(
            report.attempts.len(),
            1,
            "an idempotent read is not resent either"
        );
        let failure = report.attempts[0].transport_error.as_ref().unwrap();
        assert_eq!(failure.kind, TransportFailureKind::TlsFailed);
        assert!(failure.message.contains(named), "{}", failure.message);
        assert!(
            report.next().model_message.contains(named),
            "{}",
            report.next().model_message
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}
