"""Contract scan over HTTP: upload a file, get its flags (see docs/scan.md).

The file is stored in the collection folder like any upload (same name rules, case C33),
ingested, and checked against the playbook; the response is the JSON of ``citewise scan``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, File, Form, UploadFile
from fastapi.concurrency import run_in_threadpool

from citewise.api.deps import AdminDep, StateDep
from citewise.api.routes.documents import _store, safe_name

router = APIRouter(prefix="/api", tags=["scan"])


@router.post("/scan", dependencies=[AdminDep],
             responses={400: {"description": "bad file name or playbook"},
                        413: {"description": "larger than max_upload_mb"}})
async def scan(
    state: StateDep,
    file: Annotated[UploadFile, File(description="The contract (PDF, DOCX, HTML, text...).")],
    playbook: Annotated[str, Form(max_length=100, pattern=r"^[A-Za-z0-9_-]+$",
                                  description="A bundled playbook name.")] = "default",
) -> dict[str, Any]:
    """Store, ingest and scan one contract: ``{"document", "playbook", "flags": [{"rule",
    "severity", "verdict", "explanation", "citation"}], "timings_ms"}``, flags sorted by
    severity (high first)."""
    settings = state.settings
    name = safe_name(file.filename, settings)
    folder = settings.collection_dir
    folder.mkdir(parents=True, exist_ok=True)
    path = _store(file, folder, name, settings.max_upload_mb)

    def run() -> dict[str, Any]:
        with state.write_lock:
            return state.engine.scan(path, playbook).to_json()

    return await run_in_threadpool(run)
