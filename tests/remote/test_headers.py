"""A header sent to a remote MCP server (``--upstream-header
NAME='Header: value'``, the value read from the environment): the server
sees it on every request; the value is in no log line, no journal row, no
error text, no ``--help``, and not in a stdio upstream's environment."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

from mcp import ClientSession

from conftest import NOTES, log_of, notes_server, proxy_env, recourse_bin, refused_at_start, text_of, through_proxy


def test_the_server_sees_the_header_and_nothing_else_does(tmp_path: Path, certs) -> None:
    key = "hk-" + secrets.token_hex(16)
    log = tmp_path / "server.log"
    seen_env: list[str] = []

    async def calls(session: ClientSession) -> None:
        await session.initialize()
        added = await session.call_tool("notes__add_note", {"text": "with a key"})
        assert not added.is_error, added
        counted = await session.call_tool("notes__count_notes", {})
        assert not counted.is_error, counted
        environment = await session.call_tool("env__environment", {})
        assert not environment.is_error, environment
        seen_env.append(text_of(environment))

    server_env = {"EXPECTED_HEADER": key}
    with notes_server(log, "--tls", str(certs.local.cert), str(certs.local.key),
                      "--require-header", "X-Api-Key", env=server_env) as url:
        stderr = through_proxy(
            tmp_path,
            [
                "--ca-file", str(certs.ca),
                "--upstream", f"notes={url}",
                "--upstream-header", "notes=X-Api-Key: ${NOTES_KEY}",
                "--upstream", f"env={sys.executable} {NOTES} --stdio",
            ],
            calls,
            env={"NOTES_KEY": key},
        )
    requests = [e for e in log_of(log) if e["event"] == "http"]
    assert requests, "the server was reached"
    assert all(e["header"] == key and e["status"] != 401 for e in requests), requests
    assert [e["tool"] for e in log_of(log) if e["event"] == "call"] == ["add_note", "count_notes"]

    # Nowhere else: the proxy's stderr, a stdio upstream's environment, the journal.
    assert key not in stderr, stderr
    assert seen_env and "NOTES_KEY" not in seen_env[0] and key not in seen_env[0]
    journal = subprocess.run(
        [recourse_bin(), "journal", "--journal", str(tmp_path / "proxy.db"), "list", "--json"],
        check=True, capture_output=True, text=True,
    )
    assert "add_note" in journal.stdout and key not in journal.stdout
    for stored in tmp_path.glob("proxy.db*"):
        assert key.encode() not in stored.read_bytes(), stored


def test_a_refused_header_stops_the_proxy_and_its_value_is_never_shown(tmp_path: Path, certs) -> None:
    wrong = "wrong-" + secrets.token_hex(16)
    log = tmp_path / "server.log"
    with notes_server(log, "--tls", str(certs.local.cert), str(certs.local.key),
                      "--require-header", "X-Api-Key", env={"EXPECTED_HEADER": "right"}) as url:
        said, stderr = refused_at_start(
            tmp_path,
            ["--ca-file", str(certs.ca), "--upstream", f"notes={url}",
             "--upstream-header", "notes=X-Api-Key: ${NOTES_KEY}"],
            {"NOTES_KEY": wrong},
        )
    assert "401" in said, said
    assert wrong not in said and wrong not in stderr, (said, stderr)
    assert [e["header"] for e in log_of(log)] == [wrong], "the server saw it, once"


def test_a_missing_variable_stops_start_up_naming_it(tmp_path: Path) -> None:
    env = proxy_env(tmp_path)
    env.pop("NOT_SET_FOR_RECOURSE", None)
    out = subprocess.run(
        [recourse_bin(), "mcp", "proxy", "--journal", "none",
         "--upstream", "notes=https://127.0.0.1:9/mcp",
         "--upstream-header", "notes=Authorization: Bearer ${NOT_SET_FOR_RECOURSE}"],
        capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=60,
    )
    assert out.returncode == 2, out
    assert "NOT_SET_FOR_RECOURSE is not set" in out.stderr, out.stderr


def test_a_header_for_no_upstream_or_for_a_command_is_refused(tmp_path: Path) -> None:
    for flags, says in [
        (["--upstream", "notes=https://127.0.0.1:9/mcp", "--upstream-header", "other=X-A: 1"], "no upstream"),
        (["--upstream", "cmd=server", "--upstream-header", "cmd=X-A: 1"], "is a command"),
        (["--upstream", "notes=https://127.0.0.1:9/mcp", "--upstream-header", "notes=Mcp-Session-Id: 1"], "cannot be given"),
    ]:
        out = subprocess.run(
            [recourse_bin(), "mcp", "proxy", "--journal", "none", *flags],
            capture_output=True, text=True, env=proxy_env(tmp_path), stdin=subprocess.DEVNULL, timeout=60,
        )
        assert out.returncode == 2 and says in out.stderr, (flags, out.stderr)


def test_help_shows_no_header_value(tmp_path: Path) -> None:
    key = "hk-" + secrets.token_hex(16)
    for command in (["mcp", "proxy", "--help"], ["mcp", "login", "--help"]):
        out = subprocess.run(
            [recourse_bin(), *command], capture_output=True, text=True,
            env={**os.environ, "NOTES_KEY": key, "RECOURSE_CA_FILE": "/nonexistent"}, timeout=60,
        )
        assert out.returncode == 0, out.stderr
        assert "--upstream-header" in out.stdout and key not in out.stdout
