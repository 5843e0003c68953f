//! The fixed battery: which requests a tool is sent, derived from its schema.

use serde_json::{Value, json};

use super::schema::{Property, SchemaView, near_miss, wrong_value};

/// How big the oversized body is: past the common defaults (axum's 2 MiB,
/// nginx's 1 MiB, Express's 100 kB) without being a load test.
pub(crate) const OVERSIZED_BYTES: usize = 4 * 1024 * 1024;
/// The member the unknown-field probe adds.
pub(crate) const UNKNOWN_FIELD: &str = "recourse_probe_unknown_field";

/// One kind of request in the battery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ProbeKind {
    /// A body that is not JSON.
    MalformedJson,
    /// The baseline without its first required field.
    MissingField,
    /// The baseline with a field of the wrong JSON type.
    WrongType,
    /// The baseline plus a field the schema does not name.
    UnknownField,
    /// The baseline padded past [`OVERSIZED_BYTES`].
    OversizedBody,
    /// The baseline as JSON, labelled `text/plain`.
    WrongContentType,
    /// A route the tool does not have (HTTP).
    UnknownRoute,
    /// An enum field holding a typo of an allowed value.
    EnumNearMiss,
    /// A write, with a fresh `Idempotency-Key`.
    ReplayFirst,
    /// The same write with the same key: must replay.
    ReplaySameKey,
    /// Another payload with the same key: must be refused.
    ReplayOtherPayload,
}

impl ProbeKind {
    /// The snake-case id reports use.
    pub(crate) fn id(self) -> &'static str {
        match self {
            Self::MalformedJson => "malformed_json",
            Self::MissingField => "missing_field",
            Self::WrongType => "wrong_type",
            Self::UnknownField => "unknown_field",
            Self::OversizedBody => "oversized_body",
            Self::WrongContentType => "wrong_content_type",
            Self::UnknownRoute => "unknown_route",
            Self::EnumNearMiss => "enum_near_miss",
            Self::ReplayFirst => "replay_first",
            Self::ReplaySameKey => "replay_same_key",
            Self::ReplayOtherPayload => "replay_other_payload",
        }
    }

    /// Whether no honest tool can answer this with success: a body that is
    /// not JSON, a required field missing, a route that does not exist.
    pub(crate) fn must_fail(self) -> bool {
        matches!(
            self,
            Self::MalformedJson | Self::MissingField | Self::UnknownRoute
        )
    }
}

/// What a probe sends.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Body {
    /// A JSON payload (the MCP `arguments`, or an `application/json` body).
    Json(Value),
    /// Bytes with a content type of their own (HTTP only).
    Raw {
        bytes: Vec<u8>,
        content_type: &'static str,
    },
}

/// One request of the battery.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Probe {
    pub(crate) kind: ProbeKind,
    /// The field the probe broke, when it broke one.
    pub(crate) field: Option<String>,
    pub(crate) body: Body,
}

impl Probe {
    fn json(kind: ProbeKind, field: Option<&str>, payload: Value) -> Self {
        Self {
            kind,
            field: field.map(str::to_owned),
            body: Body::Json(payload),
        }
    }
}

/// Whether the transport lets the battery shape the bytes itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Over {
    /// HTTP: every probe.
    Http,
    /// MCP: the client library frames each message, so the tool never sees
    /// malformed JSON, a content type or an HTTP body limit.
    Mcp,
}

/// The battery for a tool with `schema`, around the valid `baseline`.
pub(crate) fn battery(schema: &Value, baseline: &Value, over: Over) -> Vec<Probe> {
    let view = SchemaView::new(schema);
    let props = view.properties();
    let mut probes = Vec::new();
    if over == Over::Http {
        let truncated = br#"{"recourse_probe": "#.to_vec();
        probes.push(raw(ProbeKind::MalformedJson, truncated, "application/json"));
    }
    probes.extend(missing_field(&props, baseline));
    probes.extend(wrong_type(&view, &props, baseline));
    probes.push(Probe::json(
        ProbeKind::UnknownField,
        Some(UNKNOWN_FIELD),
        with(baseline, UNKNOWN_FIELD, json!(true)),
    ));
    probes.extend(enum_near_miss(&view, &props, baseline));
    if over == Over::Http {
        let text = baseline.to_string().into_bytes();
        probes.push(raw(ProbeKind::WrongContentType, text, "text/plain"));
        probes.push(oversized(baseline));
    }
    probes
}

fn raw(kind: ProbeKind, bytes: Vec<u8>, content_type: &'static str) -> Probe {
    Probe {
        kind,
        field: None,
        body: Body::Raw {
            bytes,
            content_type,
        },
    }
}

/// The baseline without its first required field.
fn missing_field(props: &[Property<'_>], baseline: &Value) -> Option<Probe> {
    let p = props
        .iter()
        .find(|p| p.required && baseline.get(p.name).is_some())?;
    let mut payload = baseline.as_object()?.clone();
    payload.remove(p.name);
    Some(Probe::json(
        ProbeKind::MissingField,
        Some(p.name),
        Value::Object(payload),
    ))
}

/// The first field (required ones first) whose types the schema states,
/// holding a value of none of them.
fn wrong_type(view: &SchemaView<'_>, props: &[Property<'_>], baseline: &Value) -> Option<Probe> {
    let (name, value) = props
        .iter()
        .find_map(|p| Some((p.name, wrong_value(&non_empty(view.types(p.schema))?)?)))?;
    Some(Probe::json(
        ProbeKind::WrongType,
        Some(name),
        with(baseline, name, value),
    ))
}

