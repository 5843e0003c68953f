//! How a call's client can be reached while its call waits: what it
//! declared (form elicitation, the Tasks extension) and in which protocol
//! version, read once from the request's context — and, on a 2026-07-28
//! retry, what it answered.

use rmcp::model::{CallToolRequestParams, ClientCapabilities, InputResponses};
use rmcp::service::{Peer, RequestContext, RoleServer};

use crate::elicit;

/// What the client of one `tools/call` can be asked, and how.
#[derive(Debug, Default)]
pub(crate) struct Reach {
    /// A session up to 2025-11-25 that takes form elicitation: its user is
    /// sent `elicitation/create`.
    pub(crate) form_session: Option<Peer<RoleServer>>,
    /// A 2026-07-28 client that takes form elicitation: asked in an
    /// `input_required` result.
    pub(crate) input_required: bool,
    /// A 2026-07-28 client that declared the Tasks extension: a call that
    /// waits is answered with a task to poll.
    pub(crate) tasks: bool,
    /// A 2026-07-28 client's answer to what it was asked: its retry.
    pub(crate) answered: Option<Answered>,
}

/// A retry after `input_required`: the client's responses and the state it echoed.
#[derive(Debug)]
pub(crate) struct Answered {
    pub(crate) responses: InputResponses,
    pub(crate) state: String,
}

impl Reach {
    /// What `context` says of the client of `request` (whose retry fields it takes).
    pub(crate) fn of(
        request: &mut CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Self {
        let modern = context
            .protocol_version()
            .is_some_and(|version| !version.has_initialize());
        let answered = request.request_state.take().map(|state| Answered {
            responses: request.input_responses.take().unwrap_or_default(),
            state,
        });
        if !modern {
            return Self {
                form_session: elicit::askable(&context.peer),
                answered,
                ..Self::default()
            };
        }
        // A 2026-07-28 request carries its client's capabilities (a copy, read once).
        let capabilities = context.client_capabilities();
        Self {
            form_session: None,
            input_required: capabilities.as_ref().is_some_and(takes_forms),
            tasks: capabilities
                .as_ref()
                .is_some_and(ClientCapabilities::supports_tasks),
            answered,
        }
    }
}

/// Whether a client that declared `capabilities` takes form elicitation:
/// it declared `form`, or elicitation with no mode (which means forms).
pub(crate) fn takes_forms(capabilities: &ClientCapabilities) -> bool {
    capabilities
        .elicitation
        .as_ref()
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}
