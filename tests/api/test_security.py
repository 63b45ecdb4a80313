"""Issue 18: access control and data safety of the API, against ``create_app`` over real
files and a real SQLite index (real embedding model; rule planner, no LLM).

Chat directives run for the caller (a scan reads a document where it is, of a readable
collection only; an ingest is proposed to the admin alone), upload names keep their relative
path, collisions are refused, a failed re-upload keeps the good version, and the upload limit
holds for chunked bodies.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from citewise.errors import DocumentError
from tests.api.conftest import LiveServer, sse_events
from tests.conftest import CASES

ADMIN = "admin-key-0123456789"
KEY_A = "read-key-alpha-0123456789"
KEY_B = "read-key-beta-0123456789"

CONTRACT = """SERVICES AGREEMENT

1. Term. This Agreement begins on the Effective Date and continues for an initial term of one
(1) year unless either party gives notice of non-renewal.

2. Termination. Either party may terminate this Agreement for convenience upon thirty (30)
days prior written notice to the other party.

3. Governing Law. This Agreement shall be governed by the laws of the State of New York.
"""


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def two_collections(make_app, tmp_path):
    """An app with collection ``alpha`` (a contract) and ``beta`` (a note); KEY_A reads
    alpha, KEY_B reads beta, ADMIN everything. Returns (app, engine, contract document)."""
    alpha, beta = tmp_path / "alpha", tmp_path / "beta"
    alpha.mkdir()
    beta.mkdir()
    (alpha / "contract.txt").write_text(CONTRACT, encoding="utf-8")
    (beta / "note.md").write_text("# Note\n\nThe beta code word is SILVERFINCH.\n",
                                  encoding="utf-8")
    app, engine = make_app(api_key=ADMIN, api_keys={KEY_A: ["alpha"], KEY_B: ["beta"]},
                           ingest_roots=[tmp_path])
    engine.ingest([alpha], collection="alpha")
    engine.ingest([beta], collection="beta")
    contract = next(d for d in engine.store.documents() if d.collection == "alpha")
    return app, engine, contract


def _snapshot(engine) -> set[tuple[str, str, str, str]]:  # type: ignore[no-untyped-def]
    return {(d.id, d.collection, d.path, d.content_hash) for d in engine.store.documents()}


def _chat(c: httpx.Client, query: str, key: str) -> list[tuple[str, dict]]:
    """The events of one streamed turn; the last one's data also has ``conversation_id``."""
    with c.stream("POST", "/api/chat/stream", json={"query": query}, headers=auth(key)) as r:
        assert r.status_code == 200, r.read()
        events = list(sse_events(r.iter_lines()))
        events[-1][1].setdefault("conversation_id", r.headers["x-conversation-id"])
        return events


# --- item 1: chat directives -----------------------------------------------------------------
def test_chat_scan_reads_the_document_where_it_is_for_its_readers_only(two_collections):
    app, engine, contract = two_collections
    before = _snapshot(engine)
    with LiveServer(app) as server, httpx.Client(base_url=server.url, timeout=120) as c:
        # key B cannot scan (nor learn about) alpha's contract
        events = _chat(c, f"scan {contract.id}", KEY_B)
        assert events[-1][0] == "done" and "no document" in events[-1][1]["answer"]
        assert "contract.txt" not in json.dumps(events)
        assert _snapshot(engine) == before
        # key A reads alpha: the scan runs, and reads the document where it is
        for key in (KEY_A, ADMIN):
            events = _chat(c, f"scan {contract.id}", key)
            result = next(d for e, d in events if e == "tool_result")["result"]
            assert result["available"] is True, events
            assert result["result"]["document"]["path"] == "alpha/contract.txt"
            assert result["result"]["flags"]
            assert _snapshot(engine) == before  # never re-ingested, moved nor renamed
        # attached: a reader who cannot approve gets the (read-only) scan at once
        body = {"query": "Check this contract", "attachment": contract.id}
        r = c.post("/api/chat", json=body, headers=auth(KEY_A))
        assert r.json()["interrupt"] is None and r.json()["answer"].startswith("Scan finished")
        r = c.post("/api/chat", json=body, headers=auth(KEY_B))
        assert "no document" in r.json()["answer"] and r.json()["interrupt"] is None
        assert _snapshot(engine) == before
        listed = c.get("/api/documents", headers=auth(KEY_A)).json()["data"]
        assert [(d["id"], d["path"]) for d in listed] == [(contract.id, "alpha/contract.txt")]


