"""The build backend's own tests: what the terminal is told, what pip still gets.

Run with maturin importable: `python -m unittest discover -s clients/python/build_backend -p
backend_tests.py` (.ci/run does, in its wheel step, before building the wheel through it). Named so
that pytest, which runs the client's tests without maturin, does not collect it.
"""

import io
import os
import threading
import unittest

import recourse_build


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def close(self) -> None:  # the backend closes its terminal; keep what it was told
        pass


def last_line(text: str) -> str:
    return text.rsplit("\r", 1)[-1].replace("\x1b[2K", "").strip()


class ProgressTest(unittest.TestCase):
    def test_it_says_what_it_builds_then_the_crate_and_the_time(self) -> None:
        terminal, clock = Terminal(), Clock()
        progress = recourse_build._Progress(terminal, clock)
        progress.begin()
        self.assertIn("building the `recourse` binary with cargo", terminal.getvalue())
        progress.tick()
        self.assertEqual(last_line(terminal.getvalue()), "recourse-cli: 0 s — cargo is starting")
        clock.now += 75
        progress.compiling("serde")
        progress.compiling("tokio")
        self.assertEqual(
            last_line(terminal.getvalue()), "recourse-cli: 1 min 15 s — 2 crates compiled, now tokio"
        )
        clock.now += 600
        progress.end(ok=True)
        self.assertEqual(last_line(terminal.getvalue()), "recourse-cli: built in 11 min 15 s.")

    def test_a_failed_build_says_so(self) -> None:
        terminal = Terminal()
        progress = recourse_build._Progress(terminal, Clock())
        progress.end(ok=False)
        self.assertIn("the build failed after 0 s", terminal.getvalue())


class RelayTest(unittest.TestCase):
    def test_every_byte_goes_on_and_each_compiling_line_counts_a_crate(self) -> None:
        cargo = (
            b"   Compiling proc-macro2 v1.0.95\n"
            b"warning: unused variable `x`\n"
            b"   Compiling recourse-cli v0.1.0 (/w/crates/cli)\n"
            b"    Finished `release` profile [optimized] target(s) in 1.00s\n"
            b"no newline at the end"
        )
        terminal = Terminal()
        progress = recourse_build._Progress(terminal, Clock())
        source_read, source_write = os.pipe()
        out_read, out_write = os.pipe()
        relay = threading.Thread(target=recourse_build._relay, args=(source_read, out_write, progress))
        relay.start()
        # Written in pieces that split lines, as a pipe may deliver them.
        for start in range(0, len(cargo), 7):
            os.write(source_write, cargo[start : start + 7])
        os.close(source_write)
        relay.join(timeout=10)
        os.close(out_write)
        with os.fdopen(out_read, "rb") as passed:
            self.assertEqual(passed.read(), cargo)
        self.assertEqual(progress._crates, 2)
        self.assertTrue(last_line(terminal.getvalue()).endswith("2 crates compiled, now recourse-cli"))


class WithoutTerminalTest(unittest.TestCase):
    def test_without_a_terminal_the_build_runs_untouched(self) -> None:
        saved = recourse_build._terminal
        recourse_build._terminal = lambda: None
        stderr = os.fstat(2)
        try:
            self.assertEqual(recourse_build._told(lambda: "w.whl"), "w.whl")
        finally:
            recourse_build._terminal = saved
        self.assertEqual(os.fstat(2).st_ino, stderr.st_ino)  # stderr never swapped


class WithTerminalTest(unittest.TestCase):
    def test_cargo_on_stderr_reaches_the_terminal_and_stderr_is_given_back(self) -> None:
        terminal = Terminal()
        saved = recourse_build._terminal
        recourse_build._terminal = lambda: terminal
        before = os.fstat(2)
        try:
            wheel = recourse_build._told(lambda: os.write(2, b"   Compiling serde v1.0.0\n") and "w.whl")
        finally:
            recourse_build._terminal = saved
        self.assertEqual(wheel, "w.whl")
        self.assertIn("1 crate compiled, now serde", terminal.getvalue())
        self.assertEqual(last_line(terminal.getvalue()).split(".")[0], "recourse-cli: built in 0 s")
        self.assertEqual(os.fstat(2).st_ino, before.st_ino)

    def test_a_failing_build_still_gives_stderr_back_and_says_it_failed(self) -> None:
        terminal = Terminal()
        saved = recourse_build._terminal
        recourse_build._terminal = lambda: terminal
        before = os.fstat(2)

        def fails() -> str:
            raise SystemExit(1)  # maturin's way of failing

        try:
            with self.assertRaises(SystemExit):
                recourse_build._told(fails)
        finally:
            recourse_build._terminal = saved
        self.assertIn("the build failed after", terminal.getvalue())
        self.assertEqual(os.fstat(2).st_ino, before.st_ino)


if __name__ == "__main__":
    unittest.main()
