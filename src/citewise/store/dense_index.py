"""An in-memory dense index derived from a store's vectors: the SQLite store's dense stage.

The index holds the float32 matrix of every stored vector of one committed state (row i is
chunk ``rowids[i]``, row keys ascending) and, for indexes of at least :data:`EXACT_BELOW`
chunks, an int8 code per vector: each dimension scaled by the collection's largest absolute
value in that dimension to [-127, 127] and rounded (:func:`int8_codes`), 384 bytes a chunk at
384-d against float32's 1,536.

A search (:meth:`DenseIndex.top`) is one of three named methods (:class:`DenseMethod`):

* ``exact``: cosine with every vector (one float32 matrix-vector product), the top ``k``;
* ``int8``: the int8 dot product of the query's code (the query times the per-dimension
  scales, rounded to int8) with every chunk's code, computed by SimSIMD's int8 kernels
  (``simsimd.cdist``, VNNI / AVX-512 / NEON where the CPU has them), a shortlist of the
  :func:`shortlist_size` best codes, then the exact float32 cosine of the shortlisted vectors
  and their top ``k``. The scores returned are exact; only a chunk whose code ranks below the
  shortlist can be missed. Measured on real minilm embeddings (``benchmarks/dense_index.py``,
  docs/benchmarks.md) its recall@10 against ``exact`` is >= 0.99 with the default shortlist.

* ``ivf_pq`` (from :data:`IVF_FROM` chunks, 200,000; the default there): inverted lists of
  4-bit product-quantisation codes (:class:`IVFPQLists`, 96 bytes a 384-d chunk) scanned by
  faiss's fast scan (``IndexIVFPQFastScan``), in the lists nearest the query until they hold
  :data:`IVF_SCAN` (30%) of the candidates, then the exact float32 cosines of the best
  ``max(40 k, 1,000)`` codes (:data:`PQ_RESCORE_FACTOR`, :data:`PQ_RESCORE_MIN`). The codes
  lose nothing measurable: on real minilm embeddings (66k chunks, 1,028 lists) recall@10
  against ``exact`` was 0.9949 at a 30% scan re-scoring 0.1% of the chunks (what 1,000 is at
  1M), 0.9954 at 0.2%, the same as scoring the scanned lists exactly (0.9954); at 1M chunks
  it took 5.3 ms p50 against ``ivf``'s 21.3 ms at the same scan (load 4 on 2 cores; 11.7
  against 37.0 at load 16; ``benchmarks/dense_ivf.py``, docs/benchmarks.md). The int8 codes
  are not kept beside it.

* ``ivf`` (from :data:`IVF_FROM` chunks when built with ``ivf_method="ivf"``): int8 codes
  held in inverted lists (:class:`IVFLists`: spherical k-means centroids trained per generation on a sample, every
  chunk in the list of its nearest centroid, codes stored list by list); a search ranks the
  centroids by dot product with the query, scans the codes of the nearest lists until they
  hold :data:`IVF_SCAN` (30%) of the candidates, and re-scores the best ``shortlist_size``
  codes exactly, as ``int8`` does. A chunk outside the scanned lists can be missed: on real
  minilm embeddings (66k chunks, ~1,000 lists, ``benchmarks/dense_ivf.py``) recall@10 against
  ``exact`` was 0.9954 at a 30% scan (0.9916 at 20%), but the scan reads 384 bytes a chunk
  (28-37 ms at 1M). Exact search stays for small indexes; a store forces it with
  ``dense_exact_below`` above its size.

Binary sign codes (1 bit a dimension, Hamming distance in NumPy) were measured first and
dropped: on SciFact abstracts their recall@10 was 0.86-0.99 even re-scoring 5% of the chunks.

A filter is applied before every method's top ``k`` (``ivf_pq``: checked code by code inside
the scan, the lists scanned until they hold the share of the filter's chunks; one keeping at
most 20,000 chunks scored exactly). For the others, the positions it lets through are scored
(codes or vectors gathered when they are under a quarter of the index), so a filter
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
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import simsimd

#: below this many chunks the index keeps no codes and every search is exact: a float32 scan
#: of 20,000 384-d vectors (31 MB) takes a few ms on one core
EXACT_BELOW = 20_000
#: the shortlist re-scored exactly is ``max(RESCORE_FACTOR * k, RESCORE_MIN)`` codes
RESCORE_FACTOR = 10
RESCORE_MIN = 100
#: up to this many gathered rows (a shortlist) are scored by ``numpy.einsum`` in the calling
#: thread rather than by BLAS: OpenBLAS splits even a 2,000 x 384 matrix-vector product over
#: its threads, and on 2 busy cores (load 13) that took 22 ms against 0.47 ms in one thread
#: (``benchmarks/dense_ivf.py``'s machine, docs/benchmarks.md)
_UNTHREADED_ROWS = 65_536
#: rows coded at a time while building (bounds the build's temporary bool array)
_BUILD_BLOCK = 65_536
#: from this many chunks a search is considered on (the index, or the positions a filter lets
#: through) the int8 codes are searched through an inverted file (:class:`IVFLists`) rather
#: than scanned whole
IVF_FROM = 200_000
#: inverted lists: ``round(IVF_LISTS_PER_ROOT * sqrt(n))`` (at least 8)
IVF_LISTS_PER_ROOT = 1.0
#: share of the candidate chunks whose codes an inverted-file search scans (the nearest
#: lists, by centroid, until their candidates add up to this share; at least the shortlist).
#: 0.3: the smallest share measured whose recall@10 on real embeddings was >= 0.99 overall
#: (0.9954; SciFact 0.992, XQuAD-en 0.990, ru 1.000, zh 1.000; 0.2 gave 0.9916 overall but
#: SciFact 0.981): docs/benchmarks.md, "Dense search at 1M chunks"
IVF_SCAN = 0.3
#: k-means rounds, and training rows per list (a sample of the vectors)
IVF_ROUNDS = 8
IVF_SAMPLE_PER_LIST = 32
#: rows assigned to their nearest centroid at a time (bounds the (rows, lists) score block)
_ASSIGN_BLOCK = 8_192
#: the structure an index of at least :data:`IVF_FROM` chunks searches through: ``ivf_pq``
#: (:class:`IVFPQLists`, 4-bit product-quantisation codes scanned by faiss's fast scan) or
#: ``ivf`` (:class:`IVFLists`, int8 codes scanned by SimSIMD)
IVF_METHOD = "ivf_pq"
#: dimensions a 4-bit product-quantisation sub-code covers (384-d: 192 sub-codes, 96 bytes a
#: chunk against int8's 384). 2: on real minilm embeddings (66k chunks, 1,028 lists, a 30%
#: scan) its recall@10 against exact was the lists' own (exact scoring inside the scanned
#: lists: 0.9954) from a shortlist of 0.2% of the chunks on; 4 dimensions a code (48 bytes)
#: gave 0.9913 at 0.2% and 8 (24 bytes) 0.926 (docs/benchmarks.md)
PQ_DIMS_PER_CODE = 2
#: an ``ivf_pq`` search re-scores exactly the best ``max(PQ_RESCORE_FACTOR * k,
#: PQ_RESCORE_MIN)`` chunks by their codes' scores
PQ_RESCORE_FACTOR = 40
PQ_RESCORE_MIN = 1_000
#: ``ivf_pq`` needs this many chunks to train its 16 centroids per sub-space (64 rows each);
#: a smaller index given ``ivf_method="ivf_pq"`` gets int8 lists (``ivf``) instead
PQ_MIN_CHUNKS = 1_024


class DenseMethod(enum.Enum):
    """How :meth:`DenseIndex.top` finds the top ``k`` (see the module docstring)."""

    EXACT = "exact"
    INT8 = "int8"
    IVF = "ivf"
    IVF_PQ = "ivf_pq"

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


def int8_codes(vectors: np.ndarray, scales: np.ndarray,
               rows: np.ndarray | None = None) -> np.ndarray:
    """int8 (n, dim) codes of float32 (n, dim) ``vectors`` (or (len(rows), dim) of
    ``vectors[rows]``, int64 ``rows``, in that order): ``round(127 * x / scales)``, clipped to
    [-127, 127]."""
    count = vectors.shape[0] if rows is None else rows.shape[0]
    codes = np.empty((count, vectors.shape[1]), dtype=np.int8)
    for start in range(0, count, _BUILD_BLOCK):
        part = (vectors[start : start + _BUILD_BLOCK] if rows is None
                else vectors[rows[start : start + _BUILD_BLOCK]])
        block = part * (127.0 / scales)
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
    ``vectors``, else every vector is scored and the rows' scores taken; up to
    :data:`_UNTHREADED_ROWS` gathered rows (or vectors, without ``rows``) are scored by
    NumPy's own loop, not BLAS, so a chunk's score is the same bits on either path."""
    if rows is None:
        # the same loop as a shortlist's below, so that a chunk's score does not depend on
        # the path that found it (BLAS and einsum may differ in the last bit)
        if vectors.shape[0] <= _UNTHREADED_ROWS:
            return best_of(np.einsum("ij,j->i", vectors, query), k)
        return best_of(vectors @ query, k)
    if rows.shape[0] <= _UNTHREADED_ROWS:  # a shortlist: no BLAS threads (see the constant)
        local, scores = best_of(np.einsum("ij,j->i", vectors[rows], query), k)
    elif rows.shape[0] * 4 < vectors.shape[0]:
        local, scores = best_of(vectors[rows] @ query, k)
    else:
        local, scores = best_of((vectors @ query)[rows], k)
    return rows[local], scores


