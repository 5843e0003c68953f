"""A client of the recourse gateway (``recourse serve``).

:class:`Gateway` (and :class:`AsyncGateway`) runs tool calls through the
gateway and returns their records as typed dataclasses; writes get an
idempotency key, so a lost answer can be asked for again safely.
``recourse_client.pydantic_ai`` (extra ``pydantic-ai``) routes a pydantic-ai
agent's tool calls through it.
"""

from .client import AsyncGateway, Gateway, GatewayError, Resends, call_body
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
    "TokenUsage",
    "ToolError",
    "call_body",
    "from_json",
]
