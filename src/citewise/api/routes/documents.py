"""The collection: list, upload (then ingest), delete documents; re-index everything.

Uploads are stored in the collection folder (``$CITEWISE_HOME/collections/<collection>``)
under their sanitised *relative path* (:func:`safe_path`), which is the document's identity
in its collection: ``sub/notes.md`` and ``notes.md`` are two documents, and two folders'
``budget.md`` uploaded together are both kept (case C09). Each path component has control and
reserved characters and reserved device names replaced (pathvalidate); a name with ``..``, an
absolute path or a hidden component is refused, so no name can write outside the folder (case
C33); a component longer than :data:`MAX_NAME` characters is shortened with a hash of the
whole name, so long names never merge into one.

Two names that map to one stored file are refused with 409 naming both, and nothing is
stored: in one request, the same sanitised path twice (``a?.md`` and ``a_.md``) or paths that
differ only in letter case (``notes.MD`` and ``notes.md``); against the folder, a path that
differs from a stored one only in letter case (one file on a case-insensitive disk). An upload
with exactly the path of a stored file is a new version of that document.

A new version replaces the old only once it is known to parse: each file is received into a
temporary file beside its destination (the size limit counting as it arrives), parsed, then
moved into place and indexed; an empty, truncated or unparsable new version leaves the old
file and its index entries as they were (still searchable), and the response gives the
reason. If indexing fails after the move, the old file is put back and re-indexed.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, File, Query, Request, UploadFile
from fastapi import Path as PathParam
from fastapi.concurrency import run_in_threadpool
from pathvalidate import sanitize_filename

from citewise.api.deps import AdminDep, EngineDep, ReaderDep, SettingsDep, StateDep
from citewise.api.schemas import (
    Deleted,
    DocumentPublic,
    DocumentsPublic,
    FilePublic,
    IngestPublic,
)
from citewise.config import COLLECTION_PATTERN, Settings
from citewise.engine import Engine
from citewise.errors import (
    DocumentError,
    NoTextLayerError,
    NotFoundError,
    UploadConflictError,
    UploadError,
    UploadTooLargeError,
)
from citewise.ingest.parsers.base import ParseOptions
from citewise.ingest.pipeline import FileResult, IngestReport, document_id, parse_file

router = APIRouter(prefix="/api", tags=["documents"])

#: Longest path component kept as sent; a longer one is cut and given a hash of the whole.
MAX_NAME = 120
#: Deepest folder nesting of an upload's relative path.
MAX_DEPTH = 16
_COPY_BLOCK = 1 << 20
_DRIVE = re.compile(r"^[A-Za-z]:")


def _shorten(name: str, suffix: str, raw: str) -> str:
    """``name`` cut to MAX_NAME characters keeping ``suffix``, with 8 hex digits of the hash
    of ``raw`` (the component as sent), so two long names stay two files."""
    tag = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    stem = name[: len(name) - len(suffix)] if suffix else name
    return stem[: MAX_NAME - len(suffix) - 9].rstrip(" .") + "~" + tag + suffix


def safe_path(filename: str | None, settings: Settings) -> str:
    """The relative path (``/``-separated, NFC) an upload named ``filename`` is stored under
    in its collection folder; see the module docstring.

    Raises UploadError (400) naming the file for: an absolute path, a ``..`` component, a
    hidden (``.``) component, a path deeper than MAX_DEPTH, a component with nothing usable
    left, or a suffix outside ``upload_types``.
    """
    raw = unicodedata.normalize("NFC", (filename or "").replace("\\", "/").replace("\x00", ""))
    shown = repr(raw[:100])
    if raw.startswith("/") or _DRIVE.match(raw):
        raise UploadError(f"{shown}: an absolute path is not accepted; send the file name, or "
                          "its path inside the collection (e.g. 'reports/q1.pdf')")
    parts = [part for part in raw.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise UploadError(f"{shown}: a '..' component is not accepted; send the file name, or "
                          "its path inside the collection (e.g. 'reports/q1.pdf')")
    if not parts:
        raise UploadError(f"{shown}: no usable file name; rename the file")
    if len(parts) > MAX_DEPTH:
        raise UploadError(f"{shown}: more than {MAX_DEPTH} folders deep; upload it from a "
                          "shallower folder")
    suffix = os.path.splitext(parts[-1])[1]
    if suffix.lower() not in {t.lower() for t in settings.upload_types}:
        raise UploadError(f"{shown}: file type {suffix.lower() or '(none)'} is not accepted; "
                          f"accepted: {', '.join(settings.upload_types)}")
    out = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        name = sanitize_filename(part, platform="universal", replacement_text="_").strip(" ")
        ext = os.path.splitext(name)[1] if last else ""
        if last and ext.lower() != suffix.lower():  # the sanitiser ate the suffix
            name, ext = name + suffix, suffix
        if not name.removesuffix(ext).strip(" .") or name.startswith("."):
            what = "file name" if last else f"folder name {part[:60]!r}"
            raise UploadError(f"{shown}: no usable {what} (empty or hidden); rename it")
        if len(name) > MAX_NAME:
            name = _shorten(name, ext, part)
        out.append(name)
    return "/".join(out)


def _key(rel: str) -> str:
    return unicodedata.normalize("NFC", rel).casefold()


def check_names(raws: Sequence[str | None], rels: Sequence[str]) -> None:
    """Raise UploadConflictError (409) naming both when two uploads of one request map to
    one stored file or folder: the same sanitised path, paths equal but for letter case
    (folders included), or a file whose path is another upload's folder."""

    def conflict(j: int, i: int, what: str) -> UploadConflictError:
        return UploadConflictError(
            f"{raws[j]!r} and {raws[i]!r} {what} (paths are compared after sanitising and "
            "ignoring letter case); rename one of them and upload again")

    files: dict[str, int] = {}
    folders: dict[str, tuple[str, int]] = {}  # key -> (exact spelling, upload index)
    for i, rel in enumerate(rels):
        j = files.setdefault(_key(rel), i)
        if j != i:
            raise conflict(j, i, f"would both be stored as {rels[j]!r}")
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            spelling, j = folders.setdefault(_key(folder), (folder, i))
            if spelling != folder:
                raise conflict(j, i, f"name one folder two ways ({spelling!r}, {folder!r})")
    for i, rel in enumerate(rels):
        if _key(rel) in folders:
            raise conflict(folders[_key(rel)][1], i, f"use {rel!r} as a folder and as a file")


