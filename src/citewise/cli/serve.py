"""``citewise serve``: the HTTP API under uvicorn."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from citewise.cli.common import err_console, errors
from citewise.config import Settings


def serve(
    host: Annotated[str | None, typer.Option(help="Address to bind (default: CITEWISE_HOST, "
                                                   "127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(
        min=1, max=65535, help="Port (default: CITEWISE_PORT, 8765).")] = None,
) -> None:
    """Serve the HTTP API (see docs/api.md) with uvicorn until Ctrl-C."""
    import uvicorn

    from citewise.api.app import create_app

    with errors():
        overrides: dict[str, Any] = {}
        if host is not None:
            overrides["host"] = host
        if port is not None:
            overrides["port"] = port
        settings = Settings(**overrides)
        application = create_app(settings)
    err_console.print(f"citewise API on http://{settings.host}:{settings.port} "
                      f"(OpenAPI: /docs)")
    uvicorn.run(application, host=settings.host, port=settings.port, log_level="info")


