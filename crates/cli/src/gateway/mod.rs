//! `recourse serve`: the executor as an HTTP service, for agents in any language.
//!
//! One retry budget, one set of circuit breakers, one corrector and one
//! metrics registry are shared by every request. Secure by default: it binds
//! 127.0.0.1, calls only loopback targets unless `--allow-target` says
//! otherwise, starts MCP server processes only for command lines an
//! `--allow-mcp-command` pattern matches (with a cleared environment),
//! requires `RECOURSE_GATEWAY_TOKEN` as a bearer token when set (and refuses
//! to bind beyond loopback without one, unless told `--insecure-no-auth`),
//! caps request bodies, and serves with
//! [`ServerLimits`](recourse_tool::ServerLimits) on time, connections and
//! requests in flight. SIGTERM or Ctrl-C turns `/readyz` to 503 `draining`,
//! keeps serving for `--drain-delay`, then stops accepting and lets
//! in-flight calls finish, for at most the shutdown grace.
//!
//! Several gateways make a fleet: `--shared-state redis://…` shares the
//! retry budget and breakers between them (`fleet.rs`); `/healthz` and
//! `/readyz` answer load balancers without a token (`ready.rs`).

mod auth;
mod finish;
mod fleet;
mod guard;
mod journal;
mod keyed;
mod openapi;
mod ready;
mod records;
mod request;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use clap::Args;
use recourse::manifest::CapabilityManifests;
use recourse::metrics::Metrics;
use recourse::shared::SharedState;
use recourse::{CallBuilder, Executor, HttpTransport, Target, Transport};
use recourse_tool::protocol::ToolError;
use recourse_tool::{ToolFailure, ToolJsonBody, ToolServer};

use crate::server_limits::LimitArgs;
use crate::settings::Settings;
use guard::{CommandPattern, Targets};
use request::CallRequest;

/// The largest request body the gateway reads.
const BODY_LIMIT: usize = 1024 * 1024;

/// Arguments of `recourse serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Port to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 8780)]
    port: u16,
    /// Address to bind. Anything but loopback exposes the gateway to the network,
    /// and needs RECOURSE_GATEWAY_TOKEN (or --insecure-no-auth).
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// Allow binding beyond loopback without RECOURSE_GATEWAY_TOKEN: anyone who can
    /// reach the port can make the gateway call its targets.
    #[arg(long)]
    insecure_no_auth: bool,
    /// Allow targets matching PATTERN besides loopback: `[http[s]://]HOST[:PORT][/PATH]`, where
    /// HOST is exact, `*.DOMAIN` or `*`, PORT a number or `*`, and PATH exact or ending in `/*`
    /// (e.g. `*.example.com`, `https://api.example.com/v1/*`, `http://127.0.0.1:*`). Repeatable.
    #[arg(long = "allow-target", value_name = "PATTERN")]
    allow_targets: Vec<String>,
    /// Allow `mcp.command` requests whose whole command line matches PATTERN: the program,
    /// named exactly, then its arguments, where `*` matches one argument and a trailing `**`
    /// any remaining ones (e.g. 'node /opt/servers/fs.js *'). Repeatable; without it the
    /// gateway starts no processes.
    #[arg(long = "allow-mcp-command", value_name = "PATTERN")]
    allow_mcp_commands: Vec<String>,
    /// Pass this environment variable to MCP server processes; they get only PATH, HOME,
    /// LANG, LANGUAGE, LC_*, TZ and these. Repeatable.
    #[arg(long = "mcp-env", value_name = "NAME")]
    mcp_env: Vec<String>,
    #[command(flatten)]
    limits: LimitArgs,
    #[command(flatten)]
    lease: crate::settings::LeaseArg,
    /// Where keyed and non-idempotent calls are journaled: a SQLite path, a postgres:// URL,
    /// or `none` (then requests with an idempotency_key are refused) [env: RECOURSE_JOURNAL]
    /// [default: $XDG_STATE_HOME/recourse/gateway.db].
    #[arg(long, value_name = "PATH|URL|none", value_parser = crate::settings::location)]
    journal: Option<String>,
    #[command(flatten)]
    fleet: fleet::FleetArgs,
    /// Check the flags and settings, say what would be served, and exit without serving
    /// (nothing is bound and no Redis is asked).
    #[arg(long)]
    check: bool,
}

