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
            "/v1/calls": {"post": {
                "summary": "Run one tool call through the executor",
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CallRequest"}}}},
                "responses": {
                    "200": {"description": "The call ran; its outcome (succeeded, failed or unknown) is in the report", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CallReport"}}}},
                    "400": error("The request is malformed"),
                    "401": error("A bearer token is required (RECOURSE_GATEWAY_TOKEN is set)"),
                    "403": error("The target is not allowed (loopback only unless --allow-target), or no --allow-mcp-command pattern matches the MCP command"),
                    "413": error("The request body is over the size cap"),
                    "415": error("The request is not JSON")
                }
            }},
            "/healthz": {"get": {"summary": "Liveness", "responses": {"200": {"description": "The gateway is serving"}}}},
            "/metrics": {"get": {"summary": "Prometheus metrics (recourse_*)", "responses": {"200": {"description": "Text exposition format", "content": {"text/plain": {"schema": {"type": "string"}}}}}}},
            "/openapi.json": {"get": {"summary": "This document", "responses": {"200": {"description": "OpenAPI 3.1"}}}}
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
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
                        "idempotent": {"type": "boolean", "default": true},
                        "delegated": {"type": "boolean", "default": false},
                        "reconcile": {"type": "string", "description": "Lookup URL template with {key} / {operation_id}"},
                        "intent": {"type": "string", "description": "The user's original request (enables L4)"},
                        "max_retries": {"type": "integer", "minimum": 0, "description": "At most the gateway's own (RECOURSE_MAX_RETRIES); larger values are lowered to it"},
                        "max_corrections": {"type": "integer", "minimum": 0, "description": "At most the gateway's own (RECOURSE_MAX_CORRECTIONS); larger values are lowered to it"},
                        "deadline_secs": {"type": "number", "exclusiveMinimum": 0, "maximum": 3600, "description": "At most the gateway's own deadline (120 s by default); longer ones are shortened to it"}
                    }
                },
                "CallReport": call_report_schema(),
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
            "operation_id": {"type": ["string", "null"]},
            "attempts": {"type": "array", "items": {"type": "object", "properties": {
                "n": {"type": "integer"}, "payload": {}, "status": {"type": ["integer", "null"]},
                "transport_error": {"type": ["string", "null"]}, "category": {"type": ["string", "null"]},
                "retry_permission": {"enum": ["allowed", "refused", "unspecified"]},
                "action": {"enum": ["succeed", "retry_same", "correct", "reconcile", "stop"]},
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
