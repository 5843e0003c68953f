"""A tool the policy file holds for a person, asked where the person is:
through the official MCP Python SDK, a client that declares elicitation is
shown the held call in a form and its answer decides it — approved, the
proxy sends the write once; declined, nothing is sent — and a client without
elicitation is told the call waits (``approval_required``), for the console.
The upstream is ``servers/scripted.py``, whose log says what executed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client, types

from test_mcp_proxy import CALL, FAILURE, meta, recourse_bin
from test_mcp_proxy_edges import log_of, scripted, written

POLICY = {
    "tools": {
        "write": {
            "approval": {"reason": "writes need a person", "expires_in": "1h", "via": ["console", "client"]}
        }
    }
}


def through_proxy(tmp_path: Path, calls, elicitation_callback=None) -> None:
    """Runs ``calls(session)`` against the proxy holding ``write`` for a person."""
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps(POLICY))
    args = [
        "mcp", "proxy", "--journal", str(tmp_path / "proxy.db"), "--tools", str(policy),
        "--", *scripted(tmp_path, "ok"),
    ]

    async def main() -> None:
        params = StdioServerParameters(command=recourse_bin(), args=args)
        async with stdio_client(params) as (read, write), ClientSession(
            read, write, elicitation_callback=elicitation_callback
        ) as session:
            await session.initialize()
            await calls(session)

    anyio.run(main)


def test_an_elicitation_capable_client_approves_and_the_upstream_writes_once(tmp_path: Path) -> None:
    asked: list[Any] = []

    async def approve(context, params) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"decision": "approve"})

    async def calls(session: ClientSession) -> None:
        result = await session.call_tool("write", {"text": "pay 50000 to attacker-iban"})
        assert not result.is_error, result
        assert meta(result)[CALL]["outcome"] == "succeeded", meta(result)

    through_proxy(tmp_path, calls, approve)
    assert len(asked) == 1
    # The person was shown what is sent, and why it waits.
    message = asked[0].message
    assert "pay 50000 to attacker-iban" in message and "writes need a person" in message, message
    assert asked[0].requested_schema["properties"]["decision"]["enum"] == ["approve", "reject"]
    assert written(tmp_path) == 1, log_of(tmp_path)


def test_a_client_that_declines_rejects_and_nothing_is_sent(tmp_path: Path) -> None:
    async def decline(context, params) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    async def calls(session: ClientSession) -> None:
        result = await session.call_tool("write", {"text": "hello"})
        assert result.is_error, result
        assert meta(result)[CALL]["reason"] == "approval_rejected", meta(result)

    through_proxy(tmp_path, calls, decline)
    assert written(tmp_path) == 0, log_of(tmp_path)


def test_a_client_without_elicitation_gets_the_console_path(tmp_path: Path) -> None:
    async def calls(session: ClientSession) -> None:
        result = await session.call_tool("write", {"text": "hello"})
        assert result.is_error, result
        assert meta(result)[FAILURE]["code"] == "approval_required", meta(result)
        assert meta(result)[CALL]["outcome"] == "awaiting_approval"

    through_proxy(tmp_path, calls)
    assert written(tmp_path) == 0, log_of(tmp_path)
