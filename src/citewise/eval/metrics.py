"""Ranking metrics for retrieval evaluation, with trec_eval / pytrec_eval semantics.

Every metric is a small pure function of one query's ranking and that query's judgements:

- ``ranked_ids``: document ids, best first (a ``Sequence[str]``; scores are not needed).
- ``qrels``: ``Mapping[str, int]`` from document id to graded relevance. A grade ``<= 0`` means
  judged non-relevant; documents absent from ``qrels`` are unjudged and count as non-relevant.
- ``k``: the cutoff, an ``int >= 1``: :class:`ValueError` if below 1, :class:`TypeError` if
  not an integer. A ranking shorter than ``k`` is evaluated as it is (precision still
  divides by ``k``, as trec_eval does).

Duplicates: only the first occurrence of an id counts. Repeats are dropped *before* the cutoff,
so ``k`` counts distinct documents and the documents after a repeat move up. This is the usual
"first passage wins" (MaxP) way of turning a ranking of chunks, mapped to their document ids,
into a ranking of documents, and it gives trec_eval's numbers on a run without duplicates.

All scores are floats in ``[0, 1]``, higher is better. A query with no relevant document scores
``0.0`` on every metric here; :func:`evaluate` leaves such queries out of the means instead.

:func:`evaluate` averages the metrics over the queries of a qrels file, the way BEIR and MTEB
report them (``nDCG@10``, ``recall@100``, ...). Its results match pytrec_eval's ``ndcg_cut``,
``recall``, ``P``, ``recip_rank`` (on the run cut at ``k``) and ``success`` measures, which the
test suite checks when pytrec_eval is installed.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from enum import StrEnum

__all__ = [
    "Metric",
    "evaluate",
    "evaluate_per_query",
    "hit_at_k",
    "mrr_at_k",
    "ndcg_at_k",
    "precision_at_k",
    "recall_at_k",
]


def _check_k(k: int) -> int:
    k = operator.index(k)  # TypeError for floats and other non-integers
    if k < 1:
        raise ValueError(f"cutoff k must be an integer >= 1, got {k}")
    return k


def _top_k(ranked_ids: Iterable[str], k: int) -> list[str]:
    """The first ``k`` distinct ids of ``ranked_ids``, in order (repeats dropped)."""
    k = _check_k(k)
    seen: set[str] = set()
    top: list[str] = []
    for doc_id in ranked_ids:
        if doc_id in seen:
            continue
        seen.add(doc_id)
        top.append(doc_id)
        if len(top) == k:
            break
    return top


def _n_relevant(qrels: Mapping[str, int]) -> int:
    return sum(1 for rel in qrels.values() if rel > 0)


def ndcg_at_k(ranked_ids: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """Normalised discounted cumulative gain at ``k`` (Järvelin & Kekäläinen, 2002).

    With ``rel_i`` the grade of the document at rank ``i`` (1-based; ``0`` if unjudged or
    ``<= 0``)::

        DCG@k  = sum_{i=1..k} rel_i / log2(i + 1)
        IDCG@k = the same sum over the positive grades of ``qrels`` sorted in decreasing order
        nDCG@k = DCG@k / IDCG@k          (0.0 when the query has no relevant document)

    The gain is the grade itself (linear), not ``2**rel - 1``: this is trec_eval's
    ``ndcg_cut.k``, which BEIR and MTEB compute through pytrec_eval. Reference: K. Järvelin and
    J. Kekäläinen, "Cumulated gain-based evaluation of IR techniques", ACM TOIS 20(4), 2002;
    trec_eval ``m_ndcg_cut.c`` (github.com/usnistgov/trec_eval).

    Returns a float in ``[0, 1]``, higher is better. Raises :class:`ValueError` if ``k < 1``.
    """
    top = _top_k(ranked_ids, k)
    dcg = 0.0
    for rank, doc_id in enumerate(top, start=1):
        rel = qrels.get(doc_id, 0)
        if rel > 0:
            dcg += rel / math.log2(rank + 1)
    ideal = sorted((rel for rel in qrels.values() if rel > 0), reverse=True)[:k]
    idcg = sum(rel / math.log2(rank + 1) for rank, rel in enumerate(ideal, start=1))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranked_ids: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """Fraction of the query's relevant documents (grade > 0) found in the top ``k``.

    ``|relevant ∩ top k| / |relevant|`` (trec_eval ``recall.k``); ``0.0`` when the query has no
    relevant document. Not capped at ``k``: with 20 relevant documents recall@10 is at most 0.5.
    Returns a float in ``[0, 1]``, higher is better. Raises :class:`ValueError` if ``k < 1``.
    """
    top = _top_k(ranked_ids, k)
    n_rel = _n_relevant(qrels)
    if n_rel == 0:
        return 0.0
    return sum(1 for doc_id in top if qrels.get(doc_id, 0) > 0) / n_rel


def precision_at_k(ranked_ids: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """Fraction of the top ``k`` that is relevant: ``|relevant ∩ top k| / k`` (trec_eval ``P.k``).

    The denominator is always ``k``, even when fewer than ``k`` documents were ranked.
    Returns a float in ``[0, 1]``, higher is better. Raises :class:`ValueError` if ``k < 1``.
    """
    top = _top_k(ranked_ids, k)
    return sum(1 for doc_id in top if qrels.get(doc_id, 0) > 0) / k


def mrr_at_k(ranked_ids: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """Reciprocal rank of the first relevant document within the top ``k``, else ``0.0``.

    ``1 / rank`` with ``rank`` 1-based (trec_eval ``recip_rank`` on the ranking cut at ``k``, as
    BEIR's ``MRR@k``). Averaged over queries this is the mean reciprocal rank.
    Returns a float in ``(0, 1]`` or ``0.0``, higher is better. Raises :class:`ValueError` if
    ``k < 1``.
    """
    for rank, doc_id in enumerate(_top_k(ranked_ids, k), start=1):
        if qrels.get(doc_id, 0) > 0:
            return 1.0 / rank
    return 0.0


def hit_at_k(ranked_ids: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """``1.0`` if any relevant document is in the top ``k``, else ``0.0`` (trec_eval ``success``).

    Averaged over queries this is the hit rate (also called success@k or top-k accuracy).
    Raises :class:`ValueError` if ``k < 1``.
    """
    return 1.0 if any(qrels.get(d, 0) > 0 for d in _top_k(ranked_ids, k)) else 0.0


MetricFn = Callable[[Sequence[str], Mapping[str, int], int], float]


class Metric(StrEnum):
    """The metrics :func:`evaluate` reports; the value is the label before ``@k``."""

    NDCG = "nDCG"
    RECALL = "recall"
    PRECISION = "P"
    MRR = "MRR"
    HIT = "hit"

    @property
    def fn(self) -> MetricFn:
        return _METRIC_FNS[self]

    @classmethod
    def from_str(cls, name: str | Metric) -> Metric:
        """The metric named ``name`` (its label, any case, or member name); ``ValueError`` lists
        the valid names otherwise."""
        if isinstance(name, Metric):
            return name
        for metric in cls:
            if name.lower() in (metric.value.lower(), metric.name.lower()):
                return metric
        if name.lower() == "precision":
            return cls.PRECISION
        valid = ", ".join(m.value for m in cls)
        raise ValueError(f"unknown metric {name!r}; valid metrics: {valid}")


_METRIC_FNS: dict[Metric, MetricFn] = {
    Metric.NDCG: ndcg_at_k,
    Metric.RECALL: recall_at_k,
    Metric.PRECISION: precision_at_k,
    Metric.MRR: mrr_at_k,
    Metric.HIT: hit_at_k,
}


def _plan(ks: Iterable[int], metrics: Iterable[str | Metric]) -> list[tuple[str, MetricFn, int]]:
    ks = [_check_k(k) for k in ks]
    chosen = [Metric.from_str(m) for m in metrics]
    if not ks:
        raise ValueError("ks must hold at least one cutoff")
    if not chosen:
        raise ValueError("metrics must name at least one metric")
    return [(f"{m.value}@{k}", m.fn, k) for m in chosen for k in ks]


def evaluate_per_query(
    run: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    ks: Iterable[int] = (10, 100),
    metrics: Iterable[str | Metric] = tuple(Metric),
) -> dict[str, dict[str, float]]:
    """Every metric at every cutoff for each evaluated query.

    ``run`` maps query id to its ranked document ids (best first); ``qrels`` maps query id to
    ``{doc_id: grade}``. Evaluated queries are those of ``qrels`` with at least one grade
    ``> 0``; a query missing from ``run`` is scored on an empty ranking (0.0 everywhere), and
    queries of ``run`` absent from ``qrels`` are ignored.

    Returns ``{query_id: {"nDCG@10": ..., "recall@10": ..., ...}}``, labels ``<metric>@<k>``
    with the metric labels of :class:`Metric`. Raises :class:`ValueError` for a cutoff ``< 1``,
    an empty ``ks`` or ``metrics``, or an unknown metric name.
    """
    plan = _plan(ks, metrics)
    results: dict[str, dict[str, float]] = {}
    for query_id, judged in qrels.items():
        if _n_relevant(judged) == 0:
            continue
        ranking = run.get(query_id, ())
        results[query_id] = {label: fn(ranking, judged, k) for label, fn, k in plan}
    return results


def evaluate(
    run: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    ks: Iterable[int] = (10, 100),
    metrics: Iterable[str | Metric] = tuple(Metric),
) -> dict[str, float]:
    """Mean of every metric at every cutoff over the evaluated queries.

    Same arguments and query selection as :func:`evaluate_per_query`: the queries of ``qrels``
    with at least one relevant document (grade ``> 0``), a query missing from ``run`` counting
    as 0.0. Returns ``{"nDCG@10": ..., "nDCG@100": ..., "recall@10": ..., "P@10": ...,
    "MRR@10": ..., "hit@10": ..., ...}``, each a float in ``[0, 1]``, higher is better.

    Raises :class:`ValueError` when a cutoff is ``< 1``, ``ks`` or ``metrics`` is empty, a
    metric name is unknown, or ``qrels`` holds no query with a relevant document.
    """
    ks, metrics = tuple(ks), tuple(metrics)
    plan = _plan(ks, metrics)
    per_query = evaluate_per_query(run, qrels, ks, metrics)
    if not per_query:
        raise ValueError(
            "qrels hold no query with a relevant document (grade > 0): nothing to evaluate"
        )
    n = len(per_query)
    return {label: math.fsum(q[label] for q in per_query.values()) / n for label, _, _ in plan}
