"""A client of the recourse gateway (``recourse serve``).

:class:`Gateway` (and :class:`AsyncGateway`) runs tool calls through the
gateway and returns their records as typed dataclasses; writes get an
idempotency key, so a lost answer can be asked for again safely.
:meth:`Gateway.spawn` starts a gateway for it (the ``recourse`` that ``pip
install recourse-cli`` installs), :func:`spawn_tools` the reference tools.
``recourse_client.pydantic_ai`` (extra ``pydantic-ai``) routes a pydantic-ai
agent's tool calls through it.
"""

from .client import AsyncGateway, Gateway, GatewayError, Resends, call_body
from .spawn import SpawnedGateway, SpawnError, recourse_bin, spawn_gateway, spawn_tools
from .models import (
    Attempt,
    CallEntry,
    CallPage,
    CallRecord,
    Idempotency,
    JournaledCall,
    Next,
    Settlement,
    TokenUsage,
    ToolError,
    from_json,
)

__all__ = [
    "AsyncGateway",
    "Attempt",
    "CallEntry",
    "CallPage",
    "CallRecord",
    "Gateway",
    "GatewayError",
    "Idempotency",
    "JournaledCall",
    "Next",
    "Resends",
    "Settlement",
    "SpawnError",
    "SpawnedGateway",
    "TokenUsage",
    "ToolError",
    "call_body",
    "from_json",
    "recourse_bin",
    "spawn_gateway",
    "spawn_tools",
]