def check_folder(folder: Path, raw: str | None, rel: str) -> None:
    """Raise UploadConflictError (409) naming both when ``rel`` differs from a stored path
    of ``folder`` only in letter case, or a file stands where a folder must be (or the
    reverse). The exact path of a stored file is no conflict: it is a new version."""
    here = folder
    parts = rel.split("/")
    for depth, part in enumerate(parts, start=1):
        if not here.is_dir():
            return
        entry = next((e for e in os.listdir(here) if not e.startswith(".")
                      and _key(e) == _key(part)), None)
        if entry is None:
            return
        stored = "/".join([*parts[: depth - 1], entry])
        if entry != part:
            raise UploadConflictError(
                f"{raw!r} (stored as {rel!r}) differs only in letter case from the stored "
                f"{stored!r}; upload it under exactly that name to replace it, or rename it")
        here = here / entry
        last = depth == len(parts)
        if (last and here.is_dir()) or (not last and not here.is_dir()):
            raise UploadConflictError(
                f"{raw!r} (stored as {rel!r}) needs {stored!r} to be a "
                f"{'file' if last else 'folder'}, and the stored one is not; rename it")


def _receive(upload: UploadFile, folder: Path, rel: str, limit_mb: float,
             budget: list[int]) -> Path:
    """Copy ``upload`` into a temporary file in ``folder``; returns its path. Raises
    UploadTooLargeError past ``limit_mb`` MiB for the file, or when ``budget[0]`` (bytes the
    request may still bring) runs out; the temporary file is removed then."""
    limit = int(limit_mb * 2**20)
    tmp = folder / f".upload-{secrets.token_hex(8)}.part"
    size = 0
    try:
        with tmp.open("wb") as out:
            while block := upload.file.read(_COPY_BLOCK):
                size += len(block)
                budget[0] -= len(block)
                if size > limit or budget[0] < 0:
                    what = rel if size > limit else "the request"
                    raise UploadTooLargeError(
                        f"{what}: larger than the upload limit of {limit_mb:g} MiB "
                        "(CITEWISE_MAX_UPLOAD_MB); nothing was stored")
                out.write(block)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


