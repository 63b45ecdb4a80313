"""The SQLite store's derived indexes saved per generation next to the file
(citewise.store.derived_files): a restart maps them instead of rebuilding, and a folder of
another state (an older generation, another file, a torn or killed save) is never served:
it is ignored, rebuilt and replaced. Compared with the FTS5 path and exact numpy search."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from citewise.store import derived_files
from citewise.store.bm25_index import BM25Index
from citewise.store.derived_files import derived_folder
from citewise.store.sqlite import SQLiteStore
from citewise.text.analysis import analyze, tokenize
from citewise.types import Chunk, Document
from tests.suites.store import DIM, write_in_subprocess

ROOT = Path(__file__).resolve().parents[2]
OPTIONS = "bm25_build='wait', derived_files_from=0, dense_exact_below=0"


def open_store(path: Path) -> SQLiteStore:
    """A store that saves every index (no size threshold) and codes every vector."""
    return SQLiteStore(path, bm25_build="wait", derived_files_from=0, dense_exact_below=0)


def opener(path: Path) -> str:
    return f"SQLiteStore({str(path)!r}, {OPTIONS})"


def unit_rows(n: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


WORDS = ["refund", "warranty", "invoice", "shipping", "europe", "claim", "policy", "delay"]


def text_of(i: int) -> str:
    return f"{WORDS[i % 8]} {WORDS[i * 3 % 8]} item {i}"


def write(store: SQLiteStore, name: str, first: int, count: int, vectors: np.ndarray) -> None:
    doc = Document(id=name, path=f"a/{name}.txt", source_path=f"/src/{name}", title=name,
                   format="text", content_hash=name)
    texts = [text_of(first + i) for i in range(count)]
    chunks = [Chunk(id=f"c{first + i}", document_id=name, ordinal=i, text=t, source_text=t,
                    char_start=0, char_end=len(t), content_hash=f"h{first + i}")
              for i, t in enumerate(texts)]
    store.upsert_document(doc, chunks, vectors, [analyze(t) for t in texts])


@pytest.fixture
def saved(tmp_path):
    """A 200-chunk store (10 documents) whose indexes were built and saved by a search."""
    store = open_store(tmp_path / "index.sqlite3")
    store.bind_model("test-model", DIM)
    vectors = unit_rows(200, 1)
    for d in range(10):
        write(store, f"doc{d}", d * 20, 20, vectors[d * 20 : d * 20 + 20])
    store.dense_search(vectors[0], 5)
    store.sparse_search(tokenize("refund"), 5)
    yield store, vectors
    store.close()


def folders(store: SQLiteStore) -> list[str]:
    return sorted(p.name for p in derived_folder(store.path).iterdir())


def reference(store: SQLiteStore, q_vec: np.ndarray, q_text: str, k: int = 10):
    """The top ``k`` of both legs with nothing derived (exact numpy, FTS5 scoring every match)."""
    rows = store.db.execute("SELECT id, vector FROM chunks ORDER BY rowid").fetchall()
    ids = [r[0] for r in rows]
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), DIM)
    scores = matrix @ q_vec
    dense = [ids[i] for i in np.lexsort((np.arange(len(ids)), -scores))[:k]]
    fts = SQLiteStore(store.path, bm25_index=False, derived_files_from=None)
    sparse = [(h.chunk_id, h.score) for h in fts.sparse_search(tokenize(q_text), k,
                                                                 candidates=100_000)]
    fts.close()
    return dense, sparse


def answers(store: SQLiteStore, q_vec: np.ndarray, q_text: str, k: int = 10):
    dense = [h.chunk_id for h in store.dense_search(q_vec, k)]
    sparse = [(h.chunk_id, h.score) for h in store.sparse_search(tokenize(q_text), k)]
    return dense, sparse


def never_built(monkeypatch) -> None:
    """Fail the test if an index is built from the rows rather than mapped from files."""
    def refuse(*args, **kwargs):
        raise AssertionError("built from the rows")
    monkeypatch.setattr(BM25Index, "build", refuse)
    monkeypatch.setattr(SQLiteStore, "_read_vectors", refuse)


def test_a_restart_maps_the_saved_files_and_answers_the_same(saved, monkeypatch):
    store, vectors = saved
    generation = store.generation()
    index_id = store._meta("index_id")
    assert folders(store) == [f"bm25-{index_id}-g{generation}", f"dense-{index_id}-g{generation}"]
    want = answers(store, vectors[7], "warranty claim")
    assert want == reference(store, vectors[7], "warranty claim")
    never_built(monkeypatch)
    again = open_store(store.path)
    assert answers(again, vectors[7], "warranty claim") == want
    matrix, bm25 = again._load_matrix(), again._bm25_kept.index
    assert bm25 is not None and bm25.generation == generation
    for array in (matrix.vectors, matrix.codes, bm25.positions, bm25.counts):
        assert isinstance(array, np.memmap)
    assert again.term_document_frequencies(["refund"]) == store.term_document_frequencies(["refund"])
    again.close()


def test_a_commit_without_a_derived_update_is_never_served_stale(saved):
    """A crash between the SQLite commit and the derived files' update: a write commits
    (here in another process, which never searches) and leaves the files of the generation
    before it. A new process ignores them, serves the committed state and saves its own."""
    store, vectors = saved
    old = store.generation()
    write_in_subprocess(opener(store.path), f"""
        import numpy as np
        from citewise.types import Chunk, Document
        store.delete_document("doc0")
        doc = Document(id="new", path="a/new.txt", source_path="/src/new", title="new",
                       format="text", content_hash="new")
        chunk = Chunk(id="fresh", document_id="new", ordinal=0, text="cormorant refund",
                      source_text="cormorant refund", char_start=0, char_end=16,
                      content_hash="fresh")
        store.upsert_document(doc, [chunk], np.array([{vectors[3].tolist()}], np.float32),
                              [analyze("cormorant refund")])
    """)
    index_id = store._meta("index_id")
    assert folders(store) == [f"bm25-{index_id}-g{old}", f"dense-{index_id}-g{old}"]
    restarted = open_store(store.path)
    dense, sparse = answers(restarted, vectors[3], "cormorant refund", 50)
    assert (dense, sparse) == reference(restarted, vectors[3], "cormorant refund", 50)
    deleted = {f"c{i}" for i in range(20)}
    assert dense[0] == "fresh" and not deleted & set(dense)
    assert sparse[0][0] == "fresh" and not deleted & {c for c, _ in sparse}
    new = restarted.generation()
    assert new > old and folders(restarted) == [f"bm25-{index_id}-g{new}",
                                                f"dense-{index_id}-g{new}"]
    restarted.close()


def test_a_second_processs_write_is_caught_up(saved, monkeypatch):
    """Another process deletes, adds and searches (saving the new generation's files and
    deleting the old ones this store has mapped); this store's next search serves the new
    state, from the other process's files."""
    store, vectors = saved
    restarted = open_store(store.path)  # serving from the mapped files of generation g
    answers(restarted, vectors[0], "refund")
    write_in_subprocess(opener(store.path), f"""
        import numpy as np
        from citewise.types import Chunk, Document
        store.delete_document("doc1")
        doc = Document(id="new", path="a/new.txt", source_path="/src/new", title="new",
                       format="text", content_hash="new")
        chunk = Chunk(id="fresh", document_id="new", ordinal=0, text="cormorant",
                      source_text="cormorant", char_start=0, char_end=9, content_hash="fresh")
        store.upsert_document(doc, [chunk], np.array([{vectors[25].tolist()}], np.float32),
                              [analyze("cormorant")])
        store.dense_search(np.array({vectors[0].tolist()}, np.float32), 3)
        store.sparse_search(["cormorant"], 3)
    """)
    never_built(monkeypatch)
    dense, sparse = answers(restarted, vectors[25], "cormorant refund", 50)
    assert dense[0] == "fresh" and "c25" not in dense
    assert sparse[0][0] == "fresh" and not {f"c{i}" for i in range(20, 40)} & {c for c, _ in sparse}
    assert isinstance(restarted._load_matrix().vectors, np.memmap)
    monkeypatch.undo()
    assert (dense, sparse) == reference(restarted, vectors[25], "cormorant refund", 50)
    restarted.close()


