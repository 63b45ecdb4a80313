"""The embedded default store: one SQLite database file in WAL mode.

Design
------
* ``documents``: one row per indexed file (content hash, path, title, warnings, metadata).
* ``chunks``: one row per chunk, holding its text, ``source_text``, location, the analysed BM25
  text (``terms``, space-separated tokens from :mod:`citewise.text.analysis`) and the
  embedding (``vector``, float32 little-endian bytes). Keeping the vector on the chunk row makes
  "a chunk without a vector" unrepresentable.
* BM25 is answered from an in-memory postings index built from ``chunks.terms`` once per
  generation (:mod:`citewise.store.bm25_index`): every chunk holding a query term is scored
  with Lucene's BM25 (smoothed IDF, :func:`~citewise.store.bm25.bm25_scores`). It is derived
  data, never written: the file stays the only source of truth. The first search that reads
  a newer generation (after a write by any process) catches the index up from the older one
  and ``chunk_log`` (below) instead of rebuilding it from every row, and rebuilds it when the
  log cannot be trusted for that step (:meth:`SQLiteStore._caught_up_bm25`). Beside its
  postings it keeps each chunk's id, document id, ordinal and language for the same state
  (:class:`~citewise.store.bm25_index.ChunkKeys`): the hits of both legs and the candidates'
  chunks without their texts are answered from them (no chunk row read), and from SQL
  whenever the index is not that of the state read.
* ``chunk_log`` (migration ``m005_chunk_log``): one row ``(generation, chunk, op)`` per chunk
  row inserted (op 1) or deleted (-1), written by triggers on ``chunks`` inside the write's
  own transaction under the generation that write commits, so a crash leaves the log and
  the chunks in step. ``meta.chunk_log_from``: the log holds every change of the generations
  after it (the generation the migration ran at for an older file). Each write prunes it in
  its transaction to the last :data:`LOG_GENERATIONS` generations and, every 16th
  generation, to about a quarter of the chunk count (at least :data:`LOG_ROWS_MIN` rows);
  ``clear`` and ``reindex`` empty it.
* ``chunks_fts``: an FTS5 index over ``chunks.terms`` (external content, kept in step by
  triggers); ``chunks_vocab`` (fts5vocab) gives document frequencies. With
  ``bm25_index=False`` it finds the BM25 candidates, re-scored with the same formula because
  FTS5's built-in ``bm25()`` floors the IDF of any term present in half of the chunks or
  more to ~0, which breaks small collections (case C39).
* ``meta``: the schema version, the embedding model name and dimension, the version of the
  text analysis that made the BM25 terms (``analyzer``, see
  :data:`citewise.text.analysis.ANALYZER_VERSION`), and ``generation``, a counter bumped
  by every write so readers know when to reload their in-memory matrix.
* ``chunks.language``: each chunk's detected language (ISO 639-1), for language routing and
  the ``language`` filter.

Every document write is one ``BEGIN IMMEDIATE`` transaction, so a crash leaves the old or the
new version, never a mix. WAL lets readers search while one writer ingests; writers wait up to
``busy_timeout`` for each other. Dense search reads an in-memory index loaded once per
generation (:mod:`citewise.store.dense_index`): the float32 matrix of all vectors, searched
exactly with one matrix-vector product (only the filter's rows when a filter keeps under a
quarter of them) below ``dense_exact_below`` chunks (20,000), and from 20,000 chunks on
through int8 codes (SimSIMD's int8 dot products) whose best shortlist is re-scored exactly;
from ``dense_ivf_from`` chunks (200,000) 4-bit codes in the inverted lists nearest the query
are scanned instead (k-means lists built per generation, faiss's fast scan). From
``dense_catch_up_from`` chunks (20,000) a newer generation's dense index is not rebuilt: the
last built one (kept, or its saved files) is used less the chunks ``chunk_log`` lists as
changed since, and those of them the state holds are read back and scored exactly beside it
(:class:`~citewise.store.dense_index.CaughtUpDenseIndex`, :meth:`SQLiteStore._caught_up_dense`),
until more than :data:`~citewise.store.dense_index.CATCH_UP_MAX_ROWS` or a quarter of the
chunks changed; then it is rebuilt and saved.
From ``derived_files_from`` chunks (20,000) both derived indexes are saved per generation in
``<file>.derived/`` (:mod:`citewise.store.derived_files`) and the next process that reads the
same state maps them (``numpy`` memmaps) instead of reading every row: a restart opens a
large index in about a second, and only the pages its searches touch are resident. The
folder is derived data too: any of it that does not match the state read is ignored and
rebuilt, and deleting it costs only the rebuild. ``meta.index_id``, a random id written when
the file is created, keeps one file's folders from matching another's.

Migrations are named, ordered functions (``m001_initial``...) applied once each by
:func:`citewise.store.migrations.run_migrations`; ``PRAGMA user_version`` counts those applied.
"""

from __future__ import annotations

import json
import logging
import secrets
import shutil
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np

from citewise.errors import EmptyDocumentError, IndexChangedError, IndexError_
from citewise.store import derived_files
from citewise.store.base import Filters, IndexInfo, TermIncidence, nested_read_transaction
from citewise.store.bm25 import BM25_B, BM25_K1, bm25_scores
from citewise.store.bm25_index import BM25Index, ChunkKeys, KeptIndex, hashable, query_counts
from citewise.store.dense_index import (
    CATCH_UP_MAX_ROWS,
    EXACT_BELOW,
    IVF_FROM,
    IVF_SCAN,
    RESCORE_FACTOR,
    RESCORE_MIN,
    CaughtUpDenseIndex,
    DenseIndex,
)
from citewise.store.derived_files import Stamp, derived_folder
from citewise.store.migrations import named, run_migrations
from citewise.store.scope import scoped_document_ids
from citewise.store.sql import (
    BINDING_KEYS,
    DOC_COLS,
    DOCUMENT_COLUMNS,
    NCHUNK,
    NTEXTLESS,
    TEXTLESS_CHUNK_COLS,
    ChunkFilter,
    SQLStore,
    analysed_terms,
    check_analyzer_binding,
    check_model_binding,
    checked_vectors,
    chunk_cols,
    chunk_from_row,
    chunk_insert_columns,
    chunk_values,
    document_from_row,
    document_values,
    insert_sql,
    textless_chunk_from_row,
)
from citewise.types import Chunk, Document, Hit

_log = logging.getLogger(__name__)

#: indexes of at least this many chunks are saved next to the index file (below it a build
#: takes under a second); see :mod:`citewise.store.derived_files`
DERIVED_FILES_FROM = 20_000
_Index = TypeVar("_Index", BM25Index, DenseIndex)
#: past this fraction of the older index's (or the state's) chunks changed, the BM25 index is
#: rebuilt rather than caught up
CATCH_UP_MAX = 0.25
#: the chunk log keeps at most this many generations (see :meth:`SQLiteStore._bump`)
LOG_GENERATIONS = 4096
#: ... and, past this many rows, at most a quarter of the chunk count
LOG_ROWS_MIN = 10_000
#: :attr:`SQLiteStore.dense_catch_up_from`: the size from which the dense index is coded
DENSE_CATCH_UP_FROM = EXACT_BELOW
#: documents kept read for one BM25 index's state (:meth:`SQLiteStore.get_chunks`)
KNOWN_DOCUMENTS = 50_000

# the BM25 names stay importable from here, where they were defined before citewise.store.bm25
__all__ = ["BM25_B", "BM25_K1", "MIGRATIONS", "SQLiteStore", "bm25_scores"]


