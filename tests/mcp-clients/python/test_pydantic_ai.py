"""pydantic-ai's MCP toolset (``MCPToolset`` over a stdio transport, as
pydantic-ai 2.68 has it) as a client of ``recourse mcp proxy``, in an agent
driven by a scripted model (``FunctionModel``: no network), in front of
``recourse tools serve --mcp`` with faults."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import anyio
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from mcp import ClientSession, StdioServerParameters, stdio_client
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from test_mcp_proxy import CRASH_AFTER_COMMIT, EXPORT, journal, recourse_bin

WEATHER = {"location": "London, England, GB"}
# With this seed the weather tool's first call is refused 503 and its second
# answers (checked directly, without the proxy, below).
FLAKY_WEATHER = ("--seed", "2", "--fault", "weather:unavailable:0.5")


def scripted(*turns: Callable[[ModelRequest], ModelResponse]) -> FunctionModel:
    """A model that answers its n-th request with ``turns[n](request)``."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        requests = [m for m in messages if isinstance(m, ModelRequest)]
        return turns[len(requests) - 1](requests[-1])

    return FunctionModel(model)


def call(tool: str, args: dict[str, Any]) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(tool_name=tool, args=args, tool_call_id="call-1")])


def done(text: str = "done") -> ModelResponse:
    return ModelResponse(parts=[TextPart(text)])


def tool_parts(request: ModelRequest) -> list[ToolReturnPart]:
    return [p for p in request.parts if isinstance(p, ToolReturnPart)]


def upstream(tools: tuple[str, ...]) -> list[str]:
    return [recourse_bin(), "tools", "serve", "--mcp", "--port", "0", "--no-declared-lookups", *tools]


def toolset(tmp_path: Path, tools: tuple[str, ...]) -> MCPToolset:
    """The proxy, journaled in ``tmp_path``, as a client config starts it."""
    args = ["mcp", "proxy", "--journal", str(tmp_path / "proxy.db"), "--backoff-ms", "50", "--", *upstream(tools)]
    return MCPToolset(StdioTransport(command=recourse_bin(), args=args, keep_alive=False))


def test_the_proxy_and_the_tools_speak_the_2026_07_28_protocol(tmp_path: Path) -> None:
    """The FastMCP client under ``MCPToolset`` negotiates 2026-07-28, whose
    results must carry ``resultType``: both servers' results do."""

    async def main() -> None:
        tools = upstream(())
        direct = Client(StdioTransport(command=tools[0], args=tools[1:], keep_alive=False))
        async with toolset(tmp_path, ()) as proxied, direct:
            assert proxied.client.protocol_version == "2026-07-28"
            assert direct.protocol_version == "2026-07-28"
            names = {t.name for t in await proxied.client.list_tools()}
            assert names == {t.name for t in await direct.list_tools()}
            read = await proxied.direct_call_tool("exports_lookup", EXPORT)
            assert read == (await direct.call_tool("exports_lookup", EXPORT)).structured_content

    anyio.run(main)


def test_the_flaky_weather_fails_first_and_the_proxy_resends_it(tmp_path: Path) -> None:
    """What the model would read without the proxy: the seed's first call
    fails and its second answers; through the proxy, one call of two attempts."""

    async def main() -> None:
        tools = upstream(FLAKY_WEATHER)
        params = StdioServerParameters(command=tools[0], args=tools[1:])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            first = await session.call_tool("weather_current", WEATHER)
            second = await session.call_tool("weather_current", WEATHER)
            assert first.is_error and not second.is_error
        args = ["mcp", "proxy", "--journal", "none", "--backoff-ms", "50", "--", *tools]
        params = StdioServerParameters(command=recourse_bin(), args=args)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            through = await session.call_tool("weather_current", WEATHER)
            assert not through.is_error
            assert through.model_dump(by_alias=True)["_meta"]["recourse/call"]["attempts"] == 2

    anyio.run(main)


def test_a_transient_failure_is_invisible_to_the_model(tmp_path: Path) -> None:
    seen: list[ToolReturnPart] = []

    def answer(request: ModelRequest) -> ModelResponse:
        seen.extend(tool_parts(request))
        return done()

    model = scripted(lambda _: call("weather_current", WEATHER), answer)

    async def main() -> None:
        async with toolset(tmp_path, FLAKY_WEATHER) as tools:
            result = await Agent(model, toolsets=[tools]).run("weather?")
            assert result.output == "done"

    anyio.run(main)
    [returned] = seen
    assert returned.outcome == "success", returned
    assert returned.content["location"] == WEATHER["location"], returned.content


def test_an_unknown_write_reaches_the_model_once_and_is_not_repeated(tmp_path: Path) -> None:
    seen: list[ToolReturnPart] = []
    written: list[int] = []

    def answer(request: ModelRequest) -> ModelResponse:
        seen.extend(tool_parts(request))
        return done("The export may exist already; I will not create it again.")

    model = scripted(lambda _: call("exports_create", EXPORT), answer)

    async def main() -> None:
        async with toolset(tmp_path, CRASH_AFTER_COMMIT) as tools:
            await Agent(model, toolsets=[tools]).run("export the 2024 sales as a PDF")
            lookup = await tools.direct_call_tool("exports_lookup", EXPORT)
            written.append(lookup["count"])

    anyio.run(main)
    [told] = seen
    assert told.outcome == "retried", "pydantic-ai's retry prompt"
    assert "do not repeat it" in told.content, told.content
    assert written == [1], "one write, no duplicate"
    [entry] = journal(tmp_path)
    assert entry["state"] == "unknown"


def test_a_404_with_a_suggestion_is_repaired_without_a_model_call(tmp_path: Path) -> None:
    """The weather tool does not know "Flower Mound, TX" and says which place
    it has (404, retryable, ``suggestion``): the proxy's deterministic repair
    sends that (no model is configured for it), and the model's next request
    holds the weather — it never sees the 404, and is not asked to fix it."""
    seen: list[ToolReturnPart] = []
    requests: list[ModelRequest] = []

    def ask(request: ModelRequest) -> ModelResponse:
        requests.append(request)
        return call("weather_current", {"location": "Flower Mound, TX"})

    def answer(request: ModelRequest) -> ModelResponse:
        requests.append(request)
        seen.extend(tool_parts(request))
        return done()

    async def main() -> None:
        async with toolset(tmp_path, ()) as tools:
            result = await Agent(scripted(ask, answer), toolsets=[tools]).run("weather in Flower Mound?")
            assert result.output == "done"

    anyio.run(main)
    [returned] = seen
    assert returned.outcome == "success", returned
    assert returned.content["location"] == "Flower Mound, Texas, US", returned.content
    assert len(requests) == 2, "asked once for the call, once with its result: no turn to fix it"
