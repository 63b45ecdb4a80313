"""``citewise migrate``: a real index (this repository's docs/, embedded by the default model)
copied from SQLite to PostgreSQL without re-embedding, then searched there through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from citewise.cli import app
from citewise.store.postgres import PostgresStore
from citewise.store.sqlite import SQLiteStore

DOCS = Path(__file__).resolve().parents[2] / "docs"
runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


@pytest.mark.slow
def test_migrate_copies_a_real_index_to_postgres(tmp_path, monkeypatch, postgres_url):
    monkeypatch.setenv("CITEWISE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CITEWISE_LLM_PROVIDER", "none")
    monkeypatch.chdir(tmp_path)
    assert run("ingest", str(DOCS)).exit_code == 0
    sqlite_path = tmp_path / "home" / "index.sqlite3"

    result = run("migrate", "--from", f"sqlite:{sqlite_path}", "--to", postgres_url)
    assert result.exit_code == 0, result.output
    lite, pg = SQLiteStore(sqlite_path), PostgresStore(postgres_url)
    n_docs, n_chunks = len(lite.documents()), lite.info().chunks
    assert n_docs == len(list(DOCS.glob("*.md"))) and n_chunks > 50
    assert f"copied {n_docs} documents, {n_chunks} chunks" in result.output
    assert pg.documents() == lite.documents()
    # minilm in the CPU's precision: "minilm" (fp32) or "minilm-int8" (CPUs with VNNI)
    assert pg.stored_model() == lite.stored_model()
    assert lite.stored_model() in {("minilm", 384), ("minilm-int8", 384)}
    assert pg.db.execute("SELECT count(*) FROM pg_indexes WHERE indexname = "
                         "'chunks_embedding_hnsw'").fetchone()[0] == 1  # rebuilt after the load
    for doc in lite.documents():
        want_chunks, want_vecs, want_terms = lite.export(doc.id)
        got_chunks, got_vecs, got_terms = pg.export(doc.id)
        assert got_chunks == want_chunks and got_terms == want_terms
        np.testing.assert_array_equal(got_vecs, want_vecs)  # the very same float32 vectors

    # running it again replaces documents by id: nothing is duplicated
    assert run("migrate", "--from", f"sqlite:{sqlite_path}", "--to", postgres_url).exit_code == 0
    assert pg.info().chunks == n_chunks
    lite.close()
    pg.close()

    def search(mode: str) -> list[tuple[str, float | None]]:
        out = run("search", "How do I change the embedding model?", "--mode", mode,
                  "--top-k", "10", "--per-file", "10", "--format", "json")
        assert out.exit_code == 0, out.output
        return [(h["chunk_id"], h["bm25"]) for h in json.loads(out.stdout)["hits"]]

    want = {mode: search(mode) for mode in ("sparse", "hybrid")}
    monkeypatch.setenv("CITEWISE_STORE", postgres_url)
    got = {mode: search(mode) for mode in ("sparse", "hybrid")}
    assert got == want and len(want["hybrid"]) == 10
    status = json.loads(run("status", "--format", "json").stdout)
    assert (status["documents"], status["chunks"]) == (n_docs, n_chunks)


def test_migrate_refuses_a_missing_source(tmp_path, postgres_url):
    result = run("migrate", "--from", f"sqlite:{tmp_path / 'nope.sqlite3'}", "--to", postgres_url)
    assert result.exit_code == 1
    assert "no such index file or folder" in result.output


def test_an_interrupted_migrate_leaves_a_target_marked_unfinished(tmp_path):
    """Issue 18 item 6: a killed migrate must not leave a target that looks complete."""
    from citewise.config import Settings
    from citewise.engine import Engine
    from citewise.errors import IndexError_
    from citewise.store.copy import copy_index
    from tests.suites.store import DIM, make_doc

    source = SQLiteStore(tmp_path / "source.sqlite3")
    source.bind_model("m", DIM)
    for name in ("a", "b", "c"):
        source.upsert_document(*make_doc(name, [f"text of {name}"]))
    target = SQLiteStore(tmp_path / "home" / "index.sqlite3")

    def interrupt(path: str, done: int, total: int) -> None:
        if done == 1:
            raise KeyboardInterrupt  # Ctrl-C after the first document

    with pytest.raises(KeyboardInterrupt):
        copy_index(source, target, progress=interrupt)
    assert len(target.documents()) == 1 and "citewise migrate" in (target.unfinished() or "")
    engine = Engine(Settings(home=tmp_path / "home", llm_provider="none"))
    with pytest.raises(IndexError_, match="run the same citewise migrate again"):
        engine.check_model()
    assert engine.status()["unfinished"]
    report = copy_index(source, target)  # the re-run completes and unmarks it
    assert report.documents == 3 and target.unfinished() is None
    assert target.documents() == source.documents() and target.check() == []
    source.close()
    target.close()
