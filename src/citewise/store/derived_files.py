"""The SQLite store's derived indexes saved next to the index file, opened memory-mapped.

The BM25 postings (:mod:`citewise.store.bm25_index`) and the dense matrix with its int8 codes
(:mod:`citewise.store.dense_index`) are derived from one committed state of the SQLite file.
Building them reads every chunk row (minutes at 1M chunks); saving their arrays lets the next
process that reads the same state map them instead (``numpy.load(mmap_mode="r")``): it opens
in about a second, and its resident memory holds only the pages its searches touch, which the
kernel may drop and re-read, where a built index holds every array on the heap.

Layout, in ``<index file>.derived/``::

    bm25-<index id>-g<generation>/     manifest.json, rowids.npy, lengths.npy, indptr.npy,
                                       positions.npy, counts.npy, terms.npy, and the chunk
                                       keys: ids.npy, id_offsets.npy, documents.npy,
                                       document_offsets.npy, ordinals.npy, languages.npy,
                                       language_offsets.npy
    dense-<index id>-g<generation>/    manifest.json, rowids.npy, vectors.npy[, scales.npy, codes.npy]
    .tmp-<kind>-<pid>-<token>/         a save in progress

Consistency: a folder belongs to one :class:`Stamp`, read inside the same snapshot as the
rows: the index file's own random id (``meta.index_id``, so a new file at the same path never
matches an old folder), its generation (bumped by every committed write, by any process), and
the chunk count and largest row key of that state (a second check against a file restored
from a copy). A folder is used only when its manifest names exactly the stamp of the state a
search reads and every array has the shape and dtype the manifest records; anything else
(another generation, a torn or truncated file, a missing manifest) is ignored, and the index
is built from the rows and saved again. A save writes every file into a temporary folder,
flushes them to disk, writes the manifest last and renames the folder into place (atomic on
POSIX), so a crash or kill leaves the old folder, the new one, or a temporary one that the
next save removes (when its process is gone); never a partly written folder under a stamp's
name. Once saved, folders of the same kind with an older generation or another index id are
deleted (a process still mapping one keeps its pages on POSIX; on its next search it reads the
newer generation and loads that one). A folder that cannot be written (a read-only disk) only
costs the rebuild in the next process.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import secrets
import shutil
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

_log = logging.getLogger(__name__)

#: version of the folder layout; a folder of another format is ignored
FORMAT = 1
_NAME = re.compile(r"^(bm25|dense)-([0-9a-f]+)-g(\d+)$")
_TMP = re.compile(r"^\.tmp-(bm25|dense)-(\d+)-[0-9a-f]+$")


@dataclass(frozen=True)
class Stamp:
    """Which committed state of the index a derived folder reflects (see the module
    docstring): the file's id, its generation, its chunk count and largest row key."""

    index_id: str
    generation: int
    chunks: int
    max_rowid: int

    def folder(self, kind: str) -> str:
        """The folder name of a ``kind`` (``bm25`` or ``dense``) index of this state."""
        return f"{kind}-{self.index_id}-g{self.generation}"


def derived_folder(index_path: Path) -> Path:
    """Where the derived files of the SQLite file ``index_path`` live: ``<file>.derived``."""
    return index_path.with_name(index_path.name + ".derived")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def load(root: Path, kind: str, stamp: Stamp) -> tuple[dict[str, np.ndarray], dict[str, object]] | None:
    """The arrays of the ``kind`` folder of ``stamp`` under ``root``, memory-mapped read-only,
    with the manifest's ``extra`` values; None when there is no such folder or it does not
    match ``stamp`` and its own manifest exactly (a folder that fails the check is deleted)."""
    folder = root / stamp.folder(kind)
    if not folder.is_dir():
        return None
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        if manifest.get("format") != FORMAT or manifest.get("stamp") != asdict(stamp):
            raise ValueError("manifest of another state")
        arrays: dict[str, np.ndarray] = {}
        for name, (shape, dtype) in manifest["arrays"].items():
            array = np.load(folder / f"{name}.npy", mmap_mode="r", allow_pickle=False)
            if list(array.shape) != shape or array.dtype.str != dtype:
                raise ValueError(f"{name}.npy is {array.shape} {array.dtype.str}, not {shape} {dtype}")
            arrays[name] = array
        return arrays, dict(manifest.get("extra", {}))
    except (OSError, ValueError, KeyError, TypeError) as err:  # torn, truncated, foreign
        _log.info("ignoring the derived index %s (%s); it is rebuilt", folder, err)
        shutil.rmtree(folder, ignore_errors=True)
        return None


