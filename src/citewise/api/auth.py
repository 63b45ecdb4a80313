"""Access: the admin key, and read keys per collection.

Admin (upload, delete, reindex, scan, approvals): with ``CITEWISE_API_KEY`` set, a request
must send it as ``Authorization: Bearer <key>`` or ``X-API-Key: <key>`` (401 otherwise).
Without a key, admin requests are allowed only when the server is bound to a loopback address
(``host`` 127.0.0.1, ::1 or localhost), and refused with 403 otherwise. Even then a keyless
admin request must be addressed to a loopback name (its ``Host`` header) and, when it carries
an ``Origin`` header, come from a loopback origin: a web page on another site can make the
user's browser send a POST to 127.0.0.1 (cross-site request forgery) or reach it under its
own name through DNS rebinding, and both are refused with 403.

Reading (chat, sources, documents, chats, ``/v1``): with ``CITEWISE_API_KEYS`` empty anyone
may read every collection. When it maps keys to collections, a request must send one of
those keys (or the admin key, which reads everything), the same way, or gets 401; it then
reads only its key's collections. :func:`readable_collections` returns them and the routes
pass them to the store as the ``collections`` filter, which applies before ranking. Each
caller also has an :func:`owner` tag (a hash of its key, never the key) that chats are kept
under, so one key never sees another's conversations. Keys are compared in constant time and
never written to logs or error messages.

Chats belong to their creator. With read keys, that is the key. With reading open (a widget
deployment), it is the anonymous visitor token the widget keeps and sends as
``X-Citewise-Visitor`` (:data:`VISITOR_HEADER`; the tag is a hash of it): a visitor lists,
reads, continues and deletes only its own chats. A caller with no key and no token gets a
fresh tag on every request, so it can ask but never sees any chat, its own included. Only the
admin (the admin key, or a keyless server on localhost answering a request addressed to
localhost) sees every chat.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from fastapi import HTTPException, Request, status

from citewise.config import Settings


def is_loopback(host: str) -> bool:
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def presented_key(request: Request) -> str | None:
    auth = request.headers.get("authorization", "")
    scheme, _, token = auth.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return request.headers.get("x-api-key")


def check_admin(request: Request, settings: Settings) -> None:
    """Raise HTTPException 401 or 403 unless the request may use admin endpoints."""
    key = settings.api_key.get_secret_value() if settings.api_key is not None else ""
    if key:
        given = presented_key(request)
        if not given or not secrets.compare_digest(given.encode(), key.encode()):
            raise HTTPException(status.HTTP_401_UNAUTHORIZED,
                                "admin endpoint: send the API key as 'Authorization: Bearer "
                                "<CITEWISE_API_KEY>'", headers={"WWW-Authenticate": "Bearer"})
        return
    if not is_loopback(settings.host):
        raise HTTPException(status.HTTP_403_FORBIDDEN,
                            "admin endpoints are disabled on a server not bound to localhost "
                            "until CITEWISE_API_KEY is set")
    host = urlsplit("//" + request.headers.get("host", "")).hostname or ""
    if not is_loopback(host):
        raise HTTPException(status.HTTP_403_FORBIDDEN,
                            "admin endpoints without CITEWISE_API_KEY answer only requests "
                            "addressed to localhost or 127.0.0.1 (this one named another host); "
                            "set CITEWISE_API_KEY to use them under another name")
    origin = request.headers.get("origin")
    if origin is not None and not is_loopback(urlsplit(origin).hostname or ""):
        raise HTTPException(status.HTTP_403_FORBIDDEN,
                            "admin endpoints without CITEWISE_API_KEY refuse requests sent by "
                            "a web page of another site (Origin is not localhost); set "
                            "CITEWISE_API_KEY and send it to allow them")


#: The header carrying an anonymous visitor's token (the widget makes one and keeps it).
VISITOR_HEADER = "X-Citewise-Visitor"
_VISITOR = re.compile(r"[A-Za-z0-9_-]{16,128}")


def visitor_owner(request: Request) -> str | None:
    """The owner tag of the visitor token the request carries ("v" and 16 hex digits of
    its SHA-256), None without one. Raises HTTPException 400 naming the header for a
    malformed token."""
    token = request.headers.get(VISITOR_HEADER)
    if token is None:
        return None
    if not _VISITOR.fullmatch(token):
        raise HTTPException(status.HTTP_400_BAD_REQUEST,
                            f"{VISITOR_HEADER}: send 16 to 128 letters, digits, '-' or '_' (a "
                            "random token kept by the client), or leave the header out")
    return "v" + hashlib.sha256(f"visitor:{token}".encode()).hexdigest()[:16]


def is_admin(request: Request, settings: Settings) -> bool:
    """Whether :func:`check_admin` lets the request through (never raises)."""
    try:
        check_admin(request, settings)
    except HTTPException:
        return False
    return True


@dataclass(frozen=True)
class Reader:
    """Who is reading: ``collections`` they may read (None = every collection), the
    ``owner`` tag their chats are stored under (their key's, their visitor token's; "" for
    the keyless local admin), and whether they are the admin."""

    collections: frozenset[str] | None
    owner: str = ""
    admin: bool = False

    @property
    def chat_scope(self) -> str | None:
        """The owner whose chats this reader sees: its own; None = all (the admin only)."""
        return None if self.admin else self.owner

    def filters(self, requested: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """``requested`` store filters narrowed to the readable collections (a requested
        ``collections`` list is intersected with them)."""
        out = dict(requested or {})
        if self.collections is None:
            return out or None
        asked = out.get("collections")
        allowed = self.collections if asked is None else self.collections & set(asked)
        out["collections"] = sorted(allowed)
        return out

    def may_read(self, collection: str) -> bool:
        return self.collections is None or collection in self.collections


def owner(key: str) -> str:
    """The tag chats of ``key`` are stored under: 16 hex digits of its SHA-256."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def readable_collections(request: Request, settings: Settings) -> Reader:
    """The caller's :class:`Reader`. Raises HTTPException 401 when read keys are configured
    and the request carries none of them (nor the admin key), 400 for a malformed visitor
    token. With reading open the owner is the visitor's (see the module docstring)."""
    if not settings.api_keys:
        visitor = visitor_owner(request)
        if is_admin(request, settings):
            given = presented_key(request)
            return Reader(None, owner(given) if given else visitor or "", admin=True)
        return Reader(None, visitor or "x" + secrets.token_hex(8))
    given = presented_key(request) or ""
    admin = settings.api_key.get_secret_value() if settings.api_key is not None else ""
    if admin and given and secrets.compare_digest(given.encode(), admin.encode()):
        return Reader(None, owner(given), admin=True)
    match: list[str] | None = None
    for key, names in settings.api_keys.items():  # every key compared: no early exit
        if given and secrets.compare_digest(given.encode(), key.get_secret_value().encode()):
            match = names
    if match is None:
        raise HTTPException(status.HTTP_401_UNAUTHORIZED,
                            "send a read key of CITEWISE_API_KEYS as 'Authorization: Bearer "
                            "<key>' or 'X-API-Key: <key>'", headers={"WWW-Authenticate": "Bearer"})
    return Reader(None if "*" in match else frozenset(match), owner(given))
