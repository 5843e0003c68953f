//! A declared verification: [`VerifySpec`] as written, [`Verifier`] checked.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::expect::Expectation;
use crate::template::{self, Reference};
use recourse_core::config::{CallField, ConfigError};
use recourse_core::method::Method;
use recourse_core::target::Target;

/// The most expectations one verification may declare.
const MAX_EXPECTATIONS: usize = 32;

/// A verification as the caller declares it: a read (an HTTP endpoint or an
/// MCP tool), its arguments, and what its result must show once the write
/// took effect. The same object is a plan step's `verify` block, the
/// gateway's `verify` field and what the journal keeps with the call (it
/// never holds headers, so never credentials).
///
/// ```
/// use recourse::VerifySpec;
/// use serde_json::json;
///
/// let spec = VerifySpec::tool("get_order_details")
///     .args(json!({"order_id": "{{payload.order_id}}"}))
///     .expect(r#"/status == "cancelled""#);
/// assert_eq!(
///     serde_json::to_value(&spec).unwrap(),
///     json!({"tool": "get_order_details", "args": {"order_id": "{{payload.order_id}}"},
///            "expect": ["/status == \"cancelled\""], "after_only": false, "always": false})
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct VerifySpec {
    /// An HTTP read endpoint (a fixed `http(s)` URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// An MCP tool on the same server as the write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// For `url`: `POST` (the arguments as a JSON body, the default) or
    /// `GET` (as query parameters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<Method>,
    /// The read's arguments, templates over the write's payload
    /// (`{"order_id": "{{payload.order_id}}"}`). Default `{}`.
    #[serde(default = "empty_object")]
    pub args: Value,
    /// `POINTER OP VALUE` expectations over the result, all of which must hold.
    pub expect: Vec<String>,
    /// Skip the read before the write.
    #[serde(default)]
    pub after_only: bool,
    /// Read back after a success too: a success whose expectations do not
    /// hold is a failure, `not_applied`.
    #[serde(default)]
    pub always: bool,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

impl VerifySpec {
    /// A verification reading the HTTP endpoint `url`.
    pub fn url(url: impl Into<String>) -> Self {
        Self::reading(Some(url.into()), None)
    }

    /// A verification calling the MCP tool `name` on the write's server.
    pub fn tool(name: impl Into<String>) -> Self {
        Self::reading(None, Some(name.into()))
    }

    fn reading(url: Option<String>, tool: Option<String>) -> Self {
        Self {
            url,
            tool,
            method: None,
            args: empty_object(),
            expect: Vec::new(),
            after_only: false,
            always: false,
        }
    }

    /// Reads `url` with `method` (`GET` or `POST`).
    #[must_use]
    pub fn method(mut self, method: Method) -> Self {
        self.method = Some(method);
        self
    }

    /// The read's arguments (templates over the payload).
    #[must_use]
    pub fn args(mut self, args: Value) -> Self {
        self.args = args;
        self
    }

    /// Adds an expectation, `POINTER OP VALUE`.
    #[must_use]
    pub fn expect(mut self, expectation: impl Into<String>) -> Self {
        self.expect.push(expectation.into());
        self
    }

    /// Skips the read before the write.
    #[must_use]
    pub fn after_only(mut self) -> Self {
        self.after_only = true;
        self
    }

    /// Reads back after a success too.
    #[must_use]
    pub fn always(mut self) -> Self {
        self.always = true;
        self
    }

    /// Checks the verification before any call is made with it, as a door
    /// that reads it from configuration does at startup: everything a
    /// call's [`build`](crate::CallBuilder::build) checks, except that the
    /// payload has the fields its templates name (no payload is known yet).
    ///
    /// ```
    /// use recourse::VerifySpec;
    ///
    /// assert!(VerifySpec::tool("exports_lookup").expect("/latest exists").check().is_ok());
    /// assert!(VerifySpec::tool("exports_lookup").check().is_err()); // no expectation
    /// assert!(VerifySpec::tool("r").expect("/a === 1").check().is_err());
    /// ```
    ///
    /// # Errors
    /// As [`build`](crate::CallBuilder::build) names them, for the setting `verify`.
    pub fn check(&self) -> Result<(), ConfigError> {
        Verifier::checked(self.clone()).map(drop)
    }
}

/// A verification checked against the payload it reads back for: its read
/// target parsed, its expectations parsed and every template resolvable.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Verifier {
    spec: VerifySpec,
    target: Target,
    method: Method,
    expectations: Vec<Expectation>,
}

