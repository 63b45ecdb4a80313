"""An in-memory BM25 index derived from a store's analysed terms: the SQLite store's BM25 stage.

The index is a term-major (CSC-like) postings matrix over one committed state of the store:
for every term, the positions of the chunks holding it (ascending, so ascending row key) and
its count in each, plus every chunk's length. A query reads only its own terms' postings,
never the whole collection's: the cost is the query terms' postings plus one pass over a
float64 score array per query, not FTS5's candidate search and the SQL round trip of the
re-scoring that grew with every chunk holding any query term.

Scores are the Lucene BM25 of :mod:`citewise.store.bm25`, bit for bit what the SQLite store's
FTS5 path computes: the term weights are evaluated per query with the same
:func:`~citewise.store.bm25.bm25_scores` call on the same float64 inputs (``N`` chunks,
``avgdl`` the sum of ``n_terms`` over ``N``, ``df`` the term's posting count) and summed term
by term in the query's order. Unlike that path, every chunk holding a query term is scored,
so the top ``k`` is exact (FTS5 kept only its best ``max(5k, 300)`` candidates). Keeping
counts rather than precomputed weights means the IDFs may move with ``N`` without a rebuild.

The index knows the store generation it was built from (:attr:`BM25Index.generation`); the
store rebuilds it when the generation it reads in the query's snapshot differs (see
:meth:`citewise.store.sqlite.SQLiteStore.sparse_search`). Its arrays can be saved
(:meth:`BM25Index.arrays`) and opened memory-mapped by the next process that reads the same
state (:meth:`BM25Index.from_arrays`, :mod:`citewise.store.derived_files`).
"""

from __future__ import annotations

import itertools
import threading
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from citewise.store.bm25 import BM25Stats, bm25_scores
from citewise.store.derived_files import terms_array, terms_of

#: chunks whose tokens are counted at a time while building (see :meth:`BM25Index.build`)
BUILD_BLOCK = 65_536


