//! [`RedisSharedState`]: the fleet's budget and breakers in Redis.
//!
//! # Keys
//!
//! Every key starts with the prefix (`recourse:` by default), so fleets —
//! or tests — sharing one Redis keep apart:
//!
//! - `PREFIX budget`: the retry budget, a hash (`earned`, `floor`, `last`),
//!   kept ten decay constants after its last use;
//! - `PREFIX breaker:HASH`: one endpoint's breaker, a hash (`failures`,
//!   `failed_at`, `open_until`), where `HASH` is the first 128 bits of the
//!   SHA-256 of the endpoint, so keys are short, hold nothing of the target,
//!   and name the same endpoint in every process; a healthy answer deletes
//!   it, and an entry no failure has touched for a minute (plus twice the
//!   open time) is forgotten and expires, which bounds what a caller naming
//!   endless endpoints can store;
//! - `PREFIX probe:HASH`: the one half-open probe out for that endpoint
//!   (when it started, in ms).
//!
//! # What is read back
//!
//! Only integers. The fields are read inside the scripts, each only once
//! its length (`HSTRLEN`) shows it is no longer than 64 bytes; a longer or
//! malformed one is taken the conservative way and overwritten (see
//! `scripts.rs`), and every script answers a number. Outside the scripts
//! the state sends only `PING` and `DEL`. So a value planted in Redis, of
//! whatever size, never reaches this process. (Redis 3.2 or later, for
//! `HSTRLEN`.)
//!
//! # Never in a call's way
//!
//! Every operation is bounded by a short timeout (50 ms by default); one
//! that fails or runs past it is decided on local state. A lost connection
//! (refused, dropped, any error) puts the state in fallback at once, and so
//! do three timeouts in a row — one slow answer on a busy machine is a
//! hiccup, not an outage, and flipping a whole replica to its own breakers
//! for it costs the tool more than it saves. In fallback the executor
//! decides on its local budget and breakers, and no operation touches Redis
//! until a background check — a `PING` every second, waiting on the
//! state's clock ([`RedisSharedStateBuilder::with_clock`]) — finds it again and
//! rejoins; a hung Redis costs at most three operations their timeout. While shared, the same check notices an outage no call has hit
//! yet. Each change of mode is logged (`tracing`, target `recourse::shared`)
//! and published to [`RedisSharedState::subscribe`]'s receivers. An unreachable Redis
//! at start is no error: the state starts in fallback.
//!
//! No TLS: `rediss://` is refused. The URL may carry a password; it is never
//! logged, displayed or returned in an error.

#[cfg(test)]
mod agree;
mod scripts;
mod settings;

pub use settings::{RedisSharedStateBuilder, SharedStateError};

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, RedisError, Script};
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use super::{EndpointHealth, SharedMode, SharedState, SharedUnavailable};
use crate::clock::SystemClock;
use crate::transport::BoxFuture;
use recourse_core::breaker::forgotten_after;
use recourse_core::budget::RetryTokens;

/// Timeouts in a row that put the state in fallback.
const TIMEOUTS_TO_FALL_BACK: u32 = 3;

/// The fleet's retry budget and circuit breakers, in Redis.
///
/// ```no_run
/// use std::sync::Arc;
/// use recourse::{Executor, HttpTransport};
/// use recourse::shared::RedisSharedState;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let shared = RedisSharedState::builder("redis://127.0.0.1:6379")?
///     .with_prefix("recourse:")?
///     .connect()
///     .await;
/// let executor = Executor::builder(HttpTransport::builder().build()?)
///     .with_shared_state(shared)
///     .build();
/// # let _ = executor; Ok(()) }
/// ```
#[derive(Debug)]
pub struct RedisSharedState {
    inner: Arc<Inner>,
    watch: tokio::task::JoinHandle<()>,
}

struct Inner {
    settings: RedisSharedStateBuilder,
    /// The live connection; `None` in fallback.
    conn: Mutex<Option<MultiplexedConnection>>,
    mode: watch::Sender<SharedMode>,
    /// Why the state last fell back: a word, never an address.
    cause: Mutex<&'static str>,
    /// Operations that timed out since the last one that answered.
    timeouts: AtomicU32,
    budget_key: String,
    budget: Script,
    admit: Script,
    failure: Script,
}

