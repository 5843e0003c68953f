//! `GET /openapi.json`: the gateway's API, described as OpenAPI 3.1.

use serde_json::{Value, json};

/// The OpenAPI document.
pub(crate) fn document() -> Value {
    let envelope = json!({"$ref": "#/components/schemas/ErrorEnvelope"});
    let error = |description: &str| json!({"description": description, "content": {"application/json": {"schema": envelope}}});
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "recourse gateway",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The recourse executor over HTTP: calls a tool, handles its failures by a fixed policy, and reports every attempt."
        },
        "paths": {
            "/v1/calls": {
                "post": {
                    "summary": "Run one tool call through the executor; with an idempotency key, at most once per key",
                    "parameters": [{"name": "Idempotency-Key", "in": "header", "required": false, "schema": {"type": "string", "minLength": 1, "maxLength": 255}, "description": "Same as the body's idempotency_key (they must agree when both are given)"}],
                    "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CallRequest"}}}},
                    "responses": {
                        "200": {"description": "The call ran (replayed false), or a retry with the same key and request got the first call's record (replayed true); its outcome (succeeded, failed or unknown) is in the record", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CallReport"}}}},
                        "400": error("The request is malformed, or has an idempotency_key while the gateway keeps no journal (JOURNAL_REQUIRED)"),
                        "401": error("A bearer token is required (RECOURSE_GATEWAY_TOKEN is set)"),
                        "403": error("The target is not allowed (loopback only unless --allow-target), or no --allow-mcp-command pattern matches the MCP command"),
                        "409": error("CALL_IN_PROGRESS: the call with this idempotency key is still running; ask again after Retry-After seconds"),
                        "413": error("The request body is over the size cap"),
                        "415": error("The request is not JSON"),
                        "422": error("IDEMPOTENCY_KEY_REUSED: the key belongs to a different request"),
                        "431": error("The request's headers are over the size cap"),
                        "503": error("JOURNAL_UNAVAILABLE: the journal could not be written, so nothing was sent; or the gateway is at its in-flight limit")
                    }
                },
                "get": {
                    "summary": "The journaled calls, newest first",
                    "parameters": [
                        {"name": "state", "in": "query", "schema": {"enum": ["in_flight", "succeeded", "failed", "unknown"]}},
                        {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}},
                        {"name": "before", "in": "query", "schema": {"type": "string"}, "description": "A call_id: the page after it (next_before of the previous page)"}
                    ],
                    "responses": {
                        "200": {"description": "A page of calls", "content": {"application/json": {"schema": {"type": "object", "required": ["calls", "next_before"], "properties": {
                            "calls": {"type": "array", "items": {"type": "object"}},
                            "next_before": {"type": ["string", "null"], "description": "Pass as before for the next page; null on the last"}
                        }}}}},
                        "400": error("INVALID_QUERY"),
                        "404": error("NO_JOURNAL: the gateway runs with --journal none")
                    }
                }
            },
            "/v1/calls/{call_id}": {"get": {
                "summary": "One journaled call: its state and record",
                "parameters": [{"name": "call_id", "in": "path", "required": true, "schema": {"type": "string"}}],
                "responses": {
                    "200": {"description": "The call", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/JournaledCall"}}}},
                    "404": error("CALL_NOT_FOUND, or NO_JOURNAL")
                }
            }},
            "/v1/calls/{call_id}/reconcile": {"post": {
                "summary": "Settle an in-flight or unknown call through its recorded lookup; never resends",
                "parameters": [{"name": "call_id", "in": "path", "required": true, "schema": {"type": "string"}}],
                "responses": {
                    "200": {"description": "The call after settling (still unknown when the lookup could not tell)", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/JournaledCall"}}}},
                    "403": error("The recorded lookup is not an allowed target"),
                    "404": error("CALL_NOT_FOUND, or NO_JOURNAL"),
                    "409": error("CALL_IN_PROGRESS: another process holds the call's lease")
                }
            }},
            "/healthz": {"get": {"summary": "Liveness (no token needed)", "security": [], "responses": {"200": {"description": "The gateway is serving", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Health"}}}}}}},
            "/readyz": {"get": {"summary": "Readiness for a load balancer (no token needed)", "security": [], "responses": {
                "200": {"description": "Ready for traffic (shared state in fallback still is)", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Readiness"}}}},
                "503": {"description": "Draining after SIGTERM, or the journal does not answer", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Readiness"}}}}
            }}},
            "/metrics": {"get": {"summary": "Prometheus metrics (recourse_*)", "responses": {"200": {"description": "Text exposition format", "content": {"text/plain": {"schema": {"type": "string"}}}}}}},
            "/openapi.json": {"get": {"summary": "This document", "responses": {"200": {"description": "OpenAPI 3.1"}}}}
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Health": {
                    "type": "object",
                    "required": ["status", "shared_state"],
                    "properties": {
                        "status": {"const": "ok"},
                        "shared_state": {"enum": ["shared", "fallback", "off"], "description": "shared: the fleet's budget and breakers decide; fallback: Redis does not answer and this gateway decides alone; off: no --shared-state"}
                    }
                },
                "Readiness": {
                    "type": "object",
                    "required": ["status", "journal", "shared_state"],
                    "properties": {
                        "status": {"enum": ["ready", "draining", "unavailable"]},
                        "journal": {"enum": ["ok", "unreachable", "none"]},
                        "shared_state": {"enum": ["shared", "fallback", "off"]}
                    }
                },
                "CallRequest": {
                    "type": "object",
                    "required": ["payload"],
                    "additionalProperties": false,
                    "properties": {
                        "url": {"type": "string", "description": "The tool's URL (POSTed with the payload); give url or mcp"},
                        "mcp": {"type": "object", "description": "An MCP tool: {command | url, tool}"},
                        "payload": {"type": "object"},
                        "headers": {"type": "array", "items": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "string"}], "minItems": 2, "maxItems": 2}},
                        "schema": {"type": "object", "description": "The capability's input JSON Schema"},
                        "protect": {"type": "array", "items": {"type": "string"}, "description": "JSON Pointers no correction may change"},
                        "idempotent": {"type": "boolean", "description": "Your word that resending is harmless; unset, the tool's manifest decides, then the HTTP method, else not idempotent"},
                        "idempotency_key": {"type": "string", "minLength": 1, "maxLength": 255, "description": "At most one execution per key: a retry with the same key and request gets the first record (needs the gateway's journal)"},
                        "method": {"enum": ["POST", "PUT", "PATCH", "DELETE", "GET", "HEAD", "OPTIONS"], "default": "POST"},
                        "delegated": {"type": "boolean", "default": false},
                        "reconcile": {"type": "string", "description": "Lookup URL template with {key} / {operation_id}"},
                        "verify": {"type": "object", "additionalProperties": false, "required": ["expect"],
                            "description": "Read the write back: an HTTP read (url, allowlisted like the call) or an MCP tool on the same server, args templated over the payload ({{payload.x}}), expectations 'POINTER OP VALUE' (==, !=, exists, !exists)",
                            "properties": {
                                "url": {"type": "string"}, "tool": {"type": "string"},
                                "method": {"enum": ["GET", "POST"]}, "args": {"type": "object"},
                                "expect": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                                "after_only": {"type": "boolean", "default": false},
                                "always": {"type": "boolean", "default": false}
                            }},
                        "intent": {"type": "string", "description": "The user's original request (enables L4)"},
                        "max_retries": {"type": "integer", "minimum": 0, "description": "At most the gateway's own (RECOURSE_MAX_RETRIES); larger values are lowered to it"},
                        "max_corrections": {"type": "integer", "minimum": 0, "description": "At most the gateway's own (RECOURSE_MAX_CORRECTIONS); larger values are lowered to it"},
                        "deadline_secs": {"type": "number", "exclusiveMinimum": 0, "maximum": 3600, "description": "At most the gateway's own deadline (120 s by default); longer ones are shortened to it"}
                    }
                },
                "CallReport": call_report_schema(),
                "JournaledCall": {"type": "object", "required": ["state", "record"], "properties": {
                    "state": {"enum": ["in_flight", "succeeded", "failed", "unknown"]},
                    "record": {"description": "The call's record (CallReport) once it finished; a summary while in flight"}
                }},
                "ToolError": {"type": "object", "required": ["code", "message", "category", "retryable"], "properties": {
                    "code": {"type": "string"}, "message": {"type": "string"}, "category": {"type": "string"},
                    "retryable": {"type": "boolean"}, "details": {}
                }},
                "ErrorEnvelope": {"type": "object", "required": ["success", "error"], "properties": {
                    "success": {"const": false}, "error": {"$ref": "#/components/schemas/ToolError"}
                }}
            }
        },
        "security": [{}, {"bearer": []}]
    })
}

