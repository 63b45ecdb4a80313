"""Case N10 (../shared/cases/CASES.md): embedding dimensions beyond pgvector's 2,000-dimension
HNSW limit. The case's own deterministic embedder (``stub_embedder.py``) embeds its 20
documents at each dimension of ``dims_to_test.json``; the PostgreSQL store indexes up to 2,000
dimensions as ``vector`` and 2,001-4,000 as ``halfvec`` (HNSW both), refuses more when the
store is configured (before any schema change), and the SQLite default takes every dimension.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import psycopg
import pytest

from citewise.embed import Embedder
from citewise.errors import ConfigError
from tests.conftest import CASES

N10 = CASES / "n10_pgvector_dims"
if not N10.is_dir():  # pragma: no cover - CI lays shared/ beside the repository
    pytest.skip(f"case files not found at {N10}", allow_module_level=True)

DIMS = json.loads((N10 / "dims_to_test.json").read_text())
TEXTS = [json.loads(line)["text"] for line in (N10 / "texts.jsonl").read_text().splitlines()]
QUESTION = "What is the projector code for room 07?"


def _stub():
    spec = importlib.util.spec_from_file_location("n10_stub_embedder", N10 / "stub_embedder.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


STUB = _stub()


class CaseEmbedder(Embedder):
    """The case's hash embedder (``stub_embedder.embed(text, dim)``) behind citewise's
    embedder interface: any dimension, unit-length vectors."""

    max_tokens = 512

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim, self.name = dim, f"n10-stub-{dim}"

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def _embed(self, texts: list[str], *, query: bool) -> np.ndarray:
        return np.array([STUB.embed(t, self.dim) for t in texts], dtype=np.float32)


def _corpus(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i, text in enumerate(TEXTS):
        (folder / f"room_{i:02d}.txt").write_text(text + "\n", encoding="utf-8")
    return folder


def _engine(make_engine, dim: int, **settings):
    return make_engine(**settings, parts={"embedder": CaseEmbedder(dim)})


def _answers_4149(engine, tmp_path: Path) -> None:
    report = engine.ingest([_corpus(tmp_path / "rooms")])
    assert all(f.status == "added" for f in report.files), report.files
    result = engine.search(QUESTION, top_k=3)
    assert result.hits and "4149" in result.hits[0].chunk.text
    # the dense leg runs at this dimension too (not only BM25): the stored vector of room 07
    # finds room 07 first, with the exact cosine 1
    room07 = result.hits[0].chunk.id
    vector = engine.store.vectors_of([room07])[room07]
    assert vector.shape == (engine.embedder.dim,)
    dense = engine.store.dense_search(vector, 3)
    assert dense[0].chunk_id == room07
    assert dense[0].dense == pytest.approx(1.0, abs=1e-5)
    assert engine.search(QUESTION, mode="dense", top_k=20).hits  # every dimension searchable


@pytest.mark.parametrize("dim", DIMS)
def test_n10_sqlite_default_answers_at_every_dimension(make_engine, tmp_path, dim) -> None:
    _answers_4149(_engine(make_engine, dim), tmp_path)


def _index_of(url: str) -> tuple[str, str] | None:
    """(column type, index definition) of the chunks' vector index, or None."""
    with psycopg.connect(url) as conn:
        column = conn.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = 'chunks'::regclass AND attname = 'embedding'").fetchone()[0]
        row = conn.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'chunks' "
                           "AND indexdef ILIKE '%USING hnsw%'").fetchone()
    return (column, row[0]) if row else None


@pytest.mark.parametrize("dim", [d for d in DIMS if d <= 4000])
def test_n10_postgres_indexes_and_answers_up_to_4000(make_engine, postgres_url, tmp_path,
                                                     dim) -> None:
    engine = _engine(make_engine, dim, store=postgres_url)
    _answers_4149(engine, tmp_path)
    column, index = _index_of(postgres_url)
    assert column == f"vector({dim})"  # full precision kept: search re-scores exactly
    if dim <= 2000:
        assert "vector_cosine_ops" in index and "halfvec" not in index
    else:
        assert f"halfvec({dim})" in index and "halfvec_cosine_ops" in index
    engine.store.close()


