"""Real servers for the tests: ``recourse tools serve`` and ``recourse serve``,
the built binary (``RECOURSE_BIN``; else ``target/debug/recourse``; else the
installed wheel's), each on a free loopback port, stopped when the test ends.
The tests import ``recourse_client`` as installed (CI installs the wheel), never
from the source tree."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterator

import httpx
import pytest

from recourse_client.spawn import Process, SpawnError

ROOT = Path(__file__).resolve().parents[3]
STARTUP_SECS = 30

# For `stack(..., tools_args=NO_LOOKUPS)`: the reference tools naming no lookup
# in their manifest, so a lost export stays unknown through the gateway.
NO_LOOKUPS = ("--no-declared-lookups",)


# The binary under test: RECOURSE_BIN (CI names the installed wheel's), else
# this checkout's debug build when there is one, else what recourse_client finds.
_DEBUG_BIN = ROOT / "target" / "debug" / "recourse"
if "RECOURSE_BIN" not in os.environ and _DEBUG_BIN.is_file():
    os.environ["RECOURSE_BIN"] = str(_DEBUG_BIN)


class Server(Process):
    """A started ``recourse`` process (``recourse_client.spawn.Process``);
    a start that fails fails the test."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None) -> None:
        try:
            super().__init__(args, env, startup=STARTUP_SECS)
        except SpawnError as e:
            pytest.fail(str(e))


@pytest.fixture
def servers() -> Iterator[Callable[..., Server]]:
    """Starts servers; each test's are stopped when it ends."""
    started: list[Server] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Server:
        server = Server(list(args), env)
        started.append(server)
        return server

    yield start
    for server in reversed(started):
        server.stop()


@pytest.fixture
def stack(servers, tmp_path) -> Callable[..., tuple[str, str]]:
    """``stack(*faults, gateway_args=(), env=None)``: reference tools with
    those faults and a gateway journaling to a scratch file; returns
    ``(tools_url, gateway_url)``."""

    def start(*faults: str, tools_args: tuple[str, ...] = (), gateway_args: tuple[str, ...] = (), env=None):
        fault_args = [a for f in faults for a in ("--fault", f)]
        tools = servers("tools", "serve", "--port", "0", "--seed", "7", *fault_args, *tools_args)
        journal = tmp_path / f"gateway-{len(list(tmp_path.iterdir()))}.db"
        gateway = servers("serve", "--port", "0", "--journal", str(journal), *gateway_args, env=env)
        return tools.url, gateway.url

    return start


def exports_written(tools_url: str, source_id: str = "sales-2024", fmt: str = "pdf") -> int:
    """The tool's own count of committed exports (its read, not the gateway's)."""
    response = httpx.post(f"{tools_url}/api/exports/lookup", json={"source_id": source_id, "format": fmt})
    response.raise_for_status()
    return response.json()["data"]["count"]
