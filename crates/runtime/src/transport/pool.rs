//! Plain HTTP/1 connections kept open between calls.
//!
//! Each origin (`host:port` as the URL writes it) has a list of idle
//! connections. A call takes the one used last that is still open, or opens
//! one, and gives it back only once it has read the whole answer — a
//! connection with an answer half read is closed, never reused. A request a
//! reused connection never took (it closed first) goes out on another:
//! hyper hands such a request back unsent, so nothing is sent twice. Idle
//! connections are closed after the idle timeout.
//!
//! hyper-util's pool does the same with more: it hashes the origin three
//! times, races a new connection against a freed one, and spawns a task per
//! request to give the connection back. Here a call costs two map lookups.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use url::Host;

use super::wire::{after_send, not_running_at, place};
use super::{TransportFailure, TransportFailureKind};

type Sender = SendRequest<Full<Bytes>>;

/// How many reused connections one call may find closed before it opens a
/// new one. Closed ones are dropped as they are found, so this bounds a call's
/// work, not the pool.
const MAX_STALE: usize = 8;

/// Idle HTTP/1 connections by origin; clones share them.
#[derive(Clone)]
pub(super) struct Pool {
    idle: Arc<Mutex<Idle>>,
    connect_timeout: Duration,
    idle_timeout: Duration,
}

struct Idle {
    by_origin: HashMap<Box<str>, Vec<Parked>>,
    /// When every origin's list was last cleared of closed and expired ones.
    swept: Instant,
}

struct Parked {
    sender: Sender,
    since: Instant,
}

/// A connection taken from the pool for one exchange.
#[derive(Debug)]
pub(super) struct Lease {
    sender: Sender,
}

impl Pool {
    pub(super) fn new(connect_timeout: Duration, idle_timeout: Duration) -> Self {
        Self {
            idle: Arc::new(Mutex::new(Idle {
                by_origin: HashMap::new(),
                swept: Instant::now(),
            })),
            connect_timeout,
            idle_timeout,
        }
    }

    /// Sends `request` to `url`'s `origin` on an idle connection or a new one.
    /// The answer's body is still to be read; [`Pool::give_back`] the lease
    /// once it has been, and drop it otherwise.
    pub(super) async fn send(
        &self,
        url: &url::Url,
        origin: &str,
        mut request: http::Request<Full<Bytes>>,
    ) -> Result<(http::Response<Incoming>, Lease), TransportFailure> {
        let mut stale = 0;
        loop {
            let idle = if stale < MAX_STALE {
                self.take(origin)
            } else {
                None
            };
            let (mut sender, is_reused) = match idle {
                Some(sender) => (sender, true),
                None => (self.open(url).await?, false),
            };
            // A connection just given back may not have told hyper it is free
            // yet; one that closed meanwhile fails here, nothing sent. (A new
            // one takes its first request without being asked.)
            if is_reused && sender.ready().await.is_err() {
                stale += 1;
                continue;
            }
            match sender.try_send_request(request).await {
                Ok(response) => return Ok((response, Lease { sender })),
                Err(mut failed) => match failed.take_message() {
                    Some(unsent) if is_reused => {
                        stale += 1;
                        request = unsent;
                    }
                    Some(_) => return Err(not_sent(url)),
                    None => return Err(after_send(&failed.into_error())),
                },
            }
        }
    }

    /// Puts a connection whose answer was read in full back for the next call.
    pub(super) fn give_back(&self, origin: &str, lease: Lease) {
        self.give_back_at(origin, lease, Instant::now());
    }

    fn give_back_at(&self, origin: &str, lease: Lease, now: Instant) {
        if lease.sender.is_closed() {
            return;
        }
        let mut idle = self.lock();
        if now.duration_since(idle.swept) >= self.idle_timeout {
            idle.sweep(now, self.idle_timeout);
        }
        let parked = Parked {
            sender: lease.sender,
            since: now,
        };
        match idle.by_origin.get_mut(origin) {
            Some(list) => list.push(parked),
            None => {
                idle.by_origin.insert(origin.into(), vec![parked]);
            }
        }
    }

    /// The idle connection to `origin` used last, if one is open and fresh.
    fn take(&self, origin: &str) -> Option<Sender> {
        self.take_at(origin, Instant::now())
    }

    fn take_at(&self, origin: &str, now: Instant) -> Option<Sender> {
        let mut idle = self.lock();
        let list = idle.by_origin.get_mut(origin)?;
        while let Some(parked) = list.pop() {
            if now.duration_since(parked.since) >= self.idle_timeout {
                // The newest is too old, so all below it are.
                list.clear();
                return None;
            }
            if !parked.sender.is_closed() {
                return Some(parked.sender);
            }
        }
        None
    }

