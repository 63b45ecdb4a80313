"""An OpenAI-compatible chat endpoint, so OpenAI clients and chat UIs can use the collection
as a model named ``citewise``.

``POST /v1/chat/completions``: the last message is the question (it must be the user's);
earlier user/assistant pairs are the history (a follow-up is rewritten by the history rule).
Nothing is saved. The answer text carries numbered citations ``[n]`` and ends with a
"Sources:" list; the response also has a ``sources`` field (citations as in ``/api/chat``),
on the last chunk when streaming. Request fields other than ``model``, ``messages`` and
``stream`` are accepted and ignored.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from sse_starlette import EventSourceResponse

from citewise.api.auth import Reader
from citewise.api.deps import ReaderDep, StateDep
from citewise.api.schemas import OpenAIChatRequest
from citewise.api.sse import SSE_HEADERS, bridge
from citewise.chat.agent import Agent, citation_dict, validate_query
from citewise.chat.sessions import Turn
from citewise.errors import QueryError
from citewise.types import Answer, DoneEvent, ErrorEvent, Event, TokenEvent

router = APIRouter(prefix="/v1", tags=["openai"])

MODEL = "citewise"


def _split(body: OpenAIChatRequest) -> tuple[str, list[Turn]]:
    last = body.messages[-1]
    if last.role != "user":
        raise QueryError("the last message must be the user's question")
    turns: list[Turn] = []
    question: str | None = None
    for m in body.messages[:-1]:
        if m.role == "user":
            question = m.text()
        elif m.role == "assistant" and question is not None:
            turns.append((question, m.text()))
            question = None
    return last.text(), turns


def sources_footer(answer: Answer) -> str:
    """"\\n\\nSources:\\n[1] location\\n..." for the citations the text uses (all when it
    uses none); "" without citations."""
    used = [c for c in answer.citations if c.n in answer.cited] or list(answer.citations)
    if not used:
        return ""
    return "\n\nSources:\n" + "\n".join(f"[{c.n}] {c.location}" for c in used)


def _events(agent: Agent, body: OpenAIChatRequest, reader: Reader) -> Iterator[Event]:
    question, turns = _split(body)
    return agent.stateless(question, turns, filters=reader.filters())


@router.get("/models")
def models() -> dict[str, Any]:
    """The one model: ``citewise`` (the collection)."""
    return {"object": "list",
            "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "citewise"}]}


@router.post("/chat/completions")
async def chat_completions(body: OpenAIChatRequest, state: StateDep, reader: ReaderDep) -> Any:
    """A chat completion (``stream: true`` for ``chat.completion.chunk`` events)."""
    agent = state.agent
    question, _ = _split(body)
    validate_query(question, state.settings)  # 422 / 413 before anything runs
    cid, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
    if not body.stream:
        def run() -> tuple[Answer | None, str | None]:
            for event in _events(agent, body, reader):
                if isinstance(event, DoneEvent):
                    return event.answer, None
                if isinstance(event, ErrorEvent):
                    return None, event.message
            return None, "no answer"

        answer, error = await run_in_threadpool(run)
        text = (answer.text + sources_footer(answer)) if answer else f"error: {error}"
        return {
            "id": cid, "object": "chat.completion", "created": created, "model": MODEL,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            "sources": [citation_dict(c) for c in answer.citations] if answer else [],
        }

    def chunk(delta: dict[str, Any], finish: str | None = None,
              **extra: Any) -> dict[str, str]:
        return {"data": json.dumps({
            "id": cid, "object": "chat.completion.chunk", "created": created, "model": MODEL,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra},
            ensure_ascii=False)}

    async def frames() -> AsyncIterator[dict[str, str]]:
        yield chunk({"role": "assistant", "content": ""})
        streamed = False
        async for event in bridge(lambda: _events(agent, body, reader), state.streams):
            if isinstance(event, TokenEvent):
                streamed = True
                yield chunk({"content": event.content})
            elif isinstance(event, DoneEvent):
                a = event.answer
                rest = ("" if streamed else a.text) + sources_footer(a)
                if rest:
                    yield chunk({"content": rest})
                yield chunk({}, "stop", sources=[citation_dict(c) for c in a.citations])
            elif isinstance(event, ErrorEvent):
                yield {"data": json.dumps({"error": {"message": event.message,
                                                     "type": event.code}})}
        yield {"data": "[DONE]"}

    return EventSourceResponse(frames(), headers=SSE_HEADERS,
                               ping=state.settings.sse_ping_seconds)
