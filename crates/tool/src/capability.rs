//! `Capability`: what a tool tells an agent about one of its operations.
//!
//! An agent needs more than a URL to call a tool safely. It needs the input
//! schema (to shape and coerce payloads, and to check corrections), and it
//! needs to know whether the operation is **idempotent**: a resend of a
//! non-idempotent write after an unknown outcome may do it twice, so the
//! executor only ever reconciles those (protocol §5). The default here is the
//! conservative one: an operation is *not* idempotent until its author says so.

use axum::http::Method;
use schemars::{JsonSchema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One operation in a tool's manifest (`GET /api/capabilities`).
///
/// ```
/// use recourse_tool::Capability;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct QuoteInput {
///     /// Ticker symbol, e.g. "TSLA".
///     symbol: String,
/// }
///
/// let cap = Capability::post::<QuoteInput>("stock_quote", "/api/stock/quote", "Latest price of a stock")
///     .idempotent();
/// assert_eq!(cap.method, "POST");
/// assert!(cap.idempotent);
/// assert_eq!(cap.input_schema["required"][0], "symbol");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Capability {
    /// A stable identifier for the operation, e.g. `weather_current`.
    pub name: String,
    /// What the operation does, written for the agent (and its model).
    pub description: String,
    /// The route path, e.g. `/api/weather/current`.
    pub endpoint: String,
    /// The HTTP method, upper case.
    pub method: String,
    /// Whether repeating the call with the same input is harmless.
    pub idempotent: bool,
    /// The JSON Schema of the request body, generated from the input type.
    pub input_schema: Value,
    /// A lookup route that reports whether a call committed, e.g.
    /// `/api/exports/{operation_id}`, for reconciling unknown outcomes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconcile: Option<String>,
}

impl Capability {
    /// An operation at `method endpoint` taking a body of type `I`.
    pub fn new<I: JsonSchema>(
        method: Method,
        name: impl Into<String>,
        endpoint: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            endpoint: endpoint.into(),
            method: method.as_str().to_owned(),
            idempotent: false,
            input_schema: input_schema_for::<I>(),
            reconcile: None,
        }
    }

    /// A `POST` operation taking a JSON body of type `I`.
    pub fn post<I: JsonSchema>(
        name: impl Into<String>,
        endpoint: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        Self::new::<I>(Method::POST, name, endpoint, description)
    }

    /// Marks the operation idempotent: repeating it with the same input is harmless.
    #[must_use]
    pub fn idempotent(mut self) -> Self {
        self.idempotent = true;
        self
    }

    /// Names the lookup route that reconciles an unknown outcome of this operation.
    #[must_use]
    pub fn with_reconcile(mut self, lookup: impl Into<String>) -> Self {
        self.reconcile = Some(lookup.into());
        self
    }

    /// The method as an axum [`Method`]; `None` if the string is not a valid method.
    pub fn http_method(&self) -> Option<Method> {
        Method::from_bytes(self.method.as_bytes()).ok()
    }
}

/// The JSON Schema (draft 2020-12) of `I`, as a JSON value.
pub fn input_schema_for<I: JsonSchema>() -> Value {
    SchemaGenerator::default()
        .into_root_schema_for::<I>()
        .to_value()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Input {
        amount: f64,
        note: Option<String>,
    }

    #[test]
    fn not_idempotent_by_default_and_schema_lists_required_fields() {
        let cap = Capability::post::<Input>("convert", "/api/convert", "Convert money");
        assert!(!cap.idempotent);
        assert_eq!(cap.input_schema["type"], "object");
        assert_eq!(cap.input_schema["required"], serde_json::json!(["amount"]));
        assert_eq!(cap.http_method(), Some(Method::POST));
    }

    #[test]
    fn reconcile_route_is_omitted_when_absent() {
        let cap = Capability::post::<Input>("convert", "/api/convert", "Convert money");
        let v = serde_json::to_value(&cap).unwrap();
        assert!(v.get("reconcile").is_none());
        let v = serde_json::to_value(cap.with_reconcile("/api/ops/{id}")).unwrap();
        assert_eq!(v["reconcile"], "/api/ops/{id}");
    }
}
