//! Dropping a connection on purpose, without a reply.
//!
//! The `drop` and `crash_after_commit` faults must look, to the client,
//! exactly like a tool that died mid-request: the request was sent, and the
//! connection closes with no status line at all. axum's handlers can only
//! return responses, so the cut happens one layer down. Every accepted
//! socket is wrapped in a [`KillableStream`] (by [`killable`], the server's
//! connection setup); its kill switch reaches the handler through axum's
//! `ConnectInfo`. When a handler flips the switch, the stream fails every
//! read and write, hyper gives up on the connection, and the socket is
//! closed before a single byte of the response is written.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use axum::extract::ConnectInfo;
use axum::http::Extensions;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// Wraps an accepted stream so that handlers can kill it: the switch
/// travels in every request's `ConnectInfo<ConnectionHandle>`.
pub(crate) fn killable(stream: TcpStream, extensions: &mut Extensions) -> KillableStream {
    let killed = Arc::new(AtomicBool::new(false));
    extensions.insert(ConnectInfo(ConnectionHandle {
        killed: Arc::clone(&killed),
    }));
    KillableStream { stream, killed }
}

/// A TCP stream that fails all I/O once killed.
#[derive(Debug)]
pub(crate) struct KillableStream {
    stream: TcpStream,
    killed: Arc<AtomicBool>,
}

impl KillableStream {
    fn check(&self) -> io::Result<()> {
        if self.killed.load(Ordering::Acquire) {
            Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "connection dropped by fault injection",
            ))
        } else {
            Ok(())
        }
    }
}

impl AsyncRead for KillableStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.check()?;
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for KillableStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.check()?;
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.check()?;
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.check()?;
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

/// The kill switch of the connection a request arrived on.
#[derive(Debug, Clone)]
pub(crate) struct ConnectionHandle {
    killed: Arc<AtomicBool>,
}

impl ConnectionHandle {
    /// Makes the connection fail all further I/O: no reply will be written.
    pub(crate) fn kill(&self) {
        self.killed.store(true, Ordering::Release);
    }
}