M001 = [
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)
    """,
    """
    CREATE TABLE documents (
    id TEXT PRIMARY KEY,
    path TEXT NOT NULL,
    source_path TEXT NOT NULL UNIQUE,
    title TEXT NOT NULL,
    format TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    chunk_count INTEGER NOT NULL,
    pages INTEGER,
    metadata TEXT NOT NULL DEFAULT '{}',
    warnings TEXT NOT NULL DEFAULT '[]',
    indexed_at REAL NOT NULL,
    status TEXT NOT NULL DEFAULT 'indexed',
    error TEXT NOT NULL DEFAULT ''
    )
    """,
    """
    CREATE TABLE chunks (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    text TEXT NOT NULL,
    source_text TEXT NOT NULL,
    char_start INTEGER NOT NULL,
    char_end INTEGER NOT NULL,
    section TEXT NOT NULL DEFAULT '[]',
    page INTEGER, page_end INTEGER, line_start INTEGER, line_end INTEGER,
    symbol TEXT,
    content_hash TEXT NOT NULL,
    token_count INTEGER NOT NULL,
    terms TEXT NOT NULL,
    n_terms INTEGER NOT NULL,
    vector BLOB NOT NULL
    )
    """,
    """
    CREATE INDEX chunks_document ON chunks(document_id, ordinal)
    """,
    """
    CREATE INDEX chunks_content_hash ON chunks(content_hash)
    """,
    """
    CREATE VIRTUAL TABLE chunks_fts USING fts5(
    terms, content='chunks', content_rowid='rowid',
    tokenize = "unicode61 remove_diacritics 0 categories 'L* N* M* Co' tokenchars '_'"
    )
    """,
    """
    CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab(chunks_fts, 'row')
    """,
    """
    CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, terms) VALUES (new.rowid, new.terms);
    END
    """,
    """
    CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, terms) VALUES ('delete', old.rowid, old.terms);
    END
    """,
    """
    INSERT INTO meta VALUES ('generation', '0')
    """,
]


def m001_initial(db: sqlite3.Connection) -> None:
    """Documents, chunks (text, location, BM25 terms, vector), FTS5 index and meta."""
    for statement in M001:
        db.execute(statement)


def m002_collection(db: sqlite3.Connection) -> None:
    """The collection of each document (access control per collection); existing documents
    are in ``default``."""
    db.execute("ALTER TABLE documents ADD COLUMN collection TEXT NOT NULL DEFAULT 'default'")
    db.execute("CREATE INDEX documents_collection ON documents(collection)")



def m003_chunk_language(db: sqlite3.Connection) -> None:
    """Each chunk's detected language (``''`` for chunks indexed before), and the analyzer
    version of an existing index's BM25 terms: ``1``, the script-based analysis they were
    made with, so the index is re-analysed (``citewise reindex``) before it is used."""
    db.execute("ALTER TABLE chunks ADD COLUMN language TEXT NOT NULL DEFAULT ''")
    db.execute("CREATE INDEX chunks_language ON chunks(language)")
    db.execute("INSERT INTO meta SELECT 'analyzer', '1' WHERE EXISTS (SELECT 1 FROM chunks)")


def m004_chunk_page_starts(db: sqlite3.Connection) -> None:
    """Where each page begins inside a chunk that spans pages (JSON ``[[offset, page], ...]``,
    ``[]`` for one page or chunks indexed before), so a citation names the cited part's page."""
    db.execute("ALTER TABLE chunks ADD COLUMN page_starts TEXT NOT NULL DEFAULT '[]'")


M005 = [
    """
    CREATE TABLE chunk_log (
    seq INTEGER PRIMARY KEY,
    generation INTEGER NOT NULL,
    chunk INTEGER NOT NULL,
    op INTEGER NOT NULL
    )
    """,
    """
    CREATE INDEX chunk_log_generation ON chunk_log(generation)
    """,
    # a write bumps ``generation`` once, after its chunk rows: its rows are logged under the
    # generation it commits (the one read now plus one)
    """
    CREATE TRIGGER chunks_log_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunk_log (generation, chunk, op) VALUES (
    (SELECT CAST(value AS INTEGER) + 1 FROM meta WHERE key = 'generation'), new.rowid, 1);
    END
    """,
    """
    CREATE TRIGGER chunks_log_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunk_log (generation, chunk, op) VALUES (
    (SELECT CAST(value AS INTEGER) + 1 FROM meta WHERE key = 'generation'), old.rowid, -1);
    END
    """,
    """
    INSERT OR REPLACE INTO meta SELECT 'chunk_log_from', value FROM meta WHERE key = 'generation'
    """,
]


def m005_chunk_log(db: sqlite3.Connection) -> None:
    """The chunk change log the BM25 index catches up from (``chunk_log``: one row per chunk
    row inserted (``op`` 1) or deleted (-1), under the generation whose write made it, written
    by triggers in that write's transaction) and ``meta.chunk_log_from``: the log holds every
    change of the generations after it (the generation this migration ran at, so an index of
    an older generation is rebuilt, never caught up)."""
    for statement in M005:
        db.execute(statement)


def m006_chunk_ids_by_document(db: sqlite3.Connection) -> None:
    """``chunks_document`` becomes a covering index, ``(document_id, ordinal, id)``: a
    document's chunk ids (and row keys) in ordinal order are read from the index alone,
    without visiting each chunk's row (text, terms, vector), which the selection does for
    every document it looks into (~0.1 ms per document cold at 100k chunks without it)."""
    db.execute("DROP INDEX chunks_document")
    db.execute("CREATE INDEX chunks_document ON chunks(document_id, ordinal, id)")


def m007_document_error_kind(db: sqlite3.Connection) -> None:
    """Each failed document's kind of failure (``documents.error_kind``, see
    :attr:`citewise.errors.DocumentError.kind`); failures recorded before are ``''``, except
    empty files, recognised once here by the sentence every empty-file message ends with."""
    db.execute("ALTER TABLE documents ADD COLUMN error_kind TEXT NOT NULL DEFAULT ''")
    db.execute("UPDATE documents SET error_kind = ? WHERE status = 'failed' "
               "AND instr(error, ?) > 0", (EmptyDocumentError.kind, EmptyDocumentError.remedy))


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    m001_initial, m002_collection, m003_chunk_language, m004_chunk_page_starts, m005_chunk_log,
    m006_chunk_ids_by_document, m007_document_error_kind]
_STEPS = named(MIGRATIONS)


class UserVersionLedger:
    """The index's migration ledger: ``PRAGMA user_version`` is how many of
    :data:`MIGRATIONS` were applied (the first that many, in order)."""

    def applied(self, db: sqlite3.Connection) -> set[str]:
        """The names of the first ``user_version`` migrations."""
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        return {m.name for m in _STEPS[:version]}

    def record(self, db: sqlite3.Connection, name: str, position: int) -> None:
        """Set ``user_version`` to ``position``: the migrations up to ``name`` are applied."""
        db.execute(f"PRAGMA user_version = {int(position)}")


_CHUNK_COLS = chunk_cols("rowid")
_CHUNK_INSERT = insert_sql("chunks", chunk_insert_columns("vector"), "?")
_DOCUMENT_INSERT = insert_sql("documents", DOCUMENT_COLUMNS, "?")


def _positions(keys: np.ndarray, wanted: np.ndarray) -> np.ndarray | None:
    """Positions (int64) of int64 ``wanted`` row keys in the int64 ascending ``keys`` of a
    derived index, or None when one of them is not there."""
    keys = keys.view(np.ndarray)
    at = np.searchsorted(keys, wanted)
    if at.shape[0] and (int(at.max()) >= keys.shape[0]
                        or not np.array_equal(keys[at], wanted)):
        return None
    return at


def _hits(chunk_ids: Sequence[str], scores: np.ndarray,
          leg: Literal["dense", "sparse"]) -> list[Hit]:
    """One hit per chunk id with its float (n,) ``scores`` value as ``score`` and as the
    ``leg``'s score, in order."""
    values = np.asarray(scores, dtype=np.float64).tolist()
    if leg == "dense":
        return [Hit(chunk_id=c, score=v, source="dense", dense=v)
                for c, v in zip(chunk_ids, values, strict=True)]
    return [Hit(chunk_id=c, score=v, source="sparse", sparse=v)
            for c, v in zip(chunk_ids, values, strict=True)]