def test_chat_ingest_is_proposed_to_the_admin_only_and_keeps_collections(two_collections,
                                                                         tmp_path):
    app, engine, contract = two_collections
    new = tmp_path / "inbox" / "new.md"
    new.parent.mkdir()
    new.write_text("# New\n\nThe gamma code word is BLUEHERON.\n", encoding="utf-8")
    before = _snapshot(engine)
    with LiveServer(app) as server, httpx.Client(base_url=server.url, timeout=120) as c:
        for key in (KEY_A, KEY_B):
            events = _chat(c, f"ingest {new}", key)
            assert [e for e, _ in events] == ["thinking", "tool_result", "done"], events
            assert "admin key" in events[-1][1]["answer"]
            chat_id = events[-1][1]["conversation_id"]
            assert c.get(f"/api/chats/{chat_id}", headers=auth(key)).json()["pending"] == []
        # re-ingesting alpha's contract from the admin's chat keeps it in alpha
        events = _chat(c, f"ingest {contract.source_path}", ADMIN)
        assert events[-1][0] == "interrupt"
        token, chat_id = events[-1][1]["resume_token"], events[-1][1]["conversation_id"]
        body = {"resume_token": token, "approve": True}
        assert c.post(f"/api/chats/{chat_id}/resume", json=body,
                      headers=auth(KEY_A)).status_code == 401  # approving needs the admin
        with c.stream("POST", f"/api/chats/{chat_id}/resume", json=body,
                      headers=auth(ADMIN)) as r:
            events = list(sse_events(r.iter_lines()))
        assert events[-1][0] == "done", events
        after = {d.id: d for d in engine.store.documents()}
        assert after[contract.id].collection == "alpha"
        assert _snapshot(engine) == before


def test_scanning_an_indexed_file_keeps_its_collection_and_path(two_collections):
    """``citewise scan FILE`` / ``Engine.scan`` on a file indexed in another collection: read
    in place when unchanged, re-indexed in its own collection when changed; never moved."""
    _, engine, contract = two_collections
    before = _snapshot(engine)
    report = engine.scan(contract.source_path)
    assert report.document.path == "alpha/contract.txt" and _snapshot(engine) == before
    path = Path(contract.source_path)
    path.write_text(CONTRACT + "\n4. Notices. Notices are given in writing.\n",
                    encoding="utf-8")
    report = engine.scan(path)
    doc = engine.store.document(contract.id)
    assert doc is not None and (doc.collection, doc.path) == ("alpha", "alpha/contract.txt")
    assert doc.content_hash != contract.content_hash
    assert len(engine.store.documents()) == len(before)
    # the chat scan refuses a file changed since it was indexed, naming what to do
    path.write_text(CONTRACT, encoding="utf-8")
    with pytest.raises(DocumentError, match="re-index it"):
        engine.scan_document(contract.id)

# --- item 2: upload names ------------------------------------------------------------------
def _upload(c: TestClient, *files: tuple[str, bytes], **params: str) -> httpx.Response:
    return c.post("/api/documents", params=params, headers=auth(ADMIN),
                  files=[("files", (name, data, "text/plain")) for name, data in files])


