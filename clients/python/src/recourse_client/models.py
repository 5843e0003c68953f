"""The gateway's JSON, as typed dataclasses.

Each class mirrors one schema of the gateway's OpenAPI document
(``GET /openapi.json``), field for field: ``tests/test_openapi.py`` checks
that every field declared here exists there with a compatible type, and that
every field the document requires is declared here. Values the document
describes as an open set of strings (``outcome``, ``next.step``, categories)
stay plain ``str``: a newer gateway may add one, and an older client must
still read the record.

Unknown fields are ignored when reading, so a newer gateway's record still
parses.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional, TypeVar, Union

T = TypeVar("T")


@dataclass(frozen=True)
class ToolError:
    """A structured failure: the tool's, or the gateway's own refusal."""

    code: str
    message: str
    category: str
    retryable: bool
    details: Any = None


@dataclass(frozen=True)
class Next:
    """What to hand back to the model: the record's ``next``."""

    step: str
    model_message: str
    question: Optional[str] = None
    operation_id: Optional[str] = None
    retry_after_ms: Optional[int] = None


@dataclass(frozen=True)
class TokenUsage:
    """Model tokens the call's corrections spent."""

    prompt: int
    completion: int


@dataclass(frozen=True)
class Idempotency:
    """Whether the call was treated as idempotent, and which evidence said so."""

    idempotent: bool
    # `from` is a Python keyword; the JSON name is kept in the field's metadata.
    from_: str = field(metadata={"json": "from"})


@dataclass(frozen=True)
class Attempt:
    """One dispatch of the call and what the policy made of it."""

    n: int
    payload: Any
    status: Optional[int]
    transport_error: Optional[str]
    category: Optional[str]
    code: Optional[str]
    retry_permission: str
    action: str
    wait_ms: Optional[int]
    reason: Optional[str]
    timeout_ms: int
    source: str
    events: list[dict[str, Any]]
    notes: Optional[list[str]] = None


@dataclass(frozen=True)
class Settlement:
    """How a call whose outcome was open was settled after it stopped: the
    record's ``settlement``."""

    #: ``verification``, ``lookup``, ``person`` or ``journal``.
    by: str
    #: When (RFC 3339, UTC).
    at: str
    who: Optional[str] = None
    note: Optional[str] = None


@dataclass(frozen=True)
class CallRecord:
    """A call's record, as ``POST /v1/calls`` answers it."""

    record_version: int
    call_id: str
    outcome: str
    data: Any
    error: Optional[ToolError]
    reason: Optional[str]
    reason_text: Optional[str]
    stop_kind: Optional[str]
    next: Next
    http_calls: int
    llm_calls: int
    tokens: TokenUsage
    llm_ms: int
    idempotency: Idempotency
    idempotency_key: Optional[str]
    operation_id: Optional[str]
    verification: Optional[str]
    elapsed_ms: int
    attempts: list[Attempt]
    settlement: Optional[Settlement] = None
    replayed: bool = False

    @property
    def succeeded(self) -> bool:
        """Whether the tool did what was asked."""
        return self.outcome == "succeeded"


@dataclass(frozen=True)
class JournaledCall:
    """``GET /v1/calls/{call_id}`` and reconcile: a call's state and record
    (for a call in flight, or whose process stopped mid-call, the record the
    journal alone gives: outcome ``unknown``, attempts counted in
    ``http_calls`` but not detailed)."""

    state: str
    record: CallRecord
    #: Whose call it is: the gateway caller's name (``default`` on a gateway
    #: with one token or none).
    caller: str = "default"


@dataclass(frozen=True)
class CallEntry:
    """One call in the journal's list (``GET /v1/calls``)."""

    call_id: str
    capability: Optional[str]
    url: str
    idempotency_key: Optional[str]
    operation_id: Optional[str]
    state: str
    attempts: int
    started_at: str
    updated_at: str
    caller_key: Optional[str]
    owner: Optional[str]
    lease_until: Optional[str]
    #: Whose call it is: the gateway caller's name (``default`` on a gateway
    #: with one token or none).
    caller: str = "default"
    #: Its approval, when it needed a person's: ``{"id", "state", "reason",
    #: "expires_at", ...}`` as the record's ``approval`` (``None`` otherwise).
    approval: Optional[dict[str, Any]] = None


@dataclass(frozen=True)
class CallPage:
    """A page of ``GET /v1/calls``, newest first: what
    :meth:`Gateway.list_calls <recourse_client.Gateway.list_calls>` returns.

    It iterates over its calls and has their number::

        page = gateway.list_calls(state="unknown")
        for call in page:
            print(call.call_id, call.url, call.state)
        if page.next_before:  # more, older calls
            older = gateway.list_calls(state="unknown", before=page.next_before)

    ``calls`` are :class:`CallEntry` items; ``next_before`` is the id to pass
    as ``before`` for the next page, ``None`` on the last.
    """

    calls: list[CallEntry]
    next_before: Optional[str]

    def __iter__(self) -> Iterator[CallEntry]:
        return iter(self.calls)

    def __len__(self) -> int:
        return len(self.calls)


def json_name(f: dataclasses.Field[Any]) -> str:
    """The JSON name of a dataclass field."""
    return f.metadata.get("json", f.name)


def from_json(cls: type[T], value: Any) -> T:
    """Reads ``value`` (parsed JSON) as ``cls``; raises ``ValueError`` naming
    the field when it does not fit."""
    return typing.cast(T, _read(cls, value, cls.__name__))


def _read(tp: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        options = typing.get_args(tp)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _read(option, value, where)
            except ValueError as e:
                errors.append(str(e))
        raise ValueError("; ".join(errors))
    if origin is list:
        if not isinstance(value, list):
            raise ValueError(f"{where}: expected a list, got {type(value).__name__}")
        (item,) = typing.get_args(tp)
        return [_read(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ValueError(f"{where}: expected an object, got {type(value).__name__}")
        return dict(value)
    if dataclasses.is_dataclass(tp):
        return _read_dataclass(tp, value, where)
    if tp is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if tp is int and isinstance(value, bool):
        raise ValueError(f"{where}: expected int, got bool")
    if isinstance(value, tp):
        return value
    raise ValueError(f"{where}: expected {tp.__name__}, got {type(value).__name__}")


def _read_dataclass(cls: Any, value: Any, where: str) -> Any:
    if not isinstance(value, dict):
        raise ValueError(f"{where}: expected an object, got {type(value).__name__}")
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        name = json_name(f)
        if name in value:
            kwargs[f.name] = _read(hints[f.name], value[name], f"{where}.{name}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ValueError(f"{where}: missing required field {name!r}")
    return cls(**kwargs)