@contextmanager
def _immediate(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction on ``db`` (``BEGIN IMMEDIATE``: the write lock at once, waiting
    up to the busy timeout for another writer): committed when the body returns, rolled back
    when it raises (the exception propagates)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _remove_sqlite_files(path: Path) -> None:
    """Delete the SQLite file ``path`` with its WAL, shared-memory and journal files and its
    derived indexes (:mod:`citewise.store.derived_files`)."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    shutil.rmtree(derived_folder(path), ignore_errors=True)


class SQLiteStore(SQLStore):
    """The :class:`~citewise.store.base.Store` over one SQLite file (created if missing).

    Safe to share between threads (one connection per thread) and between processes.
    """

    MARK = "?"
    META_TABLE = "meta"
    KEY = "rowid"

    def __init__(self, path: str | Path, busy_timeout_s: float = 60.0, *,
                 bm25_index: bool = True,
                 bm25_build: Literal["background", "wait"] = "background",
                 dense_exact_below: int = EXACT_BELOW, dense_rescore_factor: int = RESCORE_FACTOR,
                 dense_rescore_min: int = RESCORE_MIN, dense_ivf_from: int = IVF_FROM,
                 dense_ivf_scan: float = IVF_SCAN,
                 derived_files_from: int | None = DERIVED_FILES_FROM) -> None:
        self.path = Path(path)
        self._busy_timeout_s = busy_timeout_s
        #: BM25 through the in-memory :class:`~citewise.store.bm25_index.BM25Index` (exact
        #: over every chunk holding a query term); False: FTS5 candidates re-scored in SQL
        self.bm25_index = bm25_index
        #: when the index is missing or older than the state a search reads: ``background``
        #: builds it in a thread and answers from FTS5 meanwhile (a search never waits for a
        #: build, ~15 s at 100k chunks on 2 loaded cores); ``wait`` builds it first
        self.bm25_build = bm25_build
        #: dense search is exact below this many chunks; at or above, int8 codes pick a
        #: shortlist of ``max(dense_rescore_factor * k, dense_rescore_min)`` chunks re-scored
        #: exactly (:mod:`citewise.store.dense_index`); 0 codes every non-empty index
        self.dense_exact_below = dense_exact_below
        self.dense_rescore_factor = dense_rescore_factor
        self.dense_rescore_min = dense_rescore_min
        #: from this many chunks (and at least ``dense_exact_below``) 4-bit codes are held in
        #: inverted lists (k-means, built per generation) and a search scans the lists nearest
        #: the query (:class:`~citewise.store.dense_index.IVFPQLists`)
        self.dense_ivf_from = dense_ivf_from
        #: the share of the candidates' codes an inverted-file search scans (recall against
        #: speed: see :data:`~citewise.store.dense_index.IVF_SCAN`)
        self.dense_ivf_scan = dense_ivf_scan
        #: indexes of at least this many chunks are saved next to the file per generation
        #: and opened memory-mapped by the next process reading that state
        #: (:mod:`citewise.store.derived_files`); None: never saved, always built
        self.derived_files_from = derived_files_from
        self._building: threading.Thread | None = None
        # the BM25 build has locks of its own: a build (seconds) never holds up a dense
        # search's matrix load or a search that only checks whether a build is running
        self._bm25_kept = KeptIndex()
        # the meta.index_id each BM25 index was read from (by id(); a few entries): only an
        # index of this very file is caught up, never one of a file since replaced at the path
        self._bm25_source: dict[int, str] = {}
        #: how each BM25 index this store loaded was made: ``mapped`` (its saved files),
        #: ``caught_up`` (from an older index and the chunk log) or ``built`` (every row)
        self.bm25_loads: Counter[str] = Counter()
        #: False: never catch the BM25 index up from the chunk log, always rebuild it (to
        #: compare the two; the results are the same)
        self.bm25_catch_up = True
        self._thread_lock = threading.Lock()
        self._local = threading.local()
        self._lock = threading.Lock()
        self._matrix: DenseIndex | CaughtUpDenseIndex | None = None
        # the meta.index_id the kept dense index was read from (only an index of this very
        # file is caught up)
        self._matrix_source = ""
        #: False: never catch the dense index up from the chunk log, always rebuild it
        self.dense_catch_up = True
        #: the dense index is caught up only from a built index of at least this many chunks
        #: (below it a rebuild reads a few MB and takes well under a second, and the saved
        #: files stay those of the newest generation)
        self.dense_catch_up_from = DENSE_CATCH_UP_FROM
        #: how each dense index this store loaded was made (as :attr:`bm25_loads`)
        self.dense_loads: Counter[str] = Counter()
        self._stats: tuple[int, int, float] | None = None  # generation, N, avgdl
        self._last_stamp: Stamp | None = None
        # documents read for get_chunks(texts=False), for one BM25 index (its state)
        self._documents: tuple[BM25Index | None, dict[str, Document]] = (None, {})
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._migrate()
        except (OSError, sqlite3.Error) as err:
            raise IndexError_(
                f"cannot open the index at {self.path} ({err}); make CITEWISE_HOME or "
                "CITEWISE_STORE point to a folder you can write to"
            ) from None

    # --- connection and schema ------------------------------------------------------------
    @property
    def db(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(
                self.path, timeout=self._busy_timeout_s, isolation_level=None,
                check_same_thread=False,
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            self._local.conn = conn
        return conn

    def _migrate(self) -> None:
        """Bring the schema up to date in one ``BEGIN IMMEDIATE`` transaction."""
        with _immediate(self.db) as db:
            run_migrations(db, _STEPS, UserVersionLedger())
            # this file's own id, so its derived files never match another file's
            db.execute("INSERT OR IGNORE INTO meta VALUES ('index_id', ?)",
                       (secrets.token_hex(8),))

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Run the reads inside in one read transaction: they all see the same committed
        state, so a query never mixes two versions of a document (re-entrant per thread)."""
        with nested_read_transaction(self._local, self.db.execute, "BEGIN"):
            yield

    def generation(self) -> int:
        return int(self._meta("generation") or 0)

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # --- model binding --------------------------------------------------------------------
    def bind_model(self, name: str, dim: int) -> None:
        with _immediate(self.db) as db:
            has_chunks = db.execute("SELECT 1 FROM chunks LIMIT 1").fetchone() is not None
            check_model_binding(self._meta("embedding_model"), self._meta("dimension"),
                                has_chunks, name, dim)
            db.execute("INSERT OR REPLACE INTO meta VALUES ('embedding_model', ?)", (name,))
            db.execute("INSERT OR REPLACE INTO meta VALUES ('dimension', ?)", (str(dim),))

    def bind_analyzer(self, version: str, *, force: bool = False) -> None:
        """See :meth:`Store.bind_analyzer`."""
        with _immediate(self.db) as db:
            has_chunks = db.execute("SELECT 1 FROM chunks LIMIT 1").fetchone() is not None
            check_analyzer_binding(self._meta("analyzer"), has_chunks, version, force)
            db.execute("INSERT OR REPLACE INTO meta VALUES ('analyzer', ?)", (version,))

    def mark_unfinished(self, note: str | None) -> None:
        """See :meth:`Store.mark_unfinished`."""
        with _immediate(self.db) as db:
            db.execute("DELETE FROM meta WHERE key = 'unfinished'")
            if note is not None:
                db.execute("INSERT INTO meta VALUES ('unfinished', ?)", (note,))

    # --- writes ---------------------------------------------------------------------------
    def upsert_document(
        self, document: Document, chunks: Sequence[Chunk], vectors: np.ndarray,
        terms: Sequence[str] | None = None,
    ) -> None:
        """See :meth:`Store.upsert_document`. ``terms``: analysed BM25 text per chunk
        (computed from ``chunk.text`` when omitted)."""
        vectors = checked_vectors(chunks, vectors, self.stored_model()[1], "<f4")
        terms = analysed_terms(chunks, terms)
        with _immediate(self.db) as db:
            db.execute("DELETE FROM chunks WHERE document_id = ?", (document.id,))
            db.execute(
                "DELETE FROM chunks WHERE document_id IN "
                "(SELECT id FROM documents WHERE source_path = ? AND id != ?)",
                (document.source_path, document.id),
            )
            db.execute(
                "DELETE FROM documents WHERE id = ? OR source_path = ?",
                (document.id, document.source_path),
            )
            db.execute(_DOCUMENT_INSERT, document_values(document, len(chunks)))
            db.executemany(_CHUNK_INSERT, [
                chunk_values(c, document.id, t, len(t.split()), vectors[i].tobytes())
                for i, (c, t) in enumerate(zip(chunks, terms, strict=True))
            ])
            self._bump(db)

    def delete_document(self, document_id: str) -> bool:
        with _immediate(self.db) as db:
            db.execute("DELETE FROM chunks WHERE document_id = ?", (document_id,))
            deleted = db.execute("DELETE FROM documents WHERE id = ?", (document_id,)).rowcount
            if deleted:
                self._bump(db)
        return bool(deleted)

    def clear(self) -> None:
        """Delete every document and forget the embedding model (for ``citewise reindex``)."""
        with _immediate(self.db) as db:
            db.execute("DELETE FROM chunks")
            db.execute("DELETE FROM documents")
            db.execute(f"DELETE FROM meta WHERE key IN {BINDING_KEYS}")
            self._bump(db, reset_log=True)

    @contextmanager
    def rebuild(self) -> Iterator[SQLiteStore]:
        """Build a replacement index beside this one and switch to it in one transaction
        (``citewise reindex``).

        Yields an empty store in a staging file next to the index (``<index>.rebuild``, any
        leftover of a killed run deleted first); the caller fills it (binding its model).
        When the ``with`` body returns, one ``BEGIN IMMEDIATE`` transaction on the live file
        replaces every document, chunk, BM25 row and the model/analyzer binding with the
        staged ones (``ATTACH``; the file is never renamed, so other processes' connections
        and WAL stay valid). Readers, in this or another process, see the old index or the
        new one, never a mix; a crash or kill before the commit leaves the old index intact
        (the staging file is deleted by the next run). The staging file is deleted on exit
        either way; an exception in the body switches nothing and propagates.

        Raises IndexChangedError (nothing switched) when the live index was written meanwhile (an
        upload or delete: its generation moved), so that write is not lost; run it again.
        """
        staging = self.path.with_name(self.path.name + ".rebuild")
        _remove_sqlite_files(staging)
        started = self.generation()
        target = SQLiteStore(staging, self._busy_timeout_s)
        try:
            yield target
            target.close()
            self._switch_to(staging, started)
        finally:
            target.close()
            _remove_sqlite_files(staging)

    def _switch_to(self, staging: Path, generation: int) -> None:
        """Replace this index's content with the SQLite file ``staging`` in one transaction,
        unless this index's generation is no longer ``generation`` (IndexError_)."""
        db = self.db
        db.execute("ATTACH DATABASE ? AS staged", (str(staging),))
        try:
            with _immediate(db):
                if self.generation() != generation:
                    raise IndexChangedError(
                        "the index was changed while it was rebuilt (an upload or delete); "
                        "nothing was switched, run citewise reindex again")
                doc_cols = ", ".join(DOCUMENT_COLUMNS)
                chunk_cols = ", ".join(r[1] for r in db.execute("PRAGMA main.table_info(chunks)"))
                db.execute("DELETE FROM main.chunks")
                db.execute("DELETE FROM main.documents")
                db.execute(f"INSERT INTO main.documents ({doc_cols}) "
                           f"SELECT {doc_cols} FROM staged.documents")
                db.execute(f"INSERT INTO main.chunks ({chunk_cols}) "
                           f"SELECT {chunk_cols} FROM staged.chunks")
                db.execute(f"DELETE FROM main.meta WHERE key IN {BINDING_KEYS}")
                db.execute(f"INSERT INTO main.meta SELECT key, value FROM staged.meta "
                           f"WHERE key IN {BINDING_KEYS}")
                self._bump(db, reset_log=True)
        finally:
            db.execute("DETACH DATABASE staged")

    @staticmethod
    def _bump(db: sqlite3.Connection, *, reset_log: bool = False) -> None:
        """Bump ``generation`` at the end of a write transaction and prune the chunk log in
        it: the generations older than :data:`LOG_GENERATIONS` before the new one, and, every
        16th generation, the oldest ones while the log holds more rows than
        ``max(LOG_ROWS_MIN, largest row key // 4)`` (a catch-up past a quarter of the chunks
        rebuilds anyway). ``meta.chunk_log_from`` moves up to the newest pruned generation.
        ``reset_log``: empty the log (a write that replaced every chunk)."""
        db.execute(
            "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'"
        )
        generation = int(db.execute(
            "SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])
        if reset_log:
            db.execute("DELETE FROM chunk_log")
            db.execute("UPDATE meta SET value = ? WHERE key = 'chunk_log_from'",
                       (str(generation),))
            return
        pruned_to = generation - LOG_GENERATIONS
        if generation % 16 == 0:
            # the largest row key, not count(*) (a scan at 1M chunks): at least the count
            cap = max(LOG_ROWS_MIN, int(db.execute(
                "SELECT coalesce(max(rowid), 0) FROM chunks").fetchone()[0]) // 4)
            row = db.execute("SELECT generation FROM chunk_log ORDER BY seq DESC LIMIT 1 "
                             "OFFSET ?", (cap,)).fetchone()
            if row is not None:
                pruned_to = max(pruned_to, int(row[0]))
        if db.execute("DELETE FROM chunk_log WHERE generation <= ?", (pruned_to,)).rowcount:
            db.execute("UPDATE meta SET value = max(CAST(value AS INTEGER), ?) "
                       "WHERE key = 'chunk_log_from'", (pruned_to,))

    # --- reads ----------------------------------------------------------------------------
    def _rows_in(self, sql: str, keys: Sequence[str]) -> Iterator[Sequence[Any]]:
        """Rows of ``sql`` (with one ``{marks}`` placeholder list) for unique ``keys``, queried
        in batches of 500 to stay under SQLite's bound-parameter limit."""
        unique = list(dict.fromkeys(keys))
        for i in range(0, len(unique), 500):
            part = unique[i : i + 500]
            yield from self.db.execute(sql.format(marks=",".join("?" * len(part))), part)

    def cached_vectors(self, content_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        sql = "SELECT content_hash, vector FROM chunks WHERE content_hash IN ({marks})"
        return {h: np.frombuffer(b, dtype="<f4") for h, b in self._rows_in(sql, content_hashes)}

    def vectors_of(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors by chunk id: float32 (dim,) each."""
        sql = "SELECT id, vector FROM chunks WHERE id IN ({marks})"
        return {c: np.frombuffer(b, dtype="<f4") for c, b in self._rows_in(sql, chunk_ids)}

    def terms_of(self, chunk_ids: Sequence[str]) -> dict[str, frozenset[str]]:
        """The analysed BM25 terms of each chunk (title, section and text), by chunk id."""
        sql = "SELECT id, terms FROM chunks WHERE id IN ({marks})"
        return {c: frozenset(t.split()) for c, t in self._rows_in(sql, chunk_ids)}

    def chunk_features(self, document_id: str) -> list[tuple[str, frozenset[str], np.ndarray]]:
        """Every chunk of a document as ``(chunk id, analysed terms, float32 vector)``."""
        rows = self.db.execute(
            "SELECT id, terms, vector FROM chunks WHERE document_id = ? ORDER BY ordinal",
            (document_id,),
        )
        return [(cid, frozenset(t.split()), np.frombuffer(v, dtype="<f4")) for cid, t, v in rows]

    def document_incidence(self, document_id: str, terms: Sequence[str], *,
                           vectors: bool = False,
                           query: np.ndarray | None = None) -> TermIncidence:
        """See :meth:`Store.document_incidence`. When the BM25 index is that of the state
        read, the chunks' row keys come from the covering ``chunks_document`` index alone (no
        chunk's row, terms or vector is read from the file), which terms each holds from
        the index's postings (:meth:`BM25Index.incidence`) and the vectors from the dense
        index's matrix (the stored bytes, so equal to :meth:`chunk_features`'s; ``dots``
        their numpy product with ``query``); else from :meth:`chunk_features`."""
        with self.snapshot():
            index = self._bm25_kept.current(self.generation()) if self.bm25_index else None
            if index is not None:
                rows = self.db.execute(
                    "SELECT rowid, id FROM chunks WHERE document_id = ? ORDER BY ordinal",
                    (document_id,)).fetchall()
                found = self._indexed_incidence(index, rows, terms,
                                                vectors or query is not None)
                if found is not None:
                    return found.scored(query, keep_vectors=vectors)
            return super().document_incidence(document_id, terms, vectors=vectors, query=query)

    def chunk_incidence(self, chunk_ids: Sequence[str], terms: Sequence[str], *,
                        vectors: bool = False) -> TermIncidence:
        """See :meth:`Store.chunk_incidence`: from the in-memory indexes of the state read
        when the BM25 index is current (row keys by the chunks' ids, then as
        :meth:`document_incidence`), else from :meth:`terms_of` and :meth:`vectors_of`."""
        with self.snapshot():
            index = self._bm25_kept.current(self.generation()) if self.bm25_index else None
            if index is not None:
                found = self._indexed_incidence(index, self._rowids_of(index, chunk_ids),
                                                terms, vectors)
                if found is not None:
                    return found
            return super().chunk_incidence(chunk_ids, terms, vectors=vectors)

    def _rowids_of(self, index: BM25Index, chunk_ids: Sequence[str]) -> list[tuple[int, str]]:
        """``(row key, chunk id)`` of the stored ones of ``chunk_ids``, in their order (first
        occurrences): those ``index`` (that of the state read) returned recently from its
        keys (:meth:`BM25Index.known_positions`), the others from the ids' own SQL index (no
        chunk row read)."""
        wanted = list(dict.fromkeys(chunk_ids))
        known = index.known_positions(wanted)
        rowids = np.asarray(index.rowids)
        keys: dict[str, int] = dict(zip(known, rowids[list(known.values())].tolist(),
                                        strict=True))
        missing = [c for c in wanted if c not in known]
        if missing:
            keys.update((row[0], row[1]) for row in self._rows_in(
                "SELECT id, rowid FROM chunks WHERE id IN ({marks})", missing))
        return [(keys[c], c) for c in wanted if c in keys]

    def _indexed_incidence(self, index: BM25Index, rows: Sequence[tuple[int, str]],
                           terms: Sequence[str], vectors: bool) -> TermIncidence | None:
        """The incidence of the chunks ``rows`` (``(row key, chunk id)``, read in the
        snapshot ``index`` reflects) from ``index`` and, with ``vectors``, the dense index of
        the same state; None when a row key is missing from either (never expected: both
        reflect the state read)."""
        rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        at = _positions(index.rowids, rowids)
        if at is None:
            return None
        stacked = None
        if vectors:
            # a C-contiguous float32 copy of the rows (no np.memmap per row)
            stacked = self._load_matrix().vectors_of(rowids)
            if stacked is None:
                return None
        return TermIncidence(tuple(r[1] for r in rows), tuple(terms),
                             index.incidence(at, terms), stacked)

    def get_chunks(self, chunk_ids: Sequence[str], *,
                   texts: bool = True) -> dict[str, tuple[Chunk, Document]]:
        """See :meth:`Store.get_chunks`. Without ``texts``, when the BM25 index is that of
        the state read, the chunks' row keys come from the ids' index, their documents,
        ordinals and languages from the index's
        :attr:`~citewise.store.bm25_index.BM25Index.keys` and each document's row is read
        once (no chunk row is read from the file)."""
        if not texts:
            with self.snapshot():
                index = self._bm25_kept.current(self.generation()) if self.bm25_index else None
                if index is not None and index.keys is not None:
                    found = self._textless_chunks(index, index.keys, chunk_ids)
                    if found is not None:
                        return found
            sql = (f"SELECT {TEXTLESS_CHUNK_COLS}, {DOC_COLS} FROM chunks c "
                   "JOIN documents d ON d.id = c.document_id WHERE c.id IN ({marks})")
            return {row[0]: (textless_chunk_from_row(row[:NTEXTLESS]),
                             document_from_row(row[NTEXTLESS:]))
                    for row in self._rows_in(sql, chunk_ids)}
        sql = (f"SELECT {_CHUNK_COLS}, {DOC_COLS} FROM chunks c "
               "JOIN documents d ON d.id = c.document_id WHERE c.id IN ({marks})")
        return {row[1]: (chunk_from_row(row[:NCHUNK]), document_from_row(row[NCHUNK:]))
                for row in self._rows_in(sql, chunk_ids)}

    def _textless_chunks(self, index: BM25Index, keys: ChunkKeys, chunk_ids: Sequence[str]
                         ) -> dict[str, tuple[Chunk, Document]] | None:
        """:meth:`get_chunks` without texts from ``index`` (that of the state read) and its
        ``keys``; None when a row key is not in the index (never expected)."""
        rows = self._rowids_of(index, chunk_ids)
        at = _positions(index.rowids, np.fromiter((r[0] for r in rows), dtype=np.int64,
                                                  count=len(rows)))
        if at is None:
            return None
        document_ids = keys.documents.take(at)
        # the documents read for this index: every write of a document row bumps the
        # generation, so within the index's state they are the stored ones
        cached = self._documents
        if cached[0] is not index:
            cached = self._documents = (index, {})
        if len(cached[1]) > KNOWN_DOCUMENTS:
            cached[1].clear()
        wanted = {d: cached[1].get(d) for d in document_ids}  # get: another thread may clear
        documents = {d: doc for d, doc in wanted.items() if doc is not None}
        missing = [d for d, doc in wanted.items() if doc is None]
        if missing:
            read = {row[0]: document_from_row(row) for row in self._rows_in(
                f"SELECT {DOC_COLS} FROM documents d WHERE d.id IN ({{marks}})", missing)}
            documents.update(read)
            cached[1].update(read)
        out: dict[str, tuple[Chunk, Document]] = {}
        for (_, chunk_id), document_id, ordinal, language in zip(
                rows, document_ids, np.asarray(keys.ordinals)[at].tolist(),
                keys.languages.take(at), strict=True):
            document = documents.get(document_id)
            if document is not None:  # as the SQL join: a chunk without its document is left out
                out[chunk_id] = (textless_chunk_from_row((chunk_id, document_id, ordinal,
                                                          language)), document)
        return out

    def export(self, document_id: str) -> tuple[list[Chunk], np.ndarray, list[str]]:
        """A document's chunks (``ordinal`` order), their float32 (n, dim) vectors and analysed
        BM25 texts: what :meth:`upsert_document` takes, for copying an index."""
        rows = self.db.execute(
            f"SELECT {_CHUNK_COLS}, c.terms, c.vector FROM chunks c "
            "WHERE c.document_id = ? ORDER BY c.ordinal", (document_id,)).fetchall()
        if rows:
            vectors = np.frombuffer(b"".join(r[NCHUNK + 1] for r in rows), dtype="<f4")
            vectors = vectors.reshape(len(rows), -1).astype(np.float32)
        else:
            vectors = np.zeros((0, self.stored_model()[1] or 1), dtype=np.float32)
        return [chunk_from_row(r[:NCHUNK]) for r in rows], vectors, [r[NCHUNK] for r in rows]

    def check(self) -> list[str]:
        """Problems found in the index file, one sentence each; [] when it is consistent.

        Checks: SQLite's ``integrity_check``; the FTS5 index against the ``chunks`` rows (FTS5
        ``integrity-check`` with rank 1 compares an external-content index with its content
        table); one FTS row per chunk; no chunk without its document; every document's
        ``chunk_count`` equal to its stored chunks; every vector ``dimension * 4`` bytes. Used
        after a crash (``benchmarks/crash.py``) and by the crash-safety tests.
        """
        db = self.db
        problems: list[str] = []
        ok = db.execute("PRAGMA integrity_check").fetchall()
        if ok != [("ok",)]:
            problems.append(f"integrity_check: {'; '.join(r[0] for r in ok[:5])}")
        try:
            db.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
        except sqlite3.DatabaseError as err:
            problems.append(f"the BM25 (FTS5) index disagrees with the chunks: {err}")
        n_chunks = db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        n_fts = db.execute("SELECT count(*) FROM chunks_fts_docsize").fetchone()[0]
        if n_fts != n_chunks:
            problems.append(f"{n_fts} BM25 rows for {n_chunks} chunks")
        orphans = db.execute(
            "SELECT count(*) FROM chunks c LEFT JOIN documents d ON d.id = c.document_id "
            "WHERE d.id IS NULL").fetchone()[0]
        if orphans:
            problems.append(f"{orphans} chunks without their document")
        wrong = db.execute(
            "SELECT d.path, d.chunk_count, coalesce(n.n, 0) FROM documents d LEFT JOIN "
            "(SELECT document_id, count(*) AS n FROM chunks GROUP BY document_id) n "
            "ON n.document_id = d.id WHERE d.chunk_count != coalesce(n.n, 0)").fetchall()
        problems.extend(f"{p}: {want} chunks recorded, {have} stored" for p, want, have in wrong)
        _, dim = self.stored_model()
        if dim:
            bad = db.execute("SELECT count(*) FROM chunks WHERE length(vector) != ?",
                             (4 * dim,)).fetchone()[0]
            if bad:
                problems.append(f"{bad} vectors are not {dim}-d float32")
        return problems

    def info(self) -> IndexInfo:
        docs = self.db.execute(
            "SELECT count(*) FROM documents WHERE status = 'indexed'"
        ).fetchone()[0]
        chunks = self.db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        model, dim = self.stored_model()
        size = sum(
            p.stat().st_size
            for p in (self.path, Path(f"{self.path}-wal"))
            if p.exists()
        )
        return IndexInfo(docs, chunks, model, dim, size, str(self.path))

    # --- filters --------------------------------------------------------------------------
    def _filter_clauses(self, filters: Filters | None) -> tuple[list[str], list[object]] | None:
        """SQL conditions on ``chunks c JOIN documents d`` for ``filters``: None when nothing
        is filtered, ``(["0"], [])`` when nothing can match (no readable collection). Raises
        ValueError for an unknown filter key."""
        wanted = ChunkFilter.parse(filters)
        if wanted is None:
            return None
        if wanted.matches_nothing:
            return ["0"], []
        clauses: list[str] = []
        params: list[object] = []
        if ids := wanted.document_ids:
            clauses.append(f"c.document_id IN ({','.join('?' * len(ids))})")
            params.extend(ids)
        if prefix := wanted.path_prefix:
            clauses.append("substr(d.path, 1, ?) = ?")
            params.extend([len(prefix), prefix])
        if (names := wanted.collections) is not None:
            clauses.append(f"d.collection IN ({','.join('?' * len(names))})")
            params.extend(names)
        if language := wanted.language:
            clauses.append("c.language = ?")
            params.append(language)
        if (scope := wanted.scope) is not None:  # paths and where: the documents that pass
            scoped = scoped_document_ids(self, scope)
            if not scoped:
                return ["0"], []
            clauses.append("c.document_id IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(scoped))
        return clauses, params

    def _filter_rowids(self, filters: Filters | None) -> np.ndarray | None:
        where = self._filter_clauses(filters)
        if where is None:
            return None
        clauses, params = where
        rows = self.db.execute(
            "SELECT c.rowid FROM chunks c JOIN documents d ON d.id = c.document_id WHERE "
            + " AND ".join(clauses),
            params,
        )
        return np.fromiter((r[0] for r in rows), dtype=np.int64)

    # --- derived files --------------------------------------------------------------------
    def _stamp(self) -> Stamp | None:
        """The :class:`~citewise.store.derived_files.Stamp` of the state read (call it inside
        :meth:`snapshot`), or None when indexes of its size are not saved."""
        if self.derived_files_from is None:
            return None
        generation = self.generation()
        known = self._last_stamp  # both legs load in one generation: count the rows once
        if known is None or known.generation != generation:
            n, top = self.db.execute(
                "SELECT count(*), coalesce(max(rowid), 0) FROM chunks").fetchone()
            known = Stamp(str(self._meta("index_id") or ""), generation, int(n), int(top))
            self._last_stamp = known
        if known.chunks < self.derived_files_from or known.chunks == 0:
            return None
        return known

    def _mapped(self, kind: str, stamp: Stamp | None,
                make: Callable[[dict[str, np.ndarray]], _Index]) -> _Index | None:
        """The ``kind`` index of ``stamp`` from its saved files, memory-mapped; None when it
        is not saved (or ``stamp`` is None) or its files do not fit together (then deleted)."""
        if stamp is None:
            return None
        found = derived_files.load(derived_folder(self.path), kind, stamp)
        if found is None:
            return None
        try:
            return make(found[0])
        except (ValueError, KeyError) as err:
            _log.info("ignoring the saved %s index of %s (%s); it is rebuilt", kind, self.path, err)
            shutil.rmtree(derived_folder(self.path) / stamp.folder(kind), ignore_errors=True)
            return None

    def _saved(self, kind: str, stamp: Stamp | None, built: _Index,
               make: Callable[[dict[str, np.ndarray]], _Index]) -> _Index:
        """``built`` saved as the ``kind`` files of ``stamp`` and returned memory-mapped from
        them (its heap arrays then freed); ``built`` itself when nothing was saved."""
        if stamp is None:
            return built
        if derived_files.save(derived_folder(self.path), kind, stamp, built.arrays()) is None:
            return built
        return self._mapped(kind, stamp, make) or built

    # --- dense ----------------------------------------------------------------------------
    def _dense_options(self) -> dict[str, Any]:
        return {"exact_below": self.dense_exact_below,
                "rescore_factor": self.dense_rescore_factor,
                "rescore_min": self.dense_rescore_min,
                "ivf_from": self.dense_ivf_from,
                "ivf_scan": self.dense_ivf_scan}

    def _load_matrix(self) -> DenseIndex | CaughtUpDenseIndex:
        """The dense index of the committed state this thread reads: the kept one when its
        generation is the one read now; else its saved files mapped; else the last built
        one (kept, or older saved files) caught up through the chunk log
        (:meth:`_caught_up_dense`); else one built from the ``chunks`` rows of that state
        and saved. Kept when it is newer than the kept one, so a thread in an older snapshot
        never replaces a newer index."""
        generation = self.generation()
        matrix = self._matrix
        if matrix is not None and matrix.generation == generation:
            return matrix
        with self._lock:
            if self._matrix is not None and self._matrix.generation == generation:
                return self._matrix
            options = self._dense_options()
            built: DenseIndex | CaughtUpDenseIndex | None
            with self.snapshot():  # the generation, the count and the rows from one state
                generation = self.generation()
                stamp = self._stamp()
                built = self._mapped("dense", stamp, lambda a: DenseIndex.from_arrays(
                    generation, a, complete=True, **options))
                if built is not None:
                    self.dense_loads["mapped"] += 1
                else:
                    try:
                        built = self._caught_up_dense(generation, stamp)
                    except (sqlite3.Error, OSError, ValueError, IndexError) as err:
                        _log.warning("dense catch-up of %s failed (%s); rebuilt", self.path, err)
                        built = None
                    if built is not None:
                        self.dense_loads["caught_up"] += 1
                    else:
                        rowids, vectors = self._read_vectors()
            if built is None:
                self.dense_loads["built"] += 1
                fresh = DenseIndex.build(generation, rowids, vectors, **options)
                del rowids, vectors
                built = self._saved("dense", stamp, fresh, lambda a: DenseIndex.from_arrays(
                    generation, a, **options))
            # kept only when newer: a thread in an older snapshot never replaces a newer one
            if self._matrix is None or self._matrix.generation < generation:
                self._matrix = built
                self._matrix_source = str(self._meta("index_id") or "")
            return built

    def _dense_base(self, generation: int, log_from: int) -> DenseIndex | None:
        """The last built dense index of this file of a generation in ``log_from ..
        generation - 1``: the kept one's (its base when it is itself caught up), else the
        newest older saved files (mapped); None when neither."""
        index_id = str(self._meta("index_id") or "")
        kept = self._matrix
        base = kept.base if isinstance(kept, CaughtUpDenseIndex) else kept
        if (base is not None and log_from <= base.generation < generation
                and self._matrix_source == index_id):
            return base
        if self.derived_files_from is None:
            return None
        stamp = derived_files.older(derived_folder(self.path), "dense", index_id, generation)
        if stamp is None or stamp.generation < log_from:
            return None
        options = self._dense_options()
        found = self._mapped("dense", stamp, lambda a: DenseIndex.from_arrays(
            stamp.generation, a, complete=True, **options))
        if found is None or found.size != stamp.chunks or (
                found.size and int(found.rowids[-1]) != stamp.max_rowid):
            return None
        return found

    def _caught_up_dense(self, generation: int,
                         stamp: Stamp | None) -> CaughtUpDenseIndex | None:
        """The dense index of ``generation`` (the state read; call it inside
        :meth:`snapshot`) as the last built index less the chunks logged since its
        generation plus the vectors of those of them this state holds
        (:class:`~citewise.store.dense_index.CaughtUpDenseIndex`). None, so the caller
        rebuilds, when there is no built index of this file of at least
        :attr:`dense_catch_up_from` chunks to start from, the log does not
        reach back to its generation, more than
        :data:`~citewise.store.dense_index.CATCH_UP_MAX_ROWS` (or :data:`CATCH_UP_MAX` of
        the chunks) changed since, or the log and the index do not add up (as for BM25:
        :meth:`_caught_up_bm25`)."""
        log_from = self._meta("chunk_log_from")
        if log_from is None or not self.dense_catch_up:
            return None
        base = self._dense_base(generation, int(log_from))
        if base is None or base.size < self.dense_catch_up_from:
            return None
        log = np.array(self.db.execute(
            "SELECT chunk, op FROM chunk_log WHERE generation > ? AND generation <= ? "
            "ORDER BY generation, seq", (base.generation, generation)).fetchall(),
            dtype=np.int64).reshape(-1, 2)
        if stamp is not None:
            n, top = stamp.chunks, stamp.max_rowid
        else:
            n, top = self.db.execute(
                "SELECT count(*), coalesce(max(rowid), 0) FROM chunks").fetchone()
        touched, first = np.unique(log[:, 0], return_index=True)
        if touched.shape[0] > min(CATCH_UP_MAX_ROWS,
                                  CATCH_UP_MAX * max(base.size, int(n), 1)):
            _log.debug("dense index of %s: %d chunks changed since generation %d; rebuilt",
                       self.path, touched.shape[0], base.generation)
            return None
        held = np.zeros(touched.shape[0], dtype=bool)
        held[np.searchsorted(touched, base.rowids[base.positions_of(touched)])] = True
        first_op = log[first, 1]
        if bool(np.any(held & (first_op > 0))) or bool(np.any(~held & (first_op < 0))):
            _log.info("the chunk log of %s does not fit its dense index of generation %d; "
                      "rebuilt", self.path, base.generation)
            return None
        rows = self.db.execute(
            "SELECT rowid, vector FROM chunks WHERE rowid IN (SELECT value FROM json_each(?)) "
            "ORDER BY rowid", (json.dumps(touched.tolist()),)).fetchall()
        dim = base.vectors.shape[1]
        rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        vectors = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(-1, dim)
        index = base.caught_up(generation, touched, rowids, vectors)
        newest = max(int(base.rowids[index.live_positions()[-1]]) if index.live.any() else 0,
                     int(rowids[-1]) if rowids.shape[0] else 0)
        if index.size != int(n) or (index.size and newest != int(top)):
            _log.info("dense catch-up of %s gave %d chunks, the state holds %d; rebuilt",
                      self.path, index.size, n)
            return None
        return index

    def _read_vectors(self, batch: int = 16_384) -> tuple[np.ndarray, np.ndarray]:
        """Every chunk's row key and vector, ascending by row key: int64 (n,) and float32
        (n, dim), read in batches straight into the arrays (no list of n rows held, so the
        peak is the matrix plus one batch). Call it inside :meth:`snapshot`."""
        n = int(self.db.execute("SELECT count(*) FROM chunks").fetchone()[0])
        _, dim = self.stored_model()
        rowids = np.empty(n, dtype=np.int64)
        vectors = np.empty((n, dim or 1), dtype=np.float32)
        cursor = self.db.execute("SELECT rowid, vector FROM chunks ORDER BY rowid")
        at = 0
        while rows := cursor.fetchmany(batch):
            rowids[at : at + len(rows)] = [r[0] for r in rows]
            vectors[at : at + len(rows)] = np.frombuffer(
                b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), -1)
            at += len(rows)
        return rowids, vectors

    def _hits_for_rowids(self, rowids: np.ndarray, scores: np.ndarray,
                         leg: Literal["dense", "sparse"]) -> list[Hit]:
        """Hits for int64 (n,) ``rowids`` with float (n,) ``scores`` of the ``leg`` search, in
        the given order (rows deleted meanwhile left out). The ids come from the BM25 index's
        :attr:`~citewise.store.bm25_index.BM25Index.keys` when it is that of the state
        read (call it inside :meth:`snapshot`, with ``rowids`` of that state), else from
        SQL."""
        if not len(rowids):
            return []
        index = self._bm25_kept.current(self.generation()) if self.bm25_index else None
        if index is not None and index.keys is not None:
            at = _positions(index.rowids, np.asarray(rowids, dtype=np.int64))
            if at is not None:  # always, in the state the index reflects
                return _hits(index.chunk_ids_at(at), scores, leg)
        marks = ",".join("?" * len(rowids))
        ids = dict(
            self.db.execute(
                f"SELECT rowid, id FROM chunks WHERE rowid IN ({marks})", [int(r) for r in rowids]
            )
        )
        return [
            Hit(chunk_id=ids[int(r)], score=float(s), source=leg,
                dense=float(s) if leg == "dense" else None,
                sparse=float(s) if leg == "sparse" else None)
            for r, s in zip(rowids, scores, strict=True)
            if int(r) in ids
        ]

    def _allowed_positions(self, matrix: DenseIndex | CaughtUpDenseIndex, wanted: ChunkFilter,
                           filters: Filters | None) -> np.ndarray:
        """Positions in ``matrix`` of the chunks ``wanted`` lets through, int64 ascending
        (cached on the matrix: one generation, so the same rows)."""
        cacheable = hashable(wanted)
        positions = matrix.allowed.get(wanted) if cacheable else None
        if positions is None:
            allowed = self._filter_rowids(filters)
            allowed = np.zeros(0, dtype=np.int64) if allowed is None else allowed
            positions = matrix.positions_of(allowed)
            if not cacheable:  # e.g. a ``where`` condition holding a list
                return positions
            if len(matrix.allowed) >= 16:
                matrix.allowed.pop(next(iter(matrix.allowed)))
            matrix.allowed[wanted] = positions
        return positions

    def dense_search(self, vector: np.ndarray, k: int, filters: Filters | None = None) -> list[Hit]:
        """See :meth:`Store.dense_search`: cosine top ``k`` from the
        :class:`~citewise.store.dense_index.DenseIndex` of the state read, ties by ascending
        insertion order, filters applied before the top ``k``. Exact (float32 dot products
        with every stored vector, or only with those a filter lets through) below
        ``dense_exact_below`` chunks; at or above it, int8 codes pick a shortlist of
        ``max(dense_rescore_factor * k, dense_rescore_min)`` chunks whose exact cosines give
        the top ``k`` (recall@10 >= 0.99 against exact on real embeddings, see
        docs/benchmarks.md); from ``dense_ivf_from`` chunks 4-bit codes are scanned instead,
        only in the inverted lists nearest the query (a filter's candidates counted per list),
        and the best ``max(40 * k, 1000)`` re-scored exactly.
        Raises ValueError for a query of the wrong dimension or an
        unknown filter key."""
        wanted = ChunkFilter.parse(filters)
        with self.snapshot():  # the index, the filter and the hits from one state
            matrix = self._load_matrix()
            if matrix.size == 0 or k <= 0 or (wanted is not None and wanted.matches_nothing):
                return []
            positions = None
            if wanted is not None:
                positions = self._allowed_positions(matrix, wanted, filters)
            rowids, scores = matrix.top(vector, k, positions)
            return self._hits_for_rowids(rowids, scores, "dense")

    # --- sparse ---------------------------------------------------------------------------
    def _collection_stats(self) -> tuple[int, float]:
        generation = self.generation()
        if self._stats is None or self._stats[0] != generation:
            n, total = self.db.execute("SELECT count(*), total(n_terms) FROM chunks").fetchone()
            self._stats = (generation, int(n), (total / n) if n else 0.0)
        return self._stats[1], self._stats[2]

    def term_document_frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """See :meth:`Store.term_document_frequencies`: from the BM25 index when it is that
        of the state read (a dictionary look-up per term), else from ``chunks_vocab``."""
        if self.bm25_index:
            with self.snapshot():
                index = self._bm25_kept.current(self.generation())
                if index is not None:
                    return index.size, {t: index.document_frequency(t) for t in terms}
        n_docs, _ = self._collection_stats()
        df: dict[str, int] = dict.fromkeys(terms, 0)
        for term in df:
            row = self.db.execute("SELECT doc FROM chunks_vocab WHERE term = ?", (term,)).fetchone()
            df[term] = int(row[0]) if row else 0
        return n_docs, df

    def _load_bm25_index(self) -> BM25Index:
        """The BM25 index of the committed state this thread reads: the kept one when its
        generation is the one read now; else its saved files mapped; else one caught up from
        an older index (the kept one or older saved files) through the chunk log
        (:meth:`_caught_up_bm25`); else one built from every ``chunks`` row of that state.
        Kept when it is newer than the kept one, so a thread in an older snapshot never
        replaces a newer index. Call it inside :meth:`snapshot`."""
        generation = self.generation()

        def build() -> BM25Index:
            stamp = self._stamp()
            built = self._mapped("bm25", stamp, lambda a: BM25Index.from_arrays(
                generation, a, require_ids=True))
            if built is not None:
                self.bm25_loads["mapped"] += 1
            else:
                try:
                    fresh = self._caught_up_bm25(generation, stamp)
                except (sqlite3.Error, OSError, ValueError, IndexError, KeyError,
                        TypeError) as err:  # never a wrong index: the exact rebuild
                    _log.warning("BM25 catch-up of %s failed (%s); rebuilt", self.path, err)
                    fresh = None
                if fresh is not None:
                    self.bm25_loads["caught_up"] += 1
                else:
                    self.bm25_loads["built"] += 1
                    rows = self.db.execute(
                        f"SELECT rowid, terms, n_terms, {ChunkKeys.COLUMNS} FROM chunks "
                        "ORDER BY rowid")
                    fresh = BM25Index.build(generation, rows, ids=True)
                vocabulary = fresh.vocabulary
                built = self._saved("bm25", stamp, fresh, lambda a: BM25Index.from_arrays(
                    generation, a, vocabulary=vocabulary))
            kept = self._bm25_kept.index
            self._bm25_source = {key: source for key, source in self._bm25_source.items()
                                 if kept is not None and key == id(kept)}
            self._bm25_source[id(built)] = str(self._meta("index_id") or "")
            return built

        return self._bm25_kept.get(generation, build)

    def _catch_up_base(self, generation: int, log_from: int) -> BM25Index | None:
        """An index of this file of a generation in ``log_from .. generation - 1`` to catch up
        from: the kept one, else the newest older saved files (mapped); None when neither."""
        index_id = str(self._meta("index_id") or "")
        kept = self._bm25_kept.index
        if (kept is not None and log_from <= kept.generation < generation
                and self._bm25_source.get(id(kept)) == index_id):
            return kept
        if self.derived_files_from is None:
            return None
        root = derived_folder(self.path)
        stamp = derived_files.older(root, "bm25", index_id, generation)
        if stamp is None or stamp.generation < log_from:
            return None
        base = self._mapped("bm25", stamp, lambda a: BM25Index.from_arrays(
            stamp.generation, a, require_ids=True))
        if base is None or base.size != stamp.chunks or (
                base.size and int(base.rowids[-1]) != stamp.max_rowid):
            return None
        return base

    def _caught_up_bm25(self, generation: int, stamp: Stamp | None) -> BM25Index | None:
        """The BM25 index of ``generation`` (the state read; call it inside :meth:`snapshot`)
        caught up from an older index through ``chunk_log`` (:meth:`BM25Index.caught_up`):
        the chunks logged since that index's generation are taken out and those of them in
        this state read back (only their ``terms`` rows). None, so the caller rebuilds from
        every row, when there is no older index of this file, the log does not reach back to
        its generation (``meta.chunk_log_from``: pruned, or the index is older than the log),
        more than :data:`CATCH_UP_MAX` of the chunks changed (or of its terms are held by no
        chunk any more, so the vocabulary is compacted), or anything does not add up: a
        logged insert of a chunk the index held, a logged delete of one it did not, or a
        result whose chunk count or largest row key differs from the state's."""
        log_from = self._meta("chunk_log_from")
        if log_from is None or not self.bm25_catch_up:
            return None
        base = self._catch_up_base(generation, int(log_from))
        if base is None:
            return None
        log = np.array(self.db.execute(
            "SELECT chunk, op FROM chunk_log WHERE generation > ? AND generation <= ? "
            "ORDER BY generation, seq", (base.generation, generation)).fetchall(),
            dtype=np.int64).reshape(-1, 2)
        if stamp is not None:
            n, top = stamp.chunks, stamp.max_rowid
        else:
            n, top = self.db.execute(
                "SELECT count(*), coalesce(max(rowid), 0) FROM chunks").fetchone()
        touched, first = np.unique(log[:, 0], return_index=True)
        if touched.shape[0] > CATCH_UP_MAX * max(base.size, int(n), 1):
            _log.debug("BM25 index of %s: %d chunks changed since generation %d; rebuilt",
                       self.path, touched.shape[0], base.generation)
            return None
        held = np.zeros(touched.shape[0], dtype=bool)
        held[np.searchsorted(touched, base.rowids[base.positions_of(touched)])] = True
        first_op = log[first, 1]
        if bool(np.any(held & (first_op > 0))) or bool(np.any(~held & (first_op < 0))):
            _log.info("the chunk log of %s does not fit its BM25 index of generation %d; "
                      "rebuilt", self.path, base.generation)
            return None
        keys = f", {ChunkKeys.COLUMNS}" if base.keys is not None else ""
        rows = self.db.execute(
            f"SELECT rowid, terms, n_terms{keys} FROM chunks WHERE rowid IN "
            "(SELECT value FROM json_each(?)) ORDER BY rowid", (json.dumps(touched.tolist()),))
        try:
            index = base.caught_up(generation, touched, rows)
        except ValueError as err:
            _log.info("BM25 catch-up of %s failed (%s); rebuilt", self.path, err)
            return None
        if index.size != int(n) or (index.size and int(index.rowids[-1]) != int(top)):
            _log.info("BM25 catch-up of %s gave %d chunks, the state holds %d; rebuilt",
                      self.path, index.size, n)
            return None
        empty = int(np.count_nonzero(index.indptr[1:] == index.indptr[:-1]))
        if empty > CATCH_UP_MAX * len(index.vocabulary):  # compact the vocabulary again
            _log.debug("BM25 index of %s: %d terms no chunk holds; rebuilt", self.path, empty)
            return None
        return index

    def _background_build(self) -> None:
        """Build the BM25 index of the newest committed state in a thread of its own (one at
        a time); it is kept when it is newer than the kept one."""
        with self._thread_lock:
            if self._building is not None and self._building.is_alive():
                return

            def build() -> None:
                try:
                    with self.snapshot():
                        self._load_bm25_index()
                except (sqlite3.Error, OSError) as err:  # the next search starts another
                    _log.debug("BM25 index build of %s failed: %s", self.path, err)
                finally:
                    self.close()  # this thread's connection

            self._building = threading.Thread(target=build, name="citewise-bm25-build",
                                              daemon=True)
            self._building.start()

    def bm25_index_ready(self, wait_s: float = 0.0) -> bool:
        """True when the kept BM25 index reflects the newest committed state; first waits up
        to ``wait_s`` seconds for a build running in the background (none is started)."""
        building = self._building
        if wait_s > 0 and building is not None:
            building.join(wait_s)
        return self._bm25_kept.current(self.generation()) is not None

    def sparse_search(
        self, terms: Sequence[str], k: int, filters: Filters | None = None,
        candidates: int | None = None,
    ) -> list[Hit]:
        """See :meth:`Store.sparse_search`: hits with ``sparse`` the Lucene BM25 score (>= 0,
        higher is better), at most ``k``, ties by insertion order.

        By default (``bm25_index``) every chunk holding a query term is scored from the
        in-memory :class:`~citewise.store.bm25_index.BM25Index` of the state read (loaded
        on the first search after any committed write, by this process or another: caught
        up from the older index and the chunk log, or built from every row when that cannot
        be done, see :meth:`_caught_up_bm25`), filters applied before the top ``k``. While
        that index is missing or older than the state read and ``bm25_build`` is
        ``background``, a thread loads it and this search takes the FTS5 path below. With ``candidates``, or ``bm25_index=False``, FTS5
        ranks the matching chunks with its own BM25 and keeps ``candidates`` (default
        ``max(5 * k, 300)``), which are then scored exactly by :func:`bm25_scores` (the same
        scores; a chunk FTS5 ranks below the cut is missed). Raises ValueError for an
        unknown filter key."""
        if not self.bm25_index or candidates is not None:
            return self._fts_sparse_search(terms, k, filters, candidates)
        query_tf = query_counts(terms)
        wanted = ChunkFilter.parse(filters)
        if not query_tf or k <= 0 or (wanted is not None and wanted.matches_nothing):
            return []
        with self.snapshot():  # the generation, the filter and the hits from one state
            index = self._bm25_kept.current(self.generation())
            if index is None:
                if self.bm25_build == "background":
                    self._background_build()
                    return self._fts_sparse_search(terms, k, filters, candidates)
                index = self._load_bm25_index()
            mask = None
            if wanted is not None:
                mask = index.cached_mask(wanted)
                if mask is None:
                    mask = index.cached_mask(wanted, self._filter_rowids(filters))
            at, scores = index.top_positions(query_tf, k, mask)
            if index.keys is not None:  # the ids of the state read, no SQL
                return _hits(index.chunk_ids_at(at), scores, "sparse")
            return self._hits_for_rowids(np.asarray(index.rowids)[at], scores, "sparse")

    def _fts_sparse_search(
        self, terms: Sequence[str], k: int, filters: Filters | None = None,
        candidates: int | None = None,
    ) -> list[Hit]:
        """BM25 through FTS5 candidates re-scored exactly (see :meth:`sparse_search`)."""
        query_tf = Counter(t for t in terms if t)
        if not query_tf or k <= 0:
            return []
        n_docs, avgdl = self._collection_stats()
        if n_docs == 0:
            return []
        _, df = self.term_document_frequencies(list(query_tf))
        present = [t for t in query_tf if df[t] > 0]
        if not present:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in present)
        limit = candidates or max(5 * k, 300)
        # filters are joined, not bound as a list of allowed rowids: that list had one SQL
        # variable per chunk (an error past SQLite's 32,766) and made FTS5 test each match
        # against it (seconds per query at 11k chunks)
        where = self._filter_clauses(filters)
        if where is None:
            sql = "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?"
            params: list[object] = [match, limit]
        else:
            clauses, extra = where
            sql = ("SELECT f.rowid FROM chunks_fts f JOIN chunks c ON c.rowid = f.rowid "
                   "JOIN documents d ON d.id = c.document_id WHERE chunks_fts MATCH ? AND "
                   + " AND ".join(clauses) + " ORDER BY f.rank LIMIT ?")
            params = [match, *extra, limit]
        rowids = [r[0] for r in self.db.execute(sql, params)]
        if not rowids:
            return []
        marks = ",".join("?" * len(rowids))
        rows = self.db.execute(
            f"SELECT rowid, terms, n_terms FROM chunks WHERE rowid IN ({marks})", rowids
        ).fetchall()
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        dl = np.array([r[2] for r in rows], dtype=np.float64)
        # tokens are separated by one space; doubling the spaces lets str.count see every
        # occurrence of " t " (adjacent repeats would otherwise share a space)
        padded = [f" {r[1]} ".replace(" ", "  ") for r in rows]
        scores = np.zeros(len(rows), dtype=np.float64)
        for term in present:
            needle = f" {term} "
            tf = np.array([p.count(needle) for p in padded], dtype=np.float64)
            scores += query_tf[term] * bm25_scores(tf, dl, df[term], n_docs, avgdl)
        order = np.argsort(-scores, kind="stable")[:k]
        order = order[scores[order] > 0]
        return self._hits_for_rowids(ids[order], scores[order], "sparse")
