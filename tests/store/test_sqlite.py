import sqlite3
import threading

import numpy as np
import pytest

from citewise.store.base import BulkLoading, FileBacked, SelfChecking
from citewise.store.sqlite import BM25_B, BM25_K1, SQLiteStore, bm25_scores
from citewise.text.analysis import analyze, tokenize
from tests.suites.store import DIM, StoreSuite, make_doc, unit


class TestSQLiteStore(StoreSuite):
    @pytest.fixture
    def store(self, tmp_path):
        s = SQLiteStore(tmp_path / "index.sqlite3", bm25_build="wait")  # the index path
        yield s
        s.close()

    def opener(self, store) -> str:
        return f"SQLiteStore({str(store.path)!r})"

    def test_optional_capabilities(self, store):
        assert isinstance(store, SelfChecking) and store.check() == []
        assert isinstance(store, FileBacked) and store.path.name == "index.sqlite3"
        assert not isinstance(store, BulkLoading)


class TestSQLiteStoreInt8Dense(TestSQLiteStore):
    """The whole suite again with dense search through int8 codes from the first chunk on
    and a shortlist of ``4 k`` codes (the default exact search below 20,000 chunks, and the
    default shortlist of at least 100, would otherwise answer every test here exactly)."""

    @pytest.fixture
    def store(self, tmp_path):
        s = SQLiteStore(tmp_path / "index.sqlite3", bm25_build="wait", dense_exact_below=0,
                        dense_rescore_factor=4, dense_rescore_min=1)
        yield s
        s.close()


class TestSQLiteStoreDerivedFiles(TestSQLiteStore):
    """The whole suite again with every derived index saved next to the file and opened
    memory-mapped (no size threshold; int8 codes from the first chunk on), here and in the
    other processes the suite starts."""

    OPTIONS = "bm25_build='wait', derived_files_from=0, dense_exact_below=0"

    @pytest.fixture
    def store(self, tmp_path):
        s = SQLiteStore(tmp_path / "index.sqlite3", bm25_build="wait", derived_files_from=0,
                        dense_exact_below=0)
        yield s
        s.close()

    def opener(self, store) -> str:
        return f"SQLiteStore({str(store.path)!r}, {self.OPTIONS})"


def test_bm25_matches_an_independent_implementation(tmp_path):
    """Scores equal bm25s's (a separate BM25 library) over the same analysed token lists, with
    the store's parameters: Lucene's smoothed IDF, k1 = BM25_K1, b = BM25_B, float64."""
    bm25s = pytest.importorskip("bm25s")
    texts = ["red apple red", "green apple", "red red red car", "blue sky", "apple pie recipe",
             "an apple a day keeps the red doctor away"]
    store = SQLiteStore(tmp_path / "i.sqlite3")
    store.bind_model("m", DIM)
    for i, t in enumerate(texts):
        doc, chunks, vecs = make_doc(f"d{i}", [t])
        store.upsert_document(doc, chunks, vecs, [analyze(t)])
    query = tokenize("red apple")

    reference = bm25s.BM25(method="lucene", k1=BM25_K1, b=BM25_B, dtype="float64")
    reference.index([analyze(t).split() for t in texts], show_progress=False)
    # bm25s's "lucene" scorer follows Lucene 8+, which drops the constant (k1 + 1) from the
    # numerator (it changes no ranking); the store keeps Robertson's form, so scale it back
    scores = reference.get_scores(query) * (BM25_K1 + 1)
    expected = sorted(((s, f"d{i}-0") for i, s in enumerate(scores) if s > 0), reverse=True)

    hits = store.sparse_search(query, 10)
    assert len(expected) == 5 and [h.chunk_id for h in hits] == [cid for _, cid in expected]
    np.testing.assert_allclose([h.sparse for h in hits], [s for s, _ in expected], rtol=1e-9)


def test_bm25_idf_is_positive_for_common_terms():
    tf = np.array([1.0])
    assert bm25_scores(tf, np.array([3.0]), df=10, n_docs=10, avgdl=3.0)[0] > 0


