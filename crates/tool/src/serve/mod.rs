//! `serve`: run a router over HTTP/1.1 with limits on time, count and memory.
//!
//! `axum::serve` has no limits: a client may take forever to send its
//! headers, open connections until the process runs out of file
//! descriptors, park megabytes of half-sent bodies, or hold a graceful
//! shutdown open by never finishing a request. Each of these costs the
//! attacker almost nothing. [`serve`] accepts the same router and bounds
//! each cost with a [`ServerLimits`]:
//!
//! - **time**: a header timeout from a request's first byte, a body timeout
//!   for its whole body, an idle timeout between requests, and a bound on
//!   graceful shutdown, after which what is left is closed;
//! - **count**: a cap on connections (the longest-idle one is closed to make
//!   room; with none idle the newcomer is refused) and on requests in flight;
//! - **memory**: a header-size limit, and a server-wide budget for request
//!   bodies held at once.
//!
//! Every refusal that can carry an answer is an envelope, as from any other
//! part of a tool: 408 `REQUEST_TIMEOUT`, 431 `HEADERS_TOO_LARGE`, 503
//! `OVERLOADED` with `Retry-After`. An idle connection that times out is just
//! closed: it has no request to answer.
//!
//! The pieces come from hyper (its HTTP/1 connection, read-buffer and header
//! count limits, per-connection graceful shutdown) and tokio; what neither
//! provides lives here: telling an idle connection from a slow header
//! (`io.rs`), the header-size check that answers before hyper's bare 431
//! (`head.rs`), the connection cap with idle-first eviction (`registry.rs`),
//! and an in-flight count that lasts until the response is written
//! (`admission.rs`).

mod admission;
mod head;
mod io;
mod limits;
mod refusal;
mod registry;

use std::future::{Future, IntoFuture};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::http::Extensions;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub(crate) use admission::BodyLimitError;
pub use limits::{InvalidLimit, ServerLimits, ServerLimitsBuilder};
pub(crate) use refusal::{overloaded, overloaded_response, timed_out};

use admission::{Admission, ConnService};
use io::GuardedIo;
use registry::{ConnState, Registry};

/// Room in hyper's read buffer beyond the largest header block.
const READ_BUFFER: usize = 64 * 1024;
/// The header count hyper accepts when none is set.
const HYPER_MAX_HEADERS: usize = 100;

/// Serves `router` on `listener` with the default [`ServerLimits`].
///
/// Await the returned [`Serve`] to run the server; it resolves only after
/// a shutdown signal given with [`Serve::with_graceful_shutdown`]. Each
/// request carries [`ConnectInfo<SocketAddr>`](axum::extract::ConnectInfo)
/// with the client's address.
///
/// ```
/// use std::future::IntoFuture;
/// use std::time::Duration;
/// use axum::{Router, routing::get};
/// use recourse_tool::{ServerLimits, serve};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let app = Router::new().route("/healthz", get(|| async { "ok" }));
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// let url = format!("http://{}/healthz", listener.local_addr()?);
/// let limits = ServerLimits::builder().header_timeout(Duration::from_secs(5)).build()?;
/// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
/// let server = tokio::spawn(
///     serve(listener, app)
///         .with_limits(limits)
///         .with_graceful_shutdown(async { let _ = stopped.await; })
///         .into_future(),
/// );
/// assert_eq!(reqwest::get(&url).await?.text().await?, "ok");
/// stop.send(()).unwrap();
/// assert_eq!(server.await?.connections_cut(), 0);
/// # Ok(())
/// # }
/// ```
pub fn serve(listener: TcpListener, router: Router) -> Serve {
    Serve {
        listener,
        router,
        limits: ServerLimits::default(),
        setup: Arc::new(|stream, _| stream),
        signal: Box::pin(std::future::pending()),
    }
}

type Setup<I> = Arc<dyn Fn(TcpStream, &mut Extensions) -> I + Send + Sync>;

/// A server being configured; await it to run it. See [`serve`].
#[must_use = "a server does nothing until awaited"]
pub struct Serve<I = TcpStream> {
    listener: TcpListener,
    router: Router,
    limits: ServerLimits,
    setup: Setup<I>,
    signal: Pin<Box<dyn Future<Output = ()> + Send>>,
}

impl<I> std::fmt::Debug for Serve<I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Serve")
            .field("listener", &self.listener)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Serve<TcpStream> {
    /// Wraps each accepted stream before it is served: `setup` gets the
    /// stream and the extensions every request on it will carry, and returns
    /// the I/O to serve. For fault injection or per-connection state.
    pub fn with_connection_setup<J, F>(self, setup: F) -> Serve<J>
    where
        F: Fn(TcpStream, &mut Extensions) -> J + Send + Sync + 'static,
    {
        Serve {
            listener: self.listener,
            router: self.router,
            limits: self.limits,
            setup: Arc::new(setup),
            signal: self.signal,
        }
    }
}

