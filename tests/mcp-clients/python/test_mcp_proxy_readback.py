"""Read-back verification end to end: the official MCP Python SDK as the
client of ``recourse mcp proxy``, in front of ``examples/workspace_mcp.py``
(files, orders, messages, tickets, a profile, a feed), whose first write
loses its answer — the server killed after committing, ``-32603`` after
committing, no answer before the attempt's timeout, or the connection dropped
before the write. One test per operator of the read-back language, each
twice: a write that committed ends ``succeeded`` + ``verified`` and is never
resent; one that did not is resent once with the same key and ends
``succeeded``. The server's log says what executed; its state what is there."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from test_mcp_proxy import CALL, FAILURE, ROOT, meta, recourse_bin

WORKSPACE = ROOT / "examples" / "workspace_mcp.py"
# A write that committed loses its answer one of three ways; one that did
# not, one of two. The cases take them in turn, so each way meets several
# operators.
COMMITTED = ("kill_after_commit", "internal_after_commit", "hang_after_commit")
LOST_BEFORE = ("drop_before_commit", "hang_before_commit")


@dataclass
class Case:
    """One write, the read that settles it, and what its effect leaves."""

    tool: str
    arguments: dict[str, Any]
    read: str
    expect: list[str]
    args: dict[str, Any] = field(default_factory=dict)
    absent_when: Any = None
    # What the state shows once the write took effect exactly once.
    done: Any = None

    def policy(self) -> dict[str, Any]:
        verify: dict[str, Any] = {"tool": self.read, "args": self.args, "expect": self.expect}
        if self.absent_when is not None:
            verify["absent_when"] = self.absent_when
        return {self.tool: {"verify": verify}}


def files(state: dict[str, Any]) -> set[str]:
    return set(state["files"])


CASES: dict[str, Case] = {
    "==": Case(
        "update_ticket", {"ticket_id": "T-1", "status": "pending"},
        "get_ticket", ['/status == "{{payload.status}}"'], {"ticket_id": "{{payload.ticket_id}}"},
        done=lambda s: s["tickets"]["T-1"]["status"] == "pending",
    ),
    "!=": Case(
        "cancel_order", {"order_id": "ORD-1"},
        "get_order", ['/status != "open"'], {"order_id": "{{payload.order_id}}"},
        done=lambda s: s["orders"][0]["status"] == "cancelled",
    ),
    "exists": Case(
        "set_phone", {"phone": "+44 20 7946 0000"}, "get_profile", ["/phone exists"],
        done=lambda s: s["profile"]["phone"] == "+44 20 7946 0000",
    ),
    "!exists": Case(
        "clear_email", {}, "get_profile", ["/email !exists"],
        done=lambda s: "email" not in s["profile"],
    ),
    "contains": Case(
        "touch", {"file_name": "draft.txt"}, "ls", ['$ contains "{{payload.file_name}}"'],
        done=lambda s: "/workspace/draft.txt" in files(s),
    ),
    "!contains": Case(
        "rm", {"file_name": "notes.txt"}, "ls", ['$ !contains "{{payload.file_name}}"'],
        done=lambda s: "/workspace/notes.txt" not in files(s),
    ),
    "starts_with": Case(
        "post", {"text": "shipping today"}, "get_feed", ['/latest starts_with "{{payload.text}}"'],
        done=lambda s: [p["text"] for p in s["feed"]].count("shipping today") == 1,
    ),
    "ends_with": Case(
        "cd", {"folder": "temp"}, "pwd", ['/cwd ends_with "/{{payload.folder}}"'],
        done=lambda s: s["cwd"] == "/workspace/temp",
    ),
    "<": Case(
        "pay_bill", {"bill_id": "B-1"}, "get_bill", ["/due < 0.01"], {"bill_id": "{{payload.bill_id}}"},
        done=lambda s: s["bills"]["B-1"] == 0,
    ),
    "<=": Case(
        "escalate_ticket", {"ticket_id": "T-1"}, "get_ticket", ["/priority <= 2"],
        {"ticket_id": "{{payload.ticket_id}}"},
        done=lambda s: s["tickets"]["T-1"]["priority"] == 2,
    ),
    ">": Case(
        "like_post", {"post_id": "P-1"}, "get_post", ["/likes > 0"], {"post_id": "{{payload.post_id}}"},
        done=lambda s: s["feed"][0]["likes"] == 1,
    ),
    ">=": Case(
        "deposit", {"amount": 100}, "get_balance", ["/balance >= {{payload.amount}}"],
        done=lambda s: s["balance"] == 100,
    ),
    "in": Case(
        "update_ticket", {"ticket_id": "T-1", "status": "resolved"},
        "get_ticket", ['/status in ["resolved", "closed"]'], {"ticket_id": "{{payload.ticket_id}}"},
        done=lambda s: s["tickets"]["T-1"]["status"] == "resolved",
    ),
    # A create whose id the server makes, and that is not unique: an order
    # just like it is there already, so its identity alone would read as
    # "already applied".
    "any + grew_by": Case(
        "place_order", {"symbol": "NVDA", "amount": 120}, "list_orders",
        ['/orders any {"/symbol": "{{payload.symbol}}", "/amount": "{{payload.amount}}"}', "/orders grew_by 1"],
        done=lambda s: [o["symbol"] for o in s["orders"]] == ["NVDA", "NVDA"],
    ),
    "grew_by": Case(
        "send_message", {"to": "USR003", "text": "hi"}, "list_messages", ["/count grew_by 1"],
        {"to": "{{payload.to}}"},
        done=lambda s: len(s["messages"]) == 2,
    ),
    "grew_by a template": Case(
        "deposit", {"amount": 25}, "get_balance", ["/balance grew_by {{payload.amount}}"],
        done=lambda s: s["balance"] == 25,
    ),
    # Reads that answer "not there" as an error: `cat` of a missing file (any
    # error), a ticket never opened (its code).
    "absent_when error": Case(
        "touch", {"file_name": "report.txt"}, "cat", ["/content exists"],
        {"file_name": "{{payload.file_name}}"}, absent_when="error",
        done=lambda s: "/workspace/report.txt" in files(s),
    ),
    "absent_when codes": Case(
        "open_ticket", {"ticket_id": "T-7", "title": "vpn"}, "get_ticket", ['/status == "open"'],
        {"ticket_id": "{{payload.ticket_id}}"}, absent_when=["TICKET_NOT_FOUND"],
        done=lambda s: s["tickets"]["T-7"]["status"] == "open",
    ),
}


class Upstream:
    """The workspace server the proxy starts, its state and its log, in ``tmp_path``."""

    def __init__(self, tmp_path: Path, fault: str | None) -> None:
        self.tmp_path = tmp_path
        self.state = tmp_path / "state.json"
        self.log = tmp_path / "calls.log"
        self.fault = fault

    def command(self) -> list[str]:
        command = [sys.executable, str(WORKSPACE), "--state", str(self.state), "--log", str(self.log)]
        return [*command, "--fault", self.fault] if self.fault else command

    def calls(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []

    def executed(self, tool: str) -> int:
        return sum(1 for c in self.calls() if c["tool"] == tool and c["executed"])

    def sent(self, tool: str) -> int:
        return sum(1 for c in self.calls() if c["tool"] == tool)

    def seen(self) -> dict[str, Any]:
        return json.loads(self.state.read_text())


def proxied(tmp_path: Path, policy: dict[str, Any], upstream: list[str] | str, calls) -> None:
    """Runs ``calls(session)`` through the proxy, with ``policy`` as its policy
    file, in front of ``upstream`` (a command, or an HTTP server's URL)."""
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps({"tools": policy}))
    flags = ["--journal", str(tmp_path / "proxy.db"), "--backoff-ms", "10", "--timeout", "2", "--tools", str(tools)]
    if isinstance(upstream, str):
        args = ["mcp", "proxy", *flags, "--upstream", f"ws={upstream}"]
    else:
        args = ["mcp", "proxy", *flags, "--", *upstream]

    async def main() -> None:
        params = StdioServerParameters(command=recourse_bin(), args=args)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await calls(session)

    anyio.run(main)


