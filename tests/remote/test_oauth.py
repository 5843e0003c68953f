"""OAuth 2.1 end to end, as the MCP authorization specification has a client
do it, against a real authorization server (the MCP Python SDK's auth
support, in ``servers/notes_remote.py``, behind TLS with the run's private
CA): ``recourse mcp login`` discovers it from the server's 401, registers
(dynamic client registration), sends the user — headless Chromium, driven
by playwright-core — to consent with PKCE and the resource indicator, takes
the redirect on a loopback port and keeps the tokens 0600; ``recourse mcp
proxy`` then calls with them, refreshes before they expire and once on a
401, and answers a revoked login with ``auth_required`` and the command
that logs in again.

Needs Chromium (``RECOURSE_CHROMIUM``, else ``/usr/bin/chromium``) and
playwright-core (``RECOURSE_PLAYWRIGHT_DIR``, else
``target/console-browser/node_modules``, where ``.ci/run`` installs the
console tests' pinned copy); without them the test skips, unless
``RECOURSE_TEST_NO_SKIP=1``."""

from __future__ import annotations

import json
import os
import shutil
import ssl
import stat
import subprocess
import time
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from mcp import ClientSession

from conftest import (
    CALL,
    FAILURE,
    HERE,
    ROOT,
    log_of,
    meta,
    notes_server,
    proxy_env,
    recourse_bin,
    refused_at_start,
    text_of,
    through_proxy,
)

CONSENT = HERE / "browser" / "consent.cjs"


def browser() -> tuple[str, str]:
    chromium = os.environ.get("RECOURSE_CHROMIUM", "/usr/bin/chromium")
    modules = os.environ.get("RECOURSE_PLAYWRIGHT_DIR", str(ROOT / "target" / "console-browser" / "node_modules"))
    missing = [p for p in (chromium, str(Path(modules) / "playwright-core")) if not Path(p).exists()]
    if shutil.which("node") is None:
        missing.append("node")
    if missing:
        reason = f"no browser to log in with: {', '.join(missing)} (see this file's docstring)"
        if os.environ.get("RECOURSE_TEST_NO_SKIP") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return chromium, modules


def login(tmp_path: Path, url: str, ca: Path) -> tuple[str, str, str]:
    """``recourse mcp login notes=URL``, the user consenting in the browser:
    the authorization URL it printed, its stderr, what the browser showed."""
    chromium, modules = browser()
    env = proxy_env(tmp_path)
    command = subprocess.Popen(
        [recourse_bin(), "mcp", "login", f"notes={url}", "--ca-file", str(ca), "--no-browser", "--wait-secs", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, stdin=subprocess.DEVNULL,
    )
    try:
        authorization = command.stdout.readline().strip()
        assert authorization.startswith("https://"), (authorization, command.stderr.read() if command.poll() is not None else "")
        shown = subprocess.run(
            ["node", str(CONSENT), authorization],
            capture_output=True, text=True, timeout=90,
            env={**os.environ, "NODE_PATH": modules, "RECOURSE_CHROMIUM": chromium},
        )
        assert shown.returncode == 0, shown.stderr
        out, err = command.communicate(timeout=60)
    finally:
        if command.poll() is None:
            command.kill()
    assert command.returncode == 0, err
    return authorization, out + err, shown.stdout


def admin(url: str, ca: Path, action: str) -> None:
    base = url.removesuffix("/mcp")
    request = urllib.request.Request(f"{base}/admin/{action}", data=b"", method="POST")
    with urllib.request.urlopen(request, context=ssl.create_default_context(cafile=str(ca))) as answer:
        assert answer.status == 200


def token_files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "state" / "recourse" / "oauth").glob("*.json"))


def events(log: Path, since: int = 0) -> list[dict]:
    return log_of(log)[since:]


