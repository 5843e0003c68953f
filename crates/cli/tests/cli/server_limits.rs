//! The attacks on `recourse serve` and `recourse tools serve [--mcp-http]`,
//! played against the real binary over loopback.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const BIN: &str = env!("CARGO_BIN_EXE_recourse");
/// Far longer than any limit configured here.
const GENEROUS: Duration = Duration::from_secs(15);

/// A running `recourse` server: its first stdout lines, and its stderr.
struct Running {
    child: Child,
    lines: Vec<String>,
}

impl Running {
    fn start(args: &[&str], stdout_lines: usize) -> Self {
        Self::start_with(Command::new(BIN).args(args), stdout_lines)
    }

    fn start_with(command: &mut Command, stdout_lines: usize) -> Self {
        let mut child = command
            .env_remove("RECOURSE_GATEWAY_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
        let lines = (0..stdout_lines)
            .map(|_| out.next().unwrap().unwrap())
            .collect();
        Self { child, lines }
    }

    fn gateway(args: &[&str]) -> Self {
        let mut all = vec!["serve", "--port", "0", "--journal", "none"];
        all.extend_from_slice(args);
        Self::start(&all, 1)
    }

    /// `host:port` from a printed URL line.
    fn addr(&self, line: usize) -> String {
        let url = self.lines[line].rsplit(' ').next().unwrap();
        let rest = url.trim_start_matches("http://");
        rest.split('/').next().unwrap().to_owned()
    }

    fn terminate(&self) {
        let pid = self.child.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
    }

    /// Waits for the process to exit, at most `bound`; its exit code and stderr.
    fn wait(mut self, bound: Duration) -> (Option<i32>, String, Duration) {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                let mut stderr = String::new();
                let _ = self
                    .child
                    .stderr
                    .take()
                    .unwrap()
                    .read_to_string(&mut stderr);
                return (status.code(), stderr, started.elapsed());
            }
            assert!(started.elapsed() < bound, "still running after {bound:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads one HTTP response off a raw socket: status, head and body.
async fn read_reply(stream: &mut TcpStream) -> Option<(u16, String, Value)> {
    let reply = tokio::time::timeout(GENEROUS, read_reply_unbounded(stream)).await;
    reply.expect("an answer or a close well before the bound")
}

async fn read_reply_unbounded(stream: &mut TcpStream) -> Option<(u16, String, Value)> {
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let head = head.to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok());
            if length.is_some_and(|n| body.len() >= n) {
                let status = head.split(' ').nth(1)?.parse().ok()?;
                return Some((
                    status,
                    head,
                    serde_json::from_str(body).unwrap_or(Value::Null),
                ));
            }
        }
    }
    None
}

#[test]
fn a_non_loopback_bind_needs_a_token_or_an_explicit_opt_out() {
    let out = Command::new(BIN)
        .args(["serve", "--port", "0", "--bind", "0.0.0.0"])
        .env_remove("RECOURSE_GATEWAY_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("RECOURSE_GATEWAY_TOKEN"), "{stderr}");
    assert!(stderr.contains("--insecure-no-auth"), "{stderr}");

    let opted_out = Running::gateway(&["--bind", "0.0.0.0", "--insecure-no-auth"]);
    assert!(opted_out.lines[0].contains("listening on http://0.0.0.0:"));
}

#[test]
fn bad_limit_flags_are_usage_errors() {
    for (args, flag) in [
        (&["serve", "--header-timeout", "0"][..], "--header-timeout"),
        (&["serve", "--max-in-flight", "0"], "--max-in-flight"),
        (&["serve", "--shutdown-grace=-1"], "--shutdown-grace"),
        (
            &["tools", "serve", "--body-timeout", "never"],
            "--body-timeout",
        ),
        (
            &["tools", "serve", "--max-connections", "0"],
            "--max-connections",
        ),
    ] {
        let out = Command::new(BIN).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(flag), "{args:?}: {stderr}");
    }
}

