"""The SQLite store's BM25 index catches up after a write (issue 22): from an older index and
the chunk log (``chunk_log``, written by triggers in each write's transaction) instead of
being rebuilt from every row, with every search result equal to a rebuild's (ids, order and
scores to the last bit); and it falls back to the rebuild whenever the log cannot be trusted.

Real SQLite files, real SciFact chunks; a second store object on the same file stands for
another process."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from citewise.store import derived_files
from citewise.store import sqlite as sqlite_module
from citewise.store.bm25_index import BM25Index
from citewise.store.derived_files import Stamp, derived_folder
from citewise.store.sqlite import SQLiteStore, m001_initial
from citewise.text.analysis import analyze, tokenize
from citewise.types import Chunk, Document
from tests.conftest import DATASETS
from tests.suites.store import DIM, make_doc, write_in_subprocess

PER_DOC = 100


@pytest.fixture(scope="module")
def scifact() -> tuple[list[str], list[str], Analysed, list[list[str]]]:
    """SciFact's corpus (ids sorted; title + text), its analysed terms and its 300 test
    queries (analysed)."""
    from citewise.eval.datasets import load_beir

    ds = load_beir(DATASETS / "scifact")
    ids = sorted(ds.corpus)
    texts = [f"{ds.corpus[i].title} {ds.corpus[i].text}" for i in ids]
    queries = [tokenize(q) for _, q in sorted(ds.queries.items())]
    assert len(queries) == 300
    return ids, texts, Analysed(texts), queries


class Analysed:
    """The analysed terms of ``texts``, analysed on first use (slices only)."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.done: dict[int, str] = {}

    def __getitem__(self, part: slice) -> list[str]:
        out = []
        for i in range(*part.indices(len(self.texts))):
            if i not in self.done:
                self.done[i] = analyze(self.texts[i])
            out.append(self.done[i])
        return out


def put(store: SQLiteStore, name: str, ids: list[str], texts: list[str], terms: list[str]) -> None:
    """Upsert document ``name`` holding these chunks (replacing any document of that name)."""
    doc = Document(id=f"doc-{name}", path=f"sci/{name}.txt", source_path=f"/src/{name}",
                   title=name, format="text", content_hash=f"{name}-{hash(tuple(ids))}")
    chunks = [Chunk(id=cid, document_id=doc.id, ordinal=i, text=t, source_text=t,
                    char_start=0, char_end=len(t), content_hash=f"h-{cid}")
              for i, (cid, t) in enumerate(zip(ids, texts, strict=True))]
    vecs = np.full((len(chunks), DIM), 1 / np.sqrt(DIM), dtype=np.float32)
    store.upsert_document(doc, chunks, vecs, terms)


def fill(store: SQLiteStore, data, first: int, last: int) -> None:
    """SciFact documents ``first .. last - 1`` (``PER_DOC`` chunks each)."""
    ids, texts, terms, _ = data
    store.bind_model("test-model", DIM)
    for d in range(first, last):
        part = slice(d * PER_DOC, (d + 1) * PER_DOC)
        put(store, str(d), ids[part], texts[part], terms[part])


def ranked(store: SQLiteStore, query: list[str], k: int) -> list[tuple[str, float]]:
    return [(h.chunk_id, h.score) for h in store.sparse_search(query, k)]


def assert_same_as_rebuild(store: SQLiteStore, queries: list[list[str]]) -> None:
    """Every query's top 10 and top 50 (ids, order, scores as floats) from ``store`` equal
    those of an index rebuilt from every row by a new store object."""
    fresh = SQLiteStore(store.path, bm25_build="wait", derived_files_from=None)
    try:
        for q in queries:
            for k in (10, 50):
                assert ranked(store, q, k) == ranked(fresh, q, k), (q, k)
        assert fresh.bm25_loads == {"built": 1}
    finally:
        fresh.close()


