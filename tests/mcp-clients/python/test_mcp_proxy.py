"""The official MCP Python SDK (``ClientSession`` over ``stdio_client``, and
over ``streamable_http_client`` for ``--http``) as a client of ``recourse mcp
proxy``, started as a client config starts it, in front of ``recourse tools serve --mcp`` (the built binary: ``RECOURSE_BIN``,
default ``target/debug/recourse``) and of a small server of the SDK's own
(``servers/notes.py``: a tool, resources and a prompt)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[3]
FAILURE = "io.modelcontextprotocol/toolFailure"
CALL = "recourse/call"
EXPORT = {"source_id": "sales-2024", "format": "pdf"}
# The export commits, then its connection drops before the answer.
CRASH_AFTER_COMMIT = ("--fault", "exports:crash_after_commit:1.0")
# Reads the export back by its inputs: there is one once the write took effect.
VERIFY = {
    "tools": {
        "exports_create": {
            "verify": {
                "tool": "exports_lookup",
                "args": {"source_id": "{{payload.source_id}}", "format": "{{payload.format}}"},
                "expect": ["/latest exists"],
            }
        }
    }
}


def recourse_bin() -> str:
    path = Path(os.environ.get("RECOURSE_BIN", ROOT / "target" / "debug" / "recourse"))
    if not path.is_file():
        pytest.fail(f"no recourse binary at {path}: build it (cargo build -p recourse-cli) or set RECOURSE_BIN")
    return str(path)


def service_command(variable: str) -> list[str] | None:
    """A third-party server's command line from `variable`; unset, the test
    is skipped — a failure under ``RECOURSE_TEST_NO_SKIP=1`` (what CI sets)."""
    line = os.environ.get(variable)
    if line:
        return shlex.split(line)
    if os.environ.get("RECOURSE_TEST_NO_SKIP") == "1":
        pytest.fail(f"{variable} is not set")
    pytest.skip(f"{variable} is not set")
    return None


def proxy(tmp_path: Path, *flags: str, tools: tuple[str, ...] = ()) -> StdioServerParameters:
    """The proxy, with a journal in ``tmp_path``, in front of the reference
    tools (``recourse tools serve --mcp TOOLS``)."""
    binary = recourse_bin()
    upstream = [binary, "tools", "serve", "--mcp", "--port", "0", "--no-declared-lookups", *tools]
    args = ["mcp", "proxy", "--journal", str(tmp_path / "proxy.db"), *flags, "--", *upstream]
    return StdioServerParameters(command=binary, args=args)


def meta(result: Any) -> dict[str, Any]:
    return result.model_dump(by_alias=True)["_meta"] or {}


async def exports(session: ClientSession) -> int:
    read = await session.call_tool("exports_lookup", EXPORT)
    assert not read.is_error, read
    return read.structured_content["count"]


def journal(tmp_path: Path) -> list[dict[str, Any]]:
    out = subprocess.run(
        [recourse_bin(), "journal", "--journal", str(tmp_path / "proxy.db"), "list", "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout)


def run(session_test) -> None:
    async def main() -> None:
        await session_test()

    anyio.run(main)


def test_a_dropped_write_is_an_unknown_outcome_never_repeated(tmp_path: Path) -> None:
    async def session_test() -> None:
        params = proxy(tmp_path, tools=CRASH_AFTER_COMMIT)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            names = [t.name for t in (await session.list_tools()).tools]
            assert "exports_create" in names and "exports_lookup" in names

            result = await session.call_tool("exports_create", EXPORT)
            assert result.is_error
            # The server's own failure reaches the client whole, its own
            # failure metadata unchanged; recourse's judgement is its summary.
            failure = meta(result)[FAILURE]
            assert failure["code"] == "TOOL_CONNECTION_LOST" and failure["retryable"] is False
            call = meta(result)[CALL]
            assert call["reason"] == "outcome_unknown"
            assert call["class"] == "reliability" and call["retryable"] is False
            assert call["step"] == "do_not_repeat"
            # The server's words, then one more text block: recourse's message.
            assert len(result.content) == 2
            assert result.content[0].text.startswith("[TOOL_CONNECTION_LOST]")
            guidance = result.content[1].text
            assert guidance.startswith("The outcome of the call is unknown (UNKNOWN_OUTCOME, MCP isError,"), guidance
            assert await exports(session) == 1, "one export committed, none resent"

    run(session_test)
    [entry] = journal(tmp_path)
    assert entry["state"] == "unknown"


def test_a_dropped_write_read_back_ends_in_success(tmp_path: Path) -> None:
    policy = tmp_path / "tools.json"
    policy.write_text(json.dumps(VERIFY))

    async def session_test() -> None:
        params = proxy(tmp_path, "--tools", str(policy), tools=CRASH_AFTER_COMMIT)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("exports_create", EXPORT)
            assert not result.is_error, result
            assert meta(result)[CALL]["outcome"] == "succeeded"
            assert meta(result)[CALL]["verification"] == "verified"
            assert FAILURE not in meta(result)
            assert await exports(session) == 1

    run(session_test)
    [entry] = journal(tmp_path)
    assert entry["state"] == "succeeded"


def test_a_success_is_the_tools_own_result(tmp_path: Path) -> None:
    async def session_test() -> None:
        async with stdio_client(proxy(tmp_path)) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("exports_create", EXPORT)
            assert not result.is_error, result
            assert result.structured_content["source_id"] == "sales-2024"
            assert json.loads(result.content[0].text) == result.structured_content
            assert meta(result)[CALL]["attempts"] == 1

    run(session_test)


def test_a_cancelled_write_runs_to_its_end(tmp_path: Path) -> None:
    """The client stops waiting (the SDK sends notifications/cancelled); the
    write goes on, and its journal entry ends, not left in flight."""

    async def session_test() -> None:
        params = proxy(tmp_path, tools=("--fault", "exports:slow:1.0", "--slow-ms", "1500"))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            with anyio.move_on_after(0.5) as waited:
                await session.call_tool("exports_create", EXPORT)
            assert waited.cancelled_caught, "the call outlasted the client's patience"
            deadline = time.monotonic() + 20
            while not [e for e in journal(tmp_path) if e["state"] == "succeeded"]:
                assert time.monotonic() < deadline, journal(tmp_path)
                await anyio.sleep(0.1)
            assert await exports(session) == 1

    run(session_test)


NOTES = Path(__file__).resolve().parent / "servers" / "notes.py"


def test_one_upstreams_resources_and_prompts_pass_through(tmp_path: Path) -> None:
    async def session_test() -> None:
        notes = [sys.executable, str(NOTES)]
        params = StdioServerParameters(command=recourse_bin(), args=["mcp", "proxy", "--journal", "none", "--", *notes])
        direct = StdioServerParameters(command=notes[0], args=notes[1:])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as proxied:
            offered = await proxied.initialize()
            assert offered.capabilities.resources is not None and offered.capabilities.prompts is not None
            async with stdio_client(direct) as (read2, write2), ClientSession(read2, write2) as own:
                await own.initialize()
                assert (await proxied.list_resources()).resources == (await own.list_resources()).resources
                templates = (await proxied.list_resource_templates()).resource_templates
                assert templates == (await own.list_resource_templates()).resource_templates
                for uri in ["note://welcome", "note://cats"]:
                    assert (await proxied.read_resource(uri)).contents == (await own.read_resource(uri)).contents
                assert (await proxied.list_prompts()).prompts == (await own.list_prompts()).prompts
                prompt = await proxied.get_prompt("summarize", {"topic": "cats"})
                assert prompt.messages == (await own.get_prompt("summarize", {"topic": "cats"})).messages

    run(session_test)


def test_with_several_upstreams_only_tools_are_offered(tmp_path: Path) -> None:
    async def session_test() -> None:
        notes = f"notes='{sys.executable}' '{NOTES}'"
        tools = f"tools='{recourse_bin()}' tools serve --mcp --port 0"
        args = ["mcp", "proxy", "--journal", "none", "--upstream", notes, "--upstream", tools]
        params = StdioServerParameters(command=recourse_bin(), args=args)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            offered = await session.initialize()
            assert offered.capabilities.resources is None and offered.capabilities.prompts is None
            names = [t.name for t in (await session.list_tools()).tools]
            assert "notes__add_note" in names and "tools__exports_create" in names
            kept = await session.call_tool("notes__add_note", {"text": "hi"})
            assert not kept.is_error and kept.content[0].text == "kept: hi"
            with pytest.raises(MCPError):
                await session.list_resources()

    run(session_test)


def test_over_streamable_http_behind_the_token(tmp_path: Path) -> None:
    """``--http``: the first stdout line names the endpoint; a client with the
    bearer token lists and calls tools; SIGTERM stops the proxy cleanly."""
    binary = recourse_bin()
    token = "py-proxy-token-51c2"
    upstream = [binary, "tools", "serve", "--mcp", "--port", "0"]
    args = ["mcp", "proxy", "--http", "--port", "0", "--journal", str(tmp_path / "proxy.db"), "--", *upstream]
    env = {**os.environ, "RECOURSE_GATEWAY_TOKEN": token}
    proxy_process = subprocess.Popen([binary, *args], env=env, stdout=subprocess.PIPE, text=True)
    try:
        first = proxy_process.stdout.readline().rstrip("\n")
        prefix = "recourse mcp proxy listening on "
        assert first.startswith(prefix + "http://127.0.0.1:") and first.endswith("/mcp"), first
        url = first[len(prefix) :]

        async def session_test() -> None:
            refused = await httpx2.AsyncClient().post(url, json={})
            assert refused.status_code == 401, refused.text
            client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
            async with (
                client,
                streamable_http_client(url, http_client=client) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                names = [t.name for t in (await session.list_tools()).tools]
                assert "exports_create" in names
                result = await session.call_tool("exports_create", EXPORT)
                assert not result.is_error, result
                assert meta(result)[CALL]["outcome"] == "succeeded"
                assert await exports(session) == 1

        run(session_test)
        [entry] = journal(tmp_path)
        assert entry["state"] == "succeeded"
    finally:
        proxy_process.terminate()
        assert proxy_process.wait(timeout=30) == 0


def test_over_http_each_caller_has_its_own_calls_and_keys(tmp_path: Path) -> None:
    """``--tokens FILE``: two callers, each by its own token, use the same
    idempotency key for different exports — two calls, neither refused; the
    same caller's key with other arguments is refused; the journal names
    whose call each is."""
    binary = recourse_bin()
    tokens = tmp_path / "tokens.json"
    callers = {"a": "token-of-caller-a-0001", "b": "token-of-caller-b-0002"}
    tokens.write_text(json.dumps({"callers": [{"name": n, "token": t} for n, t in callers.items()]}))
    tokens.chmod(0o600)
    upstream = [binary, "tools", "serve", "--mcp", "--port", "0", "--no-declared-lookups"]
    args = ["mcp", "proxy", "--http", "--port", "0", "--tokens", str(tokens),
            "--journal", str(tmp_path / "proxy.db"), "--", *upstream]
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECOURSE_GATEWAY_TOKEN")}
    proxy_process = subprocess.Popen([binary, *args], env=env, stdout=subprocess.PIPE, text=True)
    try:
        url = proxy_process.stdout.readline().rstrip("\n").removeprefix("recourse mcp proxy listening on ")
        key = {"recourse/idempotency-key": "order-7"}

        async def as_caller(name: str, source: str):
            client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {callers[name]}"})
            async with (
                client,
                streamable_http_client(url, http_client=client) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                first = await session.call_tool("exports_create", {"source_id": source, "format": "pdf"}, meta=key)
                again = await session.call_tool("exports_create", {"source_id": "sales-2024", "format": "csv"}, meta=key)
                return first, again

        async def session_test() -> None:
            a_first, a_again = await as_caller("a", "sales-2024")
            b_first, _ = await as_caller("b", "inventory")
            for first in (a_first, b_first):
                assert not first.is_error, first
                assert meta(first)[CALL]["outcome"] == "succeeded"
            assert a_again.is_error
            assert meta(a_again)[FAILURE]["code"] == "IDEMPOTENCY_KEY_REUSED"
            assert a_first.structured_content["source_id"] == "sales-2024"
            assert b_first.structured_content["source_id"] == "inventory"

        run(session_test)
        owners = sorted((e["caller"], e["state"]) for e in journal(tmp_path))
        assert owners == [("a", "succeeded"), ("b", "succeeded")], owners
    finally:
        proxy_process.terminate()
        assert proxy_process.wait(timeout=30) == 0


def test_the_filesystem_servers_multi_line_error_reaches_the_client_whole(tmp_path: Path) -> None:
    """An edit that matches nothing: the server's error has two lines, and
    both reach the client as the server wrote them, recourse's word after."""
    command = service_command("RECOURSE_TEST_MCP_FILESYSTEM_CMD")
    if command is None:
        return
    root = tmp_path / "files"
    root.mkdir()
    (root / "note.txt").write_text("one line\n")
    params = StdioServerParameters(
        command=recourse_bin(),
        args=["mcp", "proxy", "--journal", str(tmp_path / "proxy.db"), "--", *command, str(root)],
    )

    async def main() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            edit = {"path": str(root / "note.txt"), "edits": [{"oldText": "zzz-line", "newText": "x"}]}
            result = await session.call_tool("edit_file", edit)
            assert result.is_error
            said = result.content[0].text
            assert said.startswith("Could not find exact match for edit:"), said
            assert "\nzzz-line" in said, said
            guidance = result.content[-1].text
            assert len(result.content) >= 2 and guidance != said
            assert "HTTP 200" not in guidance, guidance
            assert "without a category" in guidance, guidance

    anyio.run(main)
