//! [`McpProxy`] and its builder: the upstreams started, their tools listed
//! and offered, the operator's policy applied, and an executor per upstream.
//!
//! # Why an executor per upstream
//!
//! Circuit breakers are kept per endpoint, and an MCP tool's endpoint is its
//! name; two servers may both have a `read_file`. One upstream down must not
//! open the breaker of another's tool of the same name, so each upstream's
//! executor has breakers of its own. Everything else — the retry budget
//! (resends stay a fraction of all calls, whichever server they go to), the
//! corrector, the journal, shared state — is one for the whole proxy.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use recourse::budget::RetryBudget;
use recourse::shared::SharedState;
use recourse::{CorrectionChain, Executor, ExecutorConfig, Journal};
use recourse_door::Door;
use recourse_mcp::{ListChange, McpTransport};
use serde_json::Value;
use tokio::sync::broadcast;

use crate::capabilities;
use crate::catalog::{Catalog, Listing};
use crate::error::ProxyError;
use crate::listeners::Listeners;
use crate::subscribers::Subscriptions;
use crate::upstream::Upstream;
use recourse_door::policy::ToolPolicies;

/// How long an upstream may take to start and list its tools (a server
/// started through `npx` or `uvx` may first be downloaded).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// An MCP server in front of MCP servers: every `tools/call` runs through
/// the recourse executor. Serve it with [`serve_stdio`](Self::serve_stdio).
///
/// Cloning it is cheap; clones share everything (a clone serves the same
/// client session: [`streamable_http_router`](Self::streamable_http_router)
/// numbers each session's proxy anew).
#[derive(Clone)]
pub struct McpProxy {
    pub(crate) shared: Arc<Shared>,
    /// The client session this proxy serves (0 for stdio's one session).
    pub(crate) session: u64,
}

/// What every request of a proxy shares.
pub(crate) struct Shared {
    pub(crate) upstreams: Vec<Connected>,
    /// The tools offered, swapped whole when an upstream's change
    /// (read with [`catalog`](Self::catalog)).
    catalog: RwLock<Arc<Catalog>>,
    /// The operator's policy file, applied again to each new catalog.
    pub(crate) policies: ToolPolicies,
    /// Where calls that may write are journaled (keyed calls need it).
    pub(crate) journal: Option<Arc<dyn Journal>>,
    /// The call path both doors share: calls that may write run to their
    /// end whoever waits for them; approvals are held in the journal.
    pub(crate) door: Door,
    /// The capabilities offered to the client.
    pub(crate) capabilities: Value,
    /// The clients to tell when a list changes.
    pub(crate) listeners: Listeners,
    /// Held while a catalog is rebuilt, so rebuilds do not overtake each other.
    pub(crate) rebuilding: tokio::sync::Mutex<()>,
    /// Where a warning goes (a policy left out once serving, a failed relisting).
    pub(crate) warn: Warn,
    /// The clients subscribed to the one upstream's resources.
    pub(crate) subscriptions: Subscriptions,
    /// The client sessions numbered so far.
    pub(crate) sessions: AtomicU64,
    /// Stopping: no new call is taken (see `stopping`).
    pub(crate) stopping: AtomicBool,
    /// The approved calls being sent now (see `approved`).
    pub(crate) sending: crate::sending::Sending,
    /// What seals a 2026-07-28 client's approval state, once read from the
    /// journal (see `sealed`).
    pub(crate) seal: tokio::sync::OnceCell<Option<crate::sealed::Seal>>,
}

/// Where a proxy's warnings go, one line each.
pub(crate) type Warn = Arc<dyn Fn(String) + Send + Sync>;

impl Shared {
    /// What seals a client's approval state: the journal's key (made by the
    /// first proxy to need one), or `None` without a journal that keeps it.
    pub(crate) async fn seal(&self) -> Option<&crate::sealed::Seal> {
        self.seal
            .get_or_init(|| async {
                let journal = self.journal.as_ref()?;
                let fresh = crate::sealed::Seal::fresh_key()?;
                let key = journal
                    .secret(crate::sealed::SECRET_NAME, &fresh)
                    .await
                    .ok()?;
                crate::sealed::Seal::new(&key)
            })
            .await
            .as_ref()
    }

    /// The lease of the calls sent to upstream `upstream` (its executor's).
    pub(crate) fn lease(&self, upstream: usize) -> std::time::Duration {
        self.upstreams[upstream].executor.config().lease
    }

