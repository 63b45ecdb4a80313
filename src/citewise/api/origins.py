"""What a request from another site's page may do: only what the widget needs.

``cors_origins`` lets pages of those sites call the API from a browser (the widget,
``/widget.js``). Such a cross-origin request (its ``Origin`` names another host than its
``Host``) may only do what the widget does (:data:`WIDGET_ROUTES`): check the server, ask (a
chat turn, JSON or streamed), and read one chat (the visitor's own: the chat routes check the
owner). Anything else (listing or deleting chats, documents, uploads, sources, the
OpenAI-compatible endpoint, admin endpoints) gets 403, whether or not the origin is listed and
whether or not the browser sent a preflight first: a plain form POST needs none. Requests
without an ``Origin`` (curl, servers, same-origin navigation), same-origin requests of the
chat UI, and pages on this machine calling a server on localhost are not affected. CORS
itself (:class:`fastapi.middleware.cors.CORSMiddleware`) allows only GET and POST and the
headers the clients send.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from citewise.api.auth import is_loopback
from citewise.api.errors import is_openai_path

#: (method, path pattern) a cross-origin request may use.
WIDGET_ROUTES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("GET", re.compile(r"/api/health")),
    ("POST", re.compile(r"/api/chat")),
    ("POST", re.compile(r"/api/chat/stream")),
    ("GET", re.compile(r"/api/chats/(?!feedback\.jsonl$)[^/]+")),  # one chat, not the export
    ("GET", re.compile(r"/widget\.js")),
)


def is_cross_origin(origin: str, host: str) -> bool:
    """Whether a request sent with ``Origin: origin`` and ``Host: host`` comes from a page
    of another site (``null`` and unparsable origins count as another site). A page on a
    loopback address calling a server addressed by a loopback name is the same machine's
    (a local tool, the keyless admin of :func:`citewise.api.auth.check_admin`), not
    another site."""
    try:
        parts = urlsplit(origin)
        netloc, hostname = parts.netloc.lower(), parts.hostname or ""
        own = urlsplit("//" + host.strip()).hostname or ""
    except ValueError:
        return True
    if not netloc:
        return True
    if is_loopback(hostname) and is_loopback(own):
        return False
    return netloc != host.strip().lower()


def widget_may(method: str, path: str) -> bool:
    """Whether a cross-origin request may use ``method`` on ``path``."""
    return any(m == method and p.fullmatch(path) for m, p in WIDGET_ROUTES)


class CrossOriginGuard:
    """ASGI middleware: 403 ``{"detail", "code": "CrossOriginRefused"}`` (OpenAI's error
    shape under ``/v1``) for a cross-origin request outside :data:`WIDGET_ROUTES` (preflights
    are left to the CORS middleware)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] == "OPTIONS":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        origin = headers.get("origin")
        method, path = scope["method"], scope["path"]
        if origin is None or not is_cross_origin(origin, headers.get("host", "")) or \
                widget_may(method, path):
            await self.app(scope, receive, send)
            return
        detail = (f"{method} {path} is not available to pages of other sites (Origin "
                  f"{origin[:100]}): from another site only the widget's requests are "
                  "(GET /api/health, POST /api/chat and /api/chat/stream, GET "
                  "/api/chats/{id}); call it from the server's own pages, or from a "
                  "server or the command line (admin requests with CITEWISE_API_KEY)")
        shaped: dict[str, Any] = {"detail": detail, "code": "CrossOriginRefused"}
        if is_openai_path(path):  # OpenAI's error shape under /v1
            shaped = {"error": {"message": detail, "type": "invalid_request_error",
                                "param": None, "code": "cross_origin_refused"}}
        body = json.dumps(shaped).encode()
        await send({"type": "http.response.start", "status": 403,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


__all__ = ["WIDGET_ROUTES", "CrossOriginGuard", "is_cross_origin", "widget_may"]
