"""The Tasks extension (``io.modelcontextprotocol/tasks``, 2026-07-28)
through the official MCP Python SDK: a call that waits for a person is
handed to the client as a task, whose ``tasks/get`` the proxy answers from
its journal — after the proxy that made it has stopped, too. The SDK ships
no Tasks client, so this file writes the small one its extension interface
(``ClientExtension``, ``ResultClaim``) is there for. The upstream is
``servers/scripted.py``, whose log says what executed."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.client.extension import ResultClaim
from mcp.shared.exceptions import MCPError
from mcp_types import Result
from pydantic import TypeAdapter

from test_mcp_proxy import CALL, FAILURE, meta, recourse_bin
from test_mcp_proxy_edges import log_of, scripted, written

TASKS = "io.modelcontextprotocol/tasks"
APPROVE = {"approval": {"action": "accept", "content": {"decision": "approve"}}}


class TaskCreated(Result):
    """``resultType: "task"``: the handle a waiting call is."""

    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    poll_interval_ms: int | None = None


class TaskParams(types.RequestParams):
    task_id: str


class TaskAnswer(TaskParams):
    input_responses: dict[str, Any]


class GetTask(types.Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskParams
    # SEP-2663: a task request names its task in the `Mcp-Name` header too.
    name_param = "taskId"


class UpdateTask(types.Request[TaskAnswer, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: TaskAnswer
    # SEP-2663: a task request names its task in the `Mcp-Name` header too.
    name_param = "taskId"


class CancelTask(types.Request[TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskParams
    # SEP-2663: a task request names its task in the `Mcp-Name` header too.
    name_param = "taskId"


ANY = TypeAdapter(dict[str, Any])


async def unresolved(created: TaskCreated, context: Any) -> types.CallToolResult:
    raise AssertionError("these tests poll the task themselves")


def tasks_session(read, write) -> ClientSession:
    """A 2026-07-28 client declaring tasks and form elicitation."""

    async def never_asked(context, params) -> types.ElicitResult:
        raise AssertionError("a task's form is read from tasks/get")

    return ClientSession(
        read,
        write,
        elicitation_callback=never_asked,
        extensions={TASKS: {}},
        result_claims={TASKS: [ResultClaim(result_type="task", model=TaskCreated, resolve=unresolved)]},
    )


def proxy(tmp_path: Path, via: list[str]) -> StdioServerParameters:
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"tools": {"write": {"approval": {"reason": "writes need a person", "via": via}}}}))
    args = [
        "mcp", "proxy", "--journal", str(tmp_path / "proxy.db"), "--tools", str(policy),
        # A task is polled every third of the lease: 1 s here.
        "--lease-ms", "3000",
        "--", *scripted(tmp_path, "ok"),
    ]
    return StdioServerParameters(command=recourse_bin(), args=args)


async def get(session: ClientSession, task_id: str) -> dict[str, Any]:
    return await session.send_request(GetTask(params=TaskParams(task_id=task_id)), ANY)


def test_a_tasks_client_polls_an_approval_across_a_proxy_restart_and_receives_the_result(tmp_path: Path) -> None:
    params = proxy(tmp_path, ["console", "client"])

    async def first() -> str:
        async with stdio_client(params) as (read, write), tasks_session(read, write) as session:
            await session.discover()
            assert session.protocol_version == "2026-07-28"
            assert TASKS in (session.server_capabilities.extensions or {})
            created = await session.call_tool("write", {"text": "pay 5 EUR"}, allow_claimed=True)
            assert isinstance(created, TaskCreated), created
            assert created.status == "working" and created.poll_interval_ms == 1000, created
            return created.task_id

    task_id = anyio.run(first)
    assert written(tmp_path) == 0, log_of(tmp_path)

    async def after_restart() -> dict[str, Any]:
        async with stdio_client(params) as (read, write), tasks_session(read, write) as session:
            await session.discover()
            waiting = await get(session, task_id)
            assert waiting["status"] == "input_required", waiting
            form = waiting["inputRequests"]["approval"]
            assert form["method"] == "elicitation/create"
            assert "pay 5 EUR" in form["params"]["message"], form
            await session.send_request(UpdateTask(params=TaskAnswer(task_id=task_id, input_responses=APPROVE)), ANY)
            with anyio.fail_after(30):
                while True:
                    polled = await get(session, task_id)
                    if polled["status"] != "working":
                        return polled
                    await anyio.sleep(polled["pollIntervalMs"] / 1000)

    done = anyio.run(after_restart)
    assert done["status"] == "completed", done
    assert not done["result"].get("isError"), done
    assert done["result"]["_meta"][CALL]["outcome"] == "succeeded", done
    assert written(tmp_path) == 1, log_of(tmp_path)


def test_a_task_is_cancelled_while_it_waits_and_never_in_flight(tmp_path: Path) -> None:
    async def main() -> None:
        async with stdio_client(proxy(tmp_path, ["console"])) as (read, write), tasks_session(read, write) as session:
            await session.discover()
            created = await session.call_tool("write", {"text": "hello"}, allow_claimed=True)
            task_id = created.task_id
            # The policy leaves the decision to the console: no form, no answer taken.
            assert (await get(session, task_id))["status"] == "working"
            with pytest.raises(MCPError, match="console"):
                await session.send_request(
                    UpdateTask(params=TaskAnswer(task_id=task_id, input_responses=APPROVE)), ANY
                )
            await session.send_request(CancelTask(params=TaskParams(task_id=task_id)), ANY)
            assert (await get(session, task_id))["status"] == "cancelled"
            with pytest.raises(MCPError, match="nothing to cancel"):
                await session.send_request(CancelTask(params=TaskParams(task_id=task_id)), ANY)
            # Another id is no task.
            with pytest.raises(MCPError, match="no task"):
                await get(session, "0190f5d2-0000-7000-8000-000000000000")

    anyio.run(main)
    assert written(tmp_path) == 0, log_of(tmp_path)


def test_a_client_without_tasks_gets_the_answer_it_always_had(tmp_path: Path) -> None:
    async def main() -> None:
        async with stdio_client(proxy(tmp_path, ["console"])) as (read, write), ClientSession(read, write) as session:
            await session.discover()
            result = await session.call_tool("write", {"text": "hello"})
            assert result.is_error, result
            assert meta(result)[FAILURE]["code"] == "approval_required", meta(result)

    anyio.run(main)
    assert written(tmp_path) == 0, log_of(tmp_path)


def test_a_write_still_running_after_a_short_wait_is_a_task_that_ends_in_its_result(tmp_path: Path) -> None:
    # `slow`: the upstream commits `write` after 2 s; a tasks client is
    # handed the call after 1 s, and the write goes on, journaled.
    args = [
        "mcp", "proxy", "--journal", str(tmp_path / "proxy.db"), "--lease-ms", "3000",
        "--", *scripted(tmp_path, "slow"),
    ]

    async def main() -> dict[str, Any]:
        params = StdioServerParameters(command=recourse_bin(), args=args)
        async with stdio_client(params) as (read, write), tasks_session(read, write) as session:
            await session.discover()
            created = await session.call_tool("write", {"text": "hello"}, allow_claimed=True)
            assert isinstance(created, TaskCreated), created
            # In flight, it may be writing: never cancelled.
            with pytest.raises(MCPError, match="in flight"):
                await session.send_request(CancelTask(params=TaskParams(task_id=created.task_id)), ANY)
            with anyio.fail_after(30):
                while True:
                    polled = await get(session, created.task_id)
                    if polled["status"] != "working":
                        return polled
                    await anyio.sleep(polled["pollIntervalMs"] / 1000)

    done = anyio.run(main)
    assert done["status"] == "completed", done
    assert done["result"]["_meta"][CALL]["outcome"] == "succeeded", done
    assert written(tmp_path) == 1, log_of(tmp_path)


def test_over_http_a_task_and_a_question_are_their_callers_alone(tmp_path: Path) -> None:
    """``--http --tokens``: caller b cannot read, answer or cancel caller a's
    task, nor answer the question a was asked with a's sealed state."""
    binary = recourse_bin()
    tokens = tmp_path / "tokens.json"
    callers = {"a": "token-of-caller-a-0001", "b": "token-of-caller-b-0002"}
    tokens.write_text(json.dumps({"callers": [{"name": n, "token": t} for n, t in callers.items()]}))
    tokens.chmod(0o600)
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"tools": {"write": {"approval": {"reason": "r", "via": ["console", "client"]}}}}))
    args = [
        "mcp", "proxy", "--http", "--port", "0", "--tokens", str(tokens), "--journal", str(tmp_path / "proxy.db"),
        "--tools", str(policy), "--lease-ms", "3000", "--", *scripted(tmp_path, "ok"),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECOURSE_GATEWAY_TOKEN")}
    proxy_process = subprocess.Popen([binary, *args], env=env, stdout=subprocess.PIPE, text=True)
    try:
        url = proxy_process.stdout.readline().rstrip("\n").removeprefix("recourse mcp proxy listening on ")

        def http(name: str) -> httpx2.AsyncClient:
            return httpx2.AsyncClient(headers={"Authorization": f"Bearer {callers[name]}"})

        async def never_asked(context, params) -> types.ElicitResult:
            raise AssertionError("asked in the result")

        async def main() -> None:
            async with (
                http("a") as a_http,
                streamable_http_client(url, http_client=a_http) as (a_read, a_write),
                tasks_session(a_read, a_write) as a,
                http("a") as q_http,
                streamable_http_client(url, http_client=q_http) as (q_read, q_write),
                ClientSession(q_read, q_write, elicitation_callback=never_asked) as a_asked,
                http("b") as b_http,
                streamable_http_client(url, http_client=b_http) as (b_read, b_write),
                tasks_session(b_read, b_write) as b,
            ):
                for session in (a, a_asked, b):
                    await session.discover()
                created = await a.call_tool("write", {"text": "pay 5 EUR"}, allow_claimed=True)
                assert isinstance(created, TaskCreated), created
                assert (await get(a, created.task_id))["status"] == "input_required"
                for refused in (
                    GetTask(params=TaskParams(task_id=created.task_id)),
                    UpdateTask(params=TaskAnswer(task_id=created.task_id, input_responses=APPROVE)),
                    CancelTask(params=TaskParams(task_id=created.task_id)),
                ):
                    with pytest.raises(MCPError, match="no task"):
                        await b.send_request(refused, ANY)
                # a's question, answered by b with a's state and a's arguments.
                arguments = {"text": "pay 50 EUR"}
                asked = await a_asked.call_tool("write", arguments, allow_input_required=True)
                assert isinstance(asked, types.InputRequiredResult), asked
                with pytest.raises(MCPError, match="requestState"):
                    await b.call_tool(
                        "write", arguments, input_responses=APPROVE, request_state=asked.request_state,
                        allow_input_required=True,
                    )
                assert (await get(a, created.task_id))["status"] == "input_required"

        anyio.run(main)
        assert written(tmp_path) == 0, log_of(tmp_path)
    finally:
        proxy_process.terminate()
        assert proxy_process.wait(timeout=30) == 0