    /// The tools offered now: a call keeps the catalog it started with.
    pub(crate) fn catalog(&self) -> Arc<Catalog> {
        let catalog = self.catalog.read().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(&catalog)
    }

    /// Offers `catalog`'s tools from now on.
    pub(crate) fn offer(&self, catalog: Catalog) {
        let mut current = self.catalog.write().unwrap_or_else(PoisonError::into_inner);
        *current = Arc::new(catalog);
    }
}

/// An upstream and its session.
pub(crate) struct Connected {
    pub(crate) upstream: Upstream,
    pub(crate) transport: Arc<McpTransport>,
    /// Its calls' executor (each call gets its own transport to the upstream).
    pub(crate) executor: Executor,
}

/// Configures an [`McpProxy`]: where its upstreams are, the operator's
/// policy for their tools, and the executor's configuration and state.
pub struct McpProxyBuilder {
    parts: ExecutorParts,
    upstreams: Vec<Upstream>,
    policies: ToolPolicies,
    warn: Warn,
}

impl std::fmt::Debug for McpProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpProxy")
            .field("tools", &self.shared.catalog().names())
            .field("journaled", &self.shared.journal.is_some())
            .finish_non_exhaustive()
    }
}

impl McpProxy {
    /// This proxy for another client session (its own number).
    pub(crate) fn for_session(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            session: self.shared.sessions.fetch_add(1, Ordering::Relaxed) + 1,
        }
    }

    /// A builder whose calls run with `config` (limits, timeouts, lease).
    pub fn builder(config: ExecutorConfig) -> McpProxyBuilder {
        McpProxyBuilder {
            parts: ExecutorParts {
                config,
                corrector: None,
                journal: None,
                shared: None,
            },
            upstreams: Vec::new(),
            policies: ToolPolicies::default(),
            warn: Arc::new(|line| eprintln!("{line}")),
        }
    }

    /// How long a stopping proxy waits for the calls that may write: their
    /// deadline (two minutes without one), and five seconds more.
    pub fn calls_grace(&self) -> Duration {
        let deadline = self
            .shared
            .upstreams
            .first()
            .and_then(|u| u.executor.config().deadline);
        deadline.unwrap_or(Duration::from_secs(120)) + Duration::from_secs(5)
    }

    /// The names the tools are offered under now, in the upstreams' order.
    pub fn tool_names(&self) -> Vec<String> {
        let catalog = self.shared.catalog();
        catalog.names().into_iter().map(str::to_owned).collect()
    }

    /// The upstreams, as given.
    pub fn upstreams(&self) -> impl Iterator<Item = &Upstream> {
        self.shared.upstreams.iter().map(|c| &c.upstream)
    }
}

impl McpProxyBuilder {
    /// Stands in front of `upstream` too. With more than one, each must be
    /// named, and each tool is offered as `NAME__TOOL`.
    #[must_use]
    pub fn upstream(mut self, upstream: Upstream) -> Self {
        self.upstreams.push(upstream);
        self
    }

    /// The operator's policy for the offered tools.
    #[must_use]
    pub fn with_policies(mut self, policies: ToolPolicies) -> Self {
        self.policies = policies;
        self
    }

    /// Corrects correctable input: deterministic repair, then a model if
    /// the chain has one.
    #[must_use]
    pub fn with_corrector(mut self, chain: Arc<CorrectionChain>) -> Self {
        self.parts.corrector = Some(chain);
        self
    }

    /// Journals every call that may write, and answers a caller's
    /// idempotency key from it.
    #[must_use]
    pub fn with_journal(mut self, journal: Arc<dyn Journal>) -> Self {
        self.parts.journal = Some(journal);
        self
    }

    /// Where warnings go once the proxy serves, one line each (stderr
    /// unless given): a policy of the file that no longer fits the tools an
    /// upstream changed to, or an upstream that could not list its tools
    /// again.
    #[must_use]
    pub fn with_warnings(mut self, report: impl Fn(String) + Send + Sync + 'static) -> Self {
        self.warn = Arc::new(report);
        self
    }

    /// Shares the retry budget and circuit breakers with other processes.
    #[must_use]
    pub fn with_shared_state(mut self, shared: Arc<dyn SharedState>) -> Self {
        self.parts.shared = Some(shared);
        self
    }

    /// Checks what can be checked without starting anything: at least one
    /// upstream, and with several, each named once. [`connect`](Self::connect)
    /// checks it too.
    ///
    /// # Errors
    /// As [`connect`](Self::connect), for the upstreams' names.
    pub fn check(&self) -> Result<(), ProxyError> {
        check_names(&self.upstreams)
    }