struct Gateway {
    /// The standard executor over HTTP: one retry budget, one set of
    /// breakers and one corrector for every request (MCP calls share them
    /// through [`Executor::with_transport`]).
    executor: Arc<Executor>,
    metrics: Arc<Metrics>,
    targets: Targets,
    mcp_commands: Vec<CommandPattern>,
    mcp_env: Vec<String>,
    token: Option<String>,
    /// Where keyed and non-idempotent calls are recorded; `None` with `--journal none`.
    journal: Option<Arc<dyn recourse::Journal>>,
    readiness: ready::Readiness,
    /// Every call runs in a task of its own (a client that stops waiting
    /// must not cancel a write); shutdown waits for these too.
    calls: tokio_util::task::TaskTracker,
}

pub(crate) async fn serve(args: &ServeArgs, settings: &Settings) -> Result<i32> {
    let limits = args.limits.limits()?;
    check_exposure(args, settings.gateway_token.as_deref())?;
    let shared_state = args.fleet.shared_state(settings)?;
    let shared_words = match &shared_state {
        Some(_) => "shared state: on",
        None => "shared state: off",
    };
    let shared = match shared_state {
        Some(builder) if !args.check => Some(fleet::connect(builder).await),
        _ => None,
    };
    let gateway = Arc::new(gateway(args, settings, shared).await?);
    crate::telemetry::export_executor_metrics(&gateway.metrics, &gateway.executor);
    if args.check {
        outln!(
            "configuration ok: would serve on http://{} ({shared_words})",
            SocketAddr::new(args.bind, args.port)
        );
        return Ok(0);
    }
    let listener = tokio::net::TcpListener::bind(SocketAddr::new(args.bind, args.port))
        .await
        .with_context(|| format!("binding {}:{}", args.bind, args.port))?;
    let addr = listener.local_addr()?;
    outln!("recourse gateway listening on http://{addr}");
    if let Some(journal) = &gateway.journal {
        journal::settle_abandoned(
            Arc::clone(journal),
            gateway.executor.config(),
            gateway.targets.allowlist(),
        );
    }
    let stopped = recourse_tool::serve(listener, router(Arc::clone(&gateway)))
        .with_limits(limits)
        .with_graceful_shutdown(drain(Arc::clone(&gateway), args.fleet.drain_delay()))
        .await;
    match stopped.connections_cut() {
        0 => {}
        n => eprintln!(
            "closed {n} connection(s) still open after the {:?} shutdown grace",
            args.limits.shutdown_grace()
        ),
    }
    // Calls whose clients stopped waiting are still running: they get the
    // grace too, and what is left stays in flight in the journal, for a
    // later start (or another replica) to settle once its lease runs out.
    gateway.calls.close();
    let grace = args.limits.shutdown_grace();
    match tokio::time::timeout(grace, gateway.calls.wait()).await {
        Ok(()) => eprintln!("gateway stopped; in-flight calls finished"),
        Err(_) => eprintln!(
            "gateway stopped; {} call(s) still running after the {grace:?} shutdown grace were \
             left in flight in the journal",
            gateway.calls.len()
        ),
    }
    Ok(0)
}

/// Refuses to listen beyond loopback without a token, unless told to.
fn check_exposure(args: &ServeArgs, token: Option<&str>) -> Result<()> {
    if args.bind.is_loopback() {
        return Ok(());
    }
    match (token, args.insecure_no_auth) {
        (Some(_), _) => Ok(()),
        (None, true) => {
            eprintln!(
                "warning: bound to {} without RECOURSE_GATEWAY_TOKEN (--insecure-no-auth): \
                 anyone who can reach it can make calls",
                args.bind
            );
            Ok(())
        }
        (None, false) => bail!(
            "refusing to bind {} without RECOURSE_GATEWAY_TOKEN: set a token, bind 127.0.0.1, \
             or pass --insecure-no-auth to expose the gateway without authentication",
            args.bind
        ),
    }
}

