"""The BM25 formula both stores rank with: Lucene's variant (smoothed IDF, which is never
negative), with the Lucene/Anserini parameters of the BEIR baselines.

``idf = ln(1 + (N - df + 0.5) / (df + 0.5))`` and a term's contribution to one chunk is
``idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))`` (Robertson et al., "Okapi at
TREC-3", 1994), where ``N`` is the number of chunks, ``df`` the chunks holding the term,
``tf`` its count in the chunk, ``dl`` the chunk's length and ``avgdl`` the mean length, all in
analysed tokens (:mod:`citewise.text.analysis`). The SQLite store evaluates it in NumPy
(:func:`bm25_scores`), the PostgreSQL store in SQL (:func:`idf_sql`, :func:`term_score_sql`);
both in the same left-to-right float64 order, so the two give bit-identical scores.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

#: Lucene/Anserini BM25 parameters used for BEIR baselines.
BM25_K1 = 0.9
BM25_B = 0.4


def idf(n_docs: int, df: int) -> float:
    """Lucene's smoothed IDF of a term held by ``df`` of ``n_docs`` chunks: always > 0."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def bm25_scores(
    tf: np.ndarray, dl: np.ndarray, df: int, n_docs: int, avgdl: float,
    k1: float = BM25_K1, b: float = BM25_B,
) -> np.ndarray:
    """One term's BM25 contribution per candidate, float64 shape like ``tf``; higher is better.

    ``tf``/``dl``: the term's count and the chunk's length per candidate, in tokens (same
    shape); ``df``: chunks holding the term; ``n_docs``: chunks in the index; ``avgdl``: the
    mean chunk length in tokens (the module docstring has the formula).
    """
    norm = k1 * (1.0 - b + b * dl / max(avgdl, 1e-9))
    return idf(n_docs, df) * tf * (k1 + 1.0) / (tf + norm)


def idf_sql(n: str, df: str) -> str:
    """:func:`idf` as a PostgreSQL float8 expression over the SQL expressions ``n`` and
    ``df``."""
    return f"ln(1.0::float8 + ({n} - {df} + 0.5::float8) / ({df} + 0.5::float8))"


def term_score_sql(qtf: str, idf: str, tf: str, dl: str, avgdl: str) -> str:
    """One query term's contribution to one chunk as a PostgreSQL float8 expression,
    evaluated in the order of :func:`bm25_scores` times the term's count in the query:
    ``qtf * (idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)))``."""
    return (f"{qtf} * ({idf} * {tf} * {BM25_K1 + 1.0!r}::float8 / ({tf} + {BM25_K1!r}::float8 * "
            f"(1.0::float8 - {BM25_B!r}::float8 + {BM25_B!r}::float8 * {dl} / {avgdl})))")


@dataclass(frozen=True)
class BM25Stats:
    """The collection statistics BM25 scores with: ``chunks`` (N), ``tokens`` (the sum of the
    chunks' lengths in analysed tokens) and ``df`` (term -> chunks holding it; a term left
    out holds none). A store scores with its own by default; a sharded collection passes the
    sum over its shards (:meth:`combine`) to every shard, so each scores exactly as one server
    holding every chunk would."""

    chunks: int
    tokens: int
    df: Mapping[str, int]

    @property
    def avgdl(self) -> float:
        """Mean chunk length in tokens, as every store computes it: ``tokens / max(chunks,
        1)`` in float64 (exact integer sums, so the same bits everywhere)."""
        return float(self.tokens) / max(self.chunks, 1)

    @classmethod
    def combine(cls, parts: Sequence[BM25Stats]) -> BM25Stats:
        """The statistics of the union of disjoint collections: counts summed."""
        df: dict[str, int] = {}
        for part in parts:
            for term, n in part.df.items():
                df[term] = df.get(term, 0) + n
        return cls(sum(p.chunks for p in parts), sum(p.tokens for p in parts), df)
