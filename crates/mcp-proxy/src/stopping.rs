//! How a proxy stops: no new call taken, the writes in flight finished and
//! journaled, then each upstream closed as MCP says a stdio server is.
//!
//! # Why in this order
//!
//! An MCP client ends a stdio server by closing its stdin, then — if it
//! has not exited — by SIGTERM, then SIGKILL; a person at a terminal, by
//! Ctrl-C. Whichever comes, a write the proxy has sent may commit: ended
//! mid-call, it is left `in_flight` for a sweeper to settle, and its server,
//! its pipe cut, may die writing to it (an `EPIPE` stack trace on the
//! client's log). So a stopping proxy refuses new calls (the client is told
//! to call again later: nothing was sent), waits for the writes in flight —
//! within their deadline, each finished and journaled, its answer still
//! reaching a client that waits — and only then closes each upstream: its
//! stdin closed, so that it exits by itself; SIGTERM if it has not a few
//! seconds later, SIGKILL after that ([`McpTransport::close`]).
//!
//! [`McpTransport::close`]: recourse_mcp::McpTransport::close

use std::future::Future;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{ErrorCode, ErrorData};

use crate::error::ProxyError;
use crate::proxy::McpProxy;
use recourse_door::Served;

/// The JSON-RPC error code of a call refused because the proxy is stopping
/// (in the range servers define for their own errors; nothing was sent).
pub const STOPPING: i32 = -32001;

impl McpProxy {
    /// Serves the client that started this process, over stdin and stdout,
    /// until it closes the session or `shutdown` resolves (SIGTERM, Ctrl-C);
    /// then stops as the module docs say: no new call, the calls
    /// that may write finished (each within its deadline; at most `grace`),
    /// each upstream closed.
    ///
    /// Nothing else may write to stdout meanwhile.
    ///
    /// # Errors
    /// The MCP handshake with the client failed.
    pub async fn serve_stdio_until(
        self,
        grace: Duration,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<Served, ProxyError> {
        let stdin = crate::stdin::stdin().map_err(|e| {
            ProxyError::unreachable("reading stdin on a thread of its own").caused_by(e)
        })?;
        self.serve_io_until(stdin, tokio::io::stdout(), grace, shutdown)
            .await
    }

    /// As [`serve_stdio_until`](Self::serve_stdio_until), over `reader` and
    /// `writer` (one JSON-RPC message a line).
    ///
    /// ```no_run
    /// # async fn demo(proxy: recourse_mcp_proxy::McpProxy) -> Result<(), recourse_mcp_proxy::ProxyError> {
    /// let (client, server) = tokio::io::duplex(64 * 1024);
    /// let (reader, writer) = tokio::io::split(server);
    /// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    /// let grace = proxy.calls_grace();
    /// let serving = tokio::spawn(proxy.serve_io_until(reader, writer, grace, async {
    ///     let _ = stopped.await;
    /// }));
    /// // `client` speaks MCP to the proxy; then the proxy is told to stop:
    /// let _ = stop.send(());
    /// let served = serving.await.unwrap()?;
    /// assert_eq!(served.calls_left, 0);
    /// # drop(client); Ok(()) }
    /// ```
    ///
    /// # Errors
    /// The MCP handshake with the client failed.
    pub async fn serve_io_until<R, W>(
        self,
        reader: R,
        writer: W,
        grace: Duration,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<Served, ProxyError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let proxy = self.clone();
        let running = self.serve((reader, writer)).await.map_err(|e| {
            ProxyError::unreachable("the MCP handshake with the client failed").caused_by(e)
        })?;
        let session = running.cancellation_token();
        let ended = running.waiting();
        tokio::pin!(ended, shutdown);
        let calls_left = tokio::select! {
            // The client closed the session: the writes it started are seen through.
            _ = &mut ended => proxy.stop(grace).await,
            () = &mut shutdown => {
                // Told to stop, the client still there: the answers of the
                // writes in flight reach it, then the session ends.
                let left = proxy.stop_calls(grace).await;
                session.cancel();
                let _ = ended.await;
                proxy.close_upstreams().await;
                left
            }
        };
        Ok(Served::new(calls_left, 0))
    }

    /// Stops taking calls, waits (at most `grace`) for the calls that may
    /// write, and closes each upstream: how many were left running.
    pub(crate) async fn stop(&self, grace: Duration) -> usize {
        let left = self.stop_calls(grace).await;
        self.close_upstreams().await;
        left
    }

    /// Stops taking calls and waits (at most `grace`) for the calls that
    /// may write: how many were left running.
    async fn stop_calls(&self, grace: Duration) -> usize {
        self.shared.stopping.store(true, Ordering::SeqCst);
        self.finish_calls(grace).await
    }

    /// Closes each upstream, all at once.
    async fn close_upstreams(&self) {
        let mut closing = tokio::task::JoinSet::new();
        for upstream in &self.shared.upstreams {
            let transport = std::sync::Arc::clone(&upstream.transport);
            closing.spawn(async move { transport.close().await });
        }
        while closing.join_next().await.is_some() {}
    }

    /// A call's refusal while the proxy stops; `None` while it serves.
    pub(crate) fn refuse_while_stopping(&self) -> Option<ErrorData> {
        self.shared.stopping.load(Ordering::SeqCst).then(|| {
            ErrorData::new(
                ErrorCode(STOPPING),
                "recourse mcp proxy is stopping: the call was not sent; call it again once the \
                 server is back",
                None,
            )
        })
    }
}
