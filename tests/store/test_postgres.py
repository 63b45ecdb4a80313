"""The PostgreSQL + pgvector store on a real server (see ``postgres_url`` in tests/conftest.py):
the shared conformance suite, BM25 equal to the SQLite store's on SciFact, schema migrations,
HNSW recall, and concurrent writers and readers."""

from __future__ import annotations

import json
import re
import threading

import numpy as np
import psycopg
import pytest

from citewise.config import Settings
from citewise.errors import CorruptDocumentError, EmptyDocumentError
from citewise.store.base import BulkLoading, FileBacked, SelfChecking
from citewise.store.factory import open_store
from citewise.store.postgres import PostgresStore
from citewise.store.sqlite import SQLiteStore
from citewise.text.analysis import analyze, tokenize
from citewise.types import Chunk, Document
from tests.conftest import DATASETS
from tests.suites.store import DIM, StoreSuite, make_doc, unit, write_in_subprocess


class TestPostgresStore(StoreSuite):
    @pytest.fixture
    def store(self, postgres_url):
        s = PostgresStore(postgres_url)
        yield s
        s.close()

    def opener(self, store) -> str:
        return f"PostgresStore({store.url!r})"

    def test_optional_capabilities(self, store):
        assert isinstance(store, BulkLoading)
        assert not isinstance(store, FileBacked) and not isinstance(store, SelfChecking)


class TestPostgresStoreBM25Index(TestPostgresStore):
    """The whole suite again with BM25 from the in-memory index per process (built before
    the search, here and in the other processes the suite starts)."""

    @pytest.fixture
    def store(self, postgres_url):
        s = PostgresStore(postgres_url, bm25_index=True, bm25_build="wait")
        yield s
        s.close()

    def opener(self, store) -> str:
        return f"PostgresStore({store.url!r}, bm25_index=True, bm25_build='wait')"


@pytest.mark.slow
def test_bm25_from_the_index_equals_the_sql_scoring_on_scifact(postgres_url):
    """The same 1,228 SciFact chunks (with deletes and rewrites), searched through the SQL
    postings and through the in-memory index on one server: identical top 10 and top 50,
    ids and scores to the last bit, filters included; a write (deletes) is seen at once."""
    sql = PostgresStore(postgres_url)
    index = PostgresStore(postgres_url, bm25_index=True, bm25_build="wait")
    sql.bind_model("m", DIM)
    rng = np.random.default_rng(0)
    collection = _scifact(400)
    for doc, chunks in collection:
        _write((sql,), doc, chunks, rng)
    for doc, _ in collection[::10]:
        assert sql.delete_document(doc.id)
    for doc, chunks in collection[5::10]:
        _write((sql,), doc, [c for c in chunks if c.ordinal != 1], rng)
    with (DATASETS / "scifact" / "queries.jsonl").open() as f:
        queries = [json.loads(line)["text"] for line, _ in zip(f, range(300), strict=False)]
    one_doc = {"document_ids": [collection[7][0].id, collection[8][0].id]}
    for q in queries:
        terms = tokenize(q)
        for k, filters in ((10, None), (50, None), (10, one_doc)):
            got = [(h.chunk_id, h.sparse) for h in index.sparse_search(terms, k, filters)]
            want = [(h.chunk_id, h.sparse) for h in sql.sparse_search(terms, k, filters)]
            assert got == want, q
    first = index.sparse_search(tokenize(queries[0]), 1)[0].chunk_id
    assert sql.delete_document(sql.get_chunks([first])[first][1].id)
    assert first not in {h.chunk_id for h in index.sparse_search(tokenize(queries[0]), 50)}
    assert index._bm25_kept.current(sql.generation()) is not None
    sql.close()
    index.close()