@dataclass
class _Staged:
    raw: str | None
    rel: str
    tmp: Path
    dest: Path
    backup: Path | None = None
    moved: bool = False
    kept: str = ""  # why the stored version was kept (the new one does not parse)


def _install(staged: Sequence[_Staged], engine: Engine, folder: Path, check: bool) -> None:
    """Move each received file into place, keeping a backup of the version it replaces. A
    new version of an indexed document that does not parse stays out (``kept`` says why)
    when ``check``."""
    for s in staged:
        old = engine.store.document(document_id(s.dest))
        if check and s.dest.is_file() and old is not None and old.status == "indexed":
            try:
                # without OCR (the ingest does it): a scan is known to parse when OCR is on
                parse_file(s.dest, s.tmp.read_bytes(), s.rel,
                           ParseOptions(max_pages=engine.settings.max_pages))
            except NoTextLayerError:
                if not engine.settings.ocr:
                    s.kept = (f"{NoTextLayerError.reason}; the new version was not stored, the "
                              "previous one is kept and still searchable")
                    continue
            except DocumentError as err:
                s.kept = (f"{err.detail}; the new version was not stored, the previous one is "
                          "kept and still searchable")
                continue
        s.dest.parent.mkdir(parents=True, exist_ok=True)
        if s.dest.is_file():
            s.backup = folder / f".upload-{secrets.token_hex(8)}.bak"
            try:
                os.link(s.dest, s.backup)
            except OSError:  # no hard links here: a copy does
                shutil.copy2(s.dest, s.backup)
        os.replace(s.tmp, s.dest)
        s.moved = True


def _restore(staged: Sequence[_Staged], failed: set[str] | None = None) -> list[_Staged]:
    """Put back the previous version of each moved file (all, or those whose displayed path
    is in ``failed``); a new file without one is removed. Returns those restored from a
    backup."""
    back = []
    for s in staged:
        if not s.moved or (failed is not None and s.rel not in failed):
            continue
        if s.backup is not None:
            os.replace(s.backup, s.dest)
            s.backup = None
            back.append(s)
        elif failed is None:
            s.dest.unlink(missing_ok=True)
        s.moved = False
    return back
@router.get("/documents")
def list_documents(engine: EngineDep, reader: ReaderDep) -> DocumentsPublic:
    """Every document the caller may read, including files that failed (``status``
    "failed")."""
    docs = [d for d in engine.store.documents() if reader.may_read(d.collection)]
    return DocumentsPublic(count=len(docs), data=[
        DocumentPublic(id=d.id, path=d.path, title=d.title, format=d.format,
                       chunks=d.chunk_count, pages=d.pages, status=d.status, error=d.error,
                       error_kind=d.error_kind, indexed_at=d.indexed_at, warnings=list(d.warnings),
                       collection=d.collection) for d in docs])


@router.post("/documents", status_code=201, dependencies=[AdminDep],
             responses={400: {"description": "bad file name"},
                        409: {"description": "two names map to one stored file"},
                        413: {"description": "larger than max_upload_mb"}})
def upload_documents(
    request: Request,
    state: StateDep,
    files: Annotated[list[UploadFile], File(description="One or more files; a file name may "
                                             "be a relative path (folder uploads).")],
    ingest: Annotated[bool, Query(description="Ingest after storing.")] = True,
    collection: Annotated[str | None, Query(
        pattern=COLLECTION_PATTERN, description="The collection the files go to (default: "
        "the collection setting); read access is granted per collection.")] = None,
) -> IngestPublic:
    """Store files in the collection's folder under their relative paths and ingest them
    into that collection; returns the stored paths and the per-file ingest report (a new
    version that does not parse is reported ``failed`` with its reason, and the previous one
    is kept). The limit ``max_upload_mb`` applies to each file and to the whole request.

    Errors: 400 for a bad file name or type, 409 naming both files when two names map to
    one stored file, 413 past the size limit (nothing is stored in any of these cases).
    """
    settings = state.settings
    collection = collection or settings.collection
    limit = int(settings.max_upload_mb * 2**20)
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit + 2**20:
        raise UploadTooLargeError(f"the request is larger than the upload limit of "
                                  f"{settings.max_upload_mb:g} MiB (CITEWISE_MAX_UPLOAD_MB)")
    raws = [f.filename for f in files]
    rels = [safe_path(raw, settings) for raw in raws]  # refuse before storing any
    check_names(raws, rels)
    folder = settings.collection_folder(collection)
    folder.mkdir(parents=True, exist_ok=True)
    root = folder.resolve()
    staged: list[_Staged] = []
    try:
        budget = [limit + 1]
        for f, raw, rel in zip(files, raws, rels, strict=True):
            dest = (root / rel).resolve()
            if not dest.is_relative_to(root):  # defence in depth: safe_path ensures it
                raise UploadError(f"{raw!r}: not a path inside the collection folder")
            staged.append(_Staged(raw, rel, _receive(f, folder, rel, settings.max_upload_mb,
                                                     budget), dest))
        with state.write_lock:
            for s in staged:
                check_folder(root, s.raw, s.rel)
            return _commit(state.engine, staged, root, collection, ingest)
    finally:
        for s in staged:
            s.tmp.unlink(missing_ok=True)
            if s.backup is not None:
                s.backup.unlink(missing_ok=True)


