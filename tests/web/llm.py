"""A real OpenAI-compatible HTTP server that streams a scripted answer: the browser tests use
it where they need an answer of a given shape (citations in a given order, Markdown, HTML
that must stay text) or one that streams slowly enough to watch."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.llm_fixtures import running


class _Scripted(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 - the model list
        body = json.dumps({"object": "list", "data": [{"id": "scripted", "object": "model"}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def do_POST(self) -> None:  # noqa: N802 - a streamed chat completion
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        srv: ScriptedLLM = self.server  # type: ignore[assignment]
        srv.requests += 1
        prompt = (request.get("messages") or [{}])[-1].get("content", "")
        pieces = srv.respond(prompt) if srv.respond else srv.pieces
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        time.sleep(srv.delay)
        try:
            for piece in pieces:
                delta = {"id": "x", "object": "chat.completion.chunk", "created": 0,
                         "model": "scripted", "choices": [{"index": 0, "delta": {
                             "content": piece}, "finish_reason": None}]}
                self.wfile.write(f"data: {json.dumps(delta)}\n\n".encode())
                self.wfile.flush()
                time.sleep(srv.interval)
            end = {"id": "x", "object": "chat.completion.chunk", "created": 0,
                   "model": "scripted", "choices": [{"index": 0, "delta": {},
                                                     "finish_reason": "stop"}]}
            self.wfile.write(f"data: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode())
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass


class ScriptedLLM(ThreadingHTTPServer):
    """Streams ``pieces`` (or ``respond(last message) -> pieces``) one every ``interval`` s
    after ``delay`` s; ``url`` is its /v1."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Scripted)
        self.pieces: list[str] = ["The laptop warranty lasts 24 months [1]."]
        self.respond: Callable[[str], list[str]] | None = None
        self.delay = 0.0
        self.interval = 0.0
        self.requests = 0
        self.url = f"http://127.0.0.1:{self.server_address[1]}/v1"


def passages(prompt: str) -> dict[int, str]:
    """The numbered passages of an answer prompt's evidence block: {n: text}."""
    found = re.findall(r'^\[(\d+)\] \([^\n]*?\) (.*?)(?=\n\[\d+\] \(|\n</evidence>)',
                       prompt, re.DOTALL | re.MULTILINE)
    return {int(n): text for n, text in found}


@contextmanager
def scripted_llm() -> Iterator[ScriptedLLM]:
    with running(ScriptedLLM()) as server:
        yield server
