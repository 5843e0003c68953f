//! Time, injectable: the executor reads the clock and sleeps only through
//! [`Clock`], and so does every loop that waits in the background.
//!
//! Production uses the runtime's system clock (real time, tokio's timers).
//! Tests and simulations use [`ManualClock`], whose sleeps return at once
//! after advancing its time, so a test can play a minute of backoff in
//! microseconds and still assert exact waits. Its [`wall`](Clock::wall)
//! time moves with it, so what is due by the calendar (an approval's
//! expiry) is tested the same way.
//!
//! # Waiting in the background
//!
//! A call's own wait moves simulated time: nothing else happens while the
//! call waits. A loop beside it — a lease renewed every third of the lease,
//! a sweeper, a pruner — must not: were its waits to move time, it would
//! spin, and drag the call's clock along. So a background loop waits with
//! [`sleep_in_background`](Clock::sleep_in_background): on real time the
//! same as [`sleep`](Clock::sleep); on a [`ManualClock`], a wait that ends
//! only once the call's sleeps, or the test's
//! [`advance`](ManualClock::advance), have moved time past it. A test of a
//! loop therefore lets it take exactly the turns it means to.

use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant, SystemTime};

use crate::transport::BoxFuture;

/// A source of time that can also sleep.
pub trait Clock: Send + Sync + Debug {
    /// The current instant.
    fn now(&self) -> Instant;
    /// Waits for `duration`: the caller's own wait.
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;
    /// Waits for `duration` in a loop beside the work that moves time (a
    /// lease renewal, a sweep): [`sleep`](Clock::sleep), unless the clock
    /// simulates time — then a wait that ends once time has been moved past
    /// it, without moving it (see the [module docs](self)).
    fn sleep_in_background(&self, duration: Duration) -> BoxFuture<'static, ()> {
        self.sleep(duration)
    }
    /// The current wall-clock time, for what is due by the calendar (an
    /// approval's expiry): the system's, unless the clock keeps its own.
    fn wall(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// Simulated time: `sleep` advances the clock instantly and records the
/// wait; `sleep_in_background` waits for time to be moved past it.
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
///
/// A loop's wait ends only as time is moved past it:
///
/// ```
/// use std::time::Duration;
/// use recourse_core::clock::{Clock, ManualClock};
/// # use std::future::Future;
/// # use std::task::{Context, Waker};
///
/// let clock = ManualClock::new();
/// let mut turn = clock.sleep_in_background(Duration::from_secs(10));
/// let mut cx = Context::from_waker(Waker::noop());
/// assert!(turn.as_mut().poll(&mut cx).is_pending());
/// clock.advance(Duration::from_secs(9));
/// assert!(turn.as_mut().poll(&mut cx).is_pending());
/// let _ = clock.sleep(Duration::from_secs(1)); // the call's own wait moves time
/// assert!(turn.as_mut().poll(&mut cx).is_ready());
/// assert_eq!(clock.background_sleeps(), vec![Duration::from_secs(10)]);
/// assert_eq!(clock.sleeps(), vec![Duration::from_secs(1)]);
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
    background: Vec<Duration>,
    /// The background waits not over yet.
    waiting: Vec<Waker>,
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

    /// Moves time forward without recording a sleep (ending the background
    /// waits due by then).
    pub fn advance(&self, by: Duration) {
        let waiting = {
            let mut state = self.lock();
            state.offset += by;
            std::mem::take(&mut state.waiting)
        };
        waiting.into_iter().for_each(Waker::wake);
    }

    /// Every sleep requested so far, in order.
    pub fn sleeps(&self) -> Vec<Duration> {
        self.lock().sleeps.clone()
    }

    /// Every background wait begun so far ([`Clock::sleep_in_background`]),
    /// in order: the turns the loops on this clock took.
    pub fn background_sleeps(&self) -> Vec<Duration> {
        self.lock().background.clone()
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
        self.lock().sleeps.push(duration);
        self.advance(duration);
        Box::pin(async {})
    }

    fn sleep_in_background(&self, duration: Duration) -> BoxFuture<'static, ()> {
        let until = {
            let mut state = self.lock();
            state.background.push(duration);
            state.offset.saturating_add(duration)
        };
        let clock = self.clone();
        Box::pin(std::future::poll_fn(move |cx| {
            let mut state = clock.lock();
            if state.offset >= until {
                Poll::Ready(())
            } else {
                state.waiting.push(cx.waker().clone());
                Poll::Pending
            }
        }))
    }

    fn wall(&self) -> SystemTime {
        self.wall_base + self.lock().offset
    }
}
