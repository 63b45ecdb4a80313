"""The SQLite store's in-memory BM25 index (citewise.store.bm25_index) against the FTS5 path it
replaces: the same rankings and scores, and never a stale answer (deletes, other processes,
a writer killed mid-ingest, rowids reused, filters)."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from citewise.store import bm25_index
from citewise.store.bm25_index import BM25Index
from citewise.store.sqlite import SQLiteStore
from citewise.text.analysis import analyze, tokenize
from citewise.types import Chunk, Document
from tests.conftest import DATASETS
from tests.suites.store import DIM, make_doc, write_in_subprocess

ROOT = Path(__file__).resolve().parents[2]


def ranked(hits) -> list[tuple[str, float]]:
    return [(h.chunk_id, h.score) for h in hits]


def fill(store: SQLiteStore, texts: list[str], per_doc: int = 10, collections=("a", "b"),
         ids: list[str] | None = None) -> None:
    """Documents of ``per_doc`` chunks each, alternating between ``collections``."""
    store.bind_model("test-model", DIM)
    ids = ids or [f"t{i}" for i in range(len(texts))]
    for d in range(0, len(texts), per_doc):
        doc = Document(id=f"doc{d}", path=f"{collections[d // per_doc % 2]}/doc{d}.txt",
                       source_path=f"/src/doc{d}", title=f"doc{d}", format="text",
                       content_hash=str(d), collection=collections[d // per_doc % 2])
        part = texts[d : d + per_doc]
        chunks = [Chunk(id=ids[d + i], document_id=doc.id, ordinal=i, text=t, source_text=t,
                        char_start=0, char_end=len(t), content_hash=f"h{d + i}",
                        language="en" if (d + i) % 3 else "de")
                  for i, t in enumerate(part)]
        vecs = np.full((len(part), DIM), 1 / np.sqrt(DIM), dtype=np.float32)
        store.upsert_document(doc, chunks, vecs, [analyze(t) for t in part])


TEXTS = [f"{a} {b} report number {i} " + " ".join(["filler"] * (i % 7))
         for i, (a, b) in enumerate(
             (a, b) for a in ("refund", "warranty", "invoice", "shipping", "return", "tax")
             for b in ("policy", "delay", "claim", "europe", "customer", "order", "policy"))]


@pytest.fixture
def pair(tmp_path):
    """The same index file opened with the derived BM25 index and with the FTS5 path."""
    path = tmp_path / "index.sqlite3"
    fast, fts = SQLiteStore(path, bm25_build="wait"), SQLiteStore(path, bm25_index=False)
    yield fast, fts
    fast.close()
    fts.close()


QUERIES = ["refund policy", "warranty claim europe", "invoice invoice delay", "tax",
           "customer order report", "filler", "nothing matches zzz", "policy policy policy"]


def test_index_scores_and_ranks_exactly_as_the_fts5_path(pair):
    fast, fts = pair
    fill(fast, TEXTS)
    for q in QUERIES:
        for k in (1, 3, 10, 100):
            want = ranked(fts.sparse_search(tokenize(q), k, candidates=len(TEXTS)))
            assert ranked(fast.sparse_search(tokenize(q), k)) == want, (q, k)
    assert fast.sparse_search(tokenize("nothing matches zzz"), 5) == []


@pytest.mark.parametrize("filters", [
    {"collections": ["b"]}, {"path_prefix": "a/doc2"}, {"document_ids": ["doc10", "doc30"]},
    {"language": "de"}, {"collections": ["a"], "language": "en"}, {"collections": []},
    {"document_ids": ["no-such-document"]},
])
def test_filters_apply_before_the_top_k(pair, filters):
    """The filtered top k is the best k of the chunks that pass (k of them when k pass),
    exactly as the FTS5 path ranks them, also after a write changed the index."""
    fast, fts = pair
    fill(fast, TEXTS)
    for round_ in range(2):
        for q in QUERIES:
            want = ranked(fts.sparse_search(tokenize(q), 5, filters, candidates=len(TEXTS)))
            assert ranked(fast.sparse_search(tokenize(q), 5, filters)) == want, (q, filters)
        passing = fts.sparse_search(tokenize("report"), 1000, filters, candidates=len(TEXTS))
        assert len(fast.sparse_search(tokenize("report"), 3, filters)) == min(3, len(passing))
        fast.delete_document("doc10")


def test_delete_and_replace_are_seen_at_once(pair):
    fast, _ = pair
    fill(fast, TEXTS)
    assert {h.chunk_id for h in fast.sparse_search(tokenize("report"), 100)} == {
        f"t{i}" for i in range(len(TEXTS))}
    fast.delete_document("doc0")
    got = {h.chunk_id for h in fast.sparse_search(tokenize("report"), 100)}
    assert got == {f"t{i}" for i in range(10, len(TEXTS))}
    doc, chunks, vecs = make_doc("late.txt", ["a refund about GANNET birds"])
    fast.upsert_document(doc, chunks, vecs)
    assert [h.chunk_id for h in fast.sparse_search(tokenize("gannet"), 5)] == ["late.txt-0"]
    fast.upsert_document(replace(doc, content_hash="v2"), [replace(chunks[0], text="osprey")],
                         vecs)
    assert fast.sparse_search(tokenize("gannet"), 5) == []
    assert [h.chunk_id for h in fast.sparse_search(tokenize("osprey"), 5)] == ["late.txt-0"]


def test_reused_rowids_never_serve_the_old_text(pair):
    """Deleting the newest document lets SQLite hand its rowids to the next insert; the index
    of the old state must not score the new chunks with the old chunks' terms."""
    fast, fts = pair
    fill(fast, TEXTS[:20])
    before = fast.db.execute("SELECT max(rowid) FROM chunks").fetchone()[0]
    assert [h.chunk_id for h in fast.sparse_search(tokenize("warranty"), 1)]
    fast.delete_document("doc10")
    doc, chunks, vecs = make_doc("n.txt", [f"unrelated words {i}" for i in range(10)])
    fast.upsert_document(doc, chunks, vecs)
    assert fast.db.execute("SELECT max(rowid) FROM chunks").fetchone()[0] == before
    for q in ("warranty", "unrelated words", "refund"):
        want = ranked(fts.sparse_search(tokenize(q), 50, candidates=100))
        assert ranked(fast.sparse_search(tokenize(q), 50)) == want


