//! Scripted tools: an in-process transport that plays a scenario's answers,
//! a truthful outcome lookup for it, and a recorder that keeps every request
//! any transport sends (the evidence false-recovery checks read).

use std::sync::{Arc, Mutex, PoisonError};

use recourse::reconcile::{ReconcileRequest, Reconciliation};
use recourse::transport::{BoxFuture, Delivery, RawResponse, Request, TransportFailure};
use recourse::{InProcessTransport, Reconciler, Transport};
use serde_json::Value;

use recourse_protocol::{ToolError, ToolResponse};

use super::scenario::{Lookup, Script, ScriptRead, Step};

/// What a scripted tool has seen and done.
#[derive(Debug, Default)]
struct ScriptState {
    answered: usize,
    /// The data of each committed write, in order.
    commits: Vec<Value>,
    /// What the script's read shows now (`None`: its initial state).
    shown: Option<Value>,
}

/// A scenario's scripted tool: its transport and its ground truth.
#[derive(Debug, Clone)]
pub(crate) struct ScriptedTool {
    script: Arc<Script>,
    state: Arc<Mutex<ScriptState>>,
}

impl ScriptedTool {
    pub(crate) fn new(script: Script) -> Self {
        Self {
            script: Arc::new(script),
            state: Arc::default(),
        }
    }

    /// The transport that plays the script.
    pub(crate) fn transport(&self) -> InProcessTransport {
        let tool = self.clone();
        InProcessTransport::new(move |request: Request| {
            let delivery = match &tool.script.read {
                Some(read) if request.target.as_str() == read.tool => tool.read(read),
                _ => tool.answer(&request.payload),
            };
            async move { delivery }
        })
    }

    /// The outcome lookup for the script's writes.
    pub(crate) fn reconciler(&self) -> Arc<dyn Reconciler> {
        Arc::new(ScriptLookup { tool: self.clone() })
    }

    /// Writes the tool committed.
    pub(crate) fn writes(&self) -> usize {
        self.lock().commits.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ScriptState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn answer(&self, payload: &Value) -> Delivery {
        let rule = self.script.rules.iter().find(|rule| {
            rule.when
                .iter()
                .all(|(pointer, want)| payload.pointer(pointer) == Some(want))
        });
        let mut state = self.lock();
        let step = match rule {
            Some(rule) => &rule.respond,
            None => {
                let last = self.script.responses.len() - 1;
                let step = &self.script.responses[state.answered.min(last)];
                state.answered += 1;
                step
            }
        };
        if step.commits {
            let data = step
                .body
                .as_ref()
                .and_then(|b| b.get("data"))
                .cloned()
                .unwrap_or_else(|| payload.clone());
            state.commits.push(data);
            if let Some(shown) = &step.state {
                state.shown = Some(shown.clone());
            }
        }
        deliver(step)
    }

    /// The script's read: what the tool shows now, as an envelope.
    fn read(&self, read: &ScriptRead) -> Delivery {
        if read.unavailable {
            let failure = ToolResponse::failure(
                ToolError::service_error("READ_DOWN", "the read is unavailable").retryable(true),
            );
            return Ok(RawResponse {
                status: failure.http_status(),
                headers: vec![("content-type".to_owned(), "application/json".to_owned())],
                body: failure.to_json_bytes(),
                read: None,
            });
        }
        let shown = self.lock().shown.clone();
        let body = ToolResponse::ok(shown.unwrap_or_else(|| read.initial.clone()));
        Ok(RawResponse {
            status: 200,
            headers: vec![("content-type".to_owned(), "application/json".to_owned())],
            body: body.to_json_bytes(),
            read: None,
        })
    }
}

fn deliver(step: &Step) -> Delivery {
    if let Some(kind) = step.transport {
        return Err(TransportFailure::new(kind, "scripted transport failure"));
    }
    let mut headers: Vec<(String, String)> = step
        .headers
        .iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
        .collect();
    let body = match (&step.body, &step.text) {
        (Some(json), _) => {
            if !headers.iter().any(|(k, _)| k == "content-type") {
                headers.push(("content-type".to_owned(), "application/json".to_owned()));
            }
            serde_json::to_vec(json).unwrap_or_default()
        }
        (None, Some(text)) => text.clone().into_bytes(),
        (None, None) => Vec::new(),
    };
    Ok(RawResponse {
        status: step.status.unwrap_or(200),
        headers,
        body,
        read: None,
    })
}

/// A truthful lookup (or one that cannot tell) over a script's writes.
struct ScriptLookup {
    tool: ScriptedTool,
}

impl Reconciler for ScriptLookup {
    fn reconcile<'a>(&'a self, _request: ReconcileRequest<'a>) -> BoxFuture<'a, Reconciliation> {
        let found = match self.tool.script.lookup {
            Lookup::Unknown => Reconciliation::Unknown("the lookup could not tell".to_owned()),
            Lookup::Truth => match self.tool.lock().commits.last() {
                Some(data) => Reconciliation::Committed(data.clone()),
                None => Reconciliation::NotCommitted,
            },
        };
        Box::pin(async move { found })
    }
}

/// One request as a transport saw it.
#[derive(Debug, Clone)]
pub(crate) struct SentRequest {
    pub(crate) target: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) payload: Value,
}

/// Wraps a transport and keeps every request it sends.
pub(crate) struct Recorder {
    inner: Arc<dyn Transport>,
    sent: Arc<Mutex<Vec<SentRequest>>>,
}

impl Recorder {
    pub(crate) fn new(inner: Arc<dyn Transport>) -> (Self, Arc<Mutex<Vec<SentRequest>>>) {
        let sent = Arc::<Mutex<Vec<SentRequest>>>::default();
        let recorder = Self {
            inner,
            sent: Arc::clone(&sent),
        };
        (recorder, sent)
    }
}

impl Transport for Recorder {
    fn send<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Delivery> {
        self.sent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(SentRequest {
                target: request.target.as_str().to_owned(),
                headers: request.headers.clone(),
                payload: request.payload.clone(),
            });
        self.inner.send(request)
    }
}
