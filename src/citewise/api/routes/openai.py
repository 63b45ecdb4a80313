"""An OpenAI-compatible chat endpoint, so OpenAI clients and chat UIs can use the collection
as a model named ``citewise``.

``GET /v1/models`` lists the one model and ``GET /v1/models/citewise`` retrieves it; any
other model name, there or in a chat request, is OpenAI's 404 ``model_not_found``.

``POST /v1/chat/completions``: the last message is the question (it must be the user's);
earlier user/assistant pairs are the history (a follow-up is rewritten by the history rule);
``system`` and ``developer`` messages are the client's instructions, appended to citewise's
own rules in the LLM's system message (never replacing them: the rules that keep answers to
the cited passages still win; the extractive answerer, which has no prompt, does not use
them). Nothing is saved. The answer text carries numbered citations ``[n]`` and ends with a
"Sources:" list; the response's ``sources`` field holds the citations (as in ``/api/chat``:
``n``, ``path``, ``page``, ``section``, ``char_start``/``char_end``, ``location``, ...), on
the last chunk when streaming. ``usage`` counts tokens with the embedding model's tokenizer
(the one citewise sizes prompts with): ``prompt_tokens`` the messages sent to the LLM (the
rules, the evidence, the history and the question) or, when no LLM wrote the answer, the
request's messages; ``completion_tokens`` the returned content. With ``stream_options:
{"include_usage": true}`` a stream ends with a chunk holding no choices and the ``usage``.
Other request fields are accepted and ignored. Errors have OpenAI's shape
(:mod:`citewise.api.errors`).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from sse_starlette import EventSourceResponse

from citewise.api.auth import Reader
from citewise.api.deps import ReaderDep, StateDep
from citewise.api.errors import STATUS, openai_error, stream_error
from citewise.api.schemas import OpenAIChatRequest, OpenAIModel, OpenAIModels
from citewise.api.sse import SSE_HEADERS, bridge
from citewise.chat.agent import Agent, citation_dict, validate_query
from citewise.chat.sessions import Turn
from citewise.errors import QueryError
from citewise.types import Answer, DoneEvent, ErrorEvent, Event, TokenEvent

router = APIRouter(prefix="/v1", tags=["openai"])

MODEL = "citewise"


def _split(body: OpenAIChatRequest) -> tuple[str, list[Turn], str]:
    """``(question, history turns, instructions)`` of a request; raises QueryError when the
    last message is not the user's."""
    last = body.messages[-1]
    if last.role != "user":
        raise QueryError("the last message must be the user's question")
    turns: list[Turn] = []
    question: str | None = None
    instructions: list[str] = []
    for m in body.messages[:-1]:
        if m.role in ("system", "developer"):
            if m.text().strip():
                instructions.append(m.text().strip())
        elif m.role == "user":
            question = m.text()
        elif m.role == "assistant" and question is not None:
            turns.append((question, m.text()))
            question = None
    return last.text(), turns, "\n".join(instructions)


def sources_footer(answer: Answer) -> str:
    """"\\n\\nSources:\\n[1] location\\n..." for the citations the text uses (all when it
    uses none); "" without citations."""
    used = [c for c in answer.citations if c.n in answer.cited] or list(answer.citations)
    if not used:
        return ""
    return "\n\nSources:\n" + "\n".join(f"[{c.n}] {c.location}" for c in used)


def _events(agent: Agent, body: OpenAIChatRequest, reader: Reader) -> Iterator[Event]:
    question, turns, instructions = _split(body)
    return agent.stateless(question, turns, filters=reader.filters(), instructions=instructions)


def usage(body: OpenAIChatRequest, answer: Answer, content: str,
          count_tokens: Callable[[str], int]) -> dict[str, int]:
    """OpenAI's ``usage`` of one completion, in ``count_tokens`` tokens (see the module
    docstring)."""
    prompt = answer.metrics.get("prompt_tokens")
    prompt_tokens = int(prompt) if prompt is not None else sum(
        count_tokens(m.text()) for m in body.messages)
    completion_tokens = count_tokens(content) if content else 0
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}


def _unknown_model(model: str) -> JSONResponse:
    return openai_error(404, f"The model `{model}` does not exist or you do not have access "
                             "to it.", code="model_not_found")


