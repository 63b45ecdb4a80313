"""``GET /api/sources/{chunk_id}``: a cited chunk with its whole original text.

A chunk's ``char_start``/``char_end`` are offsets in the document's text, and its
``source_text`` is the surrounding paragraph(s), which start at an offset the index does not
keep. :func:`cited_span` finds the cited part inside ``source_text`` so a viewer can
highlight it: where the chunk's first line occurs, for ``char_end - char_start`` characters.
A citation narrowed to the sentence(s) that support an answer carries that narrower span (in
the same document offsets); :func:`focus_span` places it in ``source_text`` too, so the viewer
can mark the sentence inside the passage. For a PDF the viewer can also show the cited page
itself: ``/page/{n}.png`` renders it and ``/page/{n}`` gives the boxes of the cited part (or
the asked span) on it (:mod:`citewise.api.pdf_pages`).
"""

from __future__ import annotations

from pathlib import Path as FilePath
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from citewise.api.auth import Reader
from citewise.api.deps import EngineDep, ReaderDep
from citewise.api.pdf_pages import render_png as _render_png
from citewise.api.pdf_pages import text_boxes
from citewise.api.schemas import SourceDetail
from citewise.engine import Engine
from citewise.errors import NotFoundError

router = APIRouter(prefix="/api/sources", tags=["sources"])


def cited_span(source_text: str, text: str, length: int) -> tuple[int, int] | None:
    """``(start, end)`` of the cited part in ``source_text`` (0 <= start < end <=
    len(source_text)): it starts where the first non-blank line of the chunk's ``text``
    occurs (the first occurrence; a line shorter than 3 characters is not trusted) and is
    ``length`` characters long, cut at the end of ``source_text``. None when the line is
    not found, so the viewer shows the text without a highlight."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if len(first) < 3 or length <= 0:
        return None
    start = source_text.find(first)
    if start < 0:
        return None
    return start, min(len(source_text), start + max(length, len(first)))


def focus_span(span: tuple[int, int] | None, chunk_start: int, start: int | None,
               end: int | None) -> tuple[int, int] | None:
    """Where the document span ``[start, end)`` lies in ``source_text``, given the cited
    part's place there (``span``, from :func:`cited_span`, which begins at the chunk's
    ``chunk_start`` in the document). None without a span, an empty or reversed request, or
    one that is not wholly inside the cited part (the offsets would not be the chunk's)."""
    if span is None or start is None or end is None or end <= start:
        return None
    a, b = span[0] + start - chunk_start, span[0] + end - chunk_start
    if a < span[0] or b > span[1]:
        return None
    return a, b


@router.get("/{chunk_id}", responses={404: {"description": "unknown chunk"}})
def get_source(chunk_id: Annotated[str, Path(max_length=128)], engine: EngineDep,
               reader: ReaderDep,
               start: Annotated[int | None, Query(ge=0, le=2**62, description=(
                   "A citation's char_start: mark that part (the supporting sentence).")
               )] = None,
               end: Annotated[int | None, Query(ge=0, le=2**62, description=(
                   "A citation's char_end."))] = None) -> SourceDetail:
    """The chunk, its ``source_text`` (the paragraph(s) it came from), its document, where
    it is (page, lines, character span) and the cited part's offsets in ``source_text``
    (``span_start``/``span_end``, null when it cannot be located). A chunk of a collection
    the caller's key may not read is "unknown" (404), like one that does not exist."""
    found = engine.store.get_chunks([chunk_id]).get(chunk_id)
    if found is None or not reader.may_read(found[1].collection):
        raise NotFoundError(f"no source chunk with id {chunk_id!r}")
    chunk, doc = found
    span = cited_span(chunk.source_text, chunk.text, chunk.char_end - chunk.char_start)
    focus = focus_span(span, chunk.char_start, start, end)
    return SourceDetail(
        chunk_id=chunk.id, document_id=doc.id, path=doc.path, title=doc.title, text=chunk.text,
        source_text=chunk.source_text, char_start=chunk.char_start, char_end=chunk.char_end,
        page=chunk.page, page_end=chunk.page_end, line_start=chunk.line_start,
        line_end=chunk.line_end, section=list(chunk.section), symbol=chunk.symbol,
        span_start=span[0] if span else None, span_end=span[1] if span else None,
        focus_start=focus[0] if focus else None, focus_end=focus[1] if focus else None,
        format=doc.format,
    )


ChunkId = Annotated[str, Path(max_length=128)]
PageNo = Annotated[int, Path(ge=1, le=100_000, description="1-based page of the document.")]
_PAGE_ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"description": "unknown chunk, not a PDF, or a page the chunk is not on"},
    422: {"description": "the PDF cannot be opened any more"}}


def _pdf_page(chunk_id: str, page: int, engine: Engine, reader: Reader) -> tuple[Any, Any]:
    found = engine.store.get_chunks([chunk_id]).get(chunk_id)
    if found is None or not reader.may_read(found[1].collection):
        raise NotFoundError(f"no source chunk with id {chunk_id!r}")
    chunk, doc = found
    first = chunk.page or 0
    if doc.format != "pdf" or not first <= page <= (chunk.page_end or first):
        raise NotFoundError(f"chunk {chunk_id!r} is not on page {page} of a PDF")
    if not FilePath(doc.source_path).is_file():
        raise NotFoundError(f"{doc.path} is no longer on disk")
    return chunk, doc


@router.get("/{chunk_id}/page/{page}.png", response_class=Response, responses={
    **_PAGE_ERRORS, 200: {"content": {"image/png": {}}}})
async def page_image(chunk_id: ChunkId, page: PageNo, engine: EngineDep,
                     reader: ReaderDep) -> Response:
    """Page ``page`` of the cited PDF as a PNG image (a page the chunk is on)."""
    _, doc = _pdf_page(chunk_id, page, engine, reader)
    png = await run_in_threadpool(_render_png, doc.source_path, page)
    return Response(png, media_type="image/png", headers={"Cache-Control": "private, max-age=300"})


@router.get("/{chunk_id}/page/{page}", responses=_PAGE_ERRORS)
async def page_boxes(chunk_id: ChunkId, page: PageNo, engine: EngineDep, reader: ReaderDep,
                     start: Annotated[int | None, Query(ge=0, le=2**62)] = None,
                     end: Annotated[int | None, Query(ge=0, le=2**62)] = None,
                     ) -> dict[str, Any]:
    """Where the cited part (with ``start``/``end``, a citation's span: its sentence) is on
    page ``page``: ``{"page", "pages", "width", "height", "boxes": [[left, top, right,
    bottom]], "matched"}``, boxes as fractions of the page from its top left; no boxes when
    the text is not found on that page."""
    chunk, doc = _pdf_page(chunk_id, page, engine, reader)
    span = cited_span(chunk.source_text, chunk.text, chunk.char_end - chunk.char_start)
    focus = focus_span(span, chunk.char_start, start, end)
    if focus is not None:
        text = chunk.source_text[focus[0]:focus[1]]
    elif span is not None:
        text = chunk.source_text[span[0]:span[1]]
    else:
        text = chunk.text
    found = await run_in_threadpool(text_boxes, doc.source_path, page, text)
    return {"page": found.page, "pages": found.pages, "width": found.width,
            "height": found.height, "boxes": [list(b) for b in found.boxes],
            "matched": found.matched}
