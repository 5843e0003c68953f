//! `GET /openapi.json`: the gateway's API, described as OpenAPI 3.1.
//!
//! The schemas are generated (schemars) from the types that serialize the
//! gateway's answers and read its requests — the record is the runtime's
//! [`CallReport`](recourse::CallReport), its doc comments the descriptions —
//! so the document cannot drift from the wire. `tests/gateway/openapi.rs` checks real
//! answers against it. Only the routes, their statuses and their parameters
//! are written here. The console (`/console`) is HTML for people, not an API
//! for programs: it is not in the document.

use recourse_tool::protocol::ToolError;
use regex::Regex;
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};

use crate::approvals::DecideBody;
use crate::ready::{Health, Ready};
use crate::records::{CallPage, JournaledCall, SettleBody};
use crate::render::CallAnswer as Answer;
use crate::request::CallRequest;
use recourse_door::Refusal;

/// A refusal: the gateway's structured error, in the envelope tools answer with.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct ErrorEnvelope {
    /// Always `false`.
    #[schemars(extend("const" = false))]
    success: bool,
    /// What went wrong: `code` names it (e.g. `IDEMPOTENCY_KEY_REUSED`),
    /// `category` its kind, `retryable` whether sending it again may help.
    error: ToolError,
}

/// The `202` of `POST /v1/calls`: a call awaiting approval's record, and
/// whether it is a replay.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct AwaitingAnswer {
    /// The record of the call awaiting approval.
    #[serde(flatten)]
    record: recourse::record::AwaitingRecord<'static>,
    /// `true` when a resend with the same key got the record of the call
    /// that waits already (no second approval was asked).
    replayed: bool,
}

/// Statuses the server around the routes may answer, whatever the route
/// (besides [`Refusal::Unauthorized`] on every route with a token).
const SERVER: [(&str, &str); 2] = [
    (
        "431",
        "The request's headers are over the size cap; nothing was done",
    ),
    (
        "503",
        "OVERLOADED: the gateway is at its connection or in-flight limit; nothing was done, send it again later",
    ),
];

/// The OpenAPI document.
pub fn document() -> Value {
    let (doc, _) = document_and_conflicts();
    doc
}

/// The document, and the names of schemas whose request and answer forms
/// differ (none may: a name means one schema).
fn document_and_conflicts() -> (Value, Vec<String>) {
    // Requests are described as they are read, answers as they are written
    // (an `Option` the record always writes, as `null`, is required there).
    let mut reads = settings().for_deserialize().into_generator();
    let mut writes = settings().for_serialize().into_generator();
    let mut paths = paths(&mut reads, &mut writes);
    let mut schemas = writes.take_definitions(true);
    let mut conflicts = Vec::new();
    for (name, schema) in reads.take_definitions(true) {
        match schemas.get(&name) {
            Some(written) if *written != schema => conflicts.push(name),
            Some(_) => {}
            None => {
                schemas.insert(name, schema);
            }
        }
    }
    schemas.insert("GatewayRefusal".to_owned(), refusal_schema());
    // The deadline a call gets when it asks for none: where clients (the
    // Python client's timeout) read it.
    if let (Some(Value::Object(request)), Some(deadline)) = (
        schemas.get_mut("CallRequest"),
        recourse::ExecutorConfig::default().deadline,
    ) {
        request["properties"]["deadline_secs"]["default"] = json!(deadline.as_secs_f64());
    }
    let mut schemas = Value::Object(schemas);
    plain_descriptions(&mut schemas);
    plain_descriptions(&mut paths);
    let doc = json!({
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {
            "title": "recourse gateway",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The recourse executor over HTTP: calls a tool, handles its failures by a fixed policy (waits, resends what is safe to resend, corrects input, looks up unknown outcomes), and answers with the call's record. Refusals of the gateway itself are error envelopes."
        },
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description": "RECOURSE_GATEWAY_TOKEN, when the gateway has one"}},
            "schemas": schemas
        },
        "security": [{}, {"bearer": []}]
    });
    (doc, conflicts)
}

/// A variant's tag (`kind`, `verdict`) says which variant it is.
fn tag_description(property: &mut Value) {
    if property.get("description").is_none()
        && let Some(Value::String(tag)) = property.get("const")
    {
        property["description"] = format!("Which one this is: `{tag}`.").into();
    }
}

