"""Regression (issue 18, item 6): a killed ``citewise reindex`` leaves the old index intact.

The old code cleared the index and then re-embedded into it, so a kill part-way left a
partial (or empty) index. Now the new index is built in a staging file beside the live one and
switched to in one transaction at the end.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from citewise.config import Settings
from citewise.engine import Engine
from citewise.store.sqlite import SQLiteStore

N_DOCS = 30
SRC = Path(__file__).resolve().parents[2] / "src"


def _count(path: Path) -> int:
    if not path.exists():
        return -1
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1) as db:
            return db.execute("SELECT count(*) FROM documents").fetchone()[0]
    except sqlite3.Error:
        return -1


def _cli(home: Path, model: str, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "CITEWISE_HOME": str(home), "CITEWISE_EMBEDDING_MODEL": model,
           "CITEWISE_LLM_PROVIDER": "none", "PYTHONPATH": str(SRC)}
    return subprocess.Popen([sys.executable, "-m", "citewise.cli", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


@pytest.mark.slow
def test_killed_reindex_leaves_the_old_index_and_a_rerun_completes(tmp_path, make_engine):
    data = tmp_path / "data"
    data.mkdir()
    for i in range(N_DOCS):
        (data / f"doc{i:02d}.md").write_text(
            f"# Note {i}\n\nThe marker word zebra{i} belongs to note {i}. "
            + "Shared filler about laptops, warranties and salaries. " * 8, encoding="utf-8")
    engine = make_engine()  # minilm, the default
    assert engine.ingest([data]).count("added") == N_DOCS
    index = engine.settings.index_path
    staging = index.with_name(index.name + ".rebuild")
    engine.store.close()

    proc = _cli(engine.settings.home, "use", "reindex")
    killed = False
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        # part-way: the build has started (new code) or the live index lost documents (old)
        if staging.exists() or 0 <= _count(index) < N_DOCS:
            time.sleep(0.3)
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
            killed = True
            break
        time.sleep(0.05)
    assert killed, f"reindex ended before it could be killed: {proc.stdout.read()!r}"

    store = SQLiteStore(index)
    assert store.check() == []
    assert store.stored_model()[0] == engine.embedder.name  # minilm or minilm-int8 (per CPU)
    assert store.info().documents == N_DOCS and len(store.documents()) == N_DOCS
    store.close()
    again = make_engine()  # the old model still answers, every document is there
    for i in (0, 17, N_DOCS - 1):
        hits = again.search(f"zebra{i}", top_k=3).hits
        assert hits and again.store.get_chunks([hits[0].chunk_id])[hits[0].chunk_id][1].path \
            .endswith(f"doc{i:02d}.md")

    rerun = _cli(engine.settings.home, "use", "reindex")
    out, _ = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, out
    assert not staging.exists()
    after = Engine(Settings(home=engine.settings.home, embedding_model="use",
                            llm_provider="none"))
    assert after.store.stored_model()[0] == "use"
    assert after.store.info().documents == N_DOCS and after.store.check() == []
    hits = after.search("zebra5", top_k=3).hits
    assert after.store.get_chunks([hits[0].chunk_id])[hits[0].chunk_id][1].path.endswith("doc05.md")
    after.store.close()


def test_rebuild_switches_nothing_on_error_or_concurrent_write(tmp_path):
    from citewise.errors import IndexChangedError
    from tests.suites.store import DIM, make_doc

    store = SQLiteStore(tmp_path / "index.sqlite3")
    store.bind_model("m", DIM)
    doc, chunks, vecs = make_doc("a", ["old text"])
    store.upsert_document(doc, chunks, vecs)
    with pytest.raises(RuntimeError), store.rebuild() as target:
        target.bind_model("other", 16)
        raise RuntimeError("killed part-way")
    with pytest.raises(IndexChangedError), store.rebuild() as target:
        target.bind_model("m", DIM)
        store.upsert_document(*make_doc("b", ["an upload meanwhile"]))
    assert store.stored_model() == ("m", DIM) and len(store.documents()) == 2
    with store.rebuild() as target:
        target.bind_model("m", DIM)
        target.upsert_document(*make_doc("c", ["new text"]))
    assert [d.path for d in store.documents()] == [make_doc("c", ["x"])[0].path]
    assert store.check() == [] and not (tmp_path / "index.sqlite3.rebuild").exists()
    store.close()