def test_a_folder_of_another_state_under_the_current_name_is_ignored_and_rebuilt(saved):
    """Files of generation g copied under the name of g + 1 (their manifest still says g)
    after a delete: never served; rebuilt from the rows and saved in their place."""
    store, vectors = saved
    root, index_id = derived_folder(store.path), store._meta("index_id")
    old = store.generation()
    other = SQLiteStore(store.path, derived_files_from=None)
    assert other.delete_document("doc0")
    other.close()
    new = store.generation()
    for kind in ("bm25", "dense"):
        shutil.copytree(root / f"{kind}-{index_id}-g{old}", root / f"{kind}-{index_id}-g{new}")
    restarted = open_store(store.path)
    dense, sparse = answers(restarted, vectors[0], "refund warranty", 50)
    assert (dense, sparse) == reference(restarted, vectors[0], "refund warranty", 50)
    assert "c0" not in dense and not {f"c{i}" for i in range(20)} & {c for c, _ in sparse}
    manifest = json.loads((root / f"dense-{index_id}-g{new}" / "manifest.json").read_text())
    assert manifest["stamp"]["generation"] == new and manifest["stamp"]["chunks"] == 180
    restarted.close()


@pytest.mark.parametrize("damage", ["truncate", "no manifest", "wrong shape", "bad terms"])
def test_a_torn_folder_is_ignored_and_rebuilt(saved, damage):
    store, vectors = saved
    want = answers(store, vectors[9], "invoice delay")
    root, index_id, g = derived_folder(store.path), store._meta("index_id"), store.generation()
    bm25, dense = root / f"bm25-{index_id}-g{g}", root / f"dense-{index_id}-g{g}"
    if damage == "truncate":
        for f in (bm25 / "positions.npy", dense / "codes.npy"):
            f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    elif damage == "no manifest":
        (bm25 / "manifest.json").unlink()
        (dense / "manifest.json").unlink()
    elif damage == "wrong shape":
        np.save(bm25 / "lengths.npy", np.zeros(3))
        np.save(dense / "rowids.npy", np.zeros(3, np.int64))
    else:  # a vocabulary of another size: the manifest's shapes hold, the arrays do not fit
        np.save(bm25 / "terms.npy", derived_files.terms_array(["a", "b"]))
        manifest = json.loads((bm25 / "manifest.json").read_text())
        manifest["arrays"]["terms"] = [[3], "|u1"]
        (bm25 / "manifest.json").write_text(json.dumps(manifest))
    restarted = open_store(store.path)
    assert answers(restarted, vectors[9], "invoice delay") == want
    # rebuilt and saved again, whole
    assert isinstance(restarted._load_matrix().vectors, np.memmap)
    assert derived_files.load(root, "bm25", restarted._stamp()) is not None
    assert derived_files.load(root, "dense", restarted._stamp()) is not None
    restarted.close()


