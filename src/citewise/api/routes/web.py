"""The browser side: the chat UI at ``/`` and the embeddable widget at ``/widget.js``.

Both are static files of :mod:`citewise.web` (plain ES modules and CSS, no build step). The UI
talks to this same server; the widget runs on other sites' pages and calls the server cross
origin, so those sites must be listed in ``cors_origins`` (see docs/web.md). The widget is one
classic script, so the page's Markdown renderer (``static/markdown.js``, a module) is put into
it where its marker stands (:func:`widget_source`): both render answers with the same code.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse, Response
from fastapi.staticfiles import StaticFiles

WEB = Path(__file__).resolve().parents[2] / "web"

router = APIRouter(include_in_schema=False)

#: Short caching: the files change with the installed version, not while it runs.
_CACHE = {"Cache-Control": "no-cache"}


@router.get("/")
def index() -> FileResponse:
    """The chat UI."""
    return FileResponse(WEB / "index.html", media_type="text/html", headers=_CACHE)


MARKER = "/* @citewise-markdown@ */"


@functools.cache
def widget_source() -> str:
    """``widget.js`` with ``static/markdown.js`` in place of :data:`MARKER` (its ``export``
    keywords dropped: inside the widget it is a function body, not a module)."""
    widget = (WEB / "widget.js").read_text(encoding="utf-8")
    markdown = (WEB / "static" / "markdown.js").read_text(encoding="utf-8")
    markdown = re.sub(r"^export\s+", "", markdown, flags=re.MULTILINE)
    if MARKER not in widget:
        raise RuntimeError(f"widget.js lacks its Markdown marker {MARKER}")
    return widget.replace(MARKER, markdown, 1)


@router.get("/widget.js")
def widget() -> Response:
    """The embeddable widget (one classic script; loads nothing else)."""
    return Response(widget_source(), media_type="text/javascript",
                    headers={**_CACHE, "Access-Control-Allow-Origin": "*"})


def static_files() -> StaticFiles:
    """The UI's modules, styles and icons, mounted at ``/static``."""
    return StaticFiles(directory=WEB / "static", check_dir=True)


__all__ = ["WEB", "router", "static_files", "widget_source"]
