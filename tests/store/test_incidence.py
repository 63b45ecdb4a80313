"""The SQLite store's term-chunk incidence from its in-memory indexes (the BM25 postings and
the dense matrix of the state read) against the SQL rows it replaces: the same chunks, terms
and vector bytes on real text, after writes by other processes, and never from an index of
an older state."""

from __future__ import annotations

import numpy as np
import pytest

from citewise.eval.datasets import load_beir
from citewise.store.base import TermIncidence
from citewise.store.sqlite import SQLiteStore
from citewise.text.analysis import analyze, tokenize
from citewise.types import Chunk, Document
from tests.conftest import DATASETS
from tests.suites.store import write_in_subprocess

DIM = 16
PER_DOC = 12


@pytest.fixture(scope="module")
def scifact():
    return load_beir(DATASETS / "scifact")


def fill(store: SQLiteStore, texts: list[str], first: int = 0) -> list[str]:
    """Documents of :data:`PER_DOC` chunks of ``texts`` (random unit vectors); their ids."""
    store.bind_model("test-model", DIM)
    rng = np.random.default_rng(first)
    ids = []
    for d in range(0, len(texts), PER_DOC):
        doc = Document(id=f"doc{first + d}", path=f"s/doc{first + d}.txt",
                       source_path=f"/s/doc{first + d}", title=f"doc{first + d}",
                       format="text", content_hash=str(first + d))
        part = texts[d : d + PER_DOC]
        # ordinals in reverse of insertion: the incidence must follow ordinal, not rowid
        chunks = [Chunk(id=f"c{first + d + i}", document_id=doc.id, ordinal=len(part) - i,
                        text=t, source_text=t, char_start=0, char_end=len(t),
                        content_hash=f"h{first + d + i}", language=("en", "", "ru")[i % 3])
                  for i, t in enumerate(part)]
        vecs = rng.normal(size=(len(part), DIM)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        store.upsert_document(doc, chunks, vecs, [analyze(t) for t in part])
        ids.append(doc.id)
    return ids


def same(got: TermIncidence, want: TermIncidence) -> None:
    assert got.chunk_ids == want.chunk_ids
    assert got.terms == want.terms
    assert got.present.dtype == want.present.dtype == np.bool_
    assert np.array_equal(got.present, want.present)
    if want.vectors is None:
        assert got.vectors is None
    else:
        assert got.vectors is not None and got.vectors.dtype == np.float32
        assert got.vectors.shape == want.vectors.shape
        assert got.vectors.tobytes() == want.vectors.tobytes()


@pytest.mark.parametrize("options", [
    {}, {"derived_files_from": 0, "dense_exact_below": 0},  # memory-mapped, int8 codes
])
def test_incidence_from_the_indexes_equals_the_sql_rows(tmp_path, scifact, options):
    """On SciFact abstracts, for the terms of 30 SciFact questions (every document, and the
    chunks two searches return plus unknown and repeated ids): the incidence answered from
    the indexes equals the one read from SQL (``bm25_index=False`` reads chunk_features,
    terms_of and vectors_of), also after another process replaced, deleted and added
    documents (first with the index of the old state kept, then rebuilt)."""
    path = tmp_path / "index.sqlite3"
    fast = SQLiteStore(path, bm25_build="wait", **options)
    sql = SQLiteStore(path, bm25_index=False)
    texts = [f"{d.title} {d.text}" for _, d in sorted(scifact.corpus.items())[:360]]
    doc_ids = fill(fast, texts)
    questions = [q for _, q in sorted(scifact.queries.items())[:30]]

    def compare(doc_ids: list[str]) -> None:
        for q in questions:
            terms = tokenize(q)
            for doc_id in doc_ids[:: max(1, len(doc_ids) // 6)]:
                for vectors in (False, True):
                    same(fast.document_incidence(doc_id, terms, vectors=vectors),
                         sql.document_incidence(doc_id, terms, vectors=vectors))
            found = [h.chunk_id for h in sql.sparse_search(terms, 20)]
            found += [h.chunk_id for h in sql.dense_search(np.ones(DIM, np.float32) / 4, 20)]
            ids = [*found, "no-such-chunk", *found[:3]]
            same(fast.chunk_incidence(ids, terms, vectors=True),
                 sql.chunk_incidence(ids, terms, vectors=True))
            same(fast.chunk_incidence(ids, terms), sql.chunk_incidence(ids, terms))
            # the chunks without texts (from the BM25 index's keys) and the hits' ids
            assert fast.get_chunks(ids, texts=False) == sql.get_chunks(ids, texts=False)
            vector = np.ones(DIM, np.float32) / 4
            assert ([(h.chunk_id, h.score) for h in fast.dense_search(vector, 20)]
                    == [(h.chunk_id, h.score) for h in sql.dense_search(vector, 20)])

    fast.sparse_search(tokenize("cell"), 5)
    assert fast.bm25_index_ready()  # answered from the indexes below
    compare(doc_ids)
    held = fast.document_incidence(doc_ids[0], tokenize("cells"))
    assert held.present.any() and not held.present.all()  # the comparison says something
    index = fast._bm25_kept.index
    assert index is not None and index.keys is not None  # the keys answered get_chunks

    write_in_subprocess(f"SQLiteStore({str(path)!r})", f"""
        from tests.store.test_incidence import fill
        store.delete_document({doc_ids[-1]!r})  # the newest: its rowids are reused next
        fill(store, {texts[:PER_DOC][::-1]!r}, first=5000)
        store.delete_document({doc_ids[3]!r})
        """)
    now = [*doc_ids[:3], *doc_ids[4:-1], "doc5000", doc_ids[3], doc_ids[-1]]
    assert not fast.bm25_index_ready()  # kept index is the old state's: not used
    compare(now)
    fast.sparse_search(tokenize("cell"), 5)
    assert fast.bm25_index_ready()
    compare(now)
    assert fast.document_incidence(doc_ids[3], ["cell"]).chunk_ids == ()
    assert fast.document_incidence("doc5000", ["cell"]).chunk_ids == tuple(
        f"c{5000 + i}" for i in reversed(range(PER_DOC)))
    fast.close()
    sql.close()


def test_incidence_of_an_index_position_list():
    """BM25Index.incidence against the terms each chunk was built from."""
    from citewise.store.bm25_index import BM25Index

    texts = ["a b b c", "b d", "", "a a e", "c"]
    index = BM25Index.build(7, [(10 * i + 1, t, len(t.split())) for i, t in enumerate(texts)])
    terms = ["a", "b", "c", "d", "e", "zz", "a", ""]
    positions = np.array([4, 0, 2, 3, 1, 0])
    want = [[t in set(texts[p].split()) for t in terms] for p in positions]
    assert index.incidence(positions, terms).tolist() == want
    assert index.incidence(np.zeros(0, dtype=np.int64), terms).shape == (0, len(terms))


def test_chunks_without_texts_follow_a_replaced_document(tmp_path, scifact):
    """get_chunks(texts=False) from the BM25 index's keys and the documents it read for that
    index: after another store object (another process) replaces a document under the same
    chunk ids (new title, languages and ordinals) and deletes another, the chunks and
    documents are the new state's, equal to the SQL rows', never those read before."""
    path = tmp_path / "index.sqlite3"
    fast = SQLiteStore(path, bm25_build="wait")
    sql = SQLiteStore(path, bm25_index=False)
    texts = [f"{d.title} {d.text}" for _, d in sorted(scifact.corpus.items())[:48]]
    doc_ids = fill(fast, texts)
    ids = [f"c{i}" for i in range(0, 48, 5)] + ["no-such-chunk"]
    fast.sparse_search(tokenize("cell"), 5)
    assert fast.bm25_index_ready()
    before = fast.get_chunks(ids, texts=False)
    assert before == sql.get_chunks(ids, texts=False)
    assert before["c0"][1].title == "doc0"

    other = SQLiteStore(path)
    doc = Document(id=doc_ids[0], path="s/doc0.txt", source_path="/s/doc0", title="renamed",
                   format="text", content_hash="new")
    part = texts[:PER_DOC]
    chunks = [Chunk(id=f"c{i}", document_id=doc.id, ordinal=i, text=t, source_text=t,
                    char_start=0, char_end=len(t), content_hash=f"new{i}", language="kk")
              for i, t in enumerate(part)]
    vecs = np.full((len(part), DIM), 1 / np.sqrt(DIM), dtype=np.float32)
    other.upsert_document(doc, chunks, vecs, [analyze(t) for t in part])
    other.delete_document(doc_ids[1])
    other.close()

    fast.sparse_search(tokenize("cell"), 5)
    assert fast.bm25_index_ready()  # the keys of the new state answer
    after = fast.get_chunks(ids, texts=False)
    assert after == sql.get_chunks(ids, texts=False)
    assert after["c0"][1].title == "renamed" and after["c0"][0].language == "kk"
    assert after["c5"][0].ordinal == 5 and "c15" not in after  # doc1 (c12-c23) deleted
    fast.close()
    sql.close()
