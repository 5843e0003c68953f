"""The gateway over HTTP: :class:`Gateway` (blocking) and :class:`AsyncGateway`.

Why a write gets a key, and when a request is sent again
--------------------------------------------------------

The gateway runs each call through recourse's executor: it resends, corrects
and looks up on the tool's side. What it cannot protect is the hop before it.
If the answer to ``POST /v1/calls`` is lost — a timeout on the client's side,
a dropped connection, a restart behind a load balancer — the client cannot
tell whether the call ran. Sent again without a key, a write could run twice.

So a call that may write gets an ``idempotency_key`` (a fresh UUID, unless
the caller gives one or declares the call ``idempotent=True``, or its
method is a read). The gateway journals keyed calls and answers a second
request with the same key and body from its record (``replayed: true``),
dispatching nothing; while the first is still running it answers 409
``CALL_IN_PROGRESS`` with ``Retry-After``. That makes it safe to send the
*same* request again, which this client does — only for keyed requests,
with the same key and body, a bounded number of times — on a lost answer
(connection error or timeout), on 409, and on 503 (the gateway sent
nothing). A request without a key is sent again only when the connection
never opened, since then the gateway never saw it.

Every other answer is returned as is: a record (whatever its outcome; a
failed or unknown call is still a record) or a :class:`GatewayError`.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any, AsyncIterator, Iterator, Mapping, Optional, Sequence

import httpx

from .loopback import trust_env
from .models import CallPage, CallRecord, JournaledCall, ToolError, from_json
from .spawn import spawn_gateway

#: The deadline the gateway gives a call that asks for none: ``deadline_secs``'s
#: ``default`` in its OpenAPI document (``tests/test_openapi.py`` checks they agree).
GATEWAY_DEADLINE_SECS = 120.0

#: How long a client waits for an answer: the gateway's deadline, and a margin
#: for the record to come back.
DEFAULT_TIMEOUT = GATEWAY_DEADLINE_SECS + 10.0

#: Methods that only read: no key is generated for them.
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class GatewayError(Exception):
    """The gateway refused or could not answer the request (not a tool's
    failure: those are records).

    ``status`` is the HTTP status (0 when no answer came), ``error`` the
    envelope's :class:`ToolError` when there was one.
    """

    def __init__(self, status: int, error: Optional[ToolError], message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error = error

    @property
    def code(self) -> Optional[str]:
        """The envelope's code, e.g. ``IDEMPOTENCY_KEY_REUSED``."""
        return self.error.code if self.error else None


@dataclass(frozen=True)
class Resends:
    """How the client sends a request again after a lost answer.

    ``attempts`` is the most sends of one request in all; waits grow from
    ``first_wait`` by doubling, at most ``max_wait`` seconds (a 409's
    ``Retry-After`` is honoured up to ``max_wait``).
    """

    attempts: int = 4
    first_wait: float = 0.2
    max_wait: float = 5.0

    def wait(self, n: int, retry_after: Optional[float]) -> float:
        """The wait before send ``n + 1`` (``n`` counted from 1)."""
        backoff = self.first_wait * (2 ** (n - 1))
        return max(0.0, min(self.max_wait, retry_after if retry_after is not None else backoff))


def call_body(
    payload: Mapping[str, Any],
    *,
    url: Optional[str] = None,
    mcp: Optional[Mapping[str, Any]] = None,
    method: Optional[str] = None,
    idempotent: Optional[bool] = None,
    idempotency_key: Optional[str] = None,
    auto_key: bool = True,
    **options: Any,
) -> dict[str, Any]:
    """The body of ``POST /v1/calls``; ``options`` are its other fields
    (``schema``, ``protect``, ``reconcile``, ``verify``, ``headers``, …), sent
    as given when not ``None``."""
    body: dict[str, Any] = {"payload": dict(payload)}
    for name, value in (("url", url), ("mcp", mcp), ("method", method), ("idempotent", idempotent)):
        if value is not None:
            body[name] = value
    body.update({k: v for k, v in options.items() if v is not None})
    writes = idempotent is not True and (method or "POST").upper() not in READ_METHODS
    if idempotency_key is None and auto_key and writes:
        idempotency_key = str(uuid.uuid4())
    if idempotency_key is not None:
        body["idempotency_key"] = idempotency_key
    return body


def _retry_after(response: httpx.Response) -> Optional[float]:
    try:
        return float(response.headers["retry-after"])
    except (KeyError, ValueError):
        return None


def _error(response: httpx.Response) -> GatewayError:
    try:
        envelope = response.json()
        error = from_json(ToolError, envelope["error"])
        return GatewayError(response.status_code, error, f"{response.status_code} {error.code}: {error.message}")
    except (ValueError, KeyError, TypeError):
        text = response.text[:200]
        return GatewayError(response.status_code, None, f"{response.status_code}: {text}")


