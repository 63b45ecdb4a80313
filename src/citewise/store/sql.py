"""The SQL core the SQLite and PostgreSQL stores share: one table layout for documents and
chunks, the mapping between their rows and :class:`~citewise.types.Document` /
:class:`~citewise.types.Chunk`, the typed form of the search filters, the checks every write
makes before it touches the database, and :class:`SQLStore`, the reads whose SQL is the same
on both (only the parameter marker and the meta table's name differ).

What differs stays in each backend: connections and transactions, the vector column and
dense search, how BM25 statistics are kept, rendering :class:`ChunkFilter` as SQL, and the
schema migrations (run by :func:`citewise.store.migrations.run_migrations`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from citewise.errors import AnalyzerMismatchError, EmbeddingMismatchError
from citewise.store.base import Filters, TermIncidence, check_filters
from citewise.types import Chunk, Document

#: The ``documents`` columns, in the order :func:`document_from_row` reads them and
#: :func:`document_values` writes them.
DOCUMENT_COLUMNS = ("id", "path", "source_path", "title", "format", "content_hash",
                    "chunk_count", "pages", "metadata", "warnings", "indexed_at", "status",
                    "error", "collection", "error_kind")
#: The ``chunks`` columns a :class:`~citewise.types.Chunk` is read from, in the order of
#: :func:`chunk_from_row` (after the row's key column).
CHUNK_COLUMNS = ("id", "document_id", "ordinal", "text", "source_text", "char_start",
                 "char_end", "section", "page", "page_end", "line_start", "line_end", "symbol",
                 "content_hash", "token_count", "language", "page_starts")
#: ``documents d`` columns for a SELECT list.
DOC_COLS = ", ".join(f"d.{c}" for c in DOCUMENT_COLUMNS)
#: How many columns :func:`chunk_cols` selects (the key column, then :data:`CHUNK_COLUMNS`).
NCHUNK = 1 + len(CHUNK_COLUMNS)
#: ``chunks c`` columns of a chunk without its text (``get_chunks(..., texts=False)``), in
#: the order of :func:`textless_chunk_from_row`.
TEXTLESS_CHUNK_COLS = "c.id, c.document_id, c.ordinal, c.language"
#: How many columns :data:`TEXTLESS_CHUNK_COLS` selects.
NTEXTLESS = 4


def chunk_cols(key: str) -> str:
    """``chunks c`` columns for a SELECT list: the backend's row key (``rowid``, ``seq``),
    then :data:`CHUNK_COLUMNS`."""
    return ", ".join(f"c.{c}" for c in (key, *CHUNK_COLUMNS))


def chunk_insert_columns(vector_column: str) -> tuple[str, ...]:
    """The columns :func:`chunk_values` fills, in order; ``vector_column`` is the backend's
    name for the embedding (``vector``, ``embedding``)."""
    return ("id", "document_id", "ordinal", "text", "source_text", "char_start", "char_end",
            "section", "page", "page_end", "line_start", "line_end", "symbol", "content_hash",
            "token_count", "terms", "n_terms", vector_column, "language", "page_starts")


def insert_sql(table: str, columns: Sequence[str], mark: str) -> str:
    """``INSERT INTO table (columns) VALUES (mark, ...)`` with one ``mark`` (``?``, ``%s``)
    per column."""
    return (f"INSERT INTO {table} ({', '.join(columns)}) "
            f"VALUES ({','.join([mark] * len(columns))})")


def _json_list(text: str | None) -> list[Any]:
    """The JSON array ``text`` (None or ``""``: empty), without the parser for ``[]``."""
    return [] if not text or text == "[]" else list(json.loads(text))


def chunk_from_row(row: Sequence[Any]) -> Chunk:
    """The chunk of a row selected with :func:`chunk_cols` (its first :data:`NCHUNK` values;
    the key is not part of the chunk). ``section`` and ``page_starts`` are JSON text."""
    return Chunk(
        id=row[1], document_id=row[2], ordinal=row[3], text=row[4], source_text=row[5],
        char_start=row[6], char_end=row[7], section=tuple(_json_list(row[8])), page=row[9],
        page_end=row[10], line_start=row[11], line_end=row[12], symbol=row[13],
        content_hash=row[14], token_count=row[15], language=row[16],
        page_starts=tuple((int(a), int(b)) for a, b in _json_list(row[17])),
    )


def textless_chunk_from_row(row: Sequence[Any]) -> Chunk:
    """The chunk of a row selected with :data:`TEXTLESS_CHUNK_COLS` (its first
    :data:`NTEXTLESS` values): ``id``, ``document_id``, ``ordinal`` and ``language`` as
    stored; ``text`` and ``source_text`` ``""``, ``char_start``/``char_end`` 0 and every
    other field its default (None, ``()``, ``""``, 0): not the stored values."""
    return Chunk(id=row[0], document_id=row[1], ordinal=row[2], text="", source_text="",
                 char_start=0, char_end=0, language=row[3])


def document_from_row(row: Sequence[Any]) -> Document:
    """The document of a row selected with :data:`DOC_COLS`; ``metadata`` and ``warnings`` are
    JSON text."""
    return Document(
        id=row[0], path=row[1], source_path=row[2], title=row[3], format=row[4],
        content_hash=row[5], chunk_count=row[6], pages=row[7],
        metadata={} if row[8] == "{}" else json.loads(row[8]),
        warnings=tuple(_json_list(row[9])), indexed_at=row[10], status=row[11], error=row[12],
        collection=row[13], error_kind=row[14],
    )


def document_values(document: Document, chunk_count: int) -> tuple[Any, ...]:
    """The :data:`DOCUMENT_COLUMNS` values of ``document`` with ``chunk_count`` chunks
    (``indexed_at`` now when it is unset)."""
    return (
        document.id, document.path, document.source_path, document.title, document.format,
        document.content_hash, chunk_count, document.pages,
        json.dumps(document.metadata, default=str, ensure_ascii=False),
        json.dumps(list(document.warnings), ensure_ascii=False),
        document.indexed_at or time.time(), document.status, document.error,
        document.collection, document.error_kind,
    )


def chunk_values(chunk: Chunk, document_id: str, terms: str, n_terms: int,
                 vector: Any) -> tuple[Any, ...]:
    """The :func:`chunk_insert_columns` values of one chunk: its analysed BM25 text ``terms``
    of ``n_terms`` tokens and ``vector`` as the backend binds it (bytes, an array)."""
    return (
        chunk.id, document_id, chunk.ordinal, chunk.text, chunk.source_text, chunk.char_start,
        chunk.char_end, json.dumps(list(chunk.section), ensure_ascii=False), chunk.page,
        chunk.page_end, chunk.line_start, chunk.line_end, chunk.symbol, chunk.content_hash,
        chunk.token_count, terms, n_terms, vector, chunk.language, json.dumps(chunk.page_starts),
    )


@dataclass(frozen=True)
class ChunkFilter:
    """The search filters (see :mod:`citewise.store.base`) as typed values: ``document_ids``
    (empty: any document), ``path_prefix`` ("" any path), ``collections`` (None any
    collection; empty: none, so nothing matches), ``language`` ("" any language), ``paths``
    (path globs, empty: any path) and ``where`` (metadata conditions as ``(field, wanted)``
    pairs, empty: any document); the last two are resolved by the store to document ids
    (:attr:`scope`, :func:`citewise.store.scope.scoped_document_ids`)."""

    document_ids: tuple[str, ...] = ()
    path_prefix: str = ""
    collections: tuple[str, ...] | None = None
    language: str = ""
    paths: tuple[str, ...] = ()
    where: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def parse(cls, filters: Filters | None) -> ChunkFilter | None:
        """The filter ``filters`` asks for, or None when it narrows nothing (None, ``{}``,
        only empty values). Raises ValueError for an unknown key or a ``collections`` that is
        not a list of names (:func:`~citewise.store.base.check_filters`)."""
        if not filters:
            return None
        check_filters(filters)
        names = filters.get("collections")
        parsed = cls(tuple(filters.get("document_ids") or ()), filters.get("path_prefix") or "",
                     None if names is None else tuple(names), filters.get("language") or "",
                     tuple(filters.get("paths") or ()),
                     tuple((filters.get("where") or {}).items()))
        return None if parsed == cls() else parsed

    @property
    def scope(self) -> dict[str, Any] | None:
        """The ``paths`` and ``where`` filters as :func:`~citewise.store.scope.in_scope`
        takes them, or None when neither is given."""
        out: dict[str, Any] = {}
        if self.paths:
            out["paths"] = list(self.paths)
        if self.where:
            out["where"] = dict(self.where)
        return out or None

    @property
    def matches_nothing(self) -> bool:
        """True when no chunk can pass (an empty ``collections``: no readable collection)."""
        return self.collections == ()


def checked_vectors(chunks: Sequence[Chunk], vectors: np.ndarray, stored_dim: int | None,
                    dtype: str | type[np.floating[Any]]) -> np.ndarray:
    """``vectors`` as a C-contiguous ``dtype`` array of shape (len(chunks), dim). Raises
    ValueError when it is not 2-d with one row per chunk, or when its dimension is not the
    index's ``stored_dim`` (None: no model bound yet)."""
    vectors = np.ascontiguousarray(vectors, dtype=dtype)
    if vectors.ndim != 2 or vectors.shape[0] != len(chunks):
        raise ValueError(f"vectors shape {vectors.shape} does not match {len(chunks)} chunks")
    if stored_dim is not None and len(chunks) and vectors.shape[1] != stored_dim:
        raise ValueError(f"vectors are {vectors.shape[1]}-d but the index holds {stored_dim}-d")
    return vectors


