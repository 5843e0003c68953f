//! Time, injectable: the executor reads the clock and sleeps only through [`Clock`].
//!
//! Production uses the runtime's system clock (real time, tokio's timers). Tests and simulations use [`ManualClock`],
//! whose sleeps return at once after advancing its time, so a test can play a
//! minute of backoff in microseconds and still assert exact waits. Its
//! [`wall`](Clock::wall) time moves with it, so what is due by the calendar
//! (an approval's expiry) is tested the same way.

use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::transport::BoxFuture;

/// A source of time that can also sleep.
pub trait Clock: Send + Sync + Debug {
    /// The current instant.
    fn now(&self) -> Instant;
    /// Waits for `duration`.
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;
    /// The current wall-clock time, for what is due by the calendar (an
    /// approval's expiry): the system's, unless the clock keeps its own.
    fn wall(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// Simulated time: `sleep` advances the clock instantly and records the wait.
///
/// ```
/// use std::time::Duration;
/// use recourse_core::clock::{Clock, ManualClock};
///
/// # tokio_test_block(async {
/// let clock = ManualClock::new();
/// let (t0, w0) = (clock.now(), clock.wall());
/// clock.sleep(Duration::from_secs(60)).await;
/// assert_eq!(clock.now() - t0, Duration::from_secs(60));
/// assert_eq!(clock.wall().duration_since(w0).unwrap(), Duration::from_secs(60));
/// assert_eq!(clock.sleeps(), vec![Duration::from_secs(60)]);
/// # });
/// # fn tokio_test_block(f: impl std::future::Future<Output = ()>) {
/// #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ManualClock {
    base: Instant,
    wall_base: SystemTime,
    state: Arc<Mutex<ManualState>>,
}

#[derive(Debug, Default)]
struct ManualState {
    offset: Duration,
    sleeps: Vec<Duration>,
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl ManualClock {
    /// A clock starting now that never really sleeps.
    pub fn new() -> Self {
        Self {
            base: Instant::now(),
            wall_base: SystemTime::now(),
            state: Arc::default(),
        }
    }

    /// Moves time forward without recording a sleep.
    pub fn advance(&self, by: Duration) {
        self.lock().offset += by;
    }

    /// Every sleep requested so far, in order.
    pub fn sleeps(&self) -> Vec<Duration> {
        self.lock().sleeps.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ManualState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.base + self.lock().offset
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        {
            let mut state = self.lock();
            state.offset += duration;
            state.sleeps.push(duration);
        }
        Box::pin(async {})
    }

    fn wall(&self) -> SystemTime {
        self.wall_base + self.lock().offset
    }
}
