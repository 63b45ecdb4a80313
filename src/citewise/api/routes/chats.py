"""Saved chats: list (paginated, title search), read, rename, delete, cut short (for an
edited question or a regenerated answer), feedback on answers and its export as reranker
training data, and resume an interrupted action (approve or reject)."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Response
from fastapi.concurrency import run_in_threadpool
from sse_starlette import EventSourceResponse

from citewise.api.deps import AdminDep, ReaderDep, SessionsDep, StateDep
from citewise.api.schemas import (
    ChatDetail,
    ChatPublic,
    ChatsPublic,
    FeedbackPublic,
    FeedbackRequest,
    InterruptPublic,
    MessagePublic,
    RenameRequest,
    ResumeRequest,
)
from citewise.api.sse import sse_response
from citewise.errors import NotFoundError

router = APIRouter(prefix="/api/chats", tags=["chats"])

ChatId = Annotated[str, Path(max_length=64, description="The chat's id (32 hex digits).")]
MessageId = Annotated[int, Path(ge=1, le=2**62, description="The message's id.")]
_UNKNOWN: dict[int | str, dict[str, Any]] = {404: {"description": "unknown chat or message"}}


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


@router.get("/feedback.jsonl", response_class=Response,
            responses={200: {"content": {"application/x-ndjson": {}}}})
def export_feedback(sessions: SessionsDep, reader: ReaderDep) -> Response:
    """The feedback on the caller's chats (the admin: everyone's) as reranker training
    examples, one ``{"query", "positive", "negative"}`` object a line with chunk ids: the
    JSONL ``citewise train-reranker --jsonl`` reads. Answers with thumbs up make their cited
    sources positives, thumbs down negatives; a source's own thumb wins over the answer's."""
    lines = [json.dumps(e, ensure_ascii=False)
             for e in sessions.training_examples(reader.chat_scope)]
    return Response("".join(line + "\n" for line in lines), media_type="application/x-ndjson",
                    headers={"Content-Disposition": 'attachment; filename="feedback.jsonl"'})


@router.get("/{chat_id}", responses={404: {"description": "unknown chat"}})
def get_chat(chat_id: ChatId, sessions: SessionsDep, reader: ReaderDep) -> ChatDetail:
    """A chat of the caller's with all its messages and the actions waiting for approval."""
    chat = sessions.get_chat(chat_id, reader.chat_scope)
    if chat is None:
        raise NotFoundError(f"no conversation with id {chat_id!r}")
    feedback = {mid: FeedbackPublic(rating=f.rating, comment=f.comment, sources=f.sources)
                for mid, f in sessions.feedback(chat_id).items()}
    return ChatDetail(
        id=chat.id, title=chat.title, created=chat.created, updated=chat.updated,
        message_count=chat.message_count, summary=chat.summary,
        messages=[MessagePublic(id=m.id, role=m.role, content=m.content, status=m.status,
                                created=m.created, search_query=m.search_query,
                                sources=m.sources, metrics=m.metrics,
                                feedback=feedback.get(m.id))
                  for m in sessions.messages(chat_id)],
        pending=[InterruptPublic(action=p.action,
                                 input={k: v for k, v in p.input.items() if k != "message_id"},
                                 resume_token=p.token) for p in sessions.pending(chat_id)],
    )


@router.patch("/{chat_id}", responses={404: {"description": "unknown chat"}})
def rename_chat(chat_id: ChatId, body: RenameRequest, sessions: SessionsDep,
                reader: ReaderDep) -> ChatPublic:
    """Rename a chat of the caller's (its place in the list does not change)."""
    chat = sessions.rename_chat(chat_id, body.title, reader.chat_scope)
    if chat is None:
        raise NotFoundError(f"no conversation with id {chat_id!r}")
    return ChatPublic(id=chat.id, title=chat.title, created=chat.created, updated=chat.updated,
                      message_count=chat.message_count)


@router.delete("/{chat_id}/messages/{message_id}", status_code=204, responses=_UNKNOWN)
def truncate_chat(chat_id: ChatId, message_id: MessageId, sessions: SessionsDep,
                  reader: ReaderDep) -> Response:
    """Delete a message of the caller's chat and every later one: before a question is sent
    again edited, or an answer is regenerated, so the chat's history holds only the new
    turn."""
    if sessions.get_chat(chat_id, reader.chat_scope) is None:
        raise NotFoundError(f"no conversation with id {chat_id!r}")
    if not sessions.truncate(chat_id, message_id):
        raise NotFoundError(f"no message {message_id} in conversation {chat_id!r}")
    return Response(status_code=204)


@router.put("/{chat_id}/messages/{message_id}/feedback", responses=_UNKNOWN)
def set_feedback(chat_id: ChatId, message_id: MessageId, body: FeedbackRequest,
                 sessions: SessionsDep, reader: ReaderDep) -> FeedbackPublic:
    """Record the caller's verdict on an answer of their chat: thumbs up or down (or 0 to
    clear it), an optional comment, and thumbs on single sources it cites (others are
    ignored). Sending it again replaces it."""
    if sessions.get_chat(chat_id, reader.chat_scope) is None:
        raise NotFoundError(f"no conversation with id {chat_id!r}")
    fb = sessions.set_feedback(chat_id, message_id, rating=body.rating,
                               comment=body.comment.strip(), sources=dict(body.sources))
    if fb is None:
        raise NotFoundError(f"no answer {message_id} in conversation {chat_id!r}")
    return FeedbackPublic(rating=fb.rating, comment=fb.comment, sources=fb.sources)


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