impl RedisSharedState {
    /// A builder for the Redis at `url` (`redis://[:PASSWORD@]HOST[:PORT][/DB]`),
    /// with the standard budget (20 % of calls, a floor of 10 a second,
    /// decaying over 10 s) and breakers (open after 5 consecutive transient
    /// failures, for 5 s) — [`RetryBudget::standard`](crate::budget::RetryBudget::standard)'s
    /// and [`CircuitBreakers::standard`](crate::breaker::CircuitBreakers::standard)'s,
    /// for the whole fleet.
    ///
    /// # Errors
    /// A URL that does not parse, or is not `redis://` (`rediss://`: no TLS).
    pub fn builder(url: &str) -> Result<RedisSharedStateBuilder, SharedStateError> {
        let parsed = url::Url::parse(url)
            .map_err(|_| SharedStateError::new("the shared-state URL does not parse"))?;
        match parsed.scheme() {
            "redis" => {}
            "rediss" => {
                return Err(SharedStateError::new(
                    "TLS to Redis (rediss://) is not supported; use redis:// on a private network",
                ));
            }
            _ => {
                return Err(SharedStateError::new(
                    "the shared-state URL must be redis://HOST[:PORT][/DB]",
                ));
            }
        }
        if parsed.host_str().is_none_or(str::is_empty) {
            return Err(SharedStateError::new("the shared-state URL has no host"));
        }
        let client = redis::Client::open(url)
            .map_err(|_| SharedStateError::new("the shared-state URL is not a usable Redis URL"))?;
        Ok(RedisSharedStateBuilder {
            client,
            prefix: "recourse:".to_owned(),
            op_timeout: Duration::from_millis(50),
            check_every: Duration::from_secs(1),
            clock: Arc::new(SystemClock),
            budget: RetryTokens::new(0.2, 10.0, Duration::from_secs(10)),
            threshold: 5,
            open_for: Duration::from_secs(5),
        })
    }

    /// The mode now, and each change after it.
    pub fn subscribe(&self) -> watch::Receiver<SharedMode> {
        self.inner.mode.subscribe()
    }

    /// Why the state last fell back, as a word (`timed_out`,
    /// `connection_refused`, `connection_dropped`, `io_error`, `redis_error`,
    /// or `not_connected` before any connection): never an address.
    pub fn last_cause(&self) -> &'static str {
        *self
            .inner
            .cause
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The key prefix in use.
    pub fn prefix(&self) -> &str {
        &self.inner.settings.prefix
    }
}

impl Drop for RedisSharedState {
    fn drop(&mut self) {
        self.watch.abort();
    }
}

impl RedisSharedStateBuilder {
    /// Connects (waiting at most about a second) and starts the background
    /// check. Never fails: an unreachable Redis starts the state in fallback.
    ///
    /// # Panics
    /// Outside a Tokio runtime.
    pub async fn connect(self) -> Arc<RedisSharedState> {
        let budget_key = format!("{}budget", self.prefix);
        let (mode, _) = watch::channel(SharedMode::Fallback);
        let inner = Arc::new(Inner {
            settings: self,
            conn: Mutex::new(None),
            mode,
            cause: Mutex::new("not_connected"),
            timeouts: AtomicU32::new(0),
            budget_key,
            budget: Script::new(scripts::BUDGET),
            admit: Script::new(scripts::ADMIT),
            failure: Script::new(scripts::FAILURE),
        });
        match inner.open().await {
            Ok(conn) => inner.rejoin(conn),
            Err(cause) => {
                *inner.cause.lock().unwrap_or_else(PoisonError::into_inner) = cause;
                tracing::warn!(
                target: "recourse::shared",
                cause,
                "shared state unreachable at start: deciding on local state until it answers"
                );
            }
        }
        let watch = tokio::spawn(keep_watch(Arc::downgrade(&inner)));
        Arc::new(RedisSharedState { inner, watch })
    }
}