/// A read with every template filled in from one payload: two reads for
/// the same payload are equal.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ResolvedRead {
    pub(crate) target: Target,
    pub(crate) method: Method,
    pub(crate) args: Value,
    pub(crate) expectations: Vec<(Expectation, Option<Value>)>,
}

impl Verifier {
    /// Checks `spec` for a call of `payload`.
    ///
    /// # Errors
    /// For the setting `verify`: neither or both of `url` and `tool`; a URL
    /// that is not a fixed `http(s)` URL; a method other than `GET` or
    /// `POST`, or one given with `tool`; arguments that are not an object;
    /// no expectation, or a malformed one; a template that is malformed,
    /// reads anything but `{{payload.…}}`, or names a field the payload lacks.
    pub(crate) fn new(spec: VerifySpec, payload: &Value) -> Result<Self, ConfigError> {
        let verifier = Self::checked(spec)?;
        verifier
            .resolve(payload)
            .map_err(|why| ConfigError::new(CallField::Verify, why))?;
        Ok(verifier)
    }

    /// Checks `spec` on its own: everything [`new`](Self::new) checks but
    /// the payload's fields the templates name.
    fn checked(spec: VerifySpec) -> Result<Self, ConfigError> {
        let bad = |why: String| ConfigError::new(CallField::Verify, why);
        let target = match (&spec.url, &spec.tool) {
            (Some(url), None) => {
                if url.contains('{') {
                    return Err(bad(format!(
                        "url {url:?} is fixed: put the payload's values in args"
                    )));
                }
                let target = Target::parse(url).map_err(|e| bad(format!("url: {e}")))?;
                if target.url().is_none() {
                    return Err(bad(format!(
                        "url {url:?} must start with http:// or https://"
                    )));
                }
                target
            }
            (None, Some(tool)) => {
                let target = Target::parse(tool).map_err(|e| bad(format!("tool: {e}")))?;
                if target.url().is_some() {
                    return Err(bad("tool names an MCP tool, not a URL; use url".to_owned()));
                }
                target
            }
            (Some(_), Some(_)) => return Err(bad("give url or tool, not both".to_owned())),
            (None, None) => {
                return Err(bad(
                    "give url (an HTTP read) or tool (an MCP read)".to_owned()
                ));
            }
        };
        let method = match (spec.method, &spec.tool) {
            (Some(_), Some(_)) => return Err(bad("method applies to url, not tool".to_owned())),
            (None, _) | (Some(Method::Post), None) => Method::Post,
            (Some(Method::Get), None) => Method::Get,
            (Some(other), None) => {
                return Err(bad(format!("a read is GET or POST, not {other}")));
            }
        };
        if !spec.args.is_object() {
            return Err(bad("args must be a JSON object".to_owned()));
        }
        if spec.expect.is_empty() {
            return Err(bad(
                "expect needs at least one expectation, such as '/status == \"cancelled\"'"
                    .to_owned(),
            ));
        }
        if spec.expect.len() > MAX_EXPECTATIONS {
            return Err(bad(format!("at most {MAX_EXPECTATIONS} expectations")));
        }
        let expectations = spec
            .expect
            .iter()
            .map(|e| Expectation::parse(e))
            .collect::<Result<Vec<_>, _>>()
            .map_err(bad)?;
        let verifier = Self {
            spec,
            target,
            method,
            expectations,
        };
        verifier.check_templates()?;
        Ok(verifier)
    }

    /// Every template reads the payload.
    fn check_templates(&self) -> Result<(), ConfigError> {
        let values = self.expectations.iter().filter_map(|e| e.value.as_ref());
        for value in std::iter::once(&self.spec.args).chain(values) {
            let found = template::references_in(value)
                .map_err(|e| ConfigError::new(CallField::Verify, e))?;
            if let Some(r) = found.iter().find(|r| r.root != "payload") {
                return Err(ConfigError::new(
                    CallField::Verify,
                    format!("{}: a verification reads only {{{{payload.…}}}}", r.raw),
                ));
            }
        }
        Ok(())
    }

    /// The spec as declared.
    pub(crate) fn spec(&self) -> &VerifySpec {
        &self.spec
    }

    /// Whether the read also runs after a success.
    pub(crate) fn always(&self) -> bool {
        self.spec.always
    }