    /// A new connection to `url`'s host, within the connect timeout.
    async fn open(&self, url: &url::Url) -> Result<Sender, TransportFailure> {
        let connecting = async {
            let stream = connect(url).await?;
            stream.set_nodelay(true)?;
            let (sender, connection) = http1::handshake(TokioIo::new(stream))
                .await
                .map_err(io::Error::other)?;
            tokio::spawn(async move {
                // Its errors reach the request that was on it.
                let _ = connection.await;
            });
            Ok::<_, io::Error>(sender)
        };
        let failed = match tokio::time::timeout(self.connect_timeout, connecting).await {
            Ok(Ok(sender)) => return Ok(sender),
            Ok(Err(error)) => error,
            Err(_) => io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no connection within {:?}", self.connect_timeout),
            ),
        };
        Err(TransportFailure::new(
            TransportFailureKind::ConnectFailed,
            not_running_at(&place(url), &failed),
        ))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Idle> {
        // Nothing panics while holding it; a poisoned list is still a list.
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    #[cfg(test)]
    fn idle_count(&self, origin: &str) -> usize {
        self.lock().by_origin.get(origin).map_or(0, Vec::len)
    }
}

impl Idle {
    fn sweep(&mut self, now: Instant, timeout: Duration) {
        self.by_origin.retain(|_, list| {
            list.retain(|p| now.duration_since(p.since) < timeout && !p.sender.is_closed());
            !list.is_empty()
        });
        self.swept = now;
    }
}

impl fmt::Debug for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("connect_timeout", &self.connect_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .finish_non_exhaustive()
    }
}

/// A TCP connection to the URL's host: an address as written, a name through
/// the system's resolver (each address it gives, in order).
async fn connect(url: &url::Url) -> io::Result<TcpStream> {
    let port = url.port_or_known_default().unwrap_or(80);
    match url.host() {
        Some(Host::Ipv4(ip)) => TcpStream::connect((ip, port)).await,
        Some(Host::Ipv6(ip)) => TcpStream::connect((ip, port)).await,
        Some(Host::Domain(name)) => TcpStream::connect((name, port)).await,
        None => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the URL names no host",
        )),
    }
}

fn not_sent(url: &url::Url) -> TransportFailure {
    TransportFailure::new(
        TransportFailureKind::ConnectFailed,
        format!(
            "the connection to {} closed before the request was sent",
            place(url)
        ),
    )
}

#[cfg(test)]
mod tests {
    //! The pool against servers that count what reaches them.

    use std::future::Future;
    use std::pin::Pin;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Poll;

    use http_body_util::BodyExt;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::super::plain_http::origin;
    use super::*;

