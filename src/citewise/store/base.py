"""The Store contract every index backend implements (checked by ``tests/suites/store.py``),
and the optional capabilities a backend may add (:class:`BulkLoading`, :class:`SelfChecking`,
:class:`FileBacked`): callers test for one with ``isinstance`` on the protocol, never by
probing attribute names.

Backends: :class:`~citewise.store.sqlite.SQLiteStore` (one file; dense search exact) and
:class:`~citewise.store.postgres.PostgresStore` (pgvector; dense search approximate, through
an HNSW index), both built on :mod:`citewise.store.sql` and opened by
:mod:`citewise.store.factory`; :class:`~citewise.store.sharded.ShardedPostgresStore` spreads
one collection over several PostgreSQL servers, a ``PostgresStore`` per shard.

Writes are per document and atomic: after :meth:`Store.upsert_document` or
:meth:`Store.delete_document` returns, or after a crash at any moment during either, a reader
sees the document's old version in full, its new version in full, or (delete) nothing; never a
mix, never chunks without vectors or BM25 postings.

Search methods return hits sorted by descending score, at most ``k`` of them, each carrying
``chunk_id`` and the leg's raw score (``dense``: cosine in [-1, 1]; ``sparse``: BM25 >= 0,
:mod:`citewise.store.bm25`, the same scores on every backend).
``filters`` narrows the search: ``{"document_ids": [...]}``, ``{"path_prefix": "docs/"}``
and/or ``{"collections": [...]}`` (documents of these collections only; an empty list matches
nothing). Filters apply before ranking: the top ``k`` are the best ``k`` of the chunks that
pass, never the passing part of an unfiltered top ``k`` (which would silently lose results), and/or
``{"language": "ru"}`` (chunks whose detected language, :attr:`Chunk.language`, is that
ISO 639-1 code), ``{"paths": ["docs/**/*.md"]}`` (documents whose path matches a glob) and
``{"where": {"author": "Ana"}}`` (documents whose metadata field has that value): see
:mod:`citewise.store.scope`, which resolves those two to document ids for every store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from citewise.store.scope import check_scope
from citewise.types import Chunk, Document, Hit


@contextmanager
def nested_read_transaction(local: Any, execute: Callable[[str], object],
                            begin: str = "BEGIN") -> Iterator[None]:
    """A read transaction opened by the outermost ``with`` of this thread and committed when
    it ends; inner ones join it. ``local`` is the store's ``threading.local`` (its ``depth``
    counts the nesting), ``execute`` runs SQL on this thread's connection."""
    depth = getattr(local, "depth", 0)
    if depth == 0:
        execute(begin)
    local.depth = depth + 1
    try:
        yield
    finally:
        local.depth = depth
        if depth == 0:
            execute("COMMIT")

Filters = Mapping[str, Any]

#: The filter keys every store understands (see the module docstring).
FILTER_KEYS = ("document_ids", "path_prefix", "collections", "language", "paths", "where")


def check_filters(filters: Filters) -> None:
    """Raise ValueError naming unknown filter keys, a ``collections`` that is not a list, or
    a malformed ``language``, ``paths`` or ``where``."""
    unknown = set(filters) - set(FILTER_KEYS)
    if unknown:
        raise ValueError(f"unknown filter(s) {sorted(unknown)}; valid: {', '.join(FILTER_KEYS)}")
    names = filters.get("collections")
    if names is not None and (isinstance(names, str) or not all(isinstance(n, str)
                                                                for n in names)):
        raise ValueError("filter 'collections' must be a list of collection names")
    language = filters.get("language")
    if language is not None and not isinstance(language, str):
        raise ValueError("filter 'language' must be one ISO 639-1 code, such as 'en'")
    check_scope(filters)


@dataclass(frozen=True)
class IndexInfo:
    """What ``citewise status`` shows. ``index_bytes`` is the size on disk in bytes."""

    documents: int
    chunks: int
    embedding_model: str | None
    dimension: int | None
    index_bytes: int
    location: str