class _Plan:
    """The decisions both clients share: what to send, and whether to send again."""

    def __init__(self, base_url: str, token: Optional[str], resends: Resends, auto_key: bool) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.resends = resends
        self.auto_key = auto_key

    def again(self, n: int, keyed: bool, outcome: httpx.Response | Exception) -> Optional[float]:
        """The wait before sending again, or ``None`` to stop at send ``n``."""
        if n >= self.resends.attempts:
            return None
        if isinstance(outcome, (httpx.ConnectError, httpx.ConnectTimeout)):
            # The connection never opened: the gateway never saw the request.
            return self.resends.wait(n, None)
        if isinstance(outcome, Exception):
            # The request may have reached the gateway: only a key makes a resend safe.
            resendable = isinstance(outcome, (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError))
            return self.resends.wait(n, None) if keyed and resendable else None
        if keyed and outcome.status_code in (409, 503):
            return self.resends.wait(n, _retry_after(outcome))
        return None

    @staticmethod
    def answer(response: httpx.Response, model: type[Any]) -> Any:
        if response.status_code != 200:
            raise _error(response)
        try:
            value = response.json()
            if model is dict:
                if not isinstance(value, dict):
                    raise ValueError("not a JSON object")
                return value
            return from_json(model, value)
        except ValueError as e:  # not JSON, or not the document's shape
            raise GatewayError(200, None, f"the gateway's answer is not a {model.__name__}: {e}") from e

    @staticmethod
    def lost(e: Exception) -> GatewayError:
        return GatewayError(0, None, f"no answer from the gateway: {type(e).__name__}: {e}")


class Gateway:
    """A blocking client of ``recourse serve``.

    ``examples/gateway_call.py`` is a complete program::

        gateway = Gateway("http://127.0.0.1:8780")
        record = gateway.call("http://127.0.0.1:8700/api/stock/quote", {"symbol": "TSLA"})
        record.next.step  # 'use_result'
    """

    def __init__(
        self,
        url: str,
        token: Optional[str] = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        resends: Resends = Resends(),
        auto_key: bool = True,
        http: Optional[httpx.Client] = None,
    ) -> None:
        self._plan = _Plan(url, token, resends, auto_key)
        # A gateway on loopback is never asked through a proxy (see ``loopback``).
        self._http = http or httpx.Client(timeout=timeout, trust_env=trust_env(url))

    @classmethod
    @contextmanager
    def spawn(
        cls,
        *,
        token: Optional[str] = None,
        journal_dir: Optional[os.PathLike[str] | str] = None,
        args: Sequence[str] = (),
        **options: Any,
    ) -> Iterator[Gateway]:
        """A client of a ``recourse serve`` started for it (see
        :func:`~recourse_client.spawn_gateway`: a free loopback port, a fresh
        token, a journal in a temporary or given directory), stopped on exit::

            with Gateway.spawn() as gateway:
                gateway.call("http://127.0.0.1:8700/api/stock/quote", {"symbol": "TSLA"})

        ``options`` go to :class:`Gateway` (``timeout``, ``resends``, …).
        """
        with spawn_gateway(token=token, journal_dir=journal_dir, args=args) as spawned:
            with cls(spawned.url, spawned.token, **options) as gateway:
                yield gateway

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Closes the connections."""
        self._http.close()

    def call(self, url: Optional[str], payload: Mapping[str, Any], **options: Any) -> CallRecord:
        """Runs one tool call through the gateway and returns its record.

        ``options`` are the other fields of ``POST /v1/calls`` (``method``,
        ``idempotent``, ``idempotency_key``, ``schema``, ``reconcile``, ``mcp``,
        …). Raises :class:`GatewayError` when the gateway refuses the request
        or never answers it.
        """
        body = call_body(payload, url=url, auto_key=self._plan.auto_key, **options)
        return self._send("POST", "/v1/calls", body, CallRecord)

    def get_call(self, call_id: str) -> JournaledCall:
        """A journaled call's state and record (``GET /v1/calls/{call_id}``)."""
        return self._send("GET", f"/v1/calls/{_segment(call_id)}", None, JournaledCall)

    def reconcile(self, call_id: str) -> JournaledCall:
        """Settles an in-flight or unknown call through its recorded lookup;
        never resends it."""
        return self._send("POST", f"/v1/calls/{_segment(call_id)}/reconcile", None, JournaledCall)

    def list_calls(self, state: Optional[str] = None, limit: Optional[int] = None, before: Optional[str] = None) -> CallPage:
        """A page of journaled calls, newest first (``GET /v1/calls``): a
        :class:`~recourse_client.models.CallPage`, which iterates over its
        calls; ``page.next_before``, given as ``before``, asks for the next
        page (``None`` on the last). ``state`` keeps the calls in one state
        (``unknown``, …), ``limit`` caps the page (the gateway's default:
        100)."""
        return self._send("GET", "/v1/calls", None, CallPage, _page_params(state, limit, before))

    def openapi(self) -> dict[str, Any]:
        """The gateway's OpenAPI document."""
        return self._send("GET", "/openapi.json", None, dict)

    def _send(
        self, method: str, path: str, body: Optional[dict[str, Any]], model: type[Any], params: Any = None
    ) -> Any:
        keyed = body is None or "idempotency_key" in body  # reads and reconcile repeat harmlessly
        n = 0
        while True:
            n += 1
            try:
                outcome: httpx.Response | Exception = self._http.request(
                    method, self._plan.base_url + path, json=body, params=params, headers=self._plan.headers
                )
            except httpx.HTTPError as e:
                outcome = e
            wait = self._plan.again(n, keyed, outcome)
            if wait is None:
                if isinstance(outcome, Exception):
                    raise _Plan.lost(outcome) from outcome
                return _Plan.answer(outcome, model)
            time.sleep(wait)


