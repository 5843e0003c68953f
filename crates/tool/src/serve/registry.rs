//! The open connections, their state, and the connection cap.
//!
//! At the cap, a new connection is worth more than one that sits idle: the
//! idle one's client can reconnect at no cost, while refusing the new one
//! may refuse the only request that matters (a health check, say). So the
//! connection idle longest is closed to make room, and only when every
//! connection is busy is the new one refused. Running out of file
//! descriptors before the cap is handled the same way.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use futures_util::task::AtomicWaker;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// What the server knows of one connection, shared by its I/O, its
/// requests and the registry.
pub(crate) struct ConnState {
    id: u64,
    /// Requests dispatched and not yet answered in full.
    busy: AtomicUsize,
    /// Requests dispatched so far.
    dispatched: AtomicU64,
    /// The body length of the last dispatched request; `u64::MAX` if unknown.
    last_body_len: AtomicU64,
    /// The number of the last dispatched request whose body was read to its end.
    body_ended_for: AtomicU64,
    /// Bytes of a header block have arrived and it is not dispatched yet.
    head_in_progress: AtomicBool,
    /// When the connection last became idle (or opened).
    idle_since: Mutex<Instant>,
    /// Cancelled to close the connection at once.
    close: CancellationToken,
    /// Wakes the connection's I/O when it becomes idle, so that its idle
    /// timer starts even if hyper is not reading at that moment.
    io_waker: AtomicWaker,
    /// The connection's own flush is releasing what waited for it: a request
    /// that finishes then is seen by the flush itself, which starts the idle
    /// timer, so waking the connection's task would only poll it again.
    flushing: AtomicBool,
    /// Holds of requests whose response hyper has taken but not yet written.
    unflushed: Mutex<Vec<Arc<dyn Send + Sync>>>,
    /// The connection's task has ended: nothing more may be held.
    ended: AtomicBool,
}

impl std::fmt::Debug for ConnState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnState")
            .field("id", &self.id)
            .field("busy", &self.busy)
            .finish_non_exhaustive()
    }
}

impl ConnState {
    fn new(id: u64, close: CancellationToken) -> Self {
        Self {
            id,
            busy: AtomicUsize::new(0),
            dispatched: AtomicU64::new(0),
            last_body_len: AtomicU64::new(0),
            body_ended_for: AtomicU64::new(0),
            head_in_progress: AtomicBool::new(false),
            idle_since: Mutex::new(Instant::now()),
            close,
            io_waker: AtomicWaker::new(),
            flushing: AtomicBool::new(false),
            unflushed: Mutex::new(Vec::new()),
            ended: AtomicBool::new(false),
        }
    }

    /// Keeps `hold` until everything hyper has queued is written (or the
    /// connection ends).
    pub(crate) fn hold_until_flushed(&self, hold: Arc<dyn Send + Sync>) {
        if self.ended.load(Ordering::Acquire) {
            return;
        }
        lock(&self.unflushed).push(hold);
    }

    /// Everything queued is written: lets go of what waited for it.
    pub(crate) fn flushed(&self) {
        // Cleared in place, keeping the list's room for the next request:
        // releasing a hold takes no lock of this list.
        lock(&self.unflushed).clear();
    }

    /// [`flushed`](Self::flushed), called by the connection's own I/O, which
    /// then looks at [`is_busy`](Self::is_busy) itself instead of being woken.
    pub(crate) fn flushed_by_io(&self) {
        self.flushing.store(true, Ordering::SeqCst);
        self.flushed();
        self.flushing.store(false, Ordering::SeqCst);
    }

    /// The connection's task has ended.
    pub(crate) fn ended(&self) {
        self.ended.store(true, Ordering::Release);
        self.flushed();
    }

