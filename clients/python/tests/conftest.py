"""Real servers for the tests: ``recourse tools serve`` and ``recourse serve``,
the built binary (``RECOURSE_BIN``, default ``target/debug/recourse``), each on
a free loopback port, stopped when the test ends."""

from __future__ import annotations

import os
import queue
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Callable, Iterator

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[3]
STARTUP_SECS = 30

# For `stack(..., tools_args=NO_LOOKUPS)`: the reference tools naming no lookup
# in their manifest, so a lost export stays unknown through the gateway.
NO_LOOKUPS = ("--no-declared-lookups",)


def recourse_bin() -> str:
    path = Path(os.environ.get("RECOURSE_BIN", ROOT / "target" / "debug" / "recourse"))
    if not path.is_file():
        pytest.fail(f"no recourse binary at {path}: build it (cargo build -p recourse-cli) or set RECOURSE_BIN")
    return str(path)


class Server:
    """A started server process and the URL it printed."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None) -> None:
        # A file, not a pipe: nobody reads stderr while the server runs.
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen(
            [recourse_bin(), *args],
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            env={**os.environ, **(env or {})},
        )
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=_pump, args=(self.process.stdout, lines), daemon=True).start()
        try:
            first = lines.get(timeout=STARTUP_SECS)
        except queue.Empty:
            self.stop()
            pytest.fail(f"{args} printed nothing in {STARTUP_SECS} s: {self.errors()}")
        self.url = first.strip().split()[-1].rstrip("/")
        if not self.url.startswith("http://"):
            self.stop()
            pytest.fail(f"{args} did not print its URL: {first!r} {self.errors()}")

    def errors(self) -> str:
        """What the server wrote on stderr so far."""
        self.stderr.seek(0)
        return self.stderr.read()[-2000:]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.stderr.close()


def _pump(stream, lines: queue.Queue[str]) -> None:
    for line in stream:
        lines.put(line)


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
