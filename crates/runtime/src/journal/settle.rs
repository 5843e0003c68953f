//! Settling a journaled call whose outcome is open — in flight after its
//! process died, or unknown — by its recorded verification or lookup, never
//! by resending.

use std::sync::Arc;
use std::time::Duration;

use recourse_protocol::redact;
use serde::Serialize;
use serde_json::Value;

use super::{CallState, Journal, JournalEntry, JournalResult, RecordJson, process_owner, rfc3339};
use crate::clock::SystemClock;
use crate::config::ExecutorConfig;
use crate::header::check_header;
use crate::reconcile::HttpReconciler;
use crate::transport::HttpTransport;
use crate::verify::VerifySpec;
use crate::verify::{self, Reading, ResolvedRead, Verifier};
use recourse_core::allow::{TargetAllowlist, TargetUrl};
use recourse_core::backoff::Backoff;
use recourse_core::clock::Clock;
use recourse_core::machine::{Finish, Lookup, MachineSetup, Settle, SettleCommand, SuccessFrom};
use recourse_core::policy::{Limits, Traits, VerifyResult};
use recourse_core::reconcile::{ReconcileRequest, Reconciler, Reconciliation};
use recourse_core::record::{Outcome, SettledBy, Settlement};
use recourse_core::target::Target;
use recourse_core::transport::Transport;

/// How long one verification read may take, unless told otherwise.
const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// What settling one call did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SettledCall {
    /// The call.
    pub call_id: String,
    /// Its state before.
    pub from: CallState,
    /// Its state now.
    pub state: CallState,
    /// Whether another process still holds the call (it was left alone).
    pub held: bool,
    /// What happened, in words.
    pub note: String,
}

