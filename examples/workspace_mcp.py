"""A small MCP server whose writes can lose their answer on purpose: a file
system, a trading account, messages, support tickets, a profile and a social
feed, in Python's standard library — for trying read-back verification.

    python3 workspace_mcp.py --state FILE [--fault KIND] [--log FILE] [--http PORT]

Its state lives in ``--state`` (created with the seed below when missing), so
a server killed mid-write and started again by the proxy finds what it
committed. Writes carry no annotations (MCP's default: not idempotent); reads
are ``readOnlyHint``.

``--fault KIND`` hits the first call of a write tool, once per state file:

- ``kill_after_commit``: commits, then exits (over HTTP: closes the connection) before answering;
- ``internal_after_commit``: commits, then answers the JSON-RPC error ``-32603``;
- ``hang_after_commit``: commits, then never answers;
- ``drop_before_commit``: exits (over HTTP: closes the connection) before doing anything;
- ``hang_before_commit``: never answers, and never commits.

``--log FILE`` appends one JSON line per ``tools/call``: ``{"tool",
"arguments", "executed"}``, where ``executed`` says the call changed (or read)
the state.

The tools (reads answer JSON: as ``structuredContent`` when it is an object,
and always as the text of the one content item):

- files: ``touch {file_name, folder?}``, ``rm {file_name}``, ``cd {folder}``,
  ``echo {content, file_name?}`` (to the file, or printed); reads ``pwd``,
  ``ls {path?}`` (a bare array of names), ``cat {file_name}`` (an ``isError``
  text when there is no such file);
- trading: ``place_order {symbol, amount}`` (the server makes the order id),
  ``cancel_order {order_id}``, ``deposit {amount}``, ``pay_bill {bill_id}``;
  reads ``list_orders``, ``get_order {order_id}`` (``ORDER_NOT_FOUND``),
  ``get_balance``, ``get_bill {bill_id}``;
- messages: ``send_message {to, text}``; read ``list_messages {to?}``;
- tickets: ``open_ticket {ticket_id, title}``, ``update_ticket {ticket_id,
  status}``, ``escalate_ticket {ticket_id}`` (priority 3 → 2 → 1); read
  ``get_ticket {ticket_id}`` (``TICKET_NOT_FOUND``);
- profile: ``set_phone {phone}``, ``clear_email``; read ``get_profile``;
- feed: ``post {text}``, ``like_post {post_id}``; reads ``get_feed``,
  ``get_post {post_id}``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

FAULTS = ("kill_after_commit", "internal_after_commit", "hang_after_commit", "drop_before_commit", "hang_before_commit")

SEED: dict[str, Any] = {
    "cwd": "/workspace",
    "dirs": ["/workspace", "/workspace/docs", "/workspace/temp"],
    "files": {"/workspace/notes.txt": "hello", "/workspace/todo.txt": ""},
    "orders": [{"order_id": "ORD-1", "symbol": "NVDA", "amount": 120, "status": "open"}],
    "next_order": 2,
    "balance": 0,
    "bills": {"B-1": 42.5},
    "messages": [{"to": "USR003", "text": "hi"}],
    "tickets": {"T-1": {"ticket_id": "T-1", "title": "printer", "status": "open", "priority": 3}},
    "profile": {"name": "Ada", "email": "ada@example.com"},
    "feed": [{"post_id": "P-1", "text": "hello world", "likes": 0}],
    "faulted": False,
}


def tool(name: str, description: str, required: dict[str, str], optional: dict[str, str] | None = None,
         read: bool = False) -> dict[str, Any]:
    properties = {k: {"type": v} for k, v in {**required, **(optional or {})}.items()}
    entry: dict[str, Any] = {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties, "required": list(required)},
    }
    if read:
        entry["annotations"] = {"readOnlyHint": True}
    return entry


TOOLS = [
    tool("touch", "Creates an empty file in the folder (the working directory by default).",
         {"file_name": "string"}, {"folder": "string"}),
    tool("rm", "Removes a file from the working directory.", {"file_name": "string"}),
    tool("cd", "Changes the working directory.", {"folder": "string"}),
    tool("echo", "Writes content to a file in the working directory, or prints it.",
         {"content": "string"}, {"file_name": "string"}),
    tool("pwd", "The working directory.", {}, read=True),
    tool("ls", "The names in a folder (the working directory by default).", {}, {"path": "string"}, read=True),
    tool("cat", "A file's content.", {"file_name": "string"}, read=True),
    tool("place_order", "Places an order; the server makes its id.", {"symbol": "string", "amount": "number"}),
    tool("cancel_order", "Cancels an order.", {"order_id": "string"}),
    tool("deposit", "Adds to the balance.", {"amount": "number"}),
    tool("pay_bill", "Pays a bill in full.", {"bill_id": "string"}),
    tool("list_orders", "Every order.", {}, read=True),
    tool("get_order", "One order.", {"order_id": "string"}, read=True),
    tool("get_balance", "The balance.", {}, read=True),
    tool("get_bill", "What is due on a bill.", {"bill_id": "string"}, read=True),
    tool("send_message", "Sends a message.", {"to": "string", "text": "string"}),
    tool("list_messages", "The messages sent (to one user, if given).", {}, {"to": "string"}, read=True),
    tool("open_ticket", "Opens a support ticket.", {"ticket_id": "string", "title": "string"}),
    tool("update_ticket", "Sets a ticket's status.", {"ticket_id": "string", "status": "string"}),
    tool("escalate_ticket", "Raises a ticket's priority one step (3 → 2 → 1).", {"ticket_id": "string"}),
    tool("get_ticket", "One ticket.", {"ticket_id": "string"}, read=True),
    tool("set_phone", "Sets the profile's phone number.", {"phone": "string"}),
    tool("clear_email", "Removes the profile's email address.", {}),
    tool("get_profile", "The profile.", {}, read=True),
    tool("post", "Posts to the feed.", {"text": "string"}),
    tool("like_post", "Likes a post.", {"post_id": "string"}),
    tool("get_feed", "The feed, newest last.", {}, read=True),
    tool("get_post", "One post.", {"post_id": "string"}, read=True),
]
READS = {t["name"] for t in TOOLS if t.get("annotations")}


class Failure(Exception):
    """A tool's own error: an ``isError`` result, with a code when it has one."""

    def __init__(self, text: str, code: str | None = None) -> None:
        super().__init__(text)
        self.code = code