@pytest.fixture
def store(tmp_path):
    s = SQLiteStore(tmp_path / "sci.sqlite3", bm25_build="wait", derived_files_from=None)
    yield s
    s.close()


def log_rows(store: SQLiteStore) -> int:
    return int(store.db.execute("SELECT count(*) FROM chunk_log").fetchone()[0])


@pytest.mark.slow
def test_upserts_replacements_and_deletes_are_caught_up_exactly(store, scifact):
    """After each kind of write, and after a mixed run of them caught up at once, the
    index is caught up (not rebuilt) and answers all 300 SciFact queries exactly as a
    rebuild does."""
    ids, texts, terms, queries = scifact
    n_docs = len(ids) // PER_DOC
    fill(store, scifact, 0, n_docs - 4)
    store.sparse_search(queries[0], 10)
    assert store.bm25_loads == {"built": 1}

    fill(store, scifact, n_docs - 4, n_docs - 3)  # a new document
    assert_same_as_rebuild(store, queries)
    assert store.bm25_loads == {"built": 1, "caught_up": 1}

    # a replacement: document 3 with its chunks' texts swapped for document 40's, new terms
    part = slice(40 * PER_DOC, 41 * PER_DOC)
    put(store, "3", [f"r{i}" for i in range(PER_DOC)], texts[part],
        [f"{t} zzcatchupterm" for t in terms[part]])
    assert_same_as_rebuild(store, queries + [["zzcatchupterm"]])
    assert store.db.execute("SELECT count(*) FROM chunks").fetchone()[0] == (n_docs - 3) * PER_DOC

    assert store.delete_document("doc-7")  # a delete
    assert_same_as_rebuild(store, queries)
    assert store.bm25_loads == {"built": 1, "caught_up": 3}

    # several generations at once: an upsert, a delete of the newest rows (their row keys
    # are reused by the next insert), a replacement with fewer chunks, an empty document
    fill(store, scifact, n_docs - 3, n_docs - 2)
    assert store.delete_document(f"doc-{n_docs - 3}")
    fill(store, scifact, n_docs - 2, n_docs - 1)
    part = slice(11 * PER_DOC, 11 * PER_DOC + 30)
    put(store, "11", ids[part], texts[part], terms[part])
    put(store, "empty", [], [], [])
    assert_same_as_rebuild(store, queries)
    assert store.bm25_loads == {"built": 1, "caught_up": 4}
    # a deleted chunk is never served
    gone = set(ids[7 * PER_DOC : 8 * PER_DOC]) | set(ids[11 * PER_DOC + 30 : 12 * PER_DOC])
    for q in queries[:50]:
        assert not gone & {cid for cid, _ in ranked(store, q, 50)}


def test_a_write_by_another_store_object_is_caught_up(store, scifact, tmp_path):
    """A write through a second store object and one by another process (nothing told this
    store) are caught up from the log on this store's next search."""
    _, _, _, queries = scifact
    fill(store, scifact, 0, 12)
    store.sparse_search(queries[0], 10)
    other = SQLiteStore(store.path)
    fill(other, scifact, 12, 13)
    other.delete_document("doc-4")
    other.close()
    assert_same_as_rebuild(store, queries)
    assert store.bm25_loads == {"built": 1, "caught_up": 1}
    write_in_subprocess(f"SQLiteStore({str(store.path)!r})", """
        doc, chunks, vecs = make_doc("o.txt", ["cormorant gannet", "the heron"])
        store.upsert_document(doc, chunks, vecs)
        store.delete_document("doc-5")
    """)
    assert [h.chunk_id for h in store.sparse_search(tokenize("cormorant"), 5)] == ["o.txt-0"]
    assert store.bm25_loads == {"built": 1, "caught_up": 2}
    assert_same_as_rebuild(store, queries)


