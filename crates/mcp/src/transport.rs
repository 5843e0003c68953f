//! [`McpTransport`]: the executor's [`Transport`] for MCP servers.
//!
//! # Why one session, replaced rather than repaired
//!
//! An MCP session is stateful (a handshake, then requests), and a child
//! process that died or an HTTP session that dropped cannot be resumed. So the
//! transport keeps one live session, shared by concurrent calls, and drops it
//! whenever it fails mid-call or times out: the failure goes to the policy as a
//! transient transport failure (`failed_after_send` / `timed_out_after_send`,
//! which for a non-idempotent call means an unknown outcome), and the next
//! attempt starts a fresh process or session. A session found dead *before* a
//! call is replaced before anything is sent, so it costs no attempt.
//!
//! The SDK has no timeout of its own; every handshake and call here is bounded
//! by the request's timeout, together: waiting for another caller's handshake,
//! starting a session and the tool call share one attempt's time, so a server
//! that is slow to shake hands cannot stretch an attempt past its timeout.
//!
//! # Why rmcp does not re-initialise a Streamable HTTP session itself
//!
//! Left to itself, rmcp answers a session the server forgot (HTTP 404) by
//! starting a new one and resending the POSTs that got the 404, and fails
//! every call still waiting for its answer with a JSON-RPC `-32603` it makes
//! up: an error no type tells apart from a server's own, for a call that may
//! have run, and resends the policy never decided. This transport turns that
//! off. A 404'd call did not run, so it comes back as a failure before
//! sending and the next attempt starts a new session; a call whose answer
//! the dead session can no longer carry fails after sending (an unknown
//! outcome for a write), and is never resent blindly.
//!
//! A call is sent once per attempt (rmcp's `call_tool_once`): a server asking
//! for the user's input (`input_required`) stops the call, rather than have
//! rmcp answer for a user who is not there and send the call again.

use std::collections::BTreeSet;
use std::fmt;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use recourse::Transport;
use recourse::transport::{BoxFuture, Delivery, Request, TransportFailure, TransportFailureKind};
use recourse_protocol::mcp::IDEMPOTENCY_META_KEY;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, RequestMetaObject};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::Value;
use tokio::sync::{Mutex, broadcast};

use recourse_protocol::mcp::McpError;

use crate::access::HttpAccess;
use crate::changes::{CHANGES_BUFFERED, ListChange, UPDATES_BUFFERED, Watcher};
use crate::listed::ListedTools;
use crate::setup::SetupFailure;
use crate::target::McpTarget;
use crate::tool::McpTool;
use crate::{failure, http_session, reply, target};

/// How long setup may take when no request timeout applies.
const DEFAULT_SETUP_TIMEOUT: Duration = Duration::from_secs(30);

/// Calls the tools of one MCP server; a [`Request`]'s `target` is the tool name.
///
/// ```no_run
/// use recourse::{Call, Executor};
/// use recourse_mcp::{McpTarget, McpTransport};
/// use serde_json::json;
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let target = McpTarget::command_line("mcp-server-time --local-timezone UTC")?;
/// let transport = McpTransport::connect(target, std::time::Duration::from_secs(20)).await?;
/// let tool = transport.tool("get_current_time").await?.expect("the server has it");
/// let call = tool
///     .prepare(Call::builder("get_current_time", json!({"timezone": "America/New_York"})))
///     .build()?;
/// let report = Executor::builder(transport).build().execute(call).await;
/// println!("{}", report.to_json());
/// # Ok(()) }
/// ```
pub struct McpTransport {
    target: McpTarget,
    /// What a Streamable HTTP server needs besides its URL (headers, a login).
    access: Box<HttpAccess>,
    session: Mutex<Option<Arc<Session>>>,
    sessions_started: AtomicU64,
    /// The server's tools, as the live session last listed them.
    pub(crate) tools: Arc<ListedTools>,
    /// The list changes every session passes on.
    changes: broadcast::Sender<ListChange>,
    /// The resource updates every session passes on.
    pub(crate) updates: broadcast::Sender<String>,
    /// The resources subscribed to, subscribed again on every new session.
    pub(crate) subscribed: std::sync::Mutex<BTreeSet<String>>,
}

pub(crate) struct Session {
    pub(crate) service: RunningService<RoleClient, Watcher>,
}

impl Session {
    pub(crate) fn is_alive(&self) -> bool {
        !self.service.is_closed() && !self.service.is_transport_closed()
    }
}

impl fmt::Debug for McpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpTransport")
            .field("target", &self.target)
            .field("sessions_started", &self.sessions_started())
            .finish_non_exhaustive()
    }
}

impl McpTransport {
    /// A transport that starts its session on the first call.
    pub fn new(target: McpTarget) -> Self {
        Self {
            target,
            access: Box::default(),
            session: Mutex::new(None),
            sessions_started: AtomicU64::new(0),
            tools: Arc::default(),
            changes: broadcast::channel(CHANGES_BUFFERED).0,
            updates: broadcast::channel(UPDATES_BUFFERED).0,
            subscribed: std::sync::Mutex::default(),
        }
    }

