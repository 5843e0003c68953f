//! Whether a call may be resent after its outcome became uncertain, decided
//! from evidence.
//!
//! # Why evidence, and why "no" by default
//!
//! Everything recourse does after a write's reply is lost hangs on one
//! question: is sending it again harmless? Guessing "yes" turns a lost reply
//! into a second payment; guessing "no" costs only an honest `unknown`. So
//! recourse takes the answer from whoever knows, in this order, and otherwise
//! says no:
//!
//! 1. **the caller** said so (`"idempotent": true|false`, `--idempotent`,
//!    `--non-idempotent`, a plan step's `idempotent`);
//! 2. **the tool** declared it: its capability manifest
//!    (`GET /api/capabilities`, the entry for this endpoint and method) or
//!    its MCP annotations (`idempotentHint`, `readOnlyHint`);
//! 3. **the method** is idempotent by RFC 9110 §9.2.2 (`GET`, `HEAD`,
//!    `OPTIONS`, `PUT`, `DELETE`);
//! 4. otherwise the call is **not** idempotent — as MCP's own annotation
//!    defaults say of an unannotated tool.
//!
//! Only ambiguity *after* sending depends on this: a connection refused
//! before anything was sent, or a structured error from the tool, is
//! resendable either way. The record names the evidence that decided
//! (`"idempotency": {"idempotent": false, "from": "manifest"}`).

use serde::{Deserialize, Serialize};
use strum::{EnumIter, EnumString, IntoStaticStr, VariantNames};

use crate::method::Method;

/// Which evidence decided whether a call is idempotent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, EnumString, EnumIter, VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum Evidence {
    /// The caller declared it.
    Caller,
    /// The tool's capability manifest declared it.
    Manifest,
    /// The MCP tool's annotations declared it.
    McpAnnotation,
    /// The HTTP method is idempotent by RFC 9110.
    Method,
    /// Nothing said so: not idempotent.
    Default,
}

impl Evidence {
    /// The evidence's snake-case name.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Whether a call is idempotent, and which evidence decided.
///
/// ```
/// use recourse_core::idempotency::{Evidence, Idempotency};
/// use recourse_core::method::Method;
///
/// let unknown = Idempotency::decide(None, None, Some(Method::Post));
/// assert_eq!(unknown, Idempotency { idempotent: false, from: Evidence::Default });
/// let read = Idempotency::decide(None, None, Some(Method::Get));
/// assert_eq!(read.from, Evidence::Method);
/// let declared = Idempotency::decide(None, Some((false, Evidence::Manifest)), Some(Method::Put));
/// assert!(!declared.idempotent, "the tool's word beats the method's");
/// assert!(Idempotency::decide(Some(true), Some((false, Evidence::Manifest)), None).idempotent);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Idempotency {
    /// Whether resending the call is harmless.
    pub idempotent: bool,
    /// What said so.
    pub from: Evidence,
}

impl Idempotency {
    /// The evidence order: the caller's word, the tool's, the method's (for
    /// HTTP calls), else not idempotent.
    pub fn decide(
        caller: Option<bool>,
        tool: Option<(bool, Evidence)>,
        method: Option<Method>,
    ) -> Self {
        if let Some(idempotent) = caller {
            return Self {
                idempotent,
                from: Evidence::Caller,
            };
        }
        if let Some((idempotent, from)) = tool {
            return Self { idempotent, from };
        }
        match method {
            Some(m) if m.is_idempotent() => Self {
                idempotent: true,
                from: Evidence::Method,
            },
            _ => Self {
                idempotent: false,
                from: Evidence::Default,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rung_of_the_order_decides_only_when_those_above_are_silent() {
        let tool = Some((true, Evidence::McpAnnotation));
        assert_eq!(
            Idempotency::decide(Some(false), tool, Some(Method::Get)).from,
            Evidence::Caller
        );
        assert_eq!(
            Idempotency::decide(None, tool, Some(Method::Post)),
            Idempotency {
                idempotent: true,
                from: Evidence::McpAnnotation
            }
        );
        for m in [
            Method::Get,
            Method::Head,
            Method::Options,
            Method::Put,
            Method::Delete,
        ] {
            assert_eq!(
                Idempotency::decide(None, None, Some(m)).from,
                Evidence::Method
            );
        }
        for m in [Some(Method::Post), Some(Method::Patch), None] {
            assert_eq!(
                Idempotency::decide(None, None, m),
                Idempotency {
                    idempotent: false,
                    from: Evidence::Default
                }
            );
        }
    }
}
