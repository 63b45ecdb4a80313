"""The scale-out store: PostgreSQL with pgvector (``CITEWISE_STORE=postgresql://...``).

Design
------
* ``documents`` and ``chunks`` hold the same columns as the SQLite store (text, location, the
  analysed BM25 text ``terms`` and its token count ``n_terms``); each chunk also has ``seq``, an
  identity number in insertion order (the SQLite store's ``rowid``) that breaks score ties the
  same way, and ``embedding``, a pgvector ``vector(dim)`` searched through an HNSW index with
  cosine distance. The column's dimension and the index are set by
  :meth:`PostgresStore.bind_model` (pgvector indexes need a fixed dimension). pgvector's HNSW
  index takes at most 2,000 dimensions of ``vector`` and 4,000 of ``halfvec`` (case N10): up to
  2,000 dimensions the index is on the column (``vector_cosine_ops``); from 2,001 to 4,000 it
  is on the column cast to ``halfvec(dim)`` (``halfvec_cosine_ops``, 16-bit floats), the
  column itself keeps 32-bit floats, and the candidates found through the index are scored
  exactly. A model of more dimensions is refused by :func:`check_dimension` when the store is
  bound to it, before anything is written.
* BM25 runs in SQL over term statistics kept in tables, maintained in the same transaction as
  the chunks: ``postings(term, chunk, tf, dl)`` (one row per distinct term of a chunk, with the
  term's count and the chunk's length in tokens, so scoring reads only this table's primary
  key), ``term_stats(term, df)`` and the one-row ``collection_stats`` (chunk count, total
  tokens, and ``generation``, bumped by every write). The formula is the SQLite store's,
  :func:`citewise.store.bm25.bm25_scores` (Lucene's smoothed IDF, k1=0.9, b=0.4), with
  every matching chunk scored exactly, so both stores rank the same data the same way.
  Tokens come from :mod:`citewise.text.analysis`, as for SQLite; PostgreSQL's own text
  search is not used (``ts_rank`` is not BM25). With ``bm25_index`` (opt-in,
  ``CITEWISE_POSTGRES_BM25_INDEX``) each process answers BM25 from the SQLite store's
  in-memory postings index (:class:`~citewise.store.bm25_index.BM25Index`), built from
  ``chunks.terms`` once per ``generation`` inside the query's snapshot, so it never serves a
  deleted chunk nor misses a committed one (a write by any process bumps the generation);
  the same scores, every matching chunk scored, without reading the postings rows.
* ``chunks.language`` is each chunk's detected language (ISO 639-1), for language routing and
  the ``language`` filter.
* ``citewise_meta`` holds the embedding model name and dimension and the analyzer version of
  the BM25 terms (``analyzer``, as in the SQLite store); ``citewise_migrations``
  records each named migration (``m001_initial``...) applied, in order, once (by
  :func:`citewise.store.migrations.run_migrations`).

Writes: every document upsert or delete is one transaction (READ COMMITTED) that first takes
transaction-level advisory locks on the document's id and source path, so two writers of the
same document queue instead of colliding. Writers of different documents run concurrently;
they update shared ``term_stats`` rows in term order and ``collection_stats`` last, so they
cannot deadlock each other (a deadlock or serialization failure is retried anyway).
:meth:`PostgresStore.snapshot` opens a REPEATABLE READ transaction, so the reads of one query
see one committed state. Each thread gets its own connection.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from citewise.config import libpq_url, redact_url
from citewise.errors import ConfigError, EmptyDocumentError, IndexError_
from citewise.store.base import Filters, IndexInfo, TermIncidence, nested_read_transaction
from citewise.store.bm25 import BM25Stats, idf_sql, term_score_sql
from citewise.store.bm25_index import BM25Index, KeptIndex, query_counts
from citewise.store.migrations import named, pending, run_migrations
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

try:
    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg import errors as pg_errors
except ModuleNotFoundError as _err:  # pragma: no cover - depends on the installed extras
    raise ModuleNotFoundError(
        f"the PostgreSQL store needs psycopg and pgvector ({_err.name} is missing): "
        "pip install 'citewise[postgres]'"
    ) from _err

#: Largest dimension pgvector's HNSW index accepts for the ``vector`` type.
HNSW_MAX_DIM = 2000
#: Largest dimension pgvector's HNSW index accepts for ``halfvec`` (16-bit floats).
HALFVEC_MAX_DIM = 4000
_MIGRATION_LOCK = 0x63697465  # advisory lock key held while migrating ("cite")
_BULK_LOCK = 0x62756C6B  # session advisory lock key held by a bulk load ("bulk")
_RETRIES = 5
#: Least ``maintenance_work_mem`` for building the HNSW index in :meth:`PostgresStore.bulk_load`.
BUILD_MEMORY = "1GB"


def check_dimension(dim: int, model: str = "") -> None:
    """Raise ConfigError when pgvector cannot index ``dim``-dimensional vectors with HNSW
    (more than :data:`HALFVEC_MAX_DIM`), naming the settings that fix it; called by
    :meth:`PostgresStore.bind_model` before anything is written."""
    if 1 <= dim <= HALFVEC_MAX_DIM:
        return
    named = f"the embedding model {model!r}" if model else "the embedding model"
    raise ConfigError(
        f"{named} makes {dim}-dimensional vectors; the PostgreSQL store (CITEWISE_STORE) "
        f"indexes at most {HALFVEC_MAX_DIM} dimensions (pgvector HNSW: {HNSW_MAX_DIM} as "
        f"vector, {HALFVEC_MAX_DIM} as halfvec). Set CITEWISE_EMBEDDING_MODEL to a model of "
        f"at most {HALFVEC_MAX_DIM} dimensions, or use the SQLite store (CITEWISE_STORE empty "
        "or a folder path), which takes any dimension")


def _index_expression(dim: int) -> tuple[str, str]:
    """``(indexed expression, operator class)`` of the HNSW index for ``dim`` dimensions:
    the column itself up to :data:`HNSW_MAX_DIM`, else the column cast to ``halfvec``."""
    if dim <= HNSW_MAX_DIM:
        return "embedding", "vector_cosine_ops"
    return f"(embedding::halfvec({int(dim)}))", "halfvec_cosine_ops"


def m001_initial(cur: psycopg.Cursor[Any]) -> None:
    """pgvector, documents, chunks (text, location, BM25 terms, vector), postings, term and
    collection statistics, and meta."""
    cur.execute("CREATE EXTENSION IF NOT EXISTS vector")
    cur.execute("CREATE TABLE citewise_meta (key text PRIMARY KEY, value text NOT NULL)")
    cur.execute("""
        CREATE TABLE documents (
        id text PRIMARY KEY,
        path text NOT NULL,
        source_path text NOT NULL UNIQUE,
        title text NOT NULL,
        format text NOT NULL,
        content_hash text NOT NULL,
        chunk_count integer NOT NULL,
        pages integer,
        metadata text NOT NULL DEFAULT '{}',
        warnings text NOT NULL DEFAULT '[]',
        indexed_at double precision NOT NULL,
        status text NOT NULL DEFAULT 'indexed',
        error text NOT NULL DEFAULT ''
        )""")
    cur.execute("CREATE INDEX documents_path ON documents (path text_pattern_ops)")
    cur.execute("""
        CREATE TABLE chunks (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id text NOT NULL UNIQUE,
        document_id text NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        ordinal integer NOT NULL,
        text text NOT NULL,
        source_text text NOT NULL,
        char_start integer NOT NULL,
        char_end integer NOT NULL,
        section text NOT NULL DEFAULT '[]',
        page integer, page_end integer, line_start integer, line_end integer,
        symbol text,
        content_hash text NOT NULL,
        token_count integer NOT NULL,
        terms text NOT NULL,
        n_terms integer NOT NULL,
        embedding vector NOT NULL
        )""")
    cur.execute("CREATE INDEX chunks_document ON chunks (document_id, ordinal)")
    cur.execute("CREATE INDEX chunks_content_hash ON chunks (content_hash)")
    # no foreign key to chunks: the store deletes a chunk's postings itself, in the same
    # transaction, by primary key (a foreign key would need a second index on chunk)
    cur.execute("""
        CREATE TABLE postings (
        term text NOT NULL,
        chunk bigint NOT NULL,
        tf integer NOT NULL,
        dl integer NOT NULL,
        PRIMARY KEY (term, chunk) INCLUDE (tf, dl)
        )""")
    cur.execute("CREATE TABLE term_stats (term text PRIMARY KEY, df bigint NOT NULL)")
    cur.execute("""
        CREATE TABLE collection_stats (
        id integer PRIMARY KEY CHECK (id = 1),
        chunks bigint NOT NULL,
        total_terms bigint NOT NULL,
        generation bigint NOT NULL
        )""")
    cur.execute("INSERT INTO collection_stats VALUES (1, 0, 0, 0)")


def m002_collection(cur: psycopg.Cursor[Any]) -> None:
    """The collection of each document (access control per collection); existing documents
    are in ``default``."""
    cur.execute("ALTER TABLE documents ADD COLUMN collection text NOT NULL DEFAULT 'default'")
    cur.execute("CREATE INDEX documents_collection ON documents (collection)")



def m003_chunk_language(cur: psycopg.Cursor[Any]) -> None:
    """Each chunk's detected language (``''`` for chunks indexed before), and the analyzer
    version ``1`` for an existing index's BM25 terms (so it is re-analysed before use)."""
    cur.execute("ALTER TABLE chunks ADD COLUMN language text NOT NULL DEFAULT ''")
    cur.execute("CREATE INDEX chunks_language ON chunks (language)")
    cur.execute("INSERT INTO citewise_meta SELECT 'analyzer', '1' "
                "WHERE EXISTS (SELECT 1 FROM chunks)")