def test_fts_syntax_in_query_is_data(tmp_path):
    store = SQLiteStore(tmp_path / "i.sqlite3")
    doc, chunks, vecs = make_doc("q", ["NEAR AND OR NOT quoted text start"])
    store.bind_model("m", DIM)
    store.upsert_document(doc, chunks, vecs)
    for q in ['"unbalanced quoted', "NEAR(quoted text)", "quoted AND OR NOT", "col:quoted*",
              "^start"]:
        hits = store.sparse_search(tokenize(q), 5)  # operators are searched as words
        assert [h.chunk_id for h in hits] == ["q-0"], q


def test_migrations_are_recorded_and_idempotent(tmp_path):
    path = tmp_path / "i.sqlite3"
    SQLiteStore(path).close()
    SQLiteStore(path).close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 7  # m001 ... m007
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_m002_puts_the_documents_of_an_older_index_in_the_default_collection(tmp_path):
    from citewise.store.sqlite import m001_initial

    path = tmp_path / "old.sqlite3"
    db = sqlite3.connect(path, isolation_level=None)
    m001_initial(db)
    db.execute("PRAGMA user_version = 1")
    db.execute("INSERT INTO documents (id, path, source_path, title, format, content_hash, "
               "chunk_count, indexed_at) VALUES ('d', 'a.txt', '/a.txt', 'a', 'text', 'h', 0, 0)")
    db.close()
    store = SQLiteStore(path)
    assert [(d.id, d.collection) for d in store.documents()] == [("d", "default")]
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == 7  # m002 ... m007


def test_m007_recognises_the_empty_files_of_an_older_index(tmp_path):
    """Failures recorded before m007 get a kind only where the message is an empty file's
    (it ends with EmptyDocumentError.remedy); other failures and indexed documents get ''.
    """
    from citewise.errors import CorruptDocumentError, EmptyDocumentError
    from citewise.store.sqlite import MIGRATIONS

    path = tmp_path / "v6.sqlite3"
    db = sqlite3.connect(path, isolation_level=None)
    for step in MIGRATIONS[:6]:
        step(db)
    db.execute("PRAGMA user_version = 6")
    for i, (status, error) in enumerate([
            ("indexed", ""), ("failed", f"empty file (0 bytes); {EmptyDocumentError.remedy}"),
            ("failed", CorruptDocumentError.reason)]):
        db.execute("INSERT INTO documents (id, path, source_path, title, format, content_hash, "
                   "chunk_count, indexed_at, status, error) VALUES (?, ?, ?, 'd', 'text', 'h', "
                   "0, 0, ?, ?)", (f"d{i}", f"d{i}.txt", f"/d{i}.txt", status, error))
    db.close()
    store = SQLiteStore(path)
    assert [(d.id, d.status, d.error_kind) for d in store.documents()] == [
        ("d0", "indexed", ""), ("d1", "failed", "empty"), ("d2", "failed", "")]
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == 7


def test_m006_makes_an_older_index_read_chunk_ids_from_the_index_alone(tmp_path):
    """A version-4 index (its ``chunks_document`` on ``(document_id, ordinal)`` only) is
    migrated to the covering ``(document_id, ordinal, id)``: a document's chunk ids in
    ordinal order are answered from the index without visiting the table, and the
    document's incidence is unchanged."""
    from citewise.store.sqlite import (
        m001_initial,
        m002_collection,
        m003_chunk_language,
        m004_chunk_page_starts,
    )

    path = tmp_path / "v4.sqlite3"
    db = sqlite3.connect(path, isolation_level=None)
    for step in (m001_initial, m002_collection, m003_chunk_language, m004_chunk_page_starts):
        step(db)
    db.execute("PRAGMA user_version = 4")
    db.close()
    store = SQLiteStore(path)
    store.bind_model("m", DIM)
    doc, chunks, vecs = make_doc("d.md", ["alpha one", "beta two", "alpha three"])
    store.upsert_document(doc, chunks, vecs)
    db = store.db
    assert db.execute("PRAGMA user_version").fetchone()[0] == 7
    assert [r[2] for r in db.execute("PRAGMA index_info(chunks_document)")] == [
        "document_id", "ordinal", "id"]
    plan = " ".join(str(r[-1]) for r in db.execute(
        "EXPLAIN QUERY PLAN SELECT rowid, id FROM chunks WHERE document_id = ? ORDER BY ordinal",
        (doc.id,)))
    assert "COVERING INDEX chunks_document" in plan, plan
    incidence = store.document_incidence(doc.id, ["alpha", "beta"])
    assert incidence.chunk_ids == tuple(c.id for c in chunks)
    assert incidence.present.tolist() == [[True, False], [False, True], [True, False]]