def ivf_list_count(n: int, per_root: float = IVF_LISTS_PER_ROOT) -> int:
    """Inverted lists for ``n`` chunks: ``round(per_root * sqrt(n))``, at least 8 and at most
    ``n`` (the usual IVF rule of thumb, lists of about ``sqrt(n) / per_root`` chunks; Jégou,
    Douze & Schmid, "Product quantization for nearest neighbor search", TPAMI 2011)."""
    return max(1, min(n, max(8, round(per_root * math.sqrt(n)))))


def nearest_centroid(vectors: np.ndarray, centroids: np.ndarray,
                     rows: np.ndarray | None = None) -> np.ndarray:
    """int32 (n,) index of the float32 (lists, dim) ``centroids`` row with the largest dot
    product with each float32 (n, dim) ``vectors`` row (or each of ``vectors[rows]``); ties to
    the lower index. Computed in blocks of :data:`_ASSIGN_BLOCK` rows (BLAS matrix products)."""
    count = vectors.shape[0] if rows is None else rows.shape[0]
    out = np.empty(count, dtype=np.int32)
    for start in range(0, count, _ASSIGN_BLOCK):
        part = (vectors[start : start + _ASSIGN_BLOCK] if rows is None
                else vectors[rows[start : start + _ASSIGN_BLOCK]])
        out[start : start + part.shape[0]] = np.argmax(part @ centroids.T, axis=1)
    return out


def spherical_kmeans(sample: np.ndarray, lists: int, rounds: int = IVF_ROUNDS,
                     seed: int = 0) -> np.ndarray:
    """float32 (lists, dim) unit-norm centroids of the float32 (s, dim) unit ``sample`` rows,
    s >= lists: spherical k-means (Dhillon & Modha, "Concept decompositions for large sparse
    text data using clustering", Machine Learning 2001): each round assigns every row to the
    centroid of largest dot product and sets each centroid to its rows' normalised mean. Starts
    from ``lists`` distinct sample rows; a centroid left with no rows is set to a random sample
    row. Deterministic for a given ``seed``."""
    rng = np.random.default_rng(seed)
    centroids = np.array(sample[np.sort(rng.choice(sample.shape[0], lists, replace=False))],
                         dtype=np.float32)
    for _ in range(rounds):
        assign = nearest_centroid(sample, centroids)
        counts = np.bincount(assign, minlength=lists)
        order = np.argsort(assign, kind="stable")
        starts = (np.cumsum(counts) - counts)[counts > 0]
        sums = np.add.reduceat(sample[order], starts, axis=0)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        centroids[counts > 0] = sums / np.where(norms > 0, norms, 1.0)
        empty = np.flatnonzero(counts == 0)
        if empty.size:
            centroids[empty] = sample[rng.choice(sample.shape[0], empty.size, replace=False)]
    return centroids