@dataclass(frozen=True, eq=False)
class TermIncidence:
    """Which of some analysed terms each of some chunks holds: the term-chunk incidence
    matrix the retriever's coverage and within-document weights are computed from, with the
    chunks' vectors when they were asked for.

    ``chunk_ids``: the chunks, one per row; ``terms``: the terms, one per column (as asked,
    duplicates kept); ``present``: bool (len(chunk_ids), len(terms)), True where chunk i's
    analysed BM25 terms hold ``terms[j]`` (exactly ``terms[j] in frozenset(chunk terms)``);
    ``vectors``: float32 (len(chunk_ids), dim), the stored L2-normalised vectors, row i for
    chunk i, or None when not asked for; ``dots``: float32 (len(chunk_ids),), the inner
    product of chunk i's stored vector with the query vector asked for (the cosine, both
    being unit length; higher is closer), or None when none was asked for.
    """

    chunk_ids: tuple[str, ...]
    terms: tuple[str, ...]
    present: np.ndarray
    vectors: np.ndarray | None = None
    dots: np.ndarray | None = None

    def scored(self, query: np.ndarray | None, *, keep_vectors: bool) -> TermIncidence:
        """This incidence with ``dots`` = ``vectors @ query`` (float32, numpy's product, so
        the same bits as the retriever computing it) when ``query`` is given; ``vectors``
        kept only with ``keep_vectors``. Raises ValueError when a query is given and
        ``vectors`` is None."""
        dots = self.dots
        if query is not None:
            if self.vectors is None:
                raise ValueError("dots need the chunks' vectors")
            dots = self.vectors @ np.asarray(query, dtype=np.float32)
        return replace(self, vectors=self.vectors if keep_vectors else None, dots=dots)

    @classmethod
    def of(cls, chunk_ids: Sequence[str], chunk_terms: Sequence[frozenset[str]],
           terms: Sequence[str], vectors: Sequence[np.ndarray] | None = None,
           dim: int = 1) -> TermIncidence:
        """The incidence of each chunk's term set ``chunk_terms[i]``; ``vectors``: float32
        (dim,) each, stacked (an empty stack is (0, ``dim``))."""
        present = np.array([[t in held for t in terms] for held in chunk_terms],
                           dtype=bool).reshape(len(chunk_ids), len(terms))
        stacked = None
        if vectors is not None:
            stacked = (np.stack([np.asarray(v, dtype=np.float32) for v in vectors]) if vectors
                       else np.zeros((0, dim), dtype=np.float32))
        return cls(tuple(chunk_ids), tuple(terms), present, stacked)


