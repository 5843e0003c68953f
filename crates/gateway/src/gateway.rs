//! A running gateway's shared state: one executor (so one retry budget, one
//! set of breakers, one corrector) and one metrics registry for every
//! request, the allowlists, the journal, readiness, and the calls still
//! running.

use std::sync::Arc;
use std::time::Duration;

use recourse::Executor;
use recourse::call::KeyScope;
use recourse::clock::Clock;
use recourse::journal::{Journal, SettleOptions, prune, sweep};
use recourse::metrics::Metrics;
use recourse::target::TargetAllowlist;
use tokio::sync::{Notify, Semaphore};

use crate::guard::{CommandPattern, Targets};
use crate::ready::Readiness;
use crate::sessions::Sessions;
use recourse_door::{Caller, Callers};

/// A gateway, built by [`GatewayConfig::build`](crate::config::GatewayConfig::build);
/// serve it with [`router`](crate::routes::router).
pub struct Gateway {
    /// The standard executor over HTTP: one retry budget, one set of
    /// breakers and one corrector for every request (MCP calls share them
    /// through [`Executor::with_transport`]).
    pub(crate) executor: Arc<Executor>,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) targets: Targets,
    /// The MCP servers it may start, their tool policies, the variables they get.
    pub(crate) mcp: McpServers,
    /// Who may call, and who may decide what they asked.
    pub(crate) callers: CallerRules,
    /// How a journaled call is settled (the sweeper's, the reconcile
    /// route's): lease, limits, allowlist, the headers lookups and reads send.
    pub(crate) settle: SettleOptions,
    /// Where keyed and non-idempotent calls are recorded; `None` without a journal.
    pub(crate) journal: Option<Arc<dyn Journal>>,
    pub(crate) readiness: Readiness,
    /// Who is logged in to the console, by session.
    pub(crate) sessions: Sessions,
    /// The call path both doors share: the journal, the tracker that
    /// finishes a write whose client stopped waiting (shutdown waits for it,
    /// approved calls dispatched here among them), the lease.
    pub(crate) door: recourse_door::Door,
    /// What approvals expire by (its wall time), and the sweeper's lookups
    /// wait on: real time, unless a test injects its own.
    pub(crate) clock: Arc<dyn Clock>,
    /// What a `GET /v1/calls/{call_id}` with `Prefer: wait` waits on.
    pub(crate) waiting: Waiting,
    /// The endpoints each caller has called (at most
    /// [`MAX_ENDPOINTS_PER_CALLER`] each): what `/metrics` and the console's
    /// breakers show a caller who is no admin.
    pub(crate) endpoints:
        std::sync::Mutex<std::collections::HashMap<String, std::collections::HashSet<String>>>,
}

/// Who may call a gateway, and who may decide what they asked.
#[derive(Debug)]
pub(crate) struct CallerRules {
    /// Who may call, by token; `None` when the gateway has no token.
    pub(crate) known: Option<Arc<Callers>>,
    /// Without a token (and unless told to serve any host): only requests
    /// naming a loopback host are served.
    pub(crate) loopback_hosts_only: bool,
    /// Whether the caller that asked for an approval may decide it
    /// (`--allow-self-approval`, for one-person setups).
    pub(crate) self_approval_allowed: bool,
}

/// What a `GET /v1/calls/{call_id}` with `Prefer: wait` waits on.
#[derive(Debug)]
pub(crate) struct Waiting {
    /// Told whenever a call this gateway holds changes (an approval
    /// decided, an approved call's end): what a wait listens for besides
    /// the journal it polls.
    pub(crate) changed: Arc<Notify>,
    /// How many requests may wait at once
    /// ([`MAX_WAITS`](crate::wait::MAX_WAITS)); past it, a request is
    /// answered at once, its wait not applied.
    pub(crate) permits: Arc<Semaphore>,
}

impl Default for Waiting {
    fn default() -> Self {
        Self {
            changed: Arc::default(),
            permits: Arc::new(Semaphore::new(crate::wait::MAX_WAITS)),
        }
    }
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("executor", &self.executor)
            .field("journal", &self.journal.is_some())
            .field("callers", &self.callers)
            .finish_non_exhaustive()
    }
}

/// The most endpoints remembered for one caller's views.
pub(crate) const MAX_ENDPOINTS_PER_CALLER: usize = 1024;