def test_reader_sees_old_or_new_version_while_writer_replaces(tmp_path):
    """During re-indexing a reader sees one complete version, never a mix (case C20)."""
    path = tmp_path / "i.sqlite3"
    writer = SQLiteStore(path)
    writer.bind_model("m", DIM)
    versions = {
        0: ["version zero part one", "version zero part two", "version zero part three"],
        1: ["version one part one", "version one part two"],
    }
    doc, chunks, vecs = make_doc("v.md", versions[0])
    writer.upsert_document(doc, chunks, vecs)
    stop = threading.Event()
    seen: set[tuple[str, ...]] = set()

    def read():
        reader = SQLiteStore(path)
        while True:  # at least one read, even when the writer finishes first
            done = stop.is_set()
            with reader.snapshot():
                hits = reader.sparse_search(tokenize("version part"), 10)
                loaded = reader.get_chunks([h.chunk_id for h in hits])
            seen.add(tuple(sorted(loaded[h.chunk_id][0].text for h in hits)))
            if done:
                break
        reader.close()

    t = threading.Thread(target=read)
    t.start()
    for i in range(250):
        texts = versions[i % 2]
        _, c, v = make_doc("v.md", texts)
        writer.upsert_document(doc, c, v)
    stop.set()
    t.join()
    allowed = {tuple(sorted(v)) for v in versions.values()}
    assert seen and seen <= allowed | {()}, seen - allowed


def test_dense_matrix_reloads_after_write(tmp_path):
    store = SQLiteStore(tmp_path / "i.sqlite3")
    doc, chunks, vecs = make_doc("a", ["x"], [unit(1)])
    store.bind_model("m", DIM)
    store.upsert_document(doc, chunks, vecs)
    assert len(store.dense_search(unit(1), 5)) == 1
    doc2, chunks2, vecs2 = make_doc("b", ["y"], [unit(0, 1)])
    store.upsert_document(doc2, chunks2, vecs2)
    assert [h.chunk_id for h in store.dense_search(unit(0, 1), 1)] == ["b-0"]


def test_an_index_from_before_languages_is_re_analysed_by_reindex(tmp_path, make_engine):
    """An index written by analyzer version 1 (schema m001, Russian stemming for all Cyrillic)
    is migrated (m002), refused with a clear message, and `reindex` re-analyses its chunks in
    place: Kazakh terms and chunk languages recomputed, vectors kept."""
    from citewise.errors import AnalyzerMismatchError
    from citewise.store.sqlite import m001_initial
    from citewise.text.analysis import ANALYZER_VERSION

    engine = make_engine()
    path = engine.settings.home / "index.sqlite3"
    path.parent.mkdir(parents=True)
    db = sqlite3.connect(path, isolation_level=None)
    m001_initial(db)
    db.execute("PRAGMA user_version = 1")
    text = "Кітапхананың жұмыс уақыты: дүйсенбі-жұма"
    vector = engine.embedder.embed_documents([text])[0]
    db.execute("INSERT INTO documents VALUES ('d1', 'k.txt', '/abs/k.txt', 'k', 'text', 'h', 1, "
               "NULL, '{}', '[]', 0, 'indexed', '')")
    db.execute("INSERT INTO chunks (id, document_id, ordinal, text, source_text, char_start, "
               "char_end, content_hash, token_count, terms, n_terms, vector) VALUES "
               "('c1', 'd1', 0, ?, ?, 0, 40, 'ch', 5, 'кітапхананың жұмыс уақыты', 3, ?)",
               (text, text, vector.astype("<f4").tobytes()))
    db.execute("INSERT INTO meta VALUES ('embedding_model', ?), ('dimension', ?)",
               (engine.embedder.name, str(engine.embedder.dim)))
    db.close()

    store = engine.store  # opening migrates to m002 and records analyzer version 1
    assert store.stored_analyzer() == "1"
    with pytest.raises(AnalyzerMismatchError, match="citewise reindex"):
        engine.check_model()
    with pytest.raises(AnalyzerMismatchError):  # ingesting into it is refused as well
        engine.ingest([tmp_path / "missing.txt"])

    report = engine.reindex()
    assert report.count("updated") == 1
    assert store.stored_analyzer() == ANALYZER_VERSION
    engine.check_model()  # no longer raises
    chunk, _ = store.get_chunks(["c1"])["c1"]
    assert chunk.language == "kk"
    assert {"кітапхана", "уақыт"} <= store.terms_of(["c1"])["c1"]
    np.testing.assert_array_equal(store.vectors_of(["c1"])["c1"], vector)  # not re-embedded
    hits = engine.search("Кітапханаға жұмыс уақыттары қандай?", mode="sparse").hits
    assert [h.chunk_id for h in hits] == ["c1"]


