"""Start ``recourse`` from Python, so an agent needs no second terminal.

:func:`spawn_gateway` starts ``recourse serve`` on a free loopback port with
a fresh token and a journal in a temporary (or given) directory, waits until
``/readyz`` answers, and stops it on exit — or, should this Python be killed
before it can, the gateway stops itself: it holds the gateway's standard
input, which closes with it (``--stop-when-stdin-closes``); :meth:`Gateway.spawn
<recourse_client.Gateway.spawn>` and :meth:`AsyncGateway.spawn
<recourse_client.AsyncGateway.spawn>` hand back a client of it.
:func:`spawn_tools` starts the reference tools, with faults::

    from recourse_client import Gateway, spawn_tools

    with spawn_tools(["exports:crash_after_commit:1.0"]) as tools, Gateway.spawn() as gateway:
        record = gateway.call(f"{tools}/api/exports", {"source_id": "sales-2024", "format": "pdf"})

The binary is the ``recourse`` beside the running Python (what ``pip install
recourse-cli`` puts there), unless ``RECOURSE_BIN`` names another; else the
one on ``PATH``.
"""

from __future__ import annotations

import os
import queue
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator, Mapping, Optional, Sequence

import httpx

#: How long a started process has to print its URL, and a gateway to be ready.
STARTUP_SECS = 30.0

#: How long a stopped process has to finish its in-flight calls before it is killed.
STOP_SECS = 10.0


class SpawnError(RuntimeError):
    """``recourse`` could not be found or started, or did not become ready."""


def recourse_bin() -> str:
    """The ``recourse`` to start: ``RECOURSE_BIN``, else the one beside
    ``sys.executable``, else the one on ``PATH``."""
    named = os.environ.get("RECOURSE_BIN")
    if named:
        if not Path(named).is_file():
            raise SpawnError(f"RECOURSE_BIN names {named}, which is not a file")
        return named
    beside = Path(sys.executable).parent / ("recourse.exe" if os.name == "nt" else "recourse")
    if beside.is_file():
        return str(beside)
    found = shutil.which("recourse")
    if found:
        return found
    raise SpawnError(
        "no recourse binary: `pip install recourse-cli` puts one beside this Python, "
        "or set RECOURSE_BIN to one (cargo build -p recourse-cli makes target/debug/recourse)"
    )


class Process:
    """A ``recourse`` process started with ``args``, and the URL it printed
    on its first line of stdout. Its stderr goes to a file (read by
    :meth:`errors`), so nobody needs to drain it."""

    def __init__(
        self,
        args: Sequence[str],
        env: Optional[Mapping[str, str]] = None,
        startup: float = STARTUP_SECS,
        *,
        hold_stdin: bool = False,
    ) -> None:
        self.args = list(args)
        self._stderr: IO[str] = tempfile.TemporaryFile(mode="w+")
        # With ``hold_stdin``, this process holds the child's standard input
        # open: when it ends — even killed — the input closes, and a child
        # started with --stop-when-stdin-closes stops.
        self.process = subprocess.Popen(
            [recourse_bin(), *self.args],
            stdin=subprocess.PIPE if hold_stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env={**os.environ, **(env or {})},
        )
        lines: queue.Queue[Optional[str]] = queue.Queue()
        threading.Thread(target=_pump, args=(self.process.stdout, lines), daemon=True).start()
        try:
            first = lines.get(timeout=startup)
        except queue.Empty:
            first = ""
        self.url = first.strip().split()[-1].rstrip("/") if first and first.strip() else ""
        if not self.url.startswith("http://"):
            if first is None:
                self.process.wait(timeout=STOP_SECS)
            said = f"printed {first!r}" if first else f"printed no URL in {startup} s"
            errors = self.errors()
            self.stop()
            raise SpawnError(f"recourse {' '.join(self.args)} {said}: {errors.strip()}")

    def errors(self) -> str:
        """The end of what the process wrote on stderr."""
        if self._stderr.closed:
            return ""
        self._stderr.seek(0)
        return self._stderr.read()[-2000:]

    def stop(self) -> None:
        """SIGTERM (a gateway drains and finishes its calls), then SIGKILL after :data:`STOP_SECS`."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=STOP_SECS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream:
                stream.close()
        self._stderr.close()


def _pump(stream: IO[str], lines: queue.Queue[Optional[str]]) -> None:
    """Hands on stdout's lines, then ``None`` when it closes (the process ended)."""
    for line in stream:
        lines.put(line)
    lines.put(None)


@dataclass(frozen=True)
class SpawnedGateway:
    """A running ``recourse serve``: where it listens, the token it requires,
    and its journal's path."""

    url: str
    token: str
    journal: Path


@contextmanager
def spawn_gateway(
    *, token: Optional[str] = None, journal_dir: Optional[os.PathLike[str] | str] = None, args: Sequence[str] = ()
) -> Iterator[SpawnedGateway]:
    """Starts ``recourse serve`` on a free loopback port, with ``token`` (a
    fresh one when ``None``) and its journal in ``journal_dir`` (a temporary
    directory, removed on exit, when ``None``); ``args`` are more flags
    (``--allow-target``, ``--lease-ms``, …). Yields once ``/readyz`` answers
    200, stops the gateway on exit."""
    token = token or secrets.token_hex(32)
    with ExitStack() as stack:
        directory = Path(journal_dir) if journal_dir is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        journal = directory / "gateway.db"
        # The gateway ends with this Python, however it ends (see ``Process``).
        process = Process(
            ["serve", "--port", "0", "--journal", str(journal), "--stop-when-stdin-closes", *args],
            env={"RECOURSE_GATEWAY_TOKEN": token},
            hold_stdin=True,
        )
        stack.callback(process.stop)
        _wait_ready(process)
        yield SpawnedGateway(process.url, token, journal)


def _wait_ready(process: Process) -> None:
    deadline = time.monotonic() + STARTUP_SECS
    while True:
        try:
            # On loopback: asked directly, never through the environment's proxy.
            if httpx.get(f"{process.url}/readyz", timeout=1.0, trust_env=False).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if process.process.poll() is not None or time.monotonic() > deadline:
            raise SpawnError(f"the gateway at {process.url} did not become ready: {process.errors()}")
        time.sleep(0.05)


@contextmanager
def spawn_tools(faults: Sequence[str] = (), *, seed: int = 0, args: Sequence[str] = ()) -> Iterator[str]:
    """Starts the reference tools (``recourse tools serve``) on a free
    loopback port with ``faults`` (``TOOL:KIND[:RATE]``, e.g.
    ``exports:crash_after_commit:1.0``) and yields their base URL; stops them
    on exit."""
    fault_args = [a for fault in faults for a in ("--fault", fault)]
    process = Process(["tools", "serve", "--port", "0", "--seed", str(seed), *fault_args, *args])
    try:
        yield process.url
    finally:
        process.stop()
