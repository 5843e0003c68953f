//! `/healthz` and `/readyz`: liveness and readiness, for load balancers and
//! orchestrators.
//!
//! Both answer without a token and carry only status words. `/healthz` says
//! the process serves (always 200). `/readyz` says whether this replica
//! should get traffic: 503 while draining (from SIGTERM on) or when its
//! journal does not answer; 200 otherwise. Shared state in fallback shows in
//! the body but never fails readiness: a Redis outage must not take every
//! replica out of the load balancer at once, and each replica serves on its
//! own budget and breakers meanwhile.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use recourse::Journal;
use recourse::shared::{SharedMode, SharedState};
use schemars::JsonSchema;
use serde::Serialize;

/// How long the journal has to answer a readiness check.
const JOURNAL_CHECK_WITHIN: Duration = Duration::from_secs(1);

/// How long a journal check's answer is reused: `/readyz` needs no token,
/// so a flood of it must not become a flood of queries.
const JOURNAL_CHECK_KEPT: Duration = Duration::from_secs(1);

/// What the gateway knows about its own readiness.
pub(crate) struct Readiness {
    draining: AtomicBool,
    journal: Option<Arc<dyn Journal>>,
    shared: Option<Arc<dyn SharedState>>,
    check_within: Duration,
    last_check: Mutex<Option<(Instant, JournalHealth)>>,
}

impl Readiness {
    /// Readiness over the gateway's journal and shared state, when it has them.
    pub(crate) fn new(
        journal: Option<Arc<dyn Journal>>,
        shared: Option<Arc<dyn SharedState>>,
    ) -> Self {
        Self {
            draining: AtomicBool::new(false),
            journal,
            shared,
            check_within: JOURNAL_CHECK_WITHIN,
            last_check: Mutex::new(None),
        }
    }

    /// From now on `/readyz` answers 503 `draining`.
    pub(crate) fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// The shared state's mode, or off without shared state.
    pub(crate) fn shared_state(&self) -> SharedStateMode {
        match self.shared.as_ref().map(|s| s.mode()) {
            Some(SharedMode::Shared) => SharedStateMode::Shared,
            Some(SharedMode::Fallback) => SharedStateMode::Fallback,
            None => SharedStateMode::Off,
        }
    }

    /// Whether the journal answers (`None` without a journal).
    async fn journal(&self) -> JournalHealth {
        let Some(journal) = &self.journal else {
            return JournalHealth::None;
        };
        let now = Instant::now();
        if let Some((at, word)) = *self.lock()
            && now.saturating_duration_since(at) < JOURNAL_CHECK_KEPT
        {
            return word;
        }
        // Any answer, found or not, means the journal is there.
        let word = match tokio::time::timeout(self.check_within, journal.get("readyz")).await {
            Ok(Ok(_)) => JournalHealth::Ok,
            Ok(Err(_)) | Err(_) => JournalHealth::Unreachable,
        };
        *self.lock() = Some((Instant::now(), word));
        word
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(Instant, JournalHealth)>> {
        self.last_check
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// `/healthz`: alive, and the shared state's mode.
    pub(crate) fn healthz(&self) -> Response {
        Json(Health {
            status: "ok",
            shared_state: self.shared_state(),
        })
        .into_response()
    }

    /// `/readyz`: 200 `ready`, or 503 `draining` / `unavailable`.
    pub(crate) async fn readyz(&self) -> Response {
        let journal = self.journal().await;
        let status = if self.draining.load(Ordering::SeqCst) {
            ReadyStatus::Draining
        } else if journal == JournalHealth::Unreachable {
            ReadyStatus::Unavailable
        } else {
            ReadyStatus::Ready
        };
        let code = match status {
            ReadyStatus::Ready => StatusCode::OK,
            ReadyStatus::Draining | ReadyStatus::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        };
        let body = Ready {
            status,
            journal,
            shared_state: self.shared_state(),
        };
        (code, Json(body)).into_response()
    }
}

/// `GET /healthz`: the gateway is serving.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Health")]
pub(crate) struct Health {
    /// Always `ok`.
    #[schemars(extend("const" = "ok"))]
    status: &'static str,
    /// `shared`: the fleet's budget and breakers decide; `fallback`: Redis does
    /// not answer and this gateway decides alone; `off`: no `--shared-state`.
    shared_state: SharedStateMode,
}

/// Who decides the retry budget and breakers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SharedStateMode {
    /// The fleet's shared state.
    Shared,
    /// This gateway alone, while Redis does not answer.
    Fallback,
    /// This gateway alone: no `--shared-state`.
    Off,
}

/// Whether the journal answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum JournalHealth {
    /// It answered.
    Ok,
    /// It did not answer within a second.
    Unreachable,
    /// The gateway keeps no journal (`--journal none`).
    None,
}

