"""Access control (issue 10): read keys per collection over every reading endpoint, and
secrets kept out of logs and error messages. Real index, real model, real uvicorn server."""

from __future__ import annotations

import json
import logging

import httpx
import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from citewise.config import Settings
from tests.api.conftest import LiveServer, sse_events

ADMIN = "admin-key-0123456789"
KEY_A = "read-key-alpha-0123456789"
KEY_B = "read-key-beta-0123456789"
LLM_KEY = "sk-llm-secret-0123456789"
QUESTION = "How long does the laptop warranty last?"

PUBLIC = ("# Warranty\n\nThe laptop warranty lasts 24 months from the date of purchase.\n\n"
          "## Batteries\n\nBatteries are covered for 12 months only.\n")
# the private document answers the same question better, so without the filter it would win
PRIVATE = ("# Laptop warranty (internal)\n\nHow long does the laptop warranty last? The laptop "
           "warranty lasts 60 months for staff laptops, code SILVERFINCH.\n")


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def secured(make_app, tmp_path):
    """An app whose index holds collection ``alpha`` (public warranty, payroll) and ``beta``
    (a private warranty note); KEY_A reads alpha, KEY_B reads beta, ADMIN everything."""
    alpha, beta = tmp_path / "alpha", tmp_path / "beta"
    alpha.mkdir()
    beta.mkdir()
    (alpha / "warranty.md").write_text(PUBLIC, encoding="utf-8")
    (alpha / "payroll.md").write_text("# Payroll\n\nSalaries are paid on the 25th.\n",
                                      encoding="utf-8")
    (beta / "staff_warranty.md").write_text(PRIVATE, encoding="utf-8")
    app, engine = make_app(api_key=ADMIN, api_keys={KEY_A: ["alpha"], KEY_B: ["beta"]})
    engine.ingest([alpha], collection="alpha")
    engine.ingest([beta], collection="beta")
    private = next(d for d in engine.store.documents() if d.collection == "beta")
    return app, engine, private


def _paths(sources) -> set[str]:  # type: ignore[no-untyped-def]
    return {s["path"] for s in sources}


def test_a_key_never_reads_a_collection_it_is_not_granted(secured):
    app, engine, private = secured
    private_chunk = engine.store.chunks_of(private.id)[0].id
    # unfiltered, the private note is the best match: the filter is what keeps it out
    assert engine.search(QUESTION).hits[0].document.id == private.id
    with LiveServer(app) as server, httpx.Client(base_url=server.url, timeout=60) as c:
        # chat (JSON)
        r = c.post("/api/chat", json={"query": QUESTION, "top_k": 5}, headers=auth(KEY_A))
        body = r.json()
        assert r.status_code == 200 and "24 months" in body["answer"]
        assert _paths(body["sources"]) == {"alpha/warranty.md"}
        assert "SILVERFINCH" not in json.dumps(body) and "60 months" not in body["answer"]
        # asking for the other collection explicitly gives nothing, not its chunks
        r = c.post("/api/chat", json={"query": QUESTION, "filters": {"collections": ["beta"]}},
                   headers=auth(KEY_A))
        assert r.json()["sources"] == [] and not r.json()["found"]
        # chat (SSE): the search tool's hits and the done event's sources
        with c.stream("POST", "/api/chat/stream", json={"query": QUESTION},
                      headers=auth(KEY_A)) as s:
            events = list(sse_events(s.iter_lines()))
        hits = [h for e, d in events if e == "tool_result" for h in d["result"]["hits"]]
        assert hits and all(h["path"].startswith("alpha/") for h in hits)
        assert events[-1][0] == "done" and _paths(events[-1][1]["sources"]) == {
            "alpha/warranty.md"}
        assert "SILVERFINCH" not in json.dumps(events)
        # the OpenAI-compatible endpoint, plain and streamed
        msg = {"model": "citewise", "messages": [{"role": "user", "content": QUESTION}]}
        r = c.post("/v1/chat/completions", json=msg, headers=auth(KEY_A))
        assert _paths(r.json()["sources"]) == {"alpha/warranty.md"}
        assert "SILVERFINCH" not in r.text and "60 months" not in r.text
        with c.stream("POST", "/v1/chat/completions", json={**msg, "stream": True},
                      headers=auth(KEY_A)) as s:
            streamed = "".join(s.iter_lines())
        assert "alpha/warranty.md" in streamed and "SILVERFINCH" not in streamed
        # the source viewer: the private chunk does not exist for key A
        assert c.get(f"/api/sources/{private_chunk}", headers=auth(KEY_A)).status_code == 404
        r = c.get(f"/api/sources/{private_chunk}", headers=auth(KEY_B))
        assert r.status_code == 200 and "SILVERFINCH" in r.json()["text"]
        assert c.get(f"/api/sources/{private_chunk}", headers=auth(ADMIN)).status_code == 200
        # the document list
        listed = c.get("/api/documents", headers=auth(KEY_A)).json()["data"]
        assert {d["path"] for d in listed} == {"alpha/warranty.md", "alpha/payroll.md"}
        assert {d["collection"] for d in listed} == {"alpha"}
        assert len(c.get("/api/documents", headers=auth(ADMIN)).json()["data"]) == 3
        # key B gets its own note, through the same endpoints
        r = c.post("/api/chat", json={"query": QUESTION}, headers=auth(KEY_B))
        assert _paths(r.json()["sources"]) == {"beta/staff_warranty.md"}
        chat_b = r.json()["conversation_id"]
        # chats: key A neither lists, reads, continues nor deletes key B's conversation
        listed = c.get("/api/chats", headers=auth(KEY_A)).json()
        assert chat_b not in {x["id"] for x in listed["data"]} and listed["count"] == 3
        assert c.get(f"/api/chats/{chat_b}", headers=auth(KEY_A)).status_code == 404
        r = c.post("/api/chat", json={"query": "and the batteries?", "conversation_id": chat_b},
                   headers=auth(KEY_A))
        assert r.status_code == 404
        assert c.delete(f"/api/chats/{chat_b}", headers=auth(KEY_A)).status_code == 404
        assert c.get(f"/api/chats/{chat_b}", headers=auth(KEY_B)).status_code == 200
        assert c.get(f"/api/chats/{chat_b}", headers=auth(ADMIN)).status_code == 200