    const ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 16\r\n\r\n{\"success\":true}";

    /// What reached a test server.
    #[derive(Default)]
    struct Seen {
        connections: AtomicUsize,
        requests: AtomicUsize,
        /// Connections that ended (the client closed them).
        ended: AtomicUsize,
    }

    /// A server answering every request `ANSWER`; with `close`, it closes
    /// each connection after its first answer (without saying so first).
    async fn server(close: bool) -> (url::Url, Arc<Seen>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/api/quote", listener.local_addr().unwrap());
        let seen = Arc::new(Seen::default());
        let counts = Arc::clone(&seen);
        tokio::spawn(async move {
            loop {
                let (socket, _) = listener.accept().await.unwrap();
                counts.connections.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(answer_each(socket, close, Arc::clone(&counts)));
            }
        });
        (url.parse().unwrap(), seen)
    }

    async fn answer_each(mut socket: TcpStream, close: bool, seen: Arc<Seen>) {
        let mut pending = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            // One request: its head, then as many bytes as it says it carries.
            let request_len = loop {
                if let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&pending[..end]).to_ascii_lowercase();
                    let body: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .map_or(0, |n| n.trim().parse().unwrap());
                    if pending.len() >= end + 4 + body {
                        break end + 4 + body;
                    }
                }
                match socket.read(&mut buf).await {
                    Ok(0) | Err(_) => {
                        seen.ended.fetch_add(1, Ordering::SeqCst);
                        return;
                    }
                    Ok(n) => pending.extend_from_slice(&buf[..n]),
                }
            };
            pending.drain(..request_len);
            seen.requests.fetch_add(1, Ordering::SeqCst);
            socket.write_all(ANSWER).await.unwrap();
            if close {
                return;
            }
        }
    }

    fn request() -> http::Request<Full<Bytes>> {
        http::Request::post("/api/quote")
            .header(http::header::HOST, "tools")
            .body(Full::new(Bytes::from_static(b"{}")))
            .unwrap()
    }

    /// One exchange through the pool, its answer read in full and the
    /// connection given back.
    async fn exchange(pool: &Pool, url: &url::Url) -> Result<u16, TransportFailure> {
        let (response, lease) = pool.send(url, origin(url), request()).await?;
        let status = response.status().as_u16();
        response.into_body().collect().await.unwrap();
        pool.give_back(origin(url), lease);
        Ok(status)
    }

    fn pool() -> Pool {
        Pool::new(Duration::from_secs(5), Duration::from_secs(90))
    }

    /// Waits (real time, bounded) until `done` holds.
    async fn until(what: &str, done: impl Fn() -> bool) {
        for _ in 0..500 {
            if done() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("still waiting for {what}");
    }

    #[tokio::test]
    async fn calls_in_turn_share_one_connection() {
        let (url, seen) = server(false).await;
        let pool = pool();
        for _ in 0..3 {
            assert_eq!(exchange(&pool, &url).await.unwrap(), 200);
        }
        assert_eq!(seen.requests.load(Ordering::SeqCst), 3);
        assert_eq!(seen.connections.load(Ordering::SeqCst), 1);
        assert_eq!(pool.idle_count(origin(&url)), 1);
    }

    #[tokio::test]
    async fn a_connection_the_tool_closed_is_not_used_again() {
        let (url, seen) = server(true).await;
        let pool = pool();
        assert_eq!(exchange(&pool, &url).await.unwrap(), 200);
        // The tool closed it. Whether hyper saw that with the answer (then
        // it was not kept) or after, the pool never hands it out again.
        until("the close to be seen", || {
            let idle = pool.lock();
            let parked = idle.by_origin.get(origin(&url));
            parked.is_none_or(|list| list.iter().all(|p| p.sender.is_closed()))
        })
        .await;
        assert!(pool.take(origin(&url)).is_none());
        assert_eq!(exchange(&pool, &url).await.unwrap(), 200);
        assert_eq!(seen.requests.load(Ordering::SeqCst), 2);
        assert_eq!(seen.connections.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_request_a_reused_connection_never_took_goes_out_on_another() {
        let (url, seen) = server(false).await;
        let pool = pool();
        // A pooled connection, ready for a request, that closes before it
        // takes the one sent on it: its dispatcher goes away with the
        // request still queued, and hyper hands the request back.
        let (near, _far) = tokio::io::duplex(1024);
        let (sender, mut connection) = http1::handshake(TokioIo::new(near)).await.unwrap();
        let polled = std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut connection).poll(cx)));
        assert!(polled.await.is_pending());
        assert!(sender.is_ready());
        pool.give_back(origin(&url), Lease { sender });

        let sending = tokio::spawn({
            let (pool, url) = (pool.clone(), url.clone());
            async move { exchange(&pool, &url).await }
        });
        until("the pooled connection to be taken", || {
            pool.idle_count(origin(&url)) == 0
        })
        .await;
        drop(connection);
        assert_eq!(sending.await.unwrap().unwrap(), 200);
        assert_eq!(seen.requests.load(Ordering::SeqCst), 1, "sent once");
        assert_eq!(seen.connections.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn an_answer_left_unread_gives_its_connection_up() {
        let (url, seen) = server(false).await;
        let pool = pool();
        let (response, lease) = pool.send(&url, origin(&url), request()).await.unwrap();
        assert_eq!(response.status(), 200);
        drop((response, lease));
        assert_eq!(pool.idle_count(origin(&url)), 0);
        until("the connection to close", || {
            seen.ended.load(Ordering::SeqCst) == 1
        })
        .await;
        assert_eq!(exchange(&pool, &url).await.unwrap(), 200);
        assert_eq!(seen.connections.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn idle_connections_close_after_the_idle_timeout() {
        let (first, first_seen) = server(false).await;
        let (second, second_seen) = server(false).await;
        let pool = pool();
        assert_eq!(exchange(&pool, &first).await.unwrap(), 200);
        assert_eq!(exchange(&pool, &second).await.unwrap(), 200);
        let later = Instant::now() + Duration::from_secs(91);

        // Taken after the timeout: the connection is closed, not used.
        assert!(pool.take_at(origin(&first), later).is_none());
        until("the first connection to close", || {
            first_seen.ended.load(Ordering::SeqCst) == 1
        })
        .await;

        // An origin no call asks for again is swept when any connection
        // comes back after the timeout.
        let (response, lease) = pool.send(&first, origin(&first), request()).await.unwrap();
        response.into_body().collect().await.unwrap();
        pool.give_back_at(origin(&first), lease, later);
        assert_eq!(pool.idle_count(origin(&second)), 0);
        until("the second connection to close", || {
            second_seen.ended.load(Ordering::SeqCst) == 1
        })
        .await;
        assert_eq!(pool.idle_count(origin(&first)), 1);
    }
}
