"""The wheel's build backend: maturin's, saying what it does while it builds.

pip runs a build backend with its output captured and shows it only with
``pip install -v`` (or when the build fails), so a first ``pip install
./clients/python`` would sit behind a spinner for the seven to eleven minutes cargo takes
to compile the ``recourse`` binary. This backend is maturin's with one thing
added: while a wheel builds, it tells the person at the terminal what is
being built, how long it has taken and which crate cargo is compiling — on
the terminal itself (``/dev/tty``), which pip does not capture. Everything
maturin and cargo print still goes where pip sends it (``-v`` shows it).

Without a terminal (CI, a redirected install) it says nothing.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from typing import IO, Any, Callable, Mapping

import maturin
from maturin import (  # noqa: F401  (the other hooks are maturin's own)
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_wheel,
)

try:  # maturin 1.x names it so; without it pip builds the wheel to learn it.
    from maturin import prepare_metadata_for_build_editable  # noqa: F401
except ImportError:  # pragma: no cover - depends on maturin's version
    pass

PACKAGE = "recourse-cli"

# cargo's line for each crate it starts: "   Compiling serde v1.0.229".
_COMPILING = re.compile(rb"^\s*Compiling (\S+) v")


def build_wheel(
    wheel_directory: str,
    config_settings: Mapping[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    return _told(lambda: maturin.build_wheel(wheel_directory, config_settings, metadata_directory))


def build_editable(
    wheel_directory: str,
    config_settings: Mapping[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    return _told(lambda: maturin.build_editable(wheel_directory, config_settings, metadata_directory))


def _terminal() -> IO[str] | None:
    """The person's terminal, when there is one; pip captures stdout and stderr."""
    try:
        return open("/dev/tty", "w", encoding="utf-8", errors="replace")
    except OSError:
        return None


class _Progress:
    """What the terminal is told: one line, rewritten as cargo moves on."""

    def __init__(self, terminal: IO[str], clock: Callable[[], float] = time.monotonic) -> None:
        self._terminal = terminal
        self._clock = clock
        self._started = clock()
        self._crates = 0
        self._current = ""
        self._lock = threading.Lock()

    def begin(self) -> None:
        self._write(
            f"{PACKAGE}: building the `recourse` binary with cargo. A first build "
            "compiles about 300 crates, seven to eleven minutes on two cores; `pip install -v` shows cargo's output.\n"
        )

    def compiling(self, crate: str) -> None:
        with self._lock:
            self._crates += 1
            self._current = crate
        self.tick()

    def tick(self) -> None:
        with self._lock:
            crates, current = self._crates, self._current
        line = f"{PACKAGE}: {_minutes(self._clock() - self._started)} — "
        counted = f"{crates} crate{'' if crates == 1 else 's'} compiled"
        line += f"{counted}, now {current}" if crates else "cargo is starting"
        self._write(f"\r\x1b[2K{line}")

    def end(self, ok: bool) -> None:
        took = _minutes(self._clock() - self._started)
        verdict = f"built in {took}" if ok else f"the build failed after {took} (pip shows why)"
        self._write(f"\r\x1b[2K{PACKAGE}: {verdict}.\n")

    def _write(self, text: str) -> None:
        try:
            self._terminal.write(text)
            self._terminal.flush()
        except OSError:
            pass


def _minutes(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


def _told(build: Callable[[], str]) -> str:
    """Runs `build`, telling the terminal (if any) what it is doing meanwhile.

    maturin runs cargo with this process's stderr, so stderr is passed through
    a pipe for the duration: every byte goes on to where pip reads it, and each
    `Compiling` line moves the terminal's line on.
    """
    terminal = _terminal()
    if terminal is None:
        return build()
    progress = _Progress(terminal)
    progress.begin()
    sys.stderr.flush()
    saved = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    reader = threading.Thread(target=_relay, args=(read_end, saved, progress), daemon=True)
    reader.start()
    done = threading.Event()
    ticker = threading.Thread(target=_tick, args=(progress, done), daemon=True)
    ticker.start()
    ok = False
    try:
        wheel = build()
        ok = True
        return wheel
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)  # closes the pipe's last write end: the relay drains and ends
        reader.join(timeout=10)
        os.close(saved)
        done.set()
        ticker.join(timeout=2)
        progress.end(ok)
        terminal.close()


def _relay(read_end: int, out: int, progress: _Progress) -> None:
    """Copies the pipe to `out`, telling `progress` of each crate cargo compiles."""
    pending = b""
    with os.fdopen(read_end, "rb", buffering=0) as pipe:
        while chunk := pipe.read(65536):
            _write_all(out, chunk)
            pending += chunk
            *lines, pending = pending.split(b"\n")
            pending = pending[-4096:]  # a line is shorter; output without newlines is not kept
            for line in lines:
                if found := _COMPILING.match(line):
                    progress.compiling(found.group(1).decode("utf-8", "replace"))


def _write_all(fd: int, data: bytes) -> None:
    while data:
        try:
            data = data[os.write(fd, data) :]
        except OSError:
            return


def _tick(progress: _Progress, done: threading.Event) -> None:
    """Moves the clock on the terminal's line while no crate starts."""
    while not done.wait(5):
        progress.tick()
