"""The application state and its ``Annotated`` dependency aliases for the routers."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from citewise.api.auth import Reader, check_admin, is_admin, readable_collections
from citewise.api.sse import StreamCounter
from citewise.chat.agent import Agent
from citewise.chat.sessions import SessionStore
from citewise.config import Settings
from citewise.engine import Engine


@dataclass
class AppState:
    """Everything a request needs, built once by ``create_app``."""

    settings: Settings
    engine: Engine
    sessions: SessionStore
    agent: Agent
    write_lock: threading.Lock
    streams: StreamCounter


def get_state(request: Request) -> AppState:
    state: AppState = request.app.state.citewise
    return state


def get_settings(request: Request) -> Settings:
    return get_state(request).settings


def get_engine(request: Request) -> Engine:
    return get_state(request).engine


def get_agent(request: Request) -> Agent:
    return get_state(request).agent


def get_sessions(request: Request) -> SessionStore:
    return get_state(request).sessions


def require_admin(request: Request) -> None:
    check_admin(request, get_settings(request))


def may_write(request: Request) -> bool:
    """Whether the caller may use admin endpoints (:func:`check_admin` passes): chat
    directives that write are proposed only then."""
    return is_admin(request, get_settings(request))


def get_reader(request: Request) -> Reader:
    return readable_collections(request, get_settings(request))


StateDep = Annotated[AppState, Depends(get_state)]
ReaderDep = Annotated[Reader, Depends(get_reader)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
EngineDep = Annotated[Engine, Depends(get_engine)]
AgentDep = Annotated[Agent, Depends(get_agent)]
SessionsDep = Annotated[SessionStore, Depends(get_sessions)]
MayWriteDep = Annotated[bool, Depends(may_write)]
AdminDep = Depends(require_admin)
