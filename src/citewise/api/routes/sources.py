"""``GET /api/sources/{chunk_id}``: a cited chunk with its whole original text."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from citewise.api.deps import EngineDep
from citewise.api.schemas import SourceDetail
from citewise.errors import NotFoundError

router = APIRouter(prefix="/api/sources", tags=["sources"])


@router.get("/{chunk_id}", responses={404: {"description": "unknown chunk"}})
def get_source(chunk_id: Annotated[str, Path(max_length=128)], engine: EngineDep) -> SourceDetail:
    """The chunk, its ``source_text`` (the paragraph(s) it came from), its document and where
    it is (page, lines, character span)."""
    found = engine.store.get_chunks([chunk_id]).get(chunk_id)
    if found is None:
        raise NotFoundError(f"no source chunk with id {chunk_id!r}")
    chunk, doc = found
    return SourceDetail(
        chunk_id=chunk.id, document_id=doc.id, path=doc.path, title=doc.title, text=chunk.text,
        source_text=chunk.source_text, char_start=chunk.char_start, char_end=chunk.char_end,
        page=chunk.page, page_end=chunk.page_end, line_start=chunk.line_start,
        line_end=chunk.line_end, section=list(chunk.section), symbol=chunk.symbol,
    )
