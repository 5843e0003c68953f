//! Time, injectable: the executor reads the clock and sleeps only through
//! [`Clock`]; [`SystemClock`] is real time, [`ManualClock`] simulated.

pub use recourse_core::clock::{Clock, ManualClock};
use recourse_core::transport::BoxFuture;
use std::time::{Duration, Instant};

/// Real time, with `tokio::time::sleep`.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}
