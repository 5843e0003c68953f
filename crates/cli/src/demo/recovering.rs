//! A transport that lets the demo's tool recover: after a number of dispatches
//! it clears the reference tools' faults, as a real outage or quota window ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use recourse::transport::{BoxFuture, Delivery, Request};
use recourse::{HttpTransport, Transport};
use recourse_reference_tools::RunningTools;

pub(crate) struct Recovering {
    inner: HttpTransport,
    tools: Arc<RunningTools>,
    faulty_dispatches: u32,
    sent: AtomicU32,
}

impl Recovering {
    /// Clears the faults once `faulty_dispatches` requests have been answered.
    pub(crate) fn new(
        inner: HttpTransport,
        tools: Arc<RunningTools>,
        faulty_dispatches: u32,
    ) -> Self {
        Self {
            inner,
            tools,
            faulty_dispatches,
            sent: AtomicU32::new(0),
        }
    }
}

impl Transport for Recovering {
    fn send<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Delivery> {
        Box::pin(async move {
            let delivery = self.inner.send(request).await;
            if self.sent.fetch_add(1, Ordering::SeqCst) + 1 >= self.faulty_dispatches {
                self.tools.set_faults(Vec::new());
            }
            delivery
        })
    }
}