def _stored(folder) -> set[str]:  # type: ignore[no-untyped-def]
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def test_upload_identity_is_the_relative_path_and_collisions_are_refused(make_app):
    app, engine = make_app(api_key=ADMIN)
    folder = engine.settings.collection_dir
    top, sub = b"# Notes\n\nThe top code is AMBERFOX.\n", b"# Notes\n\nThe sub code is REDKITE.\n"
    with TestClient(app, base_url="http://127.0.0.1") as c:
        # '..' can neither escape nor collapse onto notes.md
        r = _upload(c, ("a/../../notes.md", top))
        assert r.status_code == 400 and "a/../../notes.md" in r.json()["detail"]
        assert not folder.exists() or _stored(folder) == set()
        # sub/notes.md and notes.md are two documents, shown with their relative paths
        r = _upload(c, ("notes.md", top), ("sub/notes.md", sub))
        assert r.status_code == 201, r.text
        assert r.json()["stored"] == ["notes.md", "sub/notes.md"]
        assert [f["status"] for f in r.json()["files"]] == ["added", "added"]
        docs = {d.path: d for d in engine.store.documents()}
        assert set(docs) == {"notes.md", "sub/notes.md"}
        assert engine.search("REDKITE", mode="sparse").hits[0].document.path == "sub/notes.md"
        # notes.MD is the same file on a case-insensitive disk: 409 naming both, nothing lost
        for names in ((("notes.MD", sub),), (("Sub/notes.md", sub),),
                      (("x.md", top), ("X.md", sub)), (("y?.md", top), ("y_.md", sub))):
            r = _upload(c, *names)
            assert r.status_code == 409, (names, r.text)
            detail = r.json()["detail"]
            assert r.json()["code"] == "UploadConflictError"
            assert names[0][0] in detail and (len(names) == 1 or names[1][0] in detail), detail
        assert (folder / "notes.md").read_bytes() == top and _stored(folder) == {
            "notes.md", "sub/notes.md"}
        # the exact path again is a new version of that document
        r = _upload(c, ("notes.md", top + b"\nAlso BLUEJAY.\n"))
        assert r.status_code == 201 and r.json()["files"][0]["status"] == "updated"
        # long names sharing their first 150 characters stay two files
        long_a, long_b = "x" * 150 + "-alpha.md", "x" * 150 + "-beta.md"
        r = _upload(c, (long_a, b"# A\n\nFirst long.\n"), (long_b, b"# B\n\nSecond long.\n"))
        assert r.status_code == 201, r.text
        a, b = r.json()["stored"]
        assert a != b and len(a) <= 120 and len(b) <= 120
        assert [f["status"] for f in r.json()["files"]] == ["added", "added"]
        assert len(engine.store.documents()) == 4


def test_c09_two_folders_budget_md_in_one_upload_are_both_kept(make_app):
    app, engine = make_app(api_key=ADMIN)
    case = CASES / "c09_same_name"
    files = [(f"{office}/budget.md", (case / office / "budget.md").read_bytes())
             for office in ("north_office", "south_office")]
    with TestClient(app, base_url="http://127.0.0.1") as c:
        r = _upload(c, *files)
        assert r.status_code == 201, r.text
        assert [f["status"] for f in r.json()["files"]] == ["added", "added"]
        docs = {d.path: d.id for d in engine.store.documents()}
        assert set(docs) == {"north_office/budget.md", "south_office/budget.md"}
        r = c.post("/api/chat", json={"query": "What is the travel budget for the South "
                                                "office?"})
        body = r.json()
        assert "42,500" in body["answer"], body["answer"]
        assert body["sources"][0]["path"] == "south_office/budget.md"
        assert c.delete(f"/api/documents/{docs['north_office/budget.md']}",
                        headers=auth(ADMIN)).status_code == 200
        assert [d.path for d in engine.store.documents()] == ["south_office/budget.md"]