/// The gateway `args` describe; the journal is opened last, once every
/// flag has been checked, so a refused start leaves nothing on disk.
/// With `--check`, no journal is opened.
async fn gateway(
    args: &ServeArgs,
    settings: &Settings,
    shared: Option<Arc<recourse::shared::RedisSharedState>>,
) -> Result<Gateway> {
    let token = settings.gateway_token.clone();
    let mut config = settings.executor.clone();
    args.lease.apply(&mut config);
    let chain = Arc::new(settings.chain(&config)?);
    let transport = Arc::new(HttpTransport::builder().build()?);
    let targets = Targets::new(&args.allow_targets).map_err(anyhow::Error::msg)?;
    let mcp_commands = args
        .allow_mcp_commands
        .iter()
        .map(|p| CommandPattern::new(p))
        .collect::<Result<_, _>>()
        .map_err(anyhow::Error::msg)?;
    guard::check_mcp_env(&args.mcp_env).map_err(anyhow::Error::msg)?;
    // Manifests are read only where targets may be called.
    let manifests = CapabilityManifests::new().with_allowlist(targets.allowlist());
    let mut executor =
        Executor::standard(transport, config, chain)?.with_manifests(Arc::new(manifests));
    let shared = shared.map(|s| s as Arc<dyn SharedState>);
    if let Some(shared) = &shared {
        executor = executor.with_shared_state(Arc::clone(shared));
    }
    let journal = match args.check {
        true => None,
        false => journal::open(settings.journal(args.journal.as_deref())).await?,
    };
    if let Some(journal) = &journal {
        executor = executor.with_journal(Arc::clone(journal));
    }
    Ok(Gateway {
        executor: Arc::new(executor.build()),
        metrics: Arc::default(),
        targets,
        mcp_commands,
        mcp_env: args.mcp_env.clone(),
        token,
        readiness: ready::Readiness::new(journal.clone(), shared),
        calls: tokio_util::task::TaskTracker::new(),
        journal,
    })
}

fn router(gateway: Arc<Gateway>) -> Router {
    ToolServer::<Arc<Gateway>>::new()
        .route("/v1/calls", post(calls).get(records::list))
        .route("/v1/calls/{call_id}", get(records::one))
        .route("/v1/calls/{call_id}/reconcile", post(records::reconcile))
        .route(
            "/healthz",
            get(|State(g): State<Arc<Gateway>>| async move { g.readiness.healthz() }),
        )
        .route(
            "/readyz",
            get(|State(g): State<Arc<Gateway>>| async move { g.readiness.readyz().await }),
        )
        .route("/metrics", get(metrics))
        .route("/openapi.json", get(|| async { Json(openapi::document()) }))
        .with_body_limit(BODY_LIMIT)
        .into_router_with(auth::layer(gateway.token.as_deref()))
        .with_state(gateway)
}

async fn calls(
    State(g): State<Arc<Gateway>>,
    headers: HeaderMap,
    ToolJsonBody(body): ToolJsonBody,
) -> Response {
    keyed::call(&g, headers, body).await
}

/// The executor and the (unchecked) call a request asks for; `payload` is
/// the request's, taken out of it so that it is moved, not copied.
async fn resolve(
    g: &Gateway,
    req: &CallRequest,
    payload: serde_json::Value,
) -> Result<(Arc<Executor>, CallBuilder), ToolFailure> {
    if let Some(template) = &req.reconcile {
        g.targets.check_template(template)?;
    }
    if let Some(url) = req.verify.as_ref().and_then(|v| v.url.as_deref()) {
        g.targets.check("verify.url", url)?;
    }
    match (&req.mcp, req.url.as_deref()) {
        (Some(_), Some(_)) => Err(invalid_target("give url or mcp, not both").into()),
        (Some(mcp), None) => {
            // Boxed: starting an MCP session is a large future, and every
            // call's state would otherwise be sized for it.
            let (transport, call) = Box::pin(mcp_call(g, req, mcp, payload)).await?;
            Ok((Arc::new(g.executor.with_transport(transport)), call))
        }
        (None, Some(url)) => {
            let target = g.targets.call_target("url", url)?;
            let call = req.call(target, payload, &g.targets.allowlist(), g.executor.config())?;
            Ok((Arc::clone(&g.executor), call))
        }
        (None, None) => Err(
            ToolError::input_error("MISSING_REQUIRED_FIELD", "give url (or mcp)")
                .retryable(true)
                .detail("field", "url")
                .into(),
        ),
    }
}

