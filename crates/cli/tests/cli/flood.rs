//! The partial-body flood against the real `recourse serve`, measuring the
//! gateway's memory: 1,500 connections each send ~1 MB of a body and stall.
//!
//! `cargo test -p recourse-cli --test cli flood:: -- --ignored --nocapture`
//!
//! Prints VmRSS before, at its peak during each of two floods, and after
//! each, plus how the attack connections were answered; BENCHMARKS.md
//! records a run. It is ignored in the normal suite: each flood moves
//! 1.5 GB over loopback and lasts about as long as the body timeout (30 s).

use crate::support;

use support::Gateway;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const CONNECTIONS: usize = 1500;
/// Just under the gateway's 1 MiB body limit.
const DECLARED: usize = 1_000_000;
/// What each connection sends of its body before stalling.
const SENT: usize = 990_000;

/// VmRSS of `pid` in KiB, from `/proc/<pid>/status`.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// One attack connection: headers, most of the body, then silence. Returns
/// the status the gateway answered with, or 0 if it closed without one.
async fn attack(addr: String, body: Arc<Vec<u8>>) -> u16 {
    let Ok(mut stream) = TcpStream::connect(&addr).await else {
        return 0;
    };
    let head = format!(
        "POST /v1/calls HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {DECLARED}\r\n\r\n"
    );
    let (mut reader, mut writer) = stream.split();
    let write = async {
        let _ = writer.write_all(head.as_bytes()).await;
        let _ = writer.write_all(&body).await;
        // Stall: keep the connection open, send nothing more.
        std::future::pending::<()>().await;
    };
    let read = async {
        let mut reply = Vec::new();
        let mut chunk = [0u8; 4096];
        while let Ok(n) = reader.read(&mut chunk).await {
            if n == 0 {
                break;
            }
            reply.extend_from_slice(&chunk[..n]);
            if reply.windows(4).any(|w| w == b"\r\n\r\n") {
                break;
            }
        }
        let text = String::from_utf8_lossy(&reply);
        text.split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    };
    tokio::select! {
        () = write => unreachable!(),
        status = read => status,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "two 1.5 GB floods lasting ~70 s; run by hand for BENCHMARKS.md"]
async fn a_partial_body_flood_keeps_the_gateway_memory_bounded() {
    let gw = Gateway::spawn().args(&["--journal", "none"]).start();
    let url = gw.url.clone();
    let addr = url.trim_start_matches("http://").to_owned();
    let pid = gw.child.id();
    let health = format!("{url}/healthz");
    assert_eq!(reqwest::get(&health).await.unwrap().status(), 200);
    let before = rss_kib(pid);

    println!(
        "connections: {CONNECTIONS}, each sending {SENT} of {DECLARED} body bytes, then stalling"
    );
    println!("VmRSS before: {} MiB", before / 1024);
    let mut peaks = Vec::new();
    // Twice: the second flood shows whether memory left after the first is reused or leaked.
    for round in 1..=2 {
        let (peak, after) = flood(pid, &addr, &health).await;
        println!(
            "flood {round}: VmRSS peak {} MiB, after {} MiB",
            peak / 1024,
            after / 1024
        );
        peaks.push((peak, after));
    }
    drop(gw);

    for (peak, after) in &peaks {
        assert!(*peak < 512 * 1024, "peak VmRSS {} MiB", peak / 1024);
        assert!(*after < 512 * 1024, "VmRSS after {} MiB", after / 1024);
    }
}

/// One flood; returns the peak VmRSS during it and the VmRSS after, in KiB.
async fn flood(pid: u32, addr: &str, health: &str) -> (u64, u64) {
    let peak = Arc::new(AtomicU64::new(rss_kib(pid)));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (peak, sampling) = (Arc::clone(&peak), Arc::clone(&sampling));
        tokio::spawn(async move {
            while sampling.load(Ordering::Relaxed) {
                peak.fetch_max(rss_kib(pid), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };

    let mut body = br#"{"url":"http://127.0.0.1:1/x","payload":{"blob":""#.to_vec();
    body.resize(SENT, b'x');
    let body = Arc::new(body);
    let started = Instant::now();
    let attacks: Vec<_> = (0..CONNECTIONS)
        .map(|_| tokio::spawn(attack(addr.to_owned(), Arc::clone(&body))))
        .collect();

    // The gateway keeps answering while flooded.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let probe = Instant::now();
    let status = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
        .get(health)
        .send()
        .await
        .map(|r| r.status().as_u16());
    println!(
        "  /healthz mid-flood: {:?} in {:?}",
        status.as_ref().ok(),
        probe.elapsed()
    );
    assert_eq!(status.ok(), Some(200), "healthz answers mid-flood");

    let mut answers = BTreeMap::new();
    for a in attacks {
        *answers.entry(a.await.unwrap()).or_insert(0usize) += 1;
    }
    println!(
        "  answers (status: connections; 0 = closed without one): {answers:?}, all ended after {:.1?}",
        started.elapsed()
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    sampling.store(false, Ordering::Relaxed);
    sampler.await.unwrap();
    (peak.load(Ordering::Relaxed), rss_kib(pid))
}
