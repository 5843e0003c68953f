//! Admitting requests: the in-flight cap, the body deadline, and the
//! server-wide budget for request bodies held in memory.
//!
//! A request counts as in flight from dispatch until its response has been
//! written to the socket — not only until the handler returns, as with
//! tower's `ConcurrencyLimit`, nor until hyper has taken the body's last
//! frame: a large answer to a slow reader holds its memory until the last
//! byte is out. Over the cap, the request is answered 503 `OVERLOADED` at
//! once, without reading its body.
//!
//! The body deadline covers the whole body (tower-http's `TimeoutBody`
//! resets on every frame, so a client sending a byte a second is never cut).
//! Every body byte delivered to the handler is charged to a server-wide
//! budget until the request is done; a body that would go over it fails, and
//! [`ToolJson`](crate::extract::ToolJson) answers 503 `OVERLOADED`. So many stalled
//! uploads hold at most the budget, not their sum.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{Extensions, Request, Response, header};
use axum::routing::future::RouteFuture;
use http_body::{Frame, SizeHint};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

use super::refusal::overloaded_response;
use super::registry::ConnState;
use crate::serve::ServerLimits;

/// The server-wide admission state, shared by all connections.
#[derive(Debug)]
pub(crate) struct Admission {
    in_flight: Arc<Semaphore>,
    body_memory: Arc<Semaphore>,
    body_timeout: Duration,
}

impl Admission {
    pub(crate) fn new(limits: &ServerLimits) -> Self {
        Self {
            in_flight: Arc::new(Semaphore::new(limits.max_in_flight())),
            body_memory: Arc::new(Semaphore::new(limits.max_body_memory())),
            body_timeout: limits.body_timeout(),
        }
    }
}

/// Why a request body stopped short, as seen by the handler reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyLimitError {
    /// The whole body did not arrive within the body timeout.
    TimedOut(Duration),
    /// The server holds as many body bytes as it allows.
    OverBudget,
}

impl fmt::Display for BodyLimitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TimedOut(d) => write!(f, "the request body did not arrive within {d:?}"),
            Self::OverBudget => f.write_str("the server holds as many request bodies as it allows"),
        }
    }
}

impl std::error::Error for BodyLimitError {}

/// One request's hold on the server: its in-flight slot, its body bytes, and
/// its connection's busy mark. Released when both bodies are gone.
struct Lease {
    conn: Arc<ConnState>,
    _slot: Option<OwnedSemaphorePermit>,
    body_bytes: Mutex<Option<OwnedSemaphorePermit>>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.conn.request_finished();
    }
}

/// The service hyper calls for each request on one connection.
#[derive(Clone)]
pub(crate) struct ConnService {
    pub(crate) router: Router,
    pub(crate) conn: Arc<ConnState>,
    pub(crate) admission: Arc<Admission>,
    pub(crate) extensions: Extensions,
}

impl<B> hyper::service::Service<Request<B>> for ConnService
where
    B: http_body::Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Answering;

    fn call(&self, mut request: Request<B>) -> Self::Future {
        let number = self.conn.request_started(body_len(&request));
        let slot = Arc::clone(&self.admission.in_flight)
            .try_acquire_owned()
            .ok();
        let admitted = slot.is_some();
        let lease = Arc::new(Lease {
            conn: Arc::clone(&self.conn),
            _slot: slot,
            body_bytes: Mutex::new(None),
        });
        if !admitted {
            let response = overloaded_response("requests in flight");
            return Answering::Refused {
                response: Some(leased(response, lease)),
            };
        }
        // hyper gives an HTTP/1 request no extensions: copy the
        // connection's over rather than merge them in one by one.
        let extensions = request.extensions_mut();
        if extensions.is_empty() {
            *extensions = self.extensions.clone();
        } else {
            extensions.extend(self.extensions.clone());
        }
        let admission = Arc::clone(&self.admission);
        let request = request.map(|body| {
            Body::new(RequestBody {
                inner: body,
                deadline: Instant::now() + admission.body_timeout,
                timer: None,
                timeout: admission.body_timeout,
                budget: Arc::clone(&admission.body_memory),
                lease: Arc::clone(&lease),
                number,
            })
        });
        // A `Router` is always ready: `poll_ready` need not be called.
        Answering::Routed {
            routed: tower_service::Service::call(&mut self.router.clone(), request),
            lease: Some(lease),
        }
    }
}

pin_project_lite::pin_project! {
    /// A request's answer, holding its lease until the response is written:
    /// the router's, or a refusal made at once. A named future rather than a
    /// boxed `async` block: no allocation per request.
    #[project = AnsweringProj]
    pub(crate) enum Answering {
        Routed {
            #[pin]
            routed: RouteFuture<Infallible>,
            // Taken into the response when it is ready.
            lease: Option<Arc<Lease>>,
        },
        Refused {
            // Taken when first polled.
            response: Option<Response<Body>>,
        },
    }
}

