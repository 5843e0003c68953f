//! A quick answer as one JSON body, where rmcp would stream it.
//!
//! # Why
//!
//! In a session (protocol versions up to 2025-11-25) rmcp answers every POST
//! that holds a request with a Server-Sent Events stream: a priming event,
//! the answer, then the end of the stream. Streamable HTTP lets a server
//! answer with one `application/json` body instead, and every client must
//! accept both. For a call answered at once the stream is pure cost, to the
//! client most (chunked framing, an event parser, the priming event), and
//! rmcp offers JSON answers only to sessionless servers — the proxy keeps
//! sessions to pass list changes on.
//!
//! So this layer reads the start of such a stream. When its first message is
//! the answer (a JSON-RPC response, not a notification or a request of the
//! server's) and comes within [`PATIENCE`], the client gets that message as
//! one JSON body. Otherwise — the handler notified first, the call is slow,
//! the stream is odd — the client gets the stream as rmcp wrote it, from its
//! first byte, keep-alive comments and all: nothing is lost or reordered,
//! and a slow call still streams.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::header::{ACCEPT, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, TRANSFER_ENCODING};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, response::Parts};
use axum::middleware::Next;
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use http_body::{Frame, SizeHint};
use http_body_util::BodyExt;
use serde::Deserialize;
use serde::de::IgnoredAny;

/// How long an answer is waited for before the stream is passed on as it
/// is: below rmcp's SSE keep-alive (15 s), so a slow call's stream carries
/// its keep-alive comments to the client as before.
pub(crate) const PATIENCE: Duration = Duration::from_secs(10);

/// The most bytes of a stream held while looking for its first message:
/// past it, the stream is passed on.
const MAX_HELD: usize = 4 * 1024 * 1024;

/// The layer (`axum::middleware::from_fn`): a POST whose client accepts JSON
/// and whose answer rmcp streams gets its answer as one JSON body when it
/// can (see the module docs).
pub(crate) async fn as_json(request: Request, next: Next) -> Response {
    answered(request, next, PATIENCE).await
}

async fn answered(request: Request, next: Next, patience: Duration) -> Response {
    let wanted = request.method() == Method::POST && accepts_json(request.headers());
    let response = next.run(request).await;
    if !wanted || response.status() != StatusCode::OK || !is_event_stream(response.headers()) {
        return response;
    }
    let (parts, body) = response.into_parts();
    let mut held = Held::new(body);
    match tokio::time::timeout(patience, held.first_message()).await {
        Ok(Some(message)) if is_response(&message) => one_body(parts, message),
        _ => Response::from_parts(parts, Body::new(held.replayed())),
    }
}

/// Whether `Accept` names `application/json`.
fn accepts_json(headers: &HeaderMap) -> bool {
    headers
        .get_all(ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|range| {
            let media = range.split(';').next().unwrap_or_default().trim();
            media.eq_ignore_ascii_case("application/json")
        })
}

fn is_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("text/event-stream"))
}

/// Whether `message` is a JSON-RPC response: an id, and no method (a
/// request or a notification of the server's names one).
fn is_response(message: &str) -> bool {
    #[derive(Deserialize)]
    struct Shape {
        method: Option<IgnoredAny>,
        id: Option<IgnoredAny>,
    }
    serde_json::from_str::<Shape>(message)
        .is_ok_and(|shape| shape.method.is_none() && shape.id.is_some())
}

/// The answer's response: the stream's headers but for its framing, and the
/// message as its body.
fn one_body(mut parts: Parts, message: String) -> Response {
    for streamed in [
        CONTENT_TYPE,
        CACHE_CONTROL,
        CONTENT_LENGTH,
        TRANSFER_ENCODING,
    ] {
        parts.headers.remove(streamed);
    }
    parts.headers.remove("x-accel-buffering");
    parts
        .headers
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Response::from_parts(parts, Body::from(message))
}

/// A stream's body with the bytes read from it so far.
struct Held {
    /// The rest of the stream; `None` once it ended or failed (a body is
    /// not polled past its end).
    body: Option<Body>,
    read: BytesMut,
    /// Where the event being read starts in `read`.
    event_start: usize,
}

impl Held {
    fn new(body: Body) -> Self {
        Self {
            body: Some(body),
            read: BytesMut::new(),
            event_start: 0,
        }
    }

    /// The data of the stream's first event that carries any, once it has
    /// been read whole; `None` when the stream ends, fails or grows past
    /// [`MAX_HELD`] first. Cancel-safe: what was read stays held.
    async fn first_message(&mut self) -> Option<String> {
        loop {
            while let Some((length, data)) = event(&self.read[self.event_start..]) {
                self.event_start += length;
                if let Some(data) = data {
                    return Some(data);
                }
            }
            if self.read.len() > MAX_HELD {
                return None;
            }
            let body = self.body.as_mut()?;
            match body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.read.extend_from_slice(&data);
                    }
                }
                Some(Err(_)) | None => {
                    self.body = None;
                    return None;
                }
            }
        }
    }

    /// The whole stream again: what was read, then the rest as it comes.
    fn replayed(self) -> Replayed {
        Replayed {
            first: (!self.read.is_empty()).then(|| self.read.freeze()),
            rest: self.body,
        }
    }
}