    /// The same transport, reaching a Streamable HTTP server with `access`:
    /// its headers on every request, its OAuth login's tokens. No effect on
    /// a command.
    #[must_use]
    pub fn with_access(mut self, access: HttpAccess) -> Self {
        self.access = Box::new(access);
        self
    }

    /// A transport whose session is started now, so a command that cannot
    /// start or a server that does not answer is reported before any call.
    ///
    /// # Errors
    /// The process could not be started, or the handshake or `tools/list`
    /// failed or took longer than `timeout`.
    pub async fn connect(target: McpTarget, timeout: Duration) -> Result<Self, McpError> {
        let transport = Self::new(target);
        transport.live_session(timeout).await?;
        Ok(transport)
    }

    /// The server this transport talks to.
    pub fn target(&self) -> &McpTarget {
        &self.target
    }

    /// The lists the server says changed, on this session and every one
    /// started after it. A [`ListChange::Tools`] comes once the tools were
    /// read again, so [`listed_tools`](Self::listed_tools) and
    /// [`tools`](Self::tools) already give the new list.
    ///
    /// A receiver that falls behind by more than a few changes gets
    /// `RecvError::Lagged`: it should then read every list again.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use recourse_mcp::{ListChange, McpTarget, McpTransport};
    ///
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = McpTransport::new(McpTarget::command_line("mcp-server-everything")?);
    /// let mut changes = server.list_changes();
    /// let timeout = Duration::from_secs(20);
    /// while let Ok(change) = changes.recv().await {
    ///     if change == ListChange::Tools {
    ///         println!("{} tools now", server.listed_tools(timeout).await?.len());
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn list_changes(&self) -> broadcast::Receiver<ListChange> {
        self.changes.subscribe()
    }

    /// How many sessions (child processes, for a command) have been started.
    pub fn sessions_started(&self) -> u64 {
        self.sessions_started.load(Ordering::SeqCst)
    }

    /// The server's tools, from `tools/list` when the current session
    /// started, and again each time the server said they changed
    /// ([`list_changes`](Self::list_changes)).
    ///
    /// # Errors
    /// As [`connect`](Self::connect), when no session is live yet.
    pub async fn tools(&self) -> Result<Vec<McpTool>, McpError> {
        self.live_session(DEFAULT_SETUP_TIMEOUT).await?;
        Ok(self
            .tools
            .current()
            .iter()
            .map(McpTool::from_rmcp)
            .collect())
    }

    /// The tool named `name`, if the server has one.
    ///
    /// # Errors
    /// As [`tools`](Self::tools).
    pub async fn tool(&self, name: &str) -> Result<Option<McpTool>, McpError> {
        Ok(self.tools().await?.into_iter().find(|t| t.name == name))
    }

    /// The live session, starting one if there is none or it died: waiting
    /// for the lock (another caller's handshake) and the handshake together
    /// take at most `timeout`.
    pub(crate) async fn live_session(&self, timeout: Duration) -> Result<Arc<Session>, McpError> {
        self.live(timeout).await.map_err(McpError::from)
    }

    /// As [`live_session`](Self::live_session), saying what kind of
    /// transport failure a setup that failed is for a call.
    async fn live(&self, timeout: Duration) -> Result<Arc<Session>, SetupFailure> {
        let session = async {
            let mut slot = self.session.lock().await;
            if let Some(session) = slot.as_ref().filter(|s| s.is_alive()) {
                return Ok(Arc::clone(session));
            }
            *slot = None;
            let session = Arc::new(self.start().await?);
            *slot = Some(Arc::clone(&session));
            Ok(session)
        };
        tokio::time::timeout(timeout, session).await.map_err(|_| {
            SetupFailure::unreachable(McpError::unreachable(format!(
                "{} did not finish the MCP handshake within {timeout:?}",
                self.target
            )))
        })?
    }

    async fn start(&self) -> Result<Session, SetupFailure> {
        let number = self.sessions_started.fetch_add(1, Ordering::SeqCst) + 1;
        let watcher = Watcher {
            session: number,
            tools: Arc::clone(&self.tools),
            changes: self.changes.clone(),
            updates: self.updates.clone(),
        };
        let handshake = |e: &dyn fmt::Display| {
            SetupFailure::unreachable(McpError::unreachable(format!(
                "{}: the MCP handshake failed: {e}",
                self.target
            )))
        };
        let service = match &self.target {
            McpTarget::Command {
                program,
                args,
                pass_env,
            } => {
                let mut command = tokio::process::Command::new(program);
                // Killed when its handle drops, even when that is the
                // runtime shutting down before rmcp's own kill task runs.
                command
                    .args(args)
                    .kill_on_drop(true)
                    .env_clear()
                    .envs(target::child_env(std::env::vars_os(), pass_env));
                let (child, _) = TokioChildProcess::builder(command)
                    .stderr(Stdio::inherit())
                    .spawn()
                    .map_err(|e| {
                        SetupFailure::unreachable(
                            McpError::unreachable(format!("could not start {program:?}"))
                                .caused_by(e),
                        )
                    })?;
                watcher
                    .clone()
                    .serve(child)
                    .await
                    .map_err(|e| handshake(&e))?
            }
            McpTarget::Url(url) => {
                http_session::start(watcher.clone(), url, &self.access, &self.target).await?
            }
        };
        // Bounded by the caller's timeout for the whole setup.
        let changed = self
            .tools
            .read_again(number, service.peer(), Duration::MAX)
            .await
            .map_err(|e| SetupFailure::unreachable(e.context(&self.target.to_string())))?;
        if changed {
            // Started again, the server lists other tools than before.
            let _ = self.changes.send(ListChange::Tools);
        }
        self.subscribe_again(service.peer()).await;
        watcher.listen(service.peer());
        Ok(Session { service })
    }

