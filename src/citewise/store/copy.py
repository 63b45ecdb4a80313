"""Copy an index from one store to another without re-embedding (``citewise migrate``).

Every document is read with its chunks, stored vectors and analysed BM25 texts
(:meth:`Store.export`) and written to the target with one :meth:`Store.upsert_document`
transaction, so an interrupted copy leaves whole documents only and can simply be run again
(documents are replaced by id). Until the copy ends the target is marked unfinished
(:meth:`Store.mark_unfinished`), so a killed migrate never leaves a target that passes for
complete: the engine refuses it (IndexError_ naming the re-run) and ``citewise status`` shows
the mark, until a re-run finishes and removes it. The target is bound to the source's
embedding model and analyzer version first; a target holding another model's vectors is
refused with EmbeddingMismatchError, one holding terms of another analysis with
AnalyzerMismatchError.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass

from citewise.store.base import BulkLoading, Store

#: The mark a copy in progress leaves on its target (:meth:`Store.mark_unfinished`).
UNFINISHED = ("an unfinished copy: citewise migrate was interrupted while copying into this "
              "index; run the same citewise migrate again to complete it")


@dataclass(frozen=True)
class CopyReport:
    """What :func:`copy_index` copied: ``documents`` (including failed ones kept as records),
    ``chunks``, and the wall time in seconds."""

    documents: int
    chunks: int
    seconds: float


def copy_index(source: Store, target: Store,
               progress: Callable[[str, int, int], None] | None = None) -> CopyReport:
    """Copy every document of ``source`` into ``target`` (see the module docstring).

    ``progress(document path, done, total)`` is called after each document. Returns the
    counts copied. An empty source copies nothing and binds no model. Raises what the
    stores raise (EmbeddingMismatchError, AnalyzerMismatchError, IndexError_); the target then
    stays marked unfinished."""
    started = time.perf_counter()
    documents = source.documents()
    name, dim = source.stored_model()
    if name is not None and dim is not None:
        target.bind_model(name, dim)
    if (analyzer := source.stored_analyzer()) is not None:
        target.bind_analyzer(analyzer)
    target.mark_unfinished(UNFINISHED)
    chunks = 0
    # PostgreSQL: the HNSW index is built once at the end instead of row by row
    loading = (target.bulk_load() if isinstance(target, BulkLoading) and len(documents) > 1
               else nullcontext())
    with loading:
        for done, document in enumerate(documents, start=1):
            doc_chunks, vectors, terms = source.export(document.id)
            target.upsert_document(document, doc_chunks, vectors, terms)
            chunks += len(doc_chunks)
            if progress is not None:
                progress(document.path, done, len(documents))
    target.mark_unfinished(None)
    return CopyReport(len(documents), chunks, time.perf_counter() - started)
