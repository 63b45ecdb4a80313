"""The host names the server answers to: DNS rebinding protection for every route.

A page on ``http://evil.test:8765`` whose name the attacker then points at 127.0.0.1 (DNS
rebinding) is same-origin to the browser with a citewise server on this machine: without a
check it could read every document of a keyless or open server. The browser still sends the
page's name in the ``Host`` header, so :class:`HostGuard`, the outermost middleware, answers
421 to a request whose ``Host`` names a host the server does not answer to, before routing,
keys, CORS or bodies (so ``/mcp``, the chat UI, ``/openapi.json`` and ``/v1`` alike).

The server answers to (:func:`answered_names`): ``localhost``; any IP address (a browser
sends an address as ``Host`` only when the page itself was loaded from that address, so an
address cannot be rebound); the name it is bound to (``host``), or the machine's own name
(``socket.gethostname()``, no lookup) when bound to every address; and the names of
``allowed_hosts`` (``CITEWISE_ALLOWED_HOSTS``), where ``*`` turns the check off. A request
without a ``Host`` header (HTTP/1.0 tools) is not a browser's and passes.
"""

from __future__ import annotations

import ipaddress
import json
import socket
from typing import Any
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from citewise.api.errors import is_openai_path
from citewise.config import Settings

#: ``host`` values that bind every address.
WILDCARDS = frozenset({"", "0.0.0.0", "::"})


def answered_names(settings: Settings) -> frozenset[str] | None:
    """The host names (lower case, no port) the server answers to besides IP addresses;
    None when ``allowed_hosts`` holds ``*`` (any name)."""
    if "*" in settings.allowed_hosts:
        return None
    names = {"localhost", *settings.allowed_hosts}
    bound = settings.host.strip().strip("[]").lower().rstrip(".")
    if bound in WILDCARDS:
        names.add(socket.gethostname().lower())
    elif not is_address(bound):
        names.add(bound)
    return frozenset(names)


def is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


def host_name(header: str) -> str | None:
    """The name (lower case, without port, brackets or final dot) a ``Host`` header
    carries; None when it is malformed."""
    try:
        parts = urlsplit("//" + header.strip())
        name = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        return None
    if not name or parts.username is not None or parts.path or parts.query:
        return None
    return name.rstrip(".")


def host_allowed(header: str | None, names: frozenset[str] | None) -> bool:
    """Whether a request with ``Host: header`` is addressed to this server."""
    if header is None or names is None:
        return True
    name = host_name(header)
    return name is not None and (is_address(name) or name in names)


def refusal(header: str) -> str:
    shown = header[:100].encode("ascii", "backslashreplace").decode()
    return (f"this server does not answer to the host name {shown!r} (the request's Host "
            "header): a web page that points its own name at this machine (DNS rebinding) "
            "may not read it. Address the server as localhost or by its IP address, or add "
            "the name to CITEWISE_ALLOWED_HOSTS (docs/configuration.md)")


class HostGuard:
    """ASGI middleware: 421 ``{"detail", "code": "MisdirectedRequest"}`` (OpenAI's error
    shape under ``/v1``) for a request whose ``Host`` the server does not answer to."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.names = answered_names(settings)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self.names is None:
            await self.app(scope, receive, send)
            return
        hosts = [v.decode("latin-1") for k, v in scope["headers"] if k == b"host"]
        if len(hosts) <= 1 and host_allowed(hosts[0] if hosts else None, self.names):
            await self.app(scope, receive, send)
            return
        detail = refusal(", ".join(hosts))
        shaped: dict[str, Any] = {"detail": detail, "code": "MisdirectedRequest"}
        if is_openai_path(scope.get("path", "")):
            shaped = {"error": {"message": detail, "type": "invalid_request_error",
                                "param": None, "code": "misdirected_request"}}
        if scope["type"] == "websocket":  # pragma: no cover - no websocket routes today
            await send({"type": "websocket.close", "code": 1008})
            return
        body = json.dumps(shaped).encode()
        await send({"type": "http.response.start", "status": 421,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def mcp_patterns(settings: Settings) -> tuple[list[str], list[str]] | None:
    """The same names as the MCP SDK's ``allowed_hosts`` and ``allowed_origins`` patterns
    (it has no rule for 'any address': the loopback addresses are listed); None for any."""
    names = answered_names(settings)
    if names is None:
        return None
    hosts = sorted({*names, "127.0.0.1", "[::1]"})
    allowed_hosts = [p for h in hosts for p in (h, f"{h}:*")]
    allowed_origins = [f"{scheme}://{h}{port}" for h in hosts for scheme in ("http", "https")
                       for port in ("", ":*")]
    return allowed_hosts, allowed_origins


__all__ = ["HostGuard", "answered_names", "host_allowed", "host_name", "mcp_patterns"]
