"""Server-sent events: the agent's synchronous event stream, served without blocking the
server and stopped when the client leaves.

:func:`bridge` runs an event generator in its own thread and hands its events to the event
loop through a queue. When the response ends early (the client disconnected and
sse-starlette cancelled the response), the thread sees the stop flag after the event it is
producing, closes the generator (which closes the LLM's HTTP response, so generation stops
and the partial turn is saved as ``interrupted``), and leaves. :class:`StreamCounter` counts
running streams for ``/api/health``.

Every response carries ``Cache-Control: no-cache`` and ``X-Accel-Buffering: no`` so reverse
proxies pass events on at once, and a ``: ping`` comment after ``sse_ping_seconds`` of silence
keeps idle proxies from closing the connection (case C31). A stream always ends with
``done``, ``interrupt`` or ``error``: one that would end otherwise gets an ``error`` event.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import asdict
from typing import Any, Self

from sse_starlette import EventSourceResponse

from citewise.chat.agent import citation_dict
from citewise.errors import CitewiseError
from citewise.types import DoneEvent, ErrorEvent, Event, InterruptEvent

log = logging.getLogger(__name__)

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
_END = object()


class StreamCounter:
    """How many event streams are producing right now (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._n = 0

    def __enter__(self) -> Self:
        with self._lock:
            self._n += 1
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._n -= 1

    @property
    def active(self) -> int:
        return self._n


def done_payload(event: DoneEvent, conversation_id: str | None) -> dict[str, Any]:
    """The ``done`` event's JSON: ``answer`` (text), ``sources``, ``metrics`` (milliseconds
    and counts), ``conversation_id``, and ``found``, ``mode``, ``cited``, ``model``,
    ``fallback_reason``, ``unsupported`` (sentences their citations do not support)."""
    a = event.answer
    return {
        "answer": a.text,
        "sources": [citation_dict(c) for c in a.citations],
        "metrics": a.metrics,
        "conversation_id": conversation_id,
        "found": a.found,
        "mode": a.mode,
        "cited": list(a.cited),
        "model": a.model,
        "fallback_reason": a.fallback_reason,
        "unsupported": [s.text for s in a.unsupported],
    }


def event_payload(event: Event, conversation_id: str | None) -> dict[str, Any]:
    """An event's JSON payload (its fields without ``type``; see DESIGN.md, Events)."""
    if isinstance(event, DoneEvent):
        return done_payload(event, conversation_id)
    out = asdict(event)
    out.pop("type", None)
    return out


async def bridge(make_events: Callable[[], Iterator[Event]],
                 counter: StreamCounter) -> AsyncIterator[Event]:
    """The events of ``make_events()``, produced in a worker thread (see the module
    docstring). Exceptions become an ``error`` event; the stream always ends with ``done``,
    ``interrupt`` or ``error``."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Any] = asyncio.Queue()
    stop = threading.Event()

    def put(item: Any) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # the loop is gone: the server is shutting down
            stop.set()

    def work() -> None:
        with counter:
            events: Iterator[Event] | None = None
            last: Event | None = None
            try:
                events = make_events()
                for last in events:
                    if stop.is_set():
                        break
                    put(last)
                else:
                    if not isinstance(last, (DoneEvent, ErrorEvent, InterruptEvent)):
                        put(ErrorEvent("the answer ended before it was complete", "Incomplete"))
            except CitewiseError as err:
                put(ErrorEvent(str(err), type(err).__name__))
            except Exception:
                log.exception("event stream failed")
                put(ErrorEvent("internal error; see the server log", "InternalError"))
            finally:
                if events is not None and hasattr(events, "close"):
                    events.close()
                put(_END)

    threading.Thread(target=work, name="citewise-stream", daemon=True).start()
    try:
        while True:
            item = await queue.get()
            if item is _END:
                return
            yield item
    finally:
        stop.set()


def sse_response(make_events: Callable[[], Iterator[Event]], counter: StreamCounter, *,
                 conversation_id: str | None, ping_seconds: float) -> EventSourceResponse:
    """An ``text/event-stream`` response of DESIGN.md's events: ``event: <type>`` and
    ``data: <JSON payload>`` per event; the ``X-Conversation-Id`` header names the chat, so a
    client knows it before ``done`` (an ``interrupt`` needs it to resume)."""

    async def frames() -> AsyncIterator[dict[str, str]]:
        async for event in bridge(make_events, counter):
            yield {"event": event.type,
                   "data": json.dumps(event_payload(event, conversation_id),
                                      ensure_ascii=False)}

    headers = dict(SSE_HEADERS)
    if conversation_id is not None:
        headers["X-Conversation-Id"] = conversation_id
    return EventSourceResponse(frames(), headers=headers, ping=ping_seconds)


__all__ = ["SSE_HEADERS", "StreamCounter", "bridge", "event_payload", "sse_response"]
