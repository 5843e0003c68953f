"""What the remote-server tests share: the binary, a private CA made for
the run, the SDK's remote server (``servers/notes_remote.py``) started
behind TLS, and ``recourse mcp proxy`` started as a client config starts
it, under the official MCP Python SDK's ``ClientSession``."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
NOTES = HERE / "servers" / "notes_remote.py"
FAILURE = "io.modelcontextprotocol/toolFailure"
CALL = "recourse/call"

sys.path.insert(0, str(HERE))
import certs as certs_module  # noqa: E402


def recourse_bin() -> str:
    path = Path(os.environ.get("RECOURSE_BIN", ROOT / "target" / "debug" / "recourse"))
    if not path.is_file():
        pytest.fail(f"no recourse binary at {path}: build it (cargo build -p recourse-cli) or set RECOURSE_BIN")
    return str(path)


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> certs_module.Certs:
    return certs_module.make(tmp_path_factory.mktemp("certs"))


def log_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@contextlib.contextmanager
def notes_server(log: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """``notes_remote.py --log LOG ARGS``, running; yields its MCP URL."""
    server = subprocess.Popen(
        [sys.executable, str(NOTES), "--log", str(log), *args],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    try:
        line = server.stdout.readline().strip()
        assert line.startswith("listening on "), line
        yield line.removeprefix("listening on ")
    finally:
        server.terminate()
        server.wait()


def proxy_env(tmp_path: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The proxy's environment: this one, with its state (tokens) under ``tmp_path``."""
    return {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "RECOURSE_BACKOFF_MS": "10", **(extra or {})}


def through_proxy(
    tmp_path: Path,
    flags: list[str],
    calls: Callable[[ClientSession], Awaitable[None]],
    env: dict[str, str] | None = None,
) -> str:
    """Runs ``calls(session)`` against ``recourse mcp proxy FLAGS`` (a
    journal in ``tmp_path``); returns what the proxy wrote to stderr."""
    errlog = tmp_path / "proxy.stderr"
    args = ["mcp", "proxy", "--journal", str(tmp_path / "proxy.db"), *flags]
    params = StdioServerParameters(command=recourse_bin(), args=args, env=proxy_env(tmp_path, env))

    async def main() -> None:
        with errlog.open("a") as err:
            async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as session:
                await calls(session)

    anyio.run(main)
    return errlog.read_text()


def refused_at_start(tmp_path: Path, flags: list[str], env: dict[str, str] | None = None) -> tuple[str, str]:
    """What a proxy that could not start says: the error its client's
    ``initialize`` gets, and its stderr."""
    said: list[str] = []

    async def calls(session: ClientSession) -> None:
        with pytest.raises(MCPError) as refused:
            await session.initialize()
        said.append(str(refused.value))

    stderr = through_proxy(tmp_path, flags, calls, env=env)
    return said[0], stderr


def meta(result: Any) -> dict[str, Any]:
    return result.model_dump(by_alias=True)["_meta"] or {}


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "text", None))
