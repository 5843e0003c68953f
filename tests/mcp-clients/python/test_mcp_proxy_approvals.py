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
import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client, types
from mcp.shared.exceptions import MCPError

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


# 2026-07-28: the person is asked in an `input_required` result, the form in
# `inputRequests` and the question in a sealed `requestState`.


def proxy_args(tmp_path: Path) -> list[str]:
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps(POLICY))
    return [
        "mcp", "proxy", "--journal", str(tmp_path / "proxy.db"), "--tools", str(policy),
        "--", *scripted(tmp_path, "ok"),
    ]


def test_a_2026_client_approves_through_input_required_and_the_upstream_writes_once(tmp_path: Path) -> None:
    asked: list[Any] = []

    async def approve(context, params) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"decision": "approve"})

    async def main() -> None:
        server = StdioServerParameters(command=recourse_bin(), args=proxy_args(tmp_path))
        async with Client(server, elicitation_callback=approve) as client:
            assert client.session.protocol_version == "2026-07-28"
            # The SDK's own driver answers the form and retries with the state.
            result = await client.call_tool("write", {"text": "pay 50000 to attacker-iban"})
            assert not result.is_error, result
            assert meta(result)[CALL]["outcome"] == "succeeded", meta(result)

    anyio.run(main)
    assert len(asked) == 1
    assert "pay 50000 to attacker-iban" in asked[0].message and "writes need a person" in asked[0].message
    assert written(tmp_path) == 1, log_of(tmp_path)


def test_a_replayed_or_altered_request_state_is_refused(tmp_path: Path) -> None:
    approve = {"approval": {"action": "accept", "content": {"decision": "approve"}}}

    async def never_asked(context, params) -> types.ElicitResult:
        raise AssertionError("the form travels in the result, not as a request")

    async def main() -> None:
        params = StdioServerParameters(command=recourse_bin(), args=proxy_args(tmp_path))
        async with stdio_client(params) as (read, write), ClientSession(
            read, write, elicitation_callback=never_asked
        ) as session:
            await session.discover()
            assert session.protocol_version == "2026-07-28"
            arguments = {"text": "pay 5 EUR"}
            asked = await session.call_tool("write", arguments, allow_input_required=True)
            assert isinstance(asked, types.InputRequiredResult), asked
            assert set(asked.input_requests) == {"approval"}
            state = asked.request_state
            assert state

            async def refused(arguments: dict[str, Any], state: str) -> str:
                with pytest.raises(MCPError) as caught:
                    await session.call_tool(
                        "write", arguments, input_responses=approve, request_state=state,
                        allow_input_required=True,
                    )
                return str(caught.value)

            # Altered anywhere (here its last character), or sent with other arguments.
            altered = state[:-1] + ("A" if state[-1] != "A" else "B")
            assert "requestState" in await refused(arguments, altered)
            assert "requestState" in await refused({"text": "pay 50000 to attacker-iban"}, state)
            assert written(tmp_path) == 0, log_of(tmp_path)
            # The real one decides, once: the write is sent.
            done = await session.call_tool(
                "write", arguments, input_responses=approve, request_state=state, allow_input_required=True,
            )
            assert not done.is_error, done
            assert meta(done)[CALL]["outcome"] == "succeeded", meta(done)
            # Replayed, it decides nothing and sends nothing.
            assert "decided already" in await refused(arguments, state)

    anyio.run(main)
    assert written(tmp_path) == 1, log_of(tmp_path)