/// How to settle calls: the lease to take them with (settling one ends
/// within it), the limits its lookups keep (the executor's: lookups of a
/// pending write, the longest wait, the backoff), the clock it waits on, and
/// what a verification read needs that the journal never keeps — the
/// credentials headers, the MCP server of a tool read, the targets it may reach.
///
/// ```
/// use std::time::Duration;
/// use recourse::journal::SettleOptions;
///
/// let options = SettleOptions::new(Duration::from_secs(30))
///     .with_header("Authorization", "Bearer s3cret")
///     .unwrap();
/// assert!(!format!("{options:?}").contains("s3cret"));
/// ```
#[derive(Clone)]
pub struct SettleOptions {
    lease: Duration,
    headers: Vec<(String, String)>,
    tool_transport: Option<Arc<dyn Transport>>,
    allowlist: Option<Arc<TargetAllowlist>>,
    read_timeout: Duration,
    limits: Limits,
    backoff_base: Duration,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for SettleOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("SettleOptions")
            .field("lease", &self.lease)
            .field("headers", &names)
            .field("tool_transport", &self.tool_transport.is_some())
            .field("read_timeout", &self.read_timeout)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl SettleOptions {
    /// Takes each call over with a lease of `lease`; no headers, HTTP reads
    /// only, 10 s per read, the default executor's limits and backoff, real time.
    pub fn new(lease: Duration) -> Self {
        let config = ExecutorConfig::default();
        Self {
            lease,
            headers: Vec::new(),
            tool_transport: None,
            allowlist: None,
            read_timeout: DEFAULT_READ_TIMEOUT,
            limits: config.limits,
            backoff_base: config.backoff_base,
            clock: Arc::new(SystemClock),
        }
    }

    /// Settles as an executor configured with `config` runs: its lease, its
    /// limits (how often and how long a pending write is looked up) and its
    /// backoff.
    pub fn from_config(config: &ExecutorConfig) -> Self {
        let mut options = Self::new(config.lease);
        options.limits = config.limits;
        options.backoff_base = config.backoff_base;
        options
    }

    /// Waits between lookups on `clock`, and expires approvals by its wall
    /// time (a [`ManualClock`](recourse_core::clock::ManualClock) in tests).
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The lease a call is taken over with.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// The clock lookups wait on and approvals expire by.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Sends `name: value` with every verification read and lookup (the
    /// credentials they need; the journal never keeps them).
    ///
    /// # Errors
    /// As [`check_header`].
    pub fn with_header(
        mut self,
        name: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<Self, recourse_core::config::ConfigError> {
        let (name, value) = (name.into(), value.into());
        check_header(&name, &value)?;
        self.headers.push((name, value));
        Ok(self)
    }

    /// Reads MCP tools (`verify.tool`) through `transport`: a session with
    /// the server the calls wrote to. Without it, a tool read cannot tell.
    #[must_use]
    pub fn with_tool_transport(mut self, transport: Arc<dyn Transport>) -> Self {
        self.tool_transport = Some(transport);
        self
    }

    /// Sends a URL read (or lookup) only where `allowlist` allows it.
    #[must_use]
    pub fn with_allowlist(mut self, allowlist: Arc<TargetAllowlist>) -> Self {
        self.allowlist = Some(allowlist);
        self
    }

    /// How long one verification read may take.
    #[must_use]
    pub fn with_read_timeout(mut self, timeout: Duration) -> Self {
        self.read_timeout = timeout;
        self
    }
}

/// Settles `entry` as [`settle_with`] does, with a lease of `lease` and no
/// more than the journal keeps.
///
/// # Errors
/// When the journal cannot be read or written.
pub async fn settle(
    journal: &dyn Journal,
    entry: &JournalEntry,
    lease: Duration,
) -> JournalResult<SettledCall> {
    settle_with(journal, entry, &SettleOptions::new(lease)).await
}

/// Settles `entry` through its verification (read back once, decided by
/// the policy as after an unknown outcome, without a resend) or else its
/// reconcile lookup, unless another process's lease still holds it:
/// committed → succeeded, not committed or never dispatched → failed,
/// otherwise unknown. The call is taken over (with the options' lease)
/// before it is looked up, so two settlers never race.
///
/// # Errors
/// When the journal cannot be read or written.
pub async fn settle_with(
    journal: &dyn Journal,
    entry: &JournalEntry,
    options: &SettleOptions,
) -> JournalResult<SettledCall> {
    let held = |note: String| SettledCall {
        call_id: entry.call_id.clone(),
        from: entry.state,
        state: entry.state,
        held: true,
        note,
    };
    if entry.is_leased(options.clock().wall())
        || !journal
            .take_over(&entry.call_id, process_owner(), options.lease)
            .await?
    {
        let owner = entry.lease.owner.as_deref().unwrap_or("another process");
        let until = entry.lease.until.as_deref().unwrap_or("now");
        return Ok(held(format!(
            "still running: held by {owner} until {until}; left alone"
        )));
    }
    let found = look_up(entry, options).await;
    let state = found.state();
    let record = found
        .record(entry, options.clock().wall())
        .map(|r| RecordJson::from(&r));
    journal
        .finish_call(&entry.call_id, state, None, record.as_ref())
        .await?;
    let note = found.note;
    Ok(SettledCall {
        call_id: entry.call_id.clone(),
        from: entry.state,
        state,
        held: false,
        note,
    })
}

/// How a journaled call's open outcome can be found out: a read of its
/// effect, a lookup by its key, or nothing (with why).
enum Means {
    Read {
        transport: Arc<dyn Transport>,
        read: ResolvedRead,
    },
    Lookup {
        reconciler: HttpReconciler,
        target: Target,
    },
    /// The journaled verification cannot be read: it cannot tell.
    BrokenRead(String),
    /// The journaled lookup cannot be made: it cannot tell.
    BrokenLookup(String),
    Nothing,
}

impl Means {
    fn of(entry: &JournalEntry, options: &SettleOptions) -> Self {
        if let Some(spec) = &entry.declared.verification {
            return match resolve_read(entry, spec, options) {
                Ok((transport, read)) => Self::Read { transport, read },
                Err(why) => Self::BrokenRead(why),
            };
        }
        let Some(template) = &entry.declared.reconcile else {
            return Self::Nothing;
        };
        let reconciler = match HttpReconciler::new(template.clone()) {
            Ok(r) => r,
            Err(e) => return Self::BrokenLookup(e.to_string()),
        };
        let mut reconciler = match &options.allowlist {
            Some(allowlist) => reconciler.with_allowlist(Arc::clone(allowlist)),
            None => reconciler,
        };
        // The credentials a lookup needs come from configuration: the
        // journal keeps its template with them redacted.
        for (name, value) in &options.headers {
            reconciler = match reconciler.with_header(name, value) {
                Ok(r) => r,
                Err(e) => return Self::BrokenLookup(e.to_string()),
            };
        }
        match Target::parse(&entry.target) {
            Ok(target) => Self::Lookup { reconciler, target },
            Err(e) => Self::BrokenLookup(e.to_string()),
        }
    }

    fn lookup(&self) -> Lookup {
        match self {
            Self::Read { .. } | Self::BrokenRead(_) => Lookup::ReadBack {
                before: false,
                always: false,
            },
            Self::Lookup { .. } | Self::BrokenLookup(_) => Lookup::Operation,
            Self::Nothing => Lookup::None,
        }
    }
}

/// What a journaled call's verification or lookup says it became: the
/// call's machine decides, as after an unknown outcome — within the
/// settler's limits, waiting on its clock, its waits for a pending write
/// ending within the lease it took the call with — and never resends.
async fn look_up(entry: &JournalEntry, options: &SettleOptions) -> Found {
    let means = Means::of(entry, options);
    let traits = Traits {
        idempotent: false,
        delegated: false,
    };
    let setup = MachineSetup::new(options.limits, traits, options.read_timeout)
        .with_deadline(Some(options.lease))
        .with_backoff(Backoff::full_jitter(
            options.backoff_base,
            options.limits.max_backoff,
        ))
        .with_lookup(means.lookup());
    let clock = &options.clock;
    let mut settle = Settle::new(setup, entry.attempts > 0);
    let mut step = settle.start(clock.now());
    let mut note = None;
    let finish = loop {
        step = match step {
            SettleCommand::LookUp(lookup) => {
                let found = match &means {
                    Means::Lookup { reconciler, target } => {
                        let request = ReconcileRequest {
                            target,
                            idempotency_key: entry.idempotency_key.as_deref(),
                            operation_id: entry.operation_id.as_deref(),
                            payload: &entry.payload,
                        };
                        reconciler.reconcile(request).await
                    }
                    Means::BrokenLookup(why) => Reconciliation::Unknown(why.clone()),
                    _ => Reconciliation::Unknown("no lookup configured".to_owned()),
                };
                note = Some(lookup_note(&found));
                settle.looked_up(lookup, found, clock.now())
            }
            SettleCommand::ReadBack(read) => {
                let reading = match &means {
                    Means::Read { transport, read } => {
                        let timeout = options.read_timeout;
                        // The read before the write was not journaled: a
                        // change cannot be measured, and cannot tell.
                        let against = verify::Against::Before(None);
                        verify::read(transport.as_ref(), read, &options.headers, timeout, against)
                            .await
                    }
                    Means::BrokenRead(why) => Reading::cannot_tell(why.clone()),
                    _ => Reading::cannot_tell("no verification declared"),
                };
                note = Some(match &means {
                    Means::BrokenRead(why) => why.clone(),
                    _ => read_note(&reading),
                });
                settle.read_back(read, reading.result, clock.now())
            }
            SettleCommand::Wait(wait) => {
                clock.sleep(wait.duration()).await;
                settle.waited(wait)
            }
            SettleCommand::Finish(finish) => break finish,
        };
    };
    let by = match (&means, entry.attempts) {
        (_, 0) => SettledBy::Journal,
        (Means::Read { .. } | Means::BrokenRead(_), _) => SettledBy::Verification,
        _ => SettledBy::Lookup,
    };
    let note = note.unwrap_or_else(|| match (&finish, &means) {
        (_, Means::Nothing) if entry.attempts > 0 => {
            let key = entry.idempotency_key.as_deref().unwrap_or("none");
            format!("no verification or reconcile lookup configured; check by hand (key {key})")
        }
        _ => "never dispatched".to_owned(),
    });
    Found { finish, by, note }
}

/// What settling a call found: how its machine finished, what told it, in words.
struct Found {
    finish: Finish,
    by: SettledBy,
    note: String,
}

impl Found {
    /// The call's state now.
    fn state(&self) -> CallState {
        match &self.finish {
            Finish::Succeeded(_) => CallState::Succeeded,
            Finish::Stopped(reason) if reason.leaves_outcome_unknown() => CallState::Unknown,
            Finish::Stopped(_) => CallState::Failed,
        }
    }

    /// The call's record once settled, with its settlement; `None` while its
    /// outcome stays unknown (the record it has, or the journal's, says so).
    fn record(&self, entry: &JournalEntry, now: std::time::SystemTime) -> Option<Value> {
        let outcome = match &self.finish {
            Finish::Stopped(reason) if reason.leaves_outcome_unknown() => return None,
            Finish::Stopped(reason) => Outcome::Failed {
                error: None,
                reason: reason.clone(),
            },
            Finish::Succeeded(SuccessFrom::Committed(data)) => Outcome::Succeeded {
                data: data.clone().into(),
            },
            Finish::Succeeded(_) => Outcome::Succeeded {
                data: Value::Null.into(),
            },
        };
        let settlement = Settlement::new(self.by, rfc3339(now)).with_note(redact(&self.note));
        Some(entry.settled_record(outcome, settlement))
    }
}

/// What a lookup found, in words.
fn lookup_note(found: &Reconciliation) -> String {
    match found {
        Reconciliation::Committed(_) => "committed".to_owned(),
        Reconciliation::NotCommitted => "not committed; nothing was written".to_owned(),
        Reconciliation::Pending { .. } => "still pending".to_owned(),
        Reconciliation::Unknown(why) => why.clone(),
    }
}

/// What a verification read found, in words.
fn read_note(reading: &Reading) -> String {
    let detail = reading
        .detail
        .as_ref()
        .map_or(String::new(), |d| format!(" ({d})"));
    match reading.result {
        VerifyResult::Holds => "verified: the write's effect is there".to_owned(),
        VerifyResult::NotHeld => {
            format!("verification: not committed{detail}; nothing was written")
        }
        VerifyResult::CannotTell => format!("verification: cannot tell{detail}"),
    }
}

/// The verification read a journaled call declared, ready to send: its
/// transport, its allowlist check, its arguments from the journaled payload.
fn resolve_read(
    entry: &JournalEntry,
    spec: &Value,
    options: &SettleOptions,
) -> Result<(Arc<dyn Transport>, ResolvedRead), String> {
    let spec: VerifySpec = serde_json::from_value(spec.clone())
        .map_err(|e| format!("verification: the journaled spec is unreadable: {e}"))?;
    let verifier = Verifier::new(spec, &entry.payload).map_err(|e| format!("verification: {e}"))?;
    let transport: Arc<dyn Transport> = match (verifier.reads_tool(), &options.tool_transport) {
        (true, Some(transport)) => Arc::clone(transport),
        (true, None) => {
            return Err(
                "verification: it reads an MCP tool; give the server the call wrote to (--mcp-command or --mcp-url)"
                    .to_owned(),
            );
        }
        (false, _) => match HttpTransport::builder().build() {
            Ok(http) => Arc::new(http),
            Err(e) => return Err(format!("verification: {e}")),
        },
    };
    if let (Some(allowlist), Some(url)) = (&options.allowlist, verifier.spec().url.as_deref()) {
        let allowed = TargetUrl::parse(url).and_then(|u| allowlist.check_url(&u));
        if let Err(e) = allowed {
            return Err(format!("verification: read not sent: {e}"));
        }
    }
    let read = verifier
        .resolve(&entry.payload)
        .map_err(|why| format!("verification: {why}"))?;
    Ok((transport, read))
}
