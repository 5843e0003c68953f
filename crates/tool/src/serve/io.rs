//! `GuardedIo`: the connection's bytes, watched between requests.
//!
//! hyper has one timer for an HTTP/1 connection waiting for a request —
//! `header_read_timeout` starts when hyper begins waiting, so it cannot tell
//! a kept-alive connection sitting quietly (fine for a minute) from one
//! dribbling a header byte every few seconds (not fine for long). This
//! wrapper can, because it sees the bytes: while no request is dispatched,
//! a connection that has sent nothing is held to the idle timeout (counted
//! from when it last became idle) and, from a request's first byte, to the
//! header timeout. It also measures the header block (see `head.rs`), and
//! writes the 408 and 431 refusals itself, then closes. And a response the
//! client does not read — no write progress for the idle timeout — is
//! abandoned, closing the connection, so a client that never reads cannot
//! hold a request slot and its response's memory forever.
//!
//! Where the next header block starts is known from the last request's
//! body length; bytes before it (a body hyper is draining) are not
//! measured. When that length is unknown (a chunked body), measuring
//! resumes once the body has been read to its end.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

use super::head::{HeadScanner, Scan};
use super::refusal::{headers_too_large, raw_response, timed_out};
use super::registry::ConnState;
use crate::serve::ServerLimits;

/// After writing a refusal, how long to read and discard what the client
/// still sends, so closing does not reset the connection before the client
/// has read the refusal.
const LINGER: Duration = Duration::from_secs(1);
/// The most bytes discarded while lingering.
const LINGER_BYTES: usize = 256 * 1024;

/// A connection's I/O with the between-request limits applied.
#[derive(Debug)]
pub(crate) struct GuardedIo<I> {
    inner: I,
    conn: Arc<ConnState>,
    limits: ServerLimits,
    scanner: HeadScanner,
    /// Bytes read from the connection so far.
    read_pos: u64,
    /// Where the header block being measured ended, once it has.
    head_end: Option<u64>,
    /// Bytes before this position are not part of a header block.
    scan_from: u64,
    head_started: Option<Instant>,
    seen_dispatched: u64,
    timer: Pin<Box<Sleep>>,
    timer_at: Option<Instant>,
    /// Running while a write waits for the client to read.
    write_stall: Pin<Box<Sleep>>,
    write_stalled: bool,
    refusal: Option<Refusal>,
}

#[derive(Debug)]
struct Refusal {
    bytes: Vec<u8>,
    written: usize,
    stage: Stage,
    discarded: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Write,
    Shutdown,
    Linger,
}

enum Wait {
    Open,
    IdleOver,
    HeadersOver,
}

impl<I> GuardedIo<I> {
    pub(crate) fn new(inner: I, conn: Arc<ConnState>, limits: ServerLimits) -> Self {
        Self {
            inner,
            conn,
            limits,
            scanner: HeadScanner::new(limits.max_header_bytes(), limits.max_headers()),
            read_pos: 0,
            head_end: None,
            scan_from: 0,
            head_started: None,
            seen_dispatched: 0,
            timer: Box::pin(tokio::time::sleep(Duration::ZERO)),
            timer_at: None,
            write_stall: Box::pin(tokio::time::sleep(Duration::ZERO)),
            write_stalled: false,
            refusal: None,
        }
    }

    /// Tracks a write's progress: `Err` once it has made none for the idle timeout.
    fn watch_write<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if polled.is_ready() {
            self.write_stalled = false;
            return polled;
        }
        if !self.write_stalled {
            self.write_stalled = true;
            let deadline = Instant::now() + self.limits.idle_timeout();
            self.write_stall.as_mut().reset(deadline);
        }
        match self.write_stall.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client stopped reading the response",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    /// Catches up with requests dispatched and bodies ended since the last read.
    fn follow_requests(&mut self) {
        let dispatched = self.conn.dispatched();
        if dispatched != self.seen_dispatched {
            self.seen_dispatched = dispatched;
            self.scan_from = match (self.head_end.take(), self.conn.last_body_len()) {
                (Some(end), Some(len)) => end.saturating_add(len),
                (None, Some(0)) => self.read_pos,
                _ => u64::MAX,
            };
            self.scanner.reset();
            self.head_started = None;
        }
        if self.scan_from == u64::MAX && self.conn.body_ended_for() == self.seen_dispatched {
            self.scan_from = self.read_pos;
        }
    }

