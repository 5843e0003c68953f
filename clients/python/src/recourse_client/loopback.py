"""Loopback is reached directly, never through a proxy.

httpx takes a proxy from ``HTTP_PROXY``, ``HTTPS_PROXY`` and ``ALL_PROXY``
(``trust_env``), and would send a request for ``http://127.0.0.1:8780`` —
with the gateway's bearer token — to whatever proxy those name: the token
leaves the machine, and the answer is the proxy's. A gateway on loopback
(``Gateway.spawn()`` always starts one there) is this machine's own, so its
clients ignore the environment's proxies (and the rest of it: ``.netrc``,
``SSL_CERT_FILE``) for it; a gateway elsewhere is reached as the
environment says.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit


def is_loopback(url: str) -> bool:
    """Whether ``url``'s host is this machine: ``localhost`` (or a name
    under it), ``127.0.0.0/8`` or ``::1``."""
    host = (urlsplit(url).hostname or "").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def trust_env(url: str) -> bool:
    """httpx's ``trust_env`` for a client of ``url``: not for loopback."""
    return not is_loopback(url)
