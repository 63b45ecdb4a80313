"""Watched folders: keep an index in sync with folders as their files change.

:func:`watch_folders` first runs one incremental ingest of every folder (the catch-up: what
changed while nothing was watching, found by content hash, so a restart picks up where the
last run stopped), then applies each batch of changes that ``watchfiles`` (the Rust
``notify`` crate: inotify, FSEvents, ReadDirectoryChangesW, or polling) reports:

- a batch is a set of changed paths, gathered until no new change has come for
  ``debounce_ms`` (and at most ``10 * debounce_ms`` after the first change), so an editor's
  save (temporary file, rename) or a ``git checkout`` is applied once;
- each changed path is looked at as it is *now*, not as the event said: a file that exists is
  ingested (unchanged bytes are skipped by hash), a folder that exists is walked (a folder
  moved in reports only itself), and a path that is gone deletes its document and every
  document under it (a folder moved out or deleted). A rename is a path gone and a path
  added; the renamed file's chunks keep their vectors (the embedding cache is by content);
- files are chosen as :func:`~citewise.ingest.pipeline.walk_files` chooses them (no hidden
  names, no ``.git``/``node_modules``...), and the index's own files are never read;
- each document is written in its own transaction by the ingest pipeline, and a file that
  cannot be indexed is reported as ``failed`` with its reason while the watch goes on.

Events arrive on the watcher's own thread while a batch is being applied and are kept for the
next batch, so nothing that changes during the catch-up or a slow batch is lost.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from citewise.errors import ConfigError
from citewise.ingest.pipeline import (
    FileResult,
    Ingestor,
    IngestReport,
    ProgressFn,
    skipped,
    walk_files,
)
from citewise.store.base import FileBacked

#: Default quiet time before a batch of changes is applied, in milliseconds.
DEBOUNCE_MS = 500

ReportFn = Callable[[IngestReport], None]
"""Called with the report of the catch-up ingest, then with one report per applied batch."""


def watch_roots(paths: Sequence[str | Path]) -> list[Path]:
    """``paths`` as absolute, resolved folders, duplicates and folders inside another one
    dropped. Raises ConfigError naming the path when one does not exist or is not a folder."""
    roots: list[Path] = []
    for p in paths:
        root = Path(p).expanduser().resolve()
        if not root.exists():
            raise ConfigError(f"cannot watch {p}: no such folder")
        if not root.is_dir():
            raise ConfigError(f"cannot watch {p}: it is a file, not a folder; watch the folder "
                              "that holds it, or index it once with `citewise ingest`")
        roots.append(root)
    return [r for r in dict.fromkeys(roots)
            if not any(o != r and r.is_relative_to(o) for o in roots)]


class FolderSync:
    """Applies changed paths under watched folders to the index through one ``Ingestor``.

    ``roots`` are absolute folders (:func:`watch_roots`); a document's displayed path is
    relative to the root holding its file, as ``citewise ingest ROOT`` gives it.
    """

    def __init__(self, ingestor: Ingestor, roots: Sequence[Path]) -> None:
        self.ingestor = ingestor
        self.roots = list(roots)
        store = ingestor.store
        self.index_file = store.path.resolve() if isinstance(store, FileBacked) else None

    def root_of(self, path: Path) -> Path | None:
        """The watched folder holding ``path`` (the innermost), None when none does."""
        inside = [r for r in self.roots if path.is_relative_to(r)]
        return max(inside, key=lambda r: len(r.parts)) if inside else None

    def wanted(self, path: Path) -> bool:
        """Whether a change to ``path`` can matter to the index: under a watched folder, not
        skipped by the ingest's rules, not the index file or its ``-wal``/``-shm``."""
        root = self.root_of(path)
        if root is None:
            return False
        if path == root:
            return True
        if self.index_file is not None and path.parent == self.index_file.parent and \
                path.name.startswith(self.index_file.name):
            return False
        return not skipped(path, root)

    def catch_up(self, progress: ProgressFn | None = None) -> IngestReport:
        """One incremental ingest of every root: new and changed files indexed, unchanged
        ones skipped by hash, documents whose files are gone from a root deleted."""
        return self.ingestor.ingest(self.roots, progress=progress)

    def apply(self, changes: Iterable[tuple[str, str | Path]],
              progress: ProgressFn | None = None) -> IngestReport:
        """Bring the documents of the changed paths in line with the files there now.

        ``changes`` are ``(kind, path)`` pairs, ``kind`` one of ``added``, ``modified``,
        ``deleted`` (watchfiles' ``Change`` names). An existing file is ingested (skipped by
        hash when its bytes did not change); an existing folder that was ``added`` (made or
        moved in) is walked; the documents at or under a path that is gone are deleted.
        Returns the report (``deleted`` entries first); a bad file is a ``failed`` entry,
        never an exception.
        """
        started = time.perf_counter()
        report = IngestReport()
        kinds: dict[Path, set[str]] = {}
        for kind, path in changes:
            kinds.setdefault(Path(path), set()).add(kind)
        files: dict[Path, Path] = {}
        gone: list[Path] = []
        for path in sorted(kinds):
            root = self.root_of(path)
            if root is None or not self.wanted(path):
                continue
            if not path.exists():
                gone.append(path)
            elif path.is_file():
                files.setdefault(path, root)
            elif path.is_dir() and path != root and "added" in kinds[path]:
                files.update((f, root) for f in walk_files(path)
                             if f not in files and self.wanted(f))
                gone.append(path)  # documents of files that were there and are not now
        for doc_id, display in self._gone_documents(gone, {str(f) for f in files}):
            self.ingestor.store.delete_document(doc_id)
            report.files.append(FileResult(display, "deleted"))
        if files:
            done = self.ingestor.ingest_files(sorted(files.items()), progress)
            report.files.extend(done.files)
            report.embedded = done.embedded
        report.seconds = time.perf_counter() - started
        return report

    def _gone_documents(self, gone: list[Path], present: set[str]) -> list[tuple[str, str]]:
        """``(id, path)`` of stored documents at or under a ``gone`` path whose file is not
        there any more (and not about to be ingested)."""
        if not gone:
            return []
        out = []
        for doc in self.ingestor.store.documents():
            source = Path(doc.source_path)
            if doc.source_path in present or not any(
                    source == g or source.is_relative_to(g) for g in gone):
                continue
            if not source.exists():
                out.append((doc.id, doc.path))
        return out


