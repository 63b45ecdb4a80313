"""Failure cases C24, C25, C31, C32, C33 and C35 through the HTTP API."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import insert

from citewise.chat.agent import NOT_A_QUESTION
from citewise.chat.sessions import ChatRow, MessageRow
from tests.api.conftest import LiveServer, sse_events
from tests.conftest import CASES


# --- C24: blank queries ---------------------------------------------------------------------
@pytest.mark.parametrize("query", ["", "   ", "\n\t", "\u200b\u200b"])
def test_c24_blank_query_is_422_and_loads_no_model(make_app, docs_dir, query):
    app, engine = make_app()
    engine.__dict__.pop("embedder", None)  # fresh: prove nothing loads it
    with TestClient(app, base_url="http://127.0.0.1") as c:
        for url in ("/api/chat", "/api/chat/stream"):
            r = c.post(url, json={"query": query})
            assert r.status_code == 422
            assert r.json() == {"detail": "the question is empty: type a question about your "
                                          "documents", "code": "QueryError"}
        r = c.post("/v1/chat/completions",
                   json={"model": "citewise", "messages": [{"role": "user", "content": query}]})
        assert r.status_code == 400  # OpenAI's status and shape for a bad request
        assert r.json()["error"]["code"] == "query_error"
        assert c.get("/api/chats").json()["count"] == 0
    assert engine.loaded() == {"embedder": False, "reranker": False, "llm": False}


@pytest.mark.parametrize("query", ["?", "🙂"])
def test_c24_no_words_asks_for_a_question(make_app, query):
    app, engine = make_app()
    engine.__dict__.pop("embedder", None)
    with TestClient(app, base_url="http://127.0.0.1") as c:
        r = c.post("/api/chat", json={"query": query})
    assert r.status_code == 200
    assert r.json()["answer"] == NOT_A_QUESTION
    assert engine.loaded()["embedder"] is False


# --- C25: long queries ----------------------------------------------------------------------
def test_c25_long_query_answered_from_its_end_and_100k_refused_fast(make_app):
    app, _ = make_app(ingest=[CASES / "c02_encrypted"])
    q10k = (CASES / "c25_long_query" / "query_10k.txt").read_text(encoding="utf-8")
    q100k = (CASES / "c25_long_query" / "query_100k.txt").read_text(encoding="utf-8")
    with TestClient(app, base_url="http://127.0.0.1") as c:
        r = c.post("/api/chat", json={"query": q10k})
        assert r.status_code == 200
        assert "25th" in r.json()["answer"]
        r = c.post("/api/chat", json={"query": q100k})
        assert r.status_code == 413
        assert r.json()["detail"] == (
            "the question is 100000 characters long; the limit is 20000 "
            "(CITEWISE_MAX_REQUEST_CHARS): ask a shorter question")
        assert c.post("/api/chat/stream", json={"query": q100k}).status_code == 413


# --- C31 and C32: SSE through proxies, client disconnects ------------------------------------
def test_c31_headers_and_heartbeat_while_the_llm_is_silent(make_app, docs_dir, slow_llm):
    slow_llm.delay, slow_llm.tokens = 1.6, 2
    app, _ = make_app(ingest=[docs_dir], llm_provider="llamacpp", llm_base_url=slow_llm.url,
                      llm_model="slow", planner="rules", sse_ping_seconds=0.5)
    with (LiveServer(app) as server, httpx.Client(base_url=server.url, timeout=30) as c,
          c.stream("POST", "/api/chat/stream",
                   json={"query": "How long does the laptop warranty last?"}) as r):
        assert r.headers["content-type"].startswith("text/event-stream")
        assert r.headers["cache-control"] == "no-cache"
        assert r.headers["x-accel-buffering"] == "no"
        lines = list(r.iter_lines())
    first_token = next(i for i, x in enumerate(lines) if x == "event: token")
    generate = next(i for i, x in enumerate(lines) if '"stage": "generate"' in x)
    pings = [i for i, x in enumerate(lines) if x.startswith(": ping")]
    assert any(generate < i < first_token for i in pings)  # the silent 1.6 s was pinged
    events = list(sse_events(iter(lines)))
    assert events[-1][0] == "done"
    assert events[-1][1]["answer"].startswith("The laptop warranty lasts 24 months [1].")


def test_c32_disconnect_stops_generation_and_saves_partial(make_app, docs_dir, slow_llm):
    slow_llm.interval, slow_llm.tokens = 0.2, 300  # a minute of tokens if nobody stops it
    app, _ = make_app(ingest=[docs_dir], llm_provider="llamacpp", llm_base_url=slow_llm.url,
                      llm_model="slow", planner="rules")
    with LiveServer(app) as server, httpx.Client(base_url=server.url, timeout=30) as c:
        with c.stream("POST", "/api/chat/stream",
                      json={"query": "How long does the laptop warranty last?"}) as r:
            for event, data in sse_events(r.iter_lines()):
                if event == "token":
                    break
            left = time.monotonic()
        # the response is closed: the client has gone
        while slow_llm.closed_at is None and time.monotonic() - left < 5:
            time.sleep(0.05)
        assert slow_llm.closed_at is not None
        assert slow_llm.written < 20  # the LLM call was aborted, not run to its 300 tokens
        deadline = time.monotonic() + 2
        while c.get("/api/health").json()["active_streams"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert c.get("/api/health").json()["active_streams"] == 0
        chats = c.get("/api/chats").json()["data"]
        messages = c.get(f"/api/chats/{chats[0]['id']}").json()["messages"]
        assert [m["status"] for m in messages] == ["complete", "interrupted"]
        assert messages[1]["content"].startswith("The laptop warranty lasts 24 months [1].")
        # the next request works normally
        r = c.post("/api/chat", json={"query": "hi"})
        assert r.status_code == 200


# --- C33: upload names ----------------------------------------------------------------------
# a name with '..' or an absolute path is refused (400); a long one is cut with a hash of the
# whole name, so two long names never become one (issue 18)
LONG = "a" * 296 + ".txt"
C33_NAMES = {
    "../../../../tmp/ragcases_pwned.txt": (400, None),
    "..\\..\\..\\ragcases_pwned.txt": (400, None),
    "/tmp/ragcases_pwned_abs.txt": (400, None),
    "%2e%2e%2f%2e%2e%2fragcases_pwned.txt": (201, "%2e%2e%2f%2e%2e%2fragcases_pwned.txt"),
    "notes/../../../ragcases_pwned.txt": (400, None),
    "evil\u0000.pdf": (201, "evil%00.pdf"),  # the client sends NUL percent-encoded
    LONG: (201, "a" * 107 + "~" + hashlib.sha256(LONG.encode()).hexdigest()[:8] + ".txt"),
    "CON.txt": (201, "CON_.txt"),
    "..": (400, None),
    "payload.exe": (400, None),
}


def test_c33_upload_names_never_leave_the_collection_folder(make_app, tmp_path):
    app, engine = make_app()
    folder = engine.settings.collection_dir
    payload = (CASES / "c33_traversal" / "payload.txt").read_bytes()
    before = {p for p in Path("/tmp").glob("ragcases_pwned*")}
    with TestClient(app, base_url="http://127.0.0.1") as c:
        for name, (status, stored) in C33_NAMES.items():
            r = c.post("/api/documents", files={"files": (name, payload, "text/plain")})
            assert r.status_code == status, (name, r.text)
            if stored is not None:
                assert r.json()["stored"] == [stored]
                assert (folder / stored).read_bytes() == payload
            else:
                assert "detail" in r.json()
    assert {p for p in Path("/tmp").glob("ragcases_pwned*")} == before
    written = {p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file()
               and ("ragcases" in p.name or p.name in ("evil%00.pdf", "CON_.txt"))}
    assert all(str(p).startswith("home/collections/default/") for p in written)
    assert sorted(os.listdir(folder)) == sorted({v for _, v in C33_NAMES.values() if v})


def test_upload_size_limit_is_413(make_app):
    app, engine = make_app(max_upload_mb=0.01)
    with TestClient(app, base_url="http://127.0.0.1") as c:
        r = c.post("/api/documents", files={"files": ("big.txt", b"x" * 20_000, "text/plain")})
    assert r.status_code == 413
    assert "0.01 MiB" in r.json()["detail"]
    assert not engine.settings.collection_dir.exists() or not any(
        engine.settings.collection_dir.iterdir())


# --- C35: thousands of chats ----------------------------------------------------------------
def test_c35_chat_list_is_paginated_searchable_and_fast(make_app):
    app, _ = make_app()
    sessions = app.state.citewise.sessions
    now = time.time()
    with sessions.engine.begin() as conn:
        conn.execute(insert(ChatRow), [
            {"id": f"{i:032x}", "title": f"Chat {i:04d}", "created": now + i,
             "updated": now + i, "summary": "", "summarized_upto": 0} for i in range(1, 5001)])
        conn.execute(insert(MessageRow), [
            {"chat_id": f"{i:032x}", "role": "user", "content": "hello", "status": "complete",
             "search_query": None, "sources": [], "metrics": {}, "created": now + i}
            for i in range(1, 5001)])
    with LiveServer(app) as server, httpx.Client(base_url=server.url, timeout=30) as c:
        first = c.get("/api/chats").json()
        assert first["count"] == 5000 and first["limit"] == 50 and first["next_offset"] == 50
        assert [x["title"] for x in first["data"][:2]] == ["Chat 5000", "Chat 4999"]
        assert first["data"][0]["message_count"] == 1
        last = c.get("/api/chats", params={"offset": 4990}).json()
        assert len(last["data"]) == 10 and last["next_offset"] is None
        found = c.get("/api/chats", params={"q": "chat 0042"}).json()
        assert found["count"] == 1 and found["data"][0]["title"] == "Chat 0042"
        assert c.get("/api/chats", params={"limit": 0}).status_code == 422
        # a page never holds more than the limit, wherever it starts (speed is a benchmark's)
        for i in range(0, 5000, 750):
            page = c.get("/api/chats", params={"offset": i}).json()
            assert len(page["data"]) == min(50, 5000 - i)
