"""A gateway and the reference tools started from Python: ``Gateway.spawn``,
``AsyncGateway.spawn``, ``spawn_tools`` — with the binary the tests run
(``RECOURSE_BIN``, as the installed wheel's ``recourse`` would be found)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

import httpx
import pytest

from recourse_client import AsyncGateway, Gateway, SpawnError, recourse_bin, spawn_gateway, spawn_tools


def test_a_spawned_gateway_serves_with_its_own_token_and_stops_on_exit(tmp_path):
    with spawn_tools() as tools, Gateway.spawn(journal_dir=tmp_path) as gateway:
        quote = gateway.call(f"{tools}/api/stock/quote", {"symbol": "TSLA"})
        assert quote.succeeded, quote
        url = gateway._plan.base_url
        assert url.startswith("http://127.0.0.1:")
        assert httpx.get(f"{url}/v1/calls").status_code == 401, "a fresh token is required"
        export = gateway.call(f"{tools}/api/exports", {"source_id": "sales-2024", "format": "pdf"})
        assert gateway.get_call(export.call_id).state == "succeeded"
    assert (tmp_path / "gateway.db").is_file(), "the journal is where it was asked to be"
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{url}/healthz", timeout=1.0)


def test_an_async_spawned_gateway_serves_too():
    async def run() -> str:
        with spawn_tools() as tools:
            async with AsyncGateway.spawn() as gateway:
                record = await gateway.call(f"{tools}/api/stock/quote", {"symbol": "TSLA"})
                return record.outcome

    assert asyncio.run(run()) == "succeeded"


def test_spawn_gateway_passes_flags_and_a_given_token():
    with spawn_gateway(token="my-own-token-0123456789", args=["--lease-ms", "5000"]) as spawned:
        assert spawned.token == "my-own-token-0123456789"
        answer = httpx.get(f"{spawned.url}/v1/calls", headers={"Authorization": f"Bearer {spawned.token}"})
        assert answer.status_code == 200


def test_a_binary_that_is_not_there_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("RECOURSE_BIN", str(tmp_path / "nope"))
    with pytest.raises(SpawnError, match="RECOURSE_BIN"):
        recourse_bin()
    with pytest.raises(SpawnError):
        with Gateway.spawn():
            pass


def test_a_bad_flag_is_a_spawn_error_with_what_recourse_said():
    with pytest.raises(SpawnError, match="unexpected argument"):
        with spawn_gateway(args=["--no-such-flag"]):
            pass


def test_a_spawned_gateway_ends_with_the_python_that_started_it(tmp_path):
    """A program killed outright (SIGKILL) runs nothing on its way out; its
    gateway stops anyway, as the program's end closes the gateway's input."""
    program = tmp_path / "agent.py"
    program.write_text(
        "import time\n"
        "from recourse_client import spawn_gateway\n"
        "with spawn_gateway() as gateway:\n"
        "    print(gateway.url, flush=True)\n"
        "    time.sleep(600)\n"
    )
    agent = subprocess.Popen([sys.executable, str(program)], stdout=subprocess.PIPE, text=True, env=os.environ)
    url = agent.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:"), url
    assert httpx.get(f"{url}/readyz", trust_env=False).status_code == 200
    agent.kill()
    agent.wait()
    agent.stdout.close()
    deadline = time.monotonic() + 15
    while True:
        try:
            httpx.get(f"{url}/healthz", timeout=0.5, trust_env=False)
        except httpx.ConnectError:
            break
        assert time.monotonic() < deadline, "the gateway outlived the program that started it"
        time.sleep(0.05)
