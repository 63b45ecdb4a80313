"""The application factory: ``create_app(settings)`` builds the FastAPI app.

It opens the chat sessions database (running its migrations), prepares the engine (models
load lazily, on first use), mounts one router per resource, allows the CORS origins of
``settings.cors_origins`` (pages of other sites may only do what the widget needs:
:mod:`citewise.api.origins`), limits every request body to ``max_upload_mb`` (counted as it
arrives, :mod:`citewise.api.limits`), and translates citewise errors to HTTP statuses in one
handler (:data:`STATUS`; the error tree is drawn in :mod:`citewise.errors`). Responses of
errors are ``{"detail": message, "code": error class}``. The OpenAPI schema is at ``/openapi.json``,
its pages at ``/docs``; the chat UI is at ``/`` and the embeddable widget at ``/widget.js``
(:mod:`citewise.api.routes.web`). The MCP server's streamable HTTP transport is at ``/mcp``
(:mod:`citewise.api.mcp_server`).
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from starlette.routing import Route

from citewise import __version__
from citewise.api.auth import VISITOR_HEADER
from citewise.api.deps import AppState
from citewise.api.limits import BodyLimit, BodyTooLarge
from citewise.api.mcp_server import McpEndpoint
from citewise.api.origins import CrossOriginGuard
from citewise.api.routes import chat, chats, documents, health, openai, scan, sources, web
from citewise.api.sse import StreamCounter
from citewise.chat.agent import Agent
from citewise.chat.sessions import SessionStore
from citewise.config import Settings
from citewise.engine import Engine
from citewise.errors import (
    CitewiseError,
    ConfigError,
    DocumentError,
    IndexError_,
    ModelError,
    NotFoundError,
    ProviderError,
    QueryError,
    QueryTooLongError,
    UploadConflictError,
    UploadError,
    UploadTooLargeError,
)

#: HTTP status per error class; the most specific class listed wins.
STATUS: dict[type[CitewiseError], int] = {
    QueryTooLongError: 413,
    UploadTooLargeError: 413,
    UploadConflictError: 409,
    QueryError: 422,
    NotFoundError: 404,
    UploadError: 400,
    DocumentError: 422,
    IndexError_: 409,
    ProviderError: 502,
    ConfigError: 503,
    ModelError: 503,
}


def status_for(err: CitewiseError) -> int:
    for cls in type(err).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 500


async def _citewise_error(request: Request, err: Exception) -> JSONResponse:
    assert isinstance(err, CitewiseError)
    return JSONResponse({"detail": str(err), "code": type(err).__name__},
                        status_code=status_for(err))


async def _body_too_large(request: Request, err: Exception) -> JSONResponse:
    assert isinstance(err, BodyTooLarge)
    return JSONResponse({"detail": err.detail, "code": "UploadTooLargeError"}, status_code=413,
                        headers={"Connection": "close"})


def create_app(settings: Settings, engine: Engine | None = None) -> FastAPI:
    """The citewise API for ``settings``; ``engine`` shares an already built one (its
    settings must be ``settings``)."""
    engine = engine or Engine(settings)
    sessions = SessionStore(settings.sessions_database)
    lock = threading.Lock()
    state = AppState(settings, engine, sessions, Agent(engine, sessions, lock), lock,
                     StreamCounter())

    mcp = McpEndpoint(engine, write_lock=lock)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with mcp.running():
            yield
        sessions.close()

    app = FastAPI(title="citewise", version=__version__, lifespan=lifespan,
                  description="Ask your documents: answers with citations. See docs/api.md.")
    app.state.citewise = state
    # the body limit sits inside CORS only, so a browser can read its 413
    app.add_middleware(BodyLimit, limit_mb=settings.max_upload_mb)
    app.add_middleware(CrossOriginGuard)  # other sites' pages: only what the widget needs
    if settings.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=settings.cors_origins,
                           allow_methods=["GET", "POST"],
                           allow_headers=["Authorization", "Content-Type", "X-API-Key",
                                          VISITOR_HEADER],
                           expose_headers=["X-Conversation-Id"])
    app.add_exception_handler(CitewiseError, _citewise_error)
    app.add_exception_handler(BodyTooLarge, _body_too_large)
    for module in (health, chat, chats, sources, documents, scan, openai, web):
        app.include_router(module.router)
    app.mount("/static", web.static_files(), name="static")
    # the MCP server's streamable HTTP transport (docs/mcp.md); keys are checked per request
    app.router.routes.append(Route("/mcp", mcp, include_in_schema=False))
    return app


__all__ = ["STATUS", "create_app", "status_for"]
