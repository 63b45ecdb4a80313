"""API fixtures: a real uvicorn server on 127.0.0.1 at a free port, apps on fresh homes, and a
real slow OpenAI-compatible HTTP server for streaming, heartbeat and disconnect cases."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Self

import pytest
import uvicorn

from citewise.api.app import create_app
from citewise.config import Settings
from citewise.engine import Engine
from tests.llm_fixtures import serving

WARRANTY = ("# Warranty\n\nThe laptop warranty lasts 24 months from the date of purchase.\n\n"
            "## Batteries\n\nBatteries are covered for 12 months only.\n")
PAYROLL = ("# Payroll calendar\n\nSalaries are paid on the 25th day of each month. When the "
           "25th falls on a weekend, salaries are paid on the Friday before.\n")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    """uvicorn serving ``app`` in a thread; ``url`` is ``http://127.0.0.1:PORT``."""

    def __init__(self, app) -> None:  # type: ignore[no-untyped-def]
        self.app = app
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                                    log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Self:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture
def docs_dir(tmp_path) -> Path:
    d = tmp_path / "data"
    d.mkdir()
    (d / "warranty.md").write_text(WARRANTY, encoding="utf-8")
    (d / "payroll.md").write_text(PAYROLL, encoding="utf-8")
    return d


@pytest.fixture
def make_app(make_engine):
    """``make_app(ingest=[paths], **settings) -> (app, engine)`` on the test's home, with the
    session's embedding model; the same home each call (a restart sees the same data)."""

    def make(ingest=(), **overrides):  # type: ignore[no-untyped-def]
        engine: Engine = make_engine(threads=1, llm_threads=1, **overrides)
        if ingest:
            engine.ingest(list(ingest))
        return create_app(engine.settings, engine), engine

    return make


@pytest.fixture
def live(make_app):
    """``with live(app) as server: server.url``."""
    return LiveServer


class _SlowLLM(BaseHTTPRequestHandler):
    """An OpenAI-compatible streaming chat endpoint: waits ``delay`` s, then writes one token
    every ``interval`` s, ``tokens`` in all; records when the client goes away."""

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802
        body = json.dumps({"object": "list", "data": [{"id": "slow", "object": "model"}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        srv = self.server
        srv.requests += 1  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        time.sleep(srv.delay)  # type: ignore[attr-defined]
        try:
            for i in range(srv.tokens):  # type: ignore[attr-defined]
                delta = {"id": "x", "object": "chat.completion.chunk", "created": 0,
                         "model": "slow", "choices": [{"index": 0, "delta": {
                             "content": "The laptop warranty lasts 24 months [1]. " if i == 0
                             else "More words. "}, "finish_reason": None}]}
                self.wfile.write(f"data: {json.dumps(delta)}\n\n".encode())
                self.wfile.flush()
                srv.written += 1  # type: ignore[attr-defined]
                time.sleep(srv.interval)  # type: ignore[attr-defined]
            end = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "slow",
                   "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            self.wfile.write(f"data: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode())
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            srv.closed_at = time.monotonic()  # type: ignore[attr-defined]


@pytest.fixture
def slow_llm() -> Iterator[ThreadingHTTPServer]:
    """A real slow LLM server; set ``.delay``, ``.interval``, ``.tokens``; read ``.url``,
    ``.requests``, ``.written`` and ``.closed_at`` (monotonic time the client left)."""
    with serving(_SlowLLM, daemon_threads=True, delay=0.0, interval=0.2, tokens=300,
                 requests=0, written=0, closed_at=None) as server:
        yield server


def sse_events(lines: Iterator[str]) -> Iterator[tuple[str, dict]]:
    """(event, data) pairs parsed from an SSE body's lines (comments skipped)."""
    event, data = "message", []
    for line in lines:
        if line == "":
            if data:
                yield event, json.loads("\n".join(data))
            event, data = "message", []
        elif line.startswith(":"):
            continue
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())


def settings_of(app) -> Settings:  # type: ignore[no-untyped-def]
    return app.state.citewise.settings
