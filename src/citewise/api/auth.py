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
"""

from __future__ import annotations

import hashlib
import ipaddress
import secrets
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Reader:
    """Who is reading: ``collections`` they may read (None = every collection), the
    ``owner`` tag their new chats are stored under ("" when reading is open), and whether
    they hold the admin key."""

    collections: frozenset[str] | None
    owner: str = ""
    admin: bool = False

    @property
    def chat_scope(self) -> str | None:
        """The owner whose chats this reader sees; None = all (open reading, or admin)."""
        return None if self.admin or not self.owner else self.owner

    def filters(self, requested: dict | None = None) -> dict | None:
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
    and the request carries none of them (nor the admin key)."""
    if not settings.api_keys:
        return Reader(None)
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
