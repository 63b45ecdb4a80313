"""Failure cases C07, C21, C22 and C23 through the HTTP API, against a real index, the bundled
embedding models and (for C23) a real uvicorn server taking concurrent uploads.

The engine-level versions of C07, C21 and C22 are in ``tests/test_cases.py``; C08 is there too.
"""

from __future__ import annotations

import threading

import httpx
import numpy as np
from fastapi.testclient import TestClient

from citewise.answer.answerer import NO_DOCUMENTS
from citewise.ingest.pipeline import document_id
from tests.api.conftest import LiveServer, sse_events
from tests.conftest import CASES

MARIGOLD = "When is the Project Marigold launch?"


def _upload(c, path, name=None):  # type: ignore[no-untyped-def]
    return c.post("/api/documents", files={"files": (name or path.name, path.read_bytes(),
                                                     "text/plain")})


# --- C07: an empty corpus --------------------------------------------------------------------
def test_c07_empty_index_is_200_with_no_documents_and_no_citations(make_app):
    app, _ = make_app()
    with TestClient(app, base_url="http://127.0.0.1") as c:
        r = c.post("/api/chat", json={"query": "What is the refund policy?"})
        assert r.status_code == 200
        body = r.json()
        assert body["answer"] == NO_DOCUMENTS and body["sources"] == [] and not body["found"]
        with c.stream("POST", "/api/chat/stream",
                      json={"query": "What is the refund policy?"}) as s:
            assert s.status_code == 200
            events = list(sse_events(s.iter_lines()))
        assert events[-1][0] == "done" and events[-1][1]["answer"] == NO_DOCUMENTS
        assert events[-1][1]["sources"] == []
        r = c.post("/v1/chat/completions", json={"model": "citewise", "messages": [
            {"role": "user", "content": "What is the refund policy?"}]})
        assert r.status_code == 200 and r.json()["sources"] == []
        assert r.json()["choices"][0]["message"]["content"] == NO_DOCUMENTS


def test_c07_only_unreadable_files_gives_not_found_naming_them(make_app, case_copy):
    folder = case_copy("c06_empty/whitespace_only.txt", "only/whitespace_only.txt").parent
    case_copy("c06_empty/blank_page.pdf", "only/blank_page.pdf")
    app, engine = make_app(ingest=[folder])
    assert engine.store.info().chunks == 0
    with TestClient(app, base_url="http://127.0.0.1") as c:
        r = c.post("/api/chat", json={"query": "What is the refund policy?"})
    assert r.status_code == 200
    body = r.json()
    assert body["sources"] == [] and not body["found"]
    assert "blank_page.pdf" in body["answer"] and "whitespace_only.txt" in body["answer"]


# --- C21: a deleted document is never cited ----------------------------------------------------
def test_c21_delete_through_the_api_removes_every_trace(make_app):
    app, engine = make_app()
    src = CASES / "c21_delete" / "marigold.txt"
    store = engine.store
    with TestClient(app, base_url="http://127.0.0.1") as c:
        before = (store.info().chunks, store.term_document_frequencies(["silverfinch"])[1])
        r = _upload(c, src)
        assert r.status_code == 201 and r.json()["files"][0]["status"] == "added"
        r = c.post("/api/chat", json={"query": MARIGOLD})
        assert "14 March" in r.json()["answer"]
        doc_id = r.json()["sources"][0]["document_id"]
        stored_file = engine.settings.collection_dir / "marigold.txt"
        assert stored_file.is_file()

        r = c.delete(f"/api/documents/{doc_id}")
        assert r.status_code == 200 and r.json() == {"deleted": doc_id, "file_removed": True}
        assert not stored_file.exists()
        # the vector and BM25 counts are back to their values before the upload
        assert (store.info().chunks, store.term_document_frequencies(["silverfinch"])[1]) \
            == before == (0, {"silverfinch": 0})
        assert engine.search("SILVERFINCH", mode="sparse", min_score=0.0).hits == []
        assert engine.search(MARIGOLD, mode="dense", min_score=0.0).hits == []
        r = c.post("/api/chat", json={"query": MARIGOLD})
        assert r.json()["sources"] == [] and "14 March" not in r.json()["answer"]
        assert c.get(f"/api/sources/{doc_id}").status_code == 404
        assert c.delete(f"/api/documents/{doc_id}").status_code == 404

        r = _upload(c, src)  # re-uploading works
        assert r.json()["files"][0]["status"] == "added"
        assert "14 March" in c.post("/api/chat", json={"query": MARIGOLD}).json()["answer"]


