//! A declared verification: [`VerifySpec`] as written, [`Verifier`] checked.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::absent::AbsentWhen;
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
    /// The read's errors that mean the effect is absent (`"error"`, or
    /// codes): such a read counts as answered, its expectations not held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub absent_when: Option<AbsentWhen>,
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
            absent_when: None,
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

    /// Counts a read failing as `absent` says as the effect being absent.
    #[must_use]
    pub fn absent_when(mut self, absent: AbsentWhen) -> Self {
        self.absent_when = Some(absent);
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

    /// Checks the verification for a call of `payload`, as
    /// [`CallBuilder::verify`](crate::CallBuilder::verify) does: everything
    /// [`check`](Self::check) checks, and that `payload` fills every
    /// template the verification requires.
    ///
    /// ```
    /// use recourse::VerifySpec;
    /// use serde_json::json;
    ///
    /// let cat = VerifySpec::tool("cat").args(json!({"file_name": "{{payload.file_name}}"})).expect("/content exists");
    /// assert!(cat.check_against(&json!({"file_name": "a.txt"})).is_ok());
    /// assert!(cat.check_against(&json!({"path": "/tmp"})).is_err());
    /// ```
    ///
    /// # Errors
    /// As [`check`](Self::check), and a template `payload` cannot fill.
    pub fn check_against(&self, payload: &Value) -> Result<(), ConfigError> {
        Verifier::new(self.clone(), payload).map(drop)
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
    /// Each expectation the payload fills, with its value filled in (one
    /// naming an optional argument the call leaves out is not here).
    pub(crate) expectations: Vec<(Expectation, Option<Value>)>,
    pub(crate) absent_when: Option<AbsentWhen>,
}

impl ResolvedRead {
    /// Whether an expectation states a change since the read before the
    /// write (`grew_by`): the read before then never shows the effect.
    pub(crate) fn states_a_change(&self) -> bool {
        self.expectations.iter().any(|(e, _)| e.op.is_change())
    }
}

/// Whether a verification applies to one call.
#[derive(Debug)]
pub(crate) enum Fit {
    /// It does: the payload fills every template it requires.
    Applies(Verifier),
    /// It does not (why): the call runs as one without a verification.
    NotApplicable(String),
}

impl Verifier {
    /// Checks `spec` for a call of `payload`.
    ///
    /// # Errors
    /// For the setting `verify`: as [`fit`](Self::fit), and a payload that
    /// does not fill a template the verification requires.
    pub(crate) fn new(spec: VerifySpec, payload: &Value) -> Result<Self, ConfigError> {
        match Self::fit(spec, payload)? {
            Fit::Applies(verifier) => Ok(verifier),
            Fit::NotApplicable(why) => Err(ConfigError::new(CallField::Verify, why)),
        }
    }

    /// Checks `spec`, and whether it applies to a call of `payload`.
    ///
    /// # Errors
    /// For the setting `verify`: neither or both of `url` and `tool`; a URL
    /// that is not a fixed `http(s)` URL; a method other than `GET` or
    /// `POST`, or one given with `tool`; arguments that are not an object;
    /// no expectation, or a malformed one; a change (`grew_by`) with
    /// `after_only`; an `absent_when` with no code; a template that is
    /// malformed or reads anything but `{{payload.…}}`.
    pub(crate) fn fit(spec: VerifySpec, payload: &Value) -> Result<Fit, ConfigError> {
        let verifier = Self::checked(spec)?;
        Ok(match verifier.resolve(payload) {
            Ok(_) => Fit::Applies(verifier),
            Err(why) => Fit::NotApplicable(why),
        })
    }

    /// Checks `spec` on its own: everything [`fit`](Self::fit) checks.
    fn checked(spec: VerifySpec) -> Result<Self, ConfigError> {
        let bad = |why: String| ConfigError::new(CallField::Verify, why);
        let target = read_target(&spec).map_err(bad)?;
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
        if spec.after_only
            && let Some(change) = expectations.iter().find(|e| e.op.is_change())
        {
            return Err(bad(format!(
                "{change} compares with the read before the write, which after_only skips"
            )));
        }
        if let Some(absent) = &spec.absent_when {
            absent.check().map_err(bad)?;
        }
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

    /// The read for `payload`: its arguments filled (an optional one the
    /// payload lacks left out), and each expectation the payload fills.
    ///
    /// # Errors
    /// Why the verification does not apply to `payload`: a template it
    /// requires names a field `payload` lacks, a value filled in is not one
    /// its operator takes, or every expectation names an optional argument
    /// the payload lacks.
    pub(crate) fn resolve(&self, payload: &Value) -> Result<ResolvedRead, String> {
        let lookup = |r: &Reference| template::follow(payload, r);
        let (args, _) = template::resolve(&self.spec.args, &lookup)?;
        let mut expectations = Vec::with_capacity(self.expectations.len());
        for e in &self.expectations {
            let Some(value) = &e.value else {
                expectations.push((e.clone(), None));
                continue;
            };
            if lacks_optional(value, payload) {
                continue;
            }
            let (filled, _) = template::resolve(value, &lookup)?;
            e.op.check_operand(&filled)
                .map_err(|why| format!("{e}: {why}"))?;
            expectations.push((e.clone(), Some(filled)));
        }
        if expectations.is_empty() {
            return Err(
                "every expectation names an optional argument the call leaves out".to_owned(),
            );
        }
        Ok(ResolvedRead {
            target: self.target.clone(),
            method: self.method,
            args,
            expectations,
            absent_when: self.spec.absent_when.clone(),
        })
    }
}

/// Whether `value` names an optional argument `payload` lacks (its
/// expectation is then skipped).
fn lacks_optional(value: &Value, payload: &Value) -> bool {
    template::references_in(value).is_ok_and(|found| {
        found
            .iter()
            .any(|r| r.optional && template::follow(payload, r).is_err())
    })
}

/// The read's target: one fixed `http(s)` URL, or one tool.
fn read_target(spec: &VerifySpec) -> Result<Target, String> {
    match (&spec.url, &spec.tool) {
        (Some(url), None) => {
            if url.contains('{') {
                return Err(format!(
                    "url {url:?} is fixed: put the payload's values in args"
                ));
            }
            let target = Target::parse(url).map_err(|e| format!("url: {e}"))?;
            if target.url().is_none() {
                return Err(format!("url {url:?} must start with http:// or https://"));
            }
            Ok(target)
        }
        (None, Some(tool)) => {
            let target = Target::parse(tool).map_err(|e| format!("tool: {e}"))?;
            if target.url().is_some() {
                return Err("tool names an MCP tool, not a URL; use url".to_owned());
            }
            Ok(target)
        }
        (Some(_), Some(_)) => Err("give url or tool, not both".to_owned()),
        (None, None) => Err("give url (an HTTP read) or tool (an MCP read)".to_owned()),
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
    fn an_optional_argument_the_call_lacks_is_left_out_with_its_expectations() {
        let spec = VerifySpec::tool("ls")
            .args(json!({"path": "{{payload.folder?}}", "order_id": "{{payload.order_id}}"}))
            .expect("$ contains {{payload.file_name?}}")
            .expect("/order_id == {{payload.order_id}}");
        let fitted = |payload: Value| match Verifier::fit(spec.clone(), &payload).unwrap() {
            Fit::Applies(v) => v.resolve(&payload).unwrap(),
            Fit::NotApplicable(why) => panic!("{why}"),
        };
        let read = fitted(json!({"order_id": "W1"}));
        assert_eq!(read.args, json!({"order_id": "W1"}));
        assert_eq!(
            read.expectations.len(),
            1,
            "the expectation naming file_name is skipped"
        );
        let read = fitted(json!({"order_id": "W1", "folder": "/tmp", "file_name": "a.txt"}));
        assert_eq!(read.args, json!({"path": "/tmp", "order_id": "W1"}));
        assert_eq!(read.expectations[0].1, Some(json!("a.txt")));
        // Every expectation skipped: nothing would be checked.
        let only = VerifySpec::tool("ls").expect("$ contains {{payload.file_name?}}");
        assert!(matches!(
            Verifier::fit(only, &json!({})).unwrap(),
            Fit::NotApplicable(why) if why.contains("every expectation")
        ));
    }

    #[test]
    fn a_required_template_the_call_cannot_fill_makes_it_not_applicable() {
        let spec = VerifySpec::tool("cat")
            .args(json!({"file_name": "{{payload.file_name}}"}))
            .expect("/content exists");
        assert!(matches!(
            Verifier::fit(spec.clone(), &json!({"file_name": "a.txt"})).unwrap(),
            Fit::Applies(_)
        ));
        let Fit::NotApplicable(why) = Verifier::fit(spec, &json!({"text": "x"})).unwrap() else {
            panic!("applies without file_name");
        };
        assert!(why.contains("\"file_name\""), "{why}");
        // A filled value its operator cannot take.
        let spec = VerifySpec::tool("balance").expect("/balance grew_by {{payload.amount}}");
        assert!(matches!(
            Verifier::fit(spec.clone(), &json!({"amount": "ten"})).unwrap(),
            Fit::NotApplicable(why) if why.contains("non-zero integer")
        ));
        assert!(matches!(
            Verifier::fit(spec, &json!({"amount": 10})).unwrap(),
            Fit::Applies(_)
        ));
        // A malformed verification is refused whatever the payload.
        let spec = VerifySpec::tool("cat").expect("/content ~ 1");
        assert!(Verifier::fit(spec, &json!({})).is_err());
    }

    #[test]
    fn a_change_needs_the_read_before() {
        let spec = VerifySpec::tool("list_orders").expect("/orders grew_by 1");
        let read = Verifier::new(spec.clone(), &order())
            .unwrap()
            .resolve(&order())
            .unwrap();
        assert!(read.states_a_change());
        assert!(err(spec.after_only()).contains("after_only skips"));
        let codes = VerifySpec::tool("t")
            .expect("/a exists")
            .absent_when(AbsentWhen::Codes(Vec::new()));
        assert!(err(codes).contains("at least one code"));
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
        let spec: VerifySpec = serde_json::from_value(
            json!({"tool": "cat", "expect": ["/content exists"], "absent_when": "error"}),
        )
        .unwrap();
        assert_eq!(spec.absent_when, Some(AbsentWhen::AnyError));
        assert_eq!(serde_json::to_value(&spec).unwrap()["absent_when"], "error");
    }
}
