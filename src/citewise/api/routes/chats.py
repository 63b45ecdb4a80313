"""Saved chats: list (paginated, title search), read, delete, and resume an interrupted
action (approve or reject)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Response
from fastapi.concurrency import run_in_threadpool
from sse_starlette import EventSourceResponse

from citewise.api.deps import AdminDep, ReaderDep, SessionsDep, StateDep
from citewise.api.schemas import (
    ChatDetail,
    ChatPublic,
    ChatsPublic,
    InterruptPublic,
    MessagePublic,
    ResumeRequest,
)
from citewise.api.sse import sse_response
from citewise.errors import NotFoundError

router = APIRouter(prefix="/api/chats", tags=["chats"])

ChatId = Annotated[str, Path(max_length=64, description="The chat's id (32 hex digits).")]


@router.get("")
def list_chats(
    sessions: SessionsDep,
    reader: ReaderDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
    q: Annotated[str | None, Query(max_length=200, description="Title contains.")] = None,
) -> ChatsPublic:
    """The caller's chats, most recently updated first, ``limit`` per page (default 50)."""
    rows, total = sessions.list_chats(limit=limit, offset=offset, q=q or None,
                                      owner=reader.chat_scope)
    data = [ChatPublic(id=r.id, title=r.title, created=r.created, updated=r.updated,
                       message_count=r.message_count) for r in rows]
    nxt = offset + len(data)
    return ChatsPublic(data=data, count=total, limit=limit, offset=offset,
                       next_offset=nxt if nxt < total else None)


@router.get("/{chat_id}", responses={404: {"description": "unknown chat"}})
def get_chat(chat_id: ChatId, sessions: SessionsDep, reader: ReaderDep) -> ChatDetail:
    """A chat of the caller's with all its messages and the actions waiting for approval."""
    chat = sessions.get_chat(chat_id, reader.chat_scope)
    if chat is None:
        raise NotFoundError(f"no conversation with id {chat_id!r}")
    return ChatDetail(
        id=chat.id, title=chat.title, created=chat.created, updated=chat.updated,
        message_count=chat.message_count, summary=chat.summary,
        messages=[MessagePublic(id=m.id, role=m.role, content=m.content, status=m.status,
                                created=m.created, search_query=m.search_query,
                                sources=m.sources, metrics=m.metrics)
                  for m in sessions.messages(chat_id)],
        pending=[InterruptPublic(action=p.action,
                                 input={k: v for k, v in p.input.items() if k != "message_id"},
                                 resume_token=p.token) for p in sessions.pending(chat_id)],
    )


@router.delete("/{chat_id}", status_code=204, responses={404: {"description": "unknown chat"}})
def delete_chat(chat_id: ChatId, sessions: SessionsDep, reader: ReaderDep) -> Response:
    """Delete a chat of the caller's and its messages."""
    if not sessions.delete_chat(chat_id, reader.chat_scope):
        raise NotFoundError(f"no conversation with id {chat_id!r}")
    return Response(status_code=204)


@router.post("/{chat_id}/resume", response_class=EventSourceResponse, dependencies=[AdminDep],
             responses={404: {"description": "unknown chat or resume token"}})
async def resume(chat_id: ChatId, body: ResumeRequest, state: StateDep) -> EventSourceResponse:
    """Approve or reject the action an ``interrupt`` event proposed; the outcome streams as
    server-sent events (``tool_call``, ``tool_result``, ``done``). A token works once."""
    agent = state.agent
    action = await run_in_threadpool(agent.take_action, chat_id, body.resume_token,
                                     body.approve)
    return sse_response(lambda: agent.resume(action, body.approve), state.streams,
                        conversation_id=chat_id, ping_seconds=state.settings.sse_ping_seconds)