def test_login_then_calls_refresh_and_a_revoked_login(tmp_path: Path, certs) -> None:
    log = tmp_path / "server.log"
    with notes_server(log, "--oauth", "--tls", str(certs.local.cert), str(certs.local.key)) as url:
        authorization, said, shown = login(tmp_path, url, certs.ca)

        # Discovery from the 401, registration, PKCE and the resource indicator.
        steps = events(log)
        first = [(e["event"], e.get("path"), e.get("status")) for e in steps[:3]]
        assert first == [
            ("http", "/mcp", 401),
            ("http", "/.well-known/oauth-protected-resource/mcp", 200),
            ("http", "/.well-known/oauth-authorization-server", 200),
        ], steps
        [registered] = [e for e in steps if e["event"] == "register"]
        assert registered["client_name"] == "recourse"
        assert all(u.startswith("http://127.0.0.1:") for u in registered["redirect_uris"])
        [authorized] = [e for e in steps if e["event"] == "authorize"]
        assert authorized["code_challenge"] and authorized["resource"] == url
        query = parse_qs(urlparse(authorization).query)
        assert query["code_challenge_method"] == ["S256"] and query["resource"] == [url]
        assert [e["grant"] for e in steps if e["event"] == "token"] == ["authorization_code"]
        assert "Logged in" in shown and "logged in to upstream notes" in said

        # The tokens: one file, 0600, in a 0700 directory, never printed.
        [tokens] = token_files(tmp_path)
        assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
        assert stat.S_IMODE(tokens.parent.stat().st_mode) == 0o700
        kept = json.loads(tokens.read_text())
        assert kept["url"] == url
        access = kept["credentials"]["token_response"]["access_token"]
        refresh = kept["credentials"]["token_response"]["refresh_token"]
        assert access not in said and refresh not in said

        flags = ["--ca-file", str(certs.ca), "--upstream", f"notes={url}"]

        async def call_with_the_token(session: ClientSession) -> None:
            await session.initialize()
            added = await session.call_tool("add_note", {"text": "with a token"})
            assert not added.is_error, added

        stderr = through_proxy(tmp_path, flags, call_with_the_token)
        assert access not in stderr and refresh not in stderr
        assert [e["tool"] for e in events(log) if e["event"] == "call"] == ["add_note"]

        # Refreshed before it expires: the kept token is nearly an hour old.
        kept["credentials"]["token_received_at"] = int(time.time()) - 3590
        tokens.write_text(json.dumps(kept))
        before = len(events(log))

        async def count(session: ClientSession) -> None:
            await session.initialize()
            counted = await session.call_tool("count_notes", {})
            assert not counted.is_error, counted

        through_proxy(tmp_path, flags, count)
        after = events(log, before)
        grants = [i for i, e in enumerate(after) if e["event"] == "token"]
        assert [after[i]["grant"] for i in grants] == ["refresh_token"], after
        # (A GET of the endpoint without a token is discovery's, not a refused call.)
        posts = [e for e in after[: grants[0]] if e.get("method") == "POST" and e["path"] == "/mcp"]
        assert not any(e["status"] == 401 for e in posts), "refreshed before it was refused"
        renewed = json.loads(tokens.read_text())["credentials"]["token_response"]["access_token"]
        assert renewed != access
        assert stat.S_IMODE(tokens.stat().st_mode) == 0o600

        async def expired_then_revoked(session: ClientSession) -> None:
            await session.initialize()
            # The server forgets the access token (as when it expires early):
            # the call is refused, refreshed once, and sent again — once.
            admin(url, certs.ca, "expire")
            mark = len(events(log))
            added = await session.call_tool("add_note", {"text": "after expiry"})
            assert not added.is_error, added
            seen = events(log, mark)
            assert [e["tool"] for e in seen if e["event"] == "call"] == ["add_note"], seen
            assert [e["grant"] for e in seen if e["event"] == "token"] == ["refresh_token"], seen
            posts = [e["status"] for e in seen if e.get("method") == "POST" and e["path"] == "/mcp"]
            assert posts == [401, 200], seen

            # Revoked: the refresh is refused too; the call stops, asking for a login.
            admin(url, certs.ca, "revoke")
            mark = len(events(log))
            refused = await session.call_tool("add_note", {"text": "after revocation"})
            assert refused.is_error, refused
            failure = meta(refused)[FAILURE]
            assert failure["class"] == "governance" and failure["code"] == "auth_required", failure
            assert failure["retryable"] is False
            assert meta(refused)[CALL]["step"] == "fix_configuration"
            assert f"run `recourse mcp login notes={url}`" in text_of(refused), text_of(refused)
            assert not [e for e in events(log, mark) if e["event"] == "call"], "nothing ran"

        through_proxy(tmp_path, flags, expired_then_revoked)

        # Logged out: the proxy does not start, and says how to log in.
        out = subprocess.run(
            [recourse_bin(), "mcp", "logout", f"notes={url}"],
            capture_output=True, text=True, env=proxy_env(tmp_path), timeout=60,
        )
        assert out.returncode == 0 and "removed" in out.stderr, out
        assert token_files(tmp_path) == []
        said_to_client, stderr = refused_at_start(tmp_path, flags)
        for text in (said_to_client, stderr):
            assert f"run `recourse mcp login notes={url}`" in text, text
