//! `serve` under attack: real sockets on loopback, short limits, loose timing.
//!
//! Each test plays one attack against a server started with limits of a few
//! hundred milliseconds, and asserts that the server defends itself well
//! before a generous bound — never that it takes an exact time.

use std::future::IntoFuture;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::routing::{get, post};
use futures_util::StreamExt;
use recourse_tool::{ServerLimits, Stopped, Success, ToolJson, serve};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::task::JoinHandle;

/// Far longer than any limit in these tests: reaching it means a defence failed.
const GENEROUS: Duration = Duration::from_secs(10);

/// Signals from the test handlers.
struct Probes {
    /// A `/held` (or `/large`) request has arrived.
    arrived: mpsc::UnboundedReceiver<()>,
    /// `/held` requests wait for a permit here.
    release: Arc<Semaphore>,
    /// Body bytes `/upload` has read so far.
    uploaded: mpsc::UnboundedReceiver<usize>,
}

fn app() -> (Router, Probes) {
    let (arrived_tx, arrived) = mpsc::unbounded_channel();
    let (uploaded_tx, uploaded) = mpsc::unbounded_channel();
    let release = Arc::new(Semaphore::new(0));
    let held = Arc::clone(&release);
    let large_arrived = arrived_tx.clone();
    let router = Router::new()
        .route(
            "/healthz",
            get(|| async { Success(serde_json::json!({"status": "ok"})) }),
        )
        .route(
            "/held",
            post(move || {
                let (arrived, release) = (arrived_tx.clone(), Arc::clone(&held));
                async move {
                    let _ = arrived.send(());
                    release.acquire().await.unwrap().forget();
                    Success("released")
                }
            }),
        )
        .route(
            "/large",
            get(move || async move {
                let _ = large_arrived.send(());
                vec![b'z'; 32 * 1024 * 1024]
            }),
        )
        .route(
            "/json",
            post(|ToolJson(v): ToolJson<Value>| async move { Success(v) }),
        )
        .route(
            "/upload",
            post(move |body: Body| {
                let uploaded = uploaded_tx.clone();
                async move {
                    let mut total = 0;
                    let mut stream = body.into_data_stream();
                    while let Some(Ok(chunk)) = stream.next().await {
                        total += chunk.len();
                        let _ = uploaded.send(total);
                    }
                    Success(total)
                }
            }),
        );
    let probes = Probes {
        arrived,
        release,
        uploaded,
    };
    (router, probes)
}

/// A server-side stream that reports each read that brought bytes: the
/// test's proof that the server has received what the client sent.
struct Tapped {
    inner: TcpStream,
    reads: mpsc::UnboundedSender<usize>,
}

impl tokio::io::AsyncRead for Tapped {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        if n > 0 {
            let _ = self.reads.send(n);
        }
        polled
    }
}

impl tokio::io::AsyncWrite for Tapped {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

struct Server {
    addr: std::net::SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Stopped>,
}

impl Server {
    async fn start(limits: ServerLimits) -> (Self, Probes) {
        let (server, probes, _reads) = Self::start_tapped(limits).await;
        (server, probes)
    }

    /// Also reports every read the server makes, on any connection.
    async fn start_tapped(limits: ServerLimits) -> (Self, Probes, mpsc::UnboundedReceiver<usize>) {
        let (router, probes) = app();
        let (reads_tx, reads) = mpsc::unbounded_channel();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(
            serve(listener, router)
                .with_connection_setup(move |inner, _| Tapped {
                    inner,
                    reads: reads_tx.clone(),
                })
                .with_limits(limits)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .into_future(),
        );
        let server = Self {
            addr,
            stop: Some(stop),
            task,
        };
        (server, probes, reads)
    }

    async fn connect(&self) -> TcpStream {
        TcpStream::connect(self.addr).await.unwrap()
    }

    async fn healthz(&self) -> u16 {
        let client = reqwest::Client::builder()
            .timeout(GENEROUS)
            .pool_max_idle_per_host(0)
            .build()
            .unwrap();
        let reply = client
            .get(format!("http://{}/healthz", self.addr))
            .send()
            .await
            .expect("/healthz answers");
        reply.status().as_u16()
    }

    /// Signals shutdown and waits for the server to stop.
    async fn stop(mut self) -> (Stopped, Duration) {
        let started = Instant::now();
        self.stop.take().unwrap().send(()).unwrap();
        let stopped = tokio::time::timeout(GENEROUS, &mut self.task)
            .await
            .expect("the server stops within the bound")
            .unwrap();
        (stopped, started.elapsed())
    }
}

/// A reply read off a raw socket: status, lower-cased head, body as JSON.
#[derive(Debug)]
struct RawReply {
    status: u16,
    head: String,
    body: Value,
}

/// Reads one response (or `None` if the connection closed without one).
async fn read_reply(stream: &mut TcpStream) -> Option<RawReply> {
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let read = tokio::time::timeout(GENEROUS, stream.read(&mut chunk))
            .await
            .expect("the server answers or closes well before the bound");
        match read {
            Ok(0) | Err(_) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
        }
        if let Some(reply) = parse_reply(&bytes) {
            return Some(reply);
        }
    }
    parse_reply(&bytes)
}

