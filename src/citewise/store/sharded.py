"""A collection sharded across PostgreSQL servers (``CITEWISE_POSTGRES_SHARDS=url1,url2,...``).

Design
------
* **Each shard is a whole** :class:`~citewise.store.postgres.PostgresStore` (the same schema,
  migrations, HNSW index and BM25 tables) on its own server. A document lives on exactly one
  shard, chosen by :func:`shard_of` (a jump consistent hash of the document id), with all its
  chunks, vectors and postings: every upsert or delete is one transaction on one server, so a
  reader never sees half a document. No statement ever spans two servers.
* **Search fans out** to every shard in parallel (a thread per shard, each running on the
  calling thread's connection to that shard, so reads inside :meth:`snapshot` stay in that
  thread's per-shard transactions) and merges exactly: each shard returns its own top ``k``
  after applying the filters, and the best ``k`` of the union are the global top ``k``.
* **BM25 statistics are global**: a search first reads every shard's chunk count, token count
  and the query terms' document frequencies (:meth:`PostgresStore.bm25_stats`), sums them
  (:meth:`~citewise.store.bm25.BM25Stats.combine`) and sends the sums to every shard, which
  scores its own postings with them (SQL or the in-memory index). The float8 arithmetic is the
  single server's, so every score equals, to the last bit, what one server holding every
  chunk computes. Equal scores from different shards are ordered by shard (one server orders
  them by insertion).
* **Dense search**: every shard walks its own HNSW index for its top ``k``; the merge keeps the
  ``k`` best cosines. Recall is one HNSW index's per shard.
* **Placement is recorded**: on first use every shard's ``citewise_meta`` gets ``shard`` =
  ``"i/N <collection id>"``. Opening checks it, so shards listed in another order, a missing
  or extra server, or a server of another collection are refused (ConfigError naming the
  server) instead of sending documents to the wrong shard. A non-empty unsharded index is never
  adopted as a shard: copy it with ``citewise migrate --to url1,url2``.
* **A shard that cannot be reached fails the call** with
  :class:`~citewise.errors.ShardUnavailableError` naming it; no answer is ever assembled
  from the shards that did reply.

What is not one transaction: settings that every shard keeps (the model binding, the analyzer
version, the unfinished mark) are written shard after shard, and :meth:`rebuild` commits each
shard's replacement in turn (a crash between two commits leaves some shards rebuilt: run
``citewise reindex`` again). A query running while other documents are written may read one
shard's statistics before a write and another's after: scores then differ from a single
server's by that document's share of the statistics, never by a partial document.
"""

from __future__ import annotations

import hashlib
import heapq
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import replace
from functools import partial
from typing import Literal, TypeVar

import numpy as np
import psycopg

from citewise.config import redact_url
from citewise.errors import ConfigError, IndexError_, ShardUnavailableError
from citewise.store.base import Filters, IndexInfo, TermIncidence, check_filters
from citewise.store.bm25 import BM25Stats
from citewise.store.postgres import PostgresStore, check_dimension
from citewise.store.sql import check_analyzer_binding, check_model_binding
from citewise.types import Chunk, Document, Hit

T = TypeVar("T")

#: The ``citewise_meta`` key recording a server's place: ``"i/N <collection id>"``.
SHARD_META_KEY = "shard"
_SETTING = "CITEWISE_POSTGRES_SHARDS"


def jump_hash(key: int, buckets: int) -> int:
    """Jump consistent hash (Lamping and Veach, "A Fast, Minimal Memory, Consistent Hash
    Algorithm", 2014): the bucket in [0, ``buckets``) of a 64-bit ``key``. Going from N to
    N + 1 buckets moves only 1/(N + 1) of the keys, all to the new bucket."""
    b, j = -1, 0
    while j < buckets:
        b = j
        key = (key * 2862933555777941757 + 1) & 0xFFFFFFFFFFFFFFFF
        j = int((b + 1) * (float(1 << 31) / float((key >> 33) + 1)))
    return b