    /// Everything hyper queued is written: lets go of the requests that
    /// waited for it. If that finished the last one, the idle timer starts
    /// here, as a read would start it, rather than by waking the connection's
    /// task to read again (a wake from inside the task also wakes an idle
    /// worker thread: a context switch per request under load).
    fn flushed(&mut self, cx: &mut Context<'_>) {
        self.conn.flushed_by_io();
        if self.conn.is_busy() || self.refusal.is_some() {
            return;
        }
        self.follow_requests();
        if !matches!(self.poll_wait(cx), Wait::Open) {
            // Already over: the next read decides, and must come.
            cx.waker().wake_by_ref();
        }
    }

    /// Polls the timer that applies while no request is dispatched.
    fn poll_wait(&mut self, cx: &mut Context<'_>) -> Wait {
        let deadline = match self.head_started {
            Some(start) => start + self.limits.header_timeout(),
            None => self.conn.idle_since() + self.limits.idle_timeout(),
        };
        if self.timer_at != Some(deadline) {
            self.timer.as_mut().reset(deadline);
            self.timer_at = Some(deadline);
        }
        match (self.timer.as_mut().poll(cx), self.head_started) {
            (Poll::Pending, _) => Wait::Open,
            (Poll::Ready(()), None) => Wait::IdleOver,
            (Poll::Ready(()), Some(_)) => Wait::HeadersOver,
        }
    }

    fn refuse(&mut self, status: u16, error: recourse_protocol::ToolError) {
        self.refusal = Some(Refusal {
            bytes: raw_response(status, error),
            written: 0,
            stage: Stage::Write,
            discarded: 0,
        });
    }

    /// Measures freshly read bytes; `Err` when they are refused.
    fn measure(&mut self, start: u64, fresh: &[u8]) -> Result<(), ()> {
        let skip = usize::try_from(self.scan_from.saturating_sub(start))
            .unwrap_or(usize::MAX)
            .min(fresh.len());
        let fresh = &fresh[skip..];
        if fresh.is_empty() {
            return Ok(());
        }
        if !self.scanner.started() {
            self.head_started = Some(Instant::now());
            self.conn.set_head_in_progress(true);
        }
        match self.scanner.feed(fresh) {
            Scan::Partial => Ok(()),
            Scan::Complete { used } => {
                self.head_end = Some(start + (skip + used) as u64);
                Ok(())
            }
            Scan::TooLarge => Err(()),
        }
    }
}

impl<I: AsyncRead + AsyncWrite + Unpin> GuardedIo<I> {
    /// Writes the refusal, shuts the write side, lingers, then fails the read
    /// so hyper closes the connection.
    fn poll_refusal(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Some(r) = self.refusal.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        let refused = || io::Error::new(io::ErrorKind::ConnectionAborted, "request refused");
        loop {
            match r.stage {
                Stage::Write => {
                    while r.written < r.bytes.len() {
                        let n = ready!(
                            Pin::new(&mut self.inner).poll_write(cx, &r.bytes[r.written..])
                        )?;
                        if n == 0 {
                            return Poll::Ready(Err(refused()));
                        }
                        r.written += n;
                    }
                    r.stage = Stage::Shutdown;
                }
                Stage::Shutdown => {
                    let _ = ready!(Pin::new(&mut self.inner).poll_shutdown(cx));
                    self.timer.as_mut().reset(Instant::now() + LINGER);
                    self.timer_at = None;
                    r.stage = Stage::Linger;
                }
                Stage::Linger => {
                    if self.timer.as_mut().poll(cx).is_ready() || r.discarded > LINGER_BYTES {
                        return Poll::Ready(Err(refused()));
                    }
                    let mut scratch = [0u8; 8192];
                    let mut buf = ReadBuf::new(&mut scratch);
                    ready!(Pin::new(&mut self.inner).poll_read(cx, &mut buf))?;
                    if buf.filled().is_empty() {
                        return Poll::Ready(Err(refused()));
                    }
                    r.discarded += buf.filled().len();
                }
            }
        }
    }
}

