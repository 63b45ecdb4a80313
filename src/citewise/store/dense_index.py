"""An in-memory dense index derived from a store's vectors: the SQLite store's dense stage.

The index holds the float32 matrix of every stored vector of one committed state (row i is
chunk ``rowids[i]``, row keys ascending) and, for indexes of at least
:data:`EXACT_BELOW` chunks, a binary code per vector: the signs of the vector minus the
collection's mean vector, one bit a dimension, packed into ``ceil(dim / 64)`` uint64 words
and kept word-major (``codes[w]`` is word ``w`` of every chunk, contiguous), 48 bytes a
chunk at 384-d against float32's 1,536.

A search (:meth:`DenseIndex.top`) is one of two named methods (:class:`DenseMethod`):

* ``exact``: cosine with every vector (one float32 matrix-vector product), the top ``k``;
* ``binary``: the Hamming distance between the query's code and every chunk's code (XOR and
  popcount, 1/32 of the float scan's bytes), a shortlist of the :func:`shortlist_size` nearest
  codes (every chunk tied with the last one included), then the exact float32 cosine of the
  shortlisted vectors and their top ``k``. The scores returned are exact; only a chunk whose
  code is farther than the shortlist's can be missed. Measured on real minilm embeddings
  (``benchmarks/dense_index.py``, docs/benchmarks.md) its recall@10 against ``exact`` is
  >= 0.99 with the default shortlist.

A filter is applied before either method's top ``k``: the positions it lets through are
scored (codes or vectors gathered when they are under a quarter of the index), so a filter
keeping 1% of the chunks still returns ``k`` of them, and one keeping no more chunks than
the shortlist is scored exactly.

The index knows the store generation it was built from (:attr:`DenseIndex.generation`); the
store rebuilds it when the generation it reads in a query's snapshot differs (see
:meth:`citewise.store.sqlite.SQLiteStore.dense_search`), so a deleted chunk is never served
and a committed one never missed.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np

#: below this many chunks the index keeps no codes and every search is exact: a float32 scan
#: of 20,000 384-d vectors (31 MB) takes a few ms on one core, and the shortlist would be a
#: large share of the index anyway
EXACT_BELOW = 20_000
#: the shortlist re-scored exactly is ``max(RESCORE_FACTOR * k, RESCORE_MIN)`` codes
RESCORE_FACTOR = 20
RESCORE_MIN = 1_000
#: rows coded at a time while building (bounds the build's temporary bool array)
_BUILD_BLOCK = 65_536


class DenseMethod(enum.Enum):
    """How :meth:`DenseIndex.top` finds the top ``k`` (see the module docstring)."""

    EXACT = "exact"
    BINARY = "binary"

    @classmethod
    def from_str(cls, name: str) -> DenseMethod:
        """The method called ``name``; raises ValueError listing the valid names."""
        try:
            return cls(name)
        except ValueError:
            valid = ", ".join(m.value for m in cls)
            raise ValueError(f"unknown dense search method {name!r}; use one of: {valid}") from None


def shortlist_size(k: int, factor: int = RESCORE_FACTOR, minimum: int = RESCORE_MIN) -> int:
    """Codes re-scored exactly for a top ``k``: ``max(factor * k, minimum)``."""
    return max(factor * k, minimum)


def binary_codes(vectors: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """uint64 (words, n) sign codes of float32 (n, dim) ``vectors`` around float32 (dim,)
    ``centre``: bit d of a chunk is 1 when its value in dimension d is above the centre's;
    ``words = ceil(dim / 64)``, the padding bits 0."""
    n, dim = vectors.shape
    words = -(-dim // 64)
    codes = np.zeros((n, words * 8), dtype=np.uint8)
    for start in range(0, n, _BUILD_BLOCK):
        block = vectors[start : start + _BUILD_BLOCK] > centre
        codes[start : start + block.shape[0], : -(-dim // 8)] = np.packbits(block, axis=1)
    return np.ascontiguousarray(codes.view(np.uint64).T)


def hamming(codes: np.ndarray, query_code: np.ndarray,
            positions: np.ndarray | None = None) -> np.ndarray:
    """uint16 Hamming distances between uint64 (words,) ``query_code`` and the uint64
    (words, n) ``codes`` of every chunk, or of int64 ``positions`` only (shape (m,))."""
    words = codes.shape[0]
    cols = codes if positions is None else codes[:, positions]
    m = cols.shape[1]
    total = np.zeros(m, dtype=np.uint16)
    xor = np.empty(m, dtype=np.uint64)
    bits = np.empty(m, dtype=np.uint8)
    for w in range(words):
        np.bitwise_xor(cols[w], query_code[w], out=xor)
        np.bitwise_count(xor, out=bits)
        np.add(total, bits, out=total)
    return total


def nearest_codes(distances: np.ndarray, size: int) -> np.ndarray:
    """Indices (int64, ascending) of the ``size`` smallest uint16 ``distances`` and of every
    one tied with the largest of them (a counting select: no sort)."""
    if distances.shape[0] <= size:
        return np.arange(distances.shape[0], dtype=np.int64)
    cumulative = np.cumsum(np.bincount(distances))
    cut = int(np.searchsorted(cumulative, size))
    return np.flatnonzero(distances <= cut)


def best_of(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best of float32 (m,) ``scores``: ``(indices int64 (j,), their scores
    float32 (j,))``, j <= k, by descending score, ties by ascending index; NaN left out."""
    m = scores.shape[0]
    if m == 0 or k <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    k = min(k, m)
    top = np.argpartition(scores, m - k)[m - k:]  # no negated copy of all scores
    top = top[np.lexsort((top, -scores[top]))]
    top = top[np.isfinite(scores[top])]
    return np.asarray(top, dtype=np.int64), scores[top]