    /// A request was dispatched; `body_len` is `None` when not known in
    /// advance. Returns the request's number on this connection (from 1).
    pub(crate) fn request_started(&self, body_len: Option<u64>) -> u64 {
        self.busy.fetch_add(1, Ordering::AcqRel);
        self.last_body_len
            .store(body_len.unwrap_or(u64::MAX), Ordering::Release);
        self.head_in_progress.store(false, Ordering::Release);
        self.dispatched.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// A request is answered in full (or abandoned).
    pub(crate) fn request_finished(&self) {
        if self.busy.fetch_sub(1, Ordering::SeqCst) == 1 {
            *lock(&self.idle_since) = Instant::now();
            if !self.flushing.load(Ordering::SeqCst) {
                self.io_waker.wake();
            }
        }
    }

    /// The body of request `number` was read to its end.
    pub(crate) fn body_ended(&self, number: u64) {
        self.body_ended_for.store(number, Ordering::Release);
    }

    /// Registers the task reading the connection, to be woken when it turns idle.
    pub(crate) fn register_io(&self, waker: &std::task::Waker) {
        self.io_waker.register(waker);
    }

    pub(crate) fn set_head_in_progress(&self, yes: bool) {
        self.head_in_progress.store(yes, Ordering::Release);
    }

    pub(crate) fn is_busy(&self) -> bool {
        self.busy.load(Ordering::Acquire) > 0
    }

    /// Neither handling a request nor receiving one.
    pub(crate) fn is_idle(&self) -> bool {
        !self.is_busy() && !self.head_in_progress.load(Ordering::Acquire)
    }

    pub(crate) fn dispatched(&self) -> u64 {
        self.dispatched.load(Ordering::Acquire)
    }

    pub(crate) fn last_body_len(&self) -> Option<u64> {
        let n = self.last_body_len.load(Ordering::Acquire);
        (n != u64::MAX).then_some(n)
    }

    pub(crate) fn body_ended_for(&self) -> u64 {
        self.body_ended_for.load(Ordering::Acquire)
    }

    pub(crate) fn idle_since(&self) -> Instant {
        *lock(&self.idle_since)
    }

    /// Resolves when the connection must close at once.
    pub(crate) async fn closed(&self) {
        self.close.cancelled().await;
    }
}

/// The open connections, at most `max` of them.
#[derive(Debug)]
pub(crate) struct Registry {
    max: usize,
    next_id: AtomicU64,
    open: Mutex<HashMap<u64, Arc<ConnState>>>,
}

impl Registry {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            max,
            next_id: AtomicU64::new(0),
            open: Mutex::new(HashMap::new()),
        }
    }

    /// Registers a new connection, closing the longest-idle one if at the
    /// cap; `None` when at the cap with none idle. `close` closes it.
    pub(crate) fn admit(&self, close: CancellationToken) -> Option<Arc<ConnState>> {
        let mut open = lock(&self.open);
        if open.len() >= self.max && !evict_longest_idle(&mut open) {
            return None;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let state = Arc::new(ConnState::new(id, close));
        open.insert(id, Arc::clone(&state));
        Some(state)
    }

    /// Closes the longest-idle connection, if any; whether one was closed.
    pub(crate) fn evict_idle(&self) -> bool {
        evict_longest_idle(&mut lock(&self.open))
    }

    /// Forgets a connection that has closed.
    pub(crate) fn remove(&self, state: &ConnState) {
        lock(&self.open).remove(&state.id);
    }

    /// How many connections are open.
    pub(crate) fn len(&self) -> usize {
        lock(&self.open).len()
    }
}

fn evict_longest_idle(open: &mut HashMap<u64, Arc<ConnState>>) -> bool {
    let victim = open
        .values()
        .filter(|c| c.is_idle())
        .min_by_key(|c| c.idle_since())
        .map(|c| c.id);
    let Some(state) = victim.and_then(|id| open.remove(&id)) else {
        return false;
    };
    state.close.cancel();
    true
}

/// Locks a mutex whose data stays consistent even if a holder panicked.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn at_the_cap_the_longest_idle_goes_first_and_busy_ones_stay() {
        let registry = Registry::new(2);
        let first = registry.admit(CancellationToken::new()).unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        let second = registry.admit(CancellationToken::new()).unwrap();

        let third = registry.admit(CancellationToken::new()).unwrap();
        assert!(first.close.is_cancelled(), "the longest idle is closed");
        assert!(!second.close.is_cancelled());
        assert_eq!(registry.len(), 2);

        second.request_started(Some(0));
        third.set_head_in_progress(true);
        assert!(
            registry.admit(CancellationToken::new()).is_none(),
            "nothing idle: refused"
        );
        second.request_finished();
        assert!(registry.admit(CancellationToken::new()).is_some());
        assert!(second.close.is_cancelled());
        assert!(
            !third.close.is_cancelled(),
            "a request arriving is not idle"
        );
    }
}
