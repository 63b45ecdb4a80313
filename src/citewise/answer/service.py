"""The answer stage: from a finished search to a cited answer, with abstention and fallback.

:class:`AnswerService` holds what :meth:`Engine.answer_stream
<citewise.engine.Engine.answer_stream>` used to do itself: number the hits, decline a question
that no document can answer (unknown names, no answering sentence), rank the hits' sentences
into the evidence, choose the answerer (the extractive quote, the LLM writer of
:mod:`citewise.answer.llm`, or the pick-first answerer of :mod:`citewise.answer.pick`), and
fall back to the quote when the provider cannot be opened. The engine only wires it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np

from citewise.answer.answerer import NOT_FOUND, to_evidence
from citewise.answer.budget import (
    PRIMING,
    PromptBuilder,
    estimate_tokens,
    fit_prompt,
)
from citewise.answer.extractive import ExtractiveAnswerer, idf_table, quote_stream
from citewise.answer.llm import LLMAnswerer, fall_back
from citewise.answer.pick import PICK_TOKENS, PickAnswerer, PickStyle
from citewise.answer.prompts import build_messages, pick_messages, write_after_pick
from citewise.answer.providers import ChatProvider, Message, OpenAICompatible
from citewise.answer.scorer import AnswerScorer
from citewise.answer.selection import (
    PASSAGES_PER_FILE,
    Scored,
    answerable,
    list_terms,
    name_terms,
    names,
    rank_candidates,
    section_lists,
    sentence_evidence,
    unknown_names,
    with_examples,
    with_next_instruction,
)
from citewise.config import Settings
from citewise.embed import Embedder
from citewise.errors import CitewiseError, EmptyDocumentError, ProviderError
from citewise.retrieve.retriever import (
    ROUTING_MIN_SHARE,
    Retriever,
    SearchResult,
    clean_query,
)
from citewise.store.base import Store
from citewise.store.scope import scoped_document_ids
from citewise.text.analysis import identifier_parts, tokenize
from citewise.text.language import among, detect_language, language_name
from citewise.text.messages import (
    LANGUAGE_HINT,
    MORE,
    NO_DOCUMENTS,
    NO_MATCH,
    NOT_MENTIONED,
    OR,
    UNREADABLE,
    translate,
)
from citewise.types import Answer, DoneEvent, Event, Evidence, StatusEvent

log = logging.getLogger(__name__)

#: Opens the configured LLM provider as a stream: yields status events (a "starting the local
#: model" status before a slow load), returns the provider or None for ``none``; raises
#: CitewiseError when it cannot be opened (:meth:`Engine.provider_stream
#: <citewise.engine.Engine.provider_stream>`).
ProviderStream = Callable[[], Generator[Event, None, ChatProvider | None]]


@dataclass
class Reading:
    """What an answer reads, from one search: ``pool`` (the hits as numbered passages),
    ``evidence`` (numbered passages, best first: the ranked sentences with
    ``evidence='sentences'``, else the pool), ``ranked`` (every
    sentence candidate of the hits, best first; empty with ``evidence='passages'``),
    ``declined`` (the not-found reply when the question is declined before any answerer, else
    None), ``timings_ms`` (the search's, plus ``sentences_ms``), the collection and
    in-document IDF of the question's terms (``idf``, ``document_idf``)."""

    pool: list[Evidence]
    evidence: list[Evidence]
    ranked: list[Scored] = field(default_factory=list)
    declined: str | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    idf: dict[str, float] = field(default_factory=dict)
    document_idf: dict[str, dict[str, float]] = field(default_factory=dict)


#: Most share of the collection's chunks a name may appear in and still name a document
#: (:meth:`AnswerService.named_documents`): a party of one contract, not a word every
#: document uses.
NAMED_SHARE = 0.05
#: Below this many chunks every name counts as rare (a few contracts share few words).
NAMED_MIN_CHUNKS = 200


class AnswerService:
    """Answers questions over ``store`` with ``embedder`` and ``retriever`` (already built);
    ``provider_stream`` opens the LLM (see :data:`ProviderStream`). Thread-safe as its parts
    are."""

    def __init__(self, settings: Settings, store: Store, embedder: Embedder,
                 retriever: Retriever, provider_stream: ProviderStream,
                 answer_scorer: Callable[[], AnswerScorer | None] = lambda: None) -> None:
        self.answer_scorer = answer_scorer
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.retriever = retriever
        self.provider_stream = provider_stream

    def read(self, question: str, result: SearchResult, *, top_k: int | None = None,
             filters: Mapping[str, Any] | None = None,
             prefer_document: str | None = None) -> Reading:
        """The evidence of ``result`` for ``question`` (see :class:`Reading`). With
        ``abstain`` on, ``declined`` is set when the question names something no indexed
        document mentions (:func:`~citewise.answer.selection.unknown_names`, the reply names
        it) or, with sentence evidence, no sentence answers it
        (:func:`~citewise.answer.selection.answerable`). At most ``top_k`` passages (default
        ``settings.top_k``) within ``evidence_tokens``. ``filters`` are the search's (a
        not-found reply names only unreadable files of its ``collections``).
        ``prefer_document``: a document id whose sentences are preferred
        (:data:`~citewise.retrieve.page.PAGE_PRIOR`; the page the question is asked from)."""
        s = self.settings
        evidence = to_evidence(result.hits)
        reading = Reading(evidence, evidence, timings_ms=dict(result.timings_ms))
        if not evidence:
            reading.declined = self.not_found(NOT_FOUND, filters, question)
            return reading
        if s.abstain:
            _, name_df = self.store.term_document_frequencies(name_terms(question))
            missing = unknown_names(question, name_df)
            if missing:  # a thing no document names: no sentence can answer for it
                reading.declined = self.not_found(
                    NOT_MENTIONED, filters, question,
                    names=_either(missing, detect_language(question)))
                return reading
        # the term weights read every chunk of each evidence document: only for a question
        # that is not declined above
        n, df = self.store.term_document_frequencies(list(dict.fromkeys(tokenize(question))))
        reading.idf = idf_table(n, df)
        reading.document_idf = {
            doc_id: self.retriever.document_term_weights(doc_id, question)
            for doc_id in dict.fromkeys(ev.citation.document_id for ev in evidence)}
        if s.evidence != "sentences":
            return reading
        t0 = time.perf_counter()
        if s.prefer_named_documents:
            named = self.named_documents(question, evidence)
            if named:  # "the Service Agreement between X and Y": its clauses, not another's
                evidence = [ev for ev in evidence if ev.citation.document_id in named]
        known = frozenset(t for t in identifier_parts(question) if df.get(t, 0) > 0)
        # a question asking which things: the subsection headings of a section named for
        # them, as one more candidate (each document's chunks are read only for such a one)
        lists = (section_lists(question, evidence, self.store.chunks_of)
                 if list_terms(question) else [])
        language = detect_language(question)
        dense = self.retriever.dense_models(language)
        scorer = (self.answer_scorer() if among(language, s.answer_scorer_languages)
                  else None)
        reading.ranked = rank_candidates(question, evidence, self.embedder, idf=reading.idf,
                                         document_idf=reading.document_idf,
                                         known_identifiers=known, dense=dense,
                                         prefer_document=prefer_document, lists=lists,
                                         scorer=scorer, scorer_weight=s.answer_scorer_weight)
        pool = [*evidence, *lists]
        reading.ranked = with_examples(
            with_next_instruction(question, reading.ranked, pool), pool)
        reading.timings_ms["sentences_ms"] = (time.perf_counter() - t0) * 1000
        probs = [x.answer_probability for x in reading.ranked[:3]
                 if x.answer_probability is not None]
        if probs:  # the answer scorer's best probability: what the decline floor compared
            reading.timings_ms["answer_probability"] = max(probs)
            # whether the word and match floors alone would answer (benchmarks tune on it)
            reading.timings_ms["floors_answer"] = float(answerable(
                reading.ranked, question, min_match=s.abstain_min_match, dense=dense,
                min_probability=0.0, trust_probability=2.0))
        if not reading.ranked or (s.abstain and not answerable(
                reading.ranked, question, min_match=s.abstain_min_match, dense=dense,
                min_probability=s.answer_min_probability,
                trust_probability=s.answer_trust_probability)):
            reading.declined = self.not_found(NOT_FOUND, filters, question)
            return reading
        reading.evidence = sentence_evidence(pool, reading.ranked,
                                             max_passages=top_k or s.top_k,
                                             budget_tokens=s.evidence_tokens,
                                             count_tokens=self.embedder.count_tokens,
                                             max_per_file=PASSAGES_PER_FILE)
        return reading

    def named_documents(self, question: str, evidence: Sequence[Evidence]) -> set[str]:
        """The ids of the evidence documents the question names, or an empty set.

        A question often names the document it is about by names only that document holds
        (a contract's parties, "the Hertz license agreement"; :func:`~citewise.answer.
        selection.names` of the whole question, preamble included). A name counts when some
        evidence documents hold it and others do not, and it is rare in the collection (in
        at most :data:`NAMED_SHARE` of the chunks, or the collection has fewer than
        :data:`NAMED_MIN_CHUNKS`); the documents holding the most such names are the ones
        named. Nothing is chosen when no name counts."""
        language = detect_language(question)
        forms = list(dict.fromkeys(t[-1] for t in (tokenize(n, language)
                                                   for n in names(question)) if t))
        if not forms:
            return set()
        n, df = self.store.term_document_frequencies(forms)
        rare = [t for t in forms
                if 0 < df.get(t, 0) and (n < NAMED_MIN_CHUNKS or df[t] <= NAMED_SHARE * n)]
        if not rare:
            return set()
        held: dict[str, set[str]] = {}
        for doc_id in dict.fromkeys(ev.citation.document_id for ev in evidence):
            incidence = self.store.document_incidence(doc_id, rare)
            matrix = np.asarray(incidence.present, dtype=bool).reshape(-1, len(rare))
            held[doc_id] = {t for j, t in enumerate(rare) if matrix[:, j].any()}
        sets = list(held.values())
        telling = set().union(*sets) - sets[0].intersection(*sets[1:])
        if not telling:
            return set()
        count = {d: len(h & telling) for d, h in held.items()}
        best = max(count.values())
        return {d for d, c in count.items() if c == best}

    def stream(self, question: str, result: SearchResult, *, extractive: bool = False,
               history: Sequence[tuple[str, str]] = (),
               filters: Mapping[str, Any] | None = None,
               top_k: int | None = None,
               prefer_document: str | None = None,
               instructions: str = "") -> Iterator[Event]:
        """Yields the answer to ``question`` from a finished search: the ``read`` status with
        the real passage and file counts, then status and token events, then one DoneEvent (no
        hits: the DoneEvent alone). A declined question (:meth:`read`) gets the not-found
        reply without a model call; an answered one in a language the index holds little of
        and the embedding model does not read gets a ``notice`` status saying so
        (:meth:`language_hint`: a Russian question over English documents with ``minilm``).
        The LLM answers unless ``extractive``, the provider is
        ``none`` or the answer style (:meth:`Settings.resolved_answer_style
        <citewise.config.Settings.resolved_answer_style>`) is ``quote`` with sentence evidence,
        the bundled model's default (``answer_style``: write, pick or pick-write; pick needs
        sentence evidence); then the evidence sentences are quoted and no model is opened. A
        provider that cannot be opened gives the extractive answer with a ``fallback``
        status. ``history`` is the earlier (question, answer) turns, oldest first;
        ``prefer_document`` as in :meth:`read`; ``instructions`` (a client's own system
        message) are appended to the LLM's rules, never replacing them (the extractive answer
        has no prompt to give them to). Raises QueryError for a blank question."""
        s = self.settings
        question = clean_query(question, s.max_query_chars)
        if not result.hits:
            yield DoneEvent(Answer(question, self.not_found(NOT_FOUND, filters, question), (),
                                   False, "none", metrics=result.timings_ms))
            return
        files = len({h.document.id if h.document is not None else h.chunk_id
                     for h in result.hits})
        yield StatusEvent(f"reading {_count(len(result.hits), 'passage')} from "
                          f"{_count(files, 'file')}", stage="read")
        reading = self.read(question, result, top_k=top_k, filters=filters,
                            prefer_document=prefer_document)
        if reading.declined is not None:
            yield DoneEvent(Answer(question, reading.declined, (), False, "none",
                                   metrics=reading.timings_ms))
            return
        hint = self.language_hint(question).strip()
        if hint:  # a cross-language question the embedding model cannot match (issue 23, 6)
            yield StatusEvent(hint, stage="notice")
        evidence = reading.evidence
        sentences = bool(reading.ranked)

        def extractive_events() -> Iterator[Event]:
            if sentences:
                yield from quote_stream(question, evidence, s.answer_sentences)
                return
            answerer = ExtractiveAnswerer(self.embedder, s.answer_sentences)
            yield from answerer.stream(question, evidence, idf=reading.idf,
                                       document_idf=reading.document_idf)

        events: Iterator[Event] = extractive_events()
        # "quote" (the bundled model's default) answers without opening the model at all
        quotes = sentences and s.resolved_answer_style() == "quote"
        if not extractive and not quotes and s.llm_provider.strip().lower() != "none":
            try:
                provider = yield from self.provider_stream()
            except CitewiseError as err:  # the provider cannot be opened: quote instead
                events = fall_back(str(err), extractive_events)
            else:
                if provider is not None:
                    events = self._llm_events(provider, extractive_events, question, evidence,
                                              history, sentences, instructions)
        for event in events:
            if isinstance(event, DoneEvent):
                event = DoneEvent(replace(event.answer, metrics={**reading.timings_ms,
                                                                 **event.answer.metrics}))
            yield event

    def _llm_events(self, provider: ChatProvider, fallback: Callable[[], Iterator[Event]],
                    question: str, evidence: Sequence[Evidence],
                    history: Sequence[tuple[str, str]], sentences: bool,
                    instructions: str = "") -> Iterator[Event]:
        """The LLM answerer's events, its prompt fitted to the provider's context window
        (:func:`~citewise.answer.budget.fit_prompt`: a ``notice`` status says what was left
        out; the DoneEvent's metrics add the budget's) and sent as fitted, not built again."""
        s = self.settings
        turns = history[-s.history_turns:] if s.history_turns else ()
        count = self.embedder.count_tokens
        style = s.resolved_answer_style()
        if style == "quote":  # passage evidence: the model writes (quoting needs sentences)
            style = "write"
        picks = style != "write" and sentences
        window = self.context_window(provider)
        try:
            fitted = fit_prompt(evidence, turns, build=_builder(question, count, instructions,
                                                                picks),
                                count_tokens=count, window=window,
                                reserve=_reserve(question, style if picks else "write",
                                                 s.llm_max_tokens, len(evidence), count),
                                evidence_tokens=s.context_tokens)
        except ProviderError as err:  # the rules, instructions and question alone overflow
            yield from fall_back(str(err), fallback)
            return
        if fitted.notice:
            yield StatusEvent(fitted.notice, stage="notice")
        common: dict[str, Any] = {
            "count_tokens": count, "context_tokens": fitted.evidence_tokens,
            "max_tokens": s.llm_max_tokens, "temperature": s.llm_temperature,
            "support_threshold": s.support_threshold, "instructions": instructions}
        if picks:
            events = PickAnswerer(provider, fallback, style=cast("PickStyle", style),
                                  max_picked=s.answer_sentences, **common
                                  ).stream(question, fitted.evidence, fitted.history,
                                           messages=fitted.messages)
        else:
            events = LLMAnswerer(provider, fallback, **common).stream(
                question, fitted.evidence, fitted.history, messages=fitted.messages)
        for event in events:
            if isinstance(event, DoneEvent):
                event = DoneEvent(replace(event.answer, metrics={**event.answer.metrics,
                                                                 **fitted.metrics()}))
            yield event

    def context_window(self, provider: ChatProvider) -> int:
        """The provider's context window in tokens: what its server reports
        (:meth:`OpenAICompatible.context_length
        <citewise.answer.providers.OpenAICompatible.context_length>`), else ``llm_context``."""
        reported = (provider.context_length() if isinstance(provider, OpenAICompatible)
                    else None)
        return reported or self.settings.llm_context

    def not_found(self, message: str, filters: Mapping[str, Any] | None = None,
                  question: str = "", **params: object) -> str:
        """The not-found reply ``message`` (one of :data:`~citewise.text.messages.MESSAGES`,
        its fields filled from ``params``) in the question's language where citewise has a
        catalog for it (Russian, Kazakh; else English), naming files that could not be read
        (they may hold the answer; empty files only when nothing else is indexed); with a ``collections`` filter, only files of those
        collections. For a ``question`` in a language the index holds little of and the
        embedding model does not read (a Russian question over English documents with
        ``minilm``), the reply says so and names the multilingual model
        (:meth:`language_hint`)."""
        language = detect_language(question) if question else ""
        if message == NOT_FOUND and scoped_document_ids(self.store, filters) == []:
            # the filters left nothing to search: say so, not "the documents do not say"
            # (seen: --path '/tmp/x/*' against stored paths such as 'x/good.md')
            example = next((d.path for d in self.store.documents()), "")
            return translate(NO_MATCH, language, example=f"'{example}'")
        text = translate(message, language, **params) + self.language_hint(question)
        readable = (filters or {}).get("collections")
        # an empty file holds no answer: beside indexed documents it is not named here (the
        # ingest reported it); in an index of nothing else it is (why nothing is indexed, C07)
        failed = [d for d in self.store.documents() if d.status == "failed"
                  and (readable is None or d.collection in readable)
                  and (message == NO_DOCUMENTS
                       or d.error_kind != EmptyDocumentError.kind)]
        if not failed:
            return text
        names = "; ".join(f"{d.path} ({d.error})" for d in failed[:5])
        more = translate(MORE, language, n=len(failed) - 5) if len(failed) > 5 else ""
        return f"{text} {translate(UNREADABLE, language, names=names, more=more)}"

    def language_hint(self, question: str) -> str:
        """The sentence 'The question is in Russian, ...' (in the question's language where
        there is a catalog) for a ``question`` whose language is under
        :data:`~citewise.retrieve.retriever.ROUTING_MIN_SHARE` of the index and not one the
        embedding model was trained on (a cross-language question only a multilingual model
        can match); "" otherwise."""
        language = detect_language(question) if question else ""
        if not language or self.embedder.models_language(language):
            return ""
        counts = self.store.languages()
        if counts.get(language, 0) >= ROUTING_MIN_SHARE * sum(counts.values()):
            return ""
        return " " + translate(LANGUAGE_HINT, language, language=language_name(language),
                               model=self.settings.embedding_model)


def _builder(question: str, count_tokens: Callable[[str], int], instructions: str,
             picks: bool) -> PromptBuilder:
    """The answerer's prompt builder for :func:`~citewise.answer.budget.fit_prompt`, whose
    fitted messages the answerer then sends."""
    make = pick_messages if picks else build_messages

    def build(evidence: Sequence[Evidence], history: Sequence[tuple[str, str]],
              budget_tokens: int) -> list[Message]:
        return make(question, evidence, history, budget_tokens=budget_tokens,
                    count_tokens=count_tokens, instructions=instructions)

    return build


def _reserve(question: str, style: str, max_tokens: int, passages: int,
             count_tokens: Callable[[str], int]) -> int:
    """Tokens the window must keep free after the prompt: the answer's ``max_tokens``; for
    pick-write also the picking reply and the writing request that follow it
    (:func:`~citewise.answer.prompts.write_after_pick`); for pick only the picking reply."""
    if style == "pick":
        return PICK_TOKENS
    if style == "pick-write":
        follow = write_after_pick([], "", list(range(1, passages + 1)), question)
        return max_tokens + PICK_TOKENS + estimate_tokens(follow, count_tokens) - PRIMING
    return max_tokens


def _either(names: Sequence[str], language: str = "") -> str:
    """'"A"', '"A" or "B"', '"A", "B" or "C"' ("or" in ``language``)."""
    quoted = [f'"{n}"' for n in names]
    return quoted[0] if len(quoted) == 1 else (
        f"{', '.join(quoted[:-1])}{translate(OR, language)}{quoted[-1]}")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


__all__ = ["AnswerService", "ProviderStream", "Reading"]