/// Whether to send this gateway traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ReadyStatus {
    /// Send it traffic (200).
    Ready,
    /// It is stopping, after SIGTERM (503).
    Draining,
    /// Its journal does not answer (503).
    Unavailable,
}

/// `GET /readyz`: whether to send this gateway traffic.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Readiness")]
pub(crate) struct Ready {
    /// `ready` (200); `draining` after SIGTERM or `unavailable` when the journal does not answer (503).
    status: ReadyStatus,
    /// `ok`, `unreachable`, or `none` (`--journal none`).
    journal: JournalHealth,
    /// As in `/healthz`.
    shared_state: SharedStateMode,
}

#[cfg(test)]
mod tests {
    use super::*;
    use recourse::journal::{
        AttemptResult, CallState, Claimed, JournalEntry, JournalResult, KeyClaim, ListQuery,
        NewCall, RecordJson, SqliteJournal,
    };
    use recourse::transport::BoxFuture;
    use serde_json::{Value, json};

    async fn answer(readiness: &Readiness) -> (u16, Value) {
        let response = readiness.readyz().await;
        let status = response.status().as_u16();
        let body = axum::body::to_bytes(response.into_body(), 1024)
            .await
            .unwrap();
        (status, serde_json::from_slice(&body).unwrap())
    }

    #[tokio::test]
    async fn ready_without_a_journal_and_draining_after_sigterm() {
        let readiness = Readiness::new(None, None);
        let (status, body) = answer(&readiness).await;
        assert_eq!(status, 200);
        assert_eq!(
            body,
            json!({"status": "ready", "journal": "none", "shared_state": "off"})
        );
        readiness.start_draining();
        let (status, body) = answer(&readiness).await;
        assert_eq!(status, 503);
        assert_eq!(body["status"], "draining");
    }

    #[tokio::test]
    async fn a_journal_that_answers_is_ok() {
        let journal: Arc<dyn Journal> = Arc::new(SqliteJournal::in_memory().unwrap());
        let (status, body) = answer(&Readiness::new(Some(journal), None)).await;
        assert_eq!((status, body["journal"].as_str()), (200, Some("ok")));
    }

    #[tokio::test]
    async fn a_journal_that_never_answers_is_unreachable_within_the_bound() {
        let mut readiness = Readiness::new(Some(Arc::new(Silent)), None);
        readiness.check_within = Duration::from_millis(20);
        let (status, body) = answer(&readiness).await;
        assert_eq!(status, 503);
        assert_eq!(body["status"], "unavailable");
        assert_eq!(body["journal"], "unreachable");
    }

    /// A journal whose every operation hangs, as a database that stopped answering.
    struct Silent;

    fn hang<'a, T: 'a>() -> BoxFuture<'a, T> {
        Box::pin(std::future::pending())
    }

    impl Journal for Silent {
        fn claim_key<'a>(&'a self, _: &'a KeyClaim) -> BoxFuture<'a, JournalResult<Claimed>> {
            hang()
        }
        fn begin_call<'a>(&'a self, _: &'a NewCall) -> BoxFuture<'a, JournalResult<()>> {
            hang()
        }
        fn begin_attempt<'a>(
            &'a self,
            _: &'a str,
            _: u32,
            _: Option<&'a Value>,
        ) -> BoxFuture<'a, JournalResult<()>> {
            hang()
        }
        fn finish_attempt<'a>(
            &'a self,
            _: &'a str,
            _: u32,
            _: &'a AttemptResult,
        ) -> BoxFuture<'a, JournalResult<()>> {
            hang()
        }
        fn finish_call<'a>(
            &'a self,
            _: &'a str,
            _: CallState,
            _: Option<&'a str>,
            _: Option<&'a RecordJson>,
        ) -> BoxFuture<'a, JournalResult<()>> {
            hang()
        }
        fn renew_lease<'a>(
            &'a self,
            _: &'a str,
            _: &'a str,
            _: Duration,
        ) -> BoxFuture<'a, JournalResult<bool>> {
            hang()
        }
        fn take_over<'a>(
            &'a self,
            _: &'a str,
            _: &'a str,
            _: Duration,
        ) -> BoxFuture<'a, JournalResult<bool>> {
            hang()
        }
        fn get<'a>(&'a self, _: &'a str) -> BoxFuture<'a, JournalResult<Option<JournalEntry>>> {
            hang()
        }
        fn list<'a>(&'a self, _: &'a ListQuery) -> BoxFuture<'a, JournalResult<Vec<JournalEntry>>> {
            hang()
        }
        fn prune<'a>(&'a self, _: &'a str, _: u32) -> BoxFuture<'a, JournalResult<u64>> {
            hang()
        }
    }
}