/// The first enum field, holding a typo of its first allowed value.
fn enum_near_miss(
    view: &SchemaView<'_>,
    props: &[Property<'_>],
    baseline: &Value,
) -> Option<Probe> {
    let (name, values) = props.iter().find_map(|p| {
        let values = view.enum_values(p.schema);
        (!values.is_empty()).then_some((p.name, values))
    })?;
    let typo = near_miss(&values[0], &values);
    Some(Probe::json(
        ProbeKind::EnumNearMiss,
        Some(name),
        with(baseline, name, json!(typo)),
    ))
}

fn non_empty<T>(v: Vec<T>) -> Option<Vec<T>> {
    (!v.is_empty()).then_some(v)
}

/// `baseline` with `name` set to `value`.
fn with(baseline: &Value, name: &str, value: Value) -> Value {
    let mut payload = baseline.clone();
    if let Value::Object(map) = &mut payload {
        map.insert(name.to_owned(), value);
    }
    payload
}

/// The baseline with a padding member in front, written out directly: a
/// 4 MiB string is cheap to write and slow to round-trip through a `Value`.
fn oversized(baseline: &Value) -> Probe {
    let rest = baseline.to_string();
    let rest = match rest.strip_prefix('{') {
        Some("}") | None => "}".to_owned(),
        Some(members) => format!(",{members}"),
    };
    let mut bytes = Vec::with_capacity(OVERSIZED_BYTES + rest.len() + 32);
    bytes.extend_from_slice(br#"{"recourse_probe_padding":""#);
    bytes.resize(bytes.len() + OVERSIZED_BYTES, b'x');
    bytes.push(b'"');
    bytes.extend_from_slice(rest.as_bytes());
    raw(ProbeKind::OversizedBody, bytes, "application/json")
}

/// Another payload for the same idempotency key: an optional field the
/// baseline leaves out, added (a valid payload where the schema can tell, so
/// a tool that ignores keys would write again); else the first field changed.
pub(crate) fn other_payload(schema: &Value, baseline: &Value) -> Value {
    let view = SchemaView::new(schema);
    let props = view.properties();
    if let Some(p) = props
        .iter()
        .find(|p| !p.required && baseline.get(p.name).is_none())
    {
        let value = view.example(p.schema, 0);
        if !value.is_null() {
            return with(baseline, p.name, value);
        }
    }
    let Some((name, value)) = baseline.as_object().and_then(|m| m.iter().next()) else {
        return json!({ UNKNOWN_FIELD: true });
    };
    let changed = match value {
        Value::String(s) => json!(format!("{s}-2")),
        Value::Number(n) => json!(n.as_f64().unwrap_or(0.0) + 1.0),
        Value::Bool(b) => json!(!b),
        _ => json!("recourse-probe"),
    };
    with(baseline, name, changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(probes: &[Probe]) -> Vec<&'static str> {
        probes.iter().map(|p| p.kind.id()).collect()
    }

    #[test]
    fn http_gets_every_probe_the_schema_allows() {
        let schema = json!({"type": "object", "required": ["location"], "properties": {
            "location": {"type": "string"},
            "units": {"enum": ["metric", "imperial"]}
        }});
        let baseline = json!({"location": "probe"});
        let probes = battery(&schema, &baseline, Over::Http);
        assert_eq!(
            kinds(&probes),
            [
                "malformed_json",
                "missing_field",
                "wrong_type",
                "unknown_field",
                "enum_near_miss",
                "wrong_content_type",
                "oversized_body"
            ]
        );
        assert_eq!(probes[1].body, Body::Json(json!({})));
        assert_eq!(probes[2].body, Body::Json(json!({"location": 12345})));
        assert_eq!(
            probes[4].body,
            Body::Json(json!({"location": "probe", "units": "metri"}))
        );
        let Body::Raw { bytes, .. } = &probes[6].body else {
            panic!("raw")
        };
        assert!(bytes.len() > OVERSIZED_BYTES);
        let padded: Value = serde_json::from_slice(bytes).unwrap();
        assert_eq!(padded["location"], "probe");
        let Body::Raw { bytes, .. } = oversized(&json!({})).body else {
            panic!("raw")
        };
        assert!(serde_json::from_slice::<Value>(&bytes).unwrap().is_object());
        assert!(serde_json::from_slice::<Value>(&probes[0].body_bytes()).is_err());
    }

    #[test]
    fn mcp_and_fieldless_schemas_get_fewer() {
        let probes = battery(&json!({"type": "object"}), &json!({}), Over::Mcp);
        assert_eq!(kinds(&probes), ["unknown_field"]);
    }

    #[test]
    fn the_other_payload_differs_and_prefers_a_valid_optional_field() {
        let schema = json!({"type": "object", "required": ["source_id"], "properties": {
            "source_id": {"type": "string"},
            "version": {"type": ["integer", "null"], "minimum": 0}
        }});
        let baseline = json!({"source_id": "sales-2024"});
        assert_eq!(
            other_payload(&schema, &baseline),
            json!({"source_id": "sales-2024", "version": 1})
        );
        let full = json!({"source_id": "sales-2024", "version": 2});
        assert_eq!(
            other_payload(&schema, &full),
            json!({"source_id": "sales-2024-2", "version": 2})
        );
        assert_ne!(other_payload(&json!({}), &json!({})), json!({}));
    }

    impl Probe {
        fn body_bytes(&self) -> Vec<u8> {
            match &self.body {
                Body::Json(v) => v.to_string().into_bytes(),
                Body::Raw { bytes, .. } => bytes.clone(),
            }
        }
    }
}