def exact_top(vectors: np.ndarray, query: np.ndarray, k: int,
              rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best of float32 (n, dim) ``vectors`` (or of their int64 ascending ``rows``
    only) by dot product with float32 (dim,) ``query``, as :func:`best_of` gives them but
    indexing ``vectors``. The rows are gathered first when they are under a quarter of
    ``vectors``, else every vector is scored and the rows' scores taken."""
    if rows is None:
        return best_of(vectors @ query, k)
    if rows.shape[0] * 4 < vectors.shape[0]:
        local, scores = best_of(vectors[rows] @ query, k)
    else:
        local, scores = best_of((vectors @ query)[rows], k)
    return rows[local], scores


@dataclass
class DenseIndex:
    """The vectors of one committed store state; built by :meth:`build`.

    ``generation``: the store generation it reflects; ``rowids``: int64 (n,) ascending row
    keys, position i is chunk ``rowids[i]``; ``vectors``: float32 (n, dim), L2-normalised by
    the embedder, so dot product is cosine; ``centre``: float32 (dim,) mean vector and
    ``codes``: uint64 (words, n) sign codes (:func:`binary_codes`), both None when the index
    has fewer than ``exact_below`` chunks (every search exact).
    """

    generation: int
    rowids: np.ndarray
    vectors: np.ndarray
    centre: np.ndarray | None = None
    codes: np.ndarray | None = None
    rescore_factor: int = RESCORE_FACTOR
    rescore_min: int = RESCORE_MIN
    #: positions (int64, ascending) a filter lets through, by parsed filter (16 at most)
    allowed: dict[object, np.ndarray] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, generation: int, rowids: np.ndarray, vectors: np.ndarray, *,
              exact_below: int = EXACT_BELOW, rescore_factor: int = RESCORE_FACTOR,
              rescore_min: int = RESCORE_MIN) -> DenseIndex:
        """The index of int64 (n,) ascending ``rowids`` and their float32 (n, dim)
        ``vectors``, with binary codes when ``n >= exact_below`` (0: always, once n > 0)."""
        vectors = np.asarray(vectors, dtype=np.float32)
        centre = codes = None
        if vectors.shape[0] and vectors.shape[0] >= exact_below:
            centre = vectors.mean(axis=0, dtype=np.float64).astype(np.float32)
            codes = binary_codes(vectors, centre)
        return cls(generation, np.asarray(rowids, dtype=np.int64), vectors, centre, codes,
                   rescore_factor, rescore_min)

    @property
    def size(self) -> int:
        """Chunks indexed (``n``)."""
        return int(self.rowids.shape[0])

    @property
    def method(self) -> DenseMethod:
        """The method :meth:`top` uses by default: ``binary`` when the index has codes."""
        return DenseMethod.EXACT if self.codes is None else DenseMethod.BINARY

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays held (vectors, codes, row keys)."""
        extra = 0 if self.codes is None else self.codes.nbytes
        return int(self.vectors.nbytes + self.rowids.nbytes + extra)

    def positions_of(self, rowids: np.ndarray) -> np.ndarray:
        """Positions (int64, ascending, unique) of the given row keys; keys the index does
        not hold are dropped."""
        rowids = np.asarray(rowids, dtype=np.int64)
        at = np.searchsorted(self.rowids, rowids)
        inside = at < self.size
        at, rowids = at[inside], rowids[inside]
        return np.unique(at[self.rowids[at] == rowids])

    def top(self, query: np.ndarray, k: int, positions: np.ndarray | None = None,
            method: DenseMethod | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The best ``k`` chunks by cosine with float32 (dim,) ``query`` among int64
        ascending ``positions`` (None: all), as ``(row keys int64 (m,), exact float32 cosines
        (m,))``, m <= k, by descending cosine, ties by ascending row key. ``method``: None for
        :attr:`method`; ``binary`` on an index without codes is exact. Raises ValueError when
        the query's dimension is not the index's."""
        query = np.asarray(query, dtype=np.float32).reshape(-1)
        if query.shape[0] != self.vectors.shape[1]:
            raise ValueError(f"query vector is {query.shape[0]}-d but the index holds "
                             f"{self.vectors.shape[1]}-d vectors")
        n = self.size
        m = n if positions is None else int(positions.shape[0])
        if m == 0 or k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        method = method or self.method
        size = shortlist_size(k, self.rescore_factor, self.rescore_min)
        if method is DenseMethod.EXACT or self.codes is None or self.centre is None or m <= size:
            at, scores = exact_top(self.vectors, query, k, positions)
            return self.rowids[at], scores
        query_code = binary_codes(query[None, :], self.centre)[:, 0]
        if positions is None:
            shortlist = nearest_codes(hamming(self.codes, query_code), size)
        elif m * 4 < n:
            shortlist = positions[nearest_codes(hamming(self.codes, query_code, positions), size)]
        else:
            shortlist = positions[nearest_codes(hamming(self.codes, query_code)[positions], size)]
        at, scores = exact_top(self.vectors, query, k, shortlist)
        return self.rowids[at], scores
