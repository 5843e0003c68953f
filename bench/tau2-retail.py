"""Replays the gold tool calls of tau2-bench's retail domain through
`recourse mcp proxy`, one transport fault per task on its first write, with
read-back declared for every write, and counts the tasks that end exactly as
the gold calls leave the database.

    python bench/tau2-retail.py --tau2 DIR [--split test|base] [--tasks N] [--recourse BIN]

DIR is a checkout of https://github.com/sierra-research/tau2-bench (its
`src/` and `data/`; nothing of it is copied here). The retail tools run as
tau2-bench wrote them (`tau2.domains.retail.tools.RetailTools` over its
`RetailDB`), served over MCP stdio by this script (`serve` mode), which keeps
the database in a state file so that a server killed mid-write finds what it
committed, and loses the answer of one write on purpose:

- `kill_after_commit`: commits, then exits before answering;
- `internal_after_commit`: commits, then answers JSON-RPC `-32603`;
- `hang_after_commit`: commits, then never answers (the proxy's `--timeout 3`: a server started again
  after a timed-out attempt must answer the read within it, and tau2-bench takes a second to import);
- `drop_before_commit`: exits before doing anything.

Faults go to tasks in turn, each to the first write the tool carries out
(one it refuses is answered as it is). For each task the gold calls are replayed twice:
straight into `RetailTools` (the expected database), and through the proxy
by the official MCP Python SDK. A task is *exact* when the two databases are
equal, every write ran exactly as many times as the gold calls make it, and
every call answered as it did straight (a success as a success).

Needs a Python with `mcp`, and tau2-bench's own imports for these modules:
pydantic, deepdiff, python-dotenv, loguru, toml, PyYAML, addict,
docstring-parser (not its LLM stack: the package's `__init__` is skipped).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import types
from pathlib import Path
from typing import Any

WRITES = {
    "cancel_pending_order": (
        "get_order_details",
        ['/status == "cancelled"', "/cancel_reason == {{payload.reason}}"],
    ),
    "exchange_delivered_order_items": (
        "get_order_details",
        ['/status == "exchange requested"', "/exchange_payment_method_id == {{payload.payment_method_id}}"],
    ),
    "return_delivered_order_items": (
        "get_order_details",
        ['/status == "return requested"', "/return_payment_method_id == {{payload.payment_method_id}}"],
    ),
    "modify_pending_order_address": (
        "get_order_details",
        [f"/address/{f} == {{{{payload.{f}}}}}" for f in ("address1", "address2", "city", "state", "country", "zip")],
    ),
    "modify_pending_order_items": (
        "get_order_details",
        [
            '/status == "pending (item modified)"',
            '/items any {"/item_id": "{{payload.new_item_ids[0]}}"}',
            "/payment_history grew_by 1",
        ],
    ),
    "modify_pending_order_payment": (
        "get_order_details",
        [
            '/payment_history any {"/payment_method_id": "{{payload.payment_method_id}}", "/transaction_type": "payment"}',
            "/payment_history grew_by 2",
        ],
    ),
    "modify_user_address": (
        "get_user_details",
        [f"/address/{f} == {{{{payload.{f}}}}}" for f in ("address1", "address2", "city", "state", "country", "zip")],
    ),
}
FAULTS = ("kill_after_commit", "internal_after_commit", "hang_after_commit", "drop_before_commit")


def policy() -> dict[str, Any]:
    """The proxy's policy file: how each write is read back."""
    tools = {}
    for write, (read, expect) in WRITES.items():
        key = "user_id" if read == "get_user_details" else "order_id"
        tools[write] = {"verify": {"tool": read, "args": {key: f"{{{{payload.{key}}}}}"}, "expect": expect}}
    return {"tools": tools}


def load_tau2(root: Path):
    """tau2-bench's retail tools and database, without its package `__init__`
    (which imports its LLM stack)."""
    os.environ.setdefault("TAU2_DATA_DIR", str(root / "data"))
    package = types.ModuleType("tau2")
    package.__path__ = [str(root / "src" / "tau2")]
    sys.modules["tau2"] = package
    from tau2.domains.retail.data_model import RetailDB
    from tau2.domains.retail.tools import RetailTools

    return RetailTools, RetailDB


def dumped(db) -> str:
    return json.dumps(db.model_dump(mode="json"), sort_keys=True)


