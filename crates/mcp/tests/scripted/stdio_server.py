#!/usr/bin/env python3
"""A scripted MCP server over stdio, for recourse's MCP tests (standard library only).

Usage: stdio_server.py DIR

Every tools/call of a tool T first "commits" (appends a line to DIR/T.calls),
then answers as T's script says for that call (the first, second, ... call).
The tests read DIR/T.calls to see how often each tool really ran.
"""

import datetime
import json
import os
import sys

CALLS_DIR = sys.argv[1]


def text(t, is_error=True):
    return {"content": [{"type": "text", "text": t}], "isError": is_error}


OK = {"content": [{"type": "text", "text": "done"}], "structuredContent": {"ok": True}}


def rpc_error(code, message, data=None):
    error = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return ("error", error)


def result(value):
    return ("result", value)


def in_seconds(seconds):
    at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=seconds)
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


# name -> (idempotentHint, [answer for call 1, call 2, ...]); the last answer repeats.
TOOLS = {
    # A third-party retail server that commits the write, then answers -32603.
    "modify_user_address": (False, [lambda: rpc_error(-32603, "Internal error")]),
    "cancel_pending_order": (
        False,
        [
            lambda: rpc_error(-32603, "Internal error"),
            lambda: result(text("order #W123 is not pending")),
        ],
    ),
    "get_order": (True, [lambda: rpc_error(-32603, "Internal error"), lambda: result(OK)]),
    "header_mismatch": (True, [lambda: rpc_error(-32020, "Mcp-Method header does not match")]),
    "missing_capability": (
        True,
        [lambda: rpc_error(-32021, "Missing required client capability",
                           {"requiredCapabilities": {"elicitation": {}}})],
    ),
    "unsupported_version": (
        True,
        [lambda: rpc_error(-32022, "Unsupported protocol version",
                           {"requested": "2026-07-28", "supported": ["2025-06-18"]})],
    ),
    "rate_limited": (
        False,
        [lambda: rpc_error(-32023, "Rate limited", {"retryAfterMs": 1500}), lambda: result(OK)],
    ),
    "needs_confirmation": (
        False,
        [lambda: result({"resultType": "input_required",
                         "inputRequests": {"roots": {"method": "roots/list"}},
                         "requestState": "confirm-1"})],
    ),
    "flaky_upstream": (True, [lambda: result(text("upstream 503, try later")), lambda: result(OK)]),
    "flaky_write": (False, [lambda: result(text("upstream 503, try later")), lambda: result(OK)]),
    "bad_timezone": (True, [lambda: result(text("Invalid timezone: America/NewYork"))]),
    "quota": (
        True,
        [
            lambda: result(dict(text("something went wrong"), _meta={
                "io.modelcontextprotocol/toolFailure": {
                    "class": "RATE_LIMIT", "code": "QUOTA", "retryable": True,
                    "retryNotBefore": in_seconds(5),
                }})),
            lambda: result(OK),
        ],
    ),
}


def commit(name):
    path = os.path.join(CALLS_DIR, name + ".calls")
    with open(path, "a") as f:
        f.write("call\n")
    with open(path) as f:
        return sum(1 for _ in f)


def tools_list():
    return {
        "tools": [
            {
                "name": name,
                "inputSchema": {"type": "object"},
                "annotations": {"idempotentHint": idempotent, "readOnlyHint": False},
            }
            for name, (idempotent, _) in TOOLS.items()
        ]
    }


def answer(request):
    method = request.get("method")
    if method == "initialize":
        return result({
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "scripted", "version": "1"},
        })
    if method == "tools/list":
        return result(tools_list())
    if method == "tools/call":
        name = request["params"]["name"]
        if name not in TOOLS:
            return rpc_error(-32602, "unknown tool " + name)
        script = TOOLS[name][1]
        n = commit(name)
        return script[min(n, len(script)) - 1]()
    if method == "ping":
        return result({})
    return rpc_error(-32601, "method not found: " + str(method))


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue  # a notification, or a reply to us
        kind, value = answer(message)
        reply = {"jsonrpc": "2.0", "id": message["id"], kind: value}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


main()
