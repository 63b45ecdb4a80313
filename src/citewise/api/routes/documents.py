"""The collection: list, upload (then ingest), delete documents; re-index everything.

Uploads are stored in the collection folder (``$CITEWISE_HOME/collections/<collection>``)
under a sanitised name (:func:`safe_name`): only the last path component of the client's
name is kept, control and reserved characters and reserved device names are replaced
(pathvalidate), and the result must resolve to a file directly inside the folder, so no name
can write outside it (case C33). An upload with the name of a stored file replaces it and
the next ingest updates the document.
"""

from __future__ import annotations

import os
import secrets
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
from citewise.errors import NotFoundError, UploadError, UploadTooLargeError

router = APIRouter(prefix="/api", tags=["documents"])

MAX_NAME = 120
_COPY_BLOCK = 1 << 20


def safe_name(filename: str | None, settings: Settings) -> str:
    """The name an upload is stored under. Raises UploadError for a name with nothing usable
    left or a suffix outside ``upload_types``."""
    raw = (filename or "").replace("\\", "/").rsplit("/", 1)[-1].replace("\x00", "")
    stem, suffix = os.path.splitext(raw)
    suffix = suffix.lower()
    if suffix not in {t.lower() for t in settings.upload_types}:
        raise UploadError(f"{raw[:100]!r}: file type {suffix or '(none)'} is not accepted; "
                          f"accepted: {', '.join(settings.upload_types)}")
    name = sanitize_filename(stem[: MAX_NAME - len(suffix)] + suffix, platform="universal",
                             replacement_text="_").strip(" ")
    if not name.removesuffix(suffix).strip(" .") or name.startswith("."):
        raise UploadError(f"{raw[:100]!r}: no usable file name; rename the file")
    return name


def _store(upload: UploadFile, folder: Path, name: str, limit_mb: float) -> Path:
    """Copy ``upload`` to ``folder/name`` through a temporary file; UploadTooLargeError past
    ``limit_mb`` MiB (nothing is left behind)."""
    limit = int(limit_mb * 2**20)
    dest = (folder / name).resolve()
    if dest.parent != folder.resolve():  # defence in depth: safe_name already ensures it
        raise UploadError(f"{name!r}: not a plain file name")
    tmp = folder / f".upload-{secrets.token_hex(8)}.part"
    size = 0
    try:
        with tmp.open("wb") as out:
            while block := upload.file.read(_COPY_BLOCK):
                size += len(block)
                if size > limit:
                    raise UploadTooLargeError(
                        f"{name}: larger than the upload limit of {limit_mb:g} MiB "
                        "(CITEWISE_MAX_UPLOAD_MB)")
                out.write(block)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


@router.get("/documents")
def list_documents(engine: EngineDep, reader: ReaderDep) -> DocumentsPublic:
    """Every document the caller may read, including files that failed (``status``
    "failed")."""
    docs = [d for d in engine.store.documents() if reader.may_read(d.collection)]
    return DocumentsPublic(count=len(docs), data=[
        DocumentPublic(id=d.id, path=d.path, title=d.title, format=d.format,
                       chunks=d.chunk_count, pages=d.pages, status=d.status, error=d.error,
                       indexed_at=d.indexed_at, warnings=list(d.warnings),
                       collection=d.collection) for d in docs])


@router.post("/documents", status_code=201, dependencies=[AdminDep],
             responses={400: {"description": "bad file name"},
                        413: {"description": "larger than max_upload_mb"}})
def upload_documents(
    request: Request,
    state: StateDep,
    files: Annotated[list[UploadFile], File(description="One or more files.")],
    ingest: Annotated[bool, Query(description="Ingest after storing.")] = True,
    collection: Annotated[str | None, Query(
        pattern=COLLECTION_PATTERN, description="The collection the files go to (default: "
        "the collection setting); read access is granted per collection.")] = None,
) -> IngestPublic:
    """Store files in the collection's folder and ingest them into that collection. The
    limit ``max_upload_mb`` applies to each file and to the whole request."""
    settings = state.settings
    collection = collection or settings.collection
    limit = int(settings.max_upload_mb * 2**20)
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit + 2**20:
        raise UploadTooLargeError(f"the request is larger than the upload limit of "
                                  f"{settings.max_upload_mb:g} MiB (CITEWISE_MAX_UPLOAD_MB)")
    names = [safe_name(f.filename, settings) for f in files]  # refuse before storing any
    folder = settings.collection_folder(collection)
    folder.mkdir(parents=True, exist_ok=True)
    stored = [_store(f, folder, name, settings.max_upload_mb) for f, name in zip(files, names)]
    if not ingest:
        return IngestPublic(stored=[p.name for p in stored], files=[], chunks=0, seconds=0.0)
    with state.write_lock:
        report = state.engine.ingest(stored, collection=collection)
    return IngestPublic(stored=[p.name for p in stored], chunks=report.chunks,
                        seconds=report.seconds,
                        files=[FilePublic(path=f.path, status=f.status, chunks=f.chunks,
                                          reason=f.reason) for f in report.files])


@router.delete("/documents/{document_id}", dependencies=[AdminDep],
               responses={404: {"description": "unknown document"}})
def delete_document(document_id: Annotated[str, PathParam(max_length=64)],
                    state: StateDep) -> Deleted:
    """Remove a document from the index; its file too when it is in its collection's folder
    (a file elsewhere is never touched)."""
    doc = state.engine.store.document(document_id)
    if doc is None:
        raise NotFoundError(f"no document with id {document_id!r}")
    with state.write_lock:
        state.engine.store.delete_document(document_id)
    source = Path(doc.source_path).resolve()
    removed = False
    folder = state.settings.collection_folder(doc.collection).resolve()
    if source.parent == folder and source.is_file():
        source.unlink()
        removed = True
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
