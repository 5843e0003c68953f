//! Serving a gateway: the router behind the server limits of
//! `recourse-tool`, a drain before it stops accepting, and a grace for the
//! calls still running.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use recourse_tool::ServerLimits;
use tokio::net::TcpListener;

use crate::gateway::Gateway;
use crate::routes::router;
use recourse_door::Served;

/// How a gateway is served.
#[derive(Clone)]
pub struct ServeOptions {
    limits: ServerLimits,
    drain_delay: Duration,
    /// Sweep orphans and prune finished calls older than this (zero: keep
    /// them), reporting to the log.
    upkeep: Option<Duration>,
    log: Log,
}

/// Where serving reports what it does, one line each.
type Log = Arc<dyn Fn(String) + Send + Sync>;

impl std::fmt::Debug for ServeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeOptions")
            .field("limits", &self.limits)
            .field("drain_delay", &self.drain_delay)
            .field("upkeep", &self.upkeep)
            .finish_non_exhaustive()
    }
}

impl ServeOptions {
    /// Serves within `limits` (time, connections, requests in flight, the
    /// shutdown grace), stopping as soon as asked.
    pub fn new(limits: ServerLimits) -> Self {
        Self {
            limits,
            drain_delay: Duration::ZERO,
            upkeep: None,
            log: Arc::new(|_| {}),
        }
    }

    /// While serving, keeps the journal: settles the calls a stopped gateway
    /// left in flight once their lease runs out ([`Gateway::sweep`]), and
    /// removes finished calls last changed more than `retain` ago
    /// ([`Gateway::prune`]; zero keeps everything).
    #[must_use]
    pub fn with_upkeep(mut self, retain: Duration) -> Self {
        self.upkeep = Some(retain);
        self
    }

    /// Tells `log`, one line each, what the journal's upkeep settled and
    /// removed, and that the gateway drains.
    #[must_use]
    pub fn with_log(mut self, log: impl Fn(String) + Send + Sync + 'static) -> Self {
        self.log = Arc::new(log);
        self
    }

    /// After being asked to stop, keeps serving for `delay` with `/readyz`
    /// answering 503 `draining`, so a load balancer stops sending first.
    #[must_use]
    pub fn with_drain_delay(mut self, delay: Duration) -> Self {
        self.drain_delay = delay;
        self
    }
}

/// Serves `gateway` on `listener` until `shutdown` resolves; then `/readyz`
/// turns to 503 `draining` at once, the gateway keeps serving for the drain
/// delay, stops accepting, lets open requests finish within the limits'
/// shutdown grace, and gives the calls whose clients stopped waiting the
/// same grace.
pub async fn serve(
    gateway: Arc<Gateway>,
    listener: TcpListener,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Served {
    let grace = options.limits.shutdown_grace();
    let draining = Arc::clone(&gateway);
    let delay = options.drain_delay;
    let log = options.log;
    if let Some(retain) = options.upkeep {
        let (swept, pruned) = (Arc::clone(&log), Arc::clone(&log));
        gateway.sweep(move |line| swept(line));
        gateway.prune(retain, move |line| pruned(line));
    }
    let stopped = recourse_tool::serve(listener, router(Arc::clone(&gateway)))
        .with_limits(options.limits)
        .with_graceful_shutdown(async move {
            shutdown.await;
            draining.start_draining();
            if !delay.is_zero() {
                log(format!(
                    "draining: /readyz answers 503; still serving for {delay:?}"
                ));
                tokio::time::sleep(delay).await;
            }
        })
        .await;
    Served::new(gateway.finish_calls(grace).await, stopped.connections_cut())
}

/// Resolves on SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}