fn invalid_target(message: &str) -> ToolError {
    ToolError::input_error("INVALID_TARGET", message).detail("field", "mcp")
}

/// `mcp: {command | url, tool}`: a session with the MCP server, its tool aimed at.
/// URLs pass the same allowlist as HTTP targets; commands only when an
/// `--allow-mcp-command` pattern matches the whole command line, and they
/// start with a cleared environment plus `--mcp-env` names.
async fn mcp_call(
    g: &Gateway,
    req: &CallRequest,
    mcp: &serde_json::Value,
    payload: serde_json::Value,
) -> Result<(Arc<dyn Transport>, CallBuilder), ToolFailure> {
    let tool = mcp["tool"].as_str().filter(|t| !t.trim().is_empty());
    let Some(tool) = tool else {
        return Err(invalid_target("mcp.tool is required").into());
    };
    let target = match (mcp["command"].as_str(), mcp["url"].as_str()) {
        (Some(line), None) => {
            let target = recourse_mcp::McpTarget::command_line(line)
                .map_err(|e| invalid_target(&e.to_string()))?;
            if let recourse_mcp::McpTarget::Command { program, args, .. } = &target
                && !g.mcp_commands.iter().any(|p| p.matches(program, args))
            {
                return Err(ToolError::permission_denied(
                    "COMMAND_NOT_ALLOWED",
                    format!(
                        "this gateway starts no MCP server {target}; start it with an --allow-mcp-command \
                         pattern matching the whole command line (e.g. --allow-mcp-command '{program} **')"
                    ),
                )
                .into());
            }
            target
                .with_pass_env(g.mcp_env.iter().cloned())
                .map_err(|e| invalid_target(&e.to_string()))?
        }
        (None, Some(url)) => {
            let target = g.targets.check("mcp", url)?;
            recourse_mcp::McpTarget::url(target.as_str())
                .map_err(|e| invalid_target(&e.to_string()))?
        }
        _ => return Err(invalid_target("mcp needs exactly one of command or url").into()),
    };
    let name = Target::parse(tool).map_err(|e| invalid_target(&e.to_string()))?;
    let call = req.call(name, payload, &g.targets.allowlist(), g.executor.config())?;
    let config = g.executor.config();
    let deadline = req
        .deadline_secs
        .and_then(|s| std::time::Duration::try_from_secs_f64(s).ok())
        .or(config.deadline);
    let (transport, mut call) =
        crate::mcp::connect(target, tool, call, config.request_timeout, deadline, None)
            .await
            .map_err(|e| {
                ToolFailure::from(
                    ToolError::service_error("MCP_UNAVAILABLE", format!("{e:#}")).retryable(true),
                )
            })?;
    if req.verify.as_ref().is_some_and(|v| v.url.is_some()) {
        let http = HttpTransport::builder()
            .build()
            .map_err(|e| ToolError::service_error("HTTP_CLIENT", e.to_string()))?;
        call = call.verify_transport(Arc::new(http));
    }
    Ok((transport, call))
}

async fn metrics(State(g): State<Arc<Gateway>>) -> Response {
    let mut text = g.metrics.render(
        g.executor.retry_budget().map(AsRef::as_ref),
        g.executor.circuit_breakers().map(AsRef::as_ref),
    );
    if let Some(shared) = g.executor.shared_state() {
        text.push_str(&Metrics::render_shared_state(shared.mode()));
    }
    ([(CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

/// Resolves when the server should stop accepting: on SIGTERM or Ctrl-C
/// `/readyz` turns to 503 `draining` at once, then `delay` passes.
async fn drain(g: Arc<Gateway>, delay: std::time::Duration) {
    shutdown_signal().await;
    g.readiness.start_draining();
    if delay.is_zero() {
        return;
    }
    eprintln!("draining: /readyz answers 503; still serving for {delay:?}");
    tokio::time::sleep(delay).await;
}

async fn shutdown_signal() {
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