def test_n10_postgres_refuses_above_4000_before_changing_the_schema(make_engine, postgres_url,
                                                                    tmp_path) -> None:
    dim = max(DIMS)
    assert dim > 4000
    engine = _engine(make_engine, dim, store=postgres_url)
    engine.store  # noqa: B018 - opening creates the schema (no model bound yet)
    with psycopg.connect(postgres_url) as conn:
        before = conn.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                              "WHERE attrelid = 'chunks'::regclass AND attname = 'embedding'"
                              ).fetchone()[0]
    with pytest.raises(ConfigError) as err:
        engine.ingest([_corpus(tmp_path / "rooms")])
    message = str(err.value)
    assert "4096" in message and "4000" in message and "CITEWISE_EMBEDDING_MODEL" in message
    assert "CITEWISE_STORE" in message  # what to do: another model, or the SQLite store
    with psycopg.connect(postgres_url) as conn:
        after = conn.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                             "WHERE attrelid = 'chunks'::regclass AND attname = 'embedding'"
                             ).fetchone()[0]
        meta = dict(conn.execute("SELECT key, value FROM citewise_meta").fetchall())
        docs = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
    assert after == before and "dimension" not in meta and docs == 0
    engine.store.close()


def test_n10_postgres_dimension_change_is_one_transaction(postgres_url) -> None:
    """The server failing the HNSW build for a new dimension (an event trigger refuses the
    CREATE INDEX that follows the ALTER TABLE) leaves the old column, index and model
    binding: never a re-typed column without its index, or a half-recorded model."""
    from citewise.store.postgres import PostgresStore

    store = PostgresStore(postgres_url)
    store.bind_model("small", 384)
    before = _index_of(postgres_url)
    db = store.db
    db.execute("CREATE FUNCTION refuse_index() RETURNS event_trigger LANGUAGE plpgsql AS $$ "
               "BEGIN RAISE EXCEPTION 'index build refused by the test'; END $$")
    db.execute("CREATE EVENT TRIGGER refuse_index ON ddl_command_end "
               "WHEN TAG IN ('CREATE INDEX') EXECUTE FUNCTION refuse_index()")
    with pytest.raises(psycopg.errors.RaiseException):
        store.bind_model("big", 3072)
    assert _index_of(postgres_url) == before == ("vector(384)", before[1])
    assert store.stored_model() == ("small", 384)
    db.execute("DROP EVENT TRIGGER refuse_index")
    store.bind_model("big", 3072)
    assert _index_of(postgres_url)[0] == "vector(3072)"
    assert store.stored_model() == ("big", 3072)
    store.close()


def test_n10_halfvec_index_is_used_and_scores_are_exact(postgres_url) -> None:
    """3,072 dimensions: the planner walks the ``halfvec`` HNSW index, the top-10 of 50
    questions over 800 vectors recall >= 0.9 of the exact top-10, and every score is the
    exact 32-bit cosine (the index only picks the candidates)."""
    from citewise.store.postgres import PostgresStore
    from citewise.types import Chunk, Document

    dim, rng = 3072, np.random.default_rng(7)
    store = PostgresStore(postgres_url)
    store.bind_model("m3072", dim)
    vecs = rng.normal(size=(800, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    for d in range(8):
        doc = Document(id=f"d{d}", path=f"d{d}", source_path=f"/d{d}", title="t",
                       format="text", content_hash="h")
        chunks = [Chunk(id=f"{d * 100 + i}", document_id=doc.id, ordinal=i, text="x",
                        source_text="x", char_start=0, char_end=1, content_hash=f"{d}-{i}",
                        token_count=1) for i in range(100)]
        store.upsert_document(doc, chunks, vecs[d * 100:(d + 1) * 100], ["x"] * 100)
    db = store.db
    db.execute("ANALYZE chunks")
    db.execute("SET enable_seqscan = off")  # a table this small could be sorted instead
    plan = "\n".join(r[0] for r in db.execute(
        f"EXPLAIN SELECT id FROM chunks c ORDER BY (c.embedding::halfvec({dim})) <=> "
        f"%s::halfvec({dim}) LIMIT 10", (vecs[0],)))
    assert "chunks_embedding_hnsw" in plan
    db.execute("RESET enable_seqscan")
    recalls = []
    for q in rng.normal(size=(50, dim)).astype(np.float32):
        q /= np.linalg.norm(q)
        exact = vecs @ q
        hits = store.dense_search(q, 10)
        np.testing.assert_allclose([h.dense for h in hits],
                                   exact[[int(h.chunk_id) for h in hits]], atol=1e-5)
        assert [h.dense for h in hits] == sorted((h.dense for h in hits), reverse=True)
        recalls.append(len(set(np.argsort(-exact)[:10]) & {int(h.chunk_id) for h in hits}) / 10)
    assert np.mean(recalls) >= 0.9
    store.close()
