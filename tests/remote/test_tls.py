"""A remote MCP server behind TLS (the SDK's Streamable HTTP server under
uvicorn, its certificate signed by a private CA made for the run), through
``recourse mcp proxy``: calls succeed once the proxy is given the CA
(``--ca-file``); without it — or with a certificate for another name, or
one that expired — the proxy does not start, and says why to the client and
on stderr; a certificate that goes bad while the proxy runs stops the call
at once, for configuration, naming the problem."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import ClientSession

from conftest import CALL, FAILURE, log_of, meta, notes_server, refused_at_start, text_of, through_proxy


async def add_and_count(session: ClientSession) -> None:
    await session.initialize()
    added = await session.call_tool("add_note", {"text": "over TLS"})
    assert not added.is_error, added
    counted = await session.call_tool("count_notes", {})
    assert not counted.is_error, counted
    assert counted.structured_content == {"count": 1}


def test_calls_through_the_proxy_succeed_with_the_private_ca(tmp_path: Path, certs) -> None:
    log = tmp_path / "server.log"
    with notes_server(log, "--tls", str(certs.local.cert), str(certs.local.key)) as url:
        assert url.startswith("https://")
        through_proxy(tmp_path, ["--ca-file", str(certs.ca), "--upstream", f"notes={url}"], add_and_count)
    assert [e["tool"] for e in log_of(log) if e["event"] == "call"] == ["add_note", "count_notes"]


def test_the_ca_may_come_from_recourse_ca_file(tmp_path: Path, certs) -> None:
    log = tmp_path / "server.log"
    with notes_server(log, "--tls", str(certs.local.cert), str(certs.local.key)) as url:
        through_proxy(tmp_path, ["--upstream", f"notes={url}"], add_and_count, env={"RECOURSE_CA_FILE": str(certs.ca)})


@pytest.mark.parametrize(
    ("pair", "named", "ca"),
    [
        ("local", "unknown issuer", False),
        ("elsewhere", "name mismatch", True),
        ("expired", "expired", True),
    ],
)
def test_a_certificate_the_proxy_cannot_trust_stops_it_naming_why(tmp_path: Path, certs, pair, named, ca) -> None:
    log = tmp_path / "server.log"
    chosen = getattr(certs, pair)
    with notes_server(log, "--tls", str(chosen.cert), str(chosen.key)) as url:
        flags = (["--ca-file", str(certs.ca)] if ca else []) + ["--upstream", f"notes={url}"]
        said, stderr = refused_at_start(tmp_path, flags)
    for text in (said, stderr):
        assert f"({named})" in text, text
        assert "TLS with" in text, text
    if named == "unknown issuer":
        assert "--ca-file" in said
    # The handshake failed: no request reached the server.
    assert log_of(log) == []


def test_a_certificate_that_goes_bad_while_the_proxy_runs_stops_the_call_at_once(tmp_path: Path, certs) -> None:
    """The server comes back on the same port with a certificate for another
    name: the next call fails its handshake, and stops — class capability,
    code tls_failed, not retryable — with the problem named."""
    first, second = tmp_path / "first.log", tmp_path / "second.log"

    async def calls(session: ClientSession) -> None:
        await session.initialize()
        nonlocal port_url
        assert not (await session.call_tool("count_notes", {})).is_error
        stop_first()
        with notes_server(second, "--port", port_url.rsplit(":", 1)[1].split("/")[0],
                          "--tls", str(certs.elsewhere.cert), str(certs.elsewhere.key)):
            result = await session.call_tool("add_note", {"text": "after the switch"})
        assert result.is_error, result
        failure = meta(result)[FAILURE]
        assert failure["code"] == "tls_failed", text_of(result)
        assert failure["class"] == "capability" and failure["retryable"] is False, failure
        assert meta(result)[CALL]["step"] == "fix_configuration"
        assert "(name mismatch)" in text_of(result), text_of(result)

    stack = []

    def stop_first() -> None:
        stack.pop().__exit__(None, None, None)

    context = notes_server(first, "--tls", str(certs.local.cert), str(certs.local.key))
    port_url = context.__enter__()
    stack.append(context)
    try:
        through_proxy(tmp_path, ["--ca-file", str(certs.ca), "--upstream", f"notes={port_url}"], calls)
    finally:
        while stack:
            stop_first()
    assert log_of(second) == [], "the handshake failed: nothing reached the second server"
