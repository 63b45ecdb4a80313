"""The browser side: the chat UI at ``/`` and the embeddable widget at ``/widget.js``.

Both are static files of :mod:`citewise.web` (plain ES modules and CSS, no build step). The UI
talks to this same server; the widget runs on other sites' pages and calls the server cross
origin, so those sites must be listed in ``cors_origins`` (see docs/web.md).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

WEB = Path(__file__).resolve().parents[2] / "web"

router = APIRouter(include_in_schema=False)

#: Short caching: the files change with the installed version, not while it runs.
_CACHE = {"Cache-Control": "no-cache"}


@router.get("/")
def index() -> FileResponse:
    """The chat UI."""
    return FileResponse(WEB / "index.html", media_type="text/html", headers=_CACHE)


@router.get("/widget.js")
def widget() -> FileResponse:
    """The embeddable widget (one classic script; loads nothing else)."""
    return FileResponse(WEB / "widget.js", media_type="text/javascript",
                        headers={**_CACHE, "Access-Control-Allow-Origin": "*"})


def static_files() -> StaticFiles:
    """The UI's modules, styles and icons, mounted at ``/static``."""
    return StaticFiles(directory=WEB / "static", check_dir=True)


__all__ = ["WEB", "router", "static_files"]
