"""``recourse mcp proxy`` at the edges a real server rarely shows on demand,
through the official MCP Python SDK, in front of ``servers/scripted.py``: a
server that dies mid-write, answers ``-32603`` after committing, asks for a
wait with ``-32023``/``retryAfterMs``, fails with SEP #3313 metadata that
says not to retry, or — over HTTP — answers 503 and 429. Its log says what
reached it and what executed; the client's result says what it was told."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from test_mcp_proxy import CALL, FAILURE, meta, recourse_bin

SCRIPTED = Path(__file__).resolve().parent / "servers" / "scripted.py"


def log_of(tmp_path: Path) -> list[dict[str, Any]]:
    log = tmp_path / "upstream.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def written(tmp_path: Path) -> int:
    return sum(1 for e in log_of(tmp_path) if e["tool"] == "write" and e["executed"])


def scripted(tmp_path: Path, script: str) -> list[str]:
    return [sys.executable, str(SCRIPTED), "--script", script, "--log", str(tmp_path / "upstream.log")]


def through_proxy(tmp_path: Path, upstream: list[str], calls) -> None:
    """Runs ``calls(session)`` against the proxy (journal in ``tmp_path``) in front of ``upstream``."""
    binary = recourse_bin()
    args = ["mcp", "proxy", "--journal", str(tmp_path / "proxy.db"), "--backoff-ms", "10", "--", *upstream]

    async def main() -> None:
        params = StdioServerParameters(command=binary, args=args)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await calls(session)

    anyio.run(main)


def test_a_write_that_answers_32603_after_committing_is_unknown_and_not_repeated(tmp_path: Path) -> None:
    async def calls(session: ClientSession) -> None:
        result = await session.call_tool("write", {"text": "hello"})
        assert result.is_error
        failure = meta(result)[FAILURE]
        assert failure["class"] == "reliability" and failure["retryable"] is False
        assert meta(result)[CALL]["step"] == "do_not_repeat"

    through_proxy(tmp_path, scripted(tmp_path, "internal_after_commit"), calls)
    assert written(tmp_path) == 1, log_of(tmp_path)


def test_a_server_that_dies_mid_write_is_started_again_and_the_write_not_repeated(tmp_path: Path) -> None:
    async def calls(session: ClientSession) -> None:
        result = await session.call_tool("write", {"text": "hello"})
        assert result.is_error
        assert meta(result)[FAILURE]["retryable"] is False
        assert meta(result)[CALL]["step"] == "do_not_repeat"
        # The server is started again for the next call.
        read = await session.call_tool("read", {})
        assert not read.is_error, read
        assert read.structured_content == {"written": 1}

    through_proxy(tmp_path, scripted(tmp_path, "drop"), calls)
    assert written(tmp_path) == 1, log_of(tmp_path)


def test_a_32023_is_resent_after_the_wait_the_server_asked_for(tmp_path: Path) -> None:
    async def calls(session: ClientSession) -> None:
        result = await session.call_tool("read", {})
        assert not result.is_error, result
        assert meta(result)[CALL]["attempts"] == 2

    through_proxy(tmp_path, scripted(tmp_path, "rate_limited"), calls)
    refused, served = [e for e in log_of(tmp_path) if e["tool"] == "read"]
    assert refused["answer"] == "-32023" and served["answer"] == "ok"
    assert served["at"] - refused["at"] >= 1.5, "resent before the 1500 ms the server asked for"


def test_a_failure_the_server_says_not_to_retry_is_passed_on_once(tmp_path: Path) -> None:
    async def calls(session: ClientSession) -> None:
        result = await session.call_tool("write", {"text": "hello"})
        assert result.is_error
        # The server's own failure metadata reaches the client unchanged;
        # recourse's judgement is its summary's, and agrees.
        failure = meta(result)[FAILURE]
        assert failure["retryable"] is False and "correlationId" not in failure, failure
        call = meta(result)[CALL]
        assert call["reason"] == "retry_refused" and call["retryable"] is False, call

    through_proxy(tmp_path, scripted(tmp_path, "not_retryable"), calls)
    assert len([e for e in log_of(tmp_path) if e["tool"] == "write"]) == 1, log_of(tmp_path)


def http_upstream(tmp_path: Path, script: str) -> tuple[subprocess.Popen, str]:
    server = subprocess.Popen([*scripted(tmp_path, script), "--http", "0"], stdout=subprocess.PIPE, text=True)
    line = server.stdout.readline().strip()
    assert line.startswith("listening on "), line
    return server, line.removeprefix("listening on ")


def test_503s_from_an_http_upstream_are_resent_for_a_read(tmp_path: Path) -> None:
    server, url = http_upstream(tmp_path, "unavailable")
    try:

        async def calls(session: ClientSession) -> None:
            read = await session.call_tool("read", {})
            assert not read.is_error, read
            assert meta(read)[CALL]["attempts"] == 4

        binary = recourse_bin()
        args = ["mcp", "proxy", "--journal", str(tmp_path / "proxy.db"), "--backoff-ms", "10",
                "--upstream", f"up={url}"]

        async def main() -> None:
            params = StdioServerParameters(command=binary, args=args)
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                await calls(session)

        anyio.run(main)
    finally:
        server.terminate()
        server.wait()
    answers = [e["answer"] for e in log_of(tmp_path)]
    assert answers == ["http 503", "http 503", "http 503", "ok"], answers


def test_a_429_from_an_http_upstream_waits_its_retry_after(tmp_path: Path) -> None:
    server, url = http_upstream(tmp_path, "too_many")
    try:
        binary = recourse_bin()
        args = ["mcp", "proxy", "--journal", str(tmp_path / "proxy.db"), "--upstream", f"up={url}"]

        async def main() -> None:
            params = StdioServerParameters(command=binary, args=args)
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool("read", {})
                assert not result.is_error, result

        anyio.run(main)
    finally:
        server.terminate()
        server.wait()
    refused, served = log_of(tmp_path)
    assert refused["answer"] == "http 429" and served["answer"] == "ok"
    assert served["at"] - refused["at"] >= 2.0, "resent before the Retry-After the server asked for"