class AsyncGateway:
    """The same client for asyncio (what the pydantic-ai toolset uses)."""

    def __init__(
        self,
        url: str,
        token: Optional[str] = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        resends: Resends = Resends(),
        auto_key: bool = True,
        http: Optional[httpx.AsyncClient] = None,
    ) -> None:
        self._plan = _Plan(url, token, resends, auto_key)
        self._http = http or httpx.AsyncClient(timeout=timeout, trust_env=trust_env(url))

    @classmethod
    @asynccontextmanager
    async def spawn(
        cls,
        *,
        token: Optional[str] = None,
        journal_dir: Optional[os.PathLike[str] | str] = None,
        args: Sequence[str] = (),
        **options: Any,
    ) -> AsyncIterator[AsyncGateway]:
        """See :meth:`Gateway.spawn` (the process is started and stopped off
        the event loop)."""
        started = spawn_gateway(token=token, journal_dir=journal_dir, args=args)
        spawned = await asyncio.to_thread(started.__enter__)
        try:
            async with cls(spawned.url, spawned.token, **options) as gateway:
                yield gateway
        finally:
            await asyncio.to_thread(started.__exit__, None, None, None)

    async def __aenter__(self) -> AsyncGateway:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Closes the connections."""
        await self._http.aclose()

    async def call(self, url: Optional[str], payload: Mapping[str, Any], **options: Any) -> CallRecord:
        """See :meth:`Gateway.call`."""
        body = call_body(payload, url=url, auto_key=self._plan.auto_key, **options)
        return await self._send("POST", "/v1/calls", body, CallRecord)

    async def get_call(self, call_id: str) -> JournaledCall:
        """See :meth:`Gateway.get_call`."""
        return await self._send("GET", f"/v1/calls/{_segment(call_id)}", None, JournaledCall)

    async def reconcile(self, call_id: str) -> JournaledCall:
        """See :meth:`Gateway.reconcile`."""
        return await self._send("POST", f"/v1/calls/{_segment(call_id)}/reconcile", None, JournaledCall)

    async def list_calls(
        self, state: Optional[str] = None, limit: Optional[int] = None, before: Optional[str] = None
    ) -> CallPage:
        """See :meth:`Gateway.list_calls`."""
        return await self._send("GET", "/v1/calls", None, CallPage, _page_params(state, limit, before))

    async def _send(
        self, method: str, path: str, body: Optional[dict[str, Any]], model: type[Any], params: Any = None
    ) -> Any:
        keyed = body is None or "idempotency_key" in body
        n = 0
        while True:
            n += 1
            try:
                outcome: httpx.Response | Exception = await self._http.request(
                    method, self._plan.base_url + path, json=body, params=params, headers=self._plan.headers
                )
            except httpx.HTTPError as e:
                outcome = e
            wait = self._plan.again(n, keyed, outcome)
            if wait is None:
                if isinstance(outcome, Exception):
                    raise _Plan.lost(outcome) from outcome
                return _Plan.answer(outcome, model)
            await asyncio.sleep(wait)


def _page_params(state: Optional[str], limit: Optional[int], before: Optional[str]) -> dict[str, Any]:
    """The query of ``GET /v1/calls``: the parameters given."""
    return {k: v for k, v in (("state", state), ("limit", limit), ("before", before)) if v is not None}


def _segment(call_id: str) -> str:
    """``call_id`` as one path segment."""
    from urllib.parse import quote

    return quote(call_id, safe="")


__all__: Sequence[str] = [
    "Gateway", "AsyncGateway", "GatewayError", "Resends", "call_body", "DEFAULT_TIMEOUT", "GATEWAY_DEADLINE_SECS",
]
