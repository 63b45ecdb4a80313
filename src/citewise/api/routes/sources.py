"""``GET /api/sources/{chunk_id}``: a cited chunk with its whole original text.

A chunk's ``char_start``/``char_end`` are offsets in the document's text, and its
``source_text`` is the surrounding paragraph(s), which start at an offset the index does not
keep. :func:`cited_span` finds the cited part inside ``source_text`` so a viewer can
highlight it: where the chunk's first line occurs, for ``char_end - char_start`` characters.
A citation narrowed to the sentence(s) that support an answer carries that narrower span (in
the same document offsets); :func:`focus_span` places it in ``source_text`` too, so the viewer
can mark the sentence inside the passage.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from citewise.api.deps import EngineDep, ReaderDep
from citewise.api.schemas import SourceDetail
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
    )
