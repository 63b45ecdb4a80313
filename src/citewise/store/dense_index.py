"""An in-memory dense index derived from a store's vectors: the SQLite store's dense stage.

The index holds the float32 matrix of every stored vector of one committed state (row i is
chunk ``rowids[i]``, row keys ascending) and, for indexes of at least :data:`EXACT_BELOW`
chunks, an int8 code per vector: each dimension scaled by the collection's largest absolute
value in that dimension to [-127, 127] and rounded (:func:`int8_codes`), 384 bytes a chunk at
384-d against float32's 1,536.

A search (:meth:`DenseIndex.top`) is one of two named methods (:class:`DenseMethod`):

* ``exact``: cosine with every vector (one float32 matrix-vector product), the top ``k``;
* ``int8``: the int8 dot product of the query's code (the query times the per-dimension
  scales, rounded to int8) with every chunk's code, computed by SimSIMD's int8 kernels
  (``simsimd.cdist``, VNNI / AVX-512 / NEON where the CPU has them), a shortlist of the
  :func:`shortlist_size` best codes, then the exact float32 cosine of the shortlisted vectors
  and their top ``k``. The scores returned are exact; only a chunk whose code ranks below the
  shortlist can be missed. Measured on real minilm embeddings (``benchmarks/dense_index.py``,
  docs/benchmarks.md) its recall@10 against ``exact`` is >= 0.99 with the default shortlist.

Binary sign codes (1 bit a dimension, Hamming distance in NumPy) were measured first and
dropped: on SciFact abstracts their recall@10 was 0.86-0.99 even re-scoring 5% of the chunks.

A filter is applied before either method's top ``k``: the positions it lets through are
scored (codes or vectors gathered when they are under a quarter of the index), so a filter
keeping 1% of the chunks still returns ``k`` of them, and one keeping no more chunks than
the shortlist is scored exactly.

The index knows the store generation it was built from (:attr:`DenseIndex.generation`); the
store rebuilds it when the generation it reads in a query's snapshot differs (see
:meth:`citewise.store.sqlite.SQLiteStore.dense_search`), so a deleted chunk is never served
and a committed one never missed. Its arrays can be saved (:meth:`DenseIndex.arrays`) and
opened memory-mapped by the next process that reads the same state
(:meth:`DenseIndex.from_arrays`, :mod:`citewise.store.derived_files`): then only the pages a
search reads are resident (a search through codes reads all codes and the shortlist's vectors).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import simsimd

#: below this many chunks the index keeps no codes and every search is exact: a float32 scan
#: of 20,000 384-d vectors (31 MB) takes a few ms on one core
EXACT_BELOW = 20_000
#: the shortlist re-scored exactly is ``max(RESCORE_FACTOR * k, RESCORE_MIN)`` codes
RESCORE_FACTOR = 10
RESCORE_MIN = 100
#: rows coded at a time while building (bounds the build's temporary bool array)
_BUILD_BLOCK = 65_536


class DenseMethod(enum.Enum):
    """How :meth:`DenseIndex.top` finds the top ``k`` (see the module docstring)."""

    EXACT = "exact"
    INT8 = "int8"

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


def int8_scales(vectors: np.ndarray) -> np.ndarray:
    """float32 (dim,) per-dimension scales of float32 (n, dim) ``vectors``: the largest
    absolute value in each dimension (1 where a dimension is all zeros)."""
    scales = np.zeros(vectors.shape[1], dtype=np.float32)
    for start in range(0, vectors.shape[0], _BUILD_BLOCK):  # no |vectors| copy of the matrix
        np.maximum(scales, np.abs(vectors[start : start + _BUILD_BLOCK]).max(axis=0), out=scales)
    return np.where(scales > 0, scales, 1.0).astype(np.float32)


def int8_codes(vectors: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """int8 (n, dim) codes of float32 (n, dim) ``vectors``: ``round(127 * x / scales)``,
    clipped to [-127, 127]."""
    codes = np.empty(vectors.shape, dtype=np.int8)
    for start in range(0, vectors.shape[0], _BUILD_BLOCK):
        block = vectors[start : start + _BUILD_BLOCK] * (127.0 / scales)
        np.clip(np.rint(block), -127, 127, out=block)
        codes[start : start + block.shape[0]] = block
    return codes


def query_code(query: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """int8 (dim,) code of float32 (dim,) ``query`` whose int8 dot product with a chunk's
    :func:`int8_codes` is proportional to the query's dot product with the chunk's
    dequantised vector: ``query * scales``, scaled so its largest absolute value is 127."""
    weighted = query * scales
    peak = float(np.abs(weighted).max())
    if peak == 0:
        return np.zeros(query.shape, dtype=np.int8)
    code: np.ndarray = np.clip(np.rint(weighted * (127.0 / peak)), -127, 127).astype(np.int8)
    return code


def int8_scores(codes: np.ndarray, code: np.ndarray) -> np.ndarray:
    """float32 (n,) int8 dot products of int8 (dim,) ``code`` with each row of int8 (n, dim)
    ``codes`` (SimSIMD; exact integers, as float32)."""
    if codes.shape[0] == 0:
        return np.zeros(0, dtype=np.float32)
    out = simsimd.cdist(code[None, :], codes, metric="dot", out_dtype="float32")
    return np.asarray(out, dtype=np.float32).reshape(-1)


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
    the embedder, so dot product is cosine; ``scales``: float32 (dim,) and ``codes``: int8
    (n, dim) (:func:`int8_codes`), both None when the index has fewer than ``exact_below``
    chunks (every search exact).
    """

    generation: int
    rowids: np.ndarray
    vectors: np.ndarray
    scales: np.ndarray | None = None
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
        ``vectors``, with int8 codes when ``n >= exact_below`` (0: always, once n > 0)."""
        vectors = np.asarray(vectors, dtype=np.float32)
        scales = codes = None
        if vectors.shape[0] and vectors.shape[0] >= exact_below:
            scales = int8_scales(vectors)
            codes = int8_codes(vectors, scales)
        return cls(generation, np.asarray(rowids, dtype=np.int64), vectors, scales, codes,
                   rescore_factor, rescore_min)

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays to save (:mod:`citewise.store.derived_files`): row keys, vectors and,
        when the index has them, scales and codes."""
        out = {"rowids": self.rowids, "vectors": self.vectors}
        if self.codes is not None and self.scales is not None:
            out |= {"scales": self.scales, "codes": self.codes}
        return out

    @classmethod
    def from_arrays(cls, generation: int, arrays: Mapping[str, np.ndarray], *,
                    exact_below: int = EXACT_BELOW, rescore_factor: int = RESCORE_FACTOR,
                    rescore_min: int = RESCORE_MIN) -> DenseIndex:
        """The index of saved :meth:`arrays` (memory-mapped or not), with codes when
        ``n >= exact_below`` (the saved ones, or computed now when none were saved); raises
        ValueError when the arrays do not fit together."""
        rowids, vectors = arrays["rowids"], arrays["vectors"]
        n = int(rowids.shape[0])
        if vectors.ndim != 2 or vectors.shape[0] != n or vectors.dtype != np.float32:
            raise ValueError("the saved dense arrays do not fit together")
        scales = codes = None
        if n and n >= exact_below:
            scales, codes = arrays.get("scales"), arrays.get("codes")
            if scales is None or codes is None or codes.shape != vectors.shape:
                scales = int8_scales(vectors)
                codes = int8_codes(vectors, scales)
        return cls(generation, rowids, vectors, scales, codes, rescore_factor, rescore_min)

    @property
    def size(self) -> int:
        """Chunks indexed (``n``)."""
        return int(self.rowids.shape[0])

    @property
    def method(self) -> DenseMethod:
        """The method :meth:`top` uses by default: ``int8`` when the index has codes."""
        return DenseMethod.EXACT if self.codes is None else DenseMethod.INT8

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
        :attr:`method`; ``int8`` on an index without codes is exact. Raises ValueError when
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
        if method is DenseMethod.EXACT or self.codes is None or self.scales is None or m <= size:
            at, scores = exact_top(self.vectors, query, k, positions)
            return self.rowids[at], scores
        code = query_code(query, self.scales)
        if positions is None:
            approx = int8_scores(self.codes, code)
        elif m * 4 < n:
            approx = int8_scores(self.codes[positions], code)
        else:
            approx = int8_scores(self.codes, code)[positions]
        best = np.argpartition(approx, m - size)[m - size:]
        shortlist = np.sort(best if positions is None else positions[best])
        at, scores = exact_top(self.vectors, query, k, shortlist)
        return self.rowids[at], scores