impl Future for Answering {
    type Output = Result<Response<Body>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Polled again after it answered: there is nothing more to give.
        match self.project() {
            AnsweringProj::Routed { routed, lease } => {
                if lease.is_none() {
                    return Poll::Pending;
                }
                let response = std::task::ready!(routed.poll(cx))?;
                Poll::Ready(Ok(match lease.take() {
                    Some(lease) => leased(response, lease),
                    None => response,
                }))
            }
            AnsweringProj::Refused { response } => match response.take() {
                Some(response) => Poll::Ready(Ok(response)),
                None => Poll::Pending,
            },
        }
    }
}

fn leased(response: Response<Body>, lease: Arc<Lease>) -> Response<Body> {
    response.map(|inner| {
        Body::new(ResponseBody {
            inner,
            lease: Some(lease),
        })
    })
}

/// The declared body length: `Some(0)` without a body, `None` when chunked.
fn body_len<B>(request: &Request<B>) -> Option<u64> {
    let headers = request.headers();
    if headers.contains_key(header::TRANSFER_ENCODING) {
        return None;
    }
    match headers.get(header::CONTENT_LENGTH) {
        None => Some(0),
        Some(v) => v.to_str().ok().and_then(|s| s.trim().parse().ok()),
    }
}

/// A request body with a deadline, charged to the body budget.
///
/// The deadline's timer is armed only when a read has to wait: most bodies
/// arrive with their headers and are read without waiting, and a timer
/// costs an allocation and two trips to the timer wheel.
struct RequestBody<B> {
    inner: B,
    deadline: Instant,
    /// Set from the first read that waits.
    timer: Option<Pin<Box<Sleep>>>,
    timeout: Duration,
    budget: Arc<Semaphore>,
    lease: Arc<Lease>,
    /// The request's number on its connection.
    number: u64,
}

impl<B> RequestBody<B> {
    fn charge(&self, bytes: usize) -> Result<(), BodyLimitError> {
        let n = u32::try_from(bytes).map_err(|_| BodyLimitError::OverBudget)?;
        let permit = Arc::clone(&self.budget)
            .try_acquire_many_owned(n)
            .map_err(|_| BodyLimitError::OverBudget)?;
        let mut held = self
            .lease
            .body_bytes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match held.as_mut() {
            Some(p) => p.merge(permit),
            None => *held = Some(permit),
        }
        Ok(())
    }
}

impl<B> http_body::Body for RequestBody<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<axum::BoxError>,
{
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if this.inner.is_end_stream() {
            this.lease.conn.body_ended(this.number);
            return Poll::Ready(None);
        }
        // Checked before every read, so a body that always has data ready
        // still ends at its deadline.
        let timed_out = || Poll::Ready(Some(Err(BodyLimitError::TimedOut(this.timeout).into())));
        if Instant::now() >= this.deadline {
            return timed_out();
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Pending => {
                let deadline = this.deadline;
                let timer = this
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
                match timer.as_mut().poll(cx) {
                    Poll::Ready(()) => timed_out(),
                    Poll::Pending => Poll::Pending,
                }
            }
            Poll::Ready(None) => {
                this.lease.conn.body_ended(this.number);
                Poll::Ready(None)
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(Some(Ok(frame))) => {
                let size = frame.data_ref().map_or(0, Bytes::len);
                match this.charge(size) {
                    Ok(()) => Poll::Ready(Some(Ok(frame))),
                    Err(e) => Poll::Ready(Some(Err(e.into()))),
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body that holds its request's lease until it is written:
/// when hyper drops it, its last bytes may still be queued, so the lease
/// waits on the connection for the next complete flush.
struct ResponseBody {
    inner: Body,
    lease: Option<Arc<Lease>>,
}

impl Drop for ResponseBody {
    fn drop(&mut self) {
        if let Some(lease) = self.lease.take() {
            let conn = Arc::clone(&lease.conn);
            conn.hold_until_flushed(lease);
        }
    }
}

impl http_body::Body for ResponseBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use tokio_util::sync::CancellationToken;

    use super::super::registry::Registry;
    use super::*;

    /// A body that always has another byte ready and never ends.
    struct Endless;

    impl http_body::Body for Endless {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"x")))))
        }
    }

    async fn frame<B>(body: &mut B) -> Option<Result<Frame<B::Data>, B::Error>>
    where
        B: http_body::Body + Unpin,
    {
        std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_never_waits_still_ends_at_its_deadline() {
        let registry = Registry::new(4);
        let conn = registry.admit(CancellationToken::new()).unwrap();
        let number = conn.request_started(None);
        let mut body = RequestBody {
            inner: Endless,
            deadline: Instant::now() + Duration::from_secs(30),
            timer: None,
            timeout: Duration::from_secs(30),
            budget: Arc::new(Semaphore::new(1 << 20)),
            lease: Arc::new(Lease {
                conn,
                _slot: None,
                body_bytes: Mutex::new(None),
            }),
            number,
        };
        assert!(frame(&mut body).await.unwrap().is_ok());
        tokio::time::advance(Duration::from_secs(31)).await;
        let error = frame(&mut body).await.unwrap().unwrap_err();
        assert!(body.timer.is_none(), "no timer while reads need not wait");
        assert!(
            matches!(
                error.downcast_ref::<BodyLimitError>(),
                Some(BodyLimitError::TimedOut(_))
            ),
            "{error}"
        );
    }
}
