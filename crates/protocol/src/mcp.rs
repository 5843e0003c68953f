//! Names recourse's MCP client and MCP tool server agree on.
//!
//! MCP has no headers, so what HTTP carries in a header travels in a
//! request's `_meta`; and a call to a tool the server does not have is a stop
//! with its own code, whichever side notices first.

/// The `_meta` key of a `tools/call` that carries the executor's
/// `Idempotency-Key`; recourse's MCP tool server forwards it as that header.
pub const IDEMPOTENCY_META_KEY: &str = "recourse/idempotency-key";

/// The code of the non-retryable NOT_FOUND failure for a tool the server
/// does not have.
pub const UNKNOWN_TOOL: &str = "UNKNOWN_TOOL";