fn parse_reply(bytes: &[u8]) -> Option<RawReply> {
    let text = String::from_utf8_lossy(bytes);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let head = head.to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))?
        .trim()
        .parse()
        .ok()?;
    if body.len() < length {
        return None;
    }
    let status = head.split(' ').nth(1)?.parse().ok()?;
    let body = serde_json::from_str(&body[..length]).unwrap_or(Value::Null);
    Some(RawReply { status, head, body })
}

/// Whether the server has closed `stream` (read gives end of stream or an error).
async fn closed_within(stream: &mut TcpStream, bound: Duration) -> bool {
    let mut chunk = [0u8; 1024];
    let deadline = tokio::time::Instant::now() + bound;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut chunk)).await {
            Err(_) => return false,
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => {}
        }
    }
}

fn assert_envelope(reply: &RawReply, status: u16, code: &str, retryable: bool) {
    assert_eq!(reply.status, status, "{reply:?}");
    assert!(
        reply.head.contains("content-type: application/json"),
        "{reply:?}"
    );
    assert_eq!(reply.body["success"], false, "{reply:?}");
    assert_eq!(reply.body["error"]["code"], code, "{reply:?}");
    assert_eq!(reply.body["error"]["retryable"], retryable, "{reply:?}");
}

fn limits() -> recourse_tool::ServerLimitsBuilder {
    ServerLimits::builder()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[tokio::test]
async fn a_header_dribbled_byte_by_byte_is_cut_at_the_header_timeout() {
    let (server, _) = Server::start(limits().header_timeout(ms(300)).build().unwrap()).await;
    let mut stream = server.connect().await;
    let started = Instant::now();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nX-Slow: ")
        .await
        .unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let dribbler = tokio::spawn(async move {
        while writer.write_all(b"a").await.is_ok() {
            tokio::time::sleep(ms(50)).await;
        }
    });
    let mut bytes = Vec::new();
    let _ = tokio::time::timeout(GENEROUS, reader.read_to_end(&mut bytes))
        .await
        .expect("the connection is closed well before the bound");
    let elapsed = started.elapsed();
    dribbler.abort();
    let reply = parse_reply(&bytes).expect("a 408 envelope before closing");
    assert_envelope(&reply, 408, "REQUEST_TIMEOUT", true);
    assert_eq!(reply.body["error"]["category"], "SERVICE_ERROR");
    assert!(elapsed >= ms(250), "not before the timeout: {elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
}

#[tokio::test]
async fn a_connection_that_sends_nothing_is_held_to_the_idle_timeout_not_the_header_one() {
    let limits = limits()
        .header_timeout(ms(100))
        .idle_timeout(ms(600))
        .build()
        .unwrap();
    let (server, _) = Server::start(limits).await;
    let mut quiet = server.connect().await;
    assert!(
        !closed_within(&mut quiet, ms(300)).await,
        "an idle connection outlives the header timeout"
    );
    assert!(
        closed_within(&mut quiet, GENEROUS).await,
        "then the idle timeout closes it"
    );

    // A kept-alive connection, idle after its first request, is closed too:
    // by the idle timeout, started when its answer was written, not the
    // header one, and without an answer of its own.
    let mut kept = server.connect().await;
    kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    assert_eq!(read_reply(&mut kept).await.unwrap().status, 200);
    assert!(
        !closed_within(&mut kept, ms(300)).await,
        "idle after a request, it outlives the header timeout"
    );
    let mut rest = Vec::new();
    tokio::time::timeout(GENEROUS, kept.read_to_end(&mut rest))
        .await
        .expect("then the idle timeout closes it")
        .unwrap();
    assert!(
        rest.is_empty(),
        "closed quietly: {:?}",
        String::from_utf8_lossy(&rest)
    );
}

/// The soft limit on open files, from `/proc/self/limits` (Linux).
fn open_files_limit() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_answers_with_a_thousand_idle_connections_open() {
    // Client and server share this process: each connection costs two descriptors.
    let wanted = 1000;
    let affordable = open_files_limit().map_or(wanted, |n| n.saturating_sub(200) / 2);
    let count = wanted.min(affordable);
    if count < wanted {
        eprintln!("open-files limit allows only {count} idle connections here, not {wanted}");
    }
    let (server, _) = Server::start(ServerLimits::default()).await;
    let mut idle = Vec::with_capacity(count);
    for _ in 0..count {
        idle.push(server.connect().await);
    }
    assert_eq!(server.healthz().await, 200);

    // With a cap below the crowd, the idle ones make room instead.
    let (capped, _) = Server::start(limits().max_connections(50).build().unwrap()).await;
    let mut crowd = Vec::new();
    for _ in 0..count.min(200) {
        crowd.push(capped.connect().await);
    }
    assert_eq!(capped.healthz().await, 200);
    assert!(
        closed_within(&mut crowd[0], GENEROUS).await,
        "the longest-idle connection was closed to make room"
    );
    drop(idle);
}

#[tokio::test]
async fn at_the_connection_cap_with_none_idle_a_newcomer_gets_an_overloaded_envelope() {
    let (server, mut probes) = Server::start(limits().max_connections(2).build().unwrap()).await;
    let mut busy = Vec::new();
    for _ in 0..2 {
        let mut s = server.connect().await;
        s.write_all(b"POST /held HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
            .await
            .unwrap();
        probes.arrived.recv().await.unwrap();
        busy.push(s);
    }
    let mut newcomer = server.connect().await;
    let reply = read_reply(&mut newcomer)
        .await
        .expect("a refusal, not silence");
    assert_envelope(&reply, 503, "OVERLOADED", true);
    assert!(reply.head.contains("retry-after: 1"), "{reply:?}");
    probes.release.add_permits(2);
    for s in &mut busy {
        assert_eq!(read_reply(s).await.unwrap().status, 200);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beyond_max_in_flight_a_request_is_shed_with_503_overloaded_and_retry_after() {
    let (server, mut probes) = Server::start(limits().max_in_flight(2).build().unwrap()).await;
    let client = reqwest::Client::new();
    let held = format!("http://{}/held", server.addr);
    let calls: Vec<_> = (0..2)
        .map(|_| tokio::spawn(client.post(&held).send()))
        .collect();
    for _ in 0..2 {
        probes.arrived.recv().await.unwrap();
    }
    let shed = client.post(&held).send().await.unwrap();
    assert_eq!(shed.status(), 503);
    assert_eq!(shed.headers()["retry-after"], "1");
    let body: Value = shed.json().await.unwrap();
    assert_eq!(body["error"]["code"], "OVERLOADED");
    assert_eq!(body["error"]["category"], "SERVICE_ERROR");
    assert_eq!(body["error"]["retryable"], true);

    probes.release.add_permits(3);
    for call in calls {
        assert_eq!(call.await.unwrap().unwrap().status(), 200);
    }
    let after = client.post(&held).send().await.unwrap();
    assert_eq!(after.status(), 200, "slots are given back once answered");
}

#[tokio::test]
async fn shutdown_with_a_partial_header_open_ends_within_the_grace_bound() {
    let limits = limits()
        .header_timeout(Duration::from_secs(60))
        .shutdown_grace(ms(300))
        .build()
        .unwrap();
    let (server, _, mut reads) = Server::start_tapped(limits).await;
    let mut partial = server.connect().await;
    partial
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    reads
        .recv()
        .await
        .expect("the server has read the partial header");
    let mut idle = server.connect().await;
    assert_eq!(server.healthz().await, 200);
    let (stopped, took) = server.stop().await;
    assert!(took >= ms(250), "the grace is given: {took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(stopped.connections_cut(), 1, "only the partial one is cut");
    assert!(closed_within(&mut partial, GENEROUS).await);
    assert!(closed_within(&mut idle, GENEROUS).await);
}

#[tokio::test]
async fn an_oversized_header_block_is_a_431_envelope() {
    let (server, _) = Server::start(ServerLimits::default()).await;
    for (name, head) in [
        (
            "one long header",
            format!("X-Big: {}\r\n", "a".repeat(20 * 1024)),
        ),
        (
            "far past hyper's own limit",
            format!("X-Big: {}\r\n", "a".repeat(600 * 1024)),
        ),
        (
            "too many headers",
            (0..150).map(|i| format!("X-{i}: 1\r\n")).collect(),
        ),
        (
            // `Host` and these: one past the limit of 100.
            "one header too many",
            (0..100).map(|i| format!("X-{i}: 1\r\n")).collect(),
        ),
    ] {
        let mut stream = server.connect().await;
        let request = format!("GET /healthz HTTP/1.1\r\nHost: x\r\n{head}\r\n");
        let (mut reader, mut writer) = stream.split();
        let (_, reply) = tokio::join!(writer.write_all(request.as_bytes()), async {
            read_reply_half(&mut reader).await
        });
        let reply = reply.unwrap_or_else(|| panic!("{name}: a reply"));
        assert_envelope(&reply, 431, "HEADERS_TOO_LARGE", false);
        assert_eq!(reply.body["error"]["category"], "INPUT_ERROR", "{name}");
        assert_eq!(reply.body["error"]["details"]["max_header_bytes"], "16384");
    }
    let mut fits = server.connect().await;
    let request = format!(
        "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "a".repeat(15 * 1024)
    );
    fits.write_all(request.as_bytes()).await.unwrap();
    assert_eq!(read_reply(&mut fits).await.unwrap().status, 200);
    let mut at_the_limit = server.connect().await;
    let headers: String = (0..99).map(|i| format!("X-{i}: 1\r\n")).collect();
    let request = format!("GET /healthz HTTP/1.1\r\nHost: x\r\n{headers}\r\n");
    at_the_limit.write_all(request.as_bytes()).await.unwrap();
    assert_eq!(
        read_reply(&mut at_the_limit).await.unwrap().status,
        200,
        "100 headers fit"
    );
}

async fn read_reply_half(reader: &mut tokio::net::tcp::ReadHalf<'_>) -> Option<RawReply> {
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let read = tokio::time::timeout(GENEROUS, reader.read(&mut chunk))
            .await
            .expect("an answer well before the bound");
        match read {
            Ok(0) | Err(_) => return parse_reply(&bytes),
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
        }
        if let Some(reply) = parse_reply(&bytes) {
            return Some(reply);
        }
    }
}

#[tokio::test]
async fn a_stalled_body_is_cut_at_the_body_timeout() {
    let (server, _) = Server::start(limits().body_timeout(ms(300)).build().unwrap()).await;
    let mut stream = server.connect().await;
    let started = Instant::now();
    stream
        .write_all(b"POST /json HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"a\":")
        .await
        .unwrap();
    let reply = read_reply(&mut stream).await.expect("a 408 envelope");
    let elapsed = started.elapsed();
    assert_envelope(&reply, 408, "REQUEST_TIMEOUT", true);
    assert!(elapsed >= ms(250), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    assert!(
        closed_within(&mut stream, GENEROUS).await,
        "and the connection is closed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_uploads_hold_at_most_the_body_memory_budget() {
    let limits = limits().max_body_memory(100 * 1024).build().unwrap();
    let (server, mut probes) = Server::start(limits).await;
    // One upload parks 60 KiB and stalls.
    let mut parked = server.connect().await;
    parked
        .write_all(b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n")
        .await
        .unwrap();
    parked.write_all(&[b'x'; 60 * 1024]).await.unwrap();
    while probes.uploaded.recv().await.unwrap() < 60 * 1024 {}

    // A second body that would take the total past the budget is shed.
    let client = reqwest::Client::new();
    let json = format!("http://{}/json", server.addr);
    let big = serde_json::json!({"blob": "y".repeat(60 * 1024)});
    let shed = client.post(&json).json(&big).send().await.unwrap();
    assert_eq!(shed.status(), 503);
    assert_eq!(shed.headers()["retry-after"], "1");
    let body: Value = shed.json().await.unwrap();
    assert_eq!(body["error"]["code"], "OVERLOADED");

    // Once the parked upload is gone, its bytes are given back.
    drop(parked);
    let mut answered = false;
    for _ in 0..200 {
        if client.post(&json).json(&big).send().await.unwrap().status() == 200 {
            answered = true;
            break;
        }
        tokio::time::sleep(ms(20)).await;
    }
    assert!(answered, "the budget is released when the request ends");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_its_response_gives_its_slot_back() {
    let limits = limits()
        .max_in_flight(1)
        .idle_timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let (server, mut probes) = Server::start(limits).await;
    let mut hoarder = server.connect().await;
    hoarder
        .write_all(b"GET /large HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    probes.arrived.recv().await.unwrap();
    // It never reads: 32 MiB fill the socket buffers and the server's write
    // stalls, holding the only slot...
    let started = Instant::now();
    let client = reqwest::Client::new();
    let url = format!("http://{}/healthz", server.addr);
    let mut statuses = Vec::new();
    loop {
        let status = client.get(&url).send().await.unwrap().status().as_u16();
        statuses.push(status);
        if status == 200 {
            break;
        }
        assert_eq!(status, 503, "shed while the slot is held");
        assert!(
            started.elapsed() < GENEROUS,
            "the slot was never given back"
        );
        tokio::time::sleep(ms(50)).await;
    }
    // ...until the stall passes the idle timeout: then the slot is free again.
    assert_eq!(statuses[0], 503, "the slot was held at first: {statuses:?}");
    assert!(started.elapsed() >= ms(1500), "{:?}", started.elapsed());
    assert!(closed_within(&mut hoarder, GENEROUS).await);
}
