"""Which files an ingest asked for from outside the machine's own shell may read.

A chat INGEST and the MCP ``ingest`` tool (HTTP ``/mcp`` and stdio ``citewise mcp``) take
paths from a remote caller or a model; without a rule, ``ingest ["/proc/self/environ"]`` put
the server's environment, keys included, into an index every reader can search. One rule
serves every way in (the CLI excepted: it is the user's own shell):

- a path is resolved first (``~`` expanded, relative to the collection's folder, symlinks
  followed), then must lie under one of :func:`ingest_roots`: the collection's folder
  (``$home/collections/<name>``) and the folders of ``ingest_roots``
  (``CITEWISE_INGEST_ROOTS``);
- nothing under the kernel's pseudo file systems (:data:`PSEUDO`: ``/proc``, ``/sys``,
  ``/dev``) is read, even under a root;
- only regular files and folders are named (a device, socket or pipe is refused), and under a
  named folder each file is checked again (:func:`refusal`, through the ``within`` argument
  of :meth:`citewise.ingest.pipeline.Ingestor.ingest`): a symlink to a file outside the roots
  is reported failed, not read.
"""

from __future__ import annotations

import stat
from collections.abc import Sequence
from pathlib import Path

from citewise.config import Settings

#: Pseudo file systems whose files describe the running system (environment, memory,
#: devices), never documents.
PSEUDO = (Path("/proc"), Path("/sys"), Path("/dev"))

OUTSIDE = ("outside the folders an ingest from a chat or an MCP client may read (the "
           "collection's folder and CITEWISE_INGEST_ROOTS)")


def ingest_roots(settings: Settings, collection: str | None = None) -> list[Path]:
    """The folders (resolved) an ingest into ``collection`` (default: the settings') may
    read from."""
    folder = settings.collection_folder(collection or settings.collection)
    return [r.expanduser().resolve() for r in (folder, *settings.ingest_roots)]


def refusal(path: Path, roots: Sequence[Path]) -> str | None:
    """Why the resolved ``path`` may not be read by a confined ingest, or None."""
    if any(path == p or path.is_relative_to(p) for p in PSEUDO):
        return f"{OUTSIDE}: a system file (/proc, /sys, /dev), not a document"
    if not any(path.is_relative_to(r) for r in roots):
        return OUTSIDE
    try:
        mode = path.stat().st_mode
    except OSError:
        return None  # missing or unreadable: the caller says so
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return "not a regular file or folder (a device, socket or pipe)"
    return None


def confined_path(settings: Settings, argument: str,
                  collection: str | None = None) -> Path | str:
    """The resolved file or folder ``argument`` names, or the reason (starting with the
    argument) a confined ingest into ``collection`` may not read it."""
    roots = ingest_roots(settings, collection)
    raw = Path(argument).expanduser()
    folder = settings.collection_folder(collection or settings.collection)
    try:
        path = (raw if raw.is_absolute() else folder / raw).resolve()
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL byte
        return f"{argument}: not a readable path"
    why = refusal(path, roots)
    if why:
        return f"{argument}: {why}"
    if not path.exists():
        return f"{argument}: no such file or folder"
    return path


__all__ = ["OUTSIDE", "PSEUDO", "confined_path", "ingest_roots", "refusal"]