def test_writer_killed_mid_ingest_leaves_a_consistent_current_index(pair):
    """A second process ingests documents one transaction each and is killed (SIGKILL) at an
    arbitrary moment: searches here, whose index was built before, answer exactly what the
    committed state holds (compared with the FTS5 path scoring every match)."""
    fast, fts = pair
    fill(fast, TEXTS[:20])
    assert fast.sparse_search(tokenize("refund"), 5)
    script = f"""
        import numpy as np
        from citewise.types import Chunk, Document
        for d in range(10_000):
            doc = Document(id=f"w{{d}}", path=f"w/{{d}}", source_path=f"/w/{{d}}", title="w",
                           format="text", content_hash=str(d))
            texts = [f"refund written by the killed writer {{d}} {{i}}" for i in range(20)]
            chunks = [Chunk(id=f"w{{d}}-{{i}}", document_id=doc.id, ordinal=i, text=t,
                            source_text=t, char_start=0, char_end=len(t),
                            content_hash=f"w{{d}}-{{i}}") for i, t in enumerate(texts)]
            store.upsert_document(doc, chunks, np.ones((20, {DIM}), np.float32) / {DIM ** 0.5},
                                  [analyze(t) for t in texts])
    """
    opener = f"SQLiteStore({str(fast.path)!r})"
    proc = subprocess.Popen([sys.executable, "-c", _script(opener, script)], cwd=ROOT,
                            env=_env(), stderr=subprocess.PIPE, text=True)
    seen, hits = 0, []
    deadline = time.monotonic() + 60
    while seen < 3 and time.monotonic() < deadline and proc.poll() is None:
        hits = fast.sparse_search(tokenize("refund killed writer"), 50)
        written = fast.db.execute("SELECT count(*) FROM documents WHERE id LIKE 'w%'").fetchone()[0]
        seen = max(seen, written)
        time.sleep(0.05)
    proc.kill()
    _, err = proc.communicate()
    assert proc.returncode == -9, err
    assert seen >= 3
    assert fast.check() == []
    for q in ("refund killed writer", "refund", "writer 2 7"):
        want = ranked(fts.sparse_search(tokenize(q), 20, candidates=100_000))
        assert ranked(fast.sparse_search(tokenize(q), 20)) == want
    assert hits  # the searches during the ingest answered


