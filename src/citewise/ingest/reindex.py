"""Re-indexing: bring an index in line with the configured embedding model and text analysis.

:func:`reindex` is what ``citewise reindex`` and ``POST /api/reindex`` run (through
:meth:`Engine.reindex <citewise.engine.Engine.reindex>`, which only passes its parts in).
"""

from __future__ import annotations

import logging
from pathlib import Path

from citewise.config import Settings
from citewise.embed import Embedder
from citewise.errors import IndexChangedError
from citewise.ingest.pipeline import Ingestor, IngestReport, ProgressFn, reanalyze
from citewise.store.base import Store
from citewise.text.analysis import ANALYZER_VERSION

log = logging.getLogger(__name__)

#: Builds discarded because the index was written meanwhile, before giving up.
ATTEMPTS = 3


def reindex(settings: Settings, store: Store, embedder: Embedder,
            progress: ProgressFn | None = None) -> IngestReport:
    """Bring ``store`` in line with ``embedder`` and the current text analysis.

    When the index already holds ``embedder``'s model and only its analyzer version is older,
    the stored chunks are re-analysed in place (:func:`~citewise.ingest.pipeline.reanalyze`:
    languages and BM25 terms recomputed, vectors kept, no file read). Otherwise every
    file-backed document is re-read and re-embedded, each into the collection it was in;
    documents whose files are gone are dropped.

    Re-embedding never clears the live index first: the new index is built beside it
    (:meth:`Store.rebuild <citewise.store.base.Store.rebuild>`: a staging SQLite file, or one
    PostgreSQL transaction) and switched to in one transaction at the end, so readers see the
    old index or the new one, and a crash, kill or Ctrl-C part-way leaves the old index intact
    (run the command again: it starts over). When the index is written meanwhile (an upload or
    delete) the build is discarded and redone, up to :data:`ATTEMPTS` times.

    Returns the per-file report. Raises IndexChangedError when the index kept changing,
    IndexError_ when it cannot be written.
    """
    name, dim = store.stored_model()
    analyzer = store.stored_analyzer()
    if (name == embedder.name and dim == embedder.dim and analyzer is not None
            and analyzer != ANALYZER_VERSION):
        return reanalyze(store, progress)
    for attempt in range(ATTEMPTS):
        try:
            return _rebuild(settings, store, embedder, progress)
        except IndexChangedError as err:
            if attempt == ATTEMPTS - 1:
                raise
            log.warning("reindex: %s; building again", err)
    raise AssertionError("unreachable")  # pragma: no cover


def _rebuild(settings: Settings, store: Store, embedder: Embedder,
             progress: ProgressFn | None) -> IngestReport:
    """One :func:`reindex` attempt: every file-backed document re-embedded into a store built
    beside the live one, switched in at the end."""
    with store.rebuild() as target:
        by_collection: dict[str, list[tuple[Path, Path]]] = {}
        for d in store.documents():
            if Path(d.source_path).is_file():
                by_collection.setdefault(d.collection, []).append(
                    (Path(d.source_path), Path(d.metadata.get("_root", d.source_path))))
        target.bind_model(embedder.name, embedder.dim)
        report = IngestReport()
        for collection, files in by_collection.items():
            part = Ingestor(settings, target, embedder, collection).ingest_files(files, progress)
            report.files.extend(part.files)
            report.seconds += part.seconds
            report.embedded += part.embedded
    return report


__all__ = ["ATTEMPTS", "reindex"]
