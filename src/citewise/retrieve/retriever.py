"""The hybrid retrieval pipeline: dense + BM25 -> fuse -> rerank -> select.

Every hit that leaves :meth:`Retriever.search` carries its dense, BM25, fused and reranker
scores and a ``relevance`` in [0, 1] that decides between an answer and "not found":

* without a reranker: ``relevance = (dense_rel + coverage) / 2``, where ``dense_rel`` is the
  cosine similarity rescaled by the embedder's typical range (:attr:`Embedder.cosine_range`,
  since cosine scales differ by model: never compare raw cosines across models) and
  ``coverage`` is the IDF-weighted share of the query's terms present in the chunk;
* with a reranker: the mean of that and ``sigmoid(reranker logit)``.

The final ranking score is ``(1 - w) * fused + w * coverage`` (fused min-max normalised over the
candidates, ``w = Settings.coverage_weight``): a chunk holding more of the question's rare
terms moves up, like Lucene's classic coordination factor. With a reranker, that score is
blended with ``sigmoid(reranker logit)`` by ``Settings.rerank_weight``.
"""

from __future__ import annotations

import math
import time
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from citewise.config import SearchMode, Settings
from citewise.errors import QueryError
from citewise.retrieve.analysis import tokenize
from citewise.retrieve.embedding import Embedder
from citewise.retrieve.fusion import fuse
from citewise.retrieve.rerank import Reranker, sigmoid
from citewise.store.sqlite import SQLiteStore
from citewise.types import Hit

_INVISIBLE = {"Cf", "Cc", "Zs", "Zl", "Zp"}


def clean_query(query: str, max_chars: int) -> str:
    """The question as searched: NUL and lone surrogates removed, whitespace collapsed, and
    for text longer than ``max_chars`` its *end* kept (a pasted page usually ends with the
    question). Raises QueryError when nothing visible is left (blank, zero-width spaces)."""
    if not isinstance(query, str):
        raise QueryError("the question must be text")
    query = query.encode("utf-8", "replace").decode("utf-8").replace("\x00", " ")
    if all(unicodedata.category(ch) in _INVISIBLE for ch in query):
        raise QueryError("the question is empty: type a question about your documents")
    query = " ".join(query.split())
    if len(query) > max_chars:
        cut = query[-max_chars:]
        query = cut.split(" ", 1)[1] if " " in cut[:100] else cut
    return query


def _tail_to_fit(text: str, embedder: Embedder) -> str:
    """The longest suffix of ``text`` within the embedder's token limit (keeps the question)."""
    limit = embedder.max_tokens - 4
    if embedder.count_tokens(text) <= limit:
        return text
    lo, hi = 0, len(text)
    while hi - lo > 8:  # smallest start index whose suffix fits
        mid = (lo + hi) // 2
        if embedder.count_tokens(text[mid:]) <= limit:
            hi = mid
        else:
            lo = mid
    return text[hi:]


class _Clock:
    """``with clock("stage_ms"):`` adds the block's wall time in ms to ``timings``."""

    def __init__(self, timings: dict[str, float]) -> None:
        self.timings = timings
        self._stage = ""
        self._t0 = 0.0

    def __call__(self, stage: str) -> _Clock:
        self._stage = stage
        return self

    def __enter__(self) -> None:
        self._t0 = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        elapsed = (time.perf_counter() - self._t0) * 1000
        self.timings[self._stage] = self.timings.get(self._stage, 0.0) + elapsed


@dataclass(frozen=True)
class SearchResult:
    """Selected hits (best first) and per-stage timings in milliseconds."""

    query: str
    hits: list[Hit]
    candidates: int
    timings_ms: dict[str, float] = field(default_factory=dict)
    reranked: bool = False

    @property
    def found(self) -> bool:
        return bool(self.hits)