def _event_error(event: ErrorEvent) -> JSONResponse:
    body = stream_error(event.message, event.code)
    status = {cls.__name__: s for cls, s in STATUS.items()}.get(event.code, 500)
    return JSONResponse(body, status_code=400 if status == 422 else status)


@router.get("/models")
def models() -> OpenAIModels:
    """The one model: ``citewise`` (the collection)."""
    return OpenAIModels(data=[OpenAIModel(id=MODEL)])


@router.get("/models/{model:path}", response_model=OpenAIModel,
            responses={404: {"description": "OpenAI's model_not_found error"}})
def retrieve_model(model: str) -> Any:
    """One model by name: ``citewise``; any other is OpenAI's 404 ``model_not_found``."""
    if model != MODEL:
        return _unknown_model(model)
    return OpenAIModel(id=MODEL)


@router.api_route("/responses", methods=["GET", "POST"], include_in_schema=False)
def responses() -> JSONResponse:
    """OpenAI's Responses API is not served: an OpenAI-shaped 404 that names the endpoint to
    call instead (agent frameworks that default to it show the message)."""
    return openai_error(404, "citewise serves OpenAI's Chat Completions API, not the Responses "
                             "API: send the request to POST /v1/chat/completions (with "
                             "`messages`) instead of /v1/responses.",
                        code="unsupported_endpoint")


@router.post("/chat/completions")
async def chat_completions(body: OpenAIChatRequest, state: StateDep, reader: ReaderDep) -> Any:
    """A chat completion (``stream: true`` for ``chat.completion.chunk`` events)."""
    if body.model != MODEL:
        return _unknown_model(body.model)
    agent = state.agent
    question, _, _ = _split(body)
    validate_query(question, state.settings)  # 400 / 413 before anything runs
    cid, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
    if not body.stream:
        def run() -> tuple[Answer | None, ErrorEvent | None, dict[str, int]]:
            for event in _events(agent, body, reader):
                if isinstance(event, DoneEvent):
                    answer = event.answer
                    text = answer.text + sources_footer(answer)
                    return answer, None, usage(body, answer, text,
                                               state.engine.embedder.count_tokens)
                if isinstance(event, ErrorEvent):
                    return None, event, {}
            return None, ErrorEvent("the answer ended before it was complete", "Incomplete"), {}

        answer, error, used = await run_in_threadpool(run)
        if answer is None:
            assert error is not None
            return _event_error(error)
        return {
            "id": cid, "object": "chat.completion", "created": created, "model": MODEL,
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                         "message": {"role": "assistant",
                                     "content": answer.text + sources_footer(answer)}}],
            "usage": used,
            "sources": [citation_dict(c) for c in answer.citations],
        }

    include_usage = bool(body.stream_options and body.stream_options.include_usage)

    def chunk(delta: dict[str, Any], finish: str | None = None,
              **extra: Any) -> dict[str, str]:
        return {"data": json.dumps({
            "id": cid, "object": "chat.completion.chunk", "created": created, "model": MODEL,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra},
            ensure_ascii=False)}

    async def frames() -> AsyncIterator[dict[str, str]]:
        yield chunk({"role": "assistant", "content": ""})
        streamed: list[str] = []
        async for event in bridge(lambda: _events(agent, body, reader), state.streams):
            if isinstance(event, TokenEvent):
                streamed.append(event.content)
                yield chunk({"content": event.content})
            elif isinstance(event, DoneEvent):
                a = event.answer
                rest = ("" if streamed else a.text) + sources_footer(a)
                if rest:
                    streamed.append(rest)
                    yield chunk({"content": rest})
                yield chunk({}, "stop", sources=[citation_dict(c) for c in a.citations])
                if include_usage:
                    used = await run_in_threadpool(
                        usage, body, a, "".join(streamed), state.engine.embedder.count_tokens)
                    yield {"data": json.dumps({
                        "id": cid, "object": "chat.completion.chunk", "created": created,
                        "model": MODEL, "choices": [], "usage": used})}
            elif isinstance(event, ErrorEvent):
                yield {"data": json.dumps(stream_error(event.message, event.code))}
        yield {"data": "[DONE]"}

    return EventSourceResponse(frames(), headers=SSE_HEADERS,
                               ping=state.settings.sse_ping_seconds)
