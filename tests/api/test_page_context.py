"""The page a question is asked from (issue 24, item 7): ``page`` on ``POST /api/chat`` and
``/api/chat/stream`` over a real index. The document that page was built from is preferred
for an ambiguous question and said so; a page that maps to nothing changes nothing; a
question another document answers better is still answered from it."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.api.conftest import sse_events

#: three pages that each say how to install something with pip: "How do I install it with
#: pip?" is answered by all of them
PAGES = {
    "install.md": "# Installing\n\nInstall citewise with pip: run pip install citewise in a "
                  "virtual environment. The installation needs Python 3.11.\n",
    "server.md": "# Running the server\n\nInstall the server with pip: run pip install "
                 "citewise, then start it with citewise serve. The server listens on port "
                 "8765 and serves the chat page.\n",
    "desktop.md": "# Desktop window\n\nInstall the desktop window with pip: run pip install "
                  "citewise, then open it with citewise desktop.\n",
}
AMBIGUOUS = "How do I install it with pip?"


@pytest.fixture
def client(make_app, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in PAGES.items():
        (docs / name).write_text(text, encoding="utf-8")
    app, _ = make_app(ingest=[docs])
    with TestClient(app, base_url="http://127.0.0.1") as c:
        yield c


def ask(client, query: str = AMBIGUOUS, **body):  # type: ignore[no-untyped-def]
    response = client.post("/api/chat", json={"query": query, "extractive": True, **body})
    assert response.status_code == 200, response.text
    return response.json()


def first_source(answer: dict) -> str:
    assert answer["found"] and answer["sources"], answer
    return answer["sources"][0]["path"]


def test_the_page_s_document_moves_up_for_an_ambiguous_question(client):
    plain = ask(client)
    assert plain["page_document"] is None
    assert {s["path"] for s in plain["sources"]} > {first_source(plain)}  # several files answer
    for page, path in (("/server/", "docs/server.md"), ("/docs/desktop.html", "docs/desktop.md"),
                       ("/en/latest/install/", "docs/install.md")):
        preferred = ask(client, page=page)
        assert preferred["page_document"] == path
        assert first_source(preferred) == path, (page, preferred["sources"])
    # at least one page changed the order: the preference did something
    assert any(first_source(ask(client, page=f"/{p[:-3]}/")) != first_source(plain)
               for p in PAGES)


def test_a_page_that_maps_to_nothing_changes_nothing(client):
    plain = ask(client)
    for page in ("/blog/2026/release-notes/", "/", "../../etc/passwd", ""):
        same = ask(client, page=page)
        assert same["page_document"] is None
        assert [s["chunk_id"] for s in same["sources"]] == \
            [s["chunk_id"] for s in plain["sources"]]
        assert same["answer"] == plain["answer"]


def test_better_evidence_from_another_document_is_not_hidden(client):
    answer = ask(client, "Which port does the server listen on?", page="/desktop/")
    assert answer["page_document"] == "docs/desktop.md"
    assert first_source(answer) == "docs/server.md" and "8765" in answer["answer"]


def test_the_stream_says_which_document_is_preferred(client):
    with client.stream("POST", "/api/chat/stream",
                       json={"query": AMBIGUOUS, "extractive": True, "page": "/server/"}) as r:
        assert r.status_code == 200
        events = list(sse_events(r.iter_lines()))
    statuses = [d for e, d in events if e == "status"]
    assert statuses[0] == {"message": "preferring docs/server.md (the page you are on)",
                           "stage": "page"}
    call = next(d for e, d in events if e == "tool_call")
    assert call["input"]["prefer_document"] == "docs/server.md"
    done = events[-1]
    assert done[0] == "done" and done[1]["sources"][0]["path"] == "docs/server.md"


def test_a_page_outside_the_question_s_scope_is_not_preferred(client):
    answer = ask(client, page="/server/", filters={"paths": ["install.md", "desktop.md"]})
    assert answer["page_document"] is None
    assert {s["path"] for s in answer["sources"]} <= {"docs/install.md", "docs/desktop.md"}


def test_a_page_longer_than_500_characters_is_refused(client):
    response = client.post("/api/chat", json={"query": AMBIGUOUS, "page": "/a" * 300})
    assert response.status_code == 422 and "page" in response.text
