"""The examples (the Python blocks of docs/python.md and docs/mcp-proxy.md are these files)
run as written against real servers, and exit 0 only when things went as they describe."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import NO_LOOKUPS

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.parametrize(
    "example, expected",
    [
        ("gateway_call.py", ["next step do_not_repeat", "replayed True"]),
        ("pydantic_ai_agent.py", ["DO NOT REPEAT THIS CALL", "recourse did not send this call", "exports written: 1"]),
    ],
)
def test_the_example_runs(stack, example, expected):
    tools, gateway = stack("exports:crash_after_commit:1.0", tools_args=NO_LOOKUPS)
    env = {**os.environ, "RECOURSE_TOOLS_URL": tools, "RECOURSE_GATEWAY_URL": gateway}
    env.pop("RECOURSE_GATEWAY_TOKEN", None)
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / example)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for words in expected:
        assert words in done.stdout, done.stdout


@pytest.mark.parametrize("example", ["gateway_call.py", "pydantic_ai_agent.py"])
def test_the_docs_show_the_example_as_it_is(example):
    page = (EXAMPLES.parents[2] / "docs" / "python.md").read_text()
    blocks = page.split("```python\n")[1:]
    shown = [b.split("```", 1)[0] for b in blocks]
    assert (EXAMPLES / example).read_text() in shown, f"docs/python.md's block differs from examples/{example}"


def test_the_mcp_proxy_example_runs(tmp_path):
    """pydantic-ai's MCPToolset through ``recourse mcp proxy``, in this venv
    (``recourse-cli[pydantic-ai]``): the weather the proxy resent reaches the
    model, the failure never. HOME is the test's, so is the proxy's journal."""
    env = {**os.environ, "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "pydantic_ai_mcp_proxy.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "weather_current: success, London, England, GB" in done.stdout, done.stdout
    assert "model: It is mild in London." in done.stdout, done.stdout
    assert done.stderr.count("tools/call weather_current") == 2, "the proxy resent it: " + done.stderr


def test_docs_mcp_proxy_shows_the_mcp_proxy_example_as_it_is():
    page = (EXAMPLES.parents[2] / "docs" / "mcp-proxy.md").read_text()
    shown = [b.split("```", 1)[0] for b in page.split("```python\n")[1:]]
    assert (EXAMPLES / "pydantic_ai_mcp_proxy.py").read_text() in shown
