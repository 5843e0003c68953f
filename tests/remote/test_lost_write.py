"""A write whose answer is lost settles over HTTPS as it does over HTTP:
the scripted server (``tests/mcp-clients/python/servers/scripted.py``,
``drop``) commits the first ``write`` and closes the connection before
answering; the outcome is unknown, never resent, and read back through the
policy file's ``verify`` (``read``: one note written) — a success."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import ClientSession

from conftest import CALL, ROOT, log_of, meta, through_proxy

SCRIPTED = ROOT / "tests" / "mcp-clients" / "python" / "servers" / "scripted.py"
VERIFY = {"tools": {"write": {"verify": {"tool": "read", "args": {}, "expect": ["/written == 1"]}}}}


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_lost_write_is_read_back_the_same_over_https_and_http(tmp_path: Path, certs, scheme: str) -> None:
    log = tmp_path / "upstream.log"
    tls = ["--tls", str(certs.local.cert), str(certs.local.key)] if scheme == "https" else []
    server = subprocess.Popen(
        [sys.executable, str(SCRIPTED), "--script", "drop", "--log", str(log), "--http", "0", *tls],
        stdout=subprocess.PIPE, text=True,
    )
    policy = tmp_path / "tools.json"
    policy.write_text(json.dumps(VERIFY))
    outcome: list[dict] = []
    try:
        url = server.stdout.readline().strip().removeprefix("listening on ")
        assert url.startswith(f"{scheme}://"), url

        async def calls(session: ClientSession) -> None:
            await session.initialize()
            result = await session.call_tool("write", {"text": "once"})
            assert not result.is_error, result
            outcome.append(meta(result)[CALL])

        through_proxy(
            tmp_path,
            ["--ca-file", str(certs.ca), "--tools", str(policy), "--upstream", f"up={url}"],
            calls,
        )
    finally:
        server.terminate()
        server.wait()
    [call] = outcome
    # One attempt, its answer lost (an unknown outcome), then the read: verified.
    assert call["outcome"] == "succeeded" and call["verification"] == "verified", call
    assert call["attempts"] == 1, call
    writes = [e for e in log_of(log) if e["tool"] == "write"]
    assert [e["executed"] for e in writes] == [True], "written once, never resent"
