"""Whole-document questions and pinned documents over ``POST /api/chat`` and its stream, on a
real index (no LLM: the sections and the extractive summary)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.api.conftest import sse_events


@pytest.fixture
def client(make_app, docs_dir):
    app, _ = make_app(ingest=[docs_dir])
    with TestClient(app, base_url="http://127.0.0.1") as c:
        yield c


def test_the_sections_of_a_pinned_document_come_from_its_headings(client) -> None:
    out = client.post("/api/chat", json={"query": "List the sections",
                                         "documents": ["warranty.md"]}).json()
    # the title above every section is not a section of its own
    assert out["answer"] == ("The sections of data/warranty.md, in document order:\n"
                             "- Batteries [1]")
    assert [s["section"] for s in out["sources"]] == [["Warranty", "Batteries"]]
    assert out["mode"] == "extractive" and out["found"]


def test_a_named_document_is_summarised_and_the_stream_says_it_was_read(client) -> None:
    with client.stream("POST", "/api/chat/stream",
                       json={"query": "Summarize payroll.md", "extractive": True}) as r:
        events = list(sse_events(r.iter_lines()))
    calls = [data for kind, data in events if kind == "tool_call"]
    assert [(c["tool"], c["input"]) for c in calls] == [
        ("read_document", {"task": "summary", "documents": ["data/payroll.md"],
                           "pinned": False})]
    kind, done = events[-1]
    assert kind == "done"
    assert "Salaries are paid on the 25th day of each month. [1]" in done["answer"]


def test_a_pinned_document_limits_an_ordinary_question_and_an_unknown_one_is_404(
        client) -> None:
    out = client.post("/api/chat", json={"query": "How long does the warranty last?",
                                         "extractive": True,
                                         "documents": ["payroll"]}).json()
    assert {s["path"] for s in out["sources"]} <= {"data/payroll.md"}
    r = client.post("/api/chat", json={"query": "Summarize it", "documents": ["fridge.md"]})
    assert r.status_code == 404 and "fridge.md" in r.json()["detail"]
    r = client.post("/api/chat/stream", json={"query": "Summarize it", "documents": ["x"]})
    assert r.status_code == 404