@dataclass
class IVFLists:
    """An inverted file over a :class:`DenseIndex`'s int8 codes (built by :meth:`build`).

    Every chunk belongs to the list of its nearest centroid (largest dot product); the codes
    are stored list by list, so a list is one contiguous block that SimSIMD scans in place.
    ``centroids``: float32 (lists, dim), unit norm; ``offsets``: int64 (lists + 1,), list l is
    rows ``offsets[l]:offsets[l + 1]`` of ``codes``: int8 (n, dim) in list order; ``order``:
    int64 (n,), the index position of each list-ordered row (ascending within a list);
    ``where``: int64 (n,), its inverse (position -> row of ``codes``); ``assign``: int32 (n,),
    the list of each position.
    """

    centroids: np.ndarray
    offsets: np.ndarray
    order: np.ndarray
    where: np.ndarray
    assign: np.ndarray
    codes: np.ndarray

    #: the names of the arrays in :meth:`DenseIndex.arrays` (``ivf_<field>``)
    FIELDS = ("centroids", "offsets", "order", "where", "assign", "codes")

    @classmethod
    def build(cls, vectors: np.ndarray, scales: np.ndarray, lists: int, *,
              rounds: int = IVF_ROUNDS, sample_per_list: int = IVF_SAMPLE_PER_LIST,
              seed: int = 0) -> IVFLists:
        """The lists of float32 (n, dim) unit ``vectors`` (n >= 1), their codes by
        :func:`int8_codes` with ``scales``: centroids trained by :func:`spherical_kmeans` on
        ``min(n, lists * sample_per_list)`` rows drawn at random (``seed``), then every vector
        assigned (:func:`nearest_centroid`). Costs ``n * lists * dim`` multiply-adds for the
        assignment (1M x 1,000 x 384: ~10-20 s on 2 cores) plus the training."""
        n = vectors.shape[0]
        lists = max(1, min(lists, n))
        rng = np.random.default_rng(seed)
        take = min(n, lists * sample_per_list)
        sample = np.asarray(vectors[np.sort(rng.choice(n, take, replace=False))],
                            dtype=np.float32)
        centroids = spherical_kmeans(sample, lists, rounds, seed)
        del sample
        assign = nearest_centroid(vectors, centroids)
        order = np.argsort(assign, kind="stable").astype(np.int64)
        offsets = np.zeros(lists + 1, dtype=np.int64)
        np.cumsum(np.bincount(assign, minlength=lists), out=offsets[1:])
        where = np.empty(n, dtype=np.int64)
        where[order] = np.arange(n, dtype=np.int64)
        return cls(centroids, offsets, order, where, assign, int8_codes(vectors, scales, order))

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], n: int, dim: int) -> IVFLists | None:
        """The lists saved by :meth:`DenseIndex.arrays`, or None when they are missing or do
        not fit an index of ``n`` ``dim``-d chunks."""
        try:
            got = cls(*(arrays[f"ivf_{name}"] for name in cls.FIELDS))
        except KeyError:
            return None
        lists = got.centroids.shape[0]
        fits = (got.centroids.shape == (lists, dim) and got.offsets.shape == (lists + 1,)
                and got.order.shape == got.where.shape == got.assign.shape == (n,)
                and got.codes.shape == (n, dim) and got.codes.dtype == np.int8
                and lists > 0 and int(got.offsets[-1]) == n)
        return got if fits else None

    @property
    def lists(self) -> int:
        """Number of lists."""
        return int(self.centroids.shape[0])

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays held."""
        return int(sum(getattr(self, name).nbytes for name in self.FIELDS))

    def probe(self, query: np.ndarray, want: int, counts: np.ndarray | None = None) -> np.ndarray:
        """int64 ids of the lists to scan for float32 (dim,) ``query``: by descending centroid
        dot product, as many as it takes for their int64 (lists,) ``counts`` (None: their
        sizes; a filter's: the chunks it lets through in each list) to reach ``want`` (all
        lists when they never do)."""
        sizes = np.diff(self.offsets) if counts is None else counts
        ranked = np.argsort(-(self.centroids @ query), kind="stable")
        reach = np.cumsum(sizes[ranked])
        take = int(np.searchsorted(reach, want)) + 1
        return ranked[:take]


def _faiss() -> Any:
    """The faiss module, imported on first use (an index under :data:`IVF_FROM` chunks never
    loads it) and held to one OpenMP thread: a search is one query, and OpenMP's waiting
    threads made training 25x slower on 2 busy cores (0.3 s against 7.7 s measured)."""
    import faiss

    if not getattr(_faiss, "configured", False):
        faiss.omp_set_num_threads(1)
        _faiss.configured = True  # type: ignore[attr-defined]
    return faiss


def pq_sub_codes(dim: int, dims_per_code: int = PQ_DIMS_PER_CODE) -> int:
    """Product-quantisation sub-codes for ``dim``-d vectors: the largest divisor of ``dim``
    not above ``dim / dims_per_code`` (at least 1), so every sub-code covers the same number
    of dimensions (384-d, 2 a code: 192)."""
    most = max(1, dim // max(1, dims_per_code))
    return next(m for m in range(most, 0, -1) if dim % m == 0)


@dataclass
class IVFPQLists:
    """An inverted file of 4-bit product-quantisation codes over a :class:`DenseIndex`'s
    vectors, searched by faiss's fast scan (``faiss.IndexIVFPQFastScan``; André, Kermarrec &
    Le Scouarnec, "Cache locality is not enough: high-performance nearest neighbor search
    with product quantization fast scan", VLDB 2015). Built by :meth:`build`.

    Every chunk belongs to the list of its nearest centroid (the spherical k-means centroids
    :class:`IVFLists` uses); its vector is coded as :func:`pq_sub_codes` sub-codes of 4 bits
    (16 centroids per sub-space, trained per generation): 96 bytes a 384-d chunk, 4x fewer
    than int8. A search ranks the lists by
    centroid dot product, and the fast scan scores the codes of the nearest lists with
    16-entry lookup tables held in SIMD registers (AVX2 / AVX-512 / NEON as the CPU has them,
    a portable build otherwise). The faiss ids are the index positions.

    ``index``: the faiss index; ``blob``: uint8 (bytes,) its serialisation
    (``faiss.serialize_index``) when built in this process, None when read from saved bytes
    (they are not held: faiss has its own copy, and a mapped file's pages would count twice;
    :meth:`serialized` writes them again on demand); ``centroids``: float32 (lists, dim), unit
    norm; ``assign``: int32 (n,), the list of each position; ``sizes``: int64 (lists,), the
    chunks in each list; ``index_bytes``: the serialisation's size.
    """

    index: Any = field(repr=False)
    blob: np.ndarray | None = field(repr=False)
    centroids: np.ndarray
    assign: np.ndarray
    sizes: np.ndarray
    index_bytes: int

    @classmethod
    def build(cls, vectors: np.ndarray, lists: int, *, rounds: int = IVF_ROUNDS,
              sample_per_list: int = IVF_SAMPLE_PER_LIST,
              dims_per_code: int = PQ_DIMS_PER_CODE, seed: int = 0) -> IVFPQLists:
        """The lists of float32 (n, dim) unit ``vectors`` (n >= 1): centroids by
        :func:`spherical_kmeans` on ``max(lists * sample_per_list, 1024)`` rows (at most n)
        drawn at random (``seed``), the sub-quantisers trained on the same rows, then every
        vector assigned and coded by faiss (``n * lists * dim`` multiply-adds for the assignment:
        1M x 1,000 x 384 takes ~15-30 s on 2 cores)."""
        faiss = _faiss()

        n, dim = vectors.shape
        lists = max(1, min(lists, n))
        rng = np.random.default_rng(seed)
        take = min(n, max(lists * sample_per_list, 16 * 64))  # >= 64 rows per 4-bit centroid
        sample = np.asarray(vectors[np.sort(rng.choice(n, min(n, take), replace=False))],
                            dtype=np.float32)
        centroids = spherical_kmeans(sample, lists, rounds, seed)
        quantizer = faiss.IndexFlatIP(dim)
        quantizer.add(centroids)
        index = faiss.IndexIVFPQFastScan(quantizer, dim, lists, pq_sub_codes(dim, dims_per_code),
                                         4, faiss.METRIC_INNER_PRODUCT)
        index.by_residual = False  # faiss's default: the same recall here, a cheaper scan
        index.cp.seed = seed
        index.pq.cp.seed = seed
        index.train(sample)  # the quantizer holds `lists` centroids: only the PQ is trained
        del sample
        for start in range(0, n, _BUILD_BLOCK * 4):
            index.add(np.ascontiguousarray(vectors[start : start + _BUILD_BLOCK * 4],
                                           dtype=np.float32))
        blob = np.asarray(faiss.serialize_index(index), dtype=np.uint8)
        built = cls.from_blob(blob, n, dim, keep=True)
        if built is None:  # faiss gave back an index it cannot read: a bug, never expected
            raise RuntimeError("faiss could not read the IVF-PQ index it wrote")
        return built

    @classmethod
    def from_blob(cls, blob: np.ndarray, n: int | None = None, dim: int | None = None, *,
                  keep: bool = False, sub_codes: int | None = None) -> IVFPQLists | None:
        """The lists of uint8 ``blob`` (:meth:`serialized`; memory-mapped or not: faiss copies
        it, and it is held as :attr:`blob` only when ``keep``), or None when it is not an
        ``IndexIVFPQFastScan`` of ``n`` ``dim``-d chunks (None: any) with 4-bit codes of
        ``sub_codes`` sub-codes each (None: any; a saved index of another code size, from
        another version's settings, is not reused)."""
        faiss = _faiss()

        try:
            index = faiss.deserialize_index(np.ascontiguousarray(blob, dtype=np.uint8))
        except RuntimeError:
            return None
        if not isinstance(index, faiss.IndexIVFPQFastScan):
            return None
        if (n is not None and index.ntotal != n) or (dim is not None and index.d != dim):
            return None
        if int(index.pq.nbits) != 4 or (sub_codes is not None and int(index.pq.M) != sub_codes):
            return None
        lists = int(index.nlist)
        centroids = index.quantizer.reconstruct_n(0, lists).astype(np.float32)
        assign = np.empty(int(index.ntotal), dtype=np.int32)
        sizes = np.zeros(lists, dtype=np.int64)
        seen = 0
        for lst in range(lists):
            size = int(index.invlists.list_size(lst))
            if size:
                ids = faiss.rev_swig_ptr(index.invlists.get_ids(lst), size)
                if int(ids.min()) < 0 or int(ids.max()) >= assign.shape[0]:
                    return None
                assign[ids] = lst
            sizes[lst] = size
            seen += size
        if seen != assign.shape[0]:
            return None
        return cls(index, blob if keep else None, centroids, assign, sizes, int(blob.nbytes))

    @property
    def lists(self) -> int:
        """Number of lists."""
        return int(self.centroids.shape[0])

    @property
    def nbytes(self) -> int:
        """Bytes held: the index (the size of its serialisation), the list of each position
        and the centroids."""
        return int(self.index_bytes + self.assign.nbytes + self.sizes.nbytes
                   + self.centroids.nbytes)

    def serialized(self) -> np.ndarray:
        """uint8 (bytes,) the index as ``faiss.serialize_index`` writes it (:attr:`blob`, or
        written now), what :meth:`DenseIndex.arrays` saves and :meth:`from_blob` reads."""
        if self.blob is not None:
            return self.blob
        return np.asarray(_faiss().serialize_index(self.index), dtype=np.uint8)

    def shortlist(self, query: np.ndarray, size: int, want: int,
                  positions: np.ndarray | None = None, n: int = 0) -> np.ndarray:
        """Positions (int64 ascending) of the ``size`` best codes by their approximate dot
        product with float32 (dim,) ``query``, among int64 ascending ``positions`` (None: all
        ``n``), in the nearest lists until they hold ``want`` of those candidates (all lists
        when they never do). A filter is applied inside the scan (``faiss.IDSelectorBitmap``
        of the positions), so ``size`` candidates come back whenever the lists hold them."""
        faiss = _faiss()

        if positions is None:
            counts = self.sizes
            params = faiss.SearchParametersIVF()
        else:
            counts = np.bincount(self.assign[positions], minlength=self.lists)
            mask = np.zeros(n, dtype=bool)
            mask[positions] = True
            bits = np.packbits(mask, bitorder="little")  # faiss: bit i of byte i // 8
            params = faiss.SearchParametersIVF(sel=faiss.IDSelectorBitmap(n, faiss.swig_ptr(bits)))
        reach = np.cumsum(counts[np.argsort(-(self.centroids @ query), kind="stable")])
        params.nprobe = min(self.lists, int(np.searchsorted(reach, want)) + 1)
        params.max_codes = 0
        _, found = self.index.search(query[None, :], size, params=params)
        found = found[0]
        return np.sort(found[found >= 0]).astype(np.int64)


@dataclass
class DenseIndex:
    """The vectors of one committed store state; built by :meth:`build`.

    ``generation``: the store generation it reflects; ``rowids``: int64 (n,) ascending row
    keys, position i is chunk ``rowids[i]``; ``vectors``: float32 (n, dim), L2-normalised by
    the embedder, so dot product is cosine; ``scales``: float32 (dim,) (:func:`int8_scales`),
    None when the index has fewer than ``exact_below`` chunks (every search exact); ``codes``:
    int8 (n, dim) (:func:`int8_codes`) in position order, or None when there are none or
    ``ivf`` holds them (in list order): an index of at least ``ivf_from`` chunks has either
    ``ivf``, the :class:`IVFLists` of its int8 codes, or ``pq``, its :class:`IVFPQLists`
    (which one: ``ivf_method`` of :meth:`build`). ``ivf_scan``: the share of the candidates an
    inverted-file search scans.
    """

    generation: int
    rowids: np.ndarray
    vectors: np.ndarray
    scales: np.ndarray | None = None
    codes: np.ndarray | None = None
    rescore_factor: int = RESCORE_FACTOR
    rescore_min: int = RESCORE_MIN
    ivf: IVFLists | None = None
    ivf_from: int = IVF_FROM
    ivf_scan: float = IVF_SCAN
    pq: IVFPQLists | None = None
    pq_rescore_factor: int = PQ_RESCORE_FACTOR
    pq_rescore_min: int = PQ_RESCORE_MIN
    #: ``ivf_pq`` scores a filter keeping at most this many chunks exactly (their vectors
    #: gathered): cheaper than a scan that checks the filter code by code
    pq_filter_exact_below: int = EXACT_BELOW
    #: positions (int64, ascending) a filter lets through, by parsed filter (16 at most)
    allowed: dict[object, np.ndarray] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, generation: int, rowids: np.ndarray, vectors: np.ndarray, *,
              exact_below: int = EXACT_BELOW, rescore_factor: int = RESCORE_FACTOR,
              rescore_min: int = RESCORE_MIN, ivf_from: int = IVF_FROM,
              ivf_lists: int | None = None, ivf_scan: float = IVF_SCAN,
              ivf_method: str = IVF_METHOD) -> DenseIndex:
        """The index of int64 (n,) ascending ``rowids`` and their float32 (n, dim)
        ``vectors``: int8 codes when ``n >= exact_below`` (0: always, once n > 0); when also
        ``n >= ivf_from``, inverted lists (``ivf_lists`` of them, None: :func:`ivf_list_count`)
        of ``ivf_method``: ``"ivf_pq"`` (:class:`IVFPQLists`, no int8 codes kept; from
        :data:`PQ_MIN_CHUNKS` chunks, ``"ivf"`` below) or ``"ivf"`` (:class:`IVFLists`,
        holding the int8 codes); raises ValueError for another name."""
        vectors = np.asarray(vectors, dtype=np.float32)
        return cls._coded(generation, np.asarray(rowids, dtype=np.int64), vectors, {},
                          exact_below, rescore_factor, rescore_min, ivf_from, ivf_lists, ivf_scan,
                          ivf_method)

    @classmethod
    def _coded(cls, generation: int, rowids: np.ndarray, vectors: np.ndarray,
               saved: Mapping[str, np.ndarray], exact_below: int, rescore_factor: int,
               rescore_min: int, ivf_from: int, ivf_lists: int | None,
               ivf_scan: float, ivf_method: str) -> DenseIndex:
        n, dim = vectors.shape
        if DenseMethod.from_str(ivf_method) not in (DenseMethod.IVF, DenseMethod.IVF_PQ):
            raise ValueError(f"ivf_method must be ivf or ivf_pq, not {ivf_method!r}")
        scales = codes = ivf = pq = None
        pq_fits = n >= PQ_MIN_CHUNKS and ivf_method == DenseMethod.IVF_PQ.value
        if n and n >= exact_below and n >= ivf_from and pq_fits:
            blob = saved.get("pq_index")
            pq = (IVFPQLists.from_blob(blob, n, dim, sub_codes=pq_sub_codes(dim))
                  if blob is not None else None)
            if pq is None:
                pq = IVFPQLists.build(vectors, ivf_lists or ivf_list_count(n))
            scales = saved.get("scales")
            if scales is None or scales.shape != (dim,):
                scales = int8_scales(vectors)
        elif n and n >= exact_below:
            scales = saved.get("scales")
            if scales is None or scales.shape != (dim,):
                scales = int8_scales(vectors)
                saved = {}  # codes of other scales do not fit
            if n >= ivf_from:
                ivf = IVFLists.from_arrays(saved, n, dim) if saved else None
                if ivf is None:
                    ivf = IVFLists.build(vectors, scales, ivf_lists or ivf_list_count(n))
            else:
                codes = saved.get("codes")
                if codes is None or codes.shape != vectors.shape or codes.dtype != np.int8:
                    codes = int8_codes(vectors, scales)
        return cls(generation, rowids, vectors, scales, codes, rescore_factor, rescore_min,
                   ivf, ivf_from, ivf_scan, pq)

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays to save (:mod:`citewise.store.derived_files`): row keys, vectors and,
        when the index has them, scales, codes and the inverted lists (``ivf_<field>`` of
        :class:`IVFLists`, ``pq_index``: :meth:`IVFPQLists.serialized`)."""
        out = {"rowids": self.rowids, "vectors": self.vectors}
        if self.scales is not None:
            out["scales"] = self.scales
        if self.codes is not None:
            out["codes"] = self.codes
        if self.ivf is not None:
            out |= {f"ivf_{name}": getattr(self.ivf, name) for name in IVFLists.FIELDS}
        if self.pq is not None:
            out["pq_index"] = self.pq.serialized()
        return out

    @classmethod
    def from_arrays(cls, generation: int, arrays: Mapping[str, np.ndarray], *,
                    exact_below: int = EXACT_BELOW, rescore_factor: int = RESCORE_FACTOR,
                    rescore_min: int = RESCORE_MIN, ivf_from: int = IVF_FROM,
                    ivf_lists: int | None = None, ivf_scan: float = IVF_SCAN,
                    ivf_method: str = IVF_METHOD, complete: bool = False) -> DenseIndex:
        """The index of saved :meth:`arrays` (memory-mapped or not), with what :meth:`build`
        would give for its size and settings: the saved codes and lists when they fit, else
        computed now; raises ValueError when the row keys and vectors do not fit together,
        or, when ``complete``, when the codes or lists its size needs are not saved (e.g.
        arrays saved before the lists existed: the caller rebuilds and saves them)."""
        rowids, vectors = arrays["rowids"], arrays["vectors"]
        n = int(rowids.shape[0])
        if vectors.ndim != 2 or vectors.shape[0] != n or vectors.dtype != np.float32:
            raise ValueError("the saved dense arrays do not fit together")
        if complete and n and n >= exact_below:
            pq = n >= PQ_MIN_CHUNKS and ivf_method == DenseMethod.IVF_PQ.value
            need = "codes" if n < ivf_from else "pq_index" if pq else "ivf_codes"
            if need not in arrays or "scales" not in arrays:
                raise ValueError(f"the saved dense arrays lack {need}")
        return cls._coded(generation, rowids, vectors, arrays, exact_below, rescore_factor,
                          rescore_min, ivf_from, ivf_lists, ivf_scan, ivf_method)

    @property
    def size(self) -> int:
        """Chunks indexed (``n``)."""
        return int(self.rowids.shape[0])

    @property
    def method(self) -> DenseMethod:
        """The method :meth:`top` uses by default: ``ivf_pq`` or ``ivf`` when the index has
        those inverted lists, ``int8`` when it has codes, else ``exact``."""
        if self.pq is not None:
            return DenseMethod.IVF_PQ
        if self.ivf is not None:
            return DenseMethod.IVF
        return DenseMethod.EXACT if self.codes is None else DenseMethod.INT8

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays held (vectors, codes, inverted lists, row keys)."""
        extra = 0 if self.codes is None else self.codes.nbytes
        extra += 0 if self.ivf is None else self.ivf.nbytes
        extra += 0 if self.pq is None else self.pq.nbytes
        return int(self.vectors.nbytes + self.rowids.nbytes + extra)

    def positions_of(self, rowids: np.ndarray) -> np.ndarray:
        """Positions (int64, ascending, unique) of the given row keys; keys the index does
        not hold are dropped."""
        rowids = np.asarray(rowids, dtype=np.int64)
        at = np.searchsorted(self.rowids, rowids)
        inside = at < self.size
        at, rowids = at[inside], rowids[inside]
        return np.unique(at[self.rowids[at] == rowids])

    def vectors_of(self, rowids: np.ndarray) -> np.ndarray | None:
        """float32 (m, dim) vectors of int64 ``rowids`` (in their order; a C-contiguous
        copy, not a view of a mapped file), or None when one of them is not indexed."""
        rowids = np.asarray(rowids, dtype=np.int64)
        keys = self.rowids.view(np.ndarray)
        at = np.searchsorted(keys, rowids)
        if at.shape[0] and (int(at.max()) >= keys.shape[0]
                            or not np.array_equal(keys[at], rowids)):
            return None
        return self.vectors.view(np.ndarray)[at]

    def caught_up(self, generation: int, touched: np.ndarray, rowids: np.ndarray,
                  vectors: np.ndarray) -> CaughtUpDenseIndex:
        """This index brought to the newer state ``generation``: int64 ``touched`` are the
        row keys of every chunk inserted or deleted since :attr:`generation` (the chunk
        log's), int64 (e,) ascending ``rowids`` those of them the newer state holds, with
        their float32 (e, dim) ``vectors``. Raises ValueError when ``rowids`` are not
        ascending, not all touched, or do not fit ``vectors``."""
        touched = np.unique(np.asarray(touched, dtype=np.int64))
        rowids = np.asarray(rowids, dtype=np.int64)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(
            rowids.shape[0], self.vectors.shape[1])
        if rowids.shape[0] and (bool(np.any(np.diff(rowids) <= 0))
                                or not bool(np.all(np.isin(rowids, touched)))):
            raise ValueError("the changed chunks' row keys are not ascending changed keys")
        live = np.ones(self.size, dtype=bool)
        live[self.positions_of(touched)] = False
        return CaughtUpDenseIndex(generation, self, live, rowids, vectors)

    def top(self, query: np.ndarray, k: int, positions: np.ndarray | None = None,
            method: DenseMethod | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The best ``k`` chunks by cosine with float32 (dim,) ``query`` among int64
        ascending ``positions`` (None: all), as ``(row keys int64 (m,), exact float32 cosines
        (m,))``, m <= k, by descending cosine, ties by ascending row key. ``method``: None for
        :attr:`method`; ``int8`` or ``ivf`` on an index without int8 codes is exact, ``ivf``
        on one without its lists is ``int8``, ``ivf_pq`` on one without its lists is ``ivf``;
        ``ivf`` scans every code (``int8``) when fewer than ``ivf_from`` chunks are candidates
        (a filter's). ``ivf_pq`` re-scores ``max(pq_rescore_factor * k, pq_rescore_min)``
        chunks, scanning the nearest lists until they hold ``ivf_scan`` of the candidates
        (a filter's chunks counted per list, the filter checked inside the scan); a filter
        keeping at most ``pq_filter_exact_below`` chunks is scored exactly. Raises ValueError
        when the query's dimension is not the index's."""
        query = np.asarray(query, dtype=np.float32).reshape(-1)
        if query.shape[0] != self.vectors.shape[1]:
            raise ValueError(f"query vector is {query.shape[0]}-d but the index holds "
                             f"{self.vectors.shape[1]}-d vectors")
        n = self.size
        m = n if positions is None else int(positions.shape[0])
        if m == 0 or k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        method = method or self.method
        if method is DenseMethod.IVF_PQ and self.pq is not None:
            size = shortlist_size(k, self.pq_rescore_factor, self.pq_rescore_min)
            if m > max(size, 0 if positions is None else self.pq_filter_exact_below):
                want = max(math.ceil(self.ivf_scan * m), size)
                shortlist = self.pq.shortlist(query, size, want, positions, n)
                at, scores = exact_top(self.vectors, query, k, shortlist)
                return self.rowids[at], scores
            method = DenseMethod.EXACT
        if method is DenseMethod.IVF_PQ:
            method = DenseMethod.IVF
        size = shortlist_size(k, self.rescore_factor, self.rescore_min)
        coded = self.codes is not None or self.ivf is not None
        if method is DenseMethod.EXACT or not coded or self.scales is None or m <= size:
            at, scores = exact_top(self.vectors, query, k, positions)
            return self.rowids[at], scores
        code = query_code(query, self.scales)
        if method is DenseMethod.IVF and self.ivf is not None and m >= self.ivf_from:
            shortlist = self._ivf_shortlist(self.ivf, query, code, size, positions)
        else:
            shortlist = self._int8_shortlist(code, size, positions)
        at, scores = exact_top(self.vectors, query, k, shortlist)
        return self.rowids[at], scores

    def _int8_shortlist(self, code: np.ndarray, size: int,
                        positions: np.ndarray | None) -> np.ndarray:
        """Positions (int64 ascending) of the ``size`` best codes among ``positions``, every
        candidate's code scored."""
        n = self.size
        m = n if positions is None else int(positions.shape[0])
        if self.codes is not None:
            codes, rows = self.codes, positions
        else:
            assert self.ivf is not None
            codes = self.ivf.codes
            rows = None if positions is None else self.ivf.where[positions]
        if rows is None:
            approx = int8_scores(codes, code)
        elif m * 4 < n or self.codes is None:  # list order: no slice of positions to take
            approx = int8_scores(codes[rows], code)
        else:
            approx = int8_scores(codes, code)[rows]
        best = np.argpartition(approx, m - size)[m - size:]
        if positions is not None:
            return np.sort(positions[best])
        if self.ivf is not None and self.codes is None:  # rows of the list-ordered codes
            best = self.ivf.order[best]
        return np.sort(best)

    def _ivf_shortlist(self, ivf: IVFLists, query: np.ndarray, code: np.ndarray, size: int,
                       positions: np.ndarray | None) -> np.ndarray:
        """Positions (int64 ascending) of the ``size`` best codes among those of the
        candidates (``positions``, None: all) in the lists nearest ``query``, scanned until
        they hold ``max(ivf_scan * m, size)`` candidates (:meth:`IVFLists.probe`)."""
        m = self.size if positions is None else int(positions.shape[0])
        counts = None if positions is None else np.bincount(ivf.assign[positions],
                                                            minlength=ivf.lists)
        want = max(math.ceil(self.ivf_scan * m), size)
        parts, rows = [], []
        for lst in ivf.probe(query, want, counts).tolist():
            start, stop = int(ivf.offsets[lst]), int(ivf.offsets[lst + 1])
            if stop > start:
                parts.append(int8_scores(ivf.codes[start:stop], code))
                rows.append(np.arange(start, stop, dtype=np.int64))
        approx = np.concatenate(parts)
        found = ivf.order[np.concatenate(rows)]
        if positions is not None:  # keep the candidates only
            at = np.minimum(np.searchsorted(positions, found), m - 1)
            keep = positions[at] == found
            approx, found = approx[keep], found[keep]
        if found.shape[0] > size:
            found = found[np.argpartition(approx, found.shape[0] - size)[found.shape[0] - size:]]
        return np.sort(found)


#: a dense index is caught up after a write (:class:`CaughtUpDenseIndex`) while at most this
#: many chunks changed since the last full build; the changed chunks are scored exactly, so
#: this is the size below which the store searches exactly anyway (:data:`EXACT_BELOW`)
CATCH_UP_MAX_ROWS = EXACT_BELOW
#: an unfiltered search of a caught-up index asks its base for this many more chunks (at
#: most) than ``k`` and leaves the deleted ones out; past it, the live positions filter it
OVERFETCH_MAX = 1_000


@dataclass
class CaughtUpDenseIndex:
    """The dense index of a newer state than a built :class:`DenseIndex`, without a rebuild:
    ``base`` (the index last built, whose codes and lists are kept as they are) less the
    chunks changed since its generation, plus those changed chunks the newer state holds,
    scored exactly.

    ``generation``: the state it reflects; ``live``: bool (``base.size``,), False for a base
    position whose chunk was deleted or replaced since; ``extra_rowids``: int64 (e,)
    ascending row keys of the chunks written since (none of them a live base row), with
    their float32 (e, dim) ``extra_vectors``. Positions (what :meth:`positions_of` gives
    and :meth:`top` takes) are the base's for base chunks and ``base.size + j`` for
    ``extra_rowids[j]``. A search gives what a rebuilt index of the same method would,
    up to the base's approximation (the changed chunks' cosines are exact), so the same
    recall. Built by :meth:`DenseIndex.caught_up`; not saved (the base's saved files and
    the chunk log are what another process catches up from)."""

    generation: int
    base: DenseIndex
    live: np.ndarray
    extra_rowids: np.ndarray
    extra_vectors: np.ndarray
    #: positions (int64, ascending) a filter lets through, by parsed filter (16 at most)
    allowed: dict[object, np.ndarray] = field(default_factory=dict, repr=False)
    _live_positions: np.ndarray | None = field(default=None, repr=False)

    @property
    def size(self) -> int:
        """Chunks indexed."""
        return int(np.count_nonzero(self.live)) + int(self.extra_rowids.shape[0])

    @property
    def method(self) -> DenseMethod:
        """The base's method (the changed chunks are always scored exactly)."""
        return self.base.method

    @property
    def nbytes(self) -> int:
        """Bytes held: the base's and the changes'."""
        return int(self.base.nbytes + self.live.nbytes + self.extra_rowids.nbytes
                   + self.extra_vectors.nbytes)

    @property
    def changed(self) -> int:
        """Chunks changed since the base's build (deleted, replaced or written)."""
        return int(self.live.shape[0] - np.count_nonzero(self.live)) + int(
            self.extra_rowids.shape[0])

    def live_positions(self) -> np.ndarray:
        """The base positions still live, int64 ascending (computed once)."""
        if self._live_positions is None:
            self._live_positions = np.flatnonzero(self.live).astype(np.int64)
        return self._live_positions

    def positions_of(self, rowids: np.ndarray) -> np.ndarray:
        """Positions (int64, ascending, unique) of the given row keys; keys the index does
        not hold (deleted ones included) are dropped."""
        rowids = np.asarray(rowids, dtype=np.int64)
        base = self.base.positions_of(rowids)
        base = base[self.live[base]]
        at = np.searchsorted(self.extra_rowids, rowids)
        inside = at < self.extra_rowids.shape[0]
        at, wanted = at[inside], rowids[inside]
        extra = np.unique(at[self.extra_rowids[at] == wanted]) + self.base.size
        return np.concatenate([base, extra]).astype(np.int64)

    def vectors_of(self, rowids: np.ndarray) -> np.ndarray | None:
        """float32 (m, dim) vectors of int64 ``rowids`` (in their order), or None when one
        of them is not indexed."""
        rowids = np.asarray(rowids, dtype=np.int64)
        in_extra = np.isin(rowids, self.extra_rowids)
        out = np.empty((rowids.shape[0], self.extra_vectors.shape[1]), dtype=np.float32)
        if np.any(in_extra):
            at = np.searchsorted(self.extra_rowids, rowids[in_extra])
            out[in_extra] = self.extra_vectors[at]
        rest = rowids[~in_extra]
        if rest.shape[0]:
            at = np.searchsorted(self.base.rowids, rest)
            if int(at.max()) >= self.base.size or not np.array_equal(self.base.rowids[at], rest) \
                    or not bool(np.all(self.live[at])):
                return None
            out[~in_extra] = self.base.vectors.view(np.ndarray)[at]
        return out

    def top(self, query: np.ndarray, k: int, positions: np.ndarray | None = None,
            method: DenseMethod | None = None) -> tuple[np.ndarray, np.ndarray]:
        """As :meth:`DenseIndex.top`: the best ``k`` chunks by cosine among int64 ascending
        ``positions`` (None: all), ``(row keys int64 (m,), exact float32 cosines (m,))`` by
        descending cosine, ties by ascending row key: the base's search over its live
        positions merged with the exact scores of the changed chunks."""
        nb = self.base.size
        dead = nb - int(self.live_positions().shape[0])
        if positions is None:
            extra_at = None
            if dead <= max(k, OVERFETCH_MAX):
                # the base's own search for ``dead`` more, the dead left out: cheaper than a
                # filter of nearly every position, and for an exact base the same top ``k``
                rowids, scores = self.base.top(query, k + dead, None, method)
                if dead:
                    alive = self.live[np.searchsorted(self.base.rowids, rowids)]
                    rowids, scores = rowids[alive][:k], scores[alive][:k]
            else:
                rowids, scores = self.base.top(query, k, self.live_positions(), method)
        else:
            cut = int(np.searchsorted(positions, nb))
            extra_at = positions[cut:] - nb
            rowids, scores = self.base.top(query, k, positions[:cut], method)
        if self.extra_rowids.shape[0] and (extra_at is None or extra_at.shape[0]):
            query = np.asarray(query, dtype=np.float32).reshape(-1)
            at, more = exact_top(self.extra_vectors, query, k, extra_at)
            rowids = np.concatenate([rowids, self.extra_rowids[at]])
            scores = np.concatenate([scores, more])
            order = np.lexsort((rowids, -scores))[:k]
            rowids, scores = rowids[order], scores[order]
        return rowids, scores
