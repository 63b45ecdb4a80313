"""``POST /api/chat`` (one JSON answer) and ``POST /api/chat/stream`` (server-sent events)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from sse_starlette import EventSourceResponse

from citewise.api.auth import Reader
from citewise.api.deps import AgentDep, MayWriteDep, ReaderDep, StateDep
from citewise.api.schemas import ChatRequest, ChatResponse, InterruptPublic, SourcePublic
from citewise.api.sse import sse_response
from citewise.chat.agent import Agent, citation_dict
from citewise.types import DoneEvent, ErrorEvent, InterruptEvent, ToolCallEvent

router = APIRouter(prefix="/api", tags=["chat"])

_ERRORS: dict[int | str, dict[str, Any]] = {422: {"description": "blank question"},
           413: {"description": "question longer than max_request_chars"},
           404: {"description": "unknown conversation_id, or a pinned document that names "
                        "none the caller may read"}}


def _events(agent: Agent, chat_id: str, body: ChatRequest,  # type: ignore[no-untyped-def]
            reader: Reader, may_write: bool):
    """The turn's events, its search and scan limited to the collections ``reader`` may
    read; a directive that writes is proposed only when ``may_write`` (admin)."""
    asked = body.filters.model_dump(exclude_none=True) if body.filters else None
    return agent.run(chat_id, body.query, top_k=body.top_k, mode=body.mode,
                     filters=reader.filters(asked), context_hint=body.context_hint,
                     attachment=body.attachment, extractive=body.extractive,
                     may_write=may_write, page=body.page, documents=body.documents or ())


def _check_documents(agent: Agent, body: ChatRequest, reader: Reader) -> None:
    """NotFoundError (a 404) when a pinned document names none the caller may read."""
    if body.documents:
        asked = body.filters.model_dump(exclude_none=True) if body.filters else None
        agent.engine.document_question(body.query, body.documents, reader.filters(asked))


@router.post("/chat", responses=_ERRORS)
def chat(body: ChatRequest, agent: AgentDep, reader: ReaderDep,
         may_write: MayWriteDep) -> ChatResponse:
    """One turn, answered as JSON: ``{answer, sources, conversation_id, metrics, ...}``.
    An action that needs approval comes back in ``interrupt`` with an empty answer."""
    _check_documents(agent, body, reader)
    chat_id = agent.start(body.query, body.conversation_id, owner=reader.owner,
                          scope=reader.chat_scope)
    out = ChatResponse(answer="", sources=[], conversation_id=chat_id, metrics={}, found=False,
                       mode="none")
    for event in _events(agent, chat_id, body, reader, may_write):
        if isinstance(event, DoneEvent):
            a = event.answer
            out = ChatResponse(
                answer=a.text, sources=[SourcePublic(**citation_dict(c)) for c in a.citations],
                conversation_id=chat_id, metrics=a.metrics, found=a.found, mode=a.mode,
                page_document=out.page_document)
        elif isinstance(event, InterruptEvent):
            out.interrupt = InterruptPublic(action=event.action, input=event.input,
                                            resume_token=event.resume_token)
        elif isinstance(event, ErrorEvent):
            out.error = event.message
        elif isinstance(event, ToolCallEvent) and event.tool == "search":
            out.page_document = event.input.get("prefer_document")
    return out


@router.post("/chat/stream", response_class=EventSourceResponse, responses=_ERRORS)
async def chat_stream(body: ChatRequest, state: StateDep, reader: ReaderDep,
                      may_write: MayWriteDep) -> EventSourceResponse:
    """One turn as server-sent events: ``status``, ``thinking``, ``tool_call``,
    ``tool_result``, ``token``... then ``done`` (or ``interrupt`` or ``error``); each
    ``data:`` is JSON (see docs/api.md). Leaving early stops the work."""
    agent = state.agent
    await run_in_threadpool(_check_documents, agent, body, reader)
    chat_id = await run_in_threadpool(lambda: agent.start(
        body.query, body.conversation_id, owner=reader.owner, scope=reader.chat_scope))
    return sse_response(lambda: _events(agent, chat_id, body, reader, may_write), state.streams,
                        conversation_id=chat_id, ping_seconds=state.settings.sse_ping_seconds)