    /// Starts every upstream, lists its tools, and applies the policies.
    /// From then on, an upstream whose tools change has them offered anew
    /// and the clients told (see `follow`), for as long as the runtime runs.
    ///
    /// # Errors
    /// No upstream; several, one of them unnamed, or two with one name; an
    /// upstream that cannot be started or does not list its tools in time;
    /// a policy naming a tool that is not offered (see
    /// [`ToolPolicies::from_json`] for the rest); a tool that needs approval
    /// on a proxy without a journal; an unusable configuration.
    pub async fn connect(self) -> Result<McpProxy, ProxyError> {
        check_names(&self.upstreams)?;
        check_journal(&self.policies, self.parts.journal.is_some())?;
        let prefixed = self.upstreams.len() > 1;
        let mut upstreams: Vec<Connected> = Vec::with_capacity(self.upstreams.len());
        let mut listings = Vec::with_capacity(self.upstreams.len());
        let mut declared = Vec::with_capacity(self.upstreams.len());
        let mut changes = Vec::with_capacity(self.upstreams.len());
        for upstream in self.upstreams {
            let started = start(&upstream).await?;
            listings.push(Listing {
                prefix: upstream.name().filter(|_| prefixed).map(str::to_owned),
                listed: started.listed,
                described: started.described,
            });
            declared.push(started.declared);
            changes.push(started.changes);
            let transport = Arc::new(started.transport);
            // One retry budget for the proxy: the first upstream's.
            let budget = upstreams
                .first()
                .and_then(|first| first.executor.retry_budget().map(Arc::clone));
            let executor = self.parts.build(Arc::clone(&transport) as _, budget)?;
            upstreams.push(Connected {
                upstream,
                transport,
                executor,
            });
        }
        let mut catalog = Catalog::build(listings)?;
        catalog.apply(&self.policies)?;
        let proxy = McpProxy {
            shared: Arc::new(Shared {
                upstreams,
                catalog: RwLock::new(Arc::new(catalog)),
                policies: self.policies,
                journal: self.parts.journal.clone(),
                door: Door::new(self.parts.config.lease).with_journal(self.parts.journal.clone()),
                capabilities: capabilities::offered(&declared, self.parts.journal.is_some()),
                listeners: Listeners::default(),
                rebuilding: tokio::sync::Mutex::new(()),
                warn: self.warn,
                subscriptions: Subscriptions::default(),
                sessions: AtomicU64::new(0),
                stopping: AtomicBool::new(false),
                sending: crate::sending::Sending::default(),
                seal: tokio::sync::OnceCell::new(),
            }),
            session: 0,
        };
        for (index, changes) in changes.into_iter().enumerate() {
            proxy.follow(index, changes);
        }
        if let [one] = proxy.shared.upstreams.as_slice() {
            proxy.follow_updates(one.transport.resource_updates());
        }
        Ok(proxy)
    }
}

/// An upstream as it answered at startup.
struct Started {
    transport: McpTransport,
    /// What it says changed, from before its tools were listed.
    changes: broadcast::Receiver<ListChange>,
    /// Its tools, every field kept.
    listed: Vec<Value>,
    /// Its tools, as recourse reads them.
    described: Vec<recourse_mcp::McpTool>,
    /// The capabilities it declared.
    declared: Value,
}

/// Starts `upstream` and asks it what it offers.
async fn start(upstream: &Upstream) -> Result<Started, ProxyError> {
    let in_context =
        |e: recourse_mcp::McpError| ProxyError::from(e.context(&format!("starting {upstream}")));
    let transport =
        McpTransport::new(upstream.target().clone()).with_access(upstream.access().clone());
    // Followed before the first listing, so no change can fall in between.
    let changes = transport.list_changes();
    // Starts the session.
    let listed = transport
        .listed_tools(STARTUP_TIMEOUT)
        .await
        .map_err(in_context)?;
    let described = transport.tools().await.map_err(in_context)?;
    let declared = transport
        .capabilities(STARTUP_TIMEOUT)
        .await
        .map_err(in_context)?;
    Ok(Started {
        transport,
        changes,
        listed,
        described,
        declared,
    })
}

/// What every upstream's executor is made of.
struct ExecutorParts {
    config: ExecutorConfig,
    corrector: Option<Arc<CorrectionChain>>,
    journal: Option<Arc<dyn Journal>>,
    shared: Option<Arc<dyn SharedState>>,
}

