//! [`RequestDigest`]: what tells one request from another at either door.
//!
//! # Why one shape
//!
//! A keyed resend is answered from the journal only when it is the same
//! request, and an approval is bound to the request a person read. Both
//! doors describe a call the same way — a [`CallSpec`]: the gateway's body
//! is one, and the MCP proxy makes one of a `tools/call` (its server, its
//! tool, the arguments and the operator's policy for it) — so both take
//! the digest of that description, minus what may differ between resends
//! of one request (the key itself and the execution limits). The same MCP
//! call reaching a journal through the gateway and through the proxy then
//! has one digest, and no door can count two different requests as one.

use recourse::call::CallSpec;
use recourse::keyed::request_hash;
use serde_json::Value;

/// Fields of a [`CallSpec`] that do not make a request another request:
/// the key, and the limits a resend may change.
const NOT_HASHED: [&str; 4] = [
    "idempotency_key",
    "deadline_secs",
    "max_retries",
    "max_corrections",
];

/// The SHA-256 (hex) of a request as a [`CallSpec`] describes it, the same
/// whatever the order of its object keys, the key and the limits left out.
///
/// ```
/// use recourse::call::CallSpec;
/// use recourse_door::RequestDigest;
/// use serde_json::json;
///
/// let spec = |body| serde_json::from_value::<CallSpec>(body).unwrap();
/// let first = spec(json!({"url": "http://h/x", "payload": {"a": 1, "b": 2}, "idempotency_key": "k"}));
/// let resent = spec(json!({"payload": {"b": 2, "a": 1}, "url": "http://h/x", "max_retries": 1}));
/// let other = spec(json!({"url": "http://h/x", "payload": {"a": 2}}));
/// assert_eq!(RequestDigest::of(&first), RequestDigest::of(&resent));
/// assert_ne!(RequestDigest::of(&first), RequestDigest::of(&other));
/// assert_eq!(RequestDigest::of(&first).as_str().len(), 64);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RequestDigest(String);

impl RequestDigest {
    /// The digest of `spec`.
    pub fn of(spec: &CallSpec) -> Self {
        let mut value = serde_json::to_value(spec).unwrap_or(Value::Null);
        if let Value::Object(fields) = &mut value {
            for name in NOT_HASHED {
                fields.remove(name);
            }
        }
        Self(request_hash(&value))
    }

    /// The digest as 64 lower-case hex digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for RequestDigest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(body: Value) -> CallSpec {
        serde_json::from_value(body).unwrap()
    }

    #[test]
    fn the_key_and_the_limits_do_not_change_the_request_and_the_rest_does() {
        let base = json!({"url": "http://h/x", "payload": {"a": 1}});
        let digest = RequestDigest::of(&spec(base.clone()));
        for same in [
            json!({"url": "http://h/x", "payload": {"a": 1}, "idempotency_key": "k", "deadline_secs": 5}),
            json!({"payload": {"a": 1}, "url": "http://h/x", "max_retries": 1, "max_corrections": 0}),
        ] {
            assert_eq!(RequestDigest::of(&spec(same.clone())), digest, "{same}");
        }
        for other in [
            json!({"url": "http://h/y", "payload": {"a": 1}}),
            json!({"url": "http://h/x", "payload": {"a": 1}, "method": "PUT"}),
            json!({"url": "http://h/x", "payload": {"a": 1}, "headers": [["x-override", "wire"]]}),
            json!({"url": "http://h/x", "payload": {"a": 1}, "idempotent": true}),
            json!({"mcp": {"command": "srv", "tool": "x"}, "payload": {"a": 1}}),
        ] {
            assert_ne!(RequestDigest::of(&spec(other.clone())), digest, "{other}");
        }
    }

    #[test]
    fn the_same_mcp_tool_on_two_servers_is_two_requests() {
        let on = |server: &str| {
            RequestDigest::of(&spec(
                json!({"mcp": {"command": server, "tool": "write"}, "payload": {}}),
            ))
        };
        assert_ne!(on("server-a"), on("server-b"));
    }
}
