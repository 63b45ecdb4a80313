"""Contract scan over HTTP: upload a file, get its flags (see docs/scan.md).

The file is stored in the default collection's folder like any upload (same path rules,
collisions refused with 409, a new version that does not parse never replaces a good one:
see :mod:`citewise.api.routes.documents`), ingested, and checked against the playbook where
it is indexed; the response is the JSON of ``citewise scan``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, File, Form, Path, UploadFile
from fastapi.concurrency import run_in_threadpool

from citewise.api.deps import AdminDep, EngineDep, ReaderDep, StateDep
from citewise.api.routes.documents import _commit, _receive, _Staged, check_folder, safe_path
from citewise.errors import DocumentError, NotFoundError
from citewise.scan.detect import MIN_CUES, contract_cues

router = APIRouter(prefix="/api", tags=["scan"])


@router.post("/scan", dependencies=[AdminDep],
             responses={400: {"description": "bad file name or playbook"},
                        409: {"description": "the name collides with a stored file"},
                        413: {"description": "larger than max_upload_mb"},
                        422: {"description": "the file cannot be indexed"}})
async def scan(
    state: StateDep,
    file: Annotated[UploadFile, File(description="The contract (PDF, DOCX, HTML, text...).")],
    playbook: Annotated[str, Form(max_length=100, pattern=r"^[A-Za-z0-9_-]+$",
                                  description="A bundled playbook name.")] = "default",
) -> dict[str, Any]:
    """Store, ingest and scan one contract: ``{"document", "playbook", "flags": [{"rule",
    "severity", "verdict", "explanation", "citation"}], "timings_ms"}``, flags sorted by
    severity (high first).

    Errors: 400 for a bad file name, type or playbook, 409 when the name collides with a
    stored file, 413 past ``max_upload_mb``, 422 naming the file and the reason when it
    cannot be indexed (a stored version of the same name is then kept).
    """
    settings = state.settings
    rel = safe_path(file.filename, settings)
    folder = settings.collection_dir
    folder.mkdir(parents=True, exist_ok=True)
    root = folder.resolve()
    limit = int(settings.max_upload_mb * 2**20)
    staged = _Staged(file.filename, rel, _receive(file, folder, rel, settings.max_upload_mb,
                                                  [limit + 1]), (root / rel).resolve())

    def run() -> dict[str, Any]:
        try:
            with state.write_lock:
                check_folder(root, staged.raw, rel)
                result = _commit(state.engine, [staged], root, settings.collection, True)
                failed = next((f for f in result.files if f.status == "failed"), None)
                if failed is not None:
                    raise DocumentError(failed.path, failed.reason)
                return state.engine.scan(staged.dest, playbook).to_json()
        finally:
            staged.tmp.unlink(missing_ok=True)
            if staged.backup is not None:
                staged.backup.unlink(missing_ok=True)

    return await run_in_threadpool(run)


@router.get("/scan/fit/{document_id}", responses={404: {"description": "unknown document"}})
def scan_fit(document_id: Annotated[str, Path(max_length=64)], engine: EngineDep,
             reader: ReaderDep) -> dict[str, Any]:
    """Whether an indexed document looks like a contract, so a playbook check makes sense:
    ``{"document_id", "contract", "cues"}``, ``cues`` the kinds of contract wording found
    (:mod:`citewise.scan.detect`; a contract shows at least four). The chat page offers the
    check only when ``contract`` is true."""
    doc = engine.store.document(document_id)
    if doc is None or not reader.may_read(doc.collection):
        raise NotFoundError(f"no document with id {document_id!r}")
    cues = contract_cues(c.text for c in engine.store.chunks_of(document_id))
    return {"document_id": document_id, "contract": len(cues) >= MIN_CUES, "cues": cues}