def m004_chunk_page_starts(cur: psycopg.Cursor[Any]) -> None:
    """Where each page begins inside a chunk that spans pages (JSON ``[[offset, page], ...]``,
    ``[]`` for one page or chunks indexed before), so a citation names the cited part's page."""
    cur.execute("ALTER TABLE chunks ADD COLUMN page_starts text NOT NULL DEFAULT '[]'")


def m005_document_error_kind(cur: psycopg.Cursor[Any]) -> None:
    """Each failed document's kind of failure (``documents.error_kind``, see
    :attr:`citewise.errors.DocumentError.kind`); failures recorded before are ``''``, except
    empty files, recognised once here by the sentence every empty-file message ends with."""
    cur.execute("ALTER TABLE documents ADD COLUMN error_kind text NOT NULL DEFAULT ''")
    cur.execute("UPDATE documents SET error_kind = %s WHERE status = 'failed' "
                "AND strpos(error, %s) > 0", (EmptyDocumentError.kind, EmptyDocumentError.remedy))


def m006_inline_vectors(cur: psycopg.Cursor[Any]) -> None:
    """Vectors kept in the chunk's row (``STORAGE MAIN``) instead of pgvector's default
    ``EXTERNAL``, which moved them into the TOAST table whenever a row passed 2 kB (most rows:
    a 384-d vector is 1.5 kB, and the text and terms come with it). Reading a document's
    vectors then took a TOAST index lookup per chunk: 310 buffers for a 100-chunk document
    against 25 inline (docs/benchmarks.md). The text columns, compressible, go to TOAST
    first instead. Only rows written afterwards move; ``VACUUM FULL chunks`` rewrites the
    older ones (it locks the table and rebuilds its indexes, HNSW included)."""
    cur.execute("ALTER TABLE chunks ALTER COLUMN embedding SET STORAGE MAIN")


MIGRATIONS: list[Callable[[psycopg.Cursor[Any]], None]] = [m001_initial, m002_collection,
                                                             m003_chunk_language,
                                                             m004_chunk_page_starts,
                                                             m005_document_error_kind,
                                                             m006_inline_vectors]
_STEPS = named(MIGRATIONS)