@dataclass
class BM25Index:
    """Postings of one committed store state; built by :meth:`build`.

    ``generation``: the store generation it reflects; ``rowids``: int64 (n,) ascending row
    keys, position i is chunk ``rowids[i]``; ``lengths``: float64 (n,) chunk lengths in
    analysed tokens (``n_terms``); ``vocabulary``: term -> column; ``indptr``: int64
    (n_terms + 1,) column starts into ``positions`` (int32, chunk positions ascending within a
    column) and ``counts`` (uint16 or uint32, the term's count in that chunk).
    """

    generation: int
    rowids: np.ndarray
    lengths: np.ndarray
    vocabulary: dict[str, int]
    indptr: np.ndarray
    positions: np.ndarray
    counts: np.ndarray
    avgdl: float = 0.0
    _masks: dict[object, np.ndarray] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, generation: int, rows: Iterable[tuple[int, str, int]],
              block: int = BUILD_BLOCK) -> BM25Index:
        """The index of ``rows``: ``(row key, analysed terms, n_terms)`` in ascending row-key
        order, the terms space-separated as the store keeps them.

        Built ``block`` chunks at a time: each block's (term, chunk) pairs are counted and
        sorted on their own (:func:`_block_postings`), then every block's postings are placed
        at their term's next free slots, blocks in chunk order, so a term's chunks stay
        ascending. The peak is the postings (about 10 bytes each) plus one block's tokens, not
        four int64 arrays of every token (about 4 GB at 1M chunks)."""
        numbering: defaultdict[str, int] = defaultdict(itertools.count().__next__)
        number = numbering.__getitem__  # a new term gets the next number, in C
        rowids = array("q")
        lengths = array("q")
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        token_ids = array("q")  # 8 bytes a token, not a Python list's pointer and int
        offsets = array("q", [0])
        for rowid, terms, n_terms in rows:
            rowids.append(rowid)
            lengths.append(n_terms)
            token_ids.extend(map(number, terms.split()))
            offsets.append(len(token_ids))
            if len(offsets) > block:
                parts.append(_block_postings(token_ids, offsets, len(rowids) - block))
                token_ids, offsets = array("q"), array("q", [0])
        if len(offsets) > 1:
            parts.append(_block_postings(token_ids, offsets, len(rowids) - len(offsets) + 1))
        del token_ids, offsets
        vocabulary = dict(numbering)
        n, n_vocab = len(rowids), len(vocabulary)
        indptr = np.zeros(n_vocab + 1, dtype=np.int64)
        per_block = [np.bincount(term_of, minlength=n_vocab) for term_of, _, _ in parts]
        if per_block:
            np.cumsum(np.sum(per_block, axis=0), out=indptr[1:])
        wide = any(c.dtype == np.uint32 for _, _, c in parts)
        positions = np.empty(int(indptr[-1]), dtype=np.int32)
        counts = np.empty(int(indptr[-1]), dtype=np.uint32 if wide else np.uint16)
        free = indptr[:-1].copy()  # each term's next free slot
        for (term_of, at, count), in_block in zip(parts, per_block, strict=True):
            block_start = np.cumsum(in_block) - in_block  # a term's first posting in the block
            slot = free[term_of] + (np.arange(term_of.shape[0]) - block_start[term_of])
            positions[slot] = at
            counts[slot] = count
            free += in_block
        del parts
        length_array = np.frombuffer(lengths, dtype=np.int64).astype(np.float64)
        return cls(
            generation=generation,
            rowids=np.frombuffer(rowids, dtype=np.int64).copy(),
            lengths=length_array,
            vocabulary=vocabulary,
            indptr=indptr,
            positions=positions,
            counts=counts,
            # the SQL path's total(n_terms) / count(*): an integer sum, exact in float64
            avgdl=float(length_array.sum()) / n if n else 0.0,
        )

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays to save (:mod:`citewise.store.derived_files`); ``terms``: the
        vocabulary in column order (:func:`~citewise.store.derived_files.terms_array`)."""
        return {"rowids": self.rowids, "lengths": self.lengths, "indptr": self.indptr,
                "positions": self.positions, "counts": self.counts,
                "terms": terms_array(list(self.vocabulary))}

    @classmethod
    def from_arrays(cls, generation: int, arrays: Mapping[str, np.ndarray],
                    vocabulary: dict[str, int] | None = None) -> BM25Index:
        """The index of saved :meth:`arrays` (memory-mapped or not), its vocabulary read from
        ``arrays["terms"]`` unless given (the one the arrays were built with); raises
        ValueError when they do not fit together."""
        rowids, lengths, indptr = arrays["rowids"], arrays["lengths"], arrays["indptr"]
        positions, counts = arrays["positions"], arrays["counts"]
        n = int(rowids.shape[0])
        if (lengths.shape != (n,) or positions.shape != counts.shape or indptr.ndim != 1
                or indptr.shape[0] < 1 or int(indptr[-1]) != positions.shape[0]):
            raise ValueError("the saved BM25 arrays do not fit together")
        if vocabulary is None:
            vocabulary = terms_of(arrays["terms"], int(indptr.shape[0]) - 1)
        elif len(vocabulary) != int(indptr.shape[0]) - 1:
            raise ValueError("the vocabulary does not fit the saved BM25 arrays")
        return cls(generation=generation, rowids=rowids, lengths=lengths,
                   vocabulary=vocabulary, indptr=indptr, positions=positions, counts=counts,
                   avgdl=float(lengths.sum()) / n if n else 0.0)

    @property
    def size(self) -> int:
        """Chunks indexed (``N``)."""
        return int(self.rowids.shape[0])

    def document_frequency(self, term: str) -> int:
        """Chunks holding ``term`` (0 for a term the index has never seen)."""
        col = self.vocabulary.get(term)
        return 0 if col is None else int(self.indptr[col + 1] - self.indptr[col])

    def positions_of(self, rowids: np.ndarray) -> np.ndarray:
        """Positions (int64) of the given row keys; keys the index does not hold are dropped."""
        rowids = np.asarray(rowids, dtype=np.int64)
        at = np.searchsorted(self.rowids, rowids)
        inside = at < self.size
        at = at[inside]
        return np.asarray(at[self.rowids[at] == rowids[inside]], dtype=np.int64)

    def incidence(self, positions: np.ndarray, terms: Sequence[str]) -> np.ndarray:
        """bool (len(positions), len(terms)): whether the chunk at ``positions[i]`` (chunk
        positions, as :meth:`positions_of` gives them) holds ``terms[j]``, read from the
        term's postings (a binary search of each position in the term's column, so the cost
        is the positions times the log of the column's length, never a pass over every
        chunk). A term the index has never seen is held by no chunk."""
        # plain views: slicing a memory-mapped array through np.memmap costs more than the
        # binary search itself
        indptr, postings = self.indptr.view(np.ndarray), self.positions.view(np.ndarray)
        at = np.asarray(positions, dtype=postings.dtype)  # no cast of the columns
        out = np.zeros((at.shape[0], len(terms)), dtype=bool)
        if at.shape[0] == 0:
            return out
        for j, term in enumerate(terms):
            col = self.vocabulary.get(term)
            if col is None:
                continue
            start, end = int(indptr[col]), int(indptr[col + 1])
            if start == end:
                continue
            column = postings[start:end]
            found = np.minimum(np.searchsorted(column, at), end - start - 1)
            out[:, j] = column[found] == at
        return out

    def cached_mask(self, key: object, allowed_rowids: np.ndarray | None = None) -> np.ndarray | None:
        """The bool (n,) mask of the chunks a filter lets through, cached under ``key`` for
        this index's lifetime (one generation; at most 16 kept; an unhashable ``key`` is never
        cached). With ``allowed_rowids`` the
        mask is computed and stored; without, the cached one or None is returned."""
        cacheable = hashable(key)
        if allowed_rowids is None:
            return self._masks.get(key) if cacheable else None
        mask = np.zeros(self.size, dtype=bool)
        mask[self.positions_of(allowed_rowids)] = True
        if not cacheable:  # e.g. a ``where`` condition holding a list
            return mask
        if len(self._masks) >= 16:
            self._masks.pop(next(iter(self._masks)))
        self._masks[key] = mask
        return mask

    def scores(self, query_tf: Mapping[str, int], stats: BM25Stats | None = None) -> np.ndarray:
        """float64 (n,) BM25 score of every chunk for a query given as term -> count in the
        query; >= 0, higher is better, 0 for chunks holding no query term. Terms are added
        in the mapping's order (the FTS5 path's order, so the sums are bit-identical).
        ``stats``: the collection statistics to score with (a sharded collection's global
        ones), None: this index's own (N, avgdl and each term's posting count)."""
        n = self.size
        total = np.zeros(n, dtype=np.float64)
        n_docs, avgdl = (n, self.avgdl) if stats is None else (stats.chunks, stats.avgdl)
        for term, qtf in query_tf.items():
            col = self.vocabulary.get(term)
            if col is None:
                continue
            start, end = int(self.indptr[col]), int(self.indptr[col + 1])
            if start == end:
                continue
            at = self.positions[start:end]
            df = end - start if stats is None else stats.df.get(term, 0)
            weight = bm25_scores(self.counts[start:end].astype(np.float64), self.lengths[at],
                                 df, n_docs, avgdl)
            total[at] += qtf * weight
        return total

    def top(self, query_tf: Mapping[str, int], k: int, mask: np.ndarray | None = None,
            stats: BM25Stats | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The best ``k`` chunks for ``query_tf`` among those ``mask`` (bool (n,), None: all)
        lets through, as ``(row keys int64 (m,), scores float64 (m,))`` with m <= k, by
        descending score, ties by ascending row key; chunks scoring 0 are left out.
        ``stats``: as for :meth:`scores`."""
        if k <= 0 or self.size == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        scores = self.scores(query_tf, stats)
        if mask is not None:
            scores[~mask] = 0.0
        hit = np.flatnonzero(scores > 0)
        if hit.size > k:
            kth = np.partition(scores[hit], hit.size - k)[hit.size - k]
            hit = hit[scores[hit] >= kth]  # every chunk tied with the k-th stays a candidate
        order = np.lexsort((hit, -scores[hit]))[:k]
        best = hit[order]
        return self.rowids[best], scores[best]