def test_the_bm25_index_is_built_in_the_background_while_sql_answers(postgres_url):
    store = PostgresStore(postgres_url, bm25_index=True)
    sql = PostgresStore(postgres_url)
    store.bind_model("m", DIM)
    doc, chunks, vecs = make_doc("a.txt", ["cormorant feathers", "gull feathers"])
    store.upsert_document(doc, chunks, vecs, [analyze(c.text) for c in chunks])
    terms = tokenize("cormorant feathers")
    want = [(h.chunk_id, h.sparse) for h in sql.sparse_search(terms, 5)]
    assert [(h.chunk_id, h.sparse) for h in store.sparse_search(terms, 5)] == want  # SQL
    assert store.bm25_index_ready(wait_s=30)
    assert [(h.chunk_id, h.sparse) for h in store.sparse_search(terms, 5)] == want  # index
    open_ = open_store(Settings(store=postgres_url, postgres_bm25_index=True))
    assert isinstance(open_, PostgresStore) and open_.bm25_index
    for s in (store, sql, open_):
        s.close()


def _stats_are_consistent(store: PostgresStore) -> None:
    """The term and collection statistics equal what the chunks themselves say."""
    db = store.db
    n, total = db.execute("SELECT count(*), coalesce(sum(n_terms), 0) FROM chunks").fetchone()
    assert db.execute("SELECT chunks, total_terms FROM collection_stats").fetchone() == (n, total)
    expected: dict[str, int] = {}
    for (terms,) in db.execute("SELECT terms FROM chunks"):
        for t in set(terms.split()):
            expected[t] = expected.get(t, 0) + 1
    stored = dict(db.execute("SELECT term, df FROM term_stats WHERE df <> 0").fetchall())
    assert stored == expected
    postings = db.execute("SELECT count(*) FROM postings").fetchone()[0]
    assert postings == sum(expected.values())


def _scifact(n_docs: int) -> list[tuple[Document, list[Chunk]]]:
    """The first ``n_docs`` SciFact abstracts, each a document of 4-sentence chunks."""
    out = []
    with (DATASETS / "scifact" / "corpus.jsonl").open() as f:
        for line, _ in zip(f, range(n_docs), strict=False):
            row = json.loads(line)
            sentences = re.split(r"(?<=\.)\s+", row["text"].strip()) or [""]
            texts = [row["title"]] + [" ".join(sentences[i:i + 4])
                                      for i in range(0, len(sentences), 4)]
            doc = Document(id=f"sf-{row['_id']}", path=f"scifact/{row['_id']}.txt",
                           source_path=f"/scifact/{row['_id']}.txt", title=row["title"],
                           format="text", content_hash=row["_id"])
            chunks = [Chunk(id=f"sf-{row['_id']}-{i}", document_id=doc.id, ordinal=i, text=t,
                            source_text=t, char_start=0, char_end=len(t),
                            content_hash=f"{row['_id']}-{i}", token_count=len(t.split()))
                      for i, t in enumerate(texts)]
            out.append((doc, chunks))
    return out


def _scifact_queries(n: int) -> list[str]:
    """The first ``n`` SciFact queries' texts."""
    with (DATASETS / "scifact" / "queries.jsonl").open() as f:
        return [json.loads(line)["text"] for line, _ in zip(f, range(n), strict=False)]