/// A tool that says when a request arrived and answers only when released.
async fn held_tool() -> (
    String,
    tokio::sync::mpsc::Receiver<()>,
    std::sync::Arc<tokio::sync::Semaphore>,
) {
    use axum::routing::post;
    let (arrived_tx, arrived) = tokio::sync::mpsc::channel(8);
    let release = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let held = std::sync::Arc::clone(&release);
    let app = axum::Router::new().route(
        "/tool",
        post(move || {
            let (arrived, held) = (arrived_tx.clone(), std::sync::Arc::clone(&held));
            async move {
                let _ = arrived.send(()).await;
                held.acquire().await.unwrap().forget();
                axum::Json(json!({"success": true, "data": {"held": true}}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/tool", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, arrived, release)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_sheds_calls_beyond_max_in_flight() {
    let (tool, mut arrived, release) = held_tool().await;
    let gw = Running::gateway(&["--max-in-flight", "1"]);
    let calls = format!("http://{}/v1/calls", gw.addr(0));
    let body = json!({"url": tool, "payload": {}});
    let client = reqwest::Client::new();
    let first = tokio::spawn(client.post(&calls).json(&body).send());
    arrived
        .recv()
        .await
        .expect("the first call reaches the tool");

    let shed = client.post(&calls).json(&body).send().await.unwrap();
    assert_eq!(shed.status(), 503);
    assert_eq!(shed.headers()["retry-after"], "1");
    let envelope: Value = shed.json().await.unwrap();
    assert_eq!(envelope["error"]["code"], "OVERLOADED");
    assert_eq!(envelope["error"]["category"], "SERVICE_ERROR");
    assert_eq!(envelope["error"]["retryable"], true);

    release.add_permits(1);
    let report: Value = first.await.unwrap().unwrap().json().await.unwrap();
    assert_eq!(report["outcome"], "succeeded", "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_with_a_partial_header_open_exits_within_the_shutdown_grace() {
    let gw = Running::gateway(&[
        "--max-connections",
        "1",
        "--header-timeout",
        "60",
        "--shutdown-grace",
        "1",
    ]);
    let addr = gw.addr(0);
    // Proof that the gateway has read the partial header: with one
    // connection allowed, a second is refused only if the first is not
    // idle (an idle one would be closed to make room instead).
    let mut proven = None;
    for _ in 0..50 {
        let mut partial = TcpStream::connect(&addr).await.unwrap();
        partial
            .write_all(b"POST /v1/calls HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        let mut second = TcpStream::connect(&addr).await.unwrap();
        // Admitted instead (the first was closed as idle), it gets no answer: try again.
        let wait = Duration::from_millis(500);
        if let Ok(Some((503, _, envelope))) =
            tokio::time::timeout(wait, read_reply_unbounded(&mut second)).await
        {
            assert_eq!(envelope["error"]["code"], "OVERLOADED");
            proven = Some(partial);
            break;
        }
    }
    let _partial = proven.expect("the partial header reached the gateway");
    gw.terminate();
    let (code, stderr, took) = gw.wait(GENEROUS);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(took < Duration::from_secs(8), "{took:?}");
    assert!(stderr.contains("closed 1 connection"), "{stderr}");
}

#[tokio::test]
async fn tools_serve_and_its_mcp_endpoint_cut_slow_headers() {
    let tools = Running::start(
        &[
            "tools",
            "serve",
            "--port",
            "0",
            "--mcp-http",
            "--header-timeout",
            "0.3",
        ],
        2,
    );
    for line in 0..2 {
        let mut slow = TcpStream::connect(tools.addr(line)).await.unwrap();
        let started = Instant::now();
        slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        let (status, head, envelope) = read_reply(&mut slow).await.expect("a 408 envelope");
        assert_eq!(status, 408, "{head}");
        assert_eq!(envelope["error"]["code"], "REQUEST_TIMEOUT");
        assert!(started.elapsed() < Duration::from_secs(8));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_file_descriptors_the_gateway_closes_idle_connections_for_healthz() {
    // The gateway may open 128 files: far fewer than its connection cap, so
    // it runs out of descriptors long before the cap refuses anyone.
    let script = r#"ulimit -n 128 && exec "$0" serve --port 0"#;
    let gw = Running::start_with(Command::new("sh").args(["-c", script, BIN]), 1);
    let addr = gw.addr(0);
    let mut idle = Vec::new();
    for _ in 0..300 {
        idle.push(TcpStream::connect(&addr).await.unwrap());
    }
    let health = reqwest::Client::builder()
        .timeout(GENEROUS)
        .build()
        .unwrap()
        .get(format!("http://{addr}/healthz"))
        .send()
        .await
        .expect("/healthz answers with the descriptors all taken");
    assert_eq!(health.status(), 200);
}
