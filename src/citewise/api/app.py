"""The application factory: ``create_app(settings)`` builds the FastAPI app.

It opens the chat sessions database (running its migrations), prepares the engine (models
load lazily, on first use), mounts one router per resource, answers only requests addressed
to its own host names (:mod:`citewise.api.hosts`, against DNS rebinding), allows the CORS origins of
``settings.cors_origins`` (pages of other sites may only do what the widget needs:
:mod:`citewise.api.origins`), limits every request body to ``max_upload_mb`` (counted as it
arrives, :mod:`citewise.api.limits`), and translates citewise errors to HTTP statuses in one
handler (:mod:`citewise.api.errors`, :data:`STATUS`; the error tree is drawn in
:mod:`citewise.errors`). Responses of errors are ``{"detail": message, "code": error class}``,
and OpenAI's ``{"error": {"message", "type", "param", "code"}}`` under ``/v1``. The OpenAPI
schema is at ``/openapi.json``, its pages at ``/docs``; the chat UI is at ``/`` and the embeddable widget at ``/widget.js``
(:mod:`citewise.api.routes.web`). The MCP server's streamable HTTP transport is at ``/mcp``
(:mod:`citewise.api.mcp_server`).
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from starlette.exceptions import HTTPException
from starlette.routing import Route

from citewise import __version__
from citewise.api.auth import VISITOR_HEADER
from citewise.api.deps import AppState
from citewise.api.errors import (
    STATUS,
    body_too_large,
    citewise_error,
    http_error,
    status_for,
    validation_error,
)
from citewise.api.hosts import HostGuard
from citewise.api.limits import BodyLimit, BodyTooLarge
from citewise.api.mcp_server import McpEndpoint
from citewise.api.origins import CrossOriginGuard
from citewise.api.routes import chat, chats, documents, health, openai, scan, sources, web
from citewise.api.sse import StreamCounter
from citewise.chat.agent import Agent
from citewise.chat.sessions import SessionStore
from citewise.config import Settings
from citewise.engine import Engine
from citewise.errors import CitewiseError


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
    app.add_middleware(BodyLimit, limit_mb=settings.max_upload_mb,
                       json_kb=settings.max_json_kb)
    app.add_middleware(CrossOriginGuard)  # other sites' pages: only what the widget needs
    if settings.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=settings.cors_origins,
                           allow_methods=["GET", "POST"],
                           allow_headers=["Authorization", "Content-Type", "X-API-Key",
                                          VISITOR_HEADER],
                           expose_headers=["X-Conversation-Id"])
    # outermost: a request addressed to a name the server does not answer to (DNS
    # rebinding) is refused before anything else looks at it
    app.add_middleware(HostGuard, settings=settings)
    app.add_exception_handler(CitewiseError, citewise_error)
    app.add_exception_handler(BodyTooLarge, body_too_large)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    for module in (health, chat, chats, sources, documents, scan, openai, web):
        app.include_router(module.router)
    app.mount("/static", web.static_files(), name="static")
    # the MCP server's streamable HTTP transport (docs/mcp.md); keys are checked per request
    app.router.routes.append(Route("/mcp", mcp, include_in_schema=False))
    return app


__all__ = ["STATUS", "create_app", "status_for"]