def _commit(engine: Engine, staged: list[_Staged], root: Path, collection: str,
            ingest: bool) -> IngestPublic:
    """Install ``staged`` files and index them (under the write lock)."""
    try:
        _install(staged, engine, root, check=True)
        moved = [s for s in staged if s.moved]
        report = IngestReport()
        if ingest and moved:
            report = engine.ingest_files([(s.dest, root) for s in moved], collection=collection)
            failed = {f.path for f in report.files if f.status == "failed"}
            back = _restore(moved, failed)
            if back:  # a version that parsed but could not be indexed: the old one again
                engine.ingest_files([(s.dest, root) for s in back], collection=collection)
                report.files = [_with_restored(f, {s.rel for s in back}) for f in report.files]
    except BaseException:
        _restore(staged)
        raise
    files = [FilePublic(path=f.path, status=f.status, chunks=f.chunks, reason=f.reason)
             for f in report.files]
    files += [FilePublic(path=s.rel, status="failed", chunks=0, reason=s.kept)
              for s in staged if s.kept]
    return IngestPublic(stored=[s.rel for s in staged if s.moved], chunks=report.chunks,
                        seconds=report.seconds, files=files)


def _with_restored(result: FileResult, restored: set[str]) -> FileResult:
    """``result`` with "the previous version is kept" added when its file was restored."""
    if result.path not in restored:
        return result
    return FileResult(result.path, result.status, result.chunks,
                      f"{result.reason}; the previous version was put back and re-indexed")


@router.delete("/documents/{document_id}", dependencies=[AdminDep],
               responses={404: {"description": "unknown document"}})
def delete_document(document_id: Annotated[str, PathParam(max_length=64)],
                    state: StateDep) -> Deleted:
    """Remove a document from the index; its file too when it is inside its collection's
    folder, at any depth (an upload's relative path, case C09), with the folders that leaves
    empty; a file elsewhere is never touched."""
    doc = state.engine.store.document(document_id)
    if doc is None:
        raise NotFoundError(f"no document with id {document_id!r}")
    with state.write_lock:
        state.engine.store.delete_document(document_id)
    source = Path(doc.source_path).resolve()
    removed = False
    folder = state.settings.collection_folder(doc.collection).resolve()
    if source.is_relative_to(folder) and source != folder and source.is_file():
        source.unlink()
        removed = True
        for parent in source.parents:  # the upload's folders, now empty, up to the collection's
            if parent == folder or not parent.is_relative_to(folder):
                break
            try:
                parent.rmdir()
            except OSError:  # not empty (or in use): kept
                break
    return Deleted(deleted=document_id, file_removed=removed)


@router.post("/reindex", dependencies=[AdminDep])
async def reindex(state: StateDep, settings: SettingsDep) -> IngestPublic:
    """Re-embed every document with the configured embedding model."""

    def run() -> IngestPublic:
        with state.write_lock:
            report = state.engine.reindex()
        return IngestPublic(stored=[], chunks=report.chunks, seconds=report.seconds,
                            files=[FilePublic(path=f.path, status=f.status, chunks=f.chunks,
                                              reason=f.reason) for f in report.files])

    return await run_in_threadpool(run)
