"""A remote MCP server of the SDK's own (``MCPServer`` over Streamable HTTP,
served by uvicorn), for recourse's tests of remote servers: behind TLS when
given a certificate, asking for a header when told, and with an OAuth 2.1
authorization server of the SDK's auth support (``create_auth_routes``,
dynamic client registration, PKCE, the resource indicator, refresh,
revocation) when asked.

    python notes_remote.py --log FILE [--port PORT] [--tls CERT KEY]
                           [--require-header NAME] [--oauth]
    python notes_remote.py --stdio        (the tool ``environment`` only)

Tools: ``add_note`` (a write: each call that runs adds one) and
``count_notes`` (``readOnlyHint``). Every HTTP request is logged to
``--log`` as a JSON line ``{"event": "http", "method", "path", "status",
"header": the --require-header value seen or null}``; a tool that runs,
``{"event": "call", "tool"}``; the authorization server's steps as
``register``, ``authorize`` (its ``code_challenge`` and ``resource``),
``token`` (its ``grant``), ``revoked``.

``--require-header NAME``: a request without NAME, or with another value
than ``$EXPECTED_HEADER``, is answered 401 with no challenge.

``--oauth``: the login page (``GET /login``) has one button, ``#allow``.
``POST /admin/expire`` forgets every access token (the next request with
one is refused 401: as an expired token); ``POST /admin/revoke`` forgets
every token, refresh tokens too. Access tokens last an hour.

The first stdout line is ``listening on URL`` (the MCP endpoint).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

LOG_LOCK = threading.Lock()
LOG: Path | None = None


def log(event: dict[str, Any]) -> None:
    if LOG is None:
        return
    with LOG_LOCK, LOG.open("a") as f:
        f.write(json.dumps(event) + "\n")


def stdio_server() -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("environment")

    @server.tool()
    def environment() -> dict[str, str]:
        """This process's environment."""
        return dict(os.environ)

    server.run()


def notes_server(auth_provider: Any = None, auth: Any = None) -> Any:
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    server = MCPServer("notes", auth_server_provider=auth_provider, auth=auth)
    notes: list[str] = []

    @server.tool()
    def add_note(text: str) -> str:
        """Keep a note."""
        notes.append(text)
        log({"event": "call", "tool": "add_note"})
        return f"kept: {text}"

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def count_notes() -> dict[str, int]:
        """How many notes are kept."""
        log({"event": "call", "tool": "count_notes"})
        return {"count": len(notes)}

    return server