    /// Forgets `session` if it is still the current one (its last holder's
    /// drop closes it, which ends a child process).
    pub(crate) async fn discard(&self, session: &Arc<Session>) {
        let mut slot = self.session.lock().await;
        if slot.as_ref().is_some_and(|s| Arc::ptr_eq(s, session)) {
            *slot = None;
        }
    }

    /// Calls `request`'s tool: what the executor reads of the exchange, and
    /// the server's result as it came, when it answered one — for a door
    /// that gives it to its own client (the MCP proxy) without reading it
    /// back from JSON.
    pub async fn call(&self, request: &Request) -> McpAnswer {
        let mut result = None;
        let delivery = self.deliver(request, &mut result).await;
        McpAnswer { delivery, result }
    }

    async fn deliver(&self, request: &Request, kept: &mut Option<CallToolResult>) -> Delivery {
        let Value::Object(arguments) = &request.payload else {
            return reply::arguments_not_object(&request.payload);
        };
        let started = Instant::now();
        let session = self
            .live(request.timeout)
            .await
            .map_err(|failed| failed.for_call())?;
        // The call gets what the handshake left of the attempt's time.
        let left = request.timeout.saturating_sub(started.elapsed());
        if left.is_zero() {
            return Err(TransportFailure::new(
                TransportFailureKind::ConnectFailed,
                format!(
                    "{}: the MCP session took the attempt's {:?}; the tool was not called",
                    self.target, request.timeout
                ),
            ));
        }
        let name = request.target.as_str();
        let tools = self.tools.current();
        if !tools.iter().any(|t| t.name == name) {
            let names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
            return reply::unknown_tool(name, &names);
        }
        let params = call_params(request, arguments);
        let answer = tokio::time::timeout(left, session.service.call_tool_once(params)).await;
        match answer {
            Ok(Ok(CallToolResponse::Complete(result))) => {
                let delivery = reply::completed(&result);
                *kept = Some(result);
                delivery
            }
            Ok(Ok(CallToolResponse::InputRequired(result))) => reply::input_required(&result),
            // A task (which this client never offers to follow) or a newer kind of answer.
            Ok(Ok(_)) => Err(TransportFailure::new(
                TransportFailureKind::FailedAfterSend,
                format!(
                    "{}: the server answered with something other than a tool result (a task?), \
                     which recourse does not follow; the call may be running",
                    self.target
                ),
            )),
            Ok(Err(error)) => {
                let failed = failure::read(&self.target, self.access.oauth_in_use(), error);
                if failed.ends_session {
                    self.discard(&session).await;
                }
                failed.delivery
            }
            Err(_) => {
                self.discard(&session).await;
                Err(TransportFailure::new(
                    TransportFailureKind::TimedOutAfterSend,
                    format!(
                        "{}: no answer within {:?}; the session was closed and the next attempt starts a new one",
                        self.target, request.timeout
                    ),
                ))
            }
        }
    }
}

/// `tools/call` parameters for `request`, carrying its idempotency key in
/// `_meta`: built as the typed request, not as JSON read back.
fn call_params(
    request: &Request,
    arguments: &serde_json::Map<String, Value>,
) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(request.target.as_str().to_owned())
        .with_arguments(arguments.clone());
    if let Some(key) = &request.idempotency_key {
        let mut meta = RequestMetaObject::new();
        meta.0
            .0
            .insert(IDEMPOTENCY_META_KEY.to_owned(), Value::from(key.as_str()));
        params.meta = Some(meta);
    }
    params
}

impl Transport for McpTransport {
    fn send<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Delivery> {
        Box::pin(async move { self.call(request).await.delivery })
    }
}

/// What a `tools/call` came to ([`McpTransport::call`]).
#[derive(Debug)]
pub struct McpAnswer {
    /// What the executor reads: the result already read, a JSON-RPC error
    /// as a body, or a transport failure.
    pub delivery: Delivery,
    /// The server's result as it came, when it answered one.
    pub result: Option<CallToolResult>,
}