def older(root: Path, kind: str, index_id: str, generation: int) -> Stamp | None:
    """The stamp recorded in the manifest of the newest ``kind`` folder under ``root`` of the
    index ``index_id`` with a generation below ``generation`` (what an index of an older
    state can be caught up from; :func:`load` it to check it), or None when there is none or
    its manifest cannot be read."""
    try:
        found = [(int(m[3]), name) for m in map(_NAME.match, os.listdir(root))
                 if m and m[1] == kind and m[2] == index_id and int(m[3]) < generation
                 for name in [m[0]]]
    except OSError:
        return None
    if not found:
        return None
    _, name = max(found)
    try:
        manifest = json.loads((root / name / "manifest.json").read_text(encoding="utf-8"))
        stamp = Stamp(**manifest["stamp"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return stamp if stamp.folder(kind) == name else None


def save(root: Path, kind: str, stamp: Stamp, arrays: Mapping[str, np.ndarray],
         extra: Mapping[str, object] | None = None) -> Path | None:
    """Write ``arrays`` as the ``kind`` folder of ``stamp`` under ``root`` (see the module
    docstring for the steps) and delete the older folders of that kind; returns the folder, or
    None when it could not be written (logged; the caller keeps its in-memory index) or a
    folder of a newer generation is already there (this state is not saved)."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        newest = max((int(m[3]) for m in map(_NAME.match, os.listdir(root))
                      if m and m[1] == kind and m[2] == stamp.index_id), default=-1)
        if newest > stamp.generation:
            return None
        final = root / stamp.folder(kind)
        if final.exists():
            return final
        tmp = root / f".tmp-{kind}-{os.getpid()}-{secrets.token_hex(4)}"
        tmp.mkdir()
        try:
            shapes: dict[str, tuple[list[int], str]] = {}
            for name, array in arrays.items():
                np.save(tmp / f"{name}.npy", np.ascontiguousarray(array), allow_pickle=False)
                _fsync(tmp / f"{name}.npy")
                shapes[name] = (list(array.shape), array.dtype.str)
            manifest = {"format": FORMAT, "stamp": asdict(stamp), "arrays": shapes,
                        "extra": dict(extra or {})}
            (tmp / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
            _fsync(tmp / "manifest.json")
            try:
                tmp.rename(final)
            except OSError:  # another process saved the same state first
                if not final.exists():
                    raise
            _fsync(root)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        prune(root, kind, stamp)
        return final
    except OSError as err:
        _log.info("could not save the derived index under %s (%s)", root, err)
        return None


def prune(root: Path, kind: str, stamp: Stamp) -> None:
    """Delete the ``kind`` folders under ``root`` of an older generation or another index id,
    and temporary folders whose process is gone."""
    for name in os.listdir(root):
        m = _NAME.match(name)
        t = _TMP.match(name)
        stale = (m is not None and m[1] == kind
                 and (m[2] != stamp.index_id or int(m[3]) < stamp.generation))
        if stale or (t is not None and not _alive(int(t[2]))):
            with contextlib.suppress(OSError):
                shutil.rmtree(root / name)


def terms_array(terms: list[str]) -> np.ndarray:
    """uint8 array of ``terms`` (no whitespace inside a term) joined by newlines, UTF-8."""
    return np.frombuffer("\n".join(terms).encode("utf-8"), dtype=np.uint8)


def terms_of(array: np.ndarray, count: int) -> dict[str, int]:
    """The vocabulary (term -> column, in saved order) of a :func:`terms_array` of ``count``
    terms; raises ValueError when it holds another number of terms."""
    text = bytes(array).decode("utf-8")
    terms = text.split("\n") if count else []
    if len(terms) != count:
        raise ValueError(f"terms.npy holds {len(terms)} terms, not {count}")
    return dict(zip(terms, range(count), strict=True))