def _script(opener: str, body: str) -> str:
    import textwrap

    return ("from citewise.store.sqlite import SQLiteStore\n"
            "from citewise.text.analysis import analyze\n"
            f"store = {opener}\n" + textwrap.dedent(body))


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}


def test_a_stale_index_is_never_served(pair, tmp_path):
    """The index carries the generation it was built from; a write through another store
    object on the same file (nothing told this one) bumps the generation, so the next
    search rebuilds instead of serving the old postings."""
    fast, _ = pair
    fill(fast, TEXTS[:10])
    fast.sparse_search(tokenize("refund"), 5)
    other = SQLiteStore(fast.path)
    doc, chunks, vecs = make_doc("o.txt", ["cormorant"])
    other.upsert_document(doc, chunks, vecs)
    assert [h.chunk_id for h in fast.sparse_search(tokenize("cormorant"), 5)] == ["o.txt-0"]
    other.close()
    write_in_subprocess(f"SQLiteStore({str(fast.path)!r})",
                        'store.delete_document("id-o.txt")')
    assert fast.sparse_search(tokenize("cormorant"), 5) == []


def test_a_search_never_waits_for_a_background_build(tmp_path):
    """With ``bm25_build="background"`` (the default) a search that finds no current index
    answers from the FTS5 path at once and a thread builds the index; once it is ready the
    index answers, with the same hits; a later write makes it stale again."""
    path = tmp_path / "index.sqlite3"
    store, fts = SQLiteStore(path), SQLiteStore(path, bm25_index=False)
    fill(store, TEXTS)
    assert not store.bm25_index_ready()
    for q in QUERIES:
        assert ranked(store.sparse_search(tokenize(q), 10)) == ranked(
            fts.sparse_search(tokenize(q), 10))
    assert store.bm25_index_ready(wait_s=60)
    for q in QUERIES:
        assert ranked(store.sparse_search(tokenize(q), 10)) == ranked(
            fts.sparse_search(tokenize(q), 10, candidates=len(TEXTS)))
    store.delete_document("doc0")
    assert not store.bm25_index_ready()
    assert {h.chunk_id for h in store.sparse_search(tokenize("report"), 100)} == {
        f"t{i}" for i in range(10, len(TEXTS))}
    assert store.bm25_index_ready(wait_s=60)
    assert {h.chunk_id for h in store.sparse_search(tokenize("report"), 100)} == {
        f"t{i}" for i in range(10, len(TEXTS))}


def test_document_frequencies_from_the_index_equal_fts5s(pair):
    fast, fts = pair
    fill(fast, TEXTS)
    terms = tokenize("refund policy report filler zzz europe") + ["", "report"]
    assert fts.term_document_frequencies(terms)[1]["report"] == len(TEXTS)
    fast.sparse_search(tokenize("refund"), 1)  # the index is current from here
    assert fast.bm25_index_ready()
    assert fast.term_document_frequencies(terms) == fts.term_document_frequencies(terms)
    fast.delete_document("doc0")
    assert fast.term_document_frequencies(terms) == fts.term_document_frequencies(terms)
    fast.sparse_search(tokenize("refund"), 1)
    assert fast.term_document_frequencies(terms) == fts.term_document_frequencies(terms)


