"""Resource subscriptions through ``recourse mcp proxy``, with the official
MCP Python SDK as the client and ``servers/scripted.py --script watch`` as
the upstream: its ``note://count`` resource is updated by each ``write``.
A 2025-11-25 session subscribes with ``resources/subscribe`` and is told on
its session; a 2026-07-28 client names the resource on its
``subscriptions/listen`` stream. The upstream is subscribed while at least
one client is, once, whoever asks."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import mcp_types as types
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ResourceUpdated, listen

from test_mcp_proxy import recourse_bin
from test_mcp_proxy_edges import log_of, scripted

# The SDK warns that 2026-07-28 removed them: a 2025-11-25 session has them.
pytestmark = pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")

URI = "note://count"
# How long an update may take to reach the client through the proxy.
HEARD_WITHIN = 20


def proxy(tmp_path: Path) -> StdioServerParameters:
    args = ["mcp", "proxy", "--journal", str(tmp_path / "proxy.db"), "--", *scripted(tmp_path, "watch")]
    return StdioServerParameters(command=recourse_bin(), args=args)


def told_of_updates() -> tuple[anyio.Event, Callable[[Any], Awaitable[None]]]:
    """An event set once a session is told ``URI`` was updated, and the
    session's message handler that sets it."""
    updated = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification) and message.params.uri == URI:
            updated.set()

    return updated, on_message


def upstream_requests(tmp_path: Path) -> list[str]:
    """What reached the upstream, in order: each call's or request's name."""
    return [e["tool"] for e in log_of(tmp_path)]


def wait_for_log(tmp_path: Path, expected: list[str]) -> None:
    """Waits (bounded) until the upstream's log reads ``expected``."""
    deadline = time.monotonic() + HEARD_WITHIN
    while upstream_requests(tmp_path) != expected and time.monotonic() < deadline:
        time.sleep(0.05)
    assert upstream_requests(tmp_path) == expected


def test_a_session_subscribed_to_a_resource_is_told_of_its_updates(tmp_path: Path) -> None:
    async def main() -> None:
        updated, on_message = told_of_updates()

        async with (
            stdio_client(proxy(tmp_path)) as (read, write),
            ClientSession(read, write, message_handler=on_message) as session,
        ):
            initialized = await session.initialize()
            assert session.protocol_version == "2025-11-25"
            assert initialized.capabilities.resources.subscribe is True
            await session.subscribe_resource(URI)
            written = await session.call_tool("write", {"text": "one"})
            assert not written.is_error, written
            with anyio.fail_after(HEARD_WITHIN):
                await updated.wait()
            contents = (await session.read_resource(URI)).contents
            assert [c.text for c in contents] == ["1"]
            await session.unsubscribe_resource(URI)

    anyio.run(main)
    assert upstream_requests(tmp_path) == ["resources/subscribe", "write", "resources/unsubscribe"]


def test_an_upstream_started_again_is_subscribed_again(tmp_path: Path) -> None:
    """The upstream goes away mid-write; the next call starts it again, and
    the proxy's subscription is made again on the new session before the
    call, so the client, which subscribed once, still hears of updates."""

    async def main() -> None:
        updated, on_message = told_of_updates()

        async with (
            stdio_client(proxy(tmp_path)) as (read, write),
            ClientSession(read, write, message_handler=on_message) as session,
        ):
            await session.initialize()
            await session.subscribe_resource(URI)
            lost = await session.call_tool("write", {"text": "exit"})
            assert lost.is_error, lost
            written = await session.call_tool("write", {"text": "two"})
            assert not written.is_error, written
            with anyio.fail_after(HEARD_WITHIN):
                await updated.wait()

    anyio.run(main)
    assert upstream_requests(tmp_path) == ["resources/subscribe", "write", "resources/subscribe", "write"]


def test_a_2026_client_names_the_resource_on_its_listen_stream(tmp_path: Path) -> None:
    async def main() -> None:
        async with stdio_client(proxy(tmp_path)) as (read, write), ClientSession(read, write) as session:
            await session.discover()
            assert session.protocol_version == "2026-07-28"
            async with listen(session, resource_subscriptions=[URI]) as stream:
                assert stream.honored.resource_subscriptions == [URI]
                written = await session.call_tool("write", {"text": "one"})
                assert not written.is_error, written
                with anyio.fail_after(HEARD_WITHIN):
                    assert await anext(stream) == ResourceUpdated(uri=URI)
            # The stream ended: the upstream is unsubscribed.
            await anyio.to_thread.run_sync(
                wait_for_log, tmp_path, ["resources/subscribe", "write", "resources/unsubscribe"]
            )

    anyio.run(main)


def test_over_http_the_upstream_is_subscribed_once_while_any_session_is(tmp_path: Path) -> None:
    """Two sessions subscribe to one resource: the upstream hears one
    subscribe, both are told of an update, and the upstream is unsubscribed
    only when the second of them unsubscribes."""
    upstream = [*scripted(tmp_path, "watch")]
    args = ["mcp", "proxy", "--http", "--port", "0", "--journal", str(tmp_path / "proxy.db"), "--", *upstream]
    env = {k: v for k, v in os.environ.items() if k != "RECOURSE_GATEWAY_TOKEN"}
    proxy_process = subprocess.Popen([recourse_bin(), *args], env=env, stdout=subprocess.PIPE, text=True)
    try:
        url = proxy_process.stdout.readline().rstrip("\n").removeprefix("recourse mcp proxy listening on ")

        async def main() -> None:
            a_heard, a_told = told_of_updates()
            b_heard, b_told = told_of_updates()

            async with (
                httpx2.AsyncClient() as a_http,
                streamable_http_client(url, http_client=a_http) as (a_read, a_write),
                ClientSession(a_read, a_write, message_handler=a_told) as a,
                httpx2.AsyncClient() as b_http,
                streamable_http_client(url, http_client=b_http) as (b_read, b_write),
                ClientSession(b_read, b_write, message_handler=b_told) as b,
            ):
                await a.initialize()
                await b.initialize()
                await a.subscribe_resource(URI)
                await b.subscribe_resource(URI)
                # Asking again changes nothing.
                await b.subscribe_resource(URI)
                written = await a.call_tool("write", {"text": "one"})
                assert not written.is_error, written
                with anyio.fail_after(HEARD_WITHIN):
                    await a_heard.wait()
                    await b_heard.wait()
                await a.unsubscribe_resource(URI)
                assert upstream_requests(tmp_path) == ["resources/subscribe", "write"]
                await b.unsubscribe_resource(URI)
                assert upstream_requests(tmp_path) == ["resources/subscribe", "write", "resources/unsubscribe"]

        anyio.run(main)
    finally:
        proxy_process.terminate()
        assert proxy_process.wait(timeout=30) == 0