impl<I> Serve<I> {
    /// Replaces the default limits.
    pub fn with_limits(mut self, limits: ServerLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Stops when `signal` resolves: no new connections, idle ones closed,
    /// requests in progress finished — for at most the shutdown grace, after
    /// which the connections left are closed.
    pub fn with_graceful_shutdown<F>(mut self, signal: F) -> Self
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.signal = Box::pin(signal);
        self
    }

    /// The address the listener is bound to.
    ///
    /// # Errors
    ///
    /// As [`TcpListener::local_addr`].
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

/// How a server stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped {
    cut: usize,
}

impl Stopped {
    /// Connections still open when the shutdown grace ran out, closed then.
    pub fn connections_cut(&self) -> usize {
        self.cut
    }
}

impl<I> IntoFuture for Serve<I>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Output = Stopped;
    type IntoFuture = Pin<Box<dyn Future<Output = Stopped> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.run())
    }
}

impl<I> Serve<I>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    async fn run(self) -> Stopped {
        let Self {
            listener,
            router,
            limits,
            setup,
            mut signal,
        } = self;
        let registry = Arc::new(Registry::new(limits.max_connections()));
        let admission = Arc::new(Admission::new(&limits));
        let tracker = TaskTracker::new();
        let graceful = CancellationToken::new();
        let force = CancellationToken::new();
        let refusal = refusal::raw_response(503, refusal::overloaded("open connections"));
        loop {
            let accepted = tokio::select! {
                biased;
                () = &mut signal => break,
                accepted = listener.accept() => accepted,
            };
            let (stream, addr) = match accepted {
                Ok(pair) => pair,
                Err(error) => {
                    accept_failed(&registry, &error).await;
                    continue;
                }
            };
            let Some(conn) = registry.admit(force.child_token()) else {
                // Best effort, never waiting: the socket is closed either way.
                let _ = stream.try_write(&refusal);
                continue;
            };
            let _ = stream.set_nodelay(true);
            let mut extensions = Extensions::new();
            extensions.insert(ConnectInfo(addr));
            let io = setup(stream, &mut extensions);
            let service = ConnService {
                router: router.clone(),
                conn: Arc::clone(&conn),
                admission: Arc::clone(&admission),
                extensions,
            };
            let registry = Arc::clone(&registry);
            let graceful = graceful.clone();
            tracker.spawn(connection(io, conn, service, limits, graceful, registry));
        }
        drop(listener);
        graceful.cancel();
        tracker.close();
        if tokio::time::timeout(limits.shutdown_grace(), tracker.wait())
            .await
            .is_ok()
        {
            return Stopped { cut: 0 };
        }
        let cut = registry.len();
        force.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(1), tracker.wait()).await;
        Stopped { cut }
    }
}

/// Serves one connection until it ends, is evicted, or is cut at shutdown.
async fn connection<I>(
    io: I,
    conn: Arc<ConnState>,
    service: ConnService,
    limits: ServerLimits,
    graceful: CancellationToken,
    registry: Arc<Registry>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let _forget = Forget {
        registry,
        conn: Arc::clone(&conn),
    };
    let io = TokioIo::new(GuardedIo::new(io, Arc::clone(&conn), limits));
    let mut builder = http1::Builder::new();
    // Our own checks refuse first (`GuardedIo` sees every byte before hyper
    // does); these bound hyper's buffering.
    builder.max_buf_size(limits.max_header_bytes() + READ_BUFFER);
    // Up to hyper's default count, its header arrays stay on the stack; a
    // count set explicitly, even the same one, allocates and fills two
    // arrays on the heap for every request it parses.
    if limits.max_headers() > HYPER_MAX_HEADERS {
        builder.max_headers(limits.max_headers());
    }
    let served = builder.serve_connection(io, service);
    tokio::pin!(served);
    let mut draining = false;
    loop {
        tokio::select! {
            // The connection first: it is what wakes this task nearly every
            // time, and a fixed order spares drawing a random one per poll.
            biased;
            result = served.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(%error, "connection ended with an error");
                }
                break;
            }
            () = conn.closed() => break,
            () = graceful.cancelled(), if !draining => {
                draining = true;
                served.as_mut().graceful_shutdown();
            }
        }
    }
}

/// Removes a connection from the registry when its task ends, however.
struct Forget {
    registry: Arc<Registry>,
    conn: Arc<ConnState>,
}

impl Drop for Forget {
    fn drop(&mut self) {
        self.conn.ended();
        self.registry.remove(&self.conn);
    }
}

/// An accept failed. A client that left before being accepted needs nothing;
/// anything else is most likely the process out of file descriptors: close
/// the longest-idle connection to free one, and pause so as not to spin.
async fn accept_failed(registry: &Registry, error: &std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        error.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    let freed = registry.evict_idle();
    tracing::warn!(%error, freed, "accepting a connection failed");
    let pause = if freed { 10 } else { 100 };
    tokio::time::sleep(Duration::from_millis(pause)).await;
}
