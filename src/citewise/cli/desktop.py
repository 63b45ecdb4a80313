"""``citewise desktop``: the chat page in a native window (Qt WebEngine, the ``desktop``
extra) with its own local server, started before the window opens and stopped when it closes
(see :mod:`citewise.desktop`)."""

from __future__ import annotations

from typing import Annotated

import typer

from citewise.cli.common import err_console, errors
from citewise.config import Settings


def desktop(
    width: Annotated[int, typer.Option(min=360, help="Window width in pixels.")] = 1280,
    height: Annotated[int, typer.Option(min=360, help="Window height in pixels.")] = 800,
) -> None:
    """Open the chat page in a desktop window, served by its own server on a free port of
    127.0.0.1 that stops when the window closes. Drop files on the window to index them.
    Needs: pip install 'citewise\\[desktop]'."""
    from citewise.desktop.server import LocalServer

    code = 0
    with errors():
        from citewise.desktop import window  # DesktopError naming the extra when it is missing

        settings = Settings()
        window.application()  # no display: DesktopError before any server starts
        server = LocalServer(settings).start()
        err_console.print(f"citewise desktop: server on {server.url} (stops when the window "
                          "closes)")
        try:
            code = window.run(server.url, server.api_key, settings.home / "desktop",
                              width=width, height=height)
        finally:
            server.stop()
            err_console.print("citewise desktop: server stopped")
    if code:
        raise typer.Exit(code)
