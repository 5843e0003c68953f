"""pydantic-ai agents whose tools run through a real gateway, driven by a
scripted model (``FunctionModel``: no network)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Callable

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from recourse_client import AsyncGateway, CallRecord
from recourse_client.pydantic_ai import DO_NOT_REPEAT, RecourseToolset, fetch_tools, tool_answer

from conftest import NO_LOOKUPS, exports_written

EXPORT = {"source_id": "sales-2024", "format": "pdf"}


def scripted(*turns: Callable[[ModelRequest], ModelResponse]) -> FunctionModel:
    """A model that answers its n-th request with ``turns[n](request)``."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        requests = [m for m in messages if isinstance(m, ModelRequest)]
        return turns[len(requests) - 1](requests[-1])

    return FunctionModel(model)


def call(tool: str, args: dict[str, Any], n: int = 1) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(tool_name=tool, args=args, tool_call_id=f"call-{n}")])


def done(text: str = "done") -> ModelResponse:
    return ModelResponse(parts=[TextPart(text)])


def part(request: ModelRequest, kind: type) -> Any:
    (found,) = [p for p in request.parts if isinstance(p, kind)]
    return found


def run(tools_url: str, gateway_url: str, model: FunctionModel, *, lookups: bool = True):
    records: list[tuple[str, CallRecord]] = []
    toolset = RecourseToolset(
        AsyncGateway(gateway_url),
        fetch_tools(tools_url, lookups=lookups),
        on_record=lambda name, record: records.append((name, record)),
    )
    result = Agent(model, toolsets=[toolset]).run_sync("help")
    return result, records


def test_fix_arguments_is_a_retry_prompt_with_the_model_message(stack):
    tools, url = stack()
    seen: dict[str, Any] = {}

    def after_refusal(request: ModelRequest) -> ModelResponse:
        seen["retry"] = part(request, ToolReturnPart)
        return call("currency_convert", {"amount": 5, "from": "USD", "to": "EUR"}, 2)

    def after_success(request: ModelRequest) -> ModelResponse:
        seen["result"] = part(request, ToolReturnPart)
        return done()

    model = scripted(
        lambda _: call("currency_convert", {"amount": -5, "from": "USD", "to": "EUR"}),
        after_refusal,
        after_success,
    )
    result, records = run(tools, url, model)
    assert result.output == "done"
    (first_name, first), (_, second) = records
    assert first_name == "currency_convert" and first.next.step == "fix_arguments"
    assert seen["retry"].outcome == "retried", "pydantic-ai's retry prompt"
    assert seen["retry"].content == first.next.model_message, "carrying recourse's message"
    assert "INVALID_AMOUNT" in seen["retry"].content
    assert second.succeeded and seen["result"].content == second.data
    assert seen["result"].outcome == "success"


def test_a_correction_by_recourse_comes_back_with_its_note(stack):
    tools, url = stack()
    seen: dict[str, Any] = {}

    def answer(request: ModelRequest) -> ModelResponse:
        seen["result"] = part(request, ToolReturnPart).content
        return done()

    model = scripted(lambda _: call("weather_current", {"location": "Flower Mound, TX"}), answer)
    _, [(_, record)] = run(tools, url, model)
    assert record.succeeded and len(record.attempts) == 2 and record.attempts[1].source == "repair"
    assert seen["result"] == {"result": record.data, "note": record.next.model_message}
    assert "Flower Mound, Texas, US" in seen["result"]["note"]


def test_an_unknown_write_is_not_repeated_and_the_model_is_told(stack):
    tools, url = stack("exports:crash_after_commit:1.0", tools_args=NO_LOOKUPS)
    seen: list[str] = []

    def again(request: ModelRequest) -> ModelResponse:
        seen.append(part(request, ToolReturnPart).content)
        return call("exports_create", EXPORT, 2)  # a stubborn model asks again

    def answer(request: ModelRequest) -> ModelResponse:
        seen.append(part(request, ToolReturnPart).content)
        return done("I could not confirm the export; please check before asking again.")

    model = scripted(lambda _: call("exports_create", EXPORT), again, answer)
    _, records = run(tools, url, model, lookups=False)
    [(_, record)] = records  # the second call was never sent to the gateway
    assert record.outcome == "unknown" and record.next.step == "do_not_repeat"
    first, second = seen
    assert first.startswith(DO_NOT_REPEAT) and record.next.model_message in first
    assert second.startswith(DO_NOT_REPEAT) and "did not send this call" in second
    assert exports_written(tools) == 1, "one write, no duplicate"


def test_an_unknown_write_with_a_lookup_is_settled_on_the_spot(stack):
    tools, url = stack("exports:crash_after_commit:1.0")
    seen: list[Any] = []

    def answer(request: ModelRequest) -> ModelResponse:
        seen.append(part(request, ToolReturnPart).content)
        return done()

    _, [(_, record)] = run(tools, url, scripted(lambda _: call("exports_create", EXPORT), answer))
    assert record.succeeded and record.attempts[0].action == "reconcile"
    assert seen[0]["result"] == record.data and record.data["operation_id"].startswith("op-")
    assert "committed" in seen[0]["note"]
    assert exports_written(tools) == 1


def test_a_success_whose_read_back_found_nothing_is_the_result():
    """A write that declared a read-back and needed none (``unneeded``), or
    whose read-back did not apply, is a plain success; one a read settled is
    told with its note."""

    def record(verification):
        return SimpleNamespace(
            next=SimpleNamespace(step="use_result", model_message="Reading it back confirmed it."),
            attempts=[SimpleNamespace(action="succeed")],
            verification=verification,
            data={"order_id": "W1"},
        )

    for nothing_read in (None, "unneeded", "not_applicable"):
        assert tool_answer(record(nothing_read)) == {"order_id": "W1"}, nothing_read
    assert tool_answer(record("verified")) == {"result": {"order_id": "W1"}, "note": "Reading it back confirmed it."}


def test_a_plain_success_is_the_result(stack):
    tools, url = stack()
    seen: list[Any] = []

    def answer(request: ModelRequest) -> ModelResponse:
        seen.append(part(request, ToolReturnPart).content)
        return done()

    _, [(_, record)] = run(tools, url, scripted(lambda _: call("stock_quote", {"symbol": "TSLA"}), answer))
    assert record.succeeded and record.next.step == "use_result"
    assert seen == [record.data]
