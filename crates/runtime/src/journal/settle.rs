//! Settling a journaled call whose outcome is open — in flight after its
//! process died, or unknown — by its recorded verification or lookup, never
//! by resending.

use std::sync::Arc;
use std::time::Duration;

use recourse_protocol::RetryPermission;
use serde::Serialize;
use serde_json::Value;

use super::{CallState, Journal, JournalEntry, JournalResult, process_owner};
use crate::verify::{self, Verifier};
use crate::{
    Action, HttpReconciler, HttpTransport, Policy, ReconcileRequest, Reconciler, Reconciliation,
    Situation, StopReason, Target, TargetAllowlist, TargetUrl, Traits, Transport, VerifySpec,
    WriteAnswer, check_header,
};

/// How many times a pending write is looked up before it is left unknown.
const PENDING_LOOKUPS: u32 = 10;

/// How long one verification read may take, unless told otherwise.
const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// What settling one call did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Settlement {
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

/// How to settle calls: the lease to take them with, and what a
/// verification read needs that the journal never keeps — the credentials
/// headers, the MCP server of a tool read, the targets it may reach.
///
/// ```
/// use std::time::Duration;
/// use recourse::SettleOptions;
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
}

impl std::fmt::Debug for SettleOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("SettleOptions")
            .field("lease", &self.lease)
            .field("headers", &names)
            .field("tool_transport", &self.tool_transport.is_some())
            .field("read_timeout", &self.read_timeout)
            .finish_non_exhaustive()
    }
}

impl SettleOptions {
    /// Takes each call over with a lease of `lease`; no headers, HTTP reads
    /// only, 10 s per read.
    pub fn new(lease: Duration) -> Self {
        Self {
            lease,
            headers: Vec::new(),
            tool_transport: None,
            allowlist: None,
            read_timeout: DEFAULT_READ_TIMEOUT,
        }
    }

    /// Sends `name: value` with every verification read (the credentials the
    /// read needs; the journal never keeps them).
    ///
    /// # Errors
    /// As [`check_header`].
    pub fn with_header(
        mut self,
        name: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<Self, crate::ConfigError> {
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
) -> JournalResult<Settlement> {
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
) -> JournalResult<Settlement> {
    let held = |note: String| Settlement {
        call_id: entry.call_id.clone(),
        from: entry.state,
        state: entry.state,
        held: true,
        note,
    };
    if entry.is_leased()
        || !journal
            .take_over(&entry.call_id, process_owner(), options.lease)
            .await?
    {
        let owner = entry.owner.as_deref().unwrap_or("another process");
        let until = entry.lease_until.as_deref().unwrap_or("now");
        return Ok(held(format!(
            "still running: held by {owner} until {until}; left alone"
        )));
    }
    let (state, note) = look_up(entry, options).await;
    journal
        .finish_call(&entry.call_id, state, None, None)
        .await?;
    Ok(Settlement {
        call_id: entry.call_id.clone(),
        from: entry.state,
        state,
        held: false,
        note,
    })
}

/// What a journaled call's verification or lookup says it became.
async fn look_up(entry: &JournalEntry, options: &SettleOptions) -> (CallState, String) {
    if entry.attempts == 0 {
        return (CallState::Failed, "never dispatched".to_owned());
    }
    if let Some(spec) = &entry.verification {
        return read_back(entry, spec, options).await;
    }
    let Some(template) = &entry.reconcile else {
        let key = entry.idempotency_key.as_deref().unwrap_or("none");
        return (
            CallState::Unknown,
            format!("no verification or reconcile lookup configured; check by hand (key {key})"),
        );
    };
    let mut reconciler = match HttpReconciler::new(template.clone()) {
        Ok(r) => r,
        Err(e) => return (CallState::Unknown, e.to_string()),
    };
    if let Some(allowlist) = &options.allowlist {
        reconciler = reconciler.with_allowlist(Arc::clone(allowlist));
    }
    let target = match Target::parse(&entry.target) {
        Ok(t) => t,
        Err(e) => return (CallState::Unknown, e.to_string()),
    };
    for _ in 0..PENDING_LOOKUPS {
        let request = ReconcileRequest {
            target: &target,
            idempotency_key: entry.idempotency_key.as_deref(),
            operation_id: entry.operation_id.as_deref(),
            payload: &entry.payload,
        };
        match reconciler.reconcile(request).await {
            Reconciliation::Committed(_) => return (CallState::Succeeded, "committed".to_owned()),
            Reconciliation::NotCommitted => {
                return (
                    CallState::Failed,
                    "not committed; nothing was written".to_owned(),
                );
            }
            Reconciliation::Pending { wait } => {
                let wait = wait
                    .unwrap_or(Duration::from_millis(500))
                    .min(Duration::from_secs(5));
                tokio::time::sleep(wait).await;
            }
            Reconciliation::Unknown(why) => return (CallState::Unknown, why),
        }
    }
    (CallState::Unknown, "still pending".to_owned())
}

/// Reads the journaled call's effect back once; the policy decides, as
/// after an unknown outcome with no resend allowed (a settler never writes).
async fn read_back(
    entry: &JournalEntry,
    spec: &Value,
    options: &SettleOptions,
) -> (CallState, String) {
    let unknown = |why: String| (CallState::Unknown, format!("verification: {why}"));
    let spec: VerifySpec = match serde_json::from_value(spec.clone()) {
        Ok(spec) => spec,
        Err(e) => return unknown(format!("the journaled spec is unreadable: {e}")),
    };
    let verifier = match Verifier::new(spec, &entry.payload) {
        Ok(v) => v,
        Err(e) => return unknown(e.to_string()),
    };
    let transport: Arc<dyn Transport> = match (verifier.reads_tool(), &options.tool_transport) {
        (true, Some(transport)) => Arc::clone(transport),
        (true, None) => {
            return unknown(
                "it reads an MCP tool; give the server the call wrote to (--mcp-command or --mcp-url)"
                    .to_owned(),
            );
        }
        (false, _) => match HttpTransport::builder().build() {
            Ok(http) => Arc::new(http),
            Err(e) => return unknown(e.to_string()),
        },
    };
    if let (Some(allowlist), Some(url)) = (&options.allowlist, verifier.spec().url.as_deref()) {
        let allowed = TargetUrl::parse(url).and_then(|u| allowlist.check_url(&u));
        if let Err(e) = allowed {
            return unknown(format!("read not sent: {e}"));
        }
    }
    let read = match verifier.resolve(&entry.payload) {
        Ok(read) => read,
        Err(why) => return unknown(why),
    };
    let reading = verify::read(
        transport.as_ref(),
        &read,
        &options.headers,
        options.read_timeout,
    )
    .await;
    let no_resend = WriteAnswer::Unknown {
        permission: RetryPermission::Refused,
    };
    let situation = Situation::first_attempt(Traits {
        idempotent: false,
        delegated: false,
    });
    let detail = reading.detail.map_or(String::new(), |d| format!(" ({d})"));
    match Policy::default().after_verification(None, reading.result, no_resend, &situation) {
        Action::Succeed => (
            CallState::Succeeded,
            "verified: the write's effect is there".to_owned(),
        ),
        Action::Stop {
            reason: StopReason::NotCommitted,
        } => (
            CallState::Failed,
            format!("verification: not committed{detail}; nothing was written"),
        ),
        _ => unknown(format!("cannot tell{detail}")),
    }
}
