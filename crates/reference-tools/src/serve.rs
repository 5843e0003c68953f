//! Building the router and running the tools in-process.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use std::future::IntoFuture;

use axum::Router;
use axum::middleware;
use axum::routing::get;
use recourse_tool::{Capability, Stopped, ToolServer};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::config::ToolsConfig;
use crate::connection::killable;
use crate::currency::ConvertInput;
use crate::export_store::ExportStore;
use crate::exports::{ExportInput, ExportLookupInput};
use crate::fault::Fault;
use crate::faults::{FaultPlan, inject_faults};
use crate::orders::{OrderInput, RefundLedger};
use crate::stock::QuoteInput;
use crate::weather::WeatherInput;
use crate::{currency, exports, orders, stock, weather};

/// State shared by the handlers and the fault middleware.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) seed: u64,
    pub(crate) faults: FaultPlan,
    pub(crate) exports: ExportStore,
    pub(crate) refunds: RefundLedger,
    pub(crate) correctable_amounts: bool,
}

impl Shared {
    fn new(config: &ToolsConfig) -> Self {
        Self {
            seed: config.seed,
            faults: FaultPlan::new(
                config.seed,
                config.faults.clone(),
                config.slow_latency,
                config.retry_after,
            ),
            exports: ExportStore::new(config.seed),
            refunds: RefundLedger::default(),
            correctable_amounts: config.correctable_amounts,
        }
    }
}

/// The five tools as one router, with faults injected as configured.
///
/// Serve it yourself (with [`recourse_tool::serve`], say), or use [`spawn`],
/// which also makes the `drop` and `crash_after_commit` faults close the
/// connection cleanly (served plainly, they send headers and then break the
/// body instead).
pub fn router(config: &ToolsConfig) -> Router {
    build(Arc::new(Shared::new(config)), config.declare_lookups)
}

fn build(shared: Arc<Shared>, declare_lookups: bool) -> Router {
    ToolServer::new()
        .tool(
            Capability::post::<WeatherInput>(
                "weather_current",
                "/api/weather/current",
                "Current weather at a place written 'City, Region, Country'.",
            )
            .idempotent(),
            weather::current,
        )
        .tool(
            Capability::post::<QuoteInput>("stock_quote", "/api/stock/quote", "Latest price and recent closes of a stock by ticker symbol.")
                .idempotent(),
            stock::quote,
        )
        .tool(
            Capability::post::<ConvertInput>("currency_convert", "/api/currency/convert", "Convert an amount between two currencies at reference rates.")
                .idempotent(),
            currency::convert,
        )
        .tool(
            Capability::post::<OrderInput>("orders_lookup", "/api/orders/lookup", "Look up an order, its refund eligibility and any refund.")
                .idempotent(),
            orders::lookup,
        )
        .tool(
            Capability::post::<OrderInput>("orders_refund", "/api/orders/refund", "Refund a delivered order within 30 days of delivery. Refunding again returns the same refund.")
                .idempotent(),
            orders::refund,
        )
        .tool(
            {
                let create = Capability::post::<ExportInput>("exports_create", "/api/exports", "Export a data source version as pdf, docx or csv. Not idempotent: send an Idempotency-Key.");
                if declare_lookups {
                    create.with_reconcile("/api/exports/{operation_id}")
                } else {
                    create
                }
            },
            exports::create,
        )
        .tool(
            Capability::post::<ExportLookupInput>("exports_lookup", "/api/exports/lookup", "The committed exports of a data source in a format (and version, when given), oldest first, and the latest. A read: verifies an export by its inputs.")
                .idempotent(),
            exports::exports_of,
        )
        .route("/api/exports/{operation_id}", get(exports::lookup))
        .into_router()
        .with_state(Arc::clone(&shared))
        .layer(middleware::from_fn_with_state(shared, inject_faults))
}

/// The reference tools, running (on a loopback port unless bound elsewhere).
///
/// Dropping it stops the server; [`RunningTools::shutdown`] stops it gracefully.
#[derive(Debug)]
pub struct RunningTools {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    grace: Duration,
    task: JoinHandle<Stopped>,
}

/// The tools could not be started.
#[derive(Debug, thiserror::Error)]
#[error("could not listen on {addr}")]
pub struct SpawnError {
    addr: SocketAddr,
    #[source]
    source: io::Error,
}

/// Starts the tools on `config.bind:config.port` (by default 127.0.0.1 and a free port) in the current
/// Tokio runtime, served with `config.limits`; on loopback, only to requests
/// that name a loopback host (403 `HOST_NOT_ALLOWED` otherwise).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use recourse_reference_tools::{spawn, ToolsConfig};
///
/// let tools = spawn(ToolsConfig::default()).await.unwrap();
/// assert!(tools.base_url().starts_with("http://127.0.0.1:"));
/// assert_eq!(tools.exports_committed(), 0);
/// tools.shutdown().await;
/// # }
/// ```
///
/// # Errors
///
/// [`SpawnError`] when the port cannot be bound.
pub async fn spawn(config: ToolsConfig) -> Result<RunningTools, SpawnError> {
    let wanted = SocketAddr::new(config.bind, config.port);
    let bind_error = |source| SpawnError {
        addr: wanted,
        source,
    };
    let listener = TcpListener::bind(wanted).await.map_err(bind_error)?;
    let addr = listener.local_addr().map_err(bind_error)?;
    let shared = Arc::new(Shared::new(&config));
    let (stop, stopped) = oneshot::channel::<()>();
    let mut app = build(Arc::clone(&shared), config.declare_lookups);
    // Without authentication on loopback: only requests for a loopback host
    // (a web page cannot reach the tools by DNS rebinding). Bound beyond
    // loopback, they are served to whoever names them.
    if config.bind.is_loopback() {
        app = app.layer(recourse_tool::host::loopback_hosts_only());
    }
    let server = recourse_tool::serve(listener, app)
        .with_connection_setup(killable)
        .with_limits(config.limits)
        .with_graceful_shutdown(async {
            let _ = stopped.await;
        });
    Ok(RunningTools {
        addr,
        shared,
        stop: Some(stop),
        grace: config.limits.shutdown_grace(),
        task: tokio::spawn(server.into_future()),
    })
}

impl RunningTools {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDRESS:PORT` (`http://127.0.0.1:PORT` by default), without a trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// How many exports have been committed (replays not counted): the
    /// number to assert on for "exactly one write".
    pub fn exports_committed(&self) -> usize {
        self.shared.exports.committed()
    }

    /// How many export writes have started (a new operation each, committed
    /// or not yet): the tool has the request.
    pub fn exports_started(&self) -> usize {
        self.shared.exports.started()
    }

    /// Replaces the injected faults; call counters (and so the seeded
    /// sequence) carry on.
    pub fn set_faults(&self, faults: Vec<Fault>) {
        self.shared.faults.set(faults);
    }

    /// The faults currently injected.
    pub fn faults(&self) -> Vec<Fault> {
        self.shared.faults.current()
    }

    /// Stops accepting connections and lets open ones finish, for at most
    /// the shutdown grace of its limits; then closes those left.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        // The server bounds its own shutdown; this only guards against a
        // server task that died.
        let bound = self.grace + Duration::from_secs(2);
        if let Ok(Ok(stopped)) = tokio::time::timeout(bound, &mut self.task).await {
            if stopped.connections_cut() > 0 {
                tracing::warn!(
                    cut = stopped.connections_cut(),
                    "closed connections still open after the shutdown grace"
                );
            }
        } else {
            self.task.abort();
        }
    }
}

impl Drop for RunningTools {
    fn drop(&mut self) {
        self.task.abort();
    }
}
