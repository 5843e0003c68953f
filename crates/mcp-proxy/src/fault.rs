//! What the proxy answers with a JSON-RPC error rather than a tool's result.

/// A request the proxy cannot route: a JSON-RPC error, not a tool's failure.
#[derive(Debug)]
pub(crate) enum Fault {
    /// No upstream offers a tool by this name.
    UnknownTool(String),
    /// The caller's idempotency key is not one (`-32602` too).
    BadKey(String),
    /// A 2026-07-28 retry's `requestState` was refused: nothing decided.
    BadState(&'static str),
    /// The client cancelled the request; the call, if it writes, goes on.
    Cancelled,
}