def shard_of(document_id: str, shards: int) -> int:
    """The shard (0-based) of a document among ``shards``: :func:`jump_hash` of the first 8
    bytes of the id's BLAKE2b digest. Stable across processes, machines and Python versions
    (unlike ``hash()``)."""
    digest = hashlib.blake2b(document_id.encode("utf-8", "surrogatepass"), digest_size=8)
    return jump_hash(int.from_bytes(digest.digest(), "big"), shards)


def _merged(lists: Sequence[list[Hit]], k: int) -> list[Hit]:
    """The best ``k`` of per-shard hit lists (each best first): by descending score, equal
    scores in shard order (``heapq.merge`` is stable)."""
    return list(heapq.merge(*lists, key=lambda h: -h.score))[:k]


def _set_meta(store: PostgresStore, key: str, value: str) -> None:
    store.db.execute("INSERT INTO citewise_meta VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET "
                     "value = EXCLUDED.value", (key, value))


def _enter(context: AbstractContextManager[None], _store: PostgresStore) -> None:
    context.__enter__()


class ShardedPostgresStore:
    """The :class:`~citewise.store.base.Store` of one collection sharded across PostgreSQL
    servers (see the module docstring), with the optional
    :class:`~citewise.store.base.BulkLoading`.

    ``urls``: one libpq URL per shard, two or more, always in the same order (the order is
    recorded on first use and checked on every open). ``ef_search``, ``bm25_index`` and
    ``bm25_build`` are passed to each shard's :class:`PostgresStore`. Safe to share between
    threads and processes. Raises ConfigError for fewer than two or repeated URLs, or servers
    that are not this collection's shards in this order; ShardUnavailableError when a server
    cannot be reached.
    """

    def __init__(self, urls: Sequence[str], *, ef_search: int = 100, bm25_index: bool = False,
                 bm25_build: Literal["background", "wait"] = "background") -> None:
        urls = [u.strip() for u in urls if u.strip()]
        if len(urls) < 2:
            raise ConfigError(f"{_SETTING}: give two or more postgresql:// URLs, "
                              "comma-separated (one server: CITEWISE_STORE)")
        if len(set(urls)) != len(urls):
            raise ConfigError(f"{_SETTING}: a server is listed twice; each shard needs its own "
                              "database")
        self.urls = urls
        self._pool = ThreadPoolExecutor(max_workers=4 * len(urls),
                                        thread_name_prefix="citewise-shard")

        def open_shard(url: str) -> PostgresStore:
            return PostgresStore(url, ef_search=ef_search, bm25_index=bm25_index,
                                 bm25_build=bm25_build)

        opened = [self._pool.submit(open_shard, u) for u in urls]
        shards: list[PostgresStore] = []
        failure: BaseException | None = None
        for i, future in enumerate(opened):
            try:
                shards.append(future.result())
            except IndexError_ as err:
                detail = str(err).replace("check CITEWISE_STORE and that the server runs",
                                          "check that the server runs")
                failure = failure or ShardUnavailableError(i + 1, len(urls), redact_url(urls[i]),
                                                           detail)
        if failure is not None:
            for s in shards:
                s.close()
            self._pool.shutdown()
            raise failure
        self.shards = shards
        try:
            self._check_placement()
        except BaseException:
            self.close()
            raise

    # --- running on the shards --------------------------------------------------------------
    @property
    def ef_search(self) -> int:
        """HNSW candidate list size of every shard's dense search."""
        return self.shards[0].ef_search

    @ef_search.setter
    def ef_search(self, value: int) -> None:
        for shard in self.shards:
            shard.ef_search = value

    def _unavailable(self, i: int, err: BaseException) -> ShardUnavailableError:
        return ShardUnavailableError(i + 1, len(self.shards), redact_url(self.urls[i]),
                                     str(err) or type(err).__name__)

    def _on(self, i: int, call: Callable[[PostgresStore], T]) -> T:
        """``call(shard i)`` in this thread; a lost or refused connection is
        ShardUnavailableError."""
        try:
            return call(self.shards[i])
        except (psycopg.OperationalError, psycopg.InterfaceError) as err:
            raise self._unavailable(i, err) from None

    def _each(self, call: Callable[[PostgresStore], T]) -> list[T]:
        """``call(shard)`` for every shard at once, in shard order, each in a worker thread on
        this thread's connection to that shard (:meth:`PostgresStore.acting_for`). Waits for
        every shard before raising the first shard's error, so no worker still uses a lent
        connection when this returns."""
        sessions = [s.session() for s in self.shards]

        def run(i: int) -> T:
            with self.shards[i].acting_for(sessions[i]):
                return self._on(i, call)

        futures = [self._pool.submit(run, i) for i in range(len(self.shards))]
        results: list[T] = []
        error: BaseException | None = None
        for future in futures:
            try:
                results.append(future.result())
            except BaseException as err:  # noqa: BLE001 - re-raised below, after every shard
                error = error or err
        for shard, session in zip(self.shards, sessions, strict=True):
            shard.resume(session)
        if error is not None:
            raise error
        return results

    def _home(self, document_id: str) -> int:
        return shard_of(document_id, len(self.shards))

    def shard_of(self, document_id: str) -> int:
        """The shard (0-based, the position in ``urls``) that holds or will hold the document."""
        return self._home(document_id)

    def _check_placement(self) -> None:
        """Record each server's place on first use; refuse servers whose recorded place is
        not their position in ``urls`` (see the module docstring)."""
        n = len(self.shards)

        def read(s: PostgresStore) -> tuple[str | None, bool]:
            has_documents = s.db.execute("SELECT 1 FROM documents LIMIT 1").fetchone() is not None
            return s._meta(SHARD_META_KEY), has_documents

        found = self._each(read)
        labels = [label for label, _ in found]
        ids = {label.split(" ", 1)[1] for label in labels if label and " " in label}
        expected = [f"{i + 1}/{n}" for i in range(n)]
        if (len(ids) == 1 and all(label is not None for label in labels)
                and [label.split(" ", 1)[0] for label in labels if label] == expected):
            return
        if not any(has for _, has in found):  # every shard empty: (re)label them all
            collection = uuid.uuid4().hex
            for i, shard in enumerate(self.shards):
                self._on(i, partial(_set_meta, key=SHARD_META_KEY,
                                    value=f"{i + 1}/{n} {collection}"))
            return
        for i, (label, has) in enumerate(found):
            where = f"{_SETTING}: the server listed {i + 1} of {n} ({redact_url(self.urls[i])})"
            if label is None:
                what = ("holds an index that is not sharded; copy it with citewise migrate "
                        f"--from {redact_url(self.urls[i])} --to URL1,URL2 into empty databases"
                        if has else "is not a shard of this collection yet, but the other "
                        "servers hold documents placed for other shards; adding a shard needs "
                        "a copy of the collection (citewise migrate --to URL1,URL2,...)")
                raise ConfigError(f"{where} {what}")
        first = (labels[0] or "").partition(" ")[2]
        for i, (label, _) in enumerate(found):
            where = f"{_SETTING}: the server listed {i + 1} of {n} ({redact_url(self.urls[i])})"
            place, _, collection = (label or "").partition(" ")
            if collection != first:
                raise ConfigError(f"{where} is shard {place} of another sharded collection than "
                                  "the server listed first; list only one collection's servers")
            if place != expected[i]:
                raise ConfigError(f"{where} is shard {place} of this collection: list the "
                                  "servers in the order they were first used, all of them")
        raise ConfigError(f"{_SETTING}: the servers' recorded places {labels} do not match")

    # --- binding --------------------------------------------------------------------------
    def _agreed(self, values: list[T], what: str) -> T | None:
        """The one value every shard that has one records (None when none has); IndexError_
        naming the shards that disagree."""
        have = [(i, v) for i, v in enumerate(values) if v is not None]
        if len({v for _, v in have}) > 1:
            listed = "; ".join(f"shard {i + 1}: {v}" for i, v in have)
            raise IndexError_(f"the shards of the sharded index record different {what} "
                              f"({listed}), left by a change interrupted part-way; run "
                              "citewise reindex")
        return have[0][1] if have else None

    def bind_model(self, name: str, dim: int) -> None:
        """See :meth:`Store.bind_model`: every shard is checked before any is bound, so a
        mismatch on one changes none (EmbeddingMismatchError; ConfigError for more dimensions
        than pgvector's HNSW index takes)."""
        check_dimension(dim, name)

        def state(s: PostgresStore) -> tuple[str | None, str | None, bool]:
            has = s.db.execute("SELECT 1 FROM chunks LIMIT 1").fetchone() is not None
            return s._meta("embedding_model"), s._meta("dimension"), has

        for model, stored_dim, has in self._each(state):
            check_model_binding(model, stored_dim, has, name, dim)
        self._each(lambda s: s.bind_model(name, dim))

    def stored_model(self) -> tuple[str | None, int | None]:
        """See :meth:`Store.stored_model`; IndexError_ when shards record different models."""
        agreed = self._agreed(self._each(lambda s: s.stored_model()), "embedding models")
        return agreed if agreed is not None else (None, None)

    def bind_analyzer(self, version: str, *, force: bool = False) -> None:
        """See :meth:`Store.bind_analyzer` (every shard checked before any is changed)."""

        def state(s: PostgresStore) -> tuple[str | None, bool]:
            return s._meta("analyzer"), s.db.execute(
                "SELECT 1 FROM chunks LIMIT 1").fetchone() is not None

        for stored, has in self._each(state):
            check_analyzer_binding(stored, has, version, force)
        self._each(lambda s: s.bind_analyzer(version, force=force))

    def stored_analyzer(self) -> str | None:
        """See :meth:`Store.stored_analyzer`."""
        return self._agreed(self._each(lambda s: s.stored_analyzer()), "analyzer versions")

    def mark_unfinished(self, note: str | None) -> None:
        """See :meth:`Store.mark_unfinished`: written on every shard in turn (one transaction
        each; a mark left on some shards still marks the index)."""
        self._each(lambda s: s.mark_unfinished(note))

    def unfinished(self) -> str | None:
        """The first shard's unfinished note, or None when no shard is marked."""
        return next((n for n in self._each(lambda s: s.unfinished()) if n is not None), None)

    # --- writes ---------------------------------------------------------------------------
    def upsert_document(self, document: Document, chunks: Sequence[Chunk], vectors: np.ndarray,
                        terms: Sequence[str] | None = None) -> None:
        """See :meth:`Store.upsert_document`: one transaction on the document's shard
        (:func:`shard_of`). A document of the same ``source_path`` under another id on another
        shard is deleted after the write (its own transaction; ingest derives ids from paths,
        so this happens only for documents given new ids). Raises ValueError on a shape
        mismatch, psycopg's errors after rolling the write back, ShardUnavailableError."""
        home = self._home(document.id)

        def others(s: PostgresStore) -> list[str]:
            return [r[0] for r in s.db.execute(
                "SELECT id FROM documents WHERE source_path = %s AND id <> %s",
                (document.source_path, document.id))]

        # read first: with a shard down nothing is written
        copies = self._each(others)
        self._on(home, lambda s: s.upsert_document(document, chunks, vectors, terms))
        for i, ids in enumerate(copies):
            if i != home:
                for other in ids:
                    self._on(i, partial(PostgresStore.delete_document, document_id=other))

    def record_failure(self, document: Document) -> None:
        """See :meth:`Store.record_failure`."""
        failed = replace(document, status="failed", chunk_count=0)
        self.upsert_document(failed, [], np.zeros((0, 1), dtype=np.float32), [])

    def delete_document(self, document_id: str) -> bool:
        """See :meth:`Store.delete_document` (one transaction on the document's shard)."""
        return self._on(self._home(document_id), lambda s: s.delete_document(document_id))

    @contextmanager
    def rebuild(self) -> Iterator[ShardedPostgresStore]:
        """See :meth:`Store.rebuild`: every shard's rebuild (one transaction each) is open
        while the body fills this store; they commit one after the other at the end, so a
        crash between two commits leaves some shards rebuilt and others not (run ``citewise
        reindex`` again). An exception in the body rolls every shard back."""
        with ExitStack() as stack:
            for i, shard in enumerate(self.shards):
                self._on(i, lambda s: stack.enter_context(s.rebuild()))
            yield self

    def clear(self) -> None:
        """See :meth:`Store.clear` (every shard; their placement records stay)."""
        self._each(lambda s: s.clear())

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """See :class:`~citewise.store.base.BulkLoading`: every shard's HNSW index is dropped
        on entry and the shards build theirs at the same time on exit."""
        contexts: list[AbstractContextManager[None]] = [s.bulk_load() for s in self.shards]
        entered: list[AbstractContextManager[None]] = []
        try:
            for i, context in enumerate(contexts):
                self._on(i, partial(_enter, context))
                entered.append(context)
            yield
        finally:
            self._each(lambda s: (contexts[self.shards.index(s)].__exit__(None, None, None)
                                  if contexts[self.shards.index(s)] in entered else None))

    # --- reads ----------------------------------------------------------------------------
    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """See :meth:`Store.snapshot`: one REPEATABLE READ transaction per shard, on this
        thread's connections, for the reads inside (each shard's state is one committed
        state; the shards' states are not one instant, see the module docstring)."""
        with ExitStack() as stack:
            for i, shard in enumerate(self.shards):
                self._on(i, lambda s: stack.enter_context(s.snapshot()))
            try:
                yield
            finally:
                try:
                    stack.close()
                except (psycopg.OperationalError, psycopg.InterfaceError) as err:
                    raise IndexError_(f"a shard of the sharded index failed while a read "
                                      f"ended: {err}") from None

    def generation(self) -> int:
        """A counter that grows with every committed write on any shard (their sum)."""
        return sum(self._each(lambda s: s.generation()))

    def bm25_stats(self, terms: Sequence[str]) -> BM25Stats:
        """The collection's BM25 statistics for ``terms``: every shard's, summed."""
        return BM25Stats.combine(self._each(lambda s: s.bm25_stats(terms)))

    def term_document_frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """See :meth:`Store.term_document_frequencies`: summed over the shards."""
        stats = self.bm25_stats(terms)
        return stats.chunks, {t: stats.df.get(t, 0) for t in terms}

    def dense_search(self, vector: np.ndarray, k: int, filters: Filters | None = None) -> list[Hit]:
        """See :meth:`Store.dense_search`: every shard's HNSW top ``k`` (filters applied on
        the shard first), merged by cosine (``dense`` in [-1, 1], best first). Raises
        ValueError for a query of another dimension or an unknown filter."""
        if filters:
            check_filters(filters)
        if k <= 0:
            return []
        return _merged(self._each(lambda s: s.dense_search(vector, k, filters)), k)

    def sparse_search(self, terms: Sequence[str], k: int,
                      filters: Filters | None = None) -> list[Hit]:
        """See :meth:`Store.sparse_search`: BM25 with the statistics of the whole collection
        (summed over the shards in the same snapshot), each shard's top ``k`` after the
        filters, merged: ``sparse`` >= 0, best first, equal to a single server's scores."""
        if filters:
            check_filters(filters)
        query = [t for t in terms if t]
        if not query or k <= 0:
            return []
        with self.snapshot():
            stats = self.bm25_stats(query)
            if not stats.chunks or not stats.df:
                return []
            return _merged(self._each(lambda s: s.sparse_search(query, k, filters,
                                                                stats=stats)), k)

    def languages(self) -> dict[str, int]:
        """See :meth:`Store.languages`: summed over the shards."""
        total: Counter[str] = Counter()
        for counts in self._each(lambda s: s.languages()):
            total.update(counts)
        return dict(total)

    def document(self, document_id: str) -> Document | None:
        return self._on(self._home(document_id), lambda s: s.document(document_id))

    def documents(self) -> list[Document]:
        """All documents of every shard, sorted by path (byte order, as one server)."""
        return list(heapq.merge(*self._each(lambda s: s.documents()), key=lambda d: d.path))

    def chunks_of(self, document_id: str) -> list[Chunk]:
        return self._on(self._home(document_id), lambda s: s.chunks_of(document_id))

    def chunk_features(self, document_id: str) -> list[tuple[str, frozenset[str], np.ndarray]]:
        return self._on(self._home(document_id), lambda s: s.chunk_features(document_id))

    def document_incidence(self, document_id: str, terms: Sequence[str], *,
                           vectors: bool = False,
                           query: np.ndarray | None = None) -> TermIncidence:
        """See :meth:`Store.document_incidence` (from the document's shard)."""
        return self._on(self._home(document_id),
                        lambda s: s.document_incidence(document_id, terms, vectors=vectors,
                                                       query=query))

    def documents_incidence(self, document_ids: Sequence[str], terms: Sequence[str], *,
                            query: np.ndarray | None = None) -> list[TermIncidence]:
        """See :meth:`Store.documents_incidence`: the shards holding any of the documents
        asked at once, each for its own (one statement each)."""
        homes = [self._home(d) for d in document_ids]
        if len(set(homes)) <= 1:
            return (self._on(homes[0], lambda s: s.documents_incidence(document_ids, terms,
                                                                       query=query))
                    if homes else [])
        mine = [[d for d, h in zip(document_ids, homes, strict=True) if h == i]
                for i in range(len(self.shards))]
        parts = self._each(lambda s: s.documents_incidence(mine[self.shards.index(s)], terms,
                                                           query=query))
        found = {d: inc for ids, part in zip(mine, parts, strict=True)
                 for d, inc in zip(ids, part, strict=True)}
        return [found[d] for d in document_ids]

    def chunk_incidence(self, chunk_ids: Sequence[str], terms: Sequence[str], *,
                        vectors: bool = False) -> TermIncidence:
        """See :meth:`Store.chunk_incidence`: every shard asked at once for the chunks it
        holds, rows put back in the order of ``chunk_ids`` (first occurrences)."""
        parts = self._each(lambda s: s.chunk_incidence(chunk_ids, terms, vectors=vectors))
        rows: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
        for part in parts:
            for i, cid in enumerate(part.chunk_ids):
                rows[cid] = (part.present[i], None if part.vectors is None else part.vectors[i])
        found = [c for c in dict.fromkeys(chunk_ids) if c in rows]
        present = (np.stack([rows[c][0] for c in found]) if found
                   else np.zeros((0, len(terms)), dtype=bool))
        stacked = None
        if vectors:
            dim = next((p.vectors.shape[1] for p in parts if p.vectors is not None), 1)
            kept = [v for c in found if (v := rows[c][1]) is not None]
            stacked = (np.stack(kept).astype(np.float32) if kept
                       else np.zeros((0, dim), dtype=np.float32))
        return TermIncidence(tuple(found), tuple(terms), present, stacked)

    def export(self, document_id: str) -> tuple[list[Chunk], np.ndarray, list[str]]:
        return self._on(self._home(document_id), lambda s: s.export(document_id))

    def cached_vectors(self, content_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors by content hash, from whichever shard holds the text."""
        out: dict[str, np.ndarray] = {}
        for part in self._each(lambda s: s.cached_vectors(content_hashes)):
            out.update(part)
        return out

    def _by_id(self, call: Callable[[PostgresStore], dict[str, T]]) -> dict[str, T]:
        out: dict[str, T] = {}
        for part in self._each(call):
            out.update(part)
        return out

    def get_chunks(self, chunk_ids: Sequence[str], *,
                   texts: bool = True) -> dict[str, tuple[Chunk, Document]]:
        """See :meth:`Store.get_chunks` (every shard asked at once; a chunk id is on one)."""
        return self._by_id(lambda s: s.get_chunks(chunk_ids, texts=texts))

    def terms_of(self, chunk_ids: Sequence[str]) -> dict[str, frozenset[str]]:
        return self._by_id(lambda s: s.terms_of(chunk_ids))

    def vectors_of(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        return self._by_id(lambda s: s.vectors_of(chunk_ids))

    def info(self) -> IndexInfo:
        """Documents, chunks and bytes summed over the shards; ``location`` lists the
        servers (passwords hidden)."""
        parts = self._each(lambda s: s.info())
        model, dim = self.stored_model()
        return IndexInfo(sum(p.documents for p in parts), sum(p.chunks for p in parts), model,
                         dim, sum(p.index_bytes for p in parts),
                         f"{len(parts)} PostgreSQL shards: "
                         + ", ".join(redact_url(u) for u in self.urls))

    def close(self) -> None:
        """Close every shard's connections and the worker threads."""
        for shard in getattr(self, "shards", []):
            shard.close()
        self._pool.shutdown(wait=True)


__all__ = ["SHARD_META_KEY", "ShardedPostgresStore", "jump_hash", "shard_of"]