class MigrationTable:
    """The index's migration ledger: one ``citewise_migrations`` row per applied migration
    (its name and when it was applied)."""

    def applied(self, cur: psycopg.Cursor[Any]) -> set[str]:
        """The names recorded in ``citewise_migrations`` (created empty when missing)."""
        cur.execute("CREATE TABLE IF NOT EXISTS citewise_migrations "
                    "(name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
        return {r[0] for r in cur.execute("SELECT name FROM citewise_migrations")}

    def record(self, cur: psycopg.Cursor[Any], name: str, position: int) -> None:
        """Add ``name``'s row."""
        cur.execute("INSERT INTO citewise_migrations (name) VALUES (%s)", (name,))

_CHUNK_COLS = chunk_cols("seq")
_CHUNK_INSERT = insert_sql("chunks", chunk_insert_columns("embedding"), "%s") + " RETURNING seq"
_DOCUMENT_INSERT = insert_sql("documents", DOCUMENT_COLUMNS, "%s")

#: One query term's BM25 contribution to one chunk, evaluated in the same order as
#: :func:`citewise.store.bm25.bm25_scores` (left to right, float8): ``qtf * (idf * tf * (k1 +
#: 1) / (tf + k1 * (1 - b + b * dl / avgdl)))``.
_TERM_SCORE = term_score_sql("q.qtf", "q.idf", "p.tf", "p.dl", "s.avgdl")

#: BM25 top-k in SQL; ``{filter}`` is "" or ``WHERE`` a condition on ``p.chunk``. Parameters:
#: the query terms (first-occurrence order), their counts in the query, the filter's
#: parameters, k - 1 (the offset of the k-th score), then k. ``idf = ln(1 + (N - df + 0.5) /
#: (df + 0.5))`` (Lucene's smoothed IDF). Step ``a`` scores every chunk holding a query term
#: (hash aggregate: terms summed in whatever order the join yields); step ``exact`` re-sums the
#: few chunks within 1e-9 of the k-th score in query-term order, which is the SQLite store's
#: order, so both stores give bit-identical scores and therefore the same order among ties.
_BM25_SQL = f"""
WITH s AS (
    SELECT chunks::float8 AS n, total_terms::float8 / greatest(chunks, 1) AS avgdl
    FROM collection_stats WHERE id = 1
), q AS MATERIALIZED (
    SELECT q.ord, q.term, q.qtf::float8 AS qtf,
           {idf_sql('s.n', 't.df')} AS idf
    FROM unnest(%s::text[], %s::int[]) WITH ORDINALITY AS q(term, qtf, ord)
    JOIN term_stats t ON t.term = q.term, s
    WHERE t.df > 0
)"""

#: The scoring steps after ``s`` (N, avgdl) and ``q`` (the query terms and their idf).
_BM25_SCORING = f""", a AS MATERIALIZED (
    SELECT p.chunk, sum({_TERM_SCORE}) AS score
    FROM q JOIN postings p ON p.term = q.term, s
    {{filter}}
    GROUP BY p.chunk
), cut AS (
    SELECT score FROM a ORDER BY score DESC OFFSET %s LIMIT 1
), exact AS (
    SELECT p.chunk, sum({_TERM_SCORE} ORDER BY q.ord) AS score
    FROM a JOIN q ON true JOIN postings p ON p.term = q.term AND p.chunk = a.chunk, s
    WHERE a.score >= coalesce((SELECT score FROM cut), 0) * (1 - 1e-9)
    GROUP BY p.chunk
)
SELECT c.id, x.score FROM exact x JOIN chunks c ON c.seq = x.chunk
WHERE x.score > 0
ORDER BY x.score DESC, x.chunk
LIMIT %s
"""
_BM25_SQL += _BM25_SCORING

#: :data:`_BM25_SQL` scoring with given collection statistics (a sharded collection's global
#: ones, :class:`~citewise.store.bm25.BM25Stats`) instead of this database's. Parameters: the
#: chunk count, the token count, the chunk count again, the query terms, their counts in the
#: query, their document frequencies, then as :data:`_BM25_SQL` after its first two. The same
#: float8 expressions in the same order as :data:`_BM25_SQL`, so a shard's scores are those of
#: one server holding every shard's chunks, to the last bit.
_BM25_GIVEN_SQL = f"""
WITH s AS (
    SELECT %s::bigint::float8 AS n, %s::bigint::float8 / greatest(%s::bigint, 1) AS avgdl
), q AS MATERIALIZED (
    SELECT q.ord, q.term, q.qtf::float8 AS qtf,
           {idf_sql('s.n', 'q.df')} AS idf
    FROM unnest(%s::text[], %s::int[], %s::bigint[]) WITH ORDINALITY AS q(term, qtf, df, ord), s
    WHERE q.df > 0
)""" + _BM25_SCORING


@dataclass
class _Removed:
    """What :meth:`PostgresStore._remove` took out: documents, chunks, tokens and the
    document frequency of each term."""

    documents: int = 0
    chunks: int = 0
    tokens: int = 0
    df: Counter[str] = field(default_factory=Counter)


@dataclass
class Session:
    """One thread's use of a :class:`PostgresStore`: its connection and how deep it is in
    :meth:`PostgresStore.snapshot` (see :meth:`PostgresStore.acting_for`)."""

    conn: psycopg.Connection[Any] | None
    depth: int


def _row(cursor: psycopg.Cursor[Any]) -> Any:
    """The row of a query that always returns one (an aggregate, the one-row statistics
    table); AssertionError when it returned none."""
    row = cursor.fetchone()
    assert row is not None
    return row


def _vec(value: Any) -> np.ndarray:
    """A pgvector value as float32 (dim,) (pgvector-python returns ``Vector`` objects)."""
    to_numpy = getattr(value, "to_numpy", None)
    return np.asarray(to_numpy() if to_numpy else value, dtype=np.float32)


class PostgresStore(SQLStore):
    """The :class:`~citewise.store.base.Store` on a PostgreSQL database with pgvector.

    ``url``: a libpq URL (``postgresql://user:pass@host:5432/db``). ``ef_search``: HNSW
    candidate list size per query (pgvector's ``hnsw.ef_search``, at least ``k`` is used);
    higher is slower and closer to exact. Opening creates or migrates the schema. Safe to share
    between threads (one connection per thread) and between processes. Raises IndexError_ when
    the server cannot be reached or the schema cannot be created.
    """

    MARK = "%s"
    META_TABLE = "citewise_meta"
    KEY = "seq"
    PATH_ORDER = 'd.path COLLATE "C"'

    def __init__(self, url: str, *, ef_search: int = 100, hnsw_m: int = 16,
                 hnsw_ef_construction: int = 64, bm25_index: bool = False,
                 bm25_build: Literal["background", "wait"] = "background") -> None:
        self.url = libpq_url(url)
        #: BM25 from an in-memory postings index per generation (see the module docstring);
        #: False: in SQL over ``postings``
        self.bm25_index = bm25_index
        #: a missing or older index: ``background`` builds it in a thread while SQL answers,
        #: ``wait`` builds it first
        self.bm25_build = bm25_build
        self._bm25_kept = KeptIndex()
        self._building: threading.Thread | None = None
        self._thread_lock = threading.Lock()
        self.ef_search = ef_search
        self.hnsw_m, self.hnsw_ef_construction = hnsw_m, hnsw_ef_construction
        self._local = threading.local()
        self._all: list[psycopg.Connection[Any]] = []
        self._all_lock = threading.Lock()
        try:
            with psycopg.connect(self.url, autocommit=True) as conn:
                self._migrate(conn)
                if conn.execute("SELECT pg_is_in_recovery()").fetchone() == (False,):
                    self._finish_interrupted_bulk_load(conn)
        except psycopg.Error as err:
            raise IndexError_(
                f"cannot open the PostgreSQL index at {redact_url(self.url)} ({err}); check "
                "CITEWISE_STORE and that the server runs and has the pgvector extension"
            ) from None

    # --- connection and schema ------------------------------------------------------------
    @property
    def db(self) -> psycopg.Connection[Any]:
        """This thread's connection (autocommit; transactions are opened explicitly)."""
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.closed:
            conn = psycopg.connect(self.url, autocommit=True)
            register_vector(conn)
            conn.execute("SELECT set_config('hnsw.iterative_scan', 'strict_order', false)")
            self._local.conn = conn
            with self._all_lock:
                self._all.append(conn)
        return conn

    @staticmethod
    def _migrate(conn: psycopg.Connection[Any]) -> None:
        """Apply the migrations not yet recorded, in order, under an advisory lock. On a
        read-only hot standby (a streaming replica) nothing can be written: the schema the
        primary replicated is checked instead, and a missing migration raises IndexError_."""
        if conn.execute("SELECT pg_is_in_recovery()").fetchone() == (True,):
            present = conn.execute("SELECT to_regclass('citewise_migrations') IS NOT NULL"
                                   ).fetchone() == (True,)
            done = ({r[0] for r in conn.execute("SELECT name FROM citewise_migrations")}
                    if present else set())
            missing = pending(_STEPS, done)
            if missing:
                raise IndexError_(
                    f"the read-only replica lacks schema migrations {missing}; open the index "
                    "on the primary once (any citewise command) so they replicate"
                )
            return
        with conn.transaction(), conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            run_migrations(cur, _STEPS, MigrationTable())

    def migrations(self) -> list[str]:
        """Names of the applied migrations, in the order they were applied."""
        rows = self.db.execute("SELECT name FROM citewise_migrations ORDER BY applied_at, name")
        return [r[0] for r in rows]

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Run the reads inside in one REPEATABLE READ transaction: they all see the same
        committed state (re-entrant per thread)."""
        with nested_read_transaction(self._local, self.db.execute, "BEGIN ISOLATION LEVEL REPEATABLE READ"):
            yield

    @contextmanager
    def _write(self, *lock_keys: str) -> Iterator[psycopg.Cursor[Any]]:
        """One write transaction holding advisory locks on ``lock_keys`` (taken in sorted
        order, so two writers never wait on each other in a cycle)."""
        with self.db.transaction(), self.db.cursor() as cur:
            for key in sorted(set(lock_keys)):
                cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (key,))
            yield cur

    def _retrying(self, write: Callable[[], Any]) -> Any:
        """Run ``write`` again when PostgreSQL aborted it for a deadlock or serialization
        failure (only outside an enclosing transaction, which the abort also ended)."""
        for attempt in range(_RETRIES):
            try:
                return write()
            except (pg_errors.DeadlockDetected, pg_errors.SerializationFailure):
                if attempt == _RETRIES - 1 or getattr(self._local, "depth", 0) != 0:
                    raise
                time.sleep(0.01 * 2**attempt)
        raise AssertionError("unreachable")

    def generation(self) -> int:
        """A counter bumped by every committed write."""
        return int(_row(self.db.execute("SELECT generation FROM collection_stats WHERE id = 1"))[0])

    def close(self) -> None:
        """Close every connection this store opened (in any thread)."""
        with self._all_lock:
            conns, self._all = self._all, []
        for conn in conns:
            conn.close()
        self._local = threading.local()

    def __del__(self) -> None:
        # a store dropped without close() (an Engine at the end of a CLI command) still hangs
        # up its connections instead of leaving them to the garbage collector
        try:
            self.close()
        except Exception:  # noqa: BLE001, S110 - interpreter shutdown: nothing left to do
            pass

    # --- model binding --------------------------------------------------------------------
    def bind_model(self, name: str, dim: int) -> None:
        """See :meth:`Store.bind_model`. On an empty index this also fixes the vector column's
        dimension and builds the HNSW cosine index (on ``halfvec`` above
        :data:`HNSW_MAX_DIM`), all in one transaction: a failure anywhere leaves the old
        column, index and binding. Raises ConfigError, before any change, for more than
        :data:`HALFVEC_MAX_DIM` dimensions (:func:`check_dimension`)."""
        check_dimension(dim, name)
        with self._write("citewise:model") as cur:
            has_chunks = cur.execute("SELECT 1 FROM chunks LIMIT 1").fetchone() is not None
            check_model_binding(self._meta("embedding_model"), self._meta("dimension"),
                                has_chunks, name, dim)
            column_dim = _row(cur.execute(
                "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'chunks'::regclass "
                "AND attname = 'embedding'"))[0]
            if column_dim != dim and not has_chunks:
                cur.execute("DROP INDEX IF EXISTS chunks_embedding_hnsw")
                cur.execute(f"ALTER TABLE chunks ALTER COLUMN embedding TYPE vector({int(dim)})")
                # a new type resets the column's storage to the type's (m006_inline_vectors)
                cur.execute("ALTER TABLE chunks ALTER COLUMN embedding SET STORAGE MAIN")
                self._create_hnsw(cur, dim)
            elif not has_chunks and _row(cur.execute(
                    "SELECT to_regclass('chunks_embedding_hnsw') IS NULL"))[0]:
                # an empty index of a dimension that had no HNSW index before halfvec was
                # used (2,001-4,000): ``citewise reindex`` gets one
                self._create_hnsw(cur, dim)
            for key, value in (("embedding_model", name), ("dimension", str(dim))):
                cur.execute("INSERT INTO citewise_meta VALUES (%s, %s) ON CONFLICT (key) "
                            "DO UPDATE SET value = EXCLUDED.value", (key, value))

    def _create_hnsw(self, cur: psycopg.Cursor[Any], dim: int) -> None:
        expression, opclass = _index_expression(dim)
        cur.execute(
            f"CREATE INDEX IF NOT EXISTS chunks_embedding_hnsw ON chunks USING hnsw "
            f"({expression} {opclass}) WITH (m = {int(self.hnsw_m)}, "
            f"ef_construction = {int(self.hnsw_ef_construction)})")

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Write many documents without maintaining the large indexes row by row: on entry
        the HNSW index is dropped and, when the store holds no chunk yet, so is the
        ``postings`` primary key (about 90 B-tree entries per chunk, inserted in term order
        all over the tree: at 1M chunks that maintenance, not the rows, set the write rate);
        on exit both are built once from the sorted rows (several times faster for a large
        load, as pgvector's and PostgreSQL's documentation advise for bulk loads).
        Meanwhile dense search is exact and SQL BM25 reads the postings without their key,
        hence both slower, with the same results. Used by ``citewise migrate``; the indexes
        are rebuilt even when the load fails, and a load whose process died (a kill, a lost
        connection) is finished by the next :class:`PostgresStore` opened on the database
        (:meth:`_finish_interrupted_bulk_load`, told by the ``bulk_load`` row of
        ``citewise_meta``). A second bulk load waits for the first (a session advisory
        lock). The builds get ``maintenance_work_mem`` of at least :data:`BUILD_MEMORY` (a
        larger server or role setting is kept: pgvector builds much faster while the graph
        fits in it)."""
        _, dim = self.stored_model()
        if dim is None:
            yield
            return
        conn = self.db
        conn.execute("SELECT pg_advisory_lock(%s)", (_BULK_LOCK,))
        try:
            with conn.transaction(), conn.cursor() as cur:
                empty = _row(cur.execute("SELECT NOT EXISTS (SELECT 1 FROM chunks)"))[0]
                dropped = ["hnsw", "postings_pkey"] if empty else ["hnsw"]
                cur.execute("INSERT INTO citewise_meta VALUES ('bulk_load', %s) ON CONFLICT "
                            "(key) DO UPDATE SET value = EXCLUDED.value", (",".join(dropped),))
                cur.execute("DROP INDEX IF EXISTS chunks_embedding_hnsw")
                if empty:
                    cur.execute("ALTER TABLE postings DROP CONSTRAINT IF EXISTS postings_pkey")
            try:
                yield
            finally:
                self._build_dropped(conn, dim, dropped)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_BULK_LOCK,))

    def _build_dropped(self, conn: psycopg.Connection[Any], dim: int,
                       dropped: Sequence[str]) -> None:
        """Build the indexes a bulk load dropped (``hnsw``, ``postings_pkey``) and delete
        the ``bulk_load`` marker, in one transaction with ``maintenance_work_mem`` of at
        least :data:`BUILD_MEMORY`."""
        with conn.transaction(), conn.cursor() as cur:
            cur.execute(
                "SELECT set_config('maintenance_work_mem', %s, true) WHERE pg_size_bytes("
                "current_setting('maintenance_work_mem')) < pg_size_bytes(%s)",
                (BUILD_MEMORY, BUILD_MEMORY))
            if "postings_pkey" in dropped and _row(cur.execute(
                    "SELECT to_regclass('postings_pkey') IS NULL"))[0]:
                cur.execute("ALTER TABLE postings ADD CONSTRAINT postings_pkey "
                            "PRIMARY KEY (term, chunk) INCLUDE (tf, dl)")
            if "hnsw" in dropped and dim <= HALFVEC_MAX_DIM:
                self._create_hnsw(cur, dim)
            cur.execute("DELETE FROM citewise_meta WHERE key = 'bulk_load'")

    def _finish_interrupted_bulk_load(self, conn: psycopg.Connection[Any]) -> None:
        """Build the indexes of a bulk load whose process died before its end (the
        ``bulk_load`` row of ``citewise_meta`` names them), unless a bulk load is under way
        in a live session (it holds the advisory lock and builds them itself). Logs a
        warning first: at 1M chunks the builds take minutes."""
        if self._meta("bulk_load") is None or not _row(
                conn.execute("SELECT pg_try_advisory_lock(%s)", (_BULK_LOCK,)))[0]:
            return
        try:  # read again under the lock: a load that just ended has deleted the row
            dropped, (_, dim) = self._meta("bulk_load"), self.stored_model()
            if dropped is not None and dim is not None:
                _log.warning("a bulk load into %s ended before building its indexes (%s); "
                             "building them now", redact_url(self.url), dropped)
                self._build_dropped(conn, dim, dropped.split(","))
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_BULK_LOCK,))

    def bind_analyzer(self, version: str, *, force: bool = False) -> None:
        """See :meth:`Store.bind_analyzer`."""
        with self._write("citewise:model") as cur:
            has_chunks = cur.execute("SELECT 1 FROM chunks LIMIT 1").fetchone() is not None
            check_analyzer_binding(self._meta("analyzer"), has_chunks, version, force)
            cur.execute("INSERT INTO citewise_meta VALUES ('analyzer', %s) ON CONFLICT (key) "
                        "DO UPDATE SET value = EXCLUDED.value", (version,))


    def mark_unfinished(self, note: str | None) -> None:
        """See :meth:`Store.mark_unfinished`."""
        with self._write("citewise:model") as cur:
            cur.execute("DELETE FROM citewise_meta WHERE key = 'unfinished'")
            if note is not None:
                cur.execute("INSERT INTO citewise_meta VALUES ('unfinished', %s)", (note,))

    # --- writes ---------------------------------------------------------------------------
    def upsert_document(
        self, document: Document, chunks: Sequence[Chunk], vectors: np.ndarray,
        terms: Sequence[str] | None = None,
    ) -> None:
        """See :meth:`Store.upsert_document`. ``terms``: analysed BM25 text per chunk
        (computed from ``chunk.text`` when omitted). Raises ValueError on a shape mismatch and
        psycopg's errors (for example UniqueViolation for a chunk id held by another document)
        after rolling the whole write back."""
        vectors = checked_vectors(chunks, vectors, self.stored_model()[1], np.float32)
        terms = analysed_terms(chunks, terms)
        counts = [Counter(t.split()) for t in terms]
        if len(counts) != len(chunks):
            raise ValueError(f"{len(counts)} terms strings for {len(chunks)} chunks")
        self._retrying(lambda: self._upsert(document, chunks, vectors, terms, counts))

    def _upsert(self, document: Document, chunks: Sequence[Chunk], vectors: np.ndarray,
                terms: Sequence[str], counts: list[Counter[str]]) -> None:
        doc_key, path_key = f"doc:{document.id}", f"path:{document.source_path}"
        with self._write(doc_key, path_key) as cur:
            removed = self._remove(cur, "d.id = %s OR d.source_path = %s",
                                   (document.id, document.source_path))
            cur.execute(_DOCUMENT_INSERT, document_values(document, len(chunks)))
            seqs: list[int] = []
            if chunks:
                cur.executemany(_CHUNK_INSERT, [
                    chunk_values(c, document.id, t, sum(n.values()), vectors[i])
                    for i, (c, t, n) in enumerate(zip(chunks, terms, counts, strict=True))
                ], returning=True)
                while True:
                    seqs.append(cur.fetchone()[0])  # type: ignore[index]
                    if not cur.nextset():
                        break
            df_delta: Counter[str] = Counter()
            if seqs:
                with cur.copy("COPY postings (term, chunk, tf, dl) FROM STDIN") as copy:
                    for seq, tf in zip(seqs, counts, strict=True):
                        dl = sum(tf.values())
                        for term, n in tf.items():
                            copy.write_row((term, seq, n, dl))
                        df_delta.update(tf.keys())
            df_delta.subtract(removed.df)
            self._apply_stats(cur, df_delta, len(chunks) - removed.chunks,
                              sum(len(t.split()) for t in terms) - removed.tokens)

    def _remove(self, cur: psycopg.Cursor[Any], where: str,
                params: Sequence[Any]) -> _Removed:
        """Delete the documents matching ``where`` (over ``documents d``) with their chunks
        and postings, inside the caller's transaction."""
        removed = _Removed()
        rows = cur.execute(
            f"SELECT c.seq, c.terms FROM chunks c JOIN documents d ON d.id = c.document_id "
            f"WHERE {where}", params).fetchall()
        p_terms: list[str] = []
        p_chunks: list[int] = []
        for seq, text in rows:
            tokens = text.split()
            distinct = set(tokens)
            removed.chunks += 1
            removed.tokens += len(tokens)
            removed.df.update(distinct)
            p_terms.extend(distinct)
            p_chunks.extend([seq] * len(distinct))
        if p_terms:
            cur.execute(
                "DELETE FROM postings p USING unnest(%s::text[], %s::bigint[]) AS x(term, chunk) "
                "WHERE p.term = x.term AND p.chunk = x.chunk", (p_terms, p_chunks))
        cur.execute(f"DELETE FROM documents d WHERE {where}", params)  # chunks cascade
        removed.documents = cur.rowcount
        return removed

    @staticmethod
    def _apply_stats(cur: psycopg.Cursor[Any], df_delta: Counter[str], chunk_delta: int,
                     token_delta: int) -> None:
        """Add ``df_delta`` to ``term_stats`` in term order, then the chunk and token deltas
        to ``collection_stats`` and bump the generation (always last, see the module doc)."""
        changed = sorted((t, n) for t, n in df_delta.items() if n)
        if changed:
            cur.execute(
                "INSERT INTO term_stats (term, df) SELECT term, n FROM "
                "unnest(%s::text[], %s::bigint[]) AS x(term, n) ORDER BY term "
                "ON CONFLICT (term) DO UPDATE SET df = term_stats.df + EXCLUDED.df",
                ([t for t, _ in changed], [n for _, n in changed]))
        cur.execute("UPDATE collection_stats SET chunks = chunks + %s, "
                    "total_terms = total_terms + %s, generation = generation + 1 WHERE id = 1",
                    (chunk_delta, token_delta))

    def delete_document(self, document_id: str) -> bool:
        def delete() -> bool:
            with self._write(f"doc:{document_id}") as cur:
                path = cur.execute("SELECT source_path FROM documents WHERE id = %s",
                                   (document_id,)).fetchone()
                if path is None:
                    return False
                cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                            (f"path:{path[0]}",))
                removed = self._remove(cur, "d.id = %s", (document_id,))
                if not removed.documents:
                    return False
                delta = Counter({t: -n for t, n in removed.df.items()})
                self._apply_stats(cur, delta, -removed.chunks, -removed.tokens)
                return True

        return bool(self._retrying(delete))

    @contextmanager
    def rebuild(self) -> Iterator[PostgresStore]:
        """See :meth:`Store.rebuild`. PostgreSQL has no file to build beside, so the whole
        rebuild is one transaction on this thread's connection: every document is deleted
        (``DELETE``, not ``TRUNCATE``, so readers keep their MVCC view of the old rows), the
        body re-fills this same store (each write a savepoint) and the commit at the end
        switches readers to the new index at once. A crash, kill or error before the commit
        rolls everything back: the old index stays. While it runs, other writers wait on the
        model lock, and when the dimension changes (``ALTER TABLE`` in :meth:`bind_model`)
        readers wait for the commit too instead of seeing a partial index. Never raises
        IndexChangedError (concurrent writers are serialised instead)."""
        depth = getattr(self._local, "depth", 0)
        with self.db.transaction():
            self._local.depth = depth + 1  # no retry of a single write inside (see _retrying)
            try:
                self._clear(truncate=False)
                yield self
            finally:
                self._local.depth = depth

    def clear(self) -> None:
        """Delete every document and forget the embedding model (for ``citewise reindex``)."""
        self._clear(truncate=True)

    def _clear(self, *, truncate: bool) -> None:
        with self._write("citewise:model") as cur:
            if truncate:
                cur.execute("TRUNCATE postings, term_stats, chunks, documents")
            else:
                for table in ("postings", "term_stats", "chunks", "documents"):
                    cur.execute(f"DELETE FROM {table}")
            cur.execute(f"DELETE FROM citewise_meta WHERE key IN {BINDING_KEYS}")
            cur.execute("UPDATE collection_stats SET chunks = 0, total_terms = 0, "
                        "generation = generation + 1 WHERE id = 1")

    # --- reads ----------------------------------------------------------------------------
    def cached_vectors(self, content_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        rows = self.db.execute("SELECT content_hash, embedding FROM chunks "
                               "WHERE content_hash = ANY(%s)", (list(set(content_hashes)),))
        return {h: _vec(v) for h, v in rows}

    def vectors_of(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors by chunk id: float32 (dim,) each."""
        rows = self.db.execute("SELECT id, embedding FROM chunks WHERE id = ANY(%s)",
                               (list(set(chunk_ids)),), binary=True)
        return {c: _vec(v) for c, v in rows}

    def terms_of(self, chunk_ids: Sequence[str]) -> dict[str, frozenset[str]]:
        """The analysed BM25 terms of each chunk (title, section and text), by chunk id."""
        rows = self.db.execute("SELECT id, terms FROM chunks WHERE id = ANY(%s)",
                               (list(set(chunk_ids)),))
        return {c: frozenset(t.split()) for c, t in rows}

    def chunk_features(self, document_id: str) -> list[tuple[str, frozenset[str], np.ndarray]]:
        """Every chunk of a document as ``(chunk id, analysed terms, float32 vector)``."""
        rows = self.db.execute(
            "SELECT id, terms, embedding FROM chunks WHERE document_id = %s ORDER BY ordinal",
            (document_id,), binary=True)
        return [(cid, frozenset(t.split()), _vec(v))
                for cid, t, v in rows]

    def document_incidence(self, document_id: str, terms: Sequence[str], *,
                           vectors: bool = False,
                           query: np.ndarray | None = None) -> TermIncidence:
        """See :meth:`Store.document_incidence`: one statement (:meth:`_incidences`).
        Measured at 1M chunks (docs/benchmarks.md): about 1 ms a document of 100 chunks,
        against 5 ms reading every chunk's terms and vector."""
        return self._incidences([document_id], terms, vectors=vectors, query=query)[0]

    def documents_incidence(self, document_ids: Sequence[str], terms: Sequence[str], *,
                            query: np.ndarray | None = None) -> list[TermIncidence]:
        """See :meth:`Store.documents_incidence`: every document in one statement
        (:meth:`_incidences`)."""
        return self._incidences(document_ids, terms, vectors=False, query=query)

    def _incidences(self, document_ids: Sequence[str], terms: Sequence[str], *,
                    vectors: bool, query: np.ndarray | None) -> list[TermIncidence]:
        """The incidence of each of ``document_ids`` (in that order), in one statement. The
        documents' chunks come from the ``chunks_document`` index, which of ``terms`` each
        holds from the ``postings`` primary key (no chunk's terms are read or split), and
        with ``query`` ``dots`` are computed by pgvector on the server (``-(embedding <#>
        query)``, float32 products summed as pgvector does, returned as float8), so a
        chunk's vector crosses the connection only with ``vectors``."""
        if not document_ids:
            return []
        wanted = [t for t in dict.fromkeys(terms) if t]
        scores = "-(embedding <#> %(q)s)" if query is not None else "NULL::float8"
        sql = (
            "WITH c AS MATERIALIZED (SELECT seq, ordinal, id, document_id, "
            f"{'embedding' if vectors else 'NULL::vector'} AS v, {scores} AS dot "
            "FROM chunks WHERE document_id = ANY(%(d)s)) "
            "SELECT seq, ordinal, id, v, dot, NULL::text, document_id FROM c UNION ALL "
            "SELECT p.chunk, NULL, NULL, NULL, NULL, p.term, NULL FROM postings p "
            "WHERE p.term = ANY(%(t)s) AND p.chunk = ANY(ARRAY(SELECT seq FROM c))")
        params: dict[str, Any] = {"d": list(dict.fromkeys(document_ids)), "t": wanted}
        if query is not None:
            params["q"] = np.asarray(query, dtype=np.float32).reshape(-1)
        rows = self.db.execute(sql, params, binary=True).fetchall()
        held: dict[int, set[str]] = {}
        per_doc: dict[str, list[Any]] = {}
        for r in rows:
            if r[5] is not None:
                held.setdefault(r[0], set()).add(r[5])
            else:
                per_doc.setdefault(r[6], []).append(r)
        empty: set[str] = set()
        out = []
        for document_id in document_ids:
            chunks = sorted(per_doc.get(document_id, ()), key=lambda r: r[1])
            present = np.array([[t in held.get(r[0], empty) for t in terms] for r in chunks],
                               dtype=bool).reshape(len(chunks), len(terms))
            stacked = None
            if vectors:
                stacked = (np.stack([_vec(r[3]) for r in chunks]) if chunks
                           else np.zeros((0, self.stored_model()[1] or 1), dtype=np.float32))
            dots = (np.array([r[4] for r in chunks], dtype=np.float32) if query is not None
                    else None)
            out.append(TermIncidence(tuple(r[2] for r in chunks), tuple(terms), present,
                                     stacked, dots))
        return out

    def get_chunks(self, chunk_ids: Sequence[str], *,
                   texts: bool = True) -> dict[str, tuple[Chunk, Document]]:
        """See :meth:`Store.get_chunks`."""
        if not texts:
            rows = self.db.execute(
                f"SELECT {TEXTLESS_CHUNK_COLS}, {DOC_COLS} FROM chunks c "
                "JOIN documents d ON d.id = c.document_id WHERE c.id = ANY(%s) ORDER BY c.seq",
                (list(set(chunk_ids)),))
            return {row[0]: (textless_chunk_from_row(row[:NTEXTLESS]),
                             document_from_row(row[NTEXTLESS:])) for row in rows}
        rows = self.db.execute(
            f"SELECT {_CHUNK_COLS}, {DOC_COLS} FROM chunks c "
            "JOIN documents d ON d.id = c.document_id WHERE c.id = ANY(%s) ORDER BY c.seq",
            (list(set(chunk_ids)),))
        return {row[1]: (chunk_from_row(row[:NCHUNK]), document_from_row(row[NCHUNK:]))
                for row in rows}

    def info(self) -> IndexInfo:
        """Counts, model, and ``index_bytes``: the on-disk size of the store's tables and
        their indexes (``pg_total_relation_size``), in bytes."""
        docs = _row(self.db.execute(
            "SELECT count(*) FROM documents WHERE status = 'indexed'"))[0]
        chunks, size = _row(self.db.execute(
            "SELECT (SELECT chunks FROM collection_stats WHERE id = 1), "
            "(SELECT sum(pg_total_relation_size(t::regclass)) FROM unnest(ARRAY['documents', "
            "'chunks', 'postings', 'term_stats', 'collection_stats', 'citewise_meta']) t)"))
        model, dim = self.stored_model()
        return IndexInfo(int(docs), int(chunks), model, dim, int(size), redact_url(self.url))

    # --- filters --------------------------------------------------------------------------
    def _filter_sql(self, filters: Filters | None) -> tuple[str, list[Any]]:
        """A condition over ``chunks c`` for ``filters`` ("" for none) and its parameters.
        Raises ValueError naming unknown filter keys."""
        wanted = ChunkFilter.parse(filters)
        if wanted is None:
            return "", []
        clauses: list[str] = []
        params: list[Any] = []
        if ids := wanted.document_ids:
            clauses.append("c.document_id = ANY(%s)")
            params.append(list(ids))
        if prefix := wanted.path_prefix:
            clauses.append("c.document_id IN (SELECT id FROM documents "
                           "WHERE starts_with(path, %s))")
            params.append(prefix)
        if wanted.collections is not None:
            clauses.append("c.document_id IN (SELECT id FROM documents "
                           "WHERE collection = ANY(%s))")
            params.append(list(wanted.collections))  # [] matches nothing
        if language := wanted.language:
            clauses.append("c.language = %s")
            params.append(language)
        if (scope := wanted.scope) is not None:  # paths and where: the documents that pass
            clauses.append("c.document_id = ANY(%s)")
            params.append(scoped_document_ids(self, scope))  # [] matches nothing
        return " AND ".join(clauses), params

    # --- dense ----------------------------------------------------------------------------
    def dense_search(self, vector: np.ndarray, k: int, filters: Filters | None = None) -> list[Hit]:
        """Cosine top-k for a float32 (dim,) L2-normalised query vector, ``dense`` =
        ``1 - cosine distance`` in [-1, 1], best first. Through the HNSW index the result is
        approximate (recall measured in docs/benchmarks.md); the planner may also choose an
        exact scan, for example for a selective filter. Raises ValueError on a dimension
        mismatch or an unknown filter."""
        where, params = self._filter_sql(filters)
        if k <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        _, dim = self.stored_model()
        if dim is not None and query.shape[0] != dim:
            raise ValueError(
                f"query vector is {query.shape[0]}-d but the index holds {dim}-d vectors")
        conn = self.db
        ef = str(min(max(self.ef_search, k), 1000))
        with conn.transaction():
            conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (ef,))
            if where:
                # pgvector >= 0.8: with a filter, keep walking the HNSW graph until k rows
                # pass it (in exact distance order) instead of filtering the first ef_search
                # candidates, which can return fewer than k (or none) for a small collection
                conn.execute("SELECT set_config('hnsw.iterative_scan', 'strict_order', true)")
            # the ORDER BY names the indexed expression, so the planner can walk the HNSW
            # graph; the score is always the exact cosine of the 32-bit column
            expression = (_index_expression(dim)[0].replace("embedding", "c.embedding")
                          if dim is not None else "c.embedding")
            cast = f"::halfvec({int(dim)})" if dim is not None and dim > HNSW_MAX_DIM else ""
            rows = conn.execute(
                "SELECT c.id, 1 - (c.embedding <=> %s), c.seq FROM chunks c "
                + (f"WHERE {where} " if where else "")
                + f"ORDER BY {expression} <=> %s{cast} LIMIT %s",
                [query, *params, query, k],
            ).fetchall()
        rows.sort(key=lambda r: (-r[1], r[2]))  # equal scores in insertion order, as SQLite
        return [Hit(chunk_id=cid, score=float(s), source="dense", dense=float(s))
                for cid, s, _ in rows]

    def export(self, document_id: str) -> tuple[list[Chunk], np.ndarray, list[str]]:
        """A document's chunks (``ordinal`` order), their float32 (n, dim) vectors and analysed
        BM25 texts: what :meth:`upsert_document` takes, for copying an index."""
        rows = self.db.execute(
            f"SELECT {_CHUNK_COLS}, c.terms, c.embedding FROM chunks c "
            "WHERE c.document_id = %s ORDER BY c.ordinal", (document_id,)).fetchall()
        vectors = (np.stack([_vec(r[NCHUNK + 1]) for r in rows]) if rows
                   else np.zeros((0, self.stored_model()[1] or 1), dtype=np.float32))
        return [chunk_from_row(r[:NCHUNK]) for r in rows], vectors, [r[NCHUNK] for r in rows]

    # --- sparse ---------------------------------------------------------------------------
    def term_document_frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        n = _row(self.db.execute("SELECT chunks FROM collection_stats WHERE id = 1"))[0]
        df: dict[str, int] = dict.fromkeys(terms, 0)
        rows = self.db.execute("SELECT term, df FROM term_stats WHERE term = ANY(%s)",
                               (list(df),))
        df.update({t: int(d) for t, d in rows})
        return int(n), df

    def bm25_stats(self, terms: Sequence[str]) -> BM25Stats:
        """This database's BM25 statistics for the query ``terms``: chunks, tokens, and the
        document frequency of each term held by any chunk (two reads; call it inside
        :meth:`snapshot` to see the state the scoring sees)."""
        chunks, tokens = _row(self.db.execute(
            "SELECT chunks, total_terms FROM collection_stats WHERE id = 1"))
        rows = self.db.execute("SELECT term, df FROM term_stats WHERE term = ANY(%s) AND df > 0",
                               (list(dict.fromkeys(terms)),))
        return BM25Stats(int(chunks), int(tokens), {t: int(d) for t, d in rows})

    # --- lending this thread's connection (parallel reads of a sharded collection) ---------
    def session(self) -> Session:
        """This thread's connection (None before its first use) and read-transaction depth,
        to lend to a worker thread with :meth:`acting_for` while this thread waits."""
        return Session(getattr(self._local, "conn", None), getattr(self._local, "depth", 0))

    @contextmanager
    def acting_for(self, session: Session) -> Iterator[None]:
        """Run this thread's calls of the store on ``session``'s connection and inside its
        transaction (another thread's, which must not use the store meanwhile), so reads in a
        :meth:`snapshot` opened by that thread see its state. A connection opened here (the
        session had none) is kept in ``session``; hand it back with :meth:`resume`."""
        local = self._local
        saved = (getattr(local, "conn", None), getattr(local, "depth", 0))
        local.conn, local.depth = session.conn, session.depth
        try:
            yield
        finally:
            session.conn = getattr(local, "conn", None)
            local.conn, local.depth = saved

    def resume(self, session: Session) -> None:
        """Make ``session``'s connection this thread's again (after :meth:`acting_for`
        elsewhere opened or replaced it)."""
        if session.conn is not None:
            self._local.conn = session.conn

    def _load_bm25_index(self) -> BM25Index:
        """The BM25 index of the state this thread reads (call it inside :meth:`snapshot`):
        the kept one when its generation is the one read, else one built from that state's
        ``chunks`` rows (streamed through a server-side cursor) and kept when it is newer."""
        generation = self.generation()

        def build() -> BM25Index:
            with self.db.cursor(name="citewise_bm25_build") as cur:
                cur.itersize = 20_000
                cur.execute("SELECT seq, terms, n_terms FROM chunks ORDER BY seq")
                return BM25Index.build(generation, cur)

        return self._bm25_kept.get(generation, build)

    def _background_build(self) -> None:
        """Build the index of the newest state in a thread of its own (one at a time)."""
        with self._thread_lock:
            if self._building is not None and self._building.is_alive():
                return

            def build() -> None:
                try:
                    with self.snapshot():
                        self._load_bm25_index()
                except psycopg.Error as err:  # the next search starts another
                    _log.debug("BM25 index build failed: %s", err)

            self._building = threading.Thread(target=build, name="citewise-pg-bm25-build",
                                              daemon=True)
            self._building.start()

    def bm25_index_ready(self, wait_s: float = 0.0) -> bool:
        """True when the kept BM25 index reflects the newest committed state; first waits up
        to ``wait_s`` seconds for a build running in the background."""
        building = self._building
        if wait_s > 0 and building is not None:
            building.join(wait_s)
        return self._bm25_kept.current(self.generation()) is not None

    def _indexed_sparse_search(self, terms: Sequence[str], k: int, filters: Filters | None,
                               stats: BM25Stats | None = None) -> list[Hit] | None:
        """BM25 from the in-memory index of the state read; None when it is not built yet
        and ``bm25_build`` is ``background`` (a build is started)."""
        query_tf = query_counts(terms)
        wanted = ChunkFilter.parse(filters)
        if not query_tf or k <= 0 or (wanted is not None and wanted.matches_nothing):
            return []
        with self.snapshot():
            index = self._bm25_kept.current(self.generation())
            if index is None:
                if self.bm25_build == "background":
                    self._background_build()
                    return None
                index = self._load_bm25_index()
            mask = None
            if wanted is not None:
                mask = index.cached_mask(wanted)
                if mask is None:
                    where, params = self._filter_sql(filters)
                    allowed = np.fromiter(
                        (r[0] for r in self.db.execute(
                            f"SELECT c.seq FROM chunks c WHERE {where}", params)),
                        dtype=np.int64)
                    mask = index.cached_mask(wanted, allowed)
            seqs, scores = index.top(query_tf, k, mask, stats)
            if not len(seqs):
                return []
            ids = dict(self.db.execute("SELECT seq, id FROM chunks WHERE seq = ANY(%s)",
                                       ([int(q) for q in seqs],)).fetchall())
            return [Hit(chunk_id=ids[int(q)], score=float(v), source="sparse", sparse=float(v))
                    for q, v in zip(seqs, scores, strict=True) if int(q) in ids]

    def sparse_search(
        self, terms: Sequence[str], k: int, filters: Filters | None = None, *,
        stats: BM25Stats | None = None,
    ) -> list[Hit]:
        """BM25 top-k (see the module docstring): ``sparse`` >= 0, best first, ties in
        insertion order. Every chunk holding a query term is scored, in SQL, or with
        ``bm25_index`` from the in-memory index of the state read (SQL while it is built in
        the background). ``stats``: score with these collection statistics instead of this
        database's (a shard of :class:`~citewise.store.sharded.ShardedPostgresStore` gets the
        sum over every shard, :meth:`bm25_stats`)."""
        if self.bm25_index:
            hits = self._indexed_sparse_search(terms, k, filters, stats)
            if hits is not None:
                return hits
        where, params = self._filter_sql(filters)
        query_tf = Counter(t for t in terms if t)
        if not query_tf or k <= 0:
            return []
        condition = (f"WHERE p.chunk IN (SELECT c.seq FROM chunks c WHERE {where})" if where
                     else "")
        if stats is None:
            sql = _BM25_SQL.replace("{filter}", condition)
            head: list[Any] = [list(query_tf), list(query_tf.values())]
        else:
            sql = _BM25_GIVEN_SQL.replace("{filter}", condition)
            head = [stats.chunks, stats.tokens, stats.chunks, list(query_tf),
                    list(query_tf.values()), [stats.df.get(t, 0) for t in query_tf]]
        rows = self.db.execute(sql, [*head, *params, k - 1, k]).fetchall()
        return [Hit(chunk_id=cid, score=float(s), source="sparse", sparse=float(s))
                for cid, s in rows]
