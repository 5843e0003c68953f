"""List changes through ``recourse mcp proxy``, with the official MCP Python
SDK as the client and ``servers/scripted.py --script grow`` as the upstream:
its ``grow`` tool adds a tool and a prompt and announces both. The client
must hear of it through the proxy — a 2025-11-25 session through its
``message_handler``, a 2026-07-28 client on the ``subscriptions/listen``
stream it opened — then list the tools again and call the new one. The
upstream speaks either version to the proxy (the proxy opens its own
``subscriptions/listen`` to a 2026-07-28 upstream), over stdio or
Streamable HTTP. Over ``--http`` too, with a client of each version at
once."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import PromptsListChanged, ToolsListChanged, listen

from test_mcp_proxy import CALL, meta, recourse_bin
from test_mcp_proxy_edges import log_of, scripted

UPSTREAM_VERSIONS = ["2025-11-25", "2026-07-28"]
# How long a change may take to reach the client through the proxy.
HEARD_WITHIN = 20


def proxy(tmp_path: Path, *upstreams: str, protocol: str) -> StdioServerParameters:
    """The proxy in front of the ``grow`` script (several, named, when given names)."""
    upstream = [*scripted(tmp_path, "grow"), "--protocol", protocol]
    args = ["mcp", "proxy", "--journal", str(tmp_path / "proxy.db")]
    if upstreams:
        for name in upstreams:
            args += ["--upstream", f"{name}=" + " ".join(f"'{word}'" for word in upstream)]
    else:
        args += ["--", *upstream]
    return StdioServerParameters(command=recourse_bin(), args=args)


def told_of_changes() -> tuple[anyio.Event, anyio.Event, Callable[[Any], Awaitable[None]]]:
    """Events set once a session is told its tools, and its prompts, changed;
    and the session's message handler that sets them."""
    tools_changed, prompts_changed = anyio.Event(), anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            tools_changed.set()
        elif isinstance(message, types.PromptListChangedNotification):
            prompts_changed.set()

    return tools_changed, prompts_changed, on_message


async def tool_names(session: ClientSession) -> list[str]:
    return [tool.name for tool in (await session.list_tools()).tools]


async def grow_and_call(session: ClientSession, prefix: str = "") -> None:
    """Calls ``grow``, and once told, finds and calls what it added."""
    assert await tool_names(session) == [f"{prefix}{name}" for name in ("write", "read", "grow")]
    grown = await session.call_tool(f"{prefix}grow", {})
    assert not grown.is_error, grown


async def call_grown(session: ClientSession, prefix: str = "") -> None:
    assert f"{prefix}grown" in await tool_names(session)
    result = await session.call_tool(f"{prefix}grown", {})
    assert not result.is_error, result
    assert result.structured_content == {"grown": True}
    assert meta(result)[CALL]["outcome"] == "succeeded"


@pytest.mark.parametrize("upstream_version", UPSTREAM_VERSIONS)
def test_a_session_is_told_of_the_tool_an_upstream_added_and_calls_it(tmp_path: Path, upstream_version: str) -> None:
    async def main() -> None:
        tools_changed, prompts_changed, on_message = told_of_changes()

        params = proxy(tmp_path, protocol=upstream_version)
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write, message_handler=on_message) as session,
        ):
            initialized = await session.initialize()
            assert session.protocol_version == "2025-11-25"
            assert initialized.capabilities.tools.list_changed is True
            assert initialized.capabilities.prompts.list_changed is True
            assert (await session.list_prompts()).prompts == []
            await grow_and_call(session)
            with anyio.fail_after(HEARD_WITHIN):
                await tools_changed.wait()
                await prompts_changed.wait()
            await call_grown(session)
            assert [p.name for p in (await session.list_prompts()).prompts] == ["grown"]

    anyio.run(main)
    assert [e["tool"] for e in log_of(tmp_path)] == ["grow", "grown"]


@pytest.mark.parametrize("upstream_version", UPSTREAM_VERSIONS)
def test_a_2026_client_hears_on_its_listen_stream_and_calls_the_new_tool(tmp_path: Path, upstream_version: str) -> None:
    async def main() -> None:
        params = proxy(tmp_path, protocol=upstream_version)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.discover()
            assert session.protocol_version == "2026-07-28"
            assert session.server_capabilities.tools.list_changed is True
            async with listen(session, tools_list_changed=True, prompts_list_changed=True) as stream:
                assert stream.honored.tools_list_changed and stream.honored.prompts_list_changed
                await grow_and_call(session)
                heard = set()
                with anyio.fail_after(HEARD_WITHIN):
                    async for event in stream:
                        heard.add(type(event))
                        if heard == {ToolsListChanged, PromptsListChanged}:
                            break
            await call_grown(session)

    anyio.run(main)
    assert [e["tool"] for e in log_of(tmp_path)] == ["grow", "grown"]


