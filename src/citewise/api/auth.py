"""Admin access: upload, delete, reindex and approvals.

With ``CITEWISE_API_KEY`` set, a request must send it as ``Authorization: Bearer <key>`` or
``X-API-Key: <key>`` (401 otherwise). Without a key, admin requests are allowed only when the
server is bound to a loopback address (``host`` 127.0.0.1, ::1 or localhost), and refused
with 403 otherwise.
"""

from __future__ import annotations

import ipaddress
import secrets

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