    /// Whether the read before the write is skipped.
    pub(crate) fn after_only(&self) -> bool {
        self.spec.after_only
    }

    /// Whether the read is an MCP tool (rather than an HTTP endpoint).
    pub(crate) fn reads_tool(&self) -> bool {
        self.spec.tool.is_some()
    }

    /// The read for `payload`.
    ///
    /// # Errors
    /// A template names a field `payload` lacks.
    pub(crate) fn resolve(&self, payload: &Value) -> Result<ResolvedRead, String> {
        let lookup = |r: &Reference| template::follow(payload, r);
        let (args, _) = template::resolve(&self.spec.args, &lookup)?;
        let expectations = self
            .expectations
            .iter()
            .map(|e| {
                let value = match &e.value {
                    Some(v) => Some(template::resolve(v, &lookup)?.0),
                    None => None,
                };
                Ok((e.clone(), value))
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(ResolvedRead {
            target: self.target.clone(),
            method: self.method,
            args,
            expectations,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn order() -> Value {
        json!({"order_id": "W1", "zip": "94110"})
    }

    fn err(spec: VerifySpec) -> String {
        let e = Verifier::new(spec, &order()).unwrap_err();
        assert_eq!(e.setting(), "verify");
        e.to_string()
    }

    #[test]
    fn templates_resolve_against_the_payload() {
        let spec = VerifySpec::tool("get_order")
            .args(json!({"order_id": "{{payload.order_id}}"}))
            .expect("/address/zip == {{payload.zip}}")
            .expect(r#"/note == "for {{payload.order_id}}""#);
        let read = Verifier::new(spec, &order())
            .unwrap()
            .resolve(&order())
            .unwrap();
        assert_eq!(read.args, json!({"order_id": "W1"}));
        assert_eq!(read.expectations[0].1, Some(json!("94110")));
        assert_eq!(read.expectations[1].1, Some(json!("for W1")));
        assert_eq!(read.method, Method::Post);
    }

    #[test]
    fn a_field_the_payload_lacks_is_refused_before_anything_is_sent() {
        let spec = VerifySpec::tool("get_order")
            .args(json!({"order_id": "{{payload.id}}"}))
            .expect("/status exists");
        assert!(err(spec).contains("payload has no field \"id\""));
        let spec = VerifySpec::tool("get_order").expect("/zip == {{payload.postcode}}");
        assert!(err(spec).contains("\"postcode\""));
        let spec = VerifySpec::tool("get_order").expect("/zip == {{other.zip}}");
        assert!(err(spec).contains("reads only"));
    }

    #[test]
    fn the_read_is_one_fixed_url_or_one_tool() {
        let expect = |s: VerifySpec| s.expect("/ok exists");
        assert!(
            err(expect(VerifySpec::url("http://h/x").method(Method::Delete)))
                .contains("GET or POST")
        );
        assert!(err(expect(VerifySpec::url("http://h/{{payload.id}}"))).contains("fixed"));
        assert!(err(expect(VerifySpec::url("ftp://h/x"))).contains("http://"));
        assert!(err(expect(VerifySpec::tool("http://h/x"))).contains("not a URL"));
        assert!(err(expect(VerifySpec::tool("t").method(Method::Get))).contains("applies to url"));
        let mut both = expect(VerifySpec::tool("t"));
        both.url = Some("http://h/x".into());
        assert!(err(both).contains("not both"));
        assert!(err(VerifySpec::tool("t")).contains("at least one"));
        assert!(err(expect(VerifySpec::tool("t").args(json!([1])))).contains("object"));
        assert!(err(VerifySpec::tool("t").expect("status == 1")).contains("JSON Pointer"));
        let get = Verifier::new(
            expect(VerifySpec::url("http://h/x").method(Method::Get)),
            &order(),
        );
        assert_eq!(get.unwrap().method, Method::Get);
    }

    #[test]
    fn the_wire_form_refuses_unknown_fields() {
        let spec: VerifySpec = serde_json::from_value(
            json!({"url": "http://h/x", "method": "GET", "expect": ["/a exists"], "always": true}),
        )
        .unwrap();
        assert_eq!(spec.method, Some(Method::Get));
        assert!(spec.always && !spec.after_only);
        assert!(
            serde_json::from_value::<VerifySpec>(json!({"tool": "t", "expect": [], "headers": {}}))
                .is_err()
        );
    }
}