/// One complete event at the start of `stream` (Server-Sent Events, any
/// line ending): its length in bytes, and its data when it has any
/// (`data` fields joined by newlines); `None` while it is incomplete. Data
/// that is not UTF-8 reads as none.
fn event(stream: &[u8]) -> Option<(usize, Option<String>)> {
    let mut at = 0;
    let mut data: Option<Vec<u8>> = None;
    loop {
        let rest = &stream[at..];
        let end = memchr::memchr2(b'\n', b'\r', rest)?;
        let ending = match (rest[end], rest.get(end + 1)) {
            (b'\r', Some(b'\n')) => 2,
            // A lone CR at the end of what was read may be half a CRLF.
            (b'\r', None) => return None,
            _ => 1,
        };
        let line = &rest[..end];
        at += end + ending;
        if line.is_empty() {
            let data = data.and_then(|bytes| String::from_utf8(bytes).ok());
            return Some((at, data.filter(|d| !d.is_empty())));
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        if field == b"data" {
            let data = data.get_or_insert_with(Vec::new);
            if !data.is_empty() {
                data.push(b'\n');
            }
            data.extend_from_slice(value);
        }
    }
}

/// A body that yields `first`, then `rest`.
struct Replayed {
    first: Option<Bytes>,
    rest: Option<Body>,
}

impl http_body::Body for Replayed {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        if let Some(first) = self.first.take() {
            return Poll::Ready(Some(Ok(Frame::data(first))));
        }
        match &mut self.rest {
            Some(rest) => Pin::new(rest).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.first.is_none() && self.rest.as_ref().is_none_or(Body::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        let held = self.first.as_ref().map_or(0, |first| first.len() as u64);
        let rest = self
            .rest
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), Body::size_hint);
        // The upper bound first: a lower one may not exceed it.
        let mut hint = SizeHint::new();
        if let Some(upper) = rest.upper() {
            hint.set_upper(upper.saturating_add(held));
        }
        hint.set_lower(rest.lower().saturating_add(held));
        hint
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::sync::{Arc, Mutex};

    use axum::Router;
    use axum::routing::post;
    use tokio::sync::mpsc;
    use tower::ServiceExt;

    use super::*;

    const PRIMING: &str = "data: \nid: 0/0\nretry: 3000\n\n";
    const ANSWER: &str = r#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#;

    /// A POST with `accept` through the layer to a handler that streams
    /// what `events` sends, as rmcp's session does.
    async fn through(
        accept: &'static str,
        patience: Duration,
        events: mpsc::UnboundedReceiver<Bytes>,
    ) -> Response {
        let events = Arc::new(Mutex::new(Some(events)));
        let streamed = move || {
            let events = events.lock().unwrap().take().expect("one request");
            async move {
                let chunks = futures_util::stream::unfold(events, |mut events| async move {
                    let chunk = events.recv().await?;
                    Some((Ok::<_, Infallible>(chunk), events))
                });
                Response::builder()
                    .header(CONTENT_TYPE, "text/event-stream")
                    .header(CACHE_CONTROL, "no-cache")
                    .header("mcp-session-id", "s1")
                    .body(Body::from_stream(chunks))
                    .unwrap()
            }
        };
        let app = Router::new()
            .route("/mcp", post(streamed))
            .layer(axum::middleware::from_fn(move |request, next| {
                answered(request, next, patience)
            }));
        let request = axum::http::Request::post("/mcp")
            .header(ACCEPT, accept)
            .body(Body::empty())
            .unwrap();
        app.oneshot(request).await.unwrap()
    }

    async fn text(response: Response) -> String {
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    fn sent(chunks: &[&str]) -> mpsc::UnboundedReceiver<Bytes> {
        let (tx, rx) = mpsc::unbounded_channel();
        for chunk in chunks {
            tx.send(Bytes::copy_from_slice(chunk.as_bytes())).unwrap();
        }
        rx
    }

    const BOTH: &str = "application/json, text/event-stream";

    #[tokio::test]
    async fn a_quick_answer_is_one_json_body_with_the_sessions_headers() {
        // The answer split across reads, as a socket may deliver it.
        let answer = format!("data: {ANSWER}\nid: 0/1\n\n");
        let (head, tail) = answer.split_at(20);
        let response = through(BOTH, PATIENCE, sent(&[PRIMING, head, tail])).await;
        assert_eq!(response.status(), StatusCode::OK);
        let headers = response.headers();
        assert_eq!(headers[CONTENT_TYPE], "application/json");
        assert_eq!(headers["mcp-session-id"], "s1");
        assert!(headers.get(CACHE_CONTROL).is_none());
        assert_eq!(text(response).await, ANSWER);
    }

    #[tokio::test]
    async fn a_stream_that_notifies_first_is_passed_on_byte_for_byte() {
        let notification = "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n";
        let answer = format!("data: {ANSWER}\n\n");
        let chunks = [PRIMING, notification, ":ping\n\n", &answer];
        let response = through(BOTH, PATIENCE, sent(&chunks)).await;
        assert_eq!(response.headers()[CONTENT_TYPE], "text/event-stream");
        assert_eq!(text(response).await, chunks.concat());
    }

    #[tokio::test]
    async fn a_client_that_takes_only_a_stream_gets_one() {
        let answer = format!("data: {ANSWER}\n\n");
        let response = through("text/event-stream", PATIENCE, sent(&[PRIMING, &answer])).await;
        assert_eq!(text(response).await, format!("{PRIMING}{answer}"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_answer_streams_from_the_first_byte() {
        let (tx, rx) = mpsc::unbounded_channel();
        tx.send(Bytes::from_static(PRIMING.as_bytes())).unwrap();
        // Nothing more comes within the patience: the stream is passed on.
        let response = through(BOTH, Duration::from_secs(1), rx).await;
        assert_eq!(response.headers()[CONTENT_TYPE], "text/event-stream");
        let answer = format!(":ping\n\ndata: {ANSWER}\n\n");
        tx.send(Bytes::from(answer.clone())).unwrap();
        drop(tx);
        assert_eq!(text(response).await, format!("{PRIMING}{answer}"));
    }

    proptest::proptest! {
        /// Whatever the bytes, reading an event is total and consumes no
        /// more than it was given; and an event is found however the
        /// stream was split into reads (what was read so far is parsed
        /// again from the event's start each time).
        #[test]
        fn reading_events_is_total_and_split_blind(
            noise in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
            split in 0usize..64,
        ) {
            if let Some((length, _)) = event(&noise) {
                proptest::prop_assert!(length <= noise.len());
            }
            let stream = format!("{PRIMING}data: {ANSWER}\n\n");
            let split = split.min(stream.len());
            let mut read = stream.as_bytes()[..split].to_vec();
            let mut start = 0;
            let mut found = None;
            for more in [&stream.as_bytes()[split..], &[][..]] {
                while let Some((length, data)) = event(&read[start..]) {
                    start += length;
                    if data.is_some() {
                        found = data;
                    }
                }
                read.extend_from_slice(more);
            }
            proptest::prop_assert_eq!(found.as_deref(), Some(ANSWER));
        }
    }

    #[tokio::test]
    async fn a_stream_that_ends_without_a_message_is_passed_on() {
        let response = through(BOTH, PATIENCE, sent(&[PRIMING])).await;
        assert_eq!(text(response).await, PRIMING);
    }

    #[test]
    fn an_event_is_read_whole_with_any_line_ending() {
        for ending in ["\n", "\r\n", "\r"] {
            let stream = format!("data: {{\"id\":1}}{ending}id: 0/1{ending}{ending}rest");
            let (length, data) = event(stream.as_bytes()).expect("a whole event");
            assert_eq!(&stream[length..], "rest", "{ending:?}");
            assert_eq!(data.as_deref(), Some("{\"id\":1}"), "{ending:?}");
        }
    }

    #[test]
    fn a_priming_event_or_a_comment_carries_no_data() {
        assert_eq!(event(b"data: \nid: 0/0\nretry: 3000\n\n"), Some((28, None)));
        assert_eq!(event(b":ping\n\n"), Some((7, None)));
    }

    #[test]
    fn an_event_not_yet_ended_is_not_read() {
        for partial in [
            &b""[..],
            b"data: {",
            b"data: {}\n",
            b"data: {}\r\n\r",
            b"data: {}\n\r",
        ] {
            assert_eq!(
                event(partial),
                None,
                "{:?}",
                String::from_utf8_lossy(partial)
            );
        }
    }

    #[test]
    fn data_lines_are_joined_and_bad_utf8_is_no_data() {
        assert_eq!(
            event(b"data:a\ndata: b\n\n"),
            Some((16, Some("a\nb".to_owned())))
        );
        assert_eq!(event(b"data: \xff\n\n"), Some((9, None)));
    }

    #[test]
    fn only_a_response_is_an_answer() {
        assert!(is_response(r#"{"jsonrpc":"2.0","id":2,"result":{}}"#));
        assert!(is_response(
            r#"{"jsonrpc":"2.0","id":"a","error":{"code":1,"message":""}}"#
        ));
        assert!(!is_response(
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#
        ));
        assert!(!is_response(
            r#"{"jsonrpc":"2.0","id":9,"method":"sampling/createMessage"}"#
        ));
        assert!(!is_response("not json"));
    }

    #[test]
    fn accept_is_read_as_a_list_of_media_ranges() {
        let mut headers = HeaderMap::new();
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("text/event-stream, Application/JSON; q=0.9"),
        );
        assert!(accepts_json(&headers));
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        assert!(!accepts_json(&headers));
    }
}
