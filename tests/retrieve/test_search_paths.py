"""Retriever.search answered from the SQLite store's in-memory indexes (BM25 postings, dense
matrix: :meth:`~citewise.store.sqlite.SQLiteStore.document_incidence` and friends) against
the same file read through SQL (``bm25_index=False``: FTS5 candidates, every chunk's terms
and vector from their rows): the same hits in the same order with the same scores, bit for
bit, on real embeddings."""

from __future__ import annotations

import numpy as np
import pytest

from citewise.config import Settings
from citewise.eval.datasets import load_beir
from citewise.retrieve.retriever import (
    Retriever,
    clean_query,
    document_idf,
    idf_within,
    question_clause,
    weighted_presence,
)
from citewise.store.base import TermIncidence
from citewise.store.sqlite import SQLiteStore
from citewise.text.analysis import analyze, content_terms, tokenize
from citewise.text.language import detect_language
from citewise.types import Chunk, Document, Hit
from tests.conftest import DATASETS

PER_DOC = 10


def fields(hits) -> list[tuple]:  # type: ignore[no-untyped-def]
    """Everything a hit carries (floats as their exact reprs)."""
    return [(h.chunk_id, repr(h.score), h.source, repr(h.dense), repr(h.sparse), repr(h.fused),
             repr(h.relevance), h.chunk, h.document, h.duplicates) for h in hits]


@pytest.fixture(scope="module")
def stores(tmp_path_factory, embedder):
    """One file of 9 documents of 10 SciFact abstracts each (real embeddings), opened with
    the in-memory indexes and through SQL only."""
    scifact = load_beir(DATASETS / "scifact")
    texts = [" ".join(f"{d.title}. {d.text}".split()[:90])  # short: quick to embed
             for _, d in sorted(scifact.corpus.items())[:90]]
    path = tmp_path_factory.mktemp("paths") / "index.sqlite3"
    fast = SQLiteStore(path, bm25_build="wait")
    fast.bind_model(embedder.name, embedder.dim)
    vectors = embedder.embed_documents(texts)
    for d in range(0, len(texts), PER_DOC):
        doc = Document(id=f"doc{d}", path=f"sci/doc{d}.txt", source_path=f"/sci/doc{d}",
                       title=f"doc{d}", format="text", content_hash=str(d),
                       chunk_count=PER_DOC)
        chunks = [Chunk(id=f"c{d + i}", document_id=doc.id, ordinal=i, text=t, source_text=t,
                        char_start=0, char_end=len(t), content_hash=f"h{d + i}")
                  for i, t in enumerate(texts[d : d + PER_DOC])]
        fast.upsert_document(doc, chunks, vectors[d : d + PER_DOC],
                             [analyze(t) for t in texts[d : d + PER_DOC]])
    sql = SQLiteStore(path, bm25_index=False)
    queries = [q for _, q in sorted(scifact.queries.items())[:24]]
    yield fast, sql, queries
    fast.close()
    sql.close()


def test_search_from_the_indexes_equals_search_through_sql(stores, embedder, tmp_path):
    fast, sql, queries = stores
    settings = Settings(home=tmp_path / "home", llm_provider="none")
    on_index, on_sql = Retriever(settings, fast, embedder), Retriever(settings, sql, embedder)
    on_index.search(queries[0])
    assert fast.bm25_index_ready()  # the index path answers from here
    found = picked = 0
    for q in queries:
        got, want = on_index.search(q), on_sql.search(q)
        assert fields(got.hits) == fields(want.hits), q
        assert got.candidates == want.candidates
        vector = embedder.embed_query(q)
        ranked = on_sql.rank(q, query_vec=vector)
        assert fields(on_index.rank(q, query_vec=vector)) == fields(ranked), q
        for hit in want.hits[:2]:
            doc_id = hit.chunk.document_id
            assert (on_index.document_term_weights(doc_id, q)
                    == on_sql.document_term_weights(doc_id, q))
        found += bool(want.hits)
        # evidence that is not its document's best candidate: the within-document step's
        best = {}
        for h in ranked:
            best.setdefault(h.chunk.document_id, h.chunk_id)
        picked += sum(h.chunk_id != best.get(h.chunk.document_id) for h in want.hits)
    assert found >= 18  # the comparison covers real evidence ...
    assert picked  # ... including chunks the within-document step chose over the best hit