def test_build_of_an_empty_and_a_tiny_index():
    empty = BM25Index.build(0, [])
    assert empty.size == 0 and empty.top({"x": 1}, 5)[0].size == 0
    tiny = BM25Index.build(3, [(4, "a b a", 3), (9, "b c", 2)])
    assert tiny.document_frequency("a") == 1 and tiny.document_frequency("b") == 2
    assert tiny.document_frequency("zzz") == 0
    rowids, scores = tiny.top({"a": 1, "b": 1}, 5)
    assert rowids.tolist() == [4, 9] and scores.dtype == np.float64 and scores[0] > scores[1] > 0


@pytest.mark.slow
def test_scifact_top10_is_identical_to_the_sql_scoring(tmp_path):
    """The whole SciFact corpus (5,183 abstracts, title + text) and its 300 test queries: the
    derived index's top 10 equals the FTS5 path scoring every match, ids, order and scores
    (bit-identical floats), for every query; and equals today's default FTS5 path (best
    max(5k, 300) candidates re-scored) for >= 99% of them."""
    from citewise.eval.datasets import load_beir

    ds = load_beir(DATASETS / "scifact")
    ids = sorted(ds.corpus)
    texts = [f"{ds.corpus[i].title} {ds.corpus[i].text}" for i in ids]
    path = tmp_path / "scifact.sqlite3"
    fast, fts = SQLiteStore(path, bm25_build="wait"), SQLiteStore(path, bm25_index=False)
    fill(fast, texts, per_doc=100, ids=ids)
    queries = [tokenize(q) for _, q in sorted(ds.queries.items())]
    assert len(queries) == 300
    same_default = 0
    for q in queries:
        got = ranked(fast.sparse_search(q, 10))
        assert got == ranked(fts.sparse_search(q, 10, candidates=len(ids))), q
        same_default += got == ranked(fts.sparse_search(q, 10))
    assert same_default >= 0.99 * len(queries)


def test_a_thread_in_an_older_snapshot_gets_that_state_and_keeps_the_newer_index(pair):
    """A thread whose read transaction began before a write is answered from the state it
    reads (the deleted chunk still there), and the index built for it does not replace the
    newer one another thread keeps."""
    import threading

    fast, _ = pair
    fill(fast, TEXTS[:20])
    doc, chunks, vecs = make_doc("tern.txt", ["a note on the arctic TERN"])
    fast.upsert_document(doc, chunks, vecs)
    fast.sparse_search(tokenize("tern"), 5)
    entered, written, seen = threading.Event(), threading.Event(), []

    def old_reader() -> None:
        with fast.snapshot():
            fast.generation()  # the read transaction's state is fixed from here
            entered.set()
            written.wait(30)
            seen.append([h.chunk_id for h in fast.sparse_search(tokenize("tern"), 5)])
        fast.close()

    reader = threading.Thread(target=old_reader)
    reader.start()
    assert entered.wait(30)
    fast.delete_document(doc.id)
    assert fast.sparse_search(tokenize("tern"), 5) == []  # the newer index, kept
    written.set()
    reader.join(30)
    assert seen == [["tern.txt-0"]]
    assert fast.bm25_index_ready() and fast.sparse_search(tokenize("tern"), 5) == []


def test_a_build_in_blocks_gives_the_same_arrays_as_one_block():
    """The build counts ``block`` chunks at a time (a bounded peak at 1M chunks); the arrays
    are the same whatever the block, a count past uint16 included."""
    rng = np.random.default_rng(4)
    words = [f"w{i}" for i in range(300)]
    rows = [(2 * i + 1, " ".join(rng.choice(words, size=int(rng.integers(0, 40)))), 0)
            for i in range(3_000)]
    rows = [(r, t, len(t.split())) for r, t, _ in rows] + [(9_000, " ".join(["w1"] * 70_000), 70_000)]
    for data in (rows, rows[:-1]):
        whole = BM25Index.build(1, data, block=10**9)
        for block in (1, 7, 1_000):
            part = BM25Index.build(1, data, block=block)
            for name in ("rowids", "lengths", "indptr", "positions", "counts"):
                a, b = getattr(whole, name), getattr(part, name)
                assert a.dtype == b.dtype and np.array_equal(a, b), (block, name)
            assert part.vocabulary == whole.vocabulary and part.avgdl == whole.avgdl
    assert whole.counts.dtype == np.uint16 and BM25Index.build(1, rows).counts.dtype == np.uint32


