"""A scripted MCP server for the edges a proxy must get right, over stdio or
Streamable HTTP, with no SDK between the script and the wire.

    python scripted.py --script NAME --log FILE [--http PORT [--tls CERT KEY]] [--protocol VERSION]

Two tools: ``write`` (no annotations: not idempotent, as MCP defaults) and
``read`` (``readOnlyHint``). Every ``tools/call`` that reaches the server is
appended to ``--log`` as one JSON line ``{"at": epoch_seconds, "tool",
"executed": bool, "answer": what it was told}``; a ``write`` that executed is
one that a real server would have committed. The log outlives the process,
so a script that kills the server (``drop``) is not repeated by the server
started again after it.

Scripts (each fault hits the first call of a tool; later calls succeed):

- ``ok``: every call succeeds.
- ``drop``: the first ``write`` commits, then the process exits (stdio) or
  the connection closes (HTTP) before any answer.
- ``internal_after_commit``: the first ``write`` commits, then answers the
  JSON-RPC error ``-32603``.
- ``rate_limited``: the first call of each tool is refused, not executed,
  with JSON-RPC ``-32023`` and ``data.retryAfterMs`` 1500.
- ``not_retryable``: ``write`` answers ``isError`` with the SEP #3313
  ``toolFailure`` metadata, ``retryable: false``; executed, nothing changes.
- ``unavailable`` (HTTP only): the first three ``tools/call`` requests get
  HTTP 503, not executed.
- ``too_many`` (HTTP only): the first ``tools/call`` request gets HTTP 429
  with ``Retry-After: 2``, not executed.
- ``slow``: ``write`` commits after 2 s (for a client that cancels).
- ``grow``: a third tool, ``grow``, adds a tool ``grown``
  (``readOnlyHint``) and a prompt ``grown``, then announces both list
  changes — on the session up to 2025-11-25; from 2026-07-28 on each
  ``subscriptions/listen`` stream that asked for them (the server answers
  ``subscriptions/listen`` with its acknowledgment, and declares
  ``listChanged`` for tools and prompts). Over HTTP the session's
  notifications go on the stream a ``GET /mcp`` opens (``initialize``
  answers with an ``Mcp-Session-Id`` up to 2025-11-25), and a
  ``subscriptions/listen`` request is answered with an event stream that
  stays open until the client cancels it.

- ``watch``: one resource, ``note://count`` (the notes written, as text),
  that a client may subscribe to (``resources.subscribe``): each ``write``
  that executes sends ``notifications/resources/updated`` for it while it
  is subscribed to. ``resources/subscribe`` and ``resources/unsubscribe``
  are logged as calls of those names (``answer``: the URI). A ``write``
  of the text ``exit`` goes away (as ``drop`` does) without executing, so
  that a client sees the server started again.

The server answers ``initialize`` with the version the client asked for,
or with ``--protocol VERSION``.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SCRIPTS = (
    "ok",
    "drop",
    "internal_after_commit",
    "rate_limited",
    "not_retryable",
    "unavailable",
    "too_many",
    "slow",
    "grow",
    "watch",
)
HTTP_ONLY = ("unavailable", "too_many")
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
TOOLS = [
    {
        "name": "write",
        "description": "Writes a note; each call that executes writes one.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    },
    {
        "name": "read",
        "description": "Reads how many notes were written.",
        "inputSchema": {"type": "object", "properties": {}},
        "annotations": {"readOnlyHint": True},
    },
]


GROW = {
    "name": "grow",
    "description": "Adds a tool and a prompt, and announces both.",
    "inputSchema": {"type": "object", "properties": {}},
}
GROWN = {
    "name": "grown",
    "description": "The tool grow added.",
    "inputSchema": {"type": "object", "properties": {}},
    "annotations": {"readOnlyHint": True},
}
GROWN_PROMPT = {"name": "grown", "description": "The prompt grow added."}
COUNT_URI = "note://count"
COUNT = {"uri": COUNT_URI, "name": "count", "mimeType": "text/plain"}
# What each list change is called on the wire and in a listen filter.
CHANGES = {
    "tools": ("notifications/tools/list_changed", "toolsListChanged"),
    "prompts": ("notifications/prompts/list_changed", "promptsListChanged"),
}


class Drop(Exception):
    """The server goes away before answering."""


class Script:
    def __init__(self, name: str, log: Path, protocol: str | None) -> None:
        self.name = name
        self.log = log
        self.lock = threading.Lock()
        self.protocol = protocol
        self.tools = [*TOOLS, GROW] if name == "grow" else list(TOOLS)
        self.prompts: list[dict[str, Any]] = []
        # Open ``subscriptions/listen`` streams: request id -> accepted filter.
        self.streams: dict[Any, dict[str, Any]] = {}
        # Writes one message to the client (set by the stdio server).
        self.send: Any = None
        # The resources a client subscribed to (``watch``).
        self.subscribed: set[str] = set()

    def capabilities(self) -> dict[str, Any]:
        if self.name == "watch":
            return {"tools": {}, "resources": {"subscribe": True}}
        if self.name != "grow":
            return {"tools": {}}
        return {"tools": {"listChanged": True}, "prompts": {"listChanged": True}}

    def listen(self, request_id: Any, requested: dict[str, Any]) -> None:
        """Opens a stream for the changes asked for that the server announces."""
        accepted = {key: True for _, key in CHANGES.values() if requested.get(key)}
        with self.lock:
            self.streams[request_id] = accepted
        params = {"notifications": accepted, "_meta": {SUBSCRIPTION_ID: request_id}}
        self.send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": params})

    def announce(self, kind: str) -> None:
        """Tells the client its ``kind`` list changed, as its version wants."""
        method, key = CHANGES[kind]
        if self.protocol is None or self.protocol < "2026-07-28":
            self.send({"jsonrpc": "2.0", "method": method})
            return
        with self.lock:
            streams = [i for i, accepted in self.streams.items() if accepted.get(key)]
        for request_id in streams:
            self.send({"jsonrpc": "2.0", "method": method, "params": {"_meta": {SUBSCRIPTION_ID: request_id}}})

    def grow(self) -> dict[str, Any]:
        with self.lock:
            if GROWN not in self.tools:
                self.tools.append(GROWN)
                self.prompts.append(GROWN_PROMPT)
            self.record("grow", True, "ok")
        self.announce("tools")
        self.announce("prompts")
        return {"result": result({"grown": True})}

    def entries(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line]

    def record(self, tool: str, executed: bool, answer: str) -> None:
        with self.log.open("a") as f:
            f.write(json.dumps({"at": time.time(), "tool": tool, "executed": executed, "answer": answer}) + "\n")

    def calls_of(self, tool: str) -> int:
        return sum(1 for e in self.entries() if e["tool"] == tool)

    def written(self) -> int:
        return sum(1 for e in self.entries() if e["tool"] == "write" and e["executed"])

    def http_refusal(self) -> tuple[int, dict[str, str]] | None:
        """An HTTP status to answer a ``tools/call`` with before it runs."""
        with self.lock:
            refused = sum(1 for e in self.entries() if e["answer"].startswith("http "))
            if self.name == "unavailable" and refused < 3:
                self.record("?", False, "http 503")
                return 503, {}
            if self.name == "too_many" and refused < 1:
                self.record("?", False, "http 429")
                return 429, {"Retry-After": "2"}
        return None

    def call(self, tool: str) -> dict[str, Any]:
        """The JSON-RPC ``result`` or ``error`` for one call (``Drop`` to go away)."""
        if tool == "grow":
            return self.grow()
        with self.lock:
            first = self.calls_of(tool) == 0
            if tool not in (t["name"] for t in self.tools):
                return {"error": {"code": -32602, "message": f"no tool named {tool}"}}
            if tool == "grown":
                self.record(tool, True, "ok")
                return {"result": result({"grown": True})}
            if self.name == "rate_limited" and first:
                self.record(tool, False, "-32023")
                return {"error": {"code": -32023, "message": "rate limited", "data": {"retryAfterMs": 1500}}}
            if tool == "read":
                self.record(tool, True, "ok")
                return {"result": result({"written": self.written()})}
            if self.name == "drop" and first:
                self.record(tool, True, "dropped")
                raise Drop
            if self.name == "internal_after_commit" and first:
                self.record(tool, True, "-32603")
                return {"error": {"code": -32603, "message": "internal error"}}
            if self.name == "not_retryable":
                self.record(tool, True, "isError retryable:false")
                failure = {
                    "class": "capability",
                    "code": "quota_exhausted",
                    "retryable": False,
                    "agentGuidance": "The monthly quota is used up; do not call again this month.",
                }
                answer = result({"error": "quota exhausted"}, is_error=True)
                answer["_meta"] = {"io.modelcontextprotocol/toolFailure": failure}
                return {"result": answer}
        if self.name == "slow":
            time.sleep(2)
        with self.lock:
            self.record(tool, True, "ok")
            reply = {"result": result({"written": self.written()})}
            watched = tool == "write" and COUNT_URI in self.subscribed
        if watched:
            self.send({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": COUNT_URI}})
        return reply

    def resources(self, method: str, uri: str) -> dict[str, Any]:
        """The answer to a ``resources/*`` request of ``watch``."""
        if method == "resources/list":
            return {"result": {"resources": [COUNT]}}
        if uri != COUNT_URI:
            return {"error": {"code": -32002, "message": f"no resource {uri}"}}
        with self.lock:
            if method == "resources/read":
                return {"result": {"contents": [{**COUNT, "text": str(self.written())}]}}
            if method == "resources/subscribe":
                self.subscribed.add(uri)
            else:
                self.subscribed.discard(uri)
            self.record(method, True, uri)
        return {"result": {}}


def result(content: dict[str, Any], is_error: bool = False) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": json.dumps(content)}],
        "structuredContent": content,
        "isError": is_error,
    }


def answer(script: Script, message: dict[str, Any]) -> dict[str, Any] | None:
    """The answer to one JSON-RPC message; ``None`` for a notification, or
    for a request answered later (``subscriptions/listen``)."""
    method = message.get("method")
    params = message.get("params") or {}
    if "id" not in message:
        if method == "notifications/cancelled":
            with script.lock:
                script.streams.pop(params.get("requestId"), None)
        return None
    if method == "initialize":
        script.protocol = script.protocol or params.get("protocolVersion", "2025-11-25")
        reply = {
            "result": {
                "protocolVersion": script.protocol,
                "capabilities": script.capabilities(),
                "serverInfo": {"name": "scripted", "version": "1.0.0"},
            }
        }
    elif method == "ping":
        reply = {"result": {}}
    elif method == "tools/list":
        with script.lock:
            reply = {"result": {"tools": list(script.tools)}}
    elif method == "prompts/list" and script.name == "grow":
        with script.lock:
            reply = {"result": {"prompts": list(script.prompts)}}
    elif method == "subscriptions/listen" and script.name == "grow":
        script.listen(message["id"], params.get("notifications") or {})
        return None
    elif method == "tools/call":
        exits = (params.get("arguments") or {}).get("text") == "exit"
        if script.name == "watch" and params.get("name") == "write" and exits:
            script.record("write", False, "exited")
            raise Drop
        reply = script.call(params.get("name", ""))
    elif script.name == "watch" and method in (
        "resources/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
    ):
        reply = script.resources(method, params.get("uri", ""))
    else:
        reply = {"error": {"code": -32601, "message": f"no method {method}"}}
    return {"jsonrpc": "2.0", "id": message["id"], **reply}


def serve_stdio(script: Script) -> None:
    lock = threading.Lock()

    def send(message: dict[str, Any]) -> None:
        with lock:
            sys.stdout.write(json.dumps(message) + "\n")
            sys.stdout.flush()

    script.send = send

    def handle(message: dict[str, Any]) -> None:
        try:
            reply = answer(script, message)
        except Drop:
            os._exit(1)
        if reply is not None:
            send(reply)

    for line in sys.stdin:
        if line.strip():
            # Each request on its own thread: a slow call holds no other.
            threading.Thread(target=handle, args=(json.loads(line),), daemon=True).start()


def serve_http(script: Script, port: int, tls: list[str] | None = None) -> None:
    # Open server-to-client streams, one queue each; what the script sends
    # goes to all of them (one proxy is connected at a time).
    streams: list[queue.Queue] = []
    streams_lock = threading.Lock()

    def send(message: dict[str, Any]) -> None:
        with streams_lock:
            for stream in streams:
                stream.put(message)

    script.send = send

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def stream(self, open_while=lambda: True, then=lambda: None) -> None:
            """Answers with an event stream carrying what the script sends,
            from after ``then()`` runs, while ``open_while()`` holds and the
            client stays."""
            events: queue.Queue = queue.Queue()
            with streams_lock:
                streams.append(events)
            self.close_connection = True
            try:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.flush()
                then()
                while open_while():
                    try:
                        message = events.get(timeout=0.2)
                    except queue.Empty:
                        continue
                    self.wfile.write(f"data: {json.dumps(message)}\n\n".encode())
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass
            finally:
                with streams_lock:
                    streams.remove(events)

        def do_POST(self) -> None:
            if self.path != "/mcp":
                self.send_error(404)
                return
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            message = json.loads(body)
            if message.get("method") == "tools/call":
                refusal = script.http_refusal()
                if refusal is not None:
                    status, headers = refusal
                    self.send_response(status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
            if message.get("method") == "subscriptions/listen" and script.name == "grow":
                request_id = message["id"]
                self.stream(
                    open_while=lambda: request_id in script.streams,
                    then=lambda: answer(script, message),
                )
                return
            try:
                reply = answer(script, message)
            except Drop:
                self.close_connection = True
                self.connection.shutdown(2)
                return
            if reply is None:
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            data = json.dumps(reply).encode()
            self.send_response(200)
            if message.get("method") == "initialize" and script.protocol < "2026-07-28":
                self.send_header("Mcp-Session-Id", "scripted-session")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/mcp" and script.name in ("grow", "watch"):
                self.stream()
                return
            # No server-to-client stream.
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_DELETE(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    scheme = "http"
    if tls:
        import ssl

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tls[0], tls[1])
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    print(f"listening on {scheme}://127.0.0.1:{server.server_address[1]}/mcp", flush=True)
    server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--script", choices=SCRIPTS, required=True)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP at /mcp (0 picks a port)")
    parser.add_argument("--protocol", metavar="VERSION", help="the version to answer initialize with")
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"), help="with --http: serve https")
    args = parser.parse_args()
    script = Script(args.script, args.log, args.protocol)
    if args.http is None:
        if args.script in HTTP_ONLY:
            parser.error(f"--script {args.script} needs --http")
        serve_stdio(script)
    else:
        serve_http(script, args.http, args.tls)


if __name__ == "__main__":
    main()