def settled(case: Case, result: Any, resent: bool) -> None:
    """The client's result for a lost write the read-back settled."""
    assert not result.is_error, result
    call = meta(result)[CALL]
    assert call["outcome"] == "succeeded", call
    assert call["verification"] == "verified", call
    assert call["attempts"] == (2 if resent else 1), call
    phases = [(r["phase"], r["result"]) for r in call["reads"]]
    if resent:
        assert phases == [("before", "not_held"), ("after", "not_held"), ("after", "holds")], phases
    else:
        assert phases == [("before", "not_held"), ("after", "holds")], phases


@pytest.mark.parametrize("committed", [True, False], ids=["committed", "not_committed"])
@pytest.mark.parametrize("op", list(CASES))
def test_a_lost_write_is_settled_by_reading_it_back(tmp_path: Path, op: str, committed: bool) -> None:
    case = CASES[op]
    n = list(CASES).index(op)
    fault = COMMITTED[n % len(COMMITTED)] if committed else LOST_BEFORE[n % len(LOST_BEFORE)]
    upstream = Upstream(tmp_path, fault)

    async def calls(session: ClientSession) -> None:
        result = await session.call_tool(case.tool, case.arguments)
        settled(case, result, resent=not committed)

    proxied(tmp_path, case.policy(), upstream.command(), calls)
    assert upstream.executed(case.tool) == 1, (fault, upstream.calls())
    assert upstream.sent(case.tool) == (1 if committed else 2), (fault, upstream.calls())
    assert case.done(upstream.seen()), (fault, upstream.seen())


