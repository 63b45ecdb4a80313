"""PowerPoint ``.pptx``: python-pptx opens the package; each slide is read in reading order.

Per slide, cited by its 1-based number as the page (a citation reads "deck.pptx, slide 3,
Quarterly results"):

- the title (the title placeholder's text) as a HEADING block, so it stays with the slide's
  text in one chunk;
- one PARAGRAPH block with the text of every other text frame (placeholders, text boxes,
  shapes), shapes ordered top to bottom then left to right, shapes inside groups read in the
  same order where the group stands (groups nest to any depth), one line per paragraph;
- one TABLE block per table (``header`` = the first row's cells joined " | ", one row a
  line), like the tables of every other format;
- one PARAGRAPH block of the speaker notes, with section ``(slide title, "Speaker notes")``.

The section of a slide's blocks is its title, else ``"Slide N"``. Hidden slides (``show="0"``: not shown in the presentation) are skipped with a
warning, like hidden text elsewhere (case C27). The document title is the core property
title, else the first slide's title, else the file stem; core properties become metadata.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from citewise.errors import CorruptDocumentError, EmptyDocumentError, UnsupportedFormatError
from citewise.ingest.parsers.base import TextBuilder, register
from citewise.ingest.parsers.docx import check_zip, core_properties
from citewise.ingest.parsers.text import clean_text, collapse_blobs, parse_mislabelled
from citewise.types import BlockKind, ParsedDocument

__all__ = ["NOTES", "parse"]

#: the section under the slide's title that its speaker notes are cited by
NOTES = "Speaker notes"


def _sniff(data: bytes) -> bool:
    return data.startswith(b"PK\x03\x04") and b"ppt/presentation.xml" in data[:65536]


@register("pptx", suffixes=(".pptx", ".pptm", ".ppsx"), sniff=_sniff)
def parse(path: Path, data: bytes) -> ParsedDocument:
    """Parse a presentation into per-slide text, table and notes blocks, ``page`` = slide
    number (see the module docstring).

    Raises EmptyDocumentError (0 bytes, or no text on any shown slide), CorruptDocumentError
    (not a valid package, zip bomb), UnsupportedFormatError (a package that is not a
    presentation).
    """
    import pptx

    if not data:
        raise EmptyDocumentError(path, "empty file (0 bytes)")
    if not data.startswith(b"PK"):
        return parse_mislabelled(path, data, "pptx")
    archive = check_zip(path, data)
    try:
        if "ppt/presentation.xml" not in archive.namelist():
            raise UnsupportedFormatError(
                path, "not a PowerPoint .pptx presentation (no ppt/presentation.xml)")
    finally:
        archive.close()
    try:
        presentation = pptx.Presentation(io.BytesIO(data))
    except Exception as exc:  # python-pptx raises KeyError, ValueError, XML errors on damage
        raise CorruptDocumentError(path, f"corrupt PowerPoint presentation: {exc}") from exc
    builder = TextBuilder()
    warnings: list[str] = []
    first_title = ""
    slides = 0
    try:
        for number, slide in enumerate(presentation.slides, start=1):
            slides = number
            if slide.element.get("show") in ("0", "false"):
                warnings.append(f"slide {number}: hidden, not indexed")
                continue
            title = _slide(builder, slide, number)
            first_title = first_title or title
        metadata = core_properties(presentation.core_properties, _PROPERTIES)
    except Exception as exc:  # python-pptx raises KeyError, ValueError, XML errors on damage
        where = f"slide {slides}" if slides else "presentation"
        raise CorruptDocumentError(path, f"corrupt {where}: {exc}") from exc
    if not builder.blocks:
        raise EmptyDocumentError(path, "no text on any shown slide of the presentation")
    title = metadata.pop("title", "") or first_title or Path(path).stem
    return builder.build("pptx", title=title, metadata=metadata, warnings=tuple(warnings),
                         pages=slides)


def _slide(builder: TextBuilder, slide: Any, number: int) -> str:
    """Add the blocks of one shown slide (page ``number``); returns its title ("" without)."""
    title = _title(slide)
    section = (title or f"Slide {number}",)
    lines: list[str] = []
    tables: list[tuple[str, str]] = []
    title_shape = slide.shapes.title
    skip = title_shape.shape_id if title and title_shape is not None else None
    for shape in _reading_order(slide.shapes):
        if shape.shape_id != skip:
            _read_shape(shape, lines, tables)
    if title:
        builder.add(BlockKind.HEADING, title, section=section, page=number, level=1)
    builder.add(BlockKind.PARAGRAPH, "\n".join(lines), section=section, page=number)
    for header, body in tables:
        if body:
            builder.add(BlockKind.TABLE, body, section=section, page=number, header=header)
        else:
            builder.add(BlockKind.PARAGRAPH, header, section=section, page=number)
    if slide.has_notes_slide:
        notes = slide.notes_slide.notes_text_frame
        if notes is not None:
            builder.add(BlockKind.PARAGRAPH, _frame_text(notes), section=(*section, NOTES),
                        page=number)
    return title


def _title(slide: Any) -> str:
    shape = slide.shapes.title
    if shape is None or not shape.has_text_frame:
        return ""
    return " ".join(_frame_text(shape.text_frame).split())


def _reading_order(shapes: Iterable[Any]) -> list[Any]:
    """Shapes top to bottom, then left to right (shapes without a position keep their place
    at the end, in document order)."""
    placed = [s for s in shapes if s.top is not None and s.left is not None]
    unplaced = [s for s in shapes if s.top is None or s.left is None]
    return sorted(placed, key=lambda s: (int(s.top), int(s.left))) + unplaced


def _read_shape(shape: Any, lines: list[str], tables: list[tuple[str, str]]) -> None:
    """Collect the text of ``shape`` (a group's members recursively, in reading order)."""
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    stack: list[Iterator[Any]] = [iter([shape])]
    while stack:
        current = next(stack[-1], None)
        if current is None:
            stack.pop()
            continue
        if current.shape_type == MSO_SHAPE_TYPE.GROUP:
            stack.append(iter(_reading_order(current.shapes)))
        elif getattr(current, "has_table", False) and current.has_table:
            tables.append(_table(current.table))
        elif getattr(current, "has_text_frame", False) and current.has_text_frame:
            text = _frame_text(current.text_frame)
            if text:
                lines.append(text)


def _frame_text(frame: Any) -> str:
    """A text frame's paragraphs, one a line (a line break inside one, ``\\v``, too)."""
    lines = []
    for paragraph in frame.paragraphs:
        for line in paragraph.text.split("\v"):
            line = " ".join(clean_text(line).split())
            if line:
                lines.append(line)
    return collapse_blobs("\n".join(lines))


def _table(table: Any) -> tuple[str, str]:
    """``(header, body)``: the first row's cells joined " | ", the other rows one a line."""
    rows = []
    for row in table.rows:
        cells = [" ".join(clean_text(cell.text).split()) for cell in row.cells]
        if any(cells):
            rows.append(" | ".join(cells))
    if not rows:
        return "", ""
    return rows[0], "\n".join(rows[1:])


#: core properties kept as document metadata, by metadata key
_PROPERTIES = {"title": "title", "author": "author", "subject": "subject",
               "keywords": "keywords", "category": "category", "language": "language",
               "created": "created", "modified": "modified",
               "last_modified_by": "last_modified_by"}