@runtime_checkable
class Store(Protocol):
    def bind_model(self, name: str, dim: int) -> None:
        """Record the embedding model of an empty index, or check it against the stored one.

        Raises EmbeddingMismatchError when the index holds vectors of another model or
        dimension (the user must run ``citewise reindex``).
        """

    def bind_analyzer(self, version: str, *, force: bool = False) -> None:
        """Record the text-analysis version of the index's BM25 terms
        (:data:`citewise.text.analysis.ANALYZER_VERSION`), or check it.

        Raises AnalyzerMismatchError when the index holds chunks analysed by another recorded
        version, unless ``force`` (after every chunk was re-analysed).
        """

    def stored_analyzer(self) -> str | None:
        """The version recorded by :meth:`bind_analyzer`, or None."""

    def languages(self) -> dict[str, int]:
        """Chunks per detected language code (chunks with no recorded language left out)."""

    def upsert_document(
        self, document: Document, chunks: Sequence[Chunk], vectors: np.ndarray,
        terms: Sequence[str] | None = None,
    ) -> None:
        """Replace the document and all its chunks atomically.

        ``vectors``: float32, shape (len(chunks), dim), L2-normalised, row i for chunks[i].
        ``terms``: the analysed BM25 text of each chunk (space-separated tokens of
        :func:`citewise.text.analysis.analyze`), computed from ``chunk.text`` when None.
        Raises ValueError when the shapes disagree.
        """

    def delete_document(self, document_id: str) -> bool:
        """Delete a document with its chunks, vectors and postings; False if it was absent."""

    def document(self, document_id: str) -> Document | None: ...

    def documents(self) -> list[Document]:
        """All documents, sorted by path."""

    def cached_vectors(self, content_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors by chunk content hash, so unchanged text is never re-embedded."""

    def dense_search(self, vector: np.ndarray, k: int, filters: Filters | None = None) -> list[Hit]:
        """Cosine top-k for a float32 (dim,) L2-normalised query vector: ``dense`` is the
        exact cosine of each hit, in [-1, 1]. Which hits are found depends on the backend:
        SQLite compares the query with every stored vector (exact top-k); PostgreSQL walks an
        HNSW index (approximate: a true top-k chunk can be missed, see docs/benchmarks.md for
        the recall). Raises ValueError when the query's dimension is not the index's or a
        filter key is unknown."""

    def sparse_search(self, terms: Sequence[str], k: int, filters: Filters | None = None) -> list[Hit]:
        """BM25 top-k for analysed query terms (see :mod:`citewise.text.analysis`).

        An empty ``terms`` or an empty index returns [] (never raises).
        """

    def term_document_frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """``(N, {term: df})``: chunks in the index and how many contain each term."""

    def terms_of(self, chunk_ids: Sequence[str]) -> dict[str, frozenset[str]]:
        """The analysed BM25 terms stored for each chunk, by id (unknown ids left out)."""

    def vectors_of(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored float32 (dim,) vectors by chunk id (unknown ids left out)."""

    def snapshot(self) -> AbstractContextManager[None]:
        """Reads inside see one committed state (a query never mixes two versions)."""

    def get_chunks(self, chunk_ids: Sequence[str], *,
                   texts: bool = True) -> dict[str, tuple[Chunk, Document]]:
        """Chunks with their documents, by id; unknown ids are left out. With
        ``texts=False`` only each chunk's ``id``, ``document_id``, ``ordinal`` and
        ``language`` are read (the rest of the row, its text above all, is not): ``text`` and
        ``source_text`` are ``""``, ``char_start``/``char_end`` 0 and the other fields their
        defaults (:func:`~citewise.store.sql.textless_chunk_from_row`); the documents are
        complete either way. For a ranking that needs the chunks' documents, not their
        texts."""

    def stored_model(self) -> tuple[str | None, int | None]:
        """``(model name, dimension)`` recorded by :meth:`bind_model`, or ``(None, None)``."""

    def chunks_of(self, document_id: str) -> list[Chunk]:
        """A document's chunks in ``ordinal`` order ([] for an unknown id)."""

    def chunk_features(self, document_id: str) -> list[tuple[str, frozenset[str], np.ndarray]]:
        """Every chunk of a document as ``(chunk id, analysed terms, float32 (dim,) vector)``,
        in ``ordinal`` order."""

    def document_incidence(self, document_id: str, terms: Sequence[str], *,
                           vectors: bool = False,
                           query: np.ndarray | None = None) -> TermIncidence:
        """Every chunk of a document (``ordinal`` order, as :meth:`chunk_features`) with which
        of the analysed ``terms`` it holds and, with ``vectors``, its float32 vector: the same
        values :meth:`chunk_features` gives, reduced to ``terms`` (an unknown document has no
        rows). With ``query`` (float32 (dim,), unit length), ``dots``: each chunk's vector's
        inner product with it (equal to ``vectors @ query`` up to float32 rounding; a server
        backend computes it where the vectors are, without sending them). A backend may
        answer from derived in-memory indexes of the state read."""

    def documents_incidence(self, document_ids: Sequence[str], terms: Sequence[str], *,
                            query: np.ndarray | None = None) -> list[TermIncidence]:
        """:meth:`document_incidence` (no vectors; ``dots`` with ``query``) of each of
        ``document_ids``, in that order, read in one committed state: the values a call per
        document gives. A server backend answers them in one round trip per server."""

    def chunk_incidence(self, chunk_ids: Sequence[str], terms: Sequence[str], *,
                        vectors: bool = False) -> TermIncidence:
        """The given chunks (first occurrences, in the given order; unknown ids left out)
        with which of the analysed ``terms`` each holds (as :meth:`terms_of`) and, with
        ``vectors``, their float32 vectors (as :meth:`vectors_of`)."""

    def record_failure(self, document: Document) -> None:
        """Keep a file that could not be read as a ``failed`` document with no chunks."""

    def export(self, document_id: str) -> tuple[list[Chunk], np.ndarray, list[str]]:
        """A document's chunks (``ordinal`` order), their float32 (n, dim) vectors and
        analysed BM25 texts, as :meth:`upsert_document` takes them (to copy an index)."""

    def mark_unfinished(self, note: str | None) -> None:
        """Mark the index as incomplete with ``note`` (None removes the mark), in one
        transaction. ``citewise migrate`` marks its target before copying and unmarks it at
        the end; :meth:`Engine.check_model <citewise.engine.Engine.check_model>` refuses a
        marked index."""

    def unfinished(self) -> str | None:
        """The note of :meth:`mark_unfinished`, or None when the index is not marked."""

    def rebuild(self) -> AbstractContextManager[Store]:
        """A context whose body fills a replacement index (the yielded store, empty, model
        not bound yet); on a normal exit it replaces this index's documents, chunks and
        model binding in one transaction, so readers see the old index or the new one and a
        crash before the end leaves the old one intact (``citewise reindex``). An exception
        in the body switches nothing. Raises IndexChangedError when this index was written
        meanwhile (nothing switched)."""

    def clear(self) -> None:
        """Delete every document and forget the embedding model and analyzer version
        (``citewise reindex``)."""

    def info(self) -> IndexInfo: ...

    def close(self) -> None: ...


@runtime_checkable
class BulkLoading(Protocol):
    """Optional capability: a faster path for writing many documents at once
    (:class:`~citewise.store.postgres.PostgresStore`: the HNSW index is dropped and built once
    at the end). ``citewise migrate`` uses it when the target has it."""

    def bulk_load(self) -> AbstractContextManager[None]:
        """A context for many :meth:`Store.upsert_document` calls; the store is complete and
        searchable again when it exits, normally or by an exception."""
        ...


@runtime_checkable
class SelfChecking(Protocol):
    """Optional capability: a consistency check of the stored index
    (:class:`~citewise.store.sqlite.SQLiteStore`), run after a crash by the crash tests and
    benchmarks."""

    def check(self) -> list[str]:
        """Problems found, one sentence each; [] when the index is consistent."""
        ...


@runtime_checkable
class FileBacked(Protocol):
    """Optional capability: the index is one local file (SQLite), at ``path``; ingestion
    skips that file and its companions (``-wal``, ``-shm``) when they lie under an ingested
    folder. A store on a server has no ``path``."""

    path: Path