impl<I: AsyncRead + AsyncWrite + Unpin> AsyncRead for GuardedIo<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.refusal.is_some() {
            return this.poll_refusal(cx);
        }
        this.conn.register_io(cx.waker());
        this.follow_requests();
        let waiting = !this.conn.is_busy();
        if waiting {
            match this.poll_wait(cx) {
                Wait::Open => {}
                // End of stream: hyper closes an idle connection quietly.
                Wait::IdleOver => return Poll::Ready(Ok(())),
                Wait::HeadersOver => {
                    this.refuse(408, timed_out("headers", this.limits.header_timeout()));
                    return this.poll_refusal(cx);
                }
            }
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        let start = this.read_pos;
        this.read_pos += (buf.filled().len() - before) as u64;
        if waiting && this.measure(start, &buf.filled()[before..]).is_err() {
            buf.set_filled(before);
            let error =
                headers_too_large(this.limits.max_header_bytes(), this.limits.max_headers());
            this.refuse(431, error);
            return this.poll_refusal(cx);
        }
        Poll::Ready(Ok(()))
    }
}

impl<I: AsyncRead + AsyncWrite + Unpin> AsyncWrite for GuardedIo<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.watch_write(cx, polled)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.watch_write(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    /// hyper flushes the socket only once its own queue is written out.
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_flush(cx);
        if polled.is_ready() {
            this.flushed(cx);
        }
        polled
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Wake, Waker};

    use tokio::io::AsyncWriteExt;
    use tokio_util::sync::CancellationToken;

    use super::super::registry::Registry;
    use super::*;

    /// Counts its wakes.
    struct Counting(AtomicUsize);

    impl Wake for Counting {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Finishes its request when dropped, as a response's lease does.
    struct Finishes(Arc<ConnState>);

    impl Drop for Finishes {
        fn drop(&mut self) {
            self.0.request_finished();
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_flush_that_finishes_the_last_request_starts_the_idle_timer_without_a_wake() {
        let limits = ServerLimits::default();
        let conn = Registry::new(4).admit(CancellationToken::new()).unwrap();
        let (ours, mut theirs) = tokio::io::duplex(1024);
        let mut io = GuardedIo::new(ours, Arc::clone(&conn), limits);
        let counting = Arc::new(Counting(AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&counting));
        let mut cx = Context::from_waker(&waker);

        // A request was read (its waker registered) and is answered: its
        // response's lease waits for the flush.
        theirs.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
        let mut buf = [0u8; 64];
        let mut read = ReadBuf::new(&mut buf);
        assert!(Pin::new(&mut io).poll_read(&mut cx, &mut read).is_ready());
        conn.request_started(Some(0));
        conn.hold_until_flushed(Arc::new(Finishes(Arc::clone(&conn))));
        let before = io.timer_at;
        tokio::time::advance(Duration::from_secs(1)).await;

        assert!(Pin::new(&mut io).poll_flush(&mut cx).is_ready());
        assert!(!conn.is_busy());
        assert_eq!(counting.0.load(Ordering::SeqCst), 0, "not woken");
        assert_eq!(
            io.timer_at,
            Some(conn.idle_since() + limits.idle_timeout()),
            "the idle timer runs"
        );
        assert_ne!(io.timer_at, before, "from when the request finished");

        // A request finished anywhere else still wakes the connection.
        conn.request_started(Some(0));
        conn.request_finished();
        assert_eq!(counting.0.load(Ordering::SeqCst), 1);
    }
}