class Retriever:
    """Hybrid search over one store. Thread-safe for concurrent queries."""

    def __init__(
        self, settings: Settings, store: SQLiteStore, embedder: Embedder,
        reranker: Reranker | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.reranker = reranker

    def rank(
        self, query: str, *, mode: SearchMode | str = SearchMode.HYBRID,
        k: int | None = None, filters: Mapping[str, Any] | None = None,
        rerank: bool = True, timings: dict[str, float] | None = None,
    ) -> list[Hit]:
        """All candidates, best first, with chunks loaded and every stage's score.

        ``k`` candidates are taken from each leg (default ``dense_k``/``sparse_k``); stage
        durations in ms are added to ``timings``. Raises QueryError for a blank question.
        """
        mode = SearchMode(mode)
        clock = _Clock(timings if timings is not None else {})
        query = clean_query(query, self.settings.max_query_chars)
        terms = tokenize(query)
        query_vec = None
        if mode is not SearchMode.SPARSE:
            with clock("embed_ms"):
                query_vec = self.embedder.embed_query(_tail_to_fit(query, self.embedder))
        dense_hits: list[Hit] = []
        sparse_hits: list[Hit] = []
        with self.store.snapshot():  # every read below sees one committed state
            if query_vec is not None:
                with clock("dense_ms"):
                    dense_hits = self.store.dense_search(query_vec, k or self.settings.dense_k,
                                                         filters)
            if mode is not SearchMode.DENSE:
                with clock("sparse_ms"):
                    sparse_hits = self.store.sparse_search(terms, k or self.settings.sparse_k,
                                                           filters)
            with clock("fusion_ms"):
                if mode is SearchMode.HYBRID:
                    hits = fuse(self.settings.fusion, dense_hits, sparse_hits,
                                alpha=self.settings.alpha, rrf_k=self.settings.rrf_k)
                else:
                    hits = [replace(h, fused=h.score) for h in (dense_hits or sparse_hits)]
            if not hits:
                return []
            with clock("load_ms"):
                hits = self._attach(hits, query_vec, terms)
        if rerank and self.reranker is not None:
            with clock("rerank_ms"):
                hits = self._rerank(query, hits)
        return hits

    def search(
        self, query: str, *, mode: SearchMode | str = SearchMode.HYBRID,
        top_k: int | None = None, per_file: int | None = None,
        filters: Mapping[str, Any] | None = None, min_score: float | None = None,
    ) -> SearchResult:
        """The final evidence: at most ``per_file`` chunks per file, ``top_k`` in all, each
        with ``relevance >= min_score`` (defaults from settings). Empty when nothing is
        relevant. Raises QueryError for a blank question."""
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        hits = self.rank(query, mode=mode, filters=filters, timings=timings)
        top_k = top_k or self.settings.top_k
        per_file = per_file or self.settings.per_file
        min_score = self.settings.min_score if min_score is None else min_score
        selected: list[Hit] = []
        per_doc: dict[str, int] = {}
        for hit in hits:
            if (hit.relevance or 0.0) < min_score:
                continue
            doc = hit.chunk.document_id if hit.chunk else hit.chunk_id
            if per_doc.get(doc, 0) >= per_file:
                continue
            per_doc[doc] = per_doc.get(doc, 0) + 1
            selected.append(hit)
            if len(selected) >= top_k:
                break
        timings["total_ms"] = (time.perf_counter() - t0) * 1000
        return SearchResult(
            clean_query(query, self.settings.max_query_chars), selected, len(hits), timings,
            reranked=self.reranker is not None,
        )

    # --- stages ---------------------------------------------------------------------------
    def _attach(self, hits: list[Hit], query_vec: np.ndarray | None, terms: list[str]) -> list[Hit]:
        """Load chunks, fill missing dense scores, compute coverage and relevance."""
        loaded = self.store.get_chunks([h.chunk_id for h in hits])
        hits = [h for h in hits if h.chunk_id in loaded]
        n_docs, df = self.store.term_document_frequencies(list(dict.fromkeys(terms)))
        idf = {t: math.log(1 + (n_docs - d + 0.5) / (d + 0.5)) for t, d in df.items()}
        total_idf = sum(idf[t] for t in dict.fromkeys(terms)) or 1.0
        lo, hi = self.embedder.cosine_range
        missing = [i for i, h in enumerate(hits) if h.dense is None]
        if query_vec is not None and missing:
            vecs = self.store.vectors_of([hits[i].chunk_id for i in missing])
            for i in missing:
                if hits[i].chunk_id in vecs:
                    hits[i] = replace(hits[i], dense=float(vecs[hits[i].chunk_id] @ query_vec))
        fused = np.array([h.fused if h.fused is not None else h.score for h in hits])
        span = float(fused.max() - fused.min()) if len(fused) else 0.0
        out = []
        for h, f in zip(hits, fused, strict=True):
            chunk, doc = loaded[h.chunk_id]
            chunk_terms = set(tokenize(" ".join((doc.title, *chunk.section, chunk.text))))
            coverage = sum(idf[t] for t in dict.fromkeys(terms) if t in chunk_terms) / total_idf
            dense_rel = 0.0 if h.dense is None else float(np.clip((h.dense - lo) / (hi - lo), 0, 1))
            if query_vec is None:  # sparse-only mode
                relevance = coverage
            elif not terms:
                relevance = dense_rel
            else:
                relevance = (dense_rel + coverage) / 2
            norm = (f - fused.min()) / span if span > 0 else 1.0
            w = self.settings.coverage_weight if terms else 0.0
            score = (1 - w) * norm + w * coverage
            out.append(replace(h, chunk=chunk, document=doc, relevance=relevance, score=float(score)))
        out.sort(key=lambda h: -h.score)
        return out

    def _rerank(self, query: str, hits: list[Hit]) -> list[Hit]:
        n = self.settings.rerank_candidates
        head, tail = hits[:n], hits[n:]
        passages = [
            " > ".join(p for p in (h.document.title, *h.chunk.section) if p) + "\n" + h.chunk.text
            for h in head if h.chunk is not None and h.document is not None
        ]
        logits = self.reranker.score(query, passages)  # type: ignore[union-attr]
        probs = sigmoid(logits)
        w = self.settings.rerank_weight
        reranked = [
            replace(h, rerank=float(z), score=float(w * p + (1 - w) * h.score),
                    relevance=float((p + (h.relevance or 0.0)) / 2))
            for h, z, p in zip(head, logits, probs, strict=True)
        ]
        reranked.sort(key=lambda h: -h.score)
        # candidates the reranker did not see keep their order, below every reranked one
        return reranked + [replace(h, score=h.score * 1e-3) for h in tail]