fn settings() -> SchemaSettings {
    SchemaSettings::draft2020_12().with(|s| {
        s.definitions_path = "/components/schemas".into();
        s.meta_schema = None;
    })
}

/// Doc comments made into API text: no Rust examples, links as their names,
/// lines of a paragraph joined.
fn plain_descriptions(value: &mut Value) {
    static CODE: std::sync::LazyLock<Regex> =
        std::sync::LazyLock::new(|| Regex::new(r"(?s)\n*```.*?```\n*").expect("a valid pattern"));
    static LINK: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(r"\[(`[^`\]]+`|[^\]]+)\](\([^)]*\))?").expect("a valid pattern")
    });
    match value {
        Value::Object(map) => {
            if let Some(Value::Object(properties)) = map.get_mut("properties") {
                for property in properties.values_mut() {
                    tag_description(property);
                }
            }
            for (key, v) in map.iter_mut() {
                match v {
                    Value::String(text) if key == "description" => {
                        let text_ = CODE.replace_all(text, "\n\n");
                        let text_ = LINK.replace_all(&text_, "$1");
                        *text = text_
                            .split("\n\n")
                            .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
                            .filter(|p| !p.is_empty())
                            .collect::<Vec<_>>()
                            .join("\n\n");
                    }
                    _ => plain_descriptions(v),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(plain_descriptions),
        _ => {}
    }
}

fn paths(reads: &mut SchemaGenerator, g: &mut SchemaGenerator) -> Value {
    let request = reads.subschema_for::<CallRequest>();
    let answer = g.subschema_for::<Answer<'static>>();
    let journaled = g.subschema_for::<JournaledCall>();
    let settle = reads.subschema_for::<SettleBody>();
    let decision = reads.subschema_for::<DecideBody>();
    let approval = g.subschema_for::<recourse::approval::Approval>();
    let shown = g.subschema_for::<recourse::approval::ShownApproval>();
    let shown_list = g.subschema_for::<crate::approvals::ApprovalList>();
    let awaiting = g.subschema_for::<AwaitingAnswer>();
    let page = g.subschema_for::<CallPage<'static>>();
    let health = g.subschema_for::<Health>();
    let ready = g.subschema_for::<Ready>();
    let envelope = g.subschema_for::<ErrorEnvelope>();
    let errors =
        |refusals: &[Refusal], other: &[(&str, &str)]| responses(&envelope, refusals, other);
    let state = reads.subschema_for::<recourse::journal::CallState>();
    let call_id = json!({"name": "call_id", "in": "path", "required": true, "schema": {"type": "string"}, "description": "The call's id (`call_id` of its record)"});
    let approval_id = json!({"name": "approval_id", "in": "path", "required": true, "schema": {"type": "string"}, "description": "The approval's id (`approval.id` of the call's record)"});
    let prefer = json!({"name": "Prefer", "in": "header", "required": false, "schema": {"type": "string", "examples": ["wait=30"]}, "description": "`wait=N` (RFC 7240): answer once the call leaves `awaiting_approval` or `in_flight`, or after N seconds (at most 60; larger is 60). Other preferences, and a wait that cannot be read, are ignored"});
    let mut one = with_ok(
        errors(
            &[
                Refusal::CallNotFound,
                Refusal::NoJournal,
                Refusal::JournalUnavailable,
            ],
            &[],
        ),
        "The call",
        json_body(&journaled),
    );
    one["200"]["headers"] = json!({"Preference-Applied": {"description": "`wait=N` when the request's `Prefer: wait=N` was applied (N capped at 60); absent when it was not (none asked, or too many requests waiting already)", "schema": {"type": "string"}}});
    let mut posted = with_ok(
        errors(
            &[
                Refusal::InvalidCall,
                Refusal::InvalidTarget,
                Refusal::MissingRequiredField,
                Refusal::JournalRequired,
                Refusal::TargetNotAllowed,
                Refusal::CommandNotAllowed,
                Refusal::CallInProgress,
                Refusal::IdempotencyKeyReused,
                Refusal::CallAborted,
                Refusal::JournalUnavailable,
                Refusal::McpUnavailable,
                Refusal::HttpClient,
            ],
            &[
                (
                    "400",
                    "The request body is not JSON, or not the request's shape (MALFORMED_JSON, INVALID_FIELD, …); nothing was dispatched",
                ),
                ("413", "The request body is over the size cap (1 MiB)"),
                ("415", "The request is not JSON (Content-Type)"),
            ],
        ),
        "The call ran (`replayed: false`), or a retry with the same key and request got the first call's record (`replayed: true`)",
        json_body(&answer),
    );
    posted["202"] = json!({
        "description": "The call needs a person's approval (its `approval`, or its tool's manifest entry's) and waits for it, journaled as `awaiting_approval`: nothing was sent. Its record's `approval` says how an approver decides it (`POST /v1/approvals/{approval_id}`); follow it with `GET /v1/calls/{call_id}` (`Location`). A resend with the same key before the decision gets this record again, `replayed: true`",
        "headers": {"Location": {"description": "`/v1/calls/{call_id}`: where to follow the call", "schema": {"type": "string"}}},
        "content": json_body(&awaiting),
    });
    json!({
        "/v1/calls": {
            "post": {
                "summary": "Run one tool call through the executor",
                "description": "Runs the call and answers its record, whatever its outcome (succeeded, failed or unknown: a tool's failure is a record, not an error status). With an idempotency key, at most once per key: the same key and request again get the first call's record with `replayed: true`, and nothing is dispatched. A call that needs a person's approval (its `approval`, or its tool's manifest entry's) is not run: it waits, journaled, and is answered 202.",
                "parameters": [{"name": "Idempotency-Key", "in": "header", "required": false, "schema": {"type": "string", "minLength": 1, "maxLength": 255}, "description": "The same as the body's `idempotency_key` (they must agree when both are given)"}],
                "requestBody": {"required": true, "description": "The call", "content": {"application/json": {"schema": request}}},
                "responses": posted
            },
            "get": {
                "summary": "The journaled calls, newest first",
                "description": "A page of the calls the gateway journaled (keyed and non-idempotent calls).",
                "parameters": [
                    {"name": "state", "in": "query", "required": false, "schema": state, "description": "Only calls in this state"},
                    {"name": "limit", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 1, "maximum": recourse::journal::MAX_LIST, "default": 100}, "description": "How many calls a page holds"},
                    {"name": "before", "in": "query", "required": false, "schema": {"type": "string"}, "description": "A call_id: the page after it (`next_before` of the previous page)"}
                ],
                "responses": with_ok(errors(&[
                    Refusal::InvalidQuery, Refusal::NoJournal, Refusal::JournalUnavailable,
                ], &[]), "A page of calls", json_body(&page))
            }
        },
        "/v1/calls/{call_id}": {"get": {
            "summary": "One journaled call",
            "description": "The call's state, and its record (while it is in flight, or when its process stopped mid-call, the record the journal alone gives: outcome unknown, attempts counted but not detailed; a settled call's record says what settled it; a call awaiting approval's, outcome `awaiting_approval`). An approval past its expiry is expired as it is read. With `Prefer: wait=N`, answered once the call leaves `awaiting_approval` or `in_flight`, or after N seconds.",
            "parameters": [call_id, prefer],
            "responses": one
        }},
        "/v1/approvals": {"get": {
            "summary": "The approvals waiting for a person",
            "description": "The calls awaiting approval that the caller sees (an approver: every caller's; anyone else: their own), each with what will be sent once approved — the method and URL, or the MCP server and tool; the headers (secret values redacted); the payload (redacted) — the caller that asked, and what asked for approval (`asked_by`: the request, the tool's manifest, or a policy file), whose words the approval's `reason` is. At most 200.",
            "parameters": [{"name": "state", "in": "query", "required": false, "schema": {"type": "string", "enum": ["pending"]}, "description": "`pending` (the default): the approvals waiting for a decision"}],
            "responses": with_ok(errors(&[
                Refusal::InvalidQuery, Refusal::NoJournal, Refusal::JournalUnavailable,
            ], &[]), "The approvals pending", json_body(&shown_list))
        }},
        "/v1/approvals/{approval_id}": {"get": {
            "summary": "One approval, with the request it lets go",
            "description": "The approval (its state, reason, expiry, request hash, and who decided it), the caller that asked, what asked for it, and what will be sent (`request`, redacted; `null` once the journal no longer holds it). A caller sees an approval when it sees the call: its own, or — an approver — one pending, or one it decided. Anyone else gets 404, as for an absent one.",
            "parameters": [approval_id],
            "responses": with_ok(errors(&[
                Refusal::ApprovalNotFound, Refusal::NoJournal, Refusal::JournalUnavailable,
            ], &[]), "The approval, shown whole", json_body(&shown))
        }, "post": {
            "summary": "Decide a call awaiting approval",
            "description": "An approver approves or rejects a call that waits for a person. Approved, it is dispatched by this gateway, exactly once, with exactly the request approved (every value of its payload protected from correction); rejected, it fails (reason `approval_rejected`), nothing sent. Exactly one of two decisions made at once applies. An approval past its expiry cannot be decided: it expires (reason `approval_expired`).",
            "parameters": [approval_id],
            "requestBody": {"required": true, "description": "The decision", "content": {"application/json": {"schema": decision}}},
            "responses": with_ok(errors(&[
                Refusal::InvalidCall, Refusal::NotApprover, Refusal::ApprovalNotFound, Refusal::NoJournal,
                Refusal::ApprovalStale, Refusal::ApprovalDecided, Refusal::JournalUnavailable,
            ], &[
                ("400", "The body is not JSON, or not the decision's shape (MALFORMED_JSON, INVALID_FIELD, …)"),
            ]), "The approval, decided", json_body(&approval))
        }},
        "/v1/calls/{call_id}/reconcile": {"post": {
            "summary": "Settle an in-flight or unknown call",
            "description": "Settles the call through its recorded lookup, and answers it as `GET /v1/calls/{call_id}` does; never resends it. A call that already finished is answered as it is.",
            "parameters": [call_id],
            "responses": with_ok(errors(&[
                Refusal::TargetNotAllowed, Refusal::CallNotFound, Refusal::NoJournal,
                Refusal::CallInProgress, Refusal::JournalUnavailable,
            ], &[]), "The call after settling (still unknown when the lookup could not tell)", json_body(&journaled))
        }},
        "/v1/calls/{call_id}/settle": {"post": {
            "summary": "Settle an open call by hand",
            "description": "An approver records what a person found: the call (unknown, or left in flight past its lease) becomes `succeeded` or `failed`, its record's `settlement` saying `by: person`, who (the caller's name) and the note; its `next` says a person settled it. Never sends anything. Answered as `GET /v1/calls/{call_id}` does.",
            "parameters": [call_id],
            "requestBody": {"required": true, "description": "What the person found", "content": {"application/json": {"schema": settle}}},
            "responses": with_ok(errors(&[
                Refusal::InvalidCall, Refusal::NotApprover, Refusal::CallNotFound, Refusal::NoJournal,
                Refusal::CallNotSettleable, Refusal::JournalUnavailable,
            ], &[
                ("400", "The body is not JSON, or not the settlement's shape (MALFORMED_JSON, INVALID_FIELD, …)"),
            ]), "The call, settled", json_body(&journaled))
        }},
        "/healthz": {"get": {
            "summary": "Liveness",
            "description": "Whether the gateway serves, and its shared state's mode; no token needed.",
            "security": [],
            "responses": {"200": {"description": "The gateway is serving", "content": {"application/json": {"schema": health}}}}
        }},
        "/readyz": {"get": {
            "summary": "Readiness",
            "description": "Whether a load balancer should send this gateway traffic; no token needed.",
            "security": [],
            "responses": {
                "200": {"description": "Ready for traffic (shared state in fallback still is)", "content": {"application/json": {"schema": ready}}},
                "503": {"description": "Draining after SIGTERM, or the journal does not answer", "content": {"application/json": {"schema": ready}}}
            }
        }},
        "/metrics": {"get": {
            "summary": "Prometheus metrics",
            "description": "The recourse_* series, in the text exposition format.",
            "responses": with_ok(errors(&[], &[]), "Text exposition format", json!({"text/plain": {"schema": {"type": "string"}}}))
        }},
        "/openapi.json": {"get": {
            "summary": "This document",
            "description": "The gateway's API as OpenAPI 3.1, its schemas generated from the types that serialize its answers.",
            "responses": with_ok(errors(&[], &[]), "OpenAPI 3.1", json_body(json!({"type": "object"})))
        }}
    })
}

/// The error responses: `own`, then the common ones a route does not name itself.
fn responses(
    envelope: &schemars::Schema,
    refusals: &[Refusal],
    other: &[(&str, &str)],
) -> Map<String, Value> {
    let mut by_status: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for refusal in refusals.iter().chain([&Refusal::Unauthorized]) {
        by_status
            .entry(refusal.status().to_string())
            .or_default()
            .push(format!("{}: {}", refusal.code(), refusal.meaning()));
    }
    for (status, description) in other.iter().chain(SERVER.iter()) {
        by_status
            .entry((*status).to_owned())
            .or_default()
            .push((*description).to_owned());
    }
    let mut map = Map::new();
    for (status, descriptions) in by_status {
        map.insert(
            status,
            json!({"description": descriptions.join("; or "), "content": {"application/json": {"schema": envelope}}}),
        );
    }
    map
}

/// The gateway's refusal codes, each with its status and meaning: what an
/// envelope's `error.code` may be when the gateway itself refused.
fn refusal_schema() -> Value {
    let codes: Vec<&str> = Refusal::ALL.iter().map(|r| r.code()).collect();
    let described: Vec<String> = Refusal::ALL
        .iter()
        .map(|r| format!("{} ({}): {}", r.code(), r.status(), r.meaning()))
        .collect();
    json!({
        "type": "string",
        "description": format!("The gateway's own refusals (a tool's failure is a record, answered 200): {}.", described.join("; ")),
        "enum": codes,
    })
}

/// `errors` with a 200 first, answering `content`.
fn with_ok(errors: Map<String, Value>, description: &str, content: Value) -> Value {
    let mut map = Map::new();
    map.insert(
        "200".to_owned(),
        json!({"description": description, "content": content}),
    );
    map.extend(errors);
    Value::Object(map)
}

/// A JSON body of `schema`.
fn json_body(schema: impl serde::Serialize) -> Value {
    json!({"application/json": {"schema": schema}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_lists_every_refusal_with_its_status() {
        let doc = document();
        let listed = &doc["components"]["schemas"]["GatewayRefusal"]["enum"];
        let codes: Vec<&str> = Refusal::ALL.iter().map(|r| r.code()).collect();
        assert_eq!(listed, &json!(codes));
        let post = &doc["paths"]["/v1/calls"]["post"]["responses"];
        for refusal in [
            Refusal::IdempotencyKeyReused,
            Refusal::CallInProgress,
            Refusal::Unauthorized,
        ] {
            let text = post[refusal.status().to_string()]["description"]
                .as_str()
                .unwrap();
            assert!(text.contains(refusal.code()), "{}: {text}", refusal.code());
        }
    }

    #[test]
    fn a_name_means_one_schema() {
        let (_, conflicts) = document_and_conflicts();
        assert!(
            conflicts.is_empty(),
            "read and written differently: {conflicts:?}"
        );
    }

    #[test]
    fn descriptions_read_as_text() {
        let mut v = json!({"description": "A thing, see [`Other::x`](crate::Other).\nMore.\n\n```\nlet a = 1;\n```\n\nLast [`Y`]."});
        plain_descriptions(&mut v);
        assert_eq!(
            v["description"],
            "A thing, see `Other::x`. More.\n\nLast `Y`."
        );
    }

    /// Every object's properties below `value`, with where they are.
    fn properties<'a>(value: &'a Value, at: String, out: &mut Vec<(String, &'a Value)>) {
        match value {
            Value::Object(map) => {
                for (key, v) in map {
                    if key == "properties" {
                        for (name, p) in v.as_object().into_iter().flatten() {
                            out.push((format!("{at}.{name}"), p));
                        }
                    }
                    properties(v, format!("{at}/{key}"), out);
                }
            }
            Value::Array(items) => {
                for (n, v) in items.iter().enumerate() {
                    properties(v, format!("{at}[{n}]"), out);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn every_property_and_route_has_a_description() {
        let doc = document();
        let mut all = Vec::new();
        properties(&doc, String::new(), &mut all);
        assert!(all.len() > 100, "{}", all.len());
        for (at, property) in all {
            assert!(
                property["description"].is_string(),
                "{at} has no description"
            );
        }
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                assert!(op["description"].is_string(), "{method} {path}");
                for (status, response) in op["responses"].as_object().unwrap() {
                    assert!(
                        response["description"].is_string(),
                        "{method} {path} {status}"
                    );
                }
            }
        }
    }
}
