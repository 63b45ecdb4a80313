"""The request body limits, counted as the body arrives (chunked requests included).

:class:`BodyLimit` wraps the whole application: a request whose ``Content-Length`` is over
its limit is answered 413 before any of it is read, and one that sends more bytes than the
limit without announcing its length (``Transfer-Encoding: chunked``) is stopped with 413 as
soon as it crosses it, before the multipart parser has spooled it anywhere, before any JSON
is parsed and before any route has stored a byte. A file upload (a ``multipart/form-data``
POST to :data:`UPLOAD_ROUTES`) may have ``max_upload_mb`` MiB plus 1 MiB for the multipart
framing and the other fields (the routes also check each file against ``max_upload_mb``);
every other body (JSON) ``max_json_kb`` KiB: a 46 MiB JSON list of 12 million items took the
server 30 s to refuse while every other request waited.
"""

from __future__ import annotations

import json

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: Bytes allowed on top of ``max_upload_mb`` for the multipart framing and form fields.
OVERHEAD = 1 << 20


#: (method, path) of the routes that take file uploads (multipart/form-data).
UPLOAD_ROUTES = frozenset({("POST", "/api/documents"), ("POST", "/api/scan")})


class BodyTooLarge(HTTPException):
    """Raised while reading a body that crossed the limit (an HTTPException, so the
    framework passes it through its body parsing to the 413 handler); ``code``: the error
    code of the response."""

    def __init__(self, detail: str, code: str = "UploadTooLargeError") -> None:
        super().__init__(413, detail)
        self.code = code


def too_large_message(limit_mb: float) -> str:
    return (f"the request is larger than the upload limit of {limit_mb:g} MiB "
            "(CITEWISE_MAX_UPLOAD_MB); nothing was stored. Send a smaller file, or raise "
            "CITEWISE_MAX_UPLOAD_MB")


def json_too_large_message(limit_kb: int) -> str:
    return (f"the request body is larger than {limit_kb} KiB, the limit for requests that are "
            "not file uploads (CITEWISE_MAX_JSON_KB); nothing of it was read. Send less (a "
            "shorter question or history), or upload files as multipart/form-data to "
            "POST /api/documents")


def is_upload(scope: Scope) -> bool:
    content_type = dict(scope.get("headers") or []).get(b"content-type", b"")
    return (scope["method"], scope["path"]) in UPLOAD_ROUTES and \
        content_type.lower().startswith(b"multipart/form-data")


class BodyLimit:
    """ASGI middleware: 413 ``{"detail", "code": "UploadTooLargeError"}`` for an upload body
    over ``limit_mb`` MiB plus :data:`OVERHEAD` bytes, ``"RequestTooLargeError"`` for any
    other body over ``json_kb`` KiB, announced or streamed."""

    def __init__(self, app: ASGIApp, limit_mb: float, json_kb: int = 1024) -> None:
        self.app = app
        self.limit_mb = limit_mb
        self.limit = int(limit_mb * 2**20) + OVERHEAD
        self.json_kb = json_kb
        self.json_limit = json_kb * 1024

    def _error(self, upload: bool) -> BodyTooLarge:
        if upload:
            return BodyTooLarge(too_large_message(self.limit_mb))
        return BodyTooLarge(json_too_large_message(self.json_kb), "RequestTooLargeError")

    async def _refuse(self, send: Send, error: BodyTooLarge) -> None:
        body = json.dumps({"detail": error.detail, "code": error.code}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        upload = is_upload(scope)
        limit = self.limit if upload else self.json_limit
        length = dict(scope.get("headers") or []).get(b"content-length", b"")
        if length.isdigit() and int(length) > limit:
            await self._refuse(send, self._error(upload))
            return
        received = 0
        started = False

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise self._error(upload)
            return message

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited, tracked)
        except BodyTooLarge as err:
            if not started:
                await self._refuse(send, err)


__all__ = ["OVERHEAD", "UPLOAD_ROUTES", "BodyLimit", "BodyTooLarge", "is_upload",
           "json_too_large_message", "too_large_message"]
