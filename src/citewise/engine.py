"""The composition root: builds the store, models, retriever and answerer from Settings.

The CLI and (later) the HTTP API call this and nothing deeper. Models load lazily, once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from citewise.answer.answerer import NO_DOCUMENTS, NOT_FOUND, to_evidence
from citewise.answer.extractive import ExtractiveAnswerer, idf_table
from citewise.config import SearchMode, Settings
from citewise.errors import EmbeddingMismatchError
from citewise.ingest.pipeline import IngestReport, Ingestor, ProgressFn
from citewise.retrieve.analysis import tokenize
from citewise.retrieve.embedding import Embedder, load_embedder
from citewise.retrieve.rerank import Reranker, load_reranker
from citewise.retrieve.retriever import Retriever, SearchResult, clean_query
from citewise.store.factory import open_store
from citewise.store.sqlite import SQLiteStore
from citewise.types import Answer, DoneEvent, Event, StatusEvent

if TYPE_CHECKING:
    from citewise.scan.checks import Checker
    from citewise.scan.scanner import ScanProgressFn, ScanReport


class Engine:
    """One collection with its models. Safe to share between threads for queries."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @cached_property
    def store(self) -> SQLiteStore:
        return open_store(self.settings)

    @cached_property
    def embedder(self) -> Embedder:
        return load_embedder(
            self.settings.embedding_model, self.settings.threads, self.settings.embed_batch_size
        )

    @cached_property
    def reranker(self) -> Reranker | None:
        return load_reranker(self.settings.reranker_model, self.settings.threads)

    @cached_property
    def retriever(self) -> Retriever:
        self.check_model()
        return Retriever(self.settings, self.store, self.embedder, self.reranker)

    def check_model(self) -> None:
        """Raise EmbeddingMismatchError if the index was built with another model."""
        name, dim = self.store.stored_model()
        if name is not None and self.store.info().chunks and (
            name != self.embedder.name or dim != self.embedder.dim
        ):
            raise EmbeddingMismatchError(name, dim or 0, self.embedder.name, self.embedder.dim)

    # --- ingest ---------------------------------------------------------------------------
    def ingest(self, paths: Sequence[str | Path], prune: bool = False,
               progress: ProgressFn | None = None) -> IngestReport:
        return Ingestor(self.settings, self.store, self.embedder).ingest(paths, prune, progress)

    def reindex(self, progress: ProgressFn | None = None) -> IngestReport:
        """Re-embed every file-backed document with the configured model (after a model
        change). Documents whose files are gone are dropped."""
        docs = self.store.documents()
        files = [
            (Path(d.source_path), Path(d.metadata.get("_root", d.source_path)))
            for d in docs if Path(d.source_path).is_file()
        ]
        self.store.clear()
        return Ingestor(self.settings, self.store, self.embedder).ingest_files(files, progress)

    # --- query ----------------------------------------------------------------------------
    def search(self, query: str, *, mode: SearchMode | str = SearchMode.HYBRID,
               top_k: int | None = None, per_file: int | None = None,
               min_score: float | None = None) -> SearchResult:
        return self.retriever.search(query, mode=mode, top_k=top_k, per_file=per_file,
                                     min_score=min_score)

    def ask_stream(self, question: str, *, top_k: int | None = None) -> Iterator[Event]:
        """Status events, answer tokens, then one DoneEvent (see DESIGN.md, Events)."""
        question = clean_query(question, self.settings.max_query_chars)
        if self.store.info().chunks == 0:
            yield DoneEvent(Answer(question, self._not_found(NO_DOCUMENTS), (), False, "none"))
            return
        yield StatusEvent("searching the documents", stage="retrieve")
        result = self.search(question, top_k=top_k)
        if not result.hits:
            yield DoneEvent(Answer(question, self._not_found(NOT_FOUND), (), False, "none",
                                   metrics=result.timings_ms))
            return
        evidence = to_evidence(result.hits)
        n, df = self.store.term_document_frequencies(list(dict.fromkeys(tokenize(question))))
        answerer = ExtractiveAnswerer(self.embedder, self.settings.answer_sentences)
        local = {
            doc_id: self.retriever.document_term_weights(doc_id, question)
            for doc_id in dict.fromkeys(ev.citation.document_id for ev in evidence)
        }
        for event in answerer.stream(question, evidence, idf=idf_table(n, df), document_idf=local):
            if isinstance(event, DoneEvent):
                event = DoneEvent(_with_metrics(event.answer, result.timings_ms))
            yield event

    def ask(self, question: str, *, top_k: int | None = None) -> Answer:
        for event in self.ask_stream(question, top_k=top_k):
            if isinstance(event, DoneEvent):
                return event.answer
        raise AssertionError("ask_stream ended without a DoneEvent")  # pragma: no cover

    # --- scan ---------------------------------------------------------------------------
    def scan(self, path: str | Path, playbook: str | Path = "default", *,
             checker: Checker | None = None,
             progress: ScanProgressFn | None = None) -> ScanReport:
        """Ingest ``path`` and check it against a playbook (bundled name or YAML path); flags
        sorted by severity. ``checker`` defaults to the deterministic checker. Raises
        ConfigError for a bad playbook, DocumentError when the file cannot be indexed."""
        from citewise.scan.playbook import load_playbook
        from citewise.scan.scanner import Scanner

        self.check_model()
        book = load_playbook(playbook)
        return Scanner(self, book, checker).scan(path, progress)

    def _not_found(self, text: str) -> str:
        """The not-found reply, naming files that could not be read (they may hold it)."""
        failed = [d for d in self.store.documents() if d.status == "failed"]
        if not failed:
            return text
        names = "; ".join(f"{d.path} ({d.error})" for d in failed[:5])
        more = f" and {len(failed) - 5} more" if len(failed) > 5 else ""
        return f"{text} Some files could not be read and may hold the answer: {names}{more}."

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
        }


def _with_metrics(answer: Answer, timings: dict[str, float]) -> Answer:
    return replace(answer, metrics={**timings, **answer.metrics})
