"""The request body limit, counted as the body arrives (chunked requests included).

:class:`BodyLimit` wraps the whole application: a request whose ``Content-Length`` is over
the limit is answered 413 before any of it is read, and one that sends more bytes than the
limit without announcing its length (``Transfer-Encoding: chunked``) is stopped with 413 as
soon as it crosses it, before the multipart parser has spooled it anywhere and before any
route has stored a byte. The limit is ``max_upload_mb`` MiB plus 1 MiB for the multipart
framing and the other fields; the routes also check each file against ``max_upload_mb``.
"""

from __future__ import annotations

import json

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: Bytes allowed on top of ``max_upload_mb`` for the multipart framing and form fields.
OVERHEAD = 1 << 20


class BodyTooLarge(HTTPException):
    """Raised while reading a body that crossed the limit (an HTTPException, so the
    framework passes it through its body parsing to the 413 handler)."""

    def __init__(self, detail: str) -> None:
        super().__init__(413, detail)


def too_large_message(limit_mb: float) -> str:
    return (f"the request is larger than the upload limit of {limit_mb:g} MiB "
            "(CITEWISE_MAX_UPLOAD_MB); nothing was stored. Send a smaller file, or raise "
            "CITEWISE_MAX_UPLOAD_MB")


class BodyLimit:
    """ASGI middleware: 413 ``{"detail", "code": "UploadTooLargeError"}`` for a request body
    over ``limit_mb`` MiB plus :data:`OVERHEAD` bytes, announced or streamed."""

    def __init__(self, app: ASGIApp, limit_mb: float) -> None:
        self.app = app
        self.limit_mb = limit_mb
        self.limit = int(limit_mb * 2**20) + OVERHEAD

    async def _refuse(self, send: Send) -> None:
        body = json.dumps({"detail": too_large_message(self.limit_mb),
                           "code": "UploadTooLargeError"}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length", b"")
        if length.isdigit() and int(length) > self.limit:
            await self._refuse(send)
            return
        received = 0
        started = False

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise BodyTooLarge(too_large_message(self.limit_mb))
            return message

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited, tracked)
        except BodyTooLarge:
            if not started:
                await self._refuse(send)


__all__ = ["OVERHEAD", "BodyLimit", "BodyTooLarge", "too_large_message"]