/// A call's record, as `POST /v1/calls` returns it.
fn call_report_schema() -> Value {
    json!({
        "type": "object",
        "required": ["outcome", "http_calls", "llm_calls", "attempts"],
        "properties": {
            "call_id": {"type": "string"},
            "outcome": {"enum": ["succeeded", "failed", "unknown"]},
            "data": {},
            "error": {"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/ToolError"}]},
            "reason": {"type": ["string", "null"]},
            "reason_text": {"type": ["string", "null"]},
            "stop_kind": {"enum": ["auth", "permission", "policy", "input", "transient", "unknown_outcome", "budget", "configuration", null]},
            "next": next_schema(),
            "http_calls": {"type": "integer"},
            "llm_calls": {"type": "integer"},
            "idempotency_key": {"type": ["string", "null"]},
            "idempotency": {"type": "object", "required": ["idempotent", "from"], "properties": {
                "idempotent": {"type": "boolean"},
                "from": {"enum": ["caller", "manifest", "mcp_annotation", "method", "default"]}
            }},
            "replayed": {"type": "boolean", "description": "POST /v1/calls only: true when this is the first call's record, answered to a retry with the same idempotency key"},
            "operation_id": {"type": ["string", "null"]},
            "verification": {"enum": ["verified", "already_applied", "not_committed", "not_applied", "cannot_tell", null]},
            "attempts": {"type": "array", "items": {"type": "object", "properties": {
                "n": {"type": "integer"}, "payload": {}, "status": {"type": ["integer", "null"]},
                "transport_error": {"type": ["string", "null"]}, "category": {"type": ["string", "null"]},
                "retry_permission": {"enum": ["allowed", "refused", "unspecified"]},
                "action": {"enum": ["succeed", "retry_same", "correct", "reconcile", "verify", "stop"]},
                "wait_ms": {"type": ["integer", "null"]},
                "source": {"enum": ["caller", "coercion", "repair", "llm", "semantic"]}
            }}}
        }
    })
}

/// The record's `next`: what to hand back to the model.
fn next_schema() -> Value {
    json!({"type": "object", "required": ["step", "model_message"], "properties": {
        "step": {"enum": ["use_result", "fix_arguments", "ask_user", "fix_configuration", "explain_refusal", "do_not_repeat", "give_up"]},
        "model_message": {"type": "string", "maxLength": 600, "description": "What to hand the model: redacted; the tool's words fenced as <<<…>>>"},
        "question": {"type": "string", "description": "With ask_user: the question for the user"},
        "operation_id": {"type": "string", "description": "With do_not_repeat: the write to check"},
        "retry_after_ms": {"type": "integer", "description": "With give_up: when the tool accepts calls again"}
    }})
}