def test_filtered_bm25_needs_no_sql_variable_per_chunk(tmp_path):
    """Regression: a filter was bound as one SQL variable per allowed chunk, so a language or
    collection filter over more chunks than SQLite's variable limit (32,766) raised "too many
    SQL variables" (language routing filters every question of a bilingual index). The limit
    is lowered here to 1,000 so that 1,250 chunks cross it."""
    from dataclasses import replace

    store = SQLiteStore(tmp_path / "i.sqlite3")
    store.bind_model("m", DIM)
    for i in range(250):
        texts = [f"refund policy clause {i} {j} " + "word " * j for j in range(5)]
        doc, chunks, vecs = make_doc(f"d{i}", texts)
        chunks = [replace(c, language="ru" if i % 6 == 0 else "en") for c in chunks]
        store.upsert_document(doc, chunks, vecs, [analyze(t) for t in texts])
    store.db.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 1000)
    query = tokenize("refund clause word")
    everything = store.sparse_search(query, 150)
    loaded = store.get_chunks([h.chunk_id for h in everything])
    english = [h.chunk_id for h in everything if loaded[h.chunk_id][0].language == "en"]
    assert len(everything) == 150 and 100 < len(english) < 150
    hits = store.sparse_search(query, 150, {"language": "en"})
    assert len(hits) == 150 and [h.chunk_id for h in hits][:len(english)] == english
    assert [h.chunk_id for h in store.sparse_search(query, 10, {"language": "ru"})] == [
        h.chunk_id for h in everything if loaded[h.chunk_id][0].language == "ru"][:10]
    store.close()


@pytest.mark.parametrize("filters", [{"document_ids": ["id-d3"]}, {"path_prefix": "col/d"},
                                     {"document_ids": ["id-d1", "id-d2", "id-d5"]},
                                     {"document_ids": ["missing"]}])
def test_filtered_dense_search_is_exact_for_narrow_and_wide_filters(tmp_path, filters):
    """The filtered dense top k is numpy's exact top k over the chunks that pass, whether the
    store scores only those rows (a narrow filter) or all of them, before and after a write
    (the cached filter positions belong to one generation)."""
    rng = np.random.default_rng(7)
    store = SQLiteStore(tmp_path / "i.sqlite3")
    store.bind_model("m", DIM)
    for round_ in range(2):
        vectors = {}
        for d in range(8):
            texts = [f"chunk {d} {i} round {round_}" for i in range(6)]
            vecs = [unit(*rng.normal(size=DIM)) for _ in texts]
            doc, chunks, stacked = make_doc(f"d{d}", texts, vecs)
            store.upsert_document(doc, chunks, stacked)
            vectors.update({c.id: v for c, v in zip(chunks, vecs, strict=True)})
        query = unit(*rng.normal(size=DIM))
        ids = filters.get("document_ids")
        passing = [cid for cid in vectors if ids is None or f"id-{cid.split('-')[0]}" in ids]
        want = sorted(passing, key=lambda cid: -float(vectors[cid] @ query))[:5]
        hits = store.dense_search(query, 5, filters)
        assert [h.chunk_id for h in hits] == want
        np.testing.assert_allclose([h.dense for h in hits],
                                   [float(vectors[c] @ query) for c in want], atol=1e-6)
