"""The composition root: builds the store, models, retriever and answerer from Settings.

The CLI and (later) the HTTP API call this and nothing deeper. Models load lazily, once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from citewise.answer.answerer import NO_DOCUMENTS
from citewise.answer.factory import open_provider
from citewise.answer.providers import PRESETS, ChatProvider
from citewise.answer.scorer import AnswerScorer, load_answer_scorer
from citewise.answer.service import AnswerService
from citewise.answer.summarize import WholeDocumentAnswerer
from citewise.answer.wholedoc import DocumentQuestion, detect_task, plan_question
from citewise.config import SearchMode, Settings
from citewise.embed import MINILM_NAMES, Embedder, load_embedder
from citewise.errors import (
    AnalyzerMismatchError,
    EmbeddingMismatchError,
    IndexError_,
    NotFoundError,
)
from citewise.ingest.pipeline import Ingestor, IngestReport, ProgressFn
from citewise.ingest.reindex import reindex
from citewise.ingest.watch import DEBOUNCE_MS, ReportFn, watch_folders
from citewise.retrieve.page import document_for_page
from citewise.retrieve.rerank import Reranker, load_reranker
from citewise.retrieve.retriever import Retriever, SearchResult, clean_query
from citewise.store.base import Store
from citewise.store.factory import open_store
from citewise.store.scope import in_scope
from citewise.text.analysis import ANALYZER_VERSION
from citewise.types import Answer, Document, DoneEvent, Event, StatusEvent

if TYPE_CHECKING:
    from citewise.scan.checks import Checker
    from citewise.scan.playbook import Playbook
    from citewise.scan.scanner import Scanner, ScanProgressFn, ScanReport

log = logging.getLogger(__name__)


class Engine:
    """One collection with its models. Safe to share between threads for queries."""

    def __init__(self, settings: Settings, *, store: Store | None = None,
                 embedder: Embedder | None = None, reranker: Reranker | None = None,
                 provider: ChatProvider | None = None) -> None:
        """Parts not passed in are built from ``settings`` on first use (the store, the
        embedder of the index's precision, the configured reranker and LLM provider); a part
        passed in is used as it is (tests and benchmarks share one loaded model this way)."""
        self.settings = settings
        self._provider: ChatProvider | None = provider
        self._provider_lock = threading.Lock()
        for name, part in (("store", store), ("embedder", embedder)):
            if part is not None:
                self.__dict__[name] = part  # what the cached property would have built
        if reranker is not None:
            self.__dict__["reranker"] = reranker

    @cached_property
    def store(self) -> Store:
        return open_store(self.settings)

    @cached_property
    def embedder(self) -> Embedder:
        """The configured embedding model. For ``minilm`` with ``embedding_precision=auto``
        the precision is the one the index's vectors were made with (``minilm``: fp32,
        ``minilm-int8``: int8), so that an existing index is searched and extended in its own
        vector space; an empty index gets the CPU's choice
        (:func:`~citewise.embed.choose_precision`)."""
        s = self.settings
        precision: str = s.embedding_precision
        if s.embedding_model == "minilm" and precision == "auto":
            stored, _ = self.store.stored_model()
            by_name = {name: p for p, name in MINILM_NAMES.items()}
            if stored in by_name and self.store.info().chunks:
                precision = by_name[stored]
        return load_embedder(s.embedding_model, s.threads, s.embed_batch_size, precision)

    @cached_property
    def reranker(self) -> Reranker | None:
        return load_reranker(self.settings.reranker_model, self.settings.threads,
                             self.settings.rerank_windows)

    @cached_property
    def answer_scorer(self) -> AnswerScorer | None:
        """The configured answer-sentence scorer (``answer_scorer``), None when off."""
        return load_answer_scorer(self.settings.answer_scorer, self.settings.threads)

    @cached_property
    def retriever(self) -> Retriever:
        self.check_model()
        return Retriever(self.settings, self.store, self.embedder, self.reranker)

    def check_model(self) -> None:
        """Raise EmbeddingMismatchError if the index was built with another model, and
        AnalyzerMismatchError if its BM25 terms were made by another text analysis, and
        IndexError_ if it is an unfinished copy (an interrupted ``citewise migrate``)."""
        if note := self.store.unfinished():
            raise IndexError_(note)
        name, dim = self.store.stored_model()
        if not self.store.info().chunks:
            return
        if name is not None and (name != self.embedder.name or dim != self.embedder.dim):
            raise EmbeddingMismatchError(name, dim or 0, self.embedder.name, self.embedder.dim)
        analyzer = self.store.stored_analyzer()
        if analyzer is not None and analyzer != ANALYZER_VERSION:
            raise AnalyzerMismatchError(analyzer, ANALYZER_VERSION)

    # --- ingest ---------------------------------------------------------------------------
    def ingest(self, paths: Sequence[str | Path], prune: bool = False,
               progress: ProgressFn | None = None, collection: str | None = None,
               within: Sequence[Path] | None = None) -> IngestReport:
        """Index files and folders into ``collection`` (default ``settings.collection``);
        ``within``: the only folders a confined ingest reads files from
        (:mod:`citewise.ingest.confine`)."""
        return Ingestor(self.settings, self.store, self.embedder, collection).ingest(
            paths, prune, progress, within)

    def ingest_files(self, files: Sequence[tuple[Path, Path]], collection: str | None = None,
                     progress: ProgressFn | None = None) -> IngestReport:
        """Index exact ``(file, root)`` pairs into ``collection`` (default
        ``settings.collection``); ``root`` decides the displayed path. Nothing else under
        the roots is touched (no pruning). Returns the per-file report; never raises for a
        bad file."""
        return Ingestor(self.settings, self.store, self.embedder, collection).ingest_files(
            files, progress)

    def watch(self, paths: Sequence[str | Path], *, collection: str | None = None,
              stop: threading.Event | None = None, debounce_ms: int = DEBOUNCE_MS,
              force_polling: bool | None = None, on_report: ReportFn | None = None,
              on_ready: Callable[[list[Path]], None] | None = None,
              progress: ProgressFn | None = None) -> None:
        """Keep the folders ``paths`` in sync with the index, in ``collection`` (default
        ``settings.collection``), until ``stop`` is set or Ctrl+C
        (:func:`citewise.ingest.watch.watch_folders`: one catch-up ingest, then each batch
        of changes after ``debounce_ms`` of quiet). Raises ConfigError for a path that is
        not a folder."""
        watch_folders(Ingestor(self.settings, self.store, self.embedder, collection), paths,
                      stop=stop, debounce_ms=debounce_ms, force_polling=force_polling,
                      on_report=on_report, on_ready=on_ready, progress=progress)

    def reindex(self, progress: ProgressFn | None = None) -> IngestReport:
        """Bring the index in line with the configured model and the current text analysis
        (:func:`citewise.ingest.reindex.reindex`: re-analysed in place, or re-embedded beside
        the live index and switched in at the end). Returns the per-file report; raises
        IndexChangedError when the index kept changing, IndexError_ when it cannot be
        written."""
        return reindex(self.settings, self.store, self.embedder, progress)

    # --- query ----------------------------------------------------------------------------
    def search(self, query: str, *, mode: SearchMode | str = SearchMode.HYBRID,
               top_k: int | None = None, per_file: int | None = None,
               min_score: float | None = None,
               filters: Mapping[str, Any] | None = None,
               prefer_document: str | None = None, lexical: str = "") -> SearchResult:
        """:meth:`Retriever.search <citewise.retrieve.retriever.Retriever.search>`;
        ``prefer_document`` is a document id whose chunks are preferred (the page the
        question is asked from, :meth:`page_document`); ``lexical`` is more words for the BM25
        leg (the words a rewritten follow-up was typed with)."""
        return self.retriever.search(query, mode=mode, top_k=top_k, per_file=per_file,
                                     min_score=min_score, filters=filters,
                                     prefer_document=prefer_document, lexical=lexical)

    def search_evidence(self, query: str, *, mode: SearchMode | str = SearchMode.HYBRID,
                        top_k: int | None = None,
                        filters: Mapping[str, Any] | None = None,
                        prefer_document: str | None = None, lexical: str = "") -> SearchResult:
        """The search an answer reads: with ``evidence='sentences'`` a pool of
        ``max(evidence_pool, top_k)`` chunks, at most ``evidence_per_file`` per file, whose
        sentences :meth:`answer_stream` ranks; with ``'passages'`` the plain top_k search."""
        s = self.settings
        if s.evidence != "sentences":
            return self.search(query, mode=mode, top_k=top_k, filters=filters,
                               prefer_document=prefer_document, lexical=lexical)
        return self.search(query, mode=mode, top_k=max(s.evidence_pool, top_k or s.top_k),
                           per_file=s.evidence_per_file, filters=filters,
                           prefer_document=prefer_document, lexical=lexical)

    def page_document(self, page: str,
                      filters: Mapping[str, Any] | None = None) -> Document | None:
        """The indexed document the web page at URL path ``page`` was built from
        (:func:`~citewise.retrieve.page.document_for_page`: ``/install/`` or
        ``/docs/install.html`` -> ``docs/install.md``), among those ``filters`` let the
        question read (``collections``, ``document_ids``, ``path_prefix``, ``paths``,
        ``where``); None when none matches or two match equally well."""
        return document_for_page(page, self.readable_documents(filters))

    def readable_documents(self, filters: Mapping[str, Any] | None = None) -> list[Document]:
        """The indexed documents ``filters`` let a question read (``collections``,
        ``document_ids``, ``path_prefix``, ``paths``, ``where``)."""
        f = filters or {}
        collections, ids, prefix = f.get("collections"), f.get("document_ids"), f.get("path_prefix")
        return [d for d in self.store.documents()
                if (collections is None or d.collection in collections)
                and (ids is None or d.id in ids)
                and (prefix is None or d.path.startswith(prefix))
                and in_scope(d, f)]

    def document_question(self, question: str, documents: Sequence[str] = (),
                          filters: Mapping[str, Any] | None = None) -> DocumentQuestion | None:
        """Whether ``question`` is about whole documents
        (:func:`~citewise.answer.wholedoc.plan_question`) among those ``filters`` let it read:
        the ``documents`` pinned by name or id, or the ones the question names for a
        whole-document task ("summarize install.md"); None for an ordinary question. Raises
        NotFoundError for a pinned name that matches no readable document, or several."""
        if not documents and detect_task(question) is None:
            return None  # the common case reads no document list
        readable = [d for d in self.readable_documents(filters) if d.status != "failed"]
        return plan_question(question, readable, documents)

    @cached_property
    def whole_documents(self) -> WholeDocumentAnswerer:
        """The whole-document stage (:class:`~citewise.answer.summarize.WholeDocumentAnswerer`)
        on this engine's store, tokenizer and provider."""
        return WholeDocumentAnswerer(self.settings, self.store,
                                     lambda text: self.embedder.count_tokens(text),
                                     self.provider_stream,
                                     lambda p: self.answers.context_window(p))

    @staticmethod
    def route_documents(plan: DocumentQuestion | None,
                        filters: Mapping[str, Any] | None = None,
                        ) -> tuple[DocumentQuestion | None, Mapping[str, Any] | None]:
        """The whole-document ``plan`` to answer by :attr:`whole_documents` (None when the
        question is searched) and the ``filters`` to search with: those given, narrowed to
        the pinned documents when ``plan`` pins documents for an ordinary question."""
        if plan is None:
            return None, filters
        if plan.task is not None:
            return plan, filters
        return None, {**(filters or {}), "document_ids": [d.id for d in plan.documents]}

    def provider(self) -> ChatProvider | None:
        """The configured LLM provider, opened on first use (None for ``none``).

        Raises ConfigError, ModelError or ProviderError when it cannot be opened.
        """
        with self._provider_lock:
            if self._provider is None and self.settings.llm_provider.strip().lower() != "none":
                self._provider = open_provider(self.settings)
            return self._provider

    def loaded(self) -> dict[str, bool]:
        """Which models are in memory: ``embedder``, ``reranker``, ``llm`` (never loads one)."""
        return {
            "embedder": "embedder" in self.__dict__,
            "reranker": self.__dict__.get("reranker") is not None,
            "llm": self._provider is not None,
        }

    def provider_url(self) -> str | None:
        """The LLM provider's base URL: the opened provider's, else the configured remote
        one's; None for ``none`` and for a bundled model not started yet."""
        if self._provider is not None:
            return getattr(self._provider, "base_url", None)
        name = self.settings.llm_provider.strip().lower()
        preset = PRESETS.get(name)
        if preset is None:
            return None
        return self.settings.llm_base_url or preset.base_url or None

    def ask_stream(self, question: str, *, top_k: int | None = None, extractive: bool = False,
                   history: Sequence[tuple[str, str]] = (),
                   mode: SearchMode | str = SearchMode.HYBRID,
                   filters: Mapping[str, Any] | None = None,
                   instructions: str = "", documents: Sequence[str] = ()) -> Iterator[Event]:
        """Yields status events, answer tokens, then one DoneEvent (see DESIGN.md, Events).

        Each status comes before the slow step it names: "searching the documents" (stage
        ``retrieve``, :meth:`search_stream`; after a ``notice`` "the question is N characters
        long: only its last M are searched" when it is longer than ``max_query_chars``), "reading N passages from M files" (``read``; then a
        ``notice`` naming a multilingual embedding model when the question's language is
        one the index holds little of and its model does not read, such as a Russian
        question over English documents with ``minilm``),
        "starting the local model" (``load``, when this engine first opens the bundled
        model) and "writing the answer with ..." (``generate``) or "quoting the evidence
        sentences" (``answer``). An empty index gives only the DoneEvent. The LLM is used
        unless ``extractive`` or the provider is ``none``; no LLM call is made when retrieval
        finds no evidence above ``min_score`` or no sentence answers (``abstain``). ``history`` is the earlier (question, answer) turns, oldest first.
        ``filters`` narrow the search (the store's ``document_ids`` and ``path_prefix``);
        ``instructions`` are appended to the LLM's rules (an OpenAI client's system message).
        ``documents`` pins documents by name or id (:meth:`document_question`): a
        whole-document question ("summarize", "list the sections", "the first sentence",
        "compare") about them, or one the question names, is answered by
        :attr:`whole_documents` (a ``read`` status, no search); any other question is searched
        within the pinned documents only.
        Raises QueryError for a blank question, NotFoundError for a pinned name that names no
        readable document, EmbeddingMismatchError or
        AnalyzerMismatchError for an index built otherwise; a provider that cannot be opened
        or fails gives the extractive answer (a ``fallback`` status), not an error.
        """
        asked = len(" ".join(question.split())) if isinstance(question, str) else 0
        question = clean_query(question, self.settings.max_query_chars)
        if self.store.info().chunks == 0:
            yield DoneEvent(Answer(question, self._not_found(NO_DOCUMENTS, filters, question),
                                   (), False, "none"))
            return
        if asked > self.settings.max_query_chars:  # a pasted page: say so, never cut silently
            yield StatusEvent(f"the question is {asked:,} characters long: only its last "
                              f"{len(question):,} are searched (max_query_chars)",
                              stage="notice")
        whole, filters = self.route_documents(
            self.document_question(question, documents, filters), filters)
        if whole is not None:
            yield from self.whole_documents.stream(question, whole, extractive=extractive,
                                                   instructions=instructions)
            return
        result = yield from self.search_stream(question, mode=mode, top_k=top_k,
                                               filters=filters)
        yield from self.answer_stream(question, result, extractive=extractive, history=history,
                                      filters=filters, top_k=top_k, instructions=instructions)

    def search_stream(self, query: str, *, mode: SearchMode | str = SearchMode.HYBRID,
                      top_k: int | None = None, filters: Mapping[str, Any] | None = None,
                      prefer_document: str | None = None, lexical: str = "",
                      ) -> Generator[Event, None, SearchResult]:
        """:meth:`search_evidence` as a stream: yields the one "searching the documents" status
        (stage ``retrieve``) before the first slow step (loading the embedding model,
        embedding, the search), then returns the SearchResult
        (``result = yield from engine.search_stream(...)``). Raises as :meth:`search`
        (QueryError, EmbeddingMismatchError, AnalyzerMismatchError)."""
        yield StatusEvent("searching the documents", stage="retrieve")
        return self.search_evidence(query, mode=mode, top_k=top_k, filters=filters,
                                    prefer_document=prefer_document, lexical=lexical)

    def provider_stream(self) -> Generator[Event, None, ChatProvider | None]:
        """:meth:`provider` as a stream: yields a "starting the local model" status (stage
        ``load``) first when the bundled ``local`` model is not started yet (checking and
        loading it takes seconds), then returns the provider (None for ``none``). Raises as
        :meth:`provider`."""
        if self._provider is None and self.settings.llm_provider.strip().lower() == "local":
            yield StatusEvent("starting the local model", stage="load")
        return self.provider()

    @cached_property
    def answers(self) -> AnswerService:
        """The answer stage (:class:`~citewise.answer.service.AnswerService`) on this engine's
        store, embedder, retriever and provider."""
        return AnswerService(self.settings, self.store, self.embedder, self.retriever,
                             self.provider_stream, lambda: self.answer_scorer)

    def answer_stream(self, question: str, result: SearchResult, *, extractive: bool = False,
                      history: Sequence[tuple[str, str]] = (),
                      filters: Mapping[str, Any] | None = None,
                      top_k: int | None = None,
                      prefer_document: str | None = None,
                      instructions: str = "") -> Iterator[Event]:
        """Yields the answer to ``question`` from a finished search (:meth:`search_evidence`):
        :meth:`AnswerService.stream <citewise.answer.service.AnswerService.stream>` (the
        ``read`` status, status and token events, one DoneEvent; declined questions get the
        not-found reply without a model call); ``prefer_document``'s sentences are preferred
        as its chunks were in the search. Raises QueryError for a blank question."""
        return self.answers.stream(question, result, extractive=extractive, history=history,
                                   filters=filters, top_k=top_k,
                                   prefer_document=prefer_document, instructions=instructions)

    def ask(self, question: str, *, top_k: int | None = None, extractive: bool = False,
            history: Sequence[tuple[str, str]] = ()) -> Answer:
        for event in self.ask_stream(question, top_k=top_k, extractive=extractive,
                                     history=history):
            if isinstance(event, DoneEvent):
                return event.answer
        raise AssertionError("ask_stream ended without a DoneEvent")  # pragma: no cover

    # --- scan ---------------------------------------------------------------------------
    def scan(self, path: str | Path, playbook: str | Path = "default", *,
             checker: Checker | None = None,
             progress: ScanProgressFn | None = None) -> ScanReport:
        """Check the file ``path`` against a playbook (bundled name or YAML path); flags
        sorted by severity. A file indexed with the same bytes is read where it is; a new
        or changed one is indexed first (:meth:`Scanner.scan
        <citewise.scan.scanner.Scanner.scan>`). ``checker`` defaults to the deterministic
        checker. Raises ConfigError for a bad playbook, DocumentError when the file cannot
        be indexed."""
        from citewise.scan.playbook import load_playbook

        self.check_model()
        book = load_playbook(playbook)
        return self.scanner(book, checker or self.scan_checker()).scan(path, progress)

    def scan_document(self, document_id: str, playbook: str | Path = "default", *,
                      checker: Checker | None = None,
                      progress: ScanProgressFn | None = None) -> ScanReport:
        """Check the indexed document ``document_id`` against a playbook, reading it where it
        is: nothing is ingested, moved or written. Returns its ScanReport. Raises
        NotFoundError for an unknown id, DocumentError when its file is gone or changed
        since it was indexed, ConfigError for a bad playbook."""
        from citewise.scan.playbook import load_playbook

        doc = self.store.document(document_id)
        if doc is None:
            raise NotFoundError(f"no document with id {document_id!r}; list them with "
                                "GET /api/documents")
        self.check_model()
        book = load_playbook(playbook)
        return self.scanner(book, checker or self.scan_checker()).scan_indexed(doc, progress)

    def scanner(self, playbook: Playbook, checker: Checker | None = None) -> Scanner:
        """A :class:`~citewise.scan.scanner.Scanner` on this engine's store, embedder (loaded
        when the scan first needs it) and ingest pipeline; ``checker`` defaults to the
        deterministic one."""
        from citewise.scan.scanner import Scanner

        return Scanner(self.settings, self.store, lambda: self.embedder,
                       lambda collection: Ingestor(self.settings, self.store, self.embedder,
                                                   collection),
                       playbook, checker)

    def scan_checker(self, mode: str | None = None) -> Checker:
        """The clause checker for ``mode`` (default ``settings.scan_checker``):
        :func:`~citewise.scan.llm_check.choose_checker` over this engine's provider."""
        from citewise.scan.llm_check import choose_checker

        return choose_checker(mode or self.settings.scan_checker, self.settings.llm_provider,
                              self.provider)

    def _not_found(self, text: str, filters: Mapping[str, Any] | None = None,
                   question: str = "") -> str:
        """The not-found reply in the question's language, naming files that could not be
        read (they may hold it)."""
        return self.answers.not_found(text, filters, question)

    def status(self) -> dict[str, Any]:
        info = self.store.info()
        failed = [d for d in self.store.documents() if d.status == "failed"]
        return {
            "documents": info.documents,
            "chunks": info.chunks,
            "failed_documents": len(failed),
            "embedding_model": info.embedding_model,
            "configured_embedding_model": self.settings.embedding_model,
            "dimension": info.dimension,
            "reranker_model": self.settings.reranker_model or None,
            "fusion": self.settings.fusion.value,
            "index_bytes": info.index_bytes,
            "index_path": info.location,
            "unfinished": self.store.unfinished(),
        }