def as_json(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    return value


# ---- serve: the retail tools over MCP stdio, with one fault ----


class Server:
    def __init__(self, args: argparse.Namespace) -> None:
        self.tools_cls, self.db_cls = load_tau2(args.tau2)
        self.state = args.state
        self.fault = args.fault
        self.log = args.log
        self.lock = threading.Lock()
        # Read once (a started server finds what the last one committed);
        # written after each write.
        self.db = self.db_cls.load(str(self.state))
        tools = self.tools_cls(self.db)
        self.listing = [self.schema(name, tool) for name, tool in tools.get_tools().items()]
        self.kinds = {name: tools.tool_type(name).value for name in tools.tools}

    @staticmethod
    def schema(name: str, tool: Any) -> dict[str, Any]:
        function = tool.openai_schema["function"]
        return {"name": name, "description": function.get("description", ""), "inputSchema": function["parameters"]}

    def fault_due(self) -> str | None:
        """This server's one fault, while it has not hit (once per state file)."""
        marker = self.state.with_suffix(".faulted")
        return None if marker.exists() else self.fault

    def spend_fault(self) -> None:
        self.state.with_suffix(".faulted").write_text("1")

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The answer to one `tools/call`: the fault hits the first write that
        the tool would carry out (one it refuses is answered as it is)."""
        if name not in self.kinds:
            return {"error": {"code": -32602, "message": f"no tool named {name}"}}
        write = self.kinds[name] == "write"
        with self.lock:
            fault = self.fault_due() if write else None
            try:
                value = getattr(self.tools_cls(self.db), name)(**arguments)
            except Exception as e:  # the tool's own refusal: an isError result
                self.record(name, False)
                return {"result": {"content": [{"type": "text", "text": f"Error: {e}"}], "isError": True}}
            if fault is not None:
                self.spend_fault()
            if fault == "drop_before_commit":
                self.record(name, False)
                os._exit(1)
            if write:
                tmp = self.state.with_suffix(".tmp")
                tmp.write_text(dumped(self.db))
                os.replace(tmp, self.state)
            self.record(name, True)
        if fault == "kill_after_commit":
            os._exit(1)
        if fault == "internal_after_commit":
            return {"error": {"code": -32603, "message": "internal error"}}
        if fault == "hang_after_commit":
            threading.Event().wait()
        value = as_json(value)
        result = {"content": [{"type": "text", "text": json.dumps(value)}], "isError": False}
        if isinstance(value, dict):
            result["structuredContent"] = value
        return {"result": result}

    def record(self, name: str, executed: bool) -> None:
        with self.log.open("a") as f:
            f.write(json.dumps({"tool": name, "executed": executed}) + "\n")

    def answer(self, message: dict[str, Any]) -> dict[str, Any] | None:
        if "id" not in message:
            return None
        method, params = message.get("method"), message.get("params") or {}
        if method == "initialize":
            reply: dict[str, Any] = {"result": {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "tau2-retail", "version": "1"},
            }}
        elif method == "tools/list":
            listing = []
            for tool in self.listing:
                if self.kinds[tool["name"]] == "read":
                    tool = {**tool, "annotations": {"readOnlyHint": True}}
                listing.append(tool)
            reply = {"result": {"tools": listing}}
        elif method == "tools/call":
            reply = self.call(params.get("name", ""), params.get("arguments") or {})
        elif method == "ping":
            reply = {"result": {}}
        else:
            reply = {"error": {"code": -32601, "message": f"no method {method}"}}
        return {"jsonrpc": "2.0", "id": message["id"], **reply}

    def serve(self) -> None:
        out = threading.Lock()

        def handle(message: dict[str, Any]) -> None:
            reply = self.answer(message)
            if reply is not None:
                with out:
                    sys.stdout.write(json.dumps(reply) + "\n")
                    sys.stdout.flush()

        for line in sys.stdin:
            if line.strip():
                threading.Thread(target=handle, args=(json.loads(line),), daemon=True).start()


# ---- replay: each task, straight and through the proxy ----


def gold(tools_cls, db_cls, db_path: Path, actions: list[dict[str, Any]]) -> tuple[str, list[bool]]:
    db = db_cls.load(str(db_path))
    tools = tools_cls(db)
    answered = []
    for action in actions:
        try:
            getattr(tools, action["name"])(**action["arguments"])
            answered.append(True)
        except Exception:
            answered.append(False)
    return dumped(db), answered


async def through_proxy(args, work: Path, fault: str, actions) -> list[dict[str, Any]]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    (work / "tools.json").write_text(json.dumps(policy()))
    server = [sys.executable, str(Path(__file__).resolve()), "serve", "--tau2", str(args.tau2),
              "--state", str(work / "db.json"), "--log", str(work / "calls.log"), "--fault", fault]
    proxy = ["mcp", "proxy", "--journal", str(work / "proxy.db"), "--backoff-ms", "10", "--timeout", "3",
             "--tools", str(work / "tools.json"), "--", *server]
    seen = []
    params = StdioServerParameters(command=args.recourse, args=proxy)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for action in actions:
            result = await session.call_tool(action["name"], action["arguments"])
            meta = (result.model_dump(by_alias=True).get("_meta") or {}).get("recourse/call", {})
            seen.append({"name": action["name"], "ok": not result.is_error, "call": meta})
    return seen


def replay(args: argparse.Namespace) -> int:
    import anyio

    tools_cls, db_cls = load_tau2(args.tau2)
    data = args.tau2 / "data" / "tau2" / "domains" / "retail"
    tasks = {t["id"]: t for t in json.loads((data / "tasks.json").read_text())}
    ids = json.loads((data / "split_tasks.json").read_text())[args.split]
    chosen = [tasks[i] for i in ids if any(a["name"] in WRITES for a in tasks[i]["evaluation_criteria"]["actions"] or [])]
    chosen = chosen[: args.tasks] if args.tasks else chosen
    exact, tally = 0, {}
    started = time.monotonic()
    for n, task in enumerate(chosen):
        actions = task["evaluation_criteria"]["actions"]
        fault = FAULTS[n % len(FAULTS)]
        want_db, want_ok = gold(tools_cls, db_cls, data / "db.json", actions)
        work = Path(tempfile.mkdtemp(prefix="tau2-"))
        shutil.copy(data / "db.json", work / "db.json")
        seen = anyio.run(through_proxy, args, work, fault, actions)
        # Read as the gold database is: the file as written, or as copied when no write ran.
        got_db = dumped(db_cls.load(str(work / "db.json")))
        log = [json.loads(line) for line in (work / "calls.log").read_text().splitlines()]
        runs = sum(1 for e in log if e["tool"] in WRITES and e["executed"])
        gold_runs = sum(1 for a, ok in zip(actions, want_ok) if a["name"] in WRITES and ok)
        answered = [s["ok"] for s in seen] == want_ok
        ok = got_db == want_db and runs == gold_runs and answered
        exact += ok
        for s in seen:
            if "verification" in s["call"]:
                key = f"{s['call'].get('outcome')}+{s['call']['verification']}"
                tally[key] = tally.get(key, 0) + 1
        print(f"task {task['id']:>4} {fault:<22} {'exact' if ok else 'NOT EXACT'}"
              f"  writes run {runs}/{gold_runs}  answers {'as gold' if answered else 'differ'}"
              f"  {[(s['name'], s['call'].get('outcome'), s['call'].get('verification')) for s in seen if s['name'] in WRITES]}",
              flush=True)
        if ok:
            shutil.rmtree(work)
    print(f"\n{exact} of {len(chosen)} tasks exact ({args.split} split, retail, one fault each) "
          f"in {time.monotonic() - started:.0f} s; writes by outcome+verification: {tally}")
    return 0 if exact == len(chosen) else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode")
    serve = sub.add_parser("serve")
    serve.add_argument("--tau2", type=Path, required=True)
    serve.add_argument("--state", type=Path, required=True)
    serve.add_argument("--log", type=Path, required=True)
    serve.add_argument("--fault", choices=FAULTS)
    run = sub.add_parser("replay")
    run.add_argument("--tau2", type=Path, required=True, help="a checkout of sierra-research/tau2-bench")
    run.add_argument("--split", default="test", choices=("test", "train", "base"))
    run.add_argument("--tasks", type=int, help="at most this many tasks (those with a write)")
    run.add_argument("--recourse", default=str(Path(__file__).resolve().parents[1] / "target" / "debug" / "recourse"))
    args = parser.parse_args()
    if args.mode == "serve":
        Server(args).serve()
    elif args.mode == "replay":
        sys.exit(replay(args))
    else:
        parser.print_help()


if __name__ == "__main__":
    main()