@pytest.mark.parametrize("upstream_version", UPSTREAM_VERSIONS)
def test_an_http_upstreams_change_reaches_the_client(tmp_path: Path, upstream_version: str) -> None:
    """The upstream over Streamable HTTP: the change comes on its session's
    stream (``GET /mcp``, up to 2025-11-25) or on the ``subscriptions/listen``
    stream the proxy opens to it (2026-07-28)."""
    upstream = [*scripted(tmp_path, "grow"), "--http", "0", "--protocol", upstream_version]
    server = subprocess.Popen(upstream, stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline().strip()
        assert line.startswith("listening on "), line
        url = line.removeprefix("listening on ")

        async def main() -> None:
            tools_changed, prompts_changed, on_message = told_of_changes()

            args = ["mcp", "proxy", "--journal", str(tmp_path / "proxy.db"), "--upstream", f"up={url}"]
            params = StdioServerParameters(command=recourse_bin(), args=args)
            async with (
                stdio_client(params) as (read, write),
                ClientSession(read, write, message_handler=on_message) as session,
            ):
                initialized = await session.initialize()
                assert initialized.capabilities.tools.list_changed is True
                await grow_and_call(session)
                with anyio.fail_after(HEARD_WITHIN):
                    await tools_changed.wait()
                    await prompts_changed.wait()
                await call_grown(session)
                assert [p.name for p in (await session.list_prompts()).prompts] == ["grown"]

        anyio.run(main)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert [e["tool"] for e in log_of(tmp_path)] == ["grow", "grown"]


def test_with_several_upstreams_the_new_tool_is_offered_under_its_upstreams_name(tmp_path: Path) -> None:
    async def main() -> None:
        tools_changed = anyio.Event()

        async def on_message(message) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                tools_changed.set()
            # Prompts are not offered with several upstreams, nor their changes.
            assert not isinstance(message, types.PromptListChangedNotification), message

        params = proxy(tmp_path, "a", "b", protocol="2025-11-25")
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write, message_handler=on_message) as session,
        ):
            initialized = await session.initialize()
            assert initialized.capabilities.tools.list_changed is True
            assert initialized.capabilities.prompts is None
            assert len(await tool_names(session)) == 6
            grown = await session.call_tool("b__grow", {})
            assert not grown.is_error, grown
            with anyio.fail_after(HEARD_WITHIN):
                await tools_changed.wait()
            names = await tool_names(session)
            assert "b__grown" in names and "a__grown" not in names, names
            await call_grown(session, "b__")

    anyio.run(main)


def test_over_http_every_session_and_every_listen_stream_is_told(tmp_path: Path) -> None:
    """``--http``: a 2025-11-25 session and a 2026-07-28 client listening,
    at once; one of them grows the upstream, both hear of it."""
    binary = recourse_bin()
    token = "py-proxy-token-list-changes"
    upstream = [*scripted(tmp_path, "grow"), "--protocol", "2026-07-28"]
    args = ["mcp", "proxy", "--http", "--port", "0", "--journal", str(tmp_path / "proxy.db"), "--", *upstream]
    env = {**os.environ, "RECOURSE_GATEWAY_TOKEN": token}
    proxy_process = subprocess.Popen([binary, *args], env=env, stdout=subprocess.PIPE, text=True)
    try:
        url = proxy_process.stdout.readline().rstrip("\n").removeprefix("recourse mcp proxy listening on ")

        async def main() -> None:
            tools_changed = anyio.Event()

            async def on_message(message) -> None:
                if isinstance(message, types.ToolListChangedNotification):
                    tools_changed.set()

            def client() -> httpx2.AsyncClient:
                return httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})

            async with (
                client() as old_http,
                streamable_http_client(url, http_client=old_http) as (old_read, old_write),
                ClientSession(old_read, old_write, message_handler=on_message) as old,
                client() as new_http,
                streamable_http_client(url, http_client=new_http) as (new_read, new_write),
                ClientSession(new_read, new_write) as new,
            ):
                await old.initialize()
                await new.discover()
                assert (old.protocol_version, new.protocol_version) == ("2025-11-25", "2026-07-28")
                async with listen(new, tools_list_changed=True) as stream:
                    await grow_and_call(old)
                    with anyio.fail_after(HEARD_WITHIN):
                        assert isinstance(await anext(stream), ToolsListChanged)
                        await tools_changed.wait()
                await call_grown(new)
                await call_grown(old)

        anyio.run(main)
    finally:
        proxy_process.terminate()
        assert proxy_process.wait(timeout=30) == 0