def test_a_connection_dropped_before_the_write_over_http_is_resent_once(tmp_path: Path) -> None:
    upstream = Upstream(tmp_path, "drop_before_commit")
    case = CASES["any + grew_by"]
    server = subprocess.Popen([*upstream.command(), "--http", "0"], stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline().strip()
        assert line.startswith("listening on "), line

        async def calls(session: ClientSession) -> None:
            result = await session.call_tool(case.tool, case.arguments)
            settled(case, result, resent=True)

        proxied(tmp_path, case.policy(), line.removeprefix("listening on "), calls)
    finally:
        server.terminate()
        server.wait()
    assert upstream.executed(case.tool) == 1, upstream.calls()
    assert case.done(upstream.seen()), upstream.seen()


OPTIONAL_FOLDER = {
    "touch": {
        "verify": {
            "tool": "ls",
            "args": {"path": "{{payload.folder?}}"},
            "expect": ['$ contains "{{payload.file_name}}"'],
        }
    }
}


@pytest.mark.parametrize("folder", [None, "temp"], ids=["without", "with"])
def test_a_call_without_an_optional_argument_is_sent_and_verified_without_it(
    tmp_path: Path, folder: str | None
) -> None:
    upstream = Upstream(tmp_path, "kill_after_commit")
    arguments = {"file_name": "a.txt", **({"folder": folder} if folder else {})}

    async def calls(session: ClientSession) -> None:
        result = await session.call_tool("touch", arguments)
        settled(CASES["contains"], result, resent=False)

    proxied(tmp_path, OPTIONAL_FOLDER, upstream.command(), calls)
    reads = [c["arguments"] for c in upstream.calls() if c["tool"] == "ls"]
    assert reads == [{"path": folder} if folder else {}] * 2, reads
    assert f"/workspace/{folder + '/' if folder else ''}a.txt" in files(upstream.seen())


def test_a_call_that_cannot_fill_a_required_template_is_sent_and_not_applicable(tmp_path: Path) -> None:
    upstream = Upstream(tmp_path, "internal_after_commit")
    policy = {
        "echo": {
            "verify": {
                "tool": "cat",
                "args": {"file_name": "{{payload.file_name}}"},
                "expect": ['/content == "{{payload.content}}"'],
            }
        }
    }

    async def calls(session: ClientSession) -> None:
        result = await session.call_tool("echo", {"content": "hello"})
        assert result.is_error, result
        call = meta(result)[CALL]
        assert call["outcome"] == "unknown" and call["verification"] == "not_applicable", call
        assert call["reads"] == [], call
        assert meta(result)[FAILURE]["retryable"] is False
        assert "did not apply to these arguments" in result.content[0].text, result.content[0].text
        # The same tool, with the argument: read back and settled.
        result = await session.call_tool("echo", {"content": "hello", "file_name": "hello.txt"})
        assert not result.is_error, result
        assert meta(result)[CALL]["verification"] == "unneeded", meta(result)

    proxied(tmp_path, policy, upstream.command(), calls)
    assert upstream.executed("echo") == 2, upstream.calls()
    assert upstream.sent("cat") == 1, "one read before the second write, none for the first"


def test_a_read_failing_for_its_own_reasons_leaves_the_write_unknown_and_unrepeated(tmp_path: Path) -> None:
    """`cat` answers an error for a file that is not there; undeclared as
    absence, that error is the read failing, never the effect's absence."""
    upstream = Upstream(tmp_path, "drop_before_commit")
    case = CASES["absent_when error"]
    policy = {case.tool: {"verify": {"tool": case.read, "args": case.args, "expect": case.expect}}}

    async def calls(session: ClientSession) -> None:
        result = await session.call_tool(case.tool, case.arguments)
        assert result.is_error, result
        call = meta(result)[CALL]
        assert call["outcome"] == "unknown" and call["verification"] == "cannot_tell", call
        assert [(r["phase"], r["result"]) for r in call["reads"]] == [
            ("before", "cannot_tell"),
            ("after", "cannot_tell"),
        ], call
        assert "could not tell" in result.content[0].text, result.content[0].text
        assert call["step"] == "do_not_repeat"

    proxied(tmp_path, policy, upstream.command(), calls)
    assert upstream.sent(case.tool) == 1, upstream.calls()
    assert upstream.executed(case.tool) == 0
