//! A call that finishes even when its client stops waiting.
//!
//! A call runs inside the request's own task, so the common case — the
//! client waits for its answer — costs no task of its own, no join and no
//! wake-up across tasks. When the client stops waiting (its timeout, a
//! dropped connection, a cancellation) the door drops the call's future;
//! [`Finishing`] then hands the call, as far as it got, to a task of the
//! door's [`TaskTracker`], so a write is never cancelled mid-flight: it
//! finishes and is journaled, and the client's retry with the same key gets
//! its record. Shutdown waits for that tracker (within the grace), and a
//! call counts as tracked from its first poll, so none falls between the two.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio_util::task::TaskTracker;
use tokio_util::task::task_tracker::TrackedFuture;

/// The call stopped by panicking; its outcome is unknown.
#[derive(Debug)]
pub(crate) struct Aborted;

/// `call`, awaited in place, moved to `tracker` if dropped before it ends.
pub(crate) fn finishing<F>(tracker: &TaskTracker, call: F) -> Finishing<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    Finishing {
        call: Some(Box::pin(tracker.track_future(call))),
    }
}

/// See [`finishing`].
pub(crate) struct Finishing<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    /// The call, until it ends or is handed over; tracked from the start.
    call: Option<Pin<Box<TrackedFuture<F>>>>,
}

impl<F> Future for Finishing<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    type Output = Result<F::Output, Aborted>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(call) = self.call.as_mut() else {
            // Polled again after it ended: there is nothing more to give.
            return Poll::Pending;
        };
        let polled = catch_unwind(AssertUnwindSafe(|| call.as_mut().poll(cx)));
        match polled {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => {
                self.call = None;
                Poll::Ready(Ok(output))
            }
            Err(_) => {
                self.call = None;
                Poll::Ready(Err(Aborted))
            }
        }
    }
}

impl<F> Drop for Finishing<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn drop(&mut self) {
        let Some(call) = self.call.take() else {
            return;
        };
        // The future is tracked already, so a plain task keeps the tracker
        // waiting for it. Outside a runtime (it is shutting down) nothing can
        // run the call further; it goes with the runtime, as a task would.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(call);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_call_awaited_to_its_end_gives_its_output() {
        let tracker = TaskTracker::new();
        let out = finishing(&tracker, async { 7 }).await;
        assert!(matches!(out, Ok(7)));
        assert!(tracker.is_empty());
    }

    #[tokio::test]
    async fn a_dropped_call_finishes_in_the_tracker() {
        let tracker = TaskTracker::new();
        let finished = Arc::new(AtomicBool::new(false));
        let (started_tx, started) = tokio::sync::oneshot::channel();
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        let flag = Arc::clone(&finished);
        let call = finishing(&tracker, async move {
            let _ = started_tx.send(());
            let _ = released.await;
            flag.store(true, Ordering::SeqCst);
        });
        let waiting = tokio::spawn(call);
        started.await.unwrap();
        assert_eq!(tracker.len(), 1, "a call in progress is tracked");
        // The client stops waiting: the request's future is dropped.
        waiting.abort();
        let _ = waiting.await;
        assert!(!finished.load(Ordering::SeqCst));
        assert_eq!(tracker.len(), 1, "the call was handed over, not dropped");
        release.send(()).unwrap();
        tracker.close();
        tokio::time::timeout(Duration::from_secs(5), tracker.wait())
            .await
            .unwrap();
        assert!(finished.load(Ordering::SeqCst));
    }

    #[tokio::test]
    async fn a_panicking_call_is_an_abort_not_a_panic() {
        let tracker = TaskTracker::new();
        let out = finishing(&tracker, async {
            if std::hint::black_box(true) {
                panic!("the call broke");
            }
        })
        .await;
        assert!(matches!(out, Err(Aborted)));
    }
}
