//! The `_meta` key under which the proxy adds its summary to every result.

/// The `_meta` key of the record's summary on every result of the proxy.
pub const CALL_META_KEY: &str = "recourse/call";