/// The MCP servers a gateway may start: which command lines, the tool
/// policies that govern them, the variables they are given.
pub(crate) struct McpServers {
    pub(crate) commands: Vec<CommandPattern>,
    /// The operator's tool policies for the MCP servers whose command line
    /// a pattern matches (`--mcp-policy 'PATTERN=FILE'`): a tool that waits
    /// for a person there is held here too.
    pub(crate) policies: Vec<(CommandPattern, recourse_door::ToolPolicies)>,
    pub(crate) env: Vec<String>,
}
impl Gateway {
    /// The approval a call of MCP `tool` on the server started by `program
    /// args` needs under the policy files of `--mcp-policy`, if any: the
    /// first file whose pattern matches the command line and that names the
    /// tool decides.
    pub(crate) fn mcp_policy_approval(
        &self,
        program: &str,
        args: &[String],
        tool: &str,
    ) -> Option<recourse::approval::Required> {
        self.mcp
            .policies
            .iter()
            .filter(|(pattern, _)| pattern.matches(program, args))
            .find_map(|(_, policies)| policies.get(tool))
            .and_then(|policy| policy.approval.as_ref())
            .and_then(|approval| approval.required().ok())
    }

    /// Remembers that `caller` called `endpoint`, for its views of the breakers.
    pub(crate) fn note_endpoint(&self, caller: &Caller, endpoint: &str) {
        if caller.is_admin() {
            return;
        }
        let mut by_caller = self
            .endpoints
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Known already (nearly every call): nothing is allocated.
        if by_caller
            .get(caller.name())
            .is_some_and(|mine| mine.contains(endpoint))
        {
            return;
        }
        let mine = by_caller.entry(caller.name().to_owned()).or_default();
        if mine.len() < MAX_ENDPOINTS_PER_CALLER {
            mine.insert(endpoint.to_owned());
        }
    }

    /// Whether `caller` sees `endpoint`'s breaker: an admin every one, any
    /// other caller those it called.
    pub(crate) fn sees_endpoint(&self, caller: &Caller, endpoint: &str) -> bool {
        caller.is_admin()
            || self
                .endpoints
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(caller.name())
                .is_some_and(|mine| mine.contains(endpoint))
    }

    /// Whether someone may approve a call `asker` asks for: an approver
    /// other than the asker exists, or the asker may approve its own.
    pub(crate) fn someone_may_approve(&self, asker: &str) -> bool {
        self.callers.self_approval_allowed
            || self
                .callers
                .known
                .as_deref()
                .is_some_and(|callers| callers.has_approver_besides(asker))
    }

    /// Whose key space a caller's idempotency key is in: its own when the
    /// gateway has named callers.
    pub(crate) fn key_scope(&self) -> KeyScope {
        self.callers
            .known
            .as_deref()
            .map_or(KeyScope::Shared, Callers::key_scope)
    }

    /// How many `GET /v1/calls/{call_id}` requests wait now (`Prefer: wait`).
    pub fn waiting(&self) -> usize {
        crate::wait::MAX_WAITS - self.waiting.permits.available_permits()
    }

    /// The executor every request shares.
    pub fn executor(&self) -> &Arc<Executor> {
        &self.executor
    }

    /// The calls' metrics (what `/metrics` renders).
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The journal, when the gateway keeps one.
    pub fn journal(&self) -> Option<&Arc<dyn Journal>> {
        self.journal.as_ref()
    }

    /// Where the gateway's calls, lookups and reads may go.
    pub fn allowlist(&self) -> Arc<TargetAllowlist> {
        self.targets.allowlist()
    }

    /// From now on `/readyz` answers 503 `draining`: a load balancer stops
    /// sending while the gateway still serves.
    pub fn start_draining(&self) {
        self.readiness.start_draining();
    }

    /// Settles, in the background and for as long as the runtime runs, the
    /// in-flight calls whose lease has run out — left by a gateway (this
    /// one before a restart, or another replica) that stopped mid-call —
    /// through their recorded read or lookup, or leaves them unknown; never
    /// resends. It looks at once, then every sweep interval (half a
    /// lease, at least a second), so an orphan is settled within its lease
    /// and one interval. Every replica sweeps; the lease decides which one
    /// settles a call. Lookups and reads go only where the gateway's
    /// allowlist allows. What it settled is reported to `report`, one line each.
    pub fn sweep(&self, report: impl Fn(String) + Send + Sync + 'static) {
        let Some(journal) = self.journal.clone() else {
            return;
        };
        tokio::spawn(sweep(journal, self.settle.clone(), report));
    }

    /// Removes, in the background, finished calls last changed more than
    /// `retain` ago — at once, then every hour (at most every tenth of
    /// `retain`) — never one `in_flight` or `unknown`. A zero `retain` keeps
    /// everything. What it removed is reported to `report`.
    pub fn prune(&self, retain: Duration, report: impl Fn(String) + Send + Sync + 'static) {
        let Some(journal) = self.journal.clone() else {
            return;
        };
        if retain.is_zero() {
            return;
        }
        tokio::spawn(prune(journal, retain, Arc::clone(&self.clock), report));
    }

    /// Stops taking new calls into account and waits, at most `grace`, for
    /// the running ones to finish: how many were still running after it
    /// (they stay in flight in the journal, for a later start or another
    /// replica to settle once their lease runs out).
    pub async fn finish_calls(&self, grace: Duration) -> usize {
        self.door.finish_calls(grace).await
    }
}
