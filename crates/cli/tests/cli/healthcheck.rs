//! `recourse healthcheck` asks the URL itself: a proxy the environment names
//! is never asked in its place (one that answers for a dead gateway would
//! make it look healthy). Its second, resolver included, is tested in
//! `src/healthcheck.rs` with a resolver that never answers.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A server that answers 200 to whatever it is sent; how many it answered.
fn answers_200() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let asked = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&asked);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            counted.fetch_add(1, Ordering::SeqCst);
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
        }
    });
    (url, asked)
}

/// A loopback URL nothing listens on.
fn closed_url() -> String {
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://{}/readyz", closed.local_addr().unwrap())
}

fn healthcheck(url: &str, proxy: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_recourse"))
        .args(["healthcheck", url])
        .env_clear()
        .envs(
            [
                "HTTP_PROXY",
                "http_proxy",
                "HTTPS_PROXY",
                "ALL_PROXY",
                "all_proxy",
            ]
            .map(|name| (name, proxy)),
        )
        .output()
        .unwrap()
}

#[test]
fn a_dead_gateway_is_unhealthy_whatever_proxy_the_environment_names() {
    let (proxy, asked) = answers_200();
    let out = healthcheck(&closed_url(), &proxy);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(asked.load(Ordering::SeqCst), 0, "the proxy was asked");
}

#[test]
fn a_live_gateway_is_healthy_whatever_proxy_the_environment_names() {
    let (gateway, asked) = answers_200();
    let out = healthcheck(&format!("{gateway}/readyz"), &closed_url());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(asked.load(Ordering::SeqCst), 1);
}
