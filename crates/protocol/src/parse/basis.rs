//! What a failure's category rests on, and what a call needs that no attempt
//! supplies: the two facts beside a category that decisions read.

/// What a failure's [`category`](super::ParsedResponse::category) rests on.
///
/// ```
/// use recourse_protocol::{parse_response, CategoryBasis, ErrorCategory};
///
/// let guessed = br#"{"content":[{"type":"text","text":"upstream 503, try later"}],"isError":true}"#;
/// let parsed = parse_response(200, [("content-type", "application/json")], guessed);
/// assert_eq!(parsed.category, Some(ErrorCategory::ServiceError));
/// assert_eq!(parsed.basis, CategoryBasis::FreeText);
///
/// let opaque = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom"}}"#;
/// let parsed = parse_response(200, [("content-type", "application/json")], opaque);
/// assert_eq!(parsed.basis, CategoryBasis::Opaque);
/// ```
///
/// Deliberately exhaustive: a new basis must be a compile error in every
/// decision that reads one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CategoryBasis {
    /// A structured convention named the category (our envelope, the dict
    /// convention, a problem document, MCP failure metadata, a JSON-RPC code
    /// with a defined meaning), or no category was named and the HTTP status
    /// routes.
    #[default]
    Stated,
    /// The tool named no category at all: an MCP `isError` result with
    /// only text, which names neither a category nor a transient failure. It
    /// routes as an input error (a correction may help), by the MCP rule; but
    /// the tool did not say so, and nothing that shows the failure may claim
    /// it did.
    Assumed,
    /// The server said only that it failed internally: a JSON-RPC `-32603`
    /// or a code with no defined meaning. That is the JSON-RPC form of a bare
    /// HTTP 500: the request reached the server, so a write may have run.
    Opaque,
    /// The category was guessed from an MCP `isError` result's free text (an
    /// HTTP status, "timeout", "rate limit", "temporarily unavailable" in it),
    /// which named none in a structured form. A guess never sends a payload
    /// to a model and never resends a write; its retry permission stays
    /// unspecified.
    FreeText,
}

/// Something a call needs before it can go on, which neither a resend nor a
/// corrected payload supplies: the call stops and says which. Exhaustive,
/// like [`CategoryBasis`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Need {
    /// The MCP server answered `input_required`: it wants input from the
    /// client's user (an elicitation, a sampling or a roots request) before
    /// the tool runs.
    Input,
    /// The MCP server refused the client's protocol setup, permanently for
    /// this configuration: a header mismatch (`-32020`), a missing client
    /// capability (`-32021`) or an unsupported protocol version (`-32022`).
    Configuration,
}
