"""pydantic-ai tools whose calls run through the recourse gateway.

:class:`RecourseToolset` is a pydantic-ai toolset: each tool the model calls
is one ``POST /v1/calls`` (waits, resends, corrections and lookups happen in
the gateway), and the record becomes pydantic-ai's own signal:

- ``next.step == "fix_arguments"``: a retry prompt (:class:`ModelRetry`)
  carrying ``next.model_message`` — the model may correct its arguments;
- ``use_result``: the result, with ``next.model_message`` beside it when
  recourse resent, corrected or looked the call up;
- any other step (``ask_user``, ``do_not_repeat``, ``give_up``,
  ``explain_refusal``, ``fix_configuration``): the tool's return is the text
  ``recourse: next step STEP.`` and the model message — a plain result, since
  calling again would not help.

A call whose outcome may have taken effect (``do_not_repeat``) is remembered:
the same tool with the same arguments again gets the same answer, and nothing
is sent.

Each tool call carries an idempotency key derived from the run and the tool
call's id, so the client may safely send the gateway request again if its
answer is lost.

A refusal of the gateway itself (:class:`~recourse_client.GatewayError`: no
token, a target it does not allow) is not the model's to fix and propagates:
it ends the run.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

import httpx
from pydantic_core import SchemaValidator, core_schema
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool

from .client import READ_METHODS, AsyncGateway
from .loopback import trust_env
from .models import CallRecord

#: How many do-not-repeat calls a toolset remembers.
REMEMBERED = 1024

_ANY_ARGS = SchemaValidator(core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema()))

DO_NOT_REPEAT = "DO NOT REPEAT THIS CALL: it may already have taken effect, and calling again could do it twice."


@dataclass(frozen=True)
class GatewayTool:
    """A tool the model may call, and how the gateway calls it.

    ``parameters`` is the tool's input JSON Schema: offered to the model, and
    sent as the call's ``schema`` so recourse can coerce and check
    corrections. ``options`` are further ``POST /v1/calls`` fields
    (``protect``, ``verify``, ``headers``, ``intent``, …).
    """

    name: str
    description: str
    url: str
    parameters: Mapping[str, Any]
    method: Optional[str] = None
    idempotent: Optional[bool] = None
    reconcile: Optional[str] = None
    options: Mapping[str, Any] = field(default_factory=dict)


def tools_from_manifest(base_url: str, manifest: Mapping[str, Any], *, lookups: bool = True) -> list[GatewayTool]:
    """The tools of a tool server's capability manifest (``GET /api/capabilities``).

    The manifest's idempotency is left to the gateway, which reads the same
    manifest; its lookup becomes the call's ``reconcile`` (unless ``lookups``
    is false), so an unknown outcome is settled on the spot. Endpoints and
    lookups are taken on ``base_url`` only.
    """
    base = base_url.rstrip("/")
    tools = []
    for cap in _capabilities(manifest):
        endpoint, lookup = cap["endpoint"], cap.get("reconcile")
        if not endpoint.startswith("/") or (lookup is not None and not lookup.startswith("/")):
            raise ValueError(f"capability {cap['name']!r} names a route off its server")
        tools.append(
            GatewayTool(
                name=cap["name"],
                description=cap["description"],
                url=base + endpoint,
                parameters=cap["input_schema"],
                method=cap.get("method"),
                reconcile=base + lookup if lookup and lookups else None,
            )
        )
    return tools


def _capabilities(manifest: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    data = manifest.get("data", manifest)
    caps = data.get("capabilities", data) if isinstance(data, Mapping) else data
    if not isinstance(caps, list):
        raise ValueError("the manifest holds no list of capabilities")
    return caps


def fetch_tools(base_url: str, *, lookups: bool = True, timeout: float = 10.0) -> list[GatewayTool]:
    """:func:`tools_from_manifest` of the manifest ``base_url`` serves."""
    url = base_url.rstrip("/") + "/api/capabilities"
    response = httpx.get(url, timeout=timeout, trust_env=trust_env(url))
    response.raise_for_status()
    return tools_from_manifest(base_url, response.json(), lookups=lookups)


def tool_answer(record: CallRecord) -> Any:
    """What the model reads after ``record``; raises :class:`ModelRetry` on
    ``fix_arguments``."""
    step, message = record.next.step, record.next.model_message
    if step == "fix_arguments":
        raise ModelRetry(message)
    if step == "use_result":
        # One attempt that simply succeeded, and no read-back that found anything:
        # nothing for the model to know beyond the data.
        nothing_read = record.verification in (None, "unneeded", "not_applicable")
        plain = [a.action for a in record.attempts] == ["succeed"] and nothing_read
        return record.data if plain else {"result": record.data, "note": message}
    text = f"recourse: next step {step}.\n{message}"
    return f"{DO_NOT_REPEAT}\n{text}" if step == "do_not_repeat" else text


class RecourseToolset(AbstractToolset[Any]):
    """pydantic-ai tools that run through a recourse gateway.

    ``on_record(tool_name, record)`` sees every record (for logs or tests).
    ``max_retries`` is how many ``fix_arguments`` retry prompts pydantic-ai
    allows per tool before it stops the run.
    """

    def __init__(
        self,
        gateway: AsyncGateway,
        tools: list[GatewayTool],
        *,
        id: Optional[str] = None,
        max_retries: int = 2,
        on_record: Optional[Callable[[str, CallRecord], None]] = None,
    ) -> None:
        self._gateway = gateway
        self._tools = {t.name: t for t in tools}
        if len(self._tools) != len(tools):
            raise ValueError("two tools share a name")
        self._id = id
        self._max_retries = max_retries
        self._on_record = on_record
        self._refused: OrderedDict[str, Any] = OrderedDict()

    @property
    def id(self) -> Optional[str]:
        return self._id

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        return {
            name: ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(
                    name=name,
                    description=tool.description,
                    parameters_json_schema=dict(tool.parameters),
                ),
                max_retries=self._max_retries,
                args_validator=_ANY_ARGS,
            )
            for name, tool in self._tools.items()
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        spec = self._tools[name]
        seen = _fingerprint(name, tool_args)
        if seen in self._refused:
            return (
                f"{DO_NOT_REPEAT}\nrecourse did not send this call: the same call with the same "
                "arguments was made before and may already have taken effect. Tell the user, and "
                f"check before writing again.\n(The first answer was: {self._refused[seen]})"
            )
        record = await self._gateway.call(
            spec.url,
            tool_args,
            method=spec.method,
            idempotent=spec.idempotent,
            reconcile=spec.reconcile,
            schema=dict(spec.parameters),
            idempotency_key=_key(ctx, spec),
            **dict(spec.options),
        )
        if self._on_record:
            self._on_record(name, record)
        answer = tool_answer(record)
        if record.next.step == "do_not_repeat":
            self._remember(seen, record.next.model_message)
        return answer

    def _remember(self, seen: str, message: str) -> None:
        self._refused[seen] = message
        while len(self._refused) > REMEMBERED:
            self._refused.popitem(last=False)


def _fingerprint(name: str, args: Mapping[str, Any]) -> str:
    canonical = json.dumps([name, args], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _key(ctx: RunContext[Any], spec: GatewayTool) -> Optional[str]:
    """One key per tool call of a run that may write: a resend of its gateway
    request is the same call; another tool call (even a retry after
    ``fix_arguments``) is not. ``None`` for reads, and when pydantic-ai gives
    no ids (the client then makes a key if the call may write)."""
    reads = spec.idempotent is True or (spec.method or "POST").upper() in READ_METHODS
    if reads or not (ctx.run_id and ctx.tool_call_id):
        return None
    seed = f"{ctx.run_id}\x00{ctx.tool_call_id}\x00{spec.name}"
    return "pai-" + hashlib.sha256(seed.encode()).hexdigest()[:40]