/// Pings Redis while shared (noticing an outage no call has met yet), and
/// tries to reach it in fallback, until the state is dropped.
async fn keep_watch(inner: Weak<Inner>) {
    loop {
        let Some((every, clock)) = inner
            .upgrade()
            .map(|i| (i.settings.check_every, Arc::clone(&i.settings.clock)))
        else {
            return;
        };
        clock.sleep_in_background(every).await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        if inner.connection().is_some() {
            // As any operation: an error falls back, a timeout counts.
            let _ = inner
                .run(async |conn| redis::cmd("PING").query_async::<String>(conn).await)
                .await;
        } else if let Ok(conn) = inner.open().await {
            inner.rejoin(conn);
        }
    }
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSharedState")
            .field("settings", &self.settings)
            .field("mode", &*self.mode.borrow())
            .finish_non_exhaustive()
    }
}

impl Inner {
    fn connection(&self) -> Option<MultiplexedConnection> {
        self.conn
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A new connection that has answered a `PING`.
    async fn open(&self) -> Result<MultiplexedConnection, &'static str> {
        let connect_timeout = (self.settings.op_timeout * 10).max(Duration::from_millis(500));
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(connect_timeout))
            .set_response_timeout(Some(self.settings.op_timeout));
        let client = &self.settings.client;
        let connecting = client.get_multiplexed_async_connection_with_config(&config);
        let conn = match tokio::time::timeout(connect_timeout, connecting).await {
            Ok(Ok(conn)) => conn,
            Ok(Err(e)) => return Err(cause(&e)),
            Err(_) => return Err("timed_out"),
        };
        self.ping(conn.clone()).await?;
        Ok(conn)
    }

    async fn ping(&self, mut conn: MultiplexedConnection) -> Result<(), &'static str> {
        let cmd = redis::cmd("PING");
        let ping = cmd.query_async::<String>(&mut conn);
        match tokio::time::timeout(self.settings.op_timeout, ping).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(cause(&e)),
            Err(_) => Err("timed_out"),
        }
    }

    fn rejoin(&self, conn: MultiplexedConnection) {
        *self.conn.lock().unwrap_or_else(PoisonError::into_inner) = Some(conn);
        self.timeouts.store(0, Ordering::Relaxed);
        let was = self.mode.send_replace(SharedMode::Shared);
        if was != SharedMode::Shared {
            tracing::info!(
                target: "recourse::shared",
                "shared state reachable: the fleet's budget and breakers decide"
            );
        }
    }

    fn fall_back(&self, cause: &'static str) {
        *self.conn.lock().unwrap_or_else(PoisonError::into_inner) = None;
        *self.cause.lock().unwrap_or_else(PoisonError::into_inner) = cause;
        let was = self.mode.send_replace(SharedMode::Fallback);
        if was != SharedMode::Fallback {
            tracing::warn!(
                target: "recourse::shared",
                cause,
                "shared state unreachable: deciding on local state until it returns"
            );
        }
    }

    /// Runs one operation on the live connection, within the timeout. An
    /// error puts the state in fallback; a timeout does on the third in a row.
    async fn run<T, F>(&self, op: F) -> Result<T, SharedUnavailable>
    where
        F: AsyncFnOnce(&mut MultiplexedConnection) -> redis::RedisResult<T>,
    {
        let Some(mut conn) = self.connection() else {
            return Err(SharedUnavailable);
        };
        match tokio::time::timeout(self.settings.op_timeout, op(&mut conn)).await {
            Ok(Ok(value)) => {
                self.timeouts.store(0, Ordering::Relaxed);
                Ok(value)
            }
            Ok(Err(e)) => {
                self.fall_back(cause(&e));
                Err(SharedUnavailable)
            }
            Err(_) => {
                let in_a_row = self.timeouts.fetch_add(1, Ordering::Relaxed) + 1;
                if in_a_row >= TIMEOUTS_TO_FALL_BACK {
                    self.fall_back("timed_out");
                }
                Err(SharedUnavailable)
            }
        }
    }

    async fn budget(&self, op: &'static str) -> Result<bool, SharedUnavailable> {
        let budget = &self.settings.budget;
        self.run(async |conn| {
            self.budget
                .key(&self.budget_key)
                .arg(op)
                .arg(budget.ratio())
                .arg(budget.min_per_sec())
                .arg(millis(budget.ttl()))
                .arg(millis(budget.kept_for()))
                .invoke_async::<i64>(conn)
                .await
        })
        .await
        .map(|granted| granted == 1)
    }

    /// The breaker and probe keys of `endpoint`.
    fn keys(&self, endpoint: &str) -> (String, String) {
        let digest = Sha256::digest(endpoint.as_bytes());
        let hash = recourse_core::hex::lower_hex(&digest[..16]);
        let prefix = &self.settings.prefix;
        (
            format!("{prefix}breaker:{hash}"),
            format!("{prefix}probe:{hash}"),
        )
    }

    /// How long a breaker entry outlives its last failure.
    fn keep_for(&self) -> u64 {
        millis(forgotten_after(self.settings.open_for))
    }
}