def test_top_reusing_its_score_arrays_equals_a_fresh_ranking():
    """``top`` sums into score arrays it keeps between queries (set back to 0 after each):
    query after query, broad (most chunks scored: the array is cleared in one pass) and
    narrow (only the scored chunks cleared), with and without a mask, from threads at once,
    every answer equals the ranking of a fresh :meth:`BM25Index.scores` array (scores
    descending, ties by ascending row key, zeros left out)."""
    import threading

    rng = np.random.default_rng(11)
    words = [f"w{i}" for i in range(200)]
    rows = [(3 * i + 2, " ".join(rng.choice(words, size=int(rng.integers(1, 30)))), 0)
            for i in range(2_000)]
    index = BM25Index.build(5, [(r, t, len(t.split())) for r, t, _ in rows])
    mask = rng.random(index.size) < 0.3
    queries = [{"w0": 1, "w1": 2, "w2": 1}, {"w150": 1}, {"w7": 1, "zz": 3},
               dict.fromkeys(words[:60], 1), {"w199": 2, "w3": 1}, {"zz": 1}]

    def fresh(query, k, keep):  # type: ignore[no-untyped-def]
        scores = index.scores(query)
        hit = np.flatnonzero((scores > 0) & (keep if keep is not None else True))
        order = sorted(hit.tolist(), key=lambda i: (-scores[i], i))[:k]
        return index.rowids[order].tolist(), scores[order].tolist()

    want = {(i, k, m): fresh(q, k, mask if m else None)
            for i, q in enumerate(queries) for k in (1, 10, 500) for m in (False, True)}
    assert any(len(w[0]) == 500 for w in want.values())  # a broad query fills its top 500
    wrong: list[object] = []

    def check() -> None:
        for _ in range(3):
            for (i, k, m), (ids, scores) in want.items():
                got = index.top(queries[i], k, mask if m else None)
                if (got[0].tolist(), got[1].tolist()) != (ids, scores):
                    wrong.append((i, k, m))

    threads = [threading.Thread(target=check) for _ in range(3)]
    for t in threads:
        t.start()
    check()
    for t in threads:
        t.join()
    assert wrong == []


@pytest.mark.parametrize("adds", [True, False])
@pytest.mark.parametrize("remap_block", [1, 7, 1 << 20])
def test_a_catch_up_that_renumbers_in_blocks_equals_a_build(monkeypatch, remap_block, adds):
    """A catch-up after deletes renumbers the kept postings ``REMAP_BLOCK`` at a time (a
    bounded copy of the indices at 1M chunks); whatever the block, including ones that cut
    a term's column, with chunks added or only removed (no insert pass then), its arrays
    are those a build of the later rows gives."""
    monkeypatch.setattr(bm25_index, "REMAP_BLOCK", remap_block)
    rng = np.random.default_rng(9)
    words = [f"w{i}" for i in range(60)]
    rows = [(i + 1, " ".join(rng.choice(words, size=int(rng.integers(1, 12)))), 0)
            for i in range(400)]
    rows = [(r, t, len(t.split())) for r, t, _ in rows]
    old = BM25Index.build(1, rows)
    removed = np.array([3, 4, 5, 120, 399, 400], dtype=np.int64)
    added = [(401, "w1 w2 w2 new", 4), (402, "w59", 1)] if adds else []
    later = [r for r in rows if r[0] not in set(removed.tolist())] + added
    got = old.caught_up(2, removed, added)
    want = BM25Index.build(2, later)
    for name in ("rowids", "lengths"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
    for term, col in want.vocabulary.items():  # column order may differ: compare by term
        g = got.vocabulary[term]
        for name in ("positions", "counts"):
            a, b = getattr(got, name), getattr(want, name)
            assert np.array_equal(a[got.indptr[g]:got.indptr[g + 1]],
                                  b[want.indptr[col]:want.indptr[col + 1]]), (term, name)
    assert got.avgdl == want.avgdl
    assert got.positions.shape == want.positions.shape