def watch_folders(ingestor: Ingestor, paths: Sequence[str | Path], *,
                  stop: threading.Event | None = None, debounce_ms: int = DEBOUNCE_MS,
                  force_polling: bool | None = None, on_report: ReportFn | None = None,
                  on_ready: Callable[[list[Path]], None] | None = None,
                  progress: ProgressFn | None = None) -> None:
    """Keep the index of ``ingestor`` in sync with the folders ``paths`` until ``stop`` is
    set (or Ctrl+C: KeyboardInterrupt), as the module docstring describes.

    ``debounce_ms`` (>= 10): quiet time before a batch of changes is applied.
    ``force_polling``: poll the folders instead of the OS's notifications (network drives,
    some container mounts); None: watchfiles decides (``WATCHFILES_FORCE_POLLING``).
    ``on_report`` gets the catch-up's report, then each batch's; ``on_ready`` gets the
    watched roots once the catch-up is done and changes are being watched.
    Raises ConfigError when a path is missing or not a folder, ``debounce_ms`` < 10, or the
    system refuses to watch the folders (too many of them for its notification limit).
    """
    import watchfiles

    if debounce_ms < 10:
        raise ConfigError(f"debounce must be at least 10 ms, got {debounce_ms}")
    roots = watch_roots(paths)
    sync = FolderSync(ingestor, roots)
    stop = stop or threading.Event()
    changes = watchfiles.watch(
        *roots, watch_filter=lambda _change, path: sync.wanted(Path(path)),
        debounce=10 * debounce_ms, step=debounce_ms, stop_event=stop,
        rust_timeout=max(1000, 2 * debounce_ms), yield_on_timeout=True,
        force_polling=force_polling)
    try:
        try:
            next(changes, None)  # the notifier runs from here on: later changes are kept
        except (OSError, RuntimeError) as err:  # e.g. the system's limit of watched folders
            raise ConfigError(
                f"cannot watch {', '.join(map(str, roots))}: {err}; use polling instead "
                "(citewise watch --poll), or raise the limit (Linux: sysctl "
                "fs.inotify.max_user_watches)") from err
        if stop.is_set():
            return
        report = sync.catch_up(progress)
        if on_report:
            on_report(report)
        if on_ready:
            on_ready(roots)
        for batch in changes:
            if not batch:
                continue  # a timeout: lets a stop be noticed
            report = sync.apply(((change.name, path) for change, path in batch), progress)
            if on_report and report.files:
                on_report(report)
    finally:
        changes.close()