def test_a_new_file_at_the_same_path_never_matches_the_old_files(saved):
    """The index file deleted by hand and written again to the same generation: its own id
    differs, so the old folders (same generation number) are not used."""
    store, vectors = saved
    path, generation = store.path, store.generation()
    store.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    fresh = open_store(path)
    fresh.bind_model("test-model", DIM)
    fresh.db.execute(f"UPDATE meta SET value = '{generation - 1}' WHERE key = 'generation'")
    write(fresh, "other", 500, 200, unit_rows(200, 2))  # same count of chunks
    assert fresh.generation() == generation
    dense, sparse = answers(fresh, vectors[0], "refund")
    assert all(int(c[1:]) >= 500 for c in dense) and all(int(c[1:]) >= 500 for c, _ in sparse)
    assert (dense, sparse) == reference(fresh, vectors[0], "refund")
    assert all(fresh._meta("index_id") in name for name in folders(fresh))
    fresh.close()


def test_a_save_killed_midway_leaves_nothing_served_and_is_cleaned_up(saved):
    """A process killed (SIGKILL) while writing a new generation's files leaves a temporary
    folder only; the next process serves the committed state, saves its own files and
    removes the dead process's temporary folder."""
    store, vectors = saved
    script = """
        import os, signal
        import numpy as np
        from citewise.store import derived_files
        store.delete_document("doc2")
        real = np.save
        calls = []
        def dying(path, array, **kw):
            calls.append(path)
            if len(calls) == 3:
                os.kill(os.getpid(), signal.SIGKILL)
            real(path, array, **kw)
        np.save = dying
        store.sparse_search(["refund"], 3)
    """
    code = (f"from citewise.store.sqlite import SQLiteStore\nstore = {opener(store.path)}\n"
            + textwrap.dedent(script))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    proc = subprocess.run([sys.executable, "-c", code], check=False, cwd=ROOT,
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    leftovers = [n for n in folders(store) if n.startswith(".tmp-bm25-")]
    assert len(leftovers) == 1
    restarted = open_store(store.path)
    dense, sparse = answers(restarted, vectors[40], "refund invoice", 50)
    assert (dense, sparse) == reference(restarted, vectors[40], "refund invoice", 50)
    assert not {f"c{i}" for i in range(40, 60)} & (set(dense) | {c for c, _ in sparse})
    assert not [n for n in folders(restarted) if n.startswith(".tmp-")]
    restarted.close()


def test_small_indexes_are_not_saved_and_the_threshold_counts_chunks(tmp_path):
    store = SQLiteStore(tmp_path / "index.sqlite3", bm25_build="wait", derived_files_from=150)
    store.bind_model("test-model", DIM)
    vectors = unit_rows(200, 3)
    write(store, "one", 0, 100, vectors[:100])
    store.dense_search(vectors[0], 3)
    store.sparse_search(tokenize("refund"), 3)
    assert not derived_folder(store.path).exists()
    write(store, "two", 100, 100, vectors[100:])
    store.dense_search(vectors[0], 3)
    store.sparse_search(tokenize("refund"), 3)
    assert [n.split("-")[0] for n in folders(store)] == ["bm25", "dense"]
    store.close()


def test_an_older_snapshot_never_replaces_a_newer_generations_files(saved):
    """A save of generation g after g + 1's files exist (a thread or process reading an
    older snapshot) writes nothing and deletes nothing."""
    store, vectors = saved
    root = derived_folder(store.path)
    with store.snapshot():
        old_stamp = store._stamp()
    other = SQLiteStore(store.path, bm25_build="wait", derived_files_from=0, dense_exact_below=0)
    assert other.delete_document("doc5")
    other.dense_search(vectors[0], 3)
    other.close()
    before = folders(store)
    assert f"dense-{old_stamp.index_id}-g{old_stamp.generation + 1}" in before
    index = store._load_matrix()  # this store's index of g + 1, arrays as they are
    assert derived_files.save(root, "dense", old_stamp, index.arrays()) is None
    assert folders(store) == before
