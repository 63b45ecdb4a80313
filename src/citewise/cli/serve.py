"""``citewise serve``: the HTTP API under uvicorn (the MCP server's HTTP transport at
``/mcp``); ``citewise mcp``: the MCP server over stdio."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape

from citewise.cli.common import build_engine, err_console, errors
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
                      f"(OpenAPI: /docs, MCP: /mcp)")
    uvicorn.run(application, host=settings.host, port=settings.port, log_level="info")


def mcp(
    api_key: Annotated[str | None, typer.Option(
        "--api-key", envvar="CITEWISE_MCP_API_KEY", show_envvar=True,
        help="The caller's key: with CITEWISE_API_KEYS set, a read key (its collections "
        "only) or the admin key; ingest needs the admin key when CITEWISE_API_KEY is set.")]
    = None,
) -> None:
    """Serve citewise's tools (search, ask, list_documents, get_passage, ingest) to an MCP
    client over stdin/stdout (docs/mcp.md). The HTTP transport is /mcp of `citewise serve`."""
    from citewise.api.mcp_server import run_stdio

    with errors():
        try:
            run_stdio(build_engine(), api_key or "")
        except PermissionError as err:
            err_console.print(f"[bold red]error:[/] {escape(str(err))}")
            raise typer.Exit(1) from None
