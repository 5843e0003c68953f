"""One `write` through an MCP proxy over Streamable HTTP, then one `read`,
with the official MCP Python SDK; prints what the client was told as JSON.

    python mcp_fault_client.py URL PREFIX

PREFIX is what the proxy puts before the upstream's tool names ("" for
recourse with one upstream, "up/" for mcp-proxy's backend "up"). Run by
bench/mcp-proxy.sh."""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client

FAILURE = "io.modelcontextprotocol/toolFailure"


def told(result: Any) -> dict[str, Any]:
    meta = result.model_dump(by_alias=True).get("_meta") or {}
    failure = meta.get(FAILURE) or {}
    text = " ".join(c.text for c in result.content if getattr(c, "text", None))
    return {
        "is_error": bool(result.is_error),
        "code": failure.get("code"),
        "retryable": failure.get("retryable"),
        "text": text[:160],
    }


async def call(session: ClientSession, name: str, args: dict[str, Any]) -> dict[str, Any]:
    try:
        with anyio.fail_after(60):
            return told(await session.call_tool(name, args))
    except MCPError as e:
        return {"jsonrpc_error": e.code, "text": e.message[:160]}
    except TimeoutError:
        return {"timeout": True}
    except Exception as e:  # a transport that broke: what a client would see
        return {"exception": type(e).__name__, "text": str(e)[:160]}


async def main(url: str, prefix: str) -> None:
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        first = await call(session, prefix + "write", {"text": "hello"})
        after = await call(session, prefix + "read", {})
    print(json.dumps({"write": first, "read_after": after}))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
