"""A pydantic-ai agent whose tool calls run through the recourse gateway.

The model is scripted (pydantic-ai's FunctionModel: no network). It asks for the weather in
"Flower Mound, TX" and for an export, then for the same export again. Starts the reference tools
(losing every export's answer, naming no lookup for it) and a gateway itself, with the `recourse`
that `pip install 'recourse-cli[pydantic-ai]'` installed; or uses those at RECOURSE_TOOLS_URL /
RECOURSE_GATEWAY_URL when set.
"""

import os
import sys
from contextlib import ExitStack

import httpx
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import FunctionModel

from recourse_client import AsyncGateway, spawn_gateway, spawn_tools
from recourse_client.pydantic_ai import RecourseToolset, fetch_tools

EXPORT = {"source_id": "sales-2024", "format": "pdf"}
SCRIPT = [
    [ToolCallPart("weather_current", {"location": "Flower Mound, TX"}), ToolCallPart("exports_create", EXPORT)],
    [ToolCallPart("exports_create", EXPORT)],  # a model that asks again
    [TextPart("The export may have been written; please check before I try again.")],
]


def model(messages, info):
    return ModelResponse(parts=SCRIPT[len(messages) // 2])


def report(tool, record):
    print(f"{tool}: {record.outcome} after {len(record.attempts)} attempt(s), next step {record.next.step}")


with ExitStack() as stack:
    TOOLS = os.environ.get("RECOURSE_TOOLS_URL") or stack.enter_context(
        spawn_tools(["exports:crash_after_commit:1.0"], args=["--no-declared-lookups"])
    )
    if os.environ.get("RECOURSE_GATEWAY_URL"):
        gateway = AsyncGateway(os.environ["RECOURSE_GATEWAY_URL"], os.environ.get("RECOURSE_GATEWAY_TOKEN"))
    else:
        spawned = stack.enter_context(spawn_gateway())
        gateway = AsyncGateway(spawned.url, spawned.token)

    # The manifest's tools, without its lookups: the lost export stays unknown rather than settled.
    toolset = RecourseToolset(gateway, fetch_tools(TOOLS, lookups=False), on_record=report)
    result = Agent(FunctionModel(model), toolsets=[toolset]).run_sync("Weather in Flower Mound; export sales-2024")

    print("\nwhat the model read:")
    for message in result.all_messages():
        for part in message.parts:
            if isinstance(part, ToolReturnPart):
                print(f"- {part.tool_name}: {part.content}")
    print(f"model: {result.output}")
    written = httpx.post(f"{TOOLS}/api/exports/lookup", json=EXPORT).json()["data"]["count"]
    print(f"exports written: {written}")

sys.exit(0 if written == 1 else 1)