class EveryText(Retriever):
    """``search`` as before it read the candidates without their texts: every candidate's
    chunk read in full by the ranking (what :meth:`Retriever.rank` returns)."""

    def _rank(self, query, **kwargs):  # type: ignore[no-untyped-def]
        return super()._rank(query, **{**kwargs, "texts": True})


def test_search_reading_only_the_kept_texts_equals_reading_every_text(stores, embedder,
                                                                      tmp_path):
    fast, sql, queries = stores
    settings = Settings(home=tmp_path / "home", llm_provider="none")
    for store in (fast, sql):
        lean, full = Retriever(settings, store, embedder), EveryText(settings, store, embedder)
        found = 0
        for q in queries:
            got, want = lean.search(q), full.search(q)
            assert fields(got.hits) == fields(want.hits), q
            assert got.candidates == want.candidates
            stored = store.get_chunks([h.chunk_id for h in got.hits])
            assert [h.chunk for h in got.hits] == [stored[h.chunk_id][0] for h in got.hits]
            assert all(h.chunk is not None and h.chunk.text for h in got.hits)
            found += bool(got.hits)
        assert found >= 18


def test_chunks_the_selection_adds_are_scored_as_candidates_are(stores, embedder, tmp_path):
    """A chunk the within-document step picks that was no candidate (legs 2 deep, so most
    are not) gets the relevance the candidates' scoring (``_attach``) gives it, bit for bit,
    its document's fused score, and its full chunk."""
    fast, sql, queries = stores
    settings = Settings(home=tmp_path / "home", llm_provider="none", dense_k=2, sparse_k=2)
    added = 0
    for store in (fast, sql):
        retriever = Retriever(settings, store, embedder)
        for q in queries:
            ranked = retriever.rank(q)
            fused = {h.chunk.document_id: h.fused for h in reversed(ranked)}
            clause = question_clause(clean_query(q, settings.max_query_chars))
            language = detect_language(q)
            terms = content_terms(clause, language) or tokenize(clause, language)
            vector = embedder.embed_query(clause)
            for hit in retriever.search(q).hits:
                if hit.chunk_id in {h.chunk_id for h in ranked}:
                    continue
                added += 1
                (want,) = retriever._attach([Hit(chunk_id=hit.chunk_id, score=hit.score,
                                                 dense=hit.dense)], vector, terms)
                assert repr(hit.relevance) == repr(want.relevance), q
                assert hit.chunk == store.get_chunks([hit.chunk_id])[hit.chunk_id][0]
                assert hit.document == want.document and hit.sparse is None
                assert hit.fused == fused[hit.chunk.document_id]
    assert added >= 4


def test_idf_within_equals_document_idf_and_the_sums_are_exact():
    rng = np.random.default_rng(3)
    vocabulary = [f"t{i}" for i in range(12)]
    chunk_terms = [frozenset(t for t in vocabulary if rng.random() < 0.3) for _ in range(40)]
    terms = ["t1", "t3", "t3", "t7", "t11", "absent", "t0"]
    collection = {t: int(rng.integers(1, 200)) for t in vocabulary}
    unique = list(dict.fromkeys(terms))
    counts = {t: sum(t in c for c in chunk_terms) for t in unique}
    for cdf, concentration in ((None, 0.0), (collection, 0.75)):
        want = document_idf(chunk_terms, terms, cdf, concentration)
        assert idf_within(len(chunk_terms), counts, terms, cdf, concentration) == want
        assert "absent" not in want and len(want) == 5
    weights = document_idf(chunk_terms, terms, collection, 0.75)
    incidence = TermIncidence.of([f"c{i}" for i in range(40)], chunk_terms, unique)
    sums = weighted_presence(incidence, weights)
    assert sums.dtype == np.float64 and sums.shape == (40,)
    want = [sum(w for t, w in weights.items() if t in c) for c in chunk_terms]
    assert [s.hex() for s in sums.tolist()] == [float(w).hex() for w in want]