class Provider:
    """An in-memory OAuth authorization server: the SDK's handlers call it."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.clients: dict[str, Any] = {}
        self.pending: dict[str, tuple[Any, Any]] = {}
        self.codes: dict[str, Any] = {}
        self.access: dict[str, Any] = {}
        self.refresh: dict[str, Any] = {}

    async def get_client(self, client_id: str) -> Any:
        return self.clients.get(client_id)

    async def register_client(self, client_info: Any) -> None:
        self.clients[client_info.client_id] = client_info
        log({"event": "register", "client_name": client_info.client_name,
             "redirect_uris": [str(u) for u in client_info.redirect_uris or []]})

    async def authorize(self, client: Any, params: Any) -> str:
        pending = secrets.token_urlsafe(16)
        self.pending[pending] = (client, params)
        log({"event": "authorize", "code_challenge": bool(params.code_challenge),
             "resource": params.resource, "scopes": params.scopes})
        return f"{self.base}/login?pending={pending}"

    def approve(self, pending: str) -> str:
        from mcp.server.auth.provider import AuthorizationCode, construct_redirect_uri

        client, params = self.pending.pop(pending)
        code = secrets.token_urlsafe(32)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or ["notes"],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: Any, authorization_code: str) -> Any:
        return self.codes.get(authorization_code)

    def issue(self, client_id: str, scopes: list[str], resource: str | None) -> Any:
        from mcp.server.auth.provider import AccessToken, RefreshToken
        from mcp.shared.auth import OAuthToken

        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + 3600, resource=resource)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes,
                                             resource=resource)
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=3600,
                          scope=" ".join(scopes), refresh_token=refresh)

    async def exchange_authorization_code(self, client: Any, authorization_code: Any) -> Any:
        self.codes.pop(authorization_code.code, None)
        log({"event": "token", "grant": "authorization_code"})
        return self.issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: Any, refresh_token: str) -> Any:
        token = self.refresh.get(refresh_token)
        return token if token is not None and token.client_id == client.client_id else None

    async def exchange_refresh_token(self, client: Any, refresh_token: Any, scopes: list[str]) -> Any:
        self.refresh.pop(refresh_token.token, None)
        log({"event": "token", "grant": "refresh_token"})
        return self.issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> Any:
        return self.access.get(token)

    async def revoke_token(self, token: Any) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    async def exchange_identity_assertion(self, client: Any, params: Any) -> Any:
        from mcp.server.auth.provider import TokenError

        raise TokenError("unsupported_grant_type")


def add_oauth_routes(server: Any, provider: Provider) -> None:
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

    @server.custom_route("/login", methods=["GET"])
    async def login_page(request: Request) -> Response:
        pending = request.query_params.get("pending", "")
        if pending not in provider.pending:
            return HTMLResponse("<p>No such login.</p>", status_code=400)
        return HTMLResponse(
            "<!doctype html><title>Notes login</title><form method=post action=/login>"
            f"<input type=hidden name=pending value={pending}>"
            "<p>recourse asks to use your notes.</p><button id=allow>Allow</button></form>"
        )

    @server.custom_route("/login", methods=["POST"])
    async def login_done(request: Request) -> Response:
        form = await request.form()
        pending = str(form.get("pending", ""))
        if pending not in provider.pending:
            return HTMLResponse("<p>No such login.</p>", status_code=400)
        return RedirectResponse(provider.approve(pending), status_code=302)

    @server.custom_route("/admin/expire", methods=["POST"])
    async def expire(request: Request) -> Response:
        provider.access.clear()
        log({"event": "expired"})
        return JSONResponse({"ok": True})

    @server.custom_route("/admin/revoke", methods=["POST"])
    async def revoke(request: Request) -> Response:
        provider.access.clear()
        provider.refresh.clear()
        log({"event": "revoked"})
        return JSONResponse({"ok": True})


class Logged:
    """ASGI middleware: logs each HTTP request and, with a header to
    require, refuses a request without its expected value (401)."""

    def __init__(self, app: Any, header: str | None) -> None:
        self.app = app
        self.header = header.lower().encode() if header else None
        self.expected = os.environ.get("EXPECTED_HEADER", "").encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        seen = None
        if self.header is not None:
            for name, value in scope["headers"]:
                if name == self.header:
                    seen = value
        status: dict[str, int] = {}

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        entry = {"event": "http", "method": scope["method"], "path": scope["path"],
                 "header": seen.decode() if seen is not None else None}
        if self.header is not None and seen != self.expected:
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            log({**entry, "status": 401})
            return
        await self.app(scope, receive, sending)
        log({**entry, "status": status.get("code")})


def main() -> None:
    global LOG
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", type=Path)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    parser.add_argument("--require-header", metavar="NAME")
    parser.add_argument("--oauth", action="store_true")
    parser.add_argument("--stdio", action="store_true")
    args = parser.parse_args()
    if args.stdio:
        stdio_server()
        return
    LOG = args.log

    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    # Connections wait from now on, before uvicorn takes the socket.
    sock.listen(128)
    port = sock.getsockname()[1]
    scheme = "https" if args.tls else "http"
    base = f"{scheme}://127.0.0.1:{port}"
    if args.oauth:
        from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions

        provider = Provider(base)
        auth = AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=["notes"], default_scopes=["notes"]
            ),
            revocation_options=RevocationOptions(enabled=True),
            required_scopes=["notes"],
            validate_token_resource=True,
        )
        server = notes_server(provider, auth)
        add_oauth_routes(server, provider)
    else:
        server = notes_server()
    app = Logged(server.streamable_http_app(host="127.0.0.1"), args.require_header)
    tls = {"ssl_certfile": args.tls[0], "ssl_keyfile": args.tls[1]} if args.tls else {}
    config = uvicorn.Config(app, log_level="warning", **tls)
    print(f"listening on {base}/mcp", flush=True)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    sys.exit(main())