def _block_postings(token_ids: array[int], offsets: array[int],
                    first: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The postings of one block of chunks: ``token_ids`` (term numbers, chunk after chunk)
    split at ``offsets`` (the block's chunk j holds ``token_ids[offsets[j]:offsets[j + 1]]``
    and is chunk ``first + j``), as ``(term int32, chunk position int32, count uint16 or
    uint32)`` arrays, one entry per (term, chunk), sorted by term, then chunk."""
    ends = np.frombuffer(offsets, dtype=np.int64)
    width = ends.shape[0] - 1
    chunk_of = np.repeat(np.arange(width, dtype=np.int64), ends[1:] - ends[:-1])
    # one key per (term, chunk): sorting groups the postings by term, chunks ascending
    keys = np.frombuffer(token_ids, dtype=np.int64) * max(width, 1) + chunk_of
    del chunk_of
    keys, counts = np.unique(keys, return_counts=True)
    count_type = np.uint16 if counts.size == 0 or counts.max() < 2**16 else np.uint32
    return ((keys // max(width, 1)).astype(np.int32),
            (keys % max(width, 1) + first).astype(np.int32), counts.astype(count_type))


class KeptIndex:
    """The one :class:`BM25Index` a store keeps, and the lock its builds take.

    :meth:`get` returns the kept index when it reflects ``generation``, else builds one under
    the lock (a second thread asking for the same generation meanwhile waits and gets that
    one: double-checked) and keeps it only when it is newer than the kept one, so a thread
    reading an older snapshot never replaces a newer index. ``index`` is None until a build.
    """

    def __init__(self) -> None:
        self.index: BM25Index | None = None
        self._lock = threading.Lock()

    def current(self, generation: int) -> BM25Index | None:
        """The kept index when it reflects ``generation``, else None (no build)."""
        index = self.index
        return index if index is not None and index.generation == generation else None

    def get(self, generation: int, build: Callable[[], BM25Index]) -> BM25Index:
        """The index of ``generation``: the kept one, or ``build()`` (called under the lock;
        its result must reflect ``generation``)."""
        index = self.current(generation)
        if index is not None:
            return index
        with self._lock:
            index = self.current(generation)
            if index is not None:
                return index
            built = build()
            if self.index is None or self.index.generation < generation:
                self.index = built
            return built


def hashable(key: object) -> bool:
    """True when ``key`` can key a dict (a filter whose ``where`` holds a list cannot)."""
    try:
        hash(key)
    except TypeError:
        return False
    return True


def query_counts(terms: Sequence[str]) -> dict[str, int]:
    """Term -> count of analysed query terms, in first-occurrence order (empty terms out)."""
    counts: dict[str, int] = {}
    for t in terms:
        if t:
            counts[t] = counts.get(t, 0) + 1
    return counts