impl SharedState for RedisSharedState {
    fn mode(&self) -> SharedMode {
        *self.inner.mode.borrow()
    }

    fn deposit(&self) -> BoxFuture<'_, Result<(), SharedUnavailable>> {
        Box::pin(async move { self.inner.budget("deposit").await.map(drop) })
    }

    fn withdraw(&self) -> BoxFuture<'_, Result<bool, SharedUnavailable>> {
        Box::pin(self.inner.budget("withdraw"))
    }

    fn admit<'a>(&'a self, endpoint: &'a str) -> BoxFuture<'a, Result<bool, SharedUnavailable>> {
        Box::pin(async move {
            let inner = &self.inner;
            let (breaker, probe) = inner.keys(endpoint);
            let (open_for, keep) = (millis(inner.settings.open_for), inner.keep_for());
            inner
                .run(async |conn| {
                    inner
                        .admit
                        .key(&breaker)
                        .key(&probe)
                        .arg(open_for)
                        .arg(keep)
                        .invoke_async::<i64>(conn)
                        .await
                })
                .await
                .map(|admitted| admitted == 1)
        })
    }

    fn record<'a>(
        &'a self,
        endpoint: &'a str,
        health: EndpointHealth,
    ) -> BoxFuture<'a, Result<(), SharedUnavailable>> {
        Box::pin(async move {
            let inner = &self.inner;
            let (breaker, probe) = inner.keys(endpoint);
            let s = &inner.settings;
            match health {
                EndpointHealth::Healthy => {
                    inner
                        .run(async |conn| {
                            redis::cmd("DEL")
                                .arg(&breaker)
                                .arg(&probe)
                                .query_async::<i64>(conn)
                                .await
                        })
                        .await?;
                }
                EndpointHealth::TransientFailure => {
                    let keep = inner.keep_for();
                    inner
                        .run(async |conn| {
                            inner
                                .failure
                                .key(&breaker)
                                .key(&probe)
                                .arg(s.threshold)
                                .arg(millis(s.open_for))
                                .arg(keep)
                                .invoke_async::<i64>(conn)
                                .await
                        })
                        .await?;
                }
            }
            Ok(())
        })
    }
}

/// A word for why Redis did not answer: no address, host or password.
fn cause(error: &RedisError) -> &'static str {
    if error.is_timeout() {
        "timed_out"
    } else if error.is_connection_refusal() {
        "connection_refused"
    } else if error.is_connection_dropped() {
        "connection_dropped"
    } else if error.is_io_error() {
        "io_error"
    } else {
        "redis_error"
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_redis_urls_are_taken_and_no_error_holds_the_url() {
        for (url, says) in [
            ("rediss://:hunter2@cache:6380", "TLS"),
            ("http://:hunter2@cache", "redis://"),
            ("not a url hunter2", "does not parse"),
        ] {
            let e = RedisSharedState::builder(url).unwrap_err().to_string();
            assert!(e.contains(says), "{url}: {e}");
            assert!(!e.contains("hunter2"), "{e}");
        }
        let builder = RedisSharedState::builder("redis://:hunter2@127.0.0.1:6379/2").unwrap();
        let shown = format!("{builder:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
    }

    #[test]
    fn prefixes_are_bounded_and_printable() {
        let b = || RedisSharedState::builder("redis://127.0.0.1").unwrap();
        assert!(b().with_prefix("fleet-a:").is_ok());
        for bad in ["", "has space", "tab\t", &"x".repeat(65), "é"] {
            assert!(b().with_prefix(bad).is_err(), "{bad:?}");
        }
    }
}