# --- C22: changing the embedding model ---------------------------------------------------------
def test_c22_model_change_is_a_clear_error_then_reindex(make_app, make_engine):
    src = CASES / "c21_delete" / "marigold.txt"
    first, first_engine = make_app()
    with TestClient(first, base_url="http://127.0.0.1") as c:
        assert _upload(c, src).status_code == 201
    built = first_engine.store.info()
    # e5 has the same dimension (384) as the default model: the silent kind of mismatch
    app, engine = make_app(embedding_model="e5")
    assert engine.embedder.dim == built.dimension and engine.embedder.name != built.embedding_model
    with TestClient(app, base_url="http://127.0.0.1") as c:
        r = c.post("/api/chat", json={"query": MARIGOLD})
        assert r.status_code == 200 and r.json()["sources"] == []
        assert "citewise reindex" in r.json()["error"]
        with c.stream("POST", "/api/chat/stream", json={"query": MARIGOLD}) as s:
            events = list(sse_events(s.iter_lines()))
        assert events[-1][0] == "error" and events[-1][1]["code"] == "EmbeddingMismatchError"
        other = CASES / "c23_concurrent" / "locker_01.txt"
        r = _upload(c, other)
        assert r.status_code == 409 and "citewise reindex" in r.json()["detail"]
        assert r.json()["code"] == "EmbeddingMismatchError"
        # nothing of the refused upload reached the index: no vector of the other model
        assert engine.store.info().chunks == built.chunks
        assert engine.store.stored_model() == (built.embedding_model, built.dimension)

        r = c.post("/api/reindex")
        assert r.status_code == 200
        assert engine.store.stored_model() == ("e5", 384)
        # every stored vector is now the new model's embedding of its chunk
        doc = next(d for d in engine.store.documents() if d.path.endswith("marigold.txt"))
        chunk = engine.store.chunks_of(doc.id)[0]
        from citewise.ingest.chunking import embedding_text

        expected = engine.embedder.embed_documents([embedding_text(doc.title, chunk)])[0]
        stored = engine.store.vectors_of([chunk.id])[chunk.id]
        assert np.allclose(stored, expected, atol=1e-5)
        r = c.post("/api/chat", json={"query": MARIGOLD})
        assert "14 March" in r.json()["answer"] and r.json().get("error") is None


# --- C23: concurrent uploads, a duplicate and a delete during processing ----------------------
def test_c23_concurrent_uploads_and_delete_then_restart(make_app):
    app, engine = make_app()
    folder = engine.settings.collection_dir
    lockers = sorted((CASES / "c23_concurrent").glob("locker_*.txt"))
    jobs = lockers + [lockers[5], lockers[5]]  # locker_05 uploaded three times in all
    victim = document_id((folder / "locker_07.txt").resolve())
    statuses: list[int] = []
    deleted = threading.Event()
    with LiveServer(app) as server:
        def upload(path) -> None:  # type: ignore[no-untyped-def]
            with httpx.Client(base_url=server.url, timeout=120) as c:
                statuses.append(_upload(c, path).status_code)

        def delete_07() -> None:
            with httpx.Client(base_url=server.url, timeout=120) as c:
                for _ in range(2000):  # until locker_07 exists, while the others still run
                    r = c.delete(f"/api/documents/{victim}")
                    if r.status_code != 404:
                        statuses.append(r.status_code)
                    if r.status_code == 200:
                        deleted.set()
                        return
                    threading.Event().wait(0.01)

        threads = [threading.Thread(target=upload, args=(p,)) for p in jobs]
        threads.append(threading.Thread(target=delete_07))
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
    assert deleted.is_set()
    assert sorted(set(statuses)) == [200, 201] and statuses.count(201) == len(jobs)

    # restart: a new app and engine on the same home read the index from disk
    app2, engine2 = make_app()
    docs = [d for d in engine2.store.documents() if d.status == "indexed"]
    names = sorted(d.path for d in docs)
    assert names == sorted(p.name for p in lockers if p.name != "locker_07.txt")
    store = engine2.store
    for d in docs:  # exactly one set of chunks per document
        chunks = store.chunks_of(d.id)
        assert len(chunks) == d.chunk_count == 1
    ids = [c.id for d in docs for c in store.chunks_of(d.id)]
    assert len(ids) == len(set(ids)) == store.info().chunks
    # BM25 and vector counts agree: one FTS row and one vector per chunk
    assert store.term_document_frequencies(["locker"])[1]["locker"] == len(ids)
    assert len(store.vectors_of(ids)) == len(ids)
    with TestClient(app2, base_url="http://127.0.0.1") as c:
        for room in ("12", "00", "05", "19"):
            code = (CASES / "c23_concurrent" / f"locker_{room}.txt").read_text().split()[-1]
            r = c.post("/api/chat", json={"query": f"What is the locker code for room {room}?"})
            assert code.rstrip(".") in r.json()["answer"], (room, r.json()["answer"])
        r = c.post("/api/chat", json={"query": "What is the locker code for room 07?"})
        assert all(not s["path"].endswith("locker_07.txt") for s in r.json()["sources"])