def analysed_terms(chunks: Sequence[Chunk], terms: Sequence[str] | None) -> Sequence[str]:
    """``terms``, or each chunk's text analysed for BM25 when None
    (:func:`citewise.text.analysis.analyze`)."""
    if terms is not None:
        return terms
    from citewise.text.analysis import analyze

    return [analyze(c.text) for c in chunks]


def check_model_binding(stored: str | None, stored_dim: str | None, has_chunks: bool,
                        name: str, dim: int) -> None:
    """Raise EmbeddingMismatchError when an index holding chunks is bound to another model
    or dimension than ``name`` / ``dim`` (``stored``/``stored_dim`` as the meta table keeps
    them; None when unbound)."""
    if stored is not None and has_chunks and (stored != name or int(stored_dim or 0) != dim):
        raise EmbeddingMismatchError(stored, int(stored_dim or 0), name, dim)


def check_analyzer_binding(stored: str | None, has_chunks: bool, version: str,
                           force: bool) -> None:
    """Raise AnalyzerMismatchError when an index holding chunks was analysed by another
    recorded version than ``version``, unless ``force``."""
    if not force and stored is not None and has_chunks and stored != version:
        raise AnalyzerMismatchError(stored, version)


#: The meta keys :meth:`Store.clear` and :meth:`Store.rebuild` reset, as an SQL list.
BINDING_KEYS = "('embedding_model', 'dimension', 'analyzer')"