def _write(stores, doc, chunks, rng):
    vecs = rng.normal(size=(len(chunks), DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    terms = [analyze(c.text) for c in chunks]
    for s in stores:
        s.upsert_document(doc, chunks, vecs, terms)


@pytest.mark.slow
def test_bm25_rankings_equal_the_sqlite_store_on_scifact(postgres_url, tmp_path):
    """400 SciFact abstracts (1,375 chunks) written to both stores, then 40 deleted and 40
    rewritten: for 300 SciFact queries both stores return the same top 10 with the same
    scores, to the last bit, and the same top 50 as SQLite's exhaustive rescoring."""
    pg, lite = PostgresStore(postgres_url), SQLiteStore(tmp_path / "i.sqlite3")
    stores = (pg, lite)
    for s in stores:
        s.bind_model("m", DIM)
    rng = np.random.default_rng(0)
    collection = _scifact(400)
    for doc, chunks in collection:
        _write(stores, doc, chunks, rng)
    for doc, _ in collection[::10]:
        assert pg.delete_document(doc.id) and lite.delete_document(doc.id)
    for doc, chunks in collection[5::10]:  # drop each rewritten abstract's first text chunk
        kept = [c for c in chunks if c.ordinal != 1]
        _write(stores, doc, kept, rng)
    assert pg.info().chunks == lite.info().chunks == 1228
    _stats_are_consistent(pg)
    compared = 0
    for q in _scifact_queries(300):
        terms = tokenize(q)
        assert pg.term_document_frequencies(terms) == lite.term_document_frequencies(terms)
        got, want = pg.sparse_search(terms, 10), lite.sparse_search(terms, 10)
        assert [h.chunk_id for h in got] == [h.chunk_id for h in want], q
        assert [h.sparse for h in got] == [h.sparse for h in want], q  # bit-identical floats
        got50 = pg.sparse_search(terms, 50)
        want50 = lite.sparse_search(terms, 50, candidates=100_000)
        assert [(h.chunk_id, h.sparse) for h in got50] == [(h.chunk_id, h.sparse) for h in want50]
        compared += bool(want)
    assert compared >= 295
    pg.close()
    lite.close()


def test_bm25_scores_equal_the_reference_formula(postgres_url):
    """Exact values against an independent Lucene BM25 (k1=0.9, b=0.4) computed here."""
    texts = ["red apple red", "green apple", "red red red car", "blue sky", "apple pie recipe"]
    store = PostgresStore(postgres_url)
    store.bind_model("m", DIM)
    for i, t in enumerate(texts):
        doc, chunks, vecs = make_doc(f"d{i}", [t])
        store.upsert_document(doc, chunks, vecs)
    docs = [analyze(t).split() for t in texts]
    avgdl = sum(map(len, docs)) / len(docs)
    query = tokenize("red apple red")

    def reference(d: list[str]) -> float:
        score = 0.0
        for q in query:
            df = sum(q in x for x in docs)
            idf = np.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
            tf = d.count(q)
            score += idf * tf * 1.9 / (tf + 0.9 * (1 - 0.4 + 0.4 * len(d) / avgdl))
        return score

    expected = sorted(((reference(d), f"d{i}-0") for i, d in enumerate(docs)), reverse=True)
    expected = [(s, cid) for s, cid in expected if s > 0]
    hits = store.sparse_search(query, 10)
    assert [h.chunk_id for h in hits] == [cid for _, cid in expected]
    np.testing.assert_allclose([h.sparse for h in hits], [s for s, _ in expected], rtol=1e-12)
    store.close()


def test_schema_is_migrated_once_with_named_migrations(postgres_url):
    PostgresStore(postgres_url).close()
    store = PostgresStore(postgres_url)  # reopening applies nothing twice
    assert store.migrations() == ["m001_initial", "m002_collection", "m003_chunk_language",
                                  "m004_chunk_page_starts", "m005_document_error_kind",
                                  "m006_inline_vectors"]
    tables = {r[0] for r in store.db.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
    assert tables == {"citewise_migrations", "citewise_meta", "documents", "chunks", "postings",
                      "term_stats", "collection_stats"}
    assert store.db.execute(
        "SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0] >= "0.8"
    store.close()


def test_vectors_stay_in_the_chunk_row_when_the_row_is_long(postgres_url):
    """m006: a 384-d vector (1.5 kB) in a 3 kB row stays in the row (pgvector's default
    storage moved it, the largest value, into the TOAST table: a lookup per chunk read); the
    texts go there instead."""
    store = PostgresStore(postgres_url)
    store.bind_model("m", 384)
    rng = np.random.default_rng(3)
    texts = [" ".join(f"w{rng.integers(10**6)}" for _ in range(70)) for _ in range(3)]
    vecs = rng.normal(size=(3, 384)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    doc = Document(id="long", path="long.txt", source_path="/long.txt", title="long",
                   format="text", content_hash="h")
    chunks = [Chunk(id=f"long-{i}", document_id="long", ordinal=i, text=t, source_text=t,
                    char_start=0, char_end=len(t), content_hash=f"c{i}")
              for i, t in enumerate(texts)]
    store.upsert_document(doc, chunks, vecs, [analyze(t) for t in texts])
    rows = store.db.execute(
        "SELECT pg_column_toast_chunk_id(embedding) IS NULL, "
        "pg_column_toast_chunk_id(source_text) IS NOT NULL FROM chunks ORDER BY ordinal"
    ).fetchall()
    assert rows == [(True, True)] * 3
    back = store.vectors_of(["long-1"])["long-1"]
    assert back.tobytes() == vecs[1].tobytes()
    store.close()


def test_an_index_made_before_m002_is_upgraded_in_place(postgres_url):
    """A database left by a version that had only m001: its schema and ledger made by that
    migration and the ledger table as those versions created them."""
    import psycopg

    from citewise.store.postgres import m001_initial

    with psycopg.connect(postgres_url) as conn, conn.cursor() as cur:
        m001_initial(cur)
        cur.execute("CREATE TABLE citewise_migrations "
                    "(name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
        cur.execute("INSERT INTO citewise_migrations (name) VALUES ('m001_initial')")
        cur.execute("INSERT INTO documents (id, path, source_path, title, format, content_hash, "
                    "chunk_count, indexed_at) VALUES ('d', 'a.txt', '/a.txt', 'a', 'text', 'h', "
                    "0, 0)")
        # failures recorded before m005: an empty file's message and a corrupt file's
        for i, error in enumerate([f"empty file (0 bytes); {EmptyDocumentError.remedy}",
                                   CorruptDocumentError.reason]):
            cur.execute("INSERT INTO documents (id, path, source_path, title, format, "
                        "content_hash, chunk_count, indexed_at, status, error) VALUES "
                        "(%s, %s, %s, 'f', 'text', 'h', 0, 0, 'failed', %s)",
                        (f"f{i}", f"f{i}.txt", f"/f{i}.txt", error))
    store = PostgresStore(postgres_url)
    assert store.migrations() == ["m001_initial", "m002_collection", "m003_chunk_language",
                                  "m004_chunk_page_starts", "m005_document_error_kind",
                                  "m006_inline_vectors"]
    assert [(d.id, d.collection, d.error_kind) for d in store.documents()] == [
        ("d", "default", ""), ("f0", "default", "empty"), ("f1", "default", "")]
    assert store.db.execute(  # m006: vectors written from now on stay in the row
        "SELECT attstorage FROM pg_attribute WHERE attrelid = 'chunks'::regclass "
        "AND attname = 'embedding'").fetchone()[0] == "m"
    store.close()


def test_vectors_get_an_hnsw_cosine_index_that_reindex_rebuilds(postgres_url):
    store = PostgresStore(postgres_url)
    store.bind_model("m", DIM)

    def index() -> str:
        return store.db.execute("SELECT indexdef FROM pg_indexes "
                                "WHERE indexname = 'chunks_embedding_hnsw'").fetchone()[0]

    assert "USING hnsw (embedding vector_cosine_ops)" in index()
    doc, chunks, vecs = make_doc("a", ["x"])
    store.upsert_document(doc, chunks, vecs)
    store.clear()  # citewise reindex with another model: a new dimension on the empty index
    store.bind_model("other", 16)
    assert "hnsw" in index()
    col = store.db.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE "
                           "attrelid = 'chunks'::regclass AND attname = 'embedding'").fetchone()
    assert col == ("vector(16)",)
    store.close()


@pytest.mark.parametrize(("configured", "expected"), [("64MB", "1GB"), ("3GB", "3GB")])
def test_bulk_load_builds_hnsw_with_at_least_1gb_and_keeps_a_larger_setting(
        postgres_url, configured, expected):
    # regression: bulk_load set maintenance_work_mem to 1GB unconditionally, lowering a larger
    # server or role setting, so a 1M-chunk build spilled out of memory (much slower)
    store = PostgresStore(postgres_url)
    store.bind_model("m", DIM)
    db = store.db
    db.execute("CREATE TABLE seen (setting text)")
    db.execute("CREATE FUNCTION record_memory() RETURNS event_trigger LANGUAGE plpgsql AS $$ "
               "BEGIN INSERT INTO seen VALUES (current_setting('maintenance_work_mem')); END $$")
    db.execute("CREATE EVENT TRIGGER record_memory ON ddl_command_end "
               "WHEN TAG IN ('CREATE INDEX') EXECUTE FUNCTION record_memory()")
    db.execute(f"SET maintenance_work_mem = '{configured}'")
    with store.bulk_load():
        store.upsert_document(*make_doc("a", ["x", "y"]))
    assert [r[0] for r in db.execute("SELECT setting FROM seen")] == [expected]
    assert db.execute("SHOW maintenance_work_mem").fetchone()[0] == configured  # local only
    hits = store.dense_search(make_doc("a", ["x", "y"])[2][0], 1)
    assert [h.chunk_id for h in hits] == ["a-0"]
    store.close()


def _bulk_state(store: PostgresStore) -> tuple[bool, bool, str | None]:
    """(postings primary key present, HNSW index present, the ``bulk_load`` marker)."""
    db = store.db
    key, hnsw = db.execute("SELECT to_regclass('postings_pkey') IS NOT NULL, "
                           "to_regclass('chunks_embedding_hnsw') IS NOT NULL").fetchone()
    marker = db.execute("SELECT value FROM citewise_meta WHERE key = 'bulk_load'").fetchone()
    return key, hnsw, marker[0] if marker else None


def test_bulk_load_into_an_empty_store_builds_the_postings_key_once_same_bm25(
        postgres_url, tmp_path):
    """An empty store's bulk load drops the postings key and the HNSW index, marks itself,
    and builds both at its end; BM25 then equals the SQLite store's (ids and scores, to
    the bit), and a bulk load into a non-empty store keeps the postings key."""
    pg, lite = PostgresStore(postgres_url), SQLiteStore(tmp_path / "i.sqlite3")
    for s in (pg, lite):
        s.bind_model("m", DIM)
    rng = np.random.default_rng(3)
    collection = _scifact(120)
    assert _bulk_state(pg) == (True, True, None)
    with pg.bulk_load():
        assert _bulk_state(pg) == (False, False, "hnsw,postings_pkey")
        for doc, chunks in collection[:100]:
            _write((pg, lite), doc, chunks, rng)
        # a rewrite and a delete inside the load remove postings without the key
        _write((pg, lite), collection[0][0], collection[0][1][:2], rng)
        assert pg.delete_document(collection[1][0].id) and lite.delete_document(collection[1][0].id)
    assert _bulk_state(pg) == (True, True, None)
    with pg.bulk_load():
        assert _bulk_state(pg) == (True, False, "hnsw")
        for doc, chunks in collection[100:]:
            _write((pg, lite), doc, chunks, rng)
    assert _bulk_state(pg) == (True, True, None)
    _stats_are_consistent(pg)
    found = 0
    for q in _scifact_queries(60):
        terms = tokenize(q)
        got, want = pg.sparse_search(terms, 10), lite.sparse_search(terms, 10)
        assert [(h.chunk_id, h.sparse) for h in got] == [(h.chunk_id, h.sparse) for h in want]
        found += bool(want)
    assert found >= 50
    pg.close()
    lite.close()


def test_a_bulk_load_killed_part_way_is_finished_by_the_next_open(postgres_url):
    """A process killed inside bulk_load leaves the postings key and the HNSW index dropped
    and the marker set; the next PostgresStore opened builds both, clears the marker, and
    the written document is found by both legs."""
    store = PostgresStore(postgres_url)
    store.bind_model("m", DIM)
    store.close()
    write_in_subprocess(f"PostgresStore({postgres_url!r})", """
        with store.bulk_load():
            store.upsert_document(*make_doc("a", ["alpha beta", "gamma delta"]))
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    raw = psycopg.connect(postgres_url, autocommit=True)
    assert raw.execute("SELECT to_regclass('postings_pkey') IS NULL, "
                       "to_regclass('chunks_embedding_hnsw') IS NULL").fetchone() == (True, True)
    raw.close()
    reopened = PostgresStore(postgres_url)
    assert _bulk_state(reopened) == (True, True, None)
    assert [h.chunk_id for h in reopened.sparse_search(["gamma"], 5)] == ["a-1"]
    _, _, vecs = make_doc("a", ["alpha beta", "gamma delta"])
    assert [h.chunk_id for h in reopened.dense_search(vecs[1], 1)] == ["a-1"]
    reopened.close()


def test_a_store_opened_during_a_live_bulk_load_leaves_its_indexes_to_it(postgres_url):
    """Opening the index while another session's bulk load runs builds nothing (the load
    holds the advisory lock); the load builds its indexes at its end."""
    loader = PostgresStore(postgres_url)
    loader.bind_model("m", DIM)
    with loader.bulk_load():
        loader.upsert_document(*make_doc("a", ["alpha beta"]))
        other = PostgresStore(postgres_url)
        assert _bulk_state(other) == (False, False, "hnsw,postings_pkey")
        other.close()
    assert _bulk_state(loader) == (True, True, None)
    loader.close()


@pytest.mark.slow
def test_hnsw_search_finds_the_exact_neighbours(postgres_url):
    """5,000 random unit vectors (dim 32): HNSW top-10 recall against exact search >= 0.95,
    and the index is what the planner uses."""
    dim, rng = 32, np.random.default_rng(1)
    store = PostgresStore(postgres_url)
    store.bind_model("m", dim)
    vecs = rng.normal(size=(5000, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    for d in range(50):
        doc = Document(id=f"d{d}", path=f"d{d}", source_path=f"/d{d}", title="t", format="text",
                       content_hash="h")
        chunks = [Chunk(id=f"d{d}-{i}", document_id=doc.id, ordinal=i, text="x", source_text="x",
                        char_start=0, char_end=1, content_hash=f"{d}-{i}", token_count=1)
                  for i in range(100)]
        store.upsert_document(doc, chunks, vecs[d * 100:(d + 1) * 100], ["x"] * 100)
    store.db.execute("ANALYZE chunks")
    plan = "\n".join(r[0] for r in store.db.execute(
        "EXPLAIN SELECT id FROM chunks ORDER BY embedding <=> %s LIMIT 10", (vecs[0],)))
    assert "chunks_embedding_hnsw" in plan
    recalls = []
    for q in rng.normal(size=(50, dim)).astype(np.float32):
        q /= np.linalg.norm(q)
        exact = {f"d{i // 100}-{i % 100}" for i in np.argsort(-(vecs @ q))[:10]}
        hits = store.dense_search(q, 10)
        np.testing.assert_allclose([h.dense for h in hits],
                                   sorted((vecs @ q)[[int(h.chunk_id[1:].split("-")[0]) * 100 +
                                                      int(h.chunk_id.split("-")[1])
                                                      for h in hits]], reverse=True), atol=1e-5)
        recalls.append(len(exact & {h.chunk_id for h in hits}) / 10)
    assert np.mean(recalls) >= 0.95
    store.close()


def test_concurrent_writers_keep_statistics_exact(postgres_url):
    """Four threads, each with its own store object, write and rewrite overlapping documents
    sharing most terms; afterwards every count equals a recount from the chunks."""
    first = PostgresStore(postgres_url)
    first.bind_model("m", DIM)
    first.close()
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        store = PostgresStore(postgres_url)
        try:
            for i in range(25):
                name = f"doc{(w * 7 + i) % 12}.txt"  # writers collide on the same documents
                texts = [f"shared words alpha beta writer{w} round{i}", f"gamma shared {i % 3}"]
                doc, chunks, vecs = make_doc(name, texts)
                store.upsert_document(doc, chunks, vecs)
                if i % 5 == 4:
                    store.delete_document(doc.id)
        except BaseException as err:  # noqa: BLE001 - reported by the main thread
            errors.append(err)
        finally:
            store.close()

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    store = PostgresStore(postgres_url)
    _stats_are_consistent(store)
    n = store.info().chunks
    assert n == 2 * len(store.documents()) and n > 0
    assert len(store.sparse_search(tokenize("shared"), 100)) == n
    store.close()


def test_reader_sees_old_or_new_version_while_writer_replaces(postgres_url):
    """Inside a snapshot a reader sees one complete version of a document, never a mix."""
    writer = PostgresStore(postgres_url)
    writer.bind_model("m", DIM)
    versions = {
        0: ["version zero part one", "version zero part two", "version zero part three"],
        1: ["version one part one", "version one part two"],
    }
    doc, chunks, vecs = make_doc("v.md", versions[0])
    writer.upsert_document(doc, chunks, vecs)
    stop = threading.Event()
    seen: set[tuple[str, ...]] = set()

    def read() -> None:
        reader = PostgresStore(postgres_url)
        while not stop.is_set():
            with reader.snapshot():
                hits = reader.sparse_search(tokenize("version part"), 10)
                dense = reader.dense_search(unit(1), 10)
                loaded = reader.get_chunks([h.chunk_id for h in hits])
            assert {h.chunk_id for h in dense} == {h.chunk_id for h in hits}
            seen.add(tuple(sorted(loaded[h.chunk_id][0].text for h in hits)))
        reader.close()

    t = threading.Thread(target=read)
    t.start()
    for i in range(40):
        _, c, v = make_doc("v.md", versions[i % 2])
        writer.upsert_document(doc, c, v)
    stop.set()
    t.join()
    allowed = {tuple(sorted(v)) for v in versions.values()}
    assert seen and seen <= allowed, seen - allowed
    writer.close()


def test_open_store_selects_postgres_by_url(postgres_url, tmp_path):
    store = open_store(Settings(home=tmp_path, store=postgres_url, hnsw_ef_search=300))
    assert isinstance(store, PostgresStore) and store.ef_search == 300
    assert store.info().location == postgres_url
    store.close()


def test_unreachable_server_is_a_clear_index_error():
    from citewise.errors import IndexError_

    with pytest.raises(IndexError_, match="cannot open the PostgreSQL index at "
                       r"postgresql://u:\*\*\*@127.0.0.1:1/x"):
        PostgresStore("postgresql://u:secret@127.0.0.1:1/x?connect_timeout=2")


def test_database_without_rights_to_the_schema_is_refused(postgres_url):
    """A role that may not create tables gets IndexError_, not a half-made schema."""
    from citewise.errors import IndexError_

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS cw_reader")
        conn.execute("CREATE ROLE cw_reader LOGIN")
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
    url = postgres_url.replace("postgres@", "cw_reader@")
    with pytest.raises(IndexError_, match="permission denied"):
        PostgresStore(url)
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
                            ).fetchone()[0] == 0


def test_rebuild_is_one_transaction_old_index_kept_on_failure(postgres_url):
    # issue 18 item 6: reindex no longer clears the index before re-embedding
    store = PostgresStore(postgres_url)
    store.bind_model("m", DIM)
    doc, chunks, vecs = make_doc("a", ["old text"])
    store.upsert_document(doc, chunks, vecs)
    with pytest.raises(RuntimeError), store.rebuild() as target:
        target.bind_model("other", 16)
        raise RuntimeError("killed part-way")
    assert store.stored_model() == ("m", DIM) and [d.id for d in store.documents()] == [doc.id]
    reader = PostgresStore(postgres_url)
    with store.rebuild() as target:
        target.bind_model("m", DIM)
        new, new_chunks, new_vecs = make_doc("b", ["new text"])
        target.upsert_document(new, new_chunks, new_vecs)
        assert [d.id for d in reader.documents()] == [doc.id]  # readers see the old index
    assert [d.id for d in reader.documents()] == [new.id]
    reader.close()
    store.close()
