"""The client's models against the gateway's own OpenAPI document.

Every field a model declares exists in its schema with a compatible type;
every field the schema requires is declared; every field the model requires
is one the schema requires (else the client would reject a valid answer)."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Union

import pytest

from recourse_client import (
    Attempt,
    CallEntry,
    CallPage,
    CallRecord,
    Gateway,
    Idempotency,
    JournaledCall,
    Next,
    Settlement,
    TokenUsage,
    ToolError,
)
from recourse_client.client import DEFAULT_TIMEOUT, GATEWAY_DEADLINE_SECS
from recourse_client.models import json_name

#: Each model, and the schemas it reads (the first is checked field by field).
SCHEMAS: dict[type, tuple[str, ...]] = {
    CallRecord: ("CallAnswer", "CallReport"),
    Settlement: ("Settlement",),
    Next: ("Next",),
    ToolError: ("ToolError",),
    TokenUsage: ("TokenUsage",),
    Idempotency: ("Idempotency",),
    Attempt: ("AttemptRecord",),
    JournaledCall: ("JournaledCall",),
    CallEntry: ("CallEntry",),
    CallPage: ("CallPage",),
}


@pytest.fixture
def document(servers, tmp_path) -> dict[str, Any]:
    gateway = servers("serve", "--port", "0", "--journal", str(tmp_path / "j.db"))
    with Gateway(gateway.url) as client:
        return client.openapi()


def schema_types(doc: dict[str, Any], schema: Any) -> set[str]:
    """The JSON types a schema admits; ``{"any"}`` when it does not say."""
    if schema is True or schema == {} or not isinstance(schema, dict):
        return {"any"}
    if "$ref" in schema:
        return schema_types(doc, resolve(doc, schema["$ref"]))
    for union in ("anyOf", "oneOf"):
        if union in schema:
            return set().union(*(schema_types(doc, s) for s in schema[union]))
    if "const" in schema:
        return {json_type(schema["const"])}
    if "enum" in schema:
        return {json_type(v) for v in schema["enum"]}
    kind = schema.get("type")
    if kind is None:
        return {"object"} if "properties" in schema else {"any"}
    return set(kind) if isinstance(kind, list) else {kind}


def json_type(value: Any) -> str:
    return {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null",
            list: "array", dict: "object"}[type(value)]


def python_types(tp: Any) -> set[str]:
    if tp is Any:
        return {"any"}
    if typing.get_origin(tp) in (Union, types.UnionType):
        return set().union(*(python_types(t) for t in typing.get_args(tp)))
    origin = typing.get_origin(tp) or tp
    if dataclasses.is_dataclass(origin) or origin is dict:
        return {"object"}
    return {list: {"array"}, str: {"string"}, int: {"integer"}, float: {"number", "integer"},
            bool: {"boolean"}, type(None): {"null"}}[origin]


def resolve(doc: dict[str, Any], ref: str) -> dict[str, Any]:
    node: Any = doc
    for segment in ref.removeprefix("#/").split("/"):
        node = node[segment]
    return node


def referenced(doc: dict[str, Any], schema: dict[str, Any]) -> set[str]:
    """The component names a property's schema refers to (directly or in a union or array)."""
    names = set()
    if "$ref" in schema:
        names.add(schema["$ref"].rsplit("/", 1)[-1])
    for key in ("anyOf", "oneOf"):
        for s in schema.get(key, []):
            names |= referenced(doc, s)
    if isinstance(schema.get("items"), dict):
        names |= referenced(doc, schema["items"])
    for name in list(names):  # a named union (StoredRecord) stands for its members
        names |= referenced(doc, doc["components"]["schemas"][name])
    return names


@pytest.mark.parametrize("model", list(SCHEMAS), ids=lambda m: m.__name__)
def test_the_model_matches_its_schema(document, model):
    schema = document["components"]["schemas"][SCHEMAS[model][0]]
    properties, required = schema["properties"], set(schema.get("required", []))
    hints = typing.get_type_hints(model)
    declared = {}
    for f in dataclasses.fields(model):
        name = json_name(f)
        declared[name] = f
        assert name in properties, f"{model.__name__}.{name} is not in the schema"
        theirs, ours = schema_types(document, properties[name]), python_types(hints[f.name])
        assert "any" in ours or theirs <= ours | ({"integer"} if "number" in ours else set()), (
            f"{model.__name__}.{name}: the schema allows {theirs}, the model reads {ours}"
        )
        for inner in _dataclasses_in(hints[f.name]):
            assert set(SCHEMAS[inner]) & referenced(document, properties[name]), (
                f"{model.__name__}.{name}: {inner.__name__} is not what the schema refers to"
            )
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        if not has_default:
            assert name in required, f"{model.__name__}.{name} is required by the model, optional in the schema"
    missing = required - set(declared)
    assert not missing, f"{model.__name__} does not declare the required {missing}"


def _dataclasses_in(tp: Any) -> list[type]:
    if dataclasses.is_dataclass(tp):
        return [tp]
    return [d for arg in typing.get_args(tp) for d in _dataclasses_in(arg)]


def test_every_route_the_client_uses_is_documented(document):
    paths = document["paths"]
    assert {"post", "get"} <= set(paths["/v1/calls"])
    assert "get" in paths["/v1/calls/{call_id}"]
    assert "post" in paths["/v1/calls/{call_id}/reconcile"]
    post = paths["/v1/calls"]["post"]["responses"]
    assert post["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/CallAnswer")
    for status in ("400", "401", "403", "409", "413", "415", "422", "431", "503"):
        assert post[status]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorEnvelope"), status


def test_the_clients_timeout_outlasts_the_gateways_default_deadline(document):
    deadline = document["components"]["schemas"]["CallRequest"]["properties"]["deadline_secs"]
    assert deadline["default"] == GATEWAY_DEADLINE_SECS
    assert DEFAULT_TIMEOUT > GATEWAY_DEADLINE_SECS