impl ExecutorParts {
    /// An upstream's executor, with breakers of its own and `budget`
    /// (another upstream's) when given.
    fn build(
        &self,
        transport: Arc<dyn recourse::Transport>,
        budget: Option<Arc<RetryBudget>>,
    ) -> Result<Executor, ProxyError> {
        let mut executor = Executor::builder_arc(transport)
            .with_config(self.config.clone())
            .map_err(|e| ProxyError::config(e.to_string()))?;
        if let Some(budget) = budget {
            executor = executor.with_retry_budget(budget);
        }
        if let Some(chain) = &self.corrector {
            executor = executor.with_corrector(Arc::clone(chain) as _);
        }
        if let Some(shared) = &self.shared {
            executor = executor.with_shared_state(Arc::clone(shared));
        }
        if let Some(journal) = &self.journal {
            executor = executor.with_journal(Arc::clone(journal));
        }
        Ok(executor.build())
    }
}

/// A journal, when a tool's calls wait for a person's approval: that is
/// where they wait, and where the gateway that decides finds them.
fn check_journal(policies: &ToolPolicies, journaled: bool) -> Result<(), ProxyError> {
    match policies.needing_approval().first() {
        Some(name) if !journaled => Err(ProxyError::config(format!(
            "tools.{name}.approval: a call that needs approval waits in the journal, and this \
             proxy keeps none: give --journal PATH|postgres://… (the one the deciding gateway \
             uses)"
        ))),
        _ => Ok(()),
    }
}

/// At least one upstream; with several, each named, no name twice.
fn check_names(upstreams: &[Upstream]) -> Result<(), ProxyError> {
    if upstreams.is_empty() {
        return Err(ProxyError::config(
            "no upstream: give -- CMD ARGS, or --upstream NAME=CMD ARGS (repeatable)",
        ));
    }
    if upstreams.len() == 1 {
        return Ok(());
    }
    let mut seen = Vec::new();
    for upstream in upstreams {
        let Some(name) = upstream.name() else {
            return Err(ProxyError::config(
                "with several upstreams, each needs a name: --upstream NAME=CMD ARGS",
            ));
        };
        if seen.contains(&name) {
            return Err(ProxyError::config(format!(
                "two upstreams are named {name:?}: each needs its own name"
            )));
        }
        seen.push(name);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_upstream_has_breakers_of_its_own_and_one_budget_is_shared() {
        let parts = ExecutorParts {
            config: ExecutorConfig::default(),
            corrector: None,
            journal: None,
            shared: None,
        };
        let tool = || -> Arc<dyn recourse::Transport> {
            Arc::new(recourse::InProcessTransport::from_tool(|_| async {
                recourse_protocol::ToolResponse::ok(serde_json::json!({}))
            }))
        };
        let first = parts.build(tool(), None).unwrap();
        let budget = first.retry_budget().map(Arc::clone);
        let second = parts.build(tool(), budget).unwrap();
        let (a, b) = (
            first.retry_budget().unwrap(),
            second.retry_budget().unwrap(),
        );
        assert!(Arc::ptr_eq(a, b));
        let (a, b) = (
            first.circuit_breakers().unwrap(),
            second.circuit_breakers().unwrap(),
        );
        assert!(!Arc::ptr_eq(a, b));
    }

    #[test]
    fn a_tool_that_needs_approval_needs_a_journal() {
        let policies =
            ToolPolicies::from_json(br#"{"tools": {"w": {"approval": {"reason": "r"}}}}"#).unwrap();
        let refused = check_journal(&policies, false).unwrap_err().to_string();
        assert!(
            refused.contains("tools.w.approval") && refused.contains("--journal"),
            "{refused}"
        );
        assert!(check_journal(&policies, true).is_ok());
        assert!(check_journal(&ToolPolicies::default(), false).is_ok());
    }

    #[test]
    fn several_upstreams_need_distinct_names() {
        let named = |n: &str| Upstream::parse(&format!("{n}=server")).unwrap();
        let unnamed = Upstream::unnamed(recourse_mcp::McpTarget::command_line("s").unwrap());
        assert!(check_names(&[]).is_err());
        assert!(check_names(std::slice::from_ref(&unnamed)).is_ok());
        assert!(check_names(&[named("a")]).is_ok());
        assert!(check_names(&[named("a"), named("b")]).is_ok());
        let twice = check_names(&[named("a"), named("a")]).unwrap_err();
        assert!(twice.to_string().contains("\"a\""), "{twice}");
        assert!(check_names(&[named("a"), unnamed]).is_err());
    }
}