class Drop(Exception):
    """The server goes away before answering."""


def hang() -> None:
    threading.Event().wait()


class Workspace:
    def __init__(self, state: Path, fault: str | None, log: Path | None) -> None:
        self.path = state
        self.fault = fault
        self.log = log
        self.lock = threading.Lock()

    def load(self) -> dict[str, Any]:
        if not self.path.exists():
            return json.loads(json.dumps(SEED))
        return json.loads(self.path.read_text())

    def save(self, state: dict[str, Any]) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state))
        os.replace(tmp, self.path)

    def record(self, name: str, arguments: dict[str, Any], executed: bool) -> None:
        if self.log is not None:
            with self.log.open("a") as f:
                f.write(json.dumps({"tool": name, "arguments": arguments, "executed": executed}) + "\n")

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The JSON-RPC ``result`` or ``error`` of one ``tools/call``."""
        if name not in {t["name"] for t in TOOLS}:
            return {"error": {"code": -32602, "message": f"no tool named {name}"}}
        with self.lock:
            state = self.load()
            fault = None
            if name not in READS and self.fault and not state["faulted"]:
                fault = self.fault
                state["faulted"] = True
                self.save(state)
        if fault in ("drop_before_commit", "hang_before_commit"):
            self.record(name, arguments, False)
            if fault == "hang_before_commit":
                hang()
            raise Drop
        with self.lock:
            state = self.load()
            try:
                answer = act(state, name, arguments)
            except Failure as failure:
                self.record(name, arguments, False)
                return {"result": failed(failure)}
            self.save(state)
            self.record(name, arguments, True)
        if fault == "kill_after_commit":
            raise Drop
        if fault == "internal_after_commit":
            return {"error": {"code": -32603, "message": "internal error"}}
        if fault == "hang_after_commit":
            hang()
        return {"result": answered(answer)}


def answered(value: Any) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": json.dumps(value)}], "isError": False}
    if isinstance(value, dict):
        result["structuredContent"] = value
    return result


def failed(failure: Failure) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": str(failure)}], "isError": True}
    if failure.code:
        meta = {"class": "capability", "code": failure.code, "retryable": False}
        result["_meta"] = {"io.modelcontextprotocol/toolFailure": meta}
    return result


def act(state: dict[str, Any], name: str, a: dict[str, Any]) -> Any:
    """Carries out one tool call on ``state`` (changing it for a write)."""
    return ACTIONS[name](state, a)


def in_folder(state: dict[str, Any], folder: str | None) -> str:
    if not folder:
        return state["cwd"]
    path = folder if folder.startswith("/") else f"{state['cwd']}/{folder}"
    if path not in state["dirs"]:
        raise Failure(f"no such folder: {folder}")
    return path


def ls(state: dict[str, Any], a: dict[str, Any]) -> list[str]:
    folder = in_folder(state, a.get("path"))
    names = [p.rsplit("/", 1)[1] for p in [*state["files"], *state["dirs"]] if p.rsplit("/", 1)[0] == folder]
    return sorted(names)


def touch(state: dict[str, Any], a: dict[str, Any]) -> Any:
    path = f"{in_folder(state, a.get('folder'))}/{a['file_name']}"
    state["files"].setdefault(path, "")
    return {"created": path}


def rm(state: dict[str, Any], a: dict[str, Any]) -> Any:
    path = f"{state['cwd']}/{a['file_name']}"
    if state["files"].pop(path, None) is None:
        raise Failure(f"rm: {a['file_name']}: No such file or directory")
    return {"removed": path}


def cd(state: dict[str, Any], a: dict[str, Any]) -> Any:
    state["cwd"] = in_folder(state, a["folder"])
    return {"cwd": state["cwd"]}


def echo(state: dict[str, Any], a: dict[str, Any]) -> Any:
    if not a.get("file_name"):
        return {"printed": a["content"]}
    path = f"{state['cwd']}/{a['file_name']}"
    state["files"][path] = a["content"]
    return {"written": path}


def cat(state: dict[str, Any], a: dict[str, Any]) -> Any:
    path = f"{state['cwd']}/{a['file_name']}"
    if path not in state["files"]:
        raise Failure(f"cat: {a['file_name']}: No such file or directory")
    return {"content": state["files"][path]}


def find(items: dict[str, Any] | list[dict[str, Any]], key: str, value: str, code: str) -> dict[str, Any]:
    found = items.get(value) if isinstance(items, dict) else next((i for i in items if i[key] == value), None)
    if found is None:
        raise Failure(f"no {key} {value}", code)
    return found


def place_order(state: dict[str, Any], a: dict[str, Any]) -> Any:
    order = {"order_id": f"ORD-{state['next_order']}", "symbol": a["symbol"], "amount": a["amount"], "status": "open"}
    state["next_order"] += 1
    state["orders"].append(order)
    return order


def cancel_order(state: dict[str, Any], a: dict[str, Any]) -> Any:
    order = find(state["orders"], "order_id", a["order_id"], "ORDER_NOT_FOUND")
    order["status"] = "cancelled"
    return order


def deposit(state: dict[str, Any], a: dict[str, Any]) -> Any:
    state["balance"] += a["amount"]
    return {"balance": state["balance"]}


def pay_bill(state: dict[str, Any], a: dict[str, Any]) -> Any:
    if a["bill_id"] not in state["bills"]:
        raise Failure(f"no bill {a['bill_id']}", "BILL_NOT_FOUND")
    state["bills"][a["bill_id"]] = 0
    return {"bill_id": a["bill_id"], "due": 0}


def open_ticket(state: dict[str, Any], a: dict[str, Any]) -> Any:
    ticket = {"ticket_id": a["ticket_id"], "title": a["title"], "status": "open", "priority": 3}
    state["tickets"].setdefault(a["ticket_id"], ticket)
    return state["tickets"][a["ticket_id"]]


def update_ticket(state: dict[str, Any], a: dict[str, Any]) -> Any:
    ticket = find(state["tickets"], "ticket_id", a["ticket_id"], "TICKET_NOT_FOUND")
    ticket["status"] = a["status"]
    return ticket


def escalate_ticket(state: dict[str, Any], a: dict[str, Any]) -> Any:
    ticket = find(state["tickets"], "ticket_id", a["ticket_id"], "TICKET_NOT_FOUND")
    ticket["priority"] = max(1, ticket["priority"] - 1)
    return ticket


def clear_email(state: dict[str, Any], _: dict[str, Any]) -> Any:
    state["profile"].pop("email", None)
    return state["profile"]


def post(state: dict[str, Any], a: dict[str, Any]) -> Any:
    entry = {"post_id": f"P-{len(state['feed']) + 1}", "text": a["text"], "likes": 0}
    state["feed"].append(entry)
    return entry


def like_post(state: dict[str, Any], a: dict[str, Any]) -> Any:
    entry = find(state["feed"], "post_id", a["post_id"], "POST_NOT_FOUND")
    entry["likes"] += 1
    return entry


def messages(state: dict[str, Any], a: dict[str, Any]) -> Any:
    sent = [m for m in state["messages"] if not a.get("to") or m["to"] == a["to"]]
    return {"messages": sent, "count": len(sent)}


def feed(state: dict[str, Any], _: dict[str, Any]) -> Any:
    latest = state["feed"][-1]["text"] + " · just now" if state["feed"] else None
    return {"latest": latest, "posts": state["feed"]}


ACTIONS = {
    "touch": touch,
    "rm": rm,
    "cd": cd,
    "echo": echo,
    "pwd": lambda s, _: {"cwd": s["cwd"]},
    "ls": ls,
    "cat": cat,
    "place_order": place_order,
    "cancel_order": cancel_order,
    "deposit": deposit,
    "pay_bill": pay_bill,
    "list_orders": lambda s, _: {"orders": s["orders"]},
    "get_order": lambda s, a: find(s["orders"], "order_id", a["order_id"], "ORDER_NOT_FOUND"),
    "get_balance": lambda s, _: {"balance": s["balance"]},
    "get_bill": lambda s, a: {"bill_id": a["bill_id"], "due": find(s["bills"], "bill_id", a["bill_id"], "BILL_NOT_FOUND")},
    "send_message": lambda s, a: s["messages"].append({"to": a["to"], "text": a["text"]}) or {"sent": True},
    "list_messages": messages,
    "open_ticket": open_ticket,
    "update_ticket": update_ticket,
    "escalate_ticket": escalate_ticket,
    "get_ticket": lambda s, a: find(s["tickets"], "ticket_id", a["ticket_id"], "TICKET_NOT_FOUND"),
    "set_phone": lambda s, a: s["profile"].update(phone=a["phone"]) or s["profile"],
    "clear_email": clear_email,
    "get_profile": lambda s, _: s["profile"],
    "post": post,
    "like_post": like_post,
    "get_feed": feed,
    "get_post": lambda s, a: find(s["feed"], "post_id", a["post_id"], "POST_NOT_FOUND"),
}


def answer(workspace: Workspace, message: dict[str, Any]) -> dict[str, Any] | None:
    """The answer to one JSON-RPC message (``None`` for a notification)."""
    if "id" not in message:
        return None
    method = message.get("method")
    params = message.get("params") or {}
    if method == "initialize":
        reply: dict[str, Any] = {"result": {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "workspace", "version": "1.0.0"},
        }}
    elif method == "ping":
        reply = {"result": {}}
    elif method == "tools/list":
        reply = {"result": {"tools": TOOLS}}
    elif method == "tools/call":
        reply = workspace.call(params.get("name", ""), params.get("arguments") or {})
    else:
        reply = {"error": {"code": -32601, "message": f"no method {method}"}}
    return {"jsonrpc": "2.0", "id": message["id"], **reply}


def serve_stdio(workspace: Workspace) -> None:
    lock = threading.Lock()

    def handle(message: dict[str, Any]) -> None:
        try:
            reply = answer(workspace, message)
        except Drop:
            os._exit(1)
        if reply is not None:
            with lock:
                sys.stdout.write(json.dumps(reply) + "\n")
                sys.stdout.flush()

    for line in sys.stdin:
        if line.strip():
            # Each request on its own thread: one that hangs holds no other.
            threading.Thread(target=handle, args=(json.loads(line),), daemon=True).start()


def serve_http(workspace: Workspace, port: int) -> None:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def empty(self, status: int) -> None:
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            if self.path != "/mcp":
                self.empty(404)
                return
            message = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            try:
                reply = answer(workspace, message)
            except Drop:
                self.close_connection = True
                self.connection.shutdown(2)
                return
            if reply is None:
                self.empty(202)
                return
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self.empty(405)

        def do_DELETE(self) -> None:
            self.empty(200)

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    print(f"listening on http://127.0.0.1:{server.server_address[1]}/mcp", flush=True)
    server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state", type=Path, required=True, help="the state file (seeded when missing)")
    parser.add_argument("--fault", choices=FAULTS, help="what happens to the first write")
    parser.add_argument("--log", type=Path, help="append each tools/call as a JSON line")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP at /mcp (0 picks a port)")
    args = parser.parse_args()
    workspace = Workspace(args.state, args.fault, args.log)
    if args.http is None:
        serve_stdio(workspace)
    else:
        serve_http(workspace, args.http)


if __name__ == "__main__":
    main()
