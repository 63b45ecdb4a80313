"""Extractive answers: the evidence sentences that best answer the question, each cited.

Used when no LLM is configured or the LLM fails. Each candidate sentence of the selected
evidence (table rows with their column names; for code, the symbol or windows of
``CODE_WINDOW`` lines) is scored ``0.6 * cosine(sentence, question) + 0.4 * coverage``, where
``coverage`` is the weighted share of the question's terms in the sentence (weight = collection
IDF x IDF within the evidence's document), plus ``0.05 / rank`` of its evidence. The best ``max_sentences`` whose score is at least ``RELATIVE_FLOOR`` of the best one
are returned best first, each followed by its citation number ``[n]``. Table rows read
"Full name: Mara Lindqvist; Department: Logistics".
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence

from citewise.answer.answerer import NOT_FOUND
from citewise.answer.selection import candidates
from citewise.embed import Embedder
from citewise.store.bm25 import idf as bm25_idf
from citewise.text.analysis import tokenize
from citewise.text.language import detect_language
from citewise.types import Answer, DoneEvent, Event, Evidence, StatusEvent, TokenEvent

RELATIVE_FLOOR = 0.75
OTHER_FILE_FLOOR = 0.92


def _candidates(evidence: Evidence) -> list[str]:
    """The answer candidates' texts (:func:`citewise.answer.selection.candidates`)."""
    return [c.text for c in candidates(evidence, 0)]


#: an interactive example's prompt: Python's ">>>" or "...", a shell's "$"
_PROMPT = re.compile(r"(?:^|\s)(?:>>>|\.\.\.|\$)\s")
#: a bracketed number (list or range) as answers cite, not a Markdown link "[1](url)" nor
#: part of a value shown in the text ("<Response [200]>", "[3]=")
_MARKER = re.compile(r"[ \t]*\[\s*\d{1,3}(?:\s*(?:,|;|-|–)\s*\d{1,3})*\s*\](?![(>=\w])")


def _quote(sentence: str, evidence: Evidence) -> str:
    n = evidence.citation.n
    if "\n" in sentence:  # a code window keeps its lines
        return f"\n```\n{sentence}\n```\n[{n}]"
    if _is_code(evidence) or _PROMPT.search(sentence):
        # one line of code ("items[2]" is code, not a citation), or a passage holding an
        # example after its prompt (">>> r = get(url)  <Response [200]>"): kept as written
        return f"{sentence} [{n}]"
    # the document's own reference marks ("... of purchase [7].") would read as citations of
    # passages that were not given (or of the wrong one): only the quote's own [n] remains
    return f"{_MARKER.sub('', sentence).strip()} [{n}]"


class ExtractiveAnswerer:
    """Answers with sentences quoted from the evidence; never writes text of its own."""

    def __init__(self, embedder: Embedder, max_sentences: int = 3) -> None:
        self.embedder = embedder
        self.max_sentences = max_sentences

    def answer(
        self, question: str, evidence: Sequence[Evidence], idf: dict[str, float] | None = None,
        document_idf: dict[str, dict[str, float]] | None = None,
    ) -> Answer:
        """The answer from ``evidence`` (best first). ``idf`` is the collection IDF of the
        question's terms (:func:`idf_table`) and ``document_idf`` their IDF within each
        evidence document, by document id (a term missing from either weighs 1)."""
        t0 = time.perf_counter()
        if not evidence:
            return Answer(question, NOT_FOUND, (), found=False, mode="extractive")
        language = detect_language(question)
        terms = list(dict.fromkeys(tokenize(question, language)))
        pool: list[tuple[int, str]] = []
        for rank, ev in enumerate(evidence):
            pool.extend((rank, s) for s in _candidates(ev))
        if not pool:
            return Answer(question, NOT_FOUND, (), found=False, mode="extractive")
        # sentences analysed as the question is (a short Kazakh sentence may hold no
        # Kazakh-only letter, and must still be stemmed as Kazakh to meet the question)
        pool_terms = [set(tokenize(s, language)) for _, s in pool]
        # a term's weight in a sentence of evidence i: its collection IDF times its IDF within
        # that evidence's document, so a name found all over the document (the party the
        # question uses to pick the document) does not decide which sentence answers
        weights = []
        for ev in evidence:
            local = (document_idf or {}).get(ev.citation.document_id, {})
            weights.append({t: (idf or {}).get(t, 1.0) * local.get(t, 1.0) for t in terms})
        vectors = self.embedder.embed_documents([s for _, s in pool])
        q = self.embedder.embed_query(question)
        cosine = vectors @ q
        scored = []
        for (rank, s), cos, have in zip(pool, cosine, pool_terms, strict=True):
            w = weights[rank]
            coverage = sum(v for t, v in w.items() if t in have) / (sum(w.values()) or 1.0)
            scored.append((0.6 * float(cos) + 0.4 * coverage + 0.05 / (rank + 1), rank, s))
        scored.sort(key=lambda x: -x[0])
        best = scored[0][0]
        chosen: list[tuple[float, int, str]] = []
        seen: set[str] = set()
        for score, rank, s in scored:
            if len(chosen) >= self.max_sentences or score < RELATIVE_FLOOR * best:
                break
            key = " ".join(s.split()).casefold()
            if key in seen:
                continue
            seen.add(key)
            chosen.append((score, rank, s))
        text = " ".join(_quote(s, evidence[rank]) for _, rank, s in chosen)
        cited = tuple(dict.fromkeys(evidence[rank].citation.n for _, rank, _ in chosen))
        return Answer(
            question, text, tuple(ev.citation for ev in evidence), found=True, mode="extractive",
            metrics={"answer_ms": (time.perf_counter() - t0) * 1000}, cited=cited,
        )

    def stream(
        self, question: str, evidence: Sequence[Evidence], history: Sequence[tuple[str, str]] = (),
        idf: dict[str, float] | None = None, document_idf: dict[str, dict[str, float]] | None = None,
    ) -> Iterator[Event]:
        yield StatusEvent("selecting evidence sentences", stage="answer")
        answer = self.answer(question, evidence, idf, document_idf)
        for i, word in enumerate(answer.text.split(" ")):  # the tokens join to answer.text
            yield TokenEvent(word if i == 0 else " " + word)
        yield DoneEvent(answer)