def test_a_crash_after_the_commit_is_caught_up_from_the_saved_files_and_the_log(scifact, tmp_path):
    """A process saves its index (derived files of generation g) and dies; writes commit
    (one by a process killed right after its commit), nothing saves their index; the next
    process maps the files of g and catches up from the log, saving the files of G."""
    _, _, _, queries = scifact
    path = tmp_path / "crash.sqlite3"
    first = SQLiteStore(path, bm25_build="wait", derived_files_from=1)
    fill(first, scifact, 0, 10)
    first.sparse_search(queries[0], 10)
    saved = first.generation()
    first.close()
    assert (derived_folder(path) / f"bm25-{first._meta('index_id')}-g{saved}").is_dir()
    writer = SQLiteStore(path)
    fill(writer, scifact, 10, 11)
    writer.close()
    write_in_subprocess(f"SQLiteStore({str(path)!r})", """
        store.delete_document("doc-2")
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    after = SQLiteStore(path, bm25_build="wait", derived_files_from=1)
    assert after.generation() == saved + 2
    assert_same_as_rebuild(after, queries)
    assert after.bm25_loads == {"caught_up": 1}
    index_id = after._meta("index_id")
    assert sorted(p.name for p in derived_folder(path).iterdir() if p.name.startswith("bm25")) \
        == [f"bm25-{index_id}-g{saved + 2}"]
    after.close()
    again = SQLiteStore(path, bm25_build="wait", derived_files_from=1)
    assert_same_as_rebuild(again, queries[:20])
    assert again.bm25_loads == {"mapped": 1}
    again.close()


def test_a_log_pruned_past_the_index_means_a_rebuild(scifact, tmp_path, monkeypatch):
    """With the log keeping one generation, an index two writes old cannot be caught up:
    it is rebuilt (and exact); the log holds only the newest generation."""
    _, _, _, queries = scifact
    monkeypatch.setattr(sqlite_module, "LOG_GENERATIONS", 1)
    store = SQLiteStore(tmp_path / "p.sqlite3", bm25_build="wait", derived_files_from=None)
    fill(store, scifact, 0, 10)
    store.sparse_search(queries[0], 10)
    fill(store, scifact, 10, 11)
    store.sparse_search(queries[0], 10)  # one generation behind: still in the log
    assert store.bm25_loads == {"built": 1, "caught_up": 1}
    fill(store, scifact, 11, 13)  # two generations
    assert int(store._meta("chunk_log_from") or 0) == store.generation() - 1
    assert log_rows(store) == PER_DOC
    assert_same_as_rebuild(store, queries)
    assert store.bm25_loads == {"built": 2, "caught_up": 1}
    store.close()


def test_more_than_a_quarter_changed_means_a_rebuild(store, scifact):
    _, _, _, queries = scifact
    fill(store, scifact, 0, 8)
    store.sparse_search(queries[0], 10)
    fill(store, scifact, 8, 10)  # 200 of 1,000 chunks: caught up
    store.sparse_search(queries[0], 10)
    assert store.bm25_loads == {"built": 1, "caught_up": 1}
    for d in range(3):  # 300 of 1,000
        store.delete_document(f"doc-{d}")
    assert_same_as_rebuild(store, queries)
    assert store.bm25_loads == {"built": 2, "caught_up": 1}


def test_a_log_that_does_not_fit_the_index_means_a_rebuild(store, scifact):
    """A logged insert of a chunk the index already holds (a log that does not describe
    this index's history) is caught by the check and the index is rebuilt."""
    _, _, _, queries = scifact
    fill(store, scifact, 0, 5)
    store.sparse_search(queries[0], 10)
    fill(store, scifact, 5, 6)
    store.db.execute(  # a bogus log row under the next write's generation
        "INSERT INTO chunk_log (generation, chunk, op) VALUES (?, 1, 1)",
        (store.generation() + 1,))
    fill(store, scifact, 6, 7)
    assert_same_as_rebuild(store, queries)
    assert store.bm25_loads == {"built": 2}


def test_clear_and_reindex_empty_the_log(store, scifact):
    fill(store, scifact, 0, 3)
    assert log_rows(store) == 3 * PER_DOC
    store.clear()
    assert log_rows(store) == 0
    assert int(store._meta("chunk_log_from") or -1) == store.generation()


def test_the_log_is_pruned_to_a_quarter_of_the_chunks(tmp_path, monkeypatch):
    """Every 16th generation the oldest generations go while the log holds more rows than
    max(LOG_ROWS_MIN, largest row key // 4); chunk_log_from follows."""
    monkeypatch.setattr(sqlite_module, "LOG_ROWS_MIN", 10)
    store = SQLiteStore(tmp_path / "r.sqlite3")
    store.bind_model("test-model", DIM)
    for i in range(40):
        doc, chunks, vecs = make_doc(f"d{i % 5}", [f"word{i} a", f"word{i} b"])
        store.upsert_document(doc, chunks, vecs)  # replaces: 2 deletes + 2 inserts
    assert store.generation() == 40
    rows = log_rows(store)
    assert rows <= 10 + 4 * 15  # pruned at 32 to <= 10 rows, then 8 writes of <= 4 rows
    oldest = store.db.execute("SELECT min(generation) FROM chunk_log").fetchone()[0]
    assert int(store._meta("chunk_log_from") or 0) == oldest - 1
    store.close()


def old_schema_file(path: Path) -> None:
    """An index file made by a citewise before the chunk log: migrations m001 ... m004,
    one document of 20 chunks, generation 1."""
    db = sqlite3.connect(path, isolation_level=None)
    for migration in sqlite_module.MIGRATIONS[:4]:
        migration(db)
    db.execute("PRAGMA user_version = 4")
    add_old_document(db, "d1", ["alpha beta", "beta gamma"] + [f"filler{i}" for i in range(18)], 0)
    db.close()


def add_old_document(db: sqlite3.Connection, name: str, texts: list[str], first: int) -> None:
    db.execute("INSERT INTO documents (id, path, source_path, title, format, content_hash, "
               "chunk_count, indexed_at) VALUES (?, ?, ?, ?, 'text', 'h', ?, 0)",
               (name, f"{name}.txt", f"/{name}.txt", name, len(texts)))
    for i, t in enumerate(texts):
        db.execute("INSERT INTO chunks (id, document_id, ordinal, text, source_text, "
                   "char_start, char_end, content_hash, token_count, terms, n_terms, vector) "
                   "VALUES (?, ?, ?, ?, ?, 0, 1, 'c', 1, ?, ?, ?)",
                   (f"{name}-{first + i}", name, i, t, t, t, len(t.split()),
                    np.zeros(DIM, "<f4").tobytes()))
    db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")


def test_an_older_index_file_migrates_and_its_older_derived_files_are_rebuilt(tmp_path):
    """An index file from before the log gets it (m005, the log complete from the
    generation it migrated at); saved files of an older generation (written before the
    migration, when nothing was logged) are not caught up from but rebuilt; writes after
    the migration are caught up."""
    assert m001_initial is sqlite_module.MIGRATIONS[0]
    path = tmp_path / "old.sqlite3"
    old_schema_file(path)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("INSERT INTO meta VALUES ('index_id', 'abcd')")
    old = BM25Index.build(1, db.execute("SELECT rowid, terms, n_terms FROM chunks ORDER BY rowid"))
    assert derived_files.save(derived_folder(path), "bm25", Stamp("abcd", 1, 20, 20), old.arrays())
    add_old_document(db, "d2", ["gamma delta"], 20)  # a write by the old citewise: generation 2
    db.close()

    store = SQLiteStore(path, bm25_build="wait", derived_files_from=1)
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == 7
    assert store._meta("chunk_log_from") == "2" and log_rows(store) == 0
    assert [h.chunk_id for h in store.sparse_search(["gamma"], 5)] == ["d1-1", "d2-20"]
    assert store.bm25_loads == {"built": 1}
    doc, chunks, vecs = make_doc("n.txt", ["delta epsilon"])
    store.upsert_document(doc, chunks, vecs)
    assert store.delete_document("d2")
    assert [h.chunk_id for h in store.sparse_search(["delta"], 5)] == ["n.txt-0"]
    assert [h.chunk_id for h in store.sparse_search(["gamma"], 5)] == ["d1-1"]
    assert store.bm25_loads == {"built": 1, "caught_up": 1}
    store.close()


def test_a_new_file_at_the_same_path_is_never_caught_up_from_the_old_ones_index(tmp_path):
    """The kept index belongs to the file it was read from (meta.index_id): after the file
    is deleted and made again at the path, with a log that would fit the old index (a
    logged delete of a row it holds, the row key reused, the same count and largest key),
    the next search rebuilds."""
    path = tmp_path / "same.sqlite3"
    store = SQLiteStore(path, bm25_build="wait")
    store.bind_model("test-model", DIM)
    for name in ("a", "b"):
        doc, chunks, vecs = make_doc(name, [f"{name} common", "filler"])
        store.upsert_document(doc, chunks, vecs)  # rows 1-4, generation 2
    assert len(store.sparse_search(["common"], 5)) == 2
    store.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    new = SQLiteStore(path)
    new.bind_model("test-model", DIM)
    for name, texts in (("c", ["c common", "cc common", "ccc common"]), ("d", ["d common"]),
                        ("d", ["d common again"])):  # rows 1-3, 4, then 4 deleted and reused
        doc, chunks, vecs = make_doc(name, texts)
        new.upsert_document(doc, chunks, vecs)
    new.close()
    assert sorted(h.chunk_id for h in store.sparse_search(["common"], 5)) == \
        ["c-0", "c-1", "c-2", "d-0"]
    assert store.bm25_loads == {"built": 2}
    store.close()


def _rows(rng: np.random.Generator, rowids: list[int], vocab: int) -> list[tuple[int, str, int]]:
    out = []
    for r in rowids:
        n = int(rng.integers(0, 12))
        words = [f"w{int(w)}" for w in rng.zipf(1.5, size=n) % vocab]
        out.append((r, " ".join(words), n))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_caught_up_postings_equal_a_builds_term_by_term(seed):
    """BM25Index.caught_up against BM25Index.build on random rows: deletes, appended rows,
    reused and interleaved row keys (not made by SQLite, but accepted), new terms, a count
    past uint16; every term's postings (positions, counts) and every length are equal."""
    rng = np.random.default_rng(seed)
    base_rows = _rows(rng, sorted(rng.choice(400, size=150, replace=False).tolist()), 60)
    base = BM25Index.build(3, base_rows)
    removed = rng.choice([r for r, _, _ in base_rows], size=20, replace=False)
    held = {r for r, _, _ in base_rows} - set(removed.tolist())
    free = sorted(set(range(500)) - held)
    added = _rows(rng, sorted(rng.choice(free, size=40, replace=False).tolist()), 80)
    if seed == 0:
        added[-1] = (added[-1][0], " ".join(["w1"] * 70_000), 70_000)
    final = sorted([r for r in base_rows if r[0] in held] + added)
    want = BM25Index.build(9, final)
    got = base.caught_up(9, np.concatenate([removed, removed[:3], [10_000]]), added)
    assert got.generation == 9 and got.size == want.size
    assert np.array_equal(got.rowids, want.rowids) and np.array_equal(got.lengths, want.lengths)
    assert got.avgdl == want.avgdl
    for term, col in want.vocabulary.items():
        c = got.vocabulary[term]
        a, b = slice(want.indptr[col], want.indptr[col + 1]), slice(got.indptr[c], got.indptr[c + 1])
        assert np.array_equal(got.positions[b], want.positions[a]), term
        assert np.array_equal(got.counts[b].astype(np.int64), want.counts[a].astype(np.int64))
    for term in set(got.vocabulary) - set(want.vocabulary):
        assert got.document_frequency(term) == 0
    query = {t: 1 for t in list(want.vocabulary)[:12]}
    for k in (5, 50):
        w, g = want.top(query, k), got.top(query, k)
        assert np.array_equal(w[0], g[0]) and np.array_equal(w[1], g[1])
    # the base index is untouched (a thread may still search with it)
    assert np.array_equal(base.rowids, [r for r, _, _ in base_rows])
    with pytest.raises(ValueError, match="still held"):
        base.caught_up(10, np.zeros(0, dtype=np.int64), [base_rows[0]])
    with pytest.raises(ValueError, match="ascending"):
        base.caught_up(10, np.zeros(0, dtype=np.int64), [(999, "a", 1), (998, "b", 1)])


def _keyed(rows: list[tuple[int, str, int]]) -> list[tuple[int, str, int, str, str, int, str]]:
    """``rows`` with chunk keys (id, document id, ordinal, language) derived from the row
    key, some of them not ASCII and one empty."""
    return [(r, t, n, f"c{r}-é" if r % 5 else f"c{r}", f"doc{r % 7}", (r * 37) % 11,
             ("", "en", "ru")[r % 3]) for r, t, n in rows]


@pytest.mark.parametrize("seed", range(4))
def test_caught_up_chunk_keys_equal_a_builds(seed):
    """The chunk keys (id, document, ordinal, language per position) of a caught-up index
    equal those a build of the later rows makes, with deletes, appended and reused row keys;
    and those the arrays are saved as and opened from."""
    rng = np.random.default_rng(seed)
    base_rows = _keyed(_rows(rng, sorted(rng.choice(400, size=150, replace=False).tolist()), 60))
    base = BM25Index.build(3, base_rows, ids=True)
    removed = rng.choice([r[0] for r in base_rows], size=20, replace=False)
    held = {r[0] for r in base_rows} - set(removed.tolist())
    free = sorted(set(range(500)) - held)
    added = _keyed(_rows(rng, sorted(rng.choice(free, size=40, replace=False).tolist()), 80))
    final = sorted([r for r in base_rows if r[0] in held] + added)
    want = BM25Index.build(9, final, ids=True)
    got = base.caught_up(9, removed, added)
    assert got.keys is not None and want.keys is not None
    everything = np.arange(want.size)
    for index in (got, want, BM25Index.from_arrays(9, got.arrays(), require_ids=True)):
        assert index.keys is not None
        assert index.keys.ids.take(everything) == [r[3] for r in final]
        assert index.keys.documents.take(everything) == [r[4] for r in final]
        assert np.asarray(index.keys.ordinals).tolist() == [r[5] for r in final]
        assert index.keys.languages.take(everything) == [r[6] for r in final]
    assert base.keys is not None and base.keys.ids.take([0]) == [base_rows[0][3]]  # untouched
    unkeyed = BM25Index.build(3, [r[:3] for r in base_rows])
    assert unkeyed.keys is None
    with pytest.raises(ValueError, match="chunk keys"):
        BM25Index.from_arrays(3, unkeyed.arrays(), require_ids=True)


def test_the_background_load_catches_up(tmp_path, scifact):
    """With ``bm25_build="background"`` the first search after a write answers from FTS5
    while a thread catches the index up; the caught-up index then answers exactly."""
    _, _, _, queries = scifact
    store = SQLiteStore(tmp_path / "bg.sqlite3", derived_files_from=None)
    fill(store, scifact, 0, 6)
    store.sparse_search(queries[0], 10)
    assert store.bm25_index_ready(wait_s=120)
    fill(store, scifact, 6, 7)
    assert not store.bm25_index_ready()
    store.sparse_search(queries[0], 10)  # FTS5, and the catch-up starts
    assert store.bm25_index_ready(wait_s=120)
    assert store.bm25_loads == {"built": 1, "caught_up": 1}
    assert_same_as_rebuild(store, queries)
    store.close()