def test_reading_needs_a_key_and_admin_endpoints_need_the_admin_key(secured):
    app, _, private = secured
    files = {"files": ("new.txt", b"Apples are red.", "text/plain")}
    with TestClient(app, base_url="http://127.0.0.1") as c:
        for method, url, kwargs in (
                ("POST", "/api/chat", {"json": {"query": QUESTION}}),
                ("POST", "/api/chat/stream", {"json": {"query": QUESTION}}),
                ("GET", "/api/documents", {}),
                ("GET", "/api/chats", {}),
                ("POST", "/v1/chat/completions", {"json": {"model": "citewise", "messages": [
                    {"role": "user", "content": QUESTION}]}})):
            assert c.request(method, url, **kwargs).status_code == 401, url
            r = c.request(method, url, headers=auth("not-a-key-at-all"), **kwargs)
            assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer", url
        # a read key is not an admin key
        for key in (KEY_A, KEY_B):
            assert c.post("/api/documents", files=files, headers=auth(key)).status_code == 401
            assert c.delete(f"/api/documents/{private.id}", headers=auth(key)).status_code == 401
            assert c.post("/api/reindex", headers=auth(key)).status_code == 401
        r = c.post("/api/documents", files=files, params={"collection": "gamma"},
                   headers={"X-API-Key": ADMIN})
        assert r.status_code == 201 and r.json()["files"][0]["status"] == "added"
        # the new collection is readable by no read key, and by the admin key
        docs = c.get("/api/documents", headers=auth(KEY_A)).json()["data"]
        assert "new.txt" not in {d["path"] for d in docs}
        docs = c.get("/api/documents", headers=auth(ADMIN)).json()["data"]
        assert {d["collection"] for d in docs if d["path"] == "new.txt"} == {"gamma"}
        assert c.post("/api/documents", files=files, params={"collection": "../x"},
                      headers=auth(ADMIN)).status_code == 422


def test_secrets_never_reach_logs_or_error_messages(make_app, docs_dir, caplog):
    caplog.set_level(logging.DEBUG)
    # a provider that cannot be reached: the answer falls back, the error path is logged
    app, _ = make_app(ingest=[docs_dir], api_key=ADMIN, api_keys={KEY_A: ["default"]},
                      llm_provider="openai-compatible", llm_base_url="http://127.0.0.1:9/v1",
                      llm_model="x", llm_api_key=LLM_KEY, planner="rules")
    bodies = []
    with TestClient(app, base_url="http://127.0.0.1") as c:
        r = c.post("/api/chat", json={"query": QUESTION}, headers=auth(KEY_A))
        assert r.status_code == 200 and r.json()["answer"]
        bodies.append(r.text)
        with c.stream("POST", "/api/chat/stream", json={"query": QUESTION},
                      headers=auth(KEY_A)) as s:
            bodies.append("".join(s.iter_lines()))
        for key in (KEY_A + "x", ADMIN[:-1], LLM_KEY):  # near misses and the wrong secret
            r = c.post("/api/chat", json={"query": QUESTION}, headers=auth(key))
            assert r.status_code == 401
            bodies.append(r.text)
            r = c.post("/api/reindex", headers=auth(key))
            assert r.status_code == 401
            bodies.append(r.text)
        bodies.append(c.get("/api/health", headers=auth(KEY_A)).text)
    assert "127.0.0.1:9" in caplog.text or "127.0.0.1:9" in "".join(bodies)  # the path ran
    # a settings error names the field, never the key it refused
    with pytest.raises(ValidationError) as err:
        Settings(api_keys={KEY_A: "alpha"})
    bodies.append(str(err.value))
    with pytest.raises(ValidationError) as err:
        Settings(api_keys={KEY_A: ["../etc"]})
    bodies.append(str(err.value))
    assert "api_keys" in bodies[-1]
    logged = caplog.text + "".join(bodies) + repr(app.state.citewise.settings)
    for secret in (ADMIN, KEY_A, LLM_KEY, KEY_A[:-1]):
        assert secret not in logged, secret