def idf_table(n_docs: int, df: dict[str, int]) -> dict[str, float]:
    """Lucene-smoothed IDF per term: ``ln(1 + (N - df + 0.5) / (df + 0.5))``."""
    return {t: bm25_idf(n_docs, d) for t, d in df.items()}


def quote(question: str, evidence: Sequence[Evidence], max_sentences: int = 3) -> Answer:
    """The extractive answer from sentence evidence (:func:`~citewise.answer.selection.
    sentence_evidence`, best first, ``citation.score`` = the selection score, higher is
    better): of the first ``max_sentences`` passages, those that score at least
    ``RELATIVE_FLOOR`` of the best (``OTHER_FILE_FLOOR`` for a passage of another file: a
    second article quoted after the right sentence misleads more than it helps), each quoted
    and followed by its citation ``[n]``. Not found when ``evidence`` is empty."""
    t0 = time.perf_counter()
    if not evidence:
        return Answer(question, NOT_FOUND, (), found=False, mode="extractive")
    top = evidence[0].citation
    chosen = [ev for ev in evidence[:max_sentences] if ev.citation.score >= (
        RELATIVE_FLOOR if ev.citation.document_id == top.document_id else OTHER_FILE_FLOOR
    ) * top.score]
    text = quoted(chosen)
    return Answer(question, text, tuple(ev.citation for ev in evidence), found=True,
                  mode="extractive", metrics={"answer_ms": (time.perf_counter() - t0) * 1000},
                  cited=tuple(ev.citation.n for ev in chosen))


def quoted(evidence: Sequence[Evidence]) -> str:
    """The passages of ``evidence`` quoted in order, each followed by its citation ``[n]``:
    prose with its whitespace collapsed, code as a fenced block with its lines."""
    return " ".join(_quote(" ".join(ev.chunk.text.split()) if not _is_code(ev)
                           else ev.chunk.text.strip("\n"), ev) for ev in evidence)


def _is_code(ev: Evidence) -> bool:
    doc = ev.hit.document
    return bool(ev.chunk.symbol) or (doc is not None and doc.format == "code")


def quote_stream(question: str, evidence: Sequence[Evidence],
                 max_sentences: int = 3) -> Iterator[Event]:
    """:func:`quote` as events: a status, the words as tokens (they join to the text), done."""
    yield StatusEvent("quoting the evidence sentences", stage="answer")
    answer = quote(question, evidence, max_sentences)
    for i, word in enumerate(answer.text.split(" ")):
        yield TokenEvent(word if i == 0 else " " + word)
    yield DoneEvent(answer)


__all__ = ["ExtractiveAnswerer", "idf_table", "quote", "quote_stream", "quoted"]