# --- item 3: a failed re-upload keeps the good version -------------------------------------
def test_a_failed_reupload_keeps_the_good_version_searchable(make_app):
    app, engine = make_app(api_key=ADMIN)
    folder = engine.settings.collection_dir
    good_txt = b"# Marigold\n\nThe Marigold launch is on 14 March, code SILVERFINCH.\n"
    pdf = (CASES / "c30_pages" / "vehicle_care_manual.pdf").read_bytes()
    with TestClient(app, base_url="http://127.0.0.1") as c:
        r = c.post("/api/documents", headers=auth(ADMIN), files=[
            ("files", ("marigold.md", good_txt, "text/markdown")),
            ("files", ("manual.pdf", pdf, "application/pdf"))])
        assert r.status_code == 201 and [f["status"] for f in r.json()["files"]] == [
            "added", "added"]
        before = {d.path: (d.id, d.content_hash, d.chunk_count) for d in engine.store.documents()}
        for name, bad, why in (("marigold.md", b"", "empty"),
                               ("marigold.md", b"  \n", "empty"),
                               ("manual.pdf", pdf[: len(pdf) // 3], "")):
            r = c.post("/api/documents", headers=auth(ADMIN),
                       files=[("files", (name, bad, "application/octet-stream"))])
            assert r.status_code == 201, r.text
            result = r.json()["files"][0]
            assert result["status"] == "failed" and result["path"] == name, result
            assert why in result["reason"] and "previous one is kept" in result["reason"]
            assert r.json()["stored"] == []
            assert {d.path: (d.id, d.content_hash, d.chunk_count)
                    for d in engine.store.documents()} == before
            assert all(d.status == "indexed" for d in engine.store.documents())
        assert (folder / "marigold.md").read_bytes() == good_txt
        assert (folder / "manual.pdf").read_bytes() == pdf
        assert _stored(folder) == {"marigold.md", "manual.pdf"}  # no temporary file left
        r = c.post("/api/chat", json={"query": "When is the Marigold launch?"})
        assert "14 March" in r.json()["answer"]


# --- item 4: the size limit holds for a chunked body ---------------------------------------
def _multipart(files: list[tuple[str, bytes]], boundary: str = "cwboundary") -> Iterator[bytes]:
    """A multipart body as a generator, so httpx sends it chunked (no Content-Length)."""
    for name, data in files:
        yield (f'--{boundary}\r\nContent-Disposition: form-data; name="files"; '
               f'filename="{name}"\r\nContent-Type: text/plain\r\n\r\n').encode()
        for i in range(0, len(data), 65536):
            yield data[i:i + 65536]
        yield b"\r\n"
    yield f"--{boundary}--\r\n".encode()


@pytest.mark.parametrize("files", [
    [("big.txt", b"word " * 900_000)],  # one file of 4.5 MB
    [(f"part{i}.txt", b"word " * 150_000) for i in range(4)],  # four of 0.75 MB each
], ids=["one-big-file", "several-small-files"])
def test_upload_limit_holds_for_a_chunked_body(make_app, files):
    app, engine = make_app(api_key=ADMIN, max_upload_mb=1)
    folder = engine.settings.collection_dir
    headers = {**auth(ADMIN), "Content-Type": "multipart/form-data; boundary=cwboundary"}
    with LiveServer(app) as server, httpx.Client(base_url=server.url, timeout=60) as c:
        r = c.post("/api/documents", content=_multipart(files), headers=headers)
        assert r.request.headers.get("transfer-encoding") == "chunked"
        assert "content-length" not in r.request.headers
        assert r.status_code == 413, r.text
        assert "1 MiB" in r.json()["detail"] and "CITEWISE_MAX_UPLOAD_MB" in r.json()["detail"]
        # a body under the limit still works the same way
        small = [("ok.txt", b"The small file is fine.\n")]
        r = c.post("/api/documents", content=_multipart(small), headers=headers)
        assert r.status_code == 201, r.text
    assert _stored(folder) == {"ok.txt"}
    assert [d.path for d in engine.store.documents()] == ["ok.txt"]


# --- item 5: widget deployments ------------------------------------------------------------
SITE = "https://docs.example.org"


def test_widget_visitors_see_only_their_own_chats_and_other_sites_only_ask(make_app,
                                                                           docs_dir):
    # the README's widget setup: reading open, the site's origin allowed, not on localhost,
    # the server's own name allowed (CITEWISE_ALLOWED_HOSTS)
    app, _ = make_app(ingest=[docs_dir], host="0.0.0.0", cors_origins=[SITE],
                      allowed_hosts=["citewise.example.org"])
    v1, v2 = ({"X-Citewise-Visitor": t} for t in ("visitor-one-0123456789",
                                                    "visitor-two-0123456789"))
    site = {"Origin": SITE}
    question = {"query": "How long does the laptop warranty last?"}
    with TestClient(app, base_url="https://citewise.example.org") as c:
        # the widget's requests, from the site: health, ask (JSON and streamed), its own chat
        assert c.get("/api/health", headers=site).status_code == 200
        r = c.post("/api/chat", json=question, headers={**site, **v1})
        assert r.status_code == 200 and "24 months" in r.json()["answer"]
        chat1 = r.json()["conversation_id"]
        with c.stream("POST", "/api/chat/stream", json=question, headers={**site, **v2}) as s:
            assert s.status_code == 200
            chat2 = s.headers["x-conversation-id"]
            list(s.iter_lines())
        r = c.post("/api/chat", json={"query": "and the batteries?", "conversation_id": chat1},
                   headers={**site, **v1})
        assert r.status_code == 200 and r.json()["conversation_id"] == chat1
        assert c.get(f"/api/chats/{chat1}", headers={**site, **v1}).status_code == 200
        # nobody else lists, reads, continues or deletes a visitor's chat
        for who in ({}, v2, {"X-Citewise-Visitor": "someone-else-0123456789"}):
            listed = c.get("/api/chats", headers=who).json()
            assert chat1 not in {x["id"] for x in listed["data"]}, who
            assert c.get(f"/api/chats/{chat1}", headers=who).status_code == 404
            assert c.delete(f"/api/chats/{chat1}", headers=who).status_code == 404
            r = c.post("/api/chat", json={"query": "and?", "conversation_id": chat1},
                       headers=who)
            assert r.status_code == 404
        assert [x["id"] for x in c.get("/api/chats", headers=v2).json()["data"]] == [chat2]
        assert c.get("/api/chats", headers={}).json()["count"] == 0
        # from the site, nothing beyond what the widget needs, even for the chat's owner
        for method, url in (("GET", "/api/chats"), ("DELETE", f"/api/chats/{chat1}"),
                            ("GET", "/api/documents"), ("POST", "/v1/chat/completions"),
                            ("POST", f"/api/chats/{chat1}/resume"), ("POST", "/api/reindex")):
            r = c.request(method, url, headers={**site, **v1})
            assert r.status_code == 403, (method, url, r.text)
            if url.startswith("/v1/"):  # OpenAI's error shape there
                error = r.json()["error"]
                assert error["code"] == "cross_origin_refused" and url in error["message"]
                continue
            assert r.json()["code"] == "CrossOriginRefused" and url in r.json()["detail"]
        preflight = c.options(f"/api/chats/{chat1}", headers={
            **site, "Access-Control-Request-Method": "DELETE"})
        assert "DELETE" not in preflight.headers.get("access-control-allow-methods", "")
        # the owner, from the server's own page (same origin), manages its chat
        own = {**v1, "Origin": "https://citewise.example.org"}
        assert [x["id"] for x in c.get("/api/chats", headers=own).json()["data"]] == [chat1]
        assert c.delete(f"/api/chats/{chat1}", headers=own).status_code == 204
        r = c.get("/api/chats", headers={"X-Citewise-Visitor": "bad token"})
        assert r.status_code == 400 and "X-Citewise-Visitor" in r.json()["detail"]
