"""The hybrid retrieval pipeline: dense + BM25 -> fuse -> rerank -> select.

Every hit that leaves :meth:`Retriever.search` carries its dense, BM25, fused and reranker
scores and a ``relevance`` in [0, 1] that decides between an answer and "not found":

* without a reranker: ``relevance = (dense_rel + coverage) / 2``, where ``dense_rel`` is the
  cosine similarity rescaled by the embedder's typical range (:attr:`Embedder.cosine_range`,
  since cosine scales differ by model: never compare raw cosines across models) and
  ``coverage`` is the IDF-weighted share of the query's terms present in the chunk;
* with a reranker: the mean of that and ``sigmoid(reranker logit)`` (questions in a language
  outside ``Settings.rerank_languages`` are not reranked).

The final ranking score is ``(1 - w) * fused + w * coverage`` (fused min-max normalised over the
candidates, ``w = Settings.coverage_weight``): a chunk holding more of the question's rare
terms moves up, like Lucene's classic coordination factor. With a reranker, that score is
blended with ``sigmoid(reranker logit)`` by ``Settings.rerank_weight``.

Language routing (as the S3 documentation bot does): when the index holds several languages
(chunks carry their detected language, :attr:`Chunk.language`) and the question's language
(:func:`~citewise.text.language.detect_language`) holds at least
:data:`ROUTING_MIN_SHARE` of the chunks, both legs are also searched with a ``language``
filter, and the final ranking puts the chunks in the question's language first, in their
order, then the others (their scores scaled by 1e-3, so scores stay descending). When no chunk
in that language is relevant enough, the evidence comes from the others, as before.
``Settings.language_routing`` switches it off.

Page preference (the widget's host page, :mod:`citewise.retrieve.page`): with
``prefer_document`` the best chunks of that document join the candidates (at the lowest fused
score, so they rise only by their own coverage), and they are ranked first when their best
relevance times :data:`~citewise.retrieve.page.PAGE_PRIOR` reaches the best relevance of all
(:func:`prefer_document_hits`); the relevance floor and the selection are unchanged, so a
document that answers clearly better keeps its place and the others follow in their order.
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from citewise.config import SearchMode, Settings
from citewise.embed import Embedder
from citewise.errors import QueryError
from citewise.retrieve.fusion import fuse
from citewise.retrieve.page import PAGE_PRIOR
from citewise.retrieve.rerank import Reranker, passage_text, sigmoid
from citewise.store.base import Store, TermIncidence, check_filters
from citewise.store.bm25 import idf as bm25_idf
from citewise.text.analysis import (
    content_terms,
    identifier_parts,
    tokenize,
    without_known_parts,
)
from citewise.text.language import UNDETERMINED, among, detect_language
from citewise.types import Hit

_INVISIBLE = {"Cf", "Cc", "Zs", "Zl", "Zp"}


_WORDS = re.compile(r"\w+")
#: the shorter of two near-duplicate passages holds at least this share of the longer's text
NEAR_DUPLICATE = 0.9


def passage_key(text: str) -> str:
    """A passage's text for duplicate detection: its words and numbers, case-folded, joined
    by single spaces (layout, punctuation, bullets and line breaks of one format or another
    left out: the PDF and the DOCX of one text give the same key)."""
    return " ".join(_WORDS.findall(unicodedata.normalize("NFKC", text).casefold()))


def near_duplicate(a: str, b: str) -> bool:
    """Whether two :func:`passage_key` texts are the same passage (case C19): equal, or one
    contained in the other and holding at least :data:`NEAR_DUPLICATE` of its length (a chunk
    that also holds a heading or a page footer). Versions that differ in any word or number
    ("27 days" and "28 days") are never duplicates, so both are shown."""
    if a == b:
        return bool(a)
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    return bool(short) and len(short) >= NEAR_DUPLICATE * len(long_) and short in long_


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


def document_idf(chunk_terms: list[frozenset[str]], terms: list[str],
                 collection_df: Mapping[str, int] | None = None,
                 concentration: float = 0.0) -> dict[str, float]:
    """Within-document weights of the question's terms over one document's chunks.

    The base is Lucene's smoothed IDF with the document's chunks as the collection,
    ``ln(1 + (n - df + 0.5) / (df + 0.5))``. With ``collection_df`` (chunks holding each term
    in the whole index) it is multiplied by ``1 - concentration * df / collection_df``: a term
    found *only* in this document (a party, product or title word, which is how the question
    picked the document) says little about which of its chunks answers, while a term spread
    over many documents ("governed", "laws") is the question's own vocabulary. In a
    one-document index every term gets the same factor, so nothing changes. Terms absent from
    the document are left out. :func:`idf_within` computes it from the counts alone.
    """
    counts = {t: sum(t in c for c in chunk_terms) for t in dict.fromkeys(terms)}
    return idf_within(len(chunk_terms), counts, terms, collection_df, concentration)


def idf_within(n_chunks: int, document_df: Mapping[str, int], terms: list[str],
               collection_df: Mapping[str, int] | None = None,
               concentration: float = 0.0) -> dict[str, float]:
    """:func:`document_idf` from counts: ``n_chunks`` chunks in the document, of which
    ``document_df[t]`` hold term ``t`` (a term missing from the mapping: none). Weights > 0,
    higher for a term held by fewer of the document's chunks, in the order of ``terms``
    (first occurrences); terms held by no chunk are left out."""
    out = {}
    for t in dict.fromkeys(terms):
        df = int(document_df.get(t, 0))
        if df:
            weight = bm25_idf(n_chunks, df)
            if collection_df and collection_df.get(t):
                weight *= 1 - concentration * min(1.0, df / collection_df[t])
            out[t] = weight
    return out


def weighted_presence(incidence: TermIncidence, weights: Mapping[str, float]) -> np.ndarray:
    """float64 (n_chunks,): per chunk of ``incidence``, the sum of ``weights[t]`` over the
    terms ``t`` it holds (a term in ``weights`` but not among the incidence's columns counts
    for no chunk), added in the order of ``weights``: the same float64 sums, bit for bit, as
    ``sum(w for t, w in weights.items() if t in chunk_terms)`` chunk by chunk."""
    column: dict[str, int] = {}
    for j, t in enumerate(incidence.terms):
        column.setdefault(t, j)
    total = np.zeros(incidence.present.shape[0], dtype=np.float64)
    for t, w in weights.items():
        at = column.get(t)
        if at is not None:
            total += np.where(incidence.present[:, at], w, 0.0)  # x + 0.0 == x exactly
    return total


CONCENTRATION = 0.75  # see document_idf
#: Least share of the index's chunks in the question's language for routing to apply, so a
#: few English chunks in a Russian collection do not capture every English question.
ROUTING_MIN_SHARE = 0.1


def prefer_language(hits: list[Hit], language: str) -> list[Hit]:
    """Hits whose chunk is in ``language`` first (their order kept), then the others with
    their ``score`` scaled by 1e-3 (so scores stay descending when they were)."""
    inside = [h for h in hits if h.chunk is not None and h.chunk.language == language]
    outside = [replace(h, score=h.score * 1e-3) for h in hits
               if h.chunk is None or h.chunk.language != language]
    return inside + outside


def prefer_document_hits(hits: list[Hit], document_id: str,
                         prior: float = PAGE_PRIOR) -> list[Hit]:
    """``hits`` (best first) with those of ``document_id`` moved to the front when its best
    ``relevance`` times ``prior`` reaches the best relevance of all (it is nearly as good as
    the best evidence); their scores are then raised by one amount so that its best equals
    the best score (scores stay descending). Otherwise, or when it has no hit, ``hits`` as
    they are: a document that answers clearly better keeps its place."""
    mine = [h for h in hits if h.chunk is not None and h.chunk.document_id == document_id]
    if not mine:
        return hits
    best = max((h.relevance or 0.0) for h in hits)
    if max((h.relevance or 0.0) for h in mine) * prior < best:
        return hits
    lift = max(h.score for h in hits) - mine[0].score
    others = [h for h in hits if h.chunk is None or h.chunk.document_id != document_id]
    return [replace(h, score=h.score + lift) for h in mine] + others


_CLAUSE_END = re.compile(r"[;:.!?](?=\s)|[；：。！？]")


def _needs_incidence(doc_hits: list[Hit], terms: list[str]) -> bool:
    """Whether :meth:`Retriever._within_document` reads the document's incidence: the
    question has terms and the best hit's chunk and document are known, with several
    chunks."""
    best = doc_hits[0]
    return (bool(terms) and best.chunk is not None and best.document is not None
            and best.document.chunk_count > 1)


def _document_id(hit: Hit) -> str:
    """The document of a hit whose chunk is loaded (raises ValueError otherwise)."""
    if hit.chunk is None:
        raise ValueError(f"hit {hit.chunk_id} has no chunk loaded")
    return hit.chunk.document_id


def question_clause(query: str) -> str:
    """The clause that asks: the text after the last ``;``, ``:`` or sentence end before the
    question's end, when it holds at least two content terms (:func:`content_terms`:
    "Consider the supply agreement between A and B; what is the governing law?" -> "what is
    the governing law?"); else ``query`` (a tail such as "What should I do?" or "What can I
    try?" asks about the sentences before it)."""
    body = query.rstrip()
    cuts = [m.end() for m in _CLAUSE_END.finditer(body[:-1])]
    if not cuts:
        return query
    tail = body[cuts[-1]:].strip()
    return tail if len(content_terms(tail)) >= 2 else query


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
        self, settings: Settings, store: Store, embedder: Embedder,
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
        query_vec: np.ndarray | None = None, prefer_document: str | None = None,
        lexical: str = "",
    ) -> list[Hit]:
        """All candidates, best first, with chunks loaded and every stage's score.

        ``k`` candidates are taken from each leg (default ``dense_k``/``sparse_k``); stage
        durations in ms are added to ``timings``; ``query_vec`` is the question's embedding
        when the caller already has it. ``prefer_document`` (a document id: the page the
        question is asked from, :mod:`citewise.retrieve.page`) adds that document's best
        chunks to the candidates (:meth:`_with_document`) and ranks them first when they are
        nearly as relevant as the best (:func:`prefer_document_hits`). A hybrid search of a
        question in a language the embedding model was not trained on is ranked by BM25
        alone (:meth:`dense_models`; hybrid again when BM25 finds nothing). ``lexical`` is
        more text whose BM25 terms join the question's in the sparse leg only (a rewritten
        follow-up keeps the words it was typed with: "What about a service?" rewritten to a
        standalone question still searches "service"). Raises QueryError
        for a blank question or a malformed filter (the message names it).
        """
        return self._rank(query, mode=mode, k=k, filters=filters, rerank=rerank,
                          timings=timings, query_vec=query_vec,
                          prefer_document=prefer_document, lexical=lexical, texts=True)

    def _rank(
        self, query: str, *, mode: SearchMode | str, k: int | None,
        filters: Mapping[str, Any] | None, rerank: bool, timings: dict[str, float] | None,
        query_vec: np.ndarray | None, prefer_document: str | None, lexical: str, texts: bool,
    ) -> list[Hit]:
        """:meth:`rank`; with ``texts=False`` the hits' chunks are read without their texts
        (``Store.get_chunks(..., texts=False)``: id, document id, ordinal and language only)
        unless the question is reranked, which reads them; every score and the order are the
        same either way. For :meth:`search`, whose selection reads the texts of the few hits
        it keeps (:meth:`_with_texts`)."""
        mode = SearchMode(mode)
        clock = _Clock(timings if timings is not None else {})
        query = clean_query(query, self.settings.max_query_chars)
        if filters:
            try:
                check_filters(filters)
            except ValueError as err:
                raise QueryError(str(err)) from None
        language = detect_language(query)
        terms = self.query_terms(query, language)
        if lexical.strip():
            extra = self.query_terms(lexical, language)
            terms = list(dict.fromkeys([*terms, *extra]))
        alpha = self.settings.alpha_for(language)  # the BM25 weight of weighted fusion
        if self.cross_language(language):
            alpha = self.settings.cross_language_alpha  # issue 23 item 6
        gated = mode is SearchMode.HYBRID and not self.dense_models(language)
        if gated:  # BM25 alone; the hybrid search only when it finds nothing
            mode = SearchMode.SPARSE
        if mode is SearchMode.SPARSE:
            query_vec = None
        elif query_vec is None:
            query_vec = self.embed_query(query, clock)
        with self.store.snapshot():  # every read below sees one committed state
            routed = self.routing_language(language, filters)
            hits = self._search_legs(mode, query_vec, terms, k, filters, clock, alpha)
            if routed is not None:
                preferred = self._search_legs(mode, query_vec, terms, k,
                                              {**(filters or {}), "language": routed}, clock,
                                              alpha)
                seen = {h.chunk_id for h in preferred}
                hits = preferred + [h for h in hits if h.chunk_id not in seen]
            if gated and not hits:  # no term matched: the dense leg may still (another script)
                mode = SearchMode.HYBRID
                query_vec = self.embed_query(query, clock)
                hits = self._search_legs(mode, query_vec, terms, k, filters, clock, alpha)
            if prefer_document is not None:
                hits = self._with_document(hits, prefer_document, mode, query_vec, terms,
                                           filters, clock, alpha)
            if not hits:
                return []
            reranked = rerank and self.reranks(language)
            with clock("load_ms"):
                hits = self._attach(hits, query_vec, terms, texts=texts or reranked)
        if reranked:
            with clock("rerank_ms"):
                hits = self._rerank(query, hits)
        if routed is not None:
            hits = prefer_language(hits, routed)
        if prefer_document is not None:
            hits = prefer_document_hits(hits, prefer_document)
        return hits

    def _with_document(self, hits: list[Hit], document_id: str, mode: SearchMode,
                       query_vec: np.ndarray | None, terms: list[str],
                       filters: Mapping[str, Any] | None, clock: _Clock,
                       alpha: float) -> list[Hit]:
        """``hits`` plus the best chunks of ``document_id`` within ``filters`` (both legs
        searched inside it, ``per_file`` deep) that are not among them yet. Those come in
        with the lowest fused score of ``hits``, so only their own coverage of the question
        can lift them: a search inside one document would otherwise give its best chunk the
        top fused score."""
        ids = (filters or {}).get("document_ids")
        if ids is not None and document_id not in ids:
            return hits  # the page's document is outside the question's scope
        depth = max(self.settings.per_file, self.settings.evidence_per_file)
        inside = self._search_legs(mode, query_vec, terms, depth,
                                   {**(filters or {}), "document_ids": [document_id]}, clock,
                                   alpha)
        seen = {h.chunk_id for h in hits}
        fused = [h.fused if h.fused is not None else h.score for h in hits]
        floor = min(fused) if fused else 0.0
        return hits + [replace(h, fused=floor, score=floor) for h in inside
                       if h.chunk_id not in seen]

    def query_terms(self, query: str, language: str) -> list[str]:
        """The BM25 terms of ``query`` (:func:`~citewise.text.analysis.tokenize` in
        ``language``) without the parts of an identifier the index holds whole
        (:func:`~citewise.text.analysis.without_known_parts`: "the default top_k" searches
        ``default top_k``, not also every chunk saying "top" and "k")."""
        terms = tokenize(query, language)
        parts = identifier_parts(query, language)
        if not parts:
            return terms
        _, df = self.store.term_document_frequencies(list(parts))
        return without_known_parts(terms, parts, lambda t: df.get(t, 0) > 0)

    def dense_models(self, language: str) -> bool:
        """Whether a hybrid search of a question in ``language`` uses the dense leg: the
        embedding model was trained on the language
        (:meth:`~citewise.embed.Embedder.models_language`), ``dense_language_gate`` is off,
        or less than :data:`ROUTING_MIN_SHARE` of the index is in that language (a
        cross-language question, which BM25 alone cannot answer). Else BM25 ranks alone: an
        English-only model fused with BM25 lowered nDCG@10 on XQuAD-ru from 0.950 (BM25) to
        0.622, and ``use`` lowered Kazakh legal QA from 0.780 to 0.571 (docs/benchmarks.md,
        Languages)."""
        if not self.settings.dense_language_gate or self.embedder.models_language(language):
            return True
        counts = self.store.languages()
        return counts.get(language, 0) < ROUTING_MIN_SHARE * sum(counts.values())

    def cross_language(self, language: str) -> bool:
        """Whether a question detected as ``language`` is a cross-language question the dense
        leg can match: the language is determined, under :data:`ROUTING_MIN_SHARE` of the
        index's chunks (with a detected language) are in it, and the embedding model reads
        both it and the index's most common language (``use``/``e5`` for a Russian question
        over English documents; not ``minilm``, English only). Its words rarely occur in the
        chunks, so weighted fusion uses :attr:`Settings.cross_language_alpha`
        (docs/benchmarks.md, "Cross-language questions")."""
        if not language or language == UNDETERMINED:
            return False
        counts = self.store.languages()
        total = sum(counts.values())
        if not total or counts.get(language, 0) >= ROUTING_MIN_SHARE * total:
            return False
        main = max(counts, key=lambda lang: counts[lang])
        return self.embedder.models_language(language) and self.embedder.models_language(main)

    def reranks(self, language: str) -> bool:
        """Whether a question detected as ``language`` is reranked: a reranker is loaded and
        ``Settings.rerank_languages`` is empty or holds the language (a question of no
        detected language, such as a bare identifier, is reranked)."""
        return self.reranker is not None and among(language, self.settings.rerank_languages)

    def routing_language(self, language: str,
                         filters: Mapping[str, Any] | None = None) -> str | None:
        """The language to prefer for a question in ``language``: the language itself when
        routing is on, no ``language`` filter is given, the index holds more than one detected
        language (undetermined chunks do not count) and at least :data:`ROUTING_MIN_SHARE` of
        its chunks are in ``language``; else None."""
        if not self.settings.language_routing or language == UNDETERMINED or (
                filters and filters.get("language")):
            return None
        counts = self.store.languages()
        total = sum(counts.values())
        # chunks of no detected language (numbers, symbols) do not make an index multilingual:
        # routing would only search every leg twice (store.languages() leaves out "")
        if (len(counts.keys() - {UNDETERMINED}) < 2
                or counts.get(language, 0) < ROUTING_MIN_SHARE * total):
            return None
        return language

    def _search_legs(self, mode: SearchMode, query_vec: np.ndarray | None, terms: list[str],
                     k: int | None, filters: Mapping[str, Any] | None,
                     clock: _Clock, alpha: float) -> list[Hit]:
        """Dense and/or BM25 candidates (``k`` each), fused for the hybrid mode (``alpha``:
        the BM25 weight of weighted fusion, :meth:`Settings.alpha_for` the question's
        language)."""
        dense_hits: list[Hit] = []
        sparse_hits: list[Hit] = []
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
                return fuse(self.settings.fusion, dense_hits, sparse_hits,
                            alpha=alpha, rrf_k=self.settings.rrf_k)
            return [replace(h, fused=h.score) for h in (dense_hits or sparse_hits)]

    def embed_query(self, query: str, clock: _Clock | None = None) -> np.ndarray:
        """The cleaned question's embedding (its end kept within the model's token limit)."""
        with clock("embed_ms") if clock is not None else _Clock({})("embed_ms"):
            return self.embedder.embed_query(_tail_to_fit(query, self.embedder))

    def search(
        self, query: str, *, mode: SearchMode | str = SearchMode.HYBRID,
        top_k: int | None = None, per_file: int | None = None,
        filters: Mapping[str, Any] | None = None, min_score: float | None = None,
        prefer_document: str | None = None, lexical: str = "",
    ) -> SearchResult:
        """The final evidence: at most ``per_file`` chunks per file, ``top_k`` in all, each
        with ``relevance >= min_score`` (defaults from settings). Empty when nothing is
        relevant. ``prefer_document``: a document id whose chunks are preferred (see
        :meth:`rank`); its chunks still need the relevance of any other, and other documents
        keep their places after it. ``lexical``: more words for the BM25 leg (see
        :meth:`rank`). Raises QueryError for a blank question."""
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        mode = SearchMode(mode)
        cleaned = clean_query(query, self.settings.max_query_chars)
        query_vec = None if mode is SearchMode.SPARSE else self.embed_query(cleaned, _Clock(timings))
        hits = self._rank(cleaned, mode=mode, k=None, filters=filters, rerank=True,
                          timings=timings, query_vec=query_vec,
                          prefer_document=prefer_document,
                          lexical=clean_query(lexical, self.settings.max_query_chars)
                          if lexical.strip() else "", texts=False)
        top_k = top_k or self.settings.top_k
        per_file = per_file or self.settings.per_file
        min_score = self.settings.min_score if min_score is None else min_score
        # one committed state for every read of the selection too
        with _Clock(timings)("select_ms"), self.store.snapshot():
            selected = self._select(cleaned, query_vec, hits, top_k, per_file, min_score)
        timings["total_ms"] = (time.perf_counter() - t0) * 1000
        return SearchResult(
            cleaned, selected, len(hits), timings,
            reranked=any(h.rerank is not None for h in hits),
        )

    # --- stages ---------------------------------------------------------------------------
    def _select(self, query: str, query_vec: np.ndarray | None, hits: list[Hit], top_k: int,
                per_file: int, min_score: float) -> list[Hit]:
        """Documents in the order of their best hit; within each, the ``per_file`` chunks
        that best answer the question *within that document* (:meth:`_within_document`);
        hits below ``min_score`` relevance are dropped."""
        order: dict[str, list[Hit]] = {}
        for hit in hits:
            if (hit.relevance or 0.0) >= min_score and hit.chunk is not None:
                order.setdefault(hit.chunk.document_id, []).append(hit)
        selected: list[Hit] = []
        focus = question_clause(query)
        # the question's stemmer, not the clause's; without the words that ask ("how", "do",
        # "I"): within one document they are rare, so their IDF there outweighed every word
        # the question asks about (seen: "How do I start the web chat server?")
        language = detect_language(query)
        terms = content_terms(focus, language) or tokenize(focus, language)
        # the asking clause's embedding (the question's own when the clause is all of it) and
        # the collection frequencies of its terms: the same for every document, read once
        focus_vec = query_vec
        if query_vec is not None and focus != query:
            focus_vec = self.embedder.embed_query(focus)
        n_chunks, cdf = self.store.term_document_frequencies(list(dict.fromkeys(terms)))
        keys: list[str] = []  # normalised text of each selected hit
        documents = list(order.values())
        unique = list(dict.fromkeys(terms))
        batch: list[list[Hit]] = []  # each document's picks, read in rounds (below)
        for at, doc_hits in enumerate(documents):
            if len(selected) >= top_k:
                break
            if not batch:
                # the next documents in one round of store reads: as many as are needed at
                # the least (each gives at most per_file), so none is read in vain
                round_ = documents[at:at + -(-(top_k - len(selected)) // max(per_file, 1))]
                batch = self._picks(round_, terms, unique, focus_vec, cdf, per_file, n_chunks,
                                    min_score)
            picked = batch.pop(0)
            for hit in picked:
                if hit.chunk is None:  # a chunk no longer stored
                    continue
                key = passage_key(hit.chunk.text)
                same = next((i for i, k in enumerate(keys) if near_duplicate(k, key)), None)
                if same is None:
                    selected.append(hit)
                    keys.append(key)
                    continue
                kept = selected[same]  # one source listing every file that holds the text
                held = {kept.chunk.document_id if kept.chunk else None,
                        *(d.id for d in kept.duplicates)}
                if hit.document is not None and hit.document.id not in held:
                    selected[same] = replace(kept, duplicates=(*kept.duplicates, hit.document))
        return selected[:top_k]

    def _picks(self, documents: list[list[Hit]], terms: list[str], unique: list[str],
               query_vec: np.ndarray | None, collection_df: Mapping[str, int], per_file: int,
               n_chunks: int, min_score: float) -> list[list[Hit]]:
        """:meth:`_within_document`'s chunks of each document (its hits, best first) with
        ``relevance >= min_score``, read in full (:meth:`_with_texts`); the documents'
        incidences in one ``Store.documents_incidence`` call and the texts in one
        ``get_chunks`` call (one round trip each to a server store, not two per document)."""
        asks = [i for i, hits in enumerate(documents) if _needs_incidence(hits, terms)]
        incidences = dict(zip(asks, self.store.documents_incidence(
            [_document_id(documents[i][0]) for i in asks], unique, query=query_vec),
            strict=True)) if asks else {}
        chosen = [[h for h in self._within_document(terms, query_vec, collection_df, hits,
                                                    per_file, n_chunks, incidences.get(i))
                   if (h.relevance or 0.0) >= min_score]
                  for i, hits in enumerate(documents)]
        loaded = iter(self._with_texts([h for hits in chosen for h in hits]))
        return [[next(loaded) for _ in hits] for hits in chosen]

    def _with_texts(self, hits: list[Hit]) -> list[Hit]:
        """``hits`` with their chunks and documents read in full (``Store.get_chunks``: text,
        source text, location), in the same order; a hit whose chunk is no longer stored
        keeps its own (None for one the within-document step added)."""
        if not hits:
            return hits
        loaded = self.store.get_chunks([h.chunk_id for h in hits])
        return [replace(h, chunk=loaded[h.chunk_id][0], document=loaded[h.chunk_id][1])
                if h.chunk_id in loaded else h for h in hits]

    def document_term_weights(self, document_id: str, question: str) -> dict[str, float]:
        """:func:`document_idf` of the question's terms within one document."""
        terms = tokenize(question, detect_language(question))
        unique = list(dict.fromkeys(terms))
        with self.store.snapshot():
            incidence = self.store.document_incidence(document_id, unique)
            _, cdf = self.store.term_document_frequencies(unique)
        counts = dict(zip(unique, incidence.present.sum(axis=0).tolist(), strict=True))
        return idf_within(len(incidence.chunk_ids), counts, terms, cdf, CONCENTRATION)

    def _within_document(self, terms: list[str], query_vec: np.ndarray | None,
                         collection_df: Mapping[str, int], doc_hits: list[Hit],
                         n: int, n_chunks: int,
                         features: TermIncidence | None) -> list[Hit]:
        """The ``n`` chunks of one document that best match the question, judged with
        *within-document* IDF: a term in every chunk of the document (often the name of the
        party or product the question uses to pick the document) says nothing about which
        chunk answers, while a term in one chunk ("governed", "laws") says a lot.

        Local score = ``0.5 * local coverage + 0.5 * cosine`` (cosine min-max scaled over the
        document's chunks). ``terms`` and ``query_vec`` are those of the question's asking
        clause (:func:`question_clause`; ``collection_df`` their chunk frequencies), so that
        "Consider the Sponsorship Agreement between Boyd and Cano; what is the governing law?"
        looks for the governing-law clause, not the preamble naming the parties; terms found
        only in this document weigh less (:func:`document_idf`). Only used to choose among a document's chunks, so the
        document order of the fused ranking is kept. Falls back to the fused hits when the
        question has no terms or the document has one chunk.

        ``features``: the document's incidence (``Store.documents_incidence``, with the
        question's dots), None when :func:`_needs_incidence` says none is read.

        A chosen chunk that was not a candidate comes with ``chunk`` None (read with the
        kept texts, :meth:`_with_texts`), the document's best score, fused score and
        ``source`` (the leg that found the document; no BM25 score of its own), and the
        relevance :meth:`_attach` gives it, its coverage taken from the document's incidence
        (``n_chunks``: the chunks in the index, for the collection IDF of ``collection_df``).
        """
        best = doc_hits[0]
        if features is None:  # not read: see _needs_incidence
            return doc_hits[:n]
        unique = list(dict.fromkeys(terms))
        n_local = len(features.chunk_ids)
        if n_local <= 1:
            return doc_hits[:n]
        counts = dict(zip(unique, features.present.sum(axis=0).tolist(), strict=True))
        idf = idf_within(n_local, counts, terms, collection_df, CONCENTRATION)
        total = sum(idf.values())
        if total <= 0:
            return doc_hits[:n]
        if query_vec is not None and features.dots is not None:
            cos = features.dots
        else:
            cos = np.zeros(n_local)
        span = float(cos.max() - cos.min())
        cos_norm = (cos - cos.min()) / span if span > 0 else np.ones(n_local)
        # 0.5 * sum / total + 0.5 * cosine, in that order (the float64 sums of the per-chunk
        # loop this replaced, bit for bit)
        local = (0.5 * weighted_presence(features, idf) / total
                 + 0.5 * np.asarray(cos_norm, dtype=np.float64))
        # descending, ties in the incidence's order: what sorted(key=-local[i]) gives (both
        # sorts are stable)
        ranked = np.argsort(-local, kind="stable")[:n].tolist()
        known = {h.chunk_id: h for h in doc_hits}
        chosen_ids = [features.chunk_ids[i] for i in ranked]
        missing = [cid for cid in chosen_ids if cid not in known]
        if missing:
            # as _attach: the IDF-weighted share of the question's terms, over the rows of
            # the incidence already read (the same bits as chunk_incidence's, so the same sums)
            cidf = {t: bm25_idf(n_chunks, collection_df[t]) for t in unique}
            held = weighted_presence(features, cidf) / (sum(cidf.values()) or 1.0)
            lo, hi = self.embedder.cosine_range
            for cid in missing:
                row = ranked[chosen_ids.index(cid)]
                coverage = float(held[row])
                dense = float(cos[row]) if query_vec is not None else None
                if dense is None:
                    relevance = coverage
                else:
                    dense_rel = min(max((dense - lo) / (hi - lo), 0.0), 1.0)
                    relevance = (dense_rel + coverage) / 2
                # the leg(s) that found the document: a sparse-only search never says "dense"
                known[cid] = Hit(chunk_id=cid, score=best.score, source=best.source, dense=dense,
                                 fused=best.fused, relevance=relevance, document=best.document)
        return [known[cid] for cid in chosen_ids if cid in known]


    def _attach(self, hits: list[Hit], query_vec: np.ndarray | None, terms: list[str], *,
                texts: bool = True) -> list[Hit]:
        """Load chunks (without their texts when not ``texts``, see
        ``Store.get_chunks``), fill missing dense scores, compute coverage and relevance."""
        loaded = self.store.get_chunks([h.chunk_id for h in hits], texts=texts)
        unique = list(dict.fromkeys(terms))
        incidence = self.store.chunk_incidence(list(loaded), unique)
        hits = [h for h in hits if h.chunk_id in loaded]
        n_docs, df = self.store.term_document_frequencies(unique)
        idf = {t: bm25_idf(n_docs, d) for t, d in df.items()}
        total_idf = sum(idf[t] for t in unique) or 1.0
        # the IDF-weighted share of the question's terms each chunk holds
        held = dict(zip(incidence.chunk_ids,
                        (weighted_presence(incidence, {t: idf[t] for t in unique})
                         / total_idf).tolist(), strict=True))
        lo, hi = self.embedder.cosine_range
        missing = [i for i, h in enumerate(hits) if h.dense is None]
        if query_vec is not None and missing:
            # the stored vectors (as vectors_of gives them), from the store's dense index
            # when it has one of the state read
            stored = self.store.chunk_incidence([hits[i].chunk_id for i in missing], [],
                                                vectors=True)
            vecs = ({} if stored.vectors is None
                    else dict(zip(stored.chunk_ids, stored.vectors, strict=True)))
            for i in missing:
                if hits[i].chunk_id in vecs:
                    hits[i] = replace(hits[i], dense=float(vecs[hits[i].chunk_id] @ query_vec))
        fused = np.array([h.fused if h.fused is not None else h.score for h in hits])
        low = fused.min() if len(fused) else 0.0
        span = float(fused.max() - low) if len(fused) else 0.0
        out = []
        for h, f in zip(hits, fused, strict=True):
            chunk, doc = loaded[h.chunk_id]
            coverage = held.get(h.chunk_id, 0.0)
            dense_rel = 0.0 if h.dense is None else min(max((h.dense - lo) / (hi - lo), 0.0), 1.0)
            if query_vec is None:  # sparse-only mode
                relevance = coverage
            elif not terms:
                relevance = dense_rel
            else:
                relevance = (dense_rel + coverage) / 2
            norm = (f - low) / span if span > 0 else 1.0
            w = self.settings.coverage_weight if terms else 0.0
            score = (1 - w) * norm + w * coverage
            # Hit(...) rather than dataclasses.replace: the same value, a fraction of the time
            out.append(Hit(chunk_id=h.chunk_id, score=float(score), source=h.source,
                           dense=h.dense, sparse=h.sparse, fused=h.fused, rerank=h.rerank,
                           relevance=relevance, chunk=chunk, document=doc,
                           duplicates=h.duplicates))
        out.sort(key=lambda h: -h.score)
        return out

    def _rerank(self, query: str, hits: list[Hit]) -> list[Hit]:
        n = self.settings.rerank_candidates
        head, tail = hits[:n], hits[n:]
        passages = [passage_text(h.document.title, h.chunk.section, h.chunk.text)
                    for h in head if h.chunk is not None and h.document is not None]
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