class SQLStore:
    """The reads both SQL stores run with the same SQL: a base class. A subclass sets
    :attr:`MARK` (its parameter marker), :attr:`META_TABLE`, :attr:`KEY` (the chunks' row
    key column) and :attr:`PATH_ORDER`, and provides ``db`` (this thread's DB-API connection:
    ``execute(sql, params)`` returns a cursor) and :meth:`generation`."""

    MARK: ClassVar[str]
    META_TABLE: ClassVar[str]
    KEY: ClassVar[str]
    #: the ORDER BY of :meth:`documents` (byte order of the paths on both)
    PATH_ORDER: ClassVar[str] = "d.path"

    _languages: tuple[int, dict[str, int]] | None = None  # generation, counts

    @property
    def db(self) -> Any:  # pragma: no cover - every backend overrides it
        raise NotImplementedError

    def generation(self) -> int:  # pragma: no cover - every backend overrides it
        """A counter bumped by every committed write."""
        raise NotImplementedError

    def snapshot(self) -> AbstractContextManager[None]:  # pragma: no cover - overridden
        """See :meth:`Store.snapshot`."""
        raise NotImplementedError

    def chunk_features(self, document_id: str,
                       ) -> list[tuple[str, frozenset[str], np.ndarray]]:  # pragma: no cover
        """See :meth:`Store.chunk_features` (every backend overrides it)."""
        raise NotImplementedError

    def terms_of(self, chunk_ids: Sequence[str]) -> dict[str, frozenset[str]]:  # pragma: no cover
        """See :meth:`Store.terms_of` (every backend overrides it)."""
        raise NotImplementedError

    def vectors_of(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:  # pragma: no cover
        """See :meth:`Store.vectors_of` (every backend overrides it)."""
        raise NotImplementedError

    def document_incidence(self, document_id: str, terms: Sequence[str], *,
                           vectors: bool = False,
                           query: np.ndarray | None = None) -> TermIncidence:
        """See :meth:`Store.document_incidence`: from :meth:`chunk_features` (one query
        reading every chunk's terms and vector)."""
        features = self.chunk_features(document_id)
        # the stored dimension (two reads of the meta table) only when no row gives it
        dim = len(features[0][2]) if features else self.stored_model()[1] or 1
        wanted = vectors or query is not None
        return TermIncidence.of([f[0] for f in features], [f[1] for f in features], terms,
                                [f[2] for f in features] if wanted else None,
                                dim).scored(query, keep_vectors=vectors)

    def documents_incidence(self, document_ids: Sequence[str], terms: Sequence[str], *,
                            query: np.ndarray | None = None) -> list[TermIncidence]:
        """See :meth:`Store.documents_incidence`: :meth:`document_incidence` per document,
        in one snapshot."""
        with self.snapshot():
            return [self.document_incidence(d, terms, query=query) for d in document_ids]

    def chunk_incidence(self, chunk_ids: Sequence[str], terms: Sequence[str], *,
                        vectors: bool = False) -> TermIncidence:
        """See :meth:`Store.chunk_incidence`: from :meth:`terms_of` and :meth:`vectors_of`,
        read in one snapshot."""
        with self.snapshot():
            held = self.terms_of(chunk_ids)
            found = [c for c in dict.fromkeys(chunk_ids) if c in held]
            stored = self.vectors_of(found) if vectors else {}
        # the stored dimension only shapes an empty stack of vectors
        dim = (len(stored[found[0]]) if found else self.stored_model()[1] or 1) if vectors else 1
        return TermIncidence.of(found, [held[c] for c in found], terms,
                                [stored[c] for c in found] if vectors else None, dim)

    def _meta(self, key: str) -> str | None:
        row = self.db.execute(f"SELECT value FROM {self.META_TABLE} WHERE key = {self.MARK}",
                              (key,)).fetchone()
        return row[0] if row else None

    def stored_model(self) -> tuple[str | None, int | None]:
        """See :meth:`Store.stored_model`."""
        dim = self._meta("dimension")
        return self._meta("embedding_model"), int(dim) if dim else None

    def stored_analyzer(self) -> str | None:
        """See :meth:`Store.stored_analyzer`."""
        return self._meta("analyzer")

    def unfinished(self) -> str | None:
        """See :meth:`Store.unfinished`."""
        return self._meta("unfinished")

    def languages(self) -> dict[str, int]:
        """See :meth:`Store.languages`: chunks per detected language, cached until the next
        write."""
        generation = self.generation()
        if self._languages is None or self._languages[0] != generation:
            rows = self.db.execute("SELECT language, count(*) FROM chunks GROUP BY language")
            self._languages = (generation, {lang: int(n) for lang, n in rows if lang})
        return dict(self._languages[1])

    def document(self, document_id: str) -> Document | None:
        """See :meth:`Store.document`."""
        row = self.db.execute(f"SELECT {DOC_COLS} FROM documents d WHERE d.id = {self.MARK}",
                              (document_id,)).fetchone()
        return document_from_row(row) if row else None

    def documents(self) -> list[Document]:
        """See :meth:`Store.documents`."""
        rows = self.db.execute(f"SELECT {DOC_COLS} FROM documents d ORDER BY {self.PATH_ORDER}")
        return [document_from_row(r) for r in rows]

    def chunks_of(self, document_id: str) -> list[Chunk]:
        """See :meth:`Store.chunks_of`."""
        rows = self.db.execute(
            f"SELECT {chunk_cols(self.KEY)} FROM chunks c WHERE c.document_id = {self.MARK} "
            "ORDER BY c.ordinal", (document_id,))
        return [chunk_from_row(r) for r in rows]

    def record_failure(self, document: Document) -> None:
        """See :meth:`Store.record_failure`."""
        failed = replace(document, status="failed", chunk_count=0)
        self.upsert_document(failed, [], np.zeros((0, 1), dtype=np.float32), [])

    def upsert_document(self, document: Document, chunks: Sequence[Chunk], vectors: np.ndarray,
                        terms: Sequence[str] | None = None) -> None:  # pragma: no cover
        """See :meth:`Store.upsert_document` (every backend overrides it)."""
        raise NotImplementedError

