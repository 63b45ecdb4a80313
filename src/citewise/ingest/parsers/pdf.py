"""PDF via pypdfium2: per-page text in visual reading order, with page numbers.

Each page's characters are read with their boxes and arranged by
:mod:`citewise.ingest.parsers._pdf_layout` (columns read one after the other, tables as TABLE
blocks with a header row, headings by font size). Blocks carry ``page`` (1-based).

Dropped, because a reader does not see it (case C27): text drawn in invisible render mode,
fully transparent text, text smaller than :data:`MIN_FONT_SIZE` points, and white text that
does not sit on a filled shape or image. A warning names the pages where text was dropped.

A table that runs over a page break (case N11) is one TABLE block: the next page's first
table with as many columns continues it, a repeated header row is dropped, and a row broken
by the break (a cell left empty at the bottom of the page) is joined back into one row; the
block records where each page begins (``Block.page_starts``).

Pages without text (case C01): a page with images (or hundreds of vector paths: text drawn as
outlines) but fewer than :data:`MIN_LETTERS` letters (a scan, perhaps with a stamp or
watermark) counts as having no text layer. If no page has
text, NoTextLayerError (OCR needed) is raised, or EmptyDocumentError when the pages are blank;
otherwise a warning names those pages: "page N: no extractable text (scanned image?), OCR
needed" (or "pages 2, 5-9: ...").

Errors: a password needed to open the file -> EncryptedDocumentError (owner-password-only
files open normally, case C02); a damaged or truncated file -> CorruptDocumentError; a ``.pdf``
file whose content is not PDF but text is parsed as text with a warning (case C06).

PDFium is not thread-safe: one lock serialises every call into it in this process.
"""

from __future__ import annotations

import ctypes
import re
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from citewise.errors import (
    CorruptDocumentError,
    EmptyDocumentError,
    EncryptedDocumentError,
    NoTextLayerError,
)
from citewise.ingest.parsers._pdf_layout import Char, Item, layout
from citewise.ingest.parsers.base import TextBuilder, register
from citewise.ingest.parsers.text import clean_text, collapse_blobs, parse_mislabelled
from citewise.types import BlockKind, ParsedDocument

__all__ = ["MIN_FONT_SIZE", "MIN_LETTERS", "parse"]

MIN_LETTERS = 20
MIN_FONT_SIZE = 3.0
_LOCK = threading.Lock()
_PLACEHOLDER_TITLES = frozenset({"untitled", "untitled document", "title", "document", "no title",
                                 "(anonymous)", "anonymous", "(unspecified)", "unspecified"})


def _sniff(data: bytes) -> bool:
    return b"%PDF-" in data[:1024]


@register("pdf", suffixes=(".pdf",), sniff=_sniff)
def parse(path: Path, data: bytes) -> ParsedDocument:
    """Parse a PDF into per-page heading, paragraph and table blocks (see module docstring).

    Raises EmptyDocumentError, NoTextLayerError, EncryptedDocumentError, CorruptDocumentError.
    """
    if not data:
        raise EmptyDocumentError(path, "empty file (0 bytes)")
    if not _sniff(data):
        return parse_mislabelled(path, data, "PDF")
    try:
        with _LOCK:
            return _parse_locked(Path(path), data)
    except CorruptDocumentError:
        if data.startswith(b"%PDF-"):
            raise
        return parse_mislabelled(path, data, "PDF")  # "%PDF-" merely near the top of a text


def _parse_locked(path: Path, data: bytes) -> ParsedDocument:
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if getattr(exc, "err_code", None) == pdfium.raw.FPDF_ERR_PASSWORD:
            raise EncryptedDocumentError(path) from exc
        raise CorruptDocumentError(path, f"corrupt or unsupported PDF ({exc})") from exc
    try:
        n_pages = len(pdf)
        if n_pages == 0:
            raise CorruptDocumentError(path, "corrupt or unsupported PDF: it has no pages")
        builder = TextBuilder()
        warnings: list[str] = []
        no_text: list[int] = []
        hidden_pages: list[int] = []
        section: list[tuple[int, str]] = []
        first_heading = ""
        held: list[_Entry] = []
        for index in range(n_pages):
            page_no = index + 1
            try:
                items, has_text, hidden = _read_page(pdf, index)
            except pdfium.PdfiumError as exc:
                warnings.append(f"page {page_no}: could not be read ({exc})")
                continue
            if hidden:
                hidden_pages.append(page_no)
            if not has_text:
                if has_text is None:
                    no_text.append(page_no)
                continue
            for item in items:
                if item.kind == "heading" and not first_heading:
                    first_heading = " ".join(clean_text(item.text).split())
            entries = [_Entry(item, page_no) for item in items]
            if held:
                entries = _continue(held, entries) or [*held, *entries]
            # a table at the end of the page waits: the next page may continue it (N11)
            last = max((i for i, e in enumerate(entries) if not _furniture(e.item)), default=-1)
            cut = last if last >= 0 and entries[last].item.kind == "table" else len(entries)
            for entry in entries[:cut]:
                _add_item(builder, entry, section)
            held = entries[cut:]
        for entry in held:
            _add_item(builder, entry, section)
        if not builder.blocks:
            if no_text:
                raise NoTextLayerError(path)
            raise EmptyDocumentError(path, "no text: every page of the PDF is blank")
        if no_text:
            warnings.append(f"{_pages(no_text)}: no extractable text (scanned image?), "
                            "OCR needed")
        if hidden_pages:
            warnings.append(f"{_pages(hidden_pages)}: hidden text (invisible, white or tiny) "
                            "was dropped")
        title = _metadata_title(pdf) or first_heading or path.stem
        labels = _page_labels(pdf, n_pages)
    finally:
        pdf.close()
    metadata = {"page_labels": labels} if labels else {}
    return builder.build("pdf", title=title, pages=n_pages, warnings=tuple(warnings),
                         metadata=metadata)


@dataclass
class _Entry:
    """A reading-order item of ``page``; ``continued`` marks where the text of later pages
    begins in a table continued across page breaks: ``(offset in item.text, page, text)``."""

    item: Item
    page: int
    continued: list[tuple[int, int, str]] = field(default_factory=list)


#: a running header or footer that is only a page number ("- 2 -", "Page 3 of 7", "iv")
_PAGE_NUMBER = re.compile(r"(?i)^[\s\-–—]*(?:page\s+)?(?:\d+|[ivxlcdm]+)"
                          r"(?:\s*(?:of|/)\s*\d+)?[\s\-–—]*$")


def _furniture(item: Item) -> bool:
    return item.kind == "paragraph" and bool(_PAGE_NUMBER.match(item.text.strip()))


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.split("|")]


def _continue(held: list[_Entry], entries: list[_Entry]) -> list[_Entry] | None:
    """``held`` (a table ending the previous page, then that page's footer) followed by this
    page's ``entries``, with the table joined to this page's first table when that one
    continues it (case N11); None when it does not.

    It continues the table when it is the page's first item (a page-number header aside)
    and has as many columns. A repeated header row is dropped; a last row with an empty cell
    (or a first row with an empty first cell: a wrapped label) is one row broken by the page
    break, and its cells are joined."""
    table = held[0]
    k = next((i for i, e in enumerate(entries) if not _furniture(e.item)), len(entries))
    if k == len(entries) or entries[k].item.kind != "table" or not table.item.text:
        return None
    nxt = entries[k]
    header = _cells(table.item.header or "")
    rows = [r for r in [nxt.item.header or "", *nxt.item.text.split("\n")] if r.strip()]
    if len(header) < 2 or not rows or any(len(_cells(r)) != len(header) for r in rows):
        return None
    if _cells(rows[0]) == header:  # the header repeated on the new page
        rows = rows[1:]
    body = table.item.text.split("\n")
    continued = list(table.continued)
    if rows:
        last, first = _cells(body[-1]), _cells(rows[0])
        if not all(last) or not first[0]:  # one row broken by the page break
            joined = [" ".join(x for x in pair if x) for pair in zip(last, first, strict=True)]
            column = next(i for i, c in enumerate(first) if c)
            body[-1] = " | ".join(joined)
            prefix = " | ".join(joined[:column])
            offset = len("\n".join(body[:-1])) + (1 if len(body) > 1 else 0)
            offset += len(prefix) + (3 if column else 0) + len(last[column]) + (
                1 if last[column] else 0)
            continued.append((offset, nxt.page, first[column]))
            rows = rows[1:]
        if rows:
            continued.append((len("\n".join(body)) + 1, nxt.page, rows[0]))
    text = "\n".join([*body, *rows])
    merged = _Entry(Item("table", text, header=table.item.header), table.page, continued)
    return [merged, *held[1:], *entries[:k], *entries[k + 1:]]


def _add_item(builder: TextBuilder, entry: _Entry, section: list[tuple[int, str]]) -> None:
    item, page = entry.item, entry.page
    text = collapse_blobs(clean_text(item.text))
    if item.kind == "heading":
        level = 1 if item.size >= 1.6 else 2
        while section and section[-1][0] >= level:
            section.pop()
        section.append((level, " ".join(text.split())))
        builder.add(BlockKind.HEADING, text, page=page, level=level,
                    section=tuple(t for _, t in section))
    elif item.kind == "table" and item.text:
        block = builder.add(BlockKind.TABLE, text, page=page,
                            header=clean_text(item.header or ""),
                            section=tuple(t for _, t in section))
        if block is not None and entry.continued:
            starts = []
            for offset, number, fragment in entry.continued:
                found = block.text.find(clean_text(fragment).strip(), max(0, offset - 40))
                if not starts or starts[-1][1] != number:
                    starts.append((block.start + (found if found >= 0 else offset), number))
            builder.blocks[-1] = replace(block, page_starts=tuple(starts))
    else:
        builder.add(BlockKind.PARAGRAPH, text or clean_text(item.header or ""), page=page,
                    section=tuple(t for _, t in section))


def _pages(numbers: list[int]) -> str:
    """"page 3" or "pages 2, 5-9" (ascending page numbers)."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    text = ", ".join(f"{a}-{b}" if b > a else str(a) for a, b in runs)
    return f"page {text}" if len(numbers) == 1 else f"pages {text}"


def _page_labels(pdf: Any, n_pages: int) -> list[str]:
    """The printed label of every page from the PDF's /PageLabels ("i", "ii", "1", ...), as a
    viewer shows them; ``[]`` when the file has none or they equal the physical numbers."""
    import pypdfium2 as pdfium

    try:
        labels = [clean_text(pdf.get_page_label(i)).strip() for i in range(n_pages)]
    except (pdfium.PdfiumError, ValueError, UnicodeError):
        return []
    if not any(labels) or all(label in ("", str(i + 1)) for i, label in enumerate(labels)):
        return []
    return labels


def _metadata_title(pdf: Any) -> str:
    import pypdfium2 as pdfium

    try:
        title = clean_text(pdf.get_metadata_value("Title") or "").strip()
    except (pdfium.PdfiumError, ValueError, UnicodeError):
        return ""  # a broken info dictionary is not worth failing the document for
    title = title.removeprefix("Microsoft Word - ").strip()
    return "" if title.lower() in _PLACEHOLDER_TITLES else title


# --- one page -----------------------------------------------------------------------------------


def _read_page(pdf: Any, index: int) -> tuple[list[Item], bool | None, bool]:
    """``(items, has_text, dropped_hidden)``; ``has_text`` is None for a page that looks
    scanned (images, almost no letters) and False for a blank page."""
    from pypdfium2 import raw

    page = pdf[index]
    textpage = page.get_textpage()
    try:
        objects = _page_objects(page)
        lines, hidden = _page_lines(textpage, objects)
        letters = sum(c.text.isalpha() for line in lines for c in line)
        kinds = [obj.type for obj in page.get_objects(max_depth=3)]  # images inside forms too
        scanned = raw.FPDF_PAGEOBJ_IMAGE in kinds or kinds.count(raw.FPDF_PAGEOBJ_PATH) > 200
        if letters < MIN_LETTERS and scanned:
            return [], None, hidden  # a scan (or text drawn as outlines), maybe with a stamp
        if not any(not c.text.isspace() for line in lines for c in line):
            return [], False, hidden
        return layout(lines), True, hidden
    finally:
        textpage.close()
        page.close()


def _page_objects(page: Any) -> list[tuple[int, float, float, float, float, bool]]:
    """``(type, left, bottom, right, top, is_light)`` of the page's top-level objects."""
    import pypdfium2 as pdfium
    from pypdfium2 import raw

    result = []
    r, g, b, a = (ctypes.c_uint() for _ in range(4))
    for obj in page.get_objects(max_depth=1):
        try:
            left, bottom, right, top = obj.get_bounds()
        except pdfium.PdfiumError:
            continue  # an object without bounds cannot be a background
        light = True
        if obj.type == raw.FPDF_PAGEOBJ_PATH:
            fill, stroke = ctypes.c_int(), ctypes.c_int()
            raw.FPDFPath_GetDrawMode(obj.raw, fill, stroke)
            if fill.value and raw.FPDFPageObj_GetFillColor(obj.raw, r, g, b, a):
                light = min(r.value, g.value, b.value) >= 235 or a.value == 0
        elif obj.type in (raw.FPDF_PAGEOBJ_IMAGE, raw.FPDF_PAGEOBJ_SHADING):
            light = False
        result.append((obj.type, left, bottom, right, top, light))
    return result


def _page_lines(textpage: Any, objects: list[tuple[Any, ...]]) -> tuple[list[list[Char]], bool]:
    """pdfium's lines of visible characters (stream order) and whether any were hidden."""
    from pypdfium2 import raw

    backgrounds = [o[1:5] for o in objects if not o[5]]
    hidden_cache: dict[int, bool] = {}
    lines: list[list[Char]] = [[]]
    dropped = False
    rect = raw.FS_RECTF()
    tp = textpage.raw
    pending_high = 0
    for i in range(textpage.count_chars()):
        cp = raw.FPDFText_GetUnicode(tp, i)
        if cp in (10, 13):
            if lines[-1]:
                lines.append([])
            continue
        if 0xD800 <= cp <= 0xDBFF:
            pending_high = cp
            continue
        if 0xDC00 <= cp <= 0xDFFF and pending_high:
            cp = 0x10000 + ((pending_high - 0xD800) << 10) + (cp - 0xDC00)
        elif 0xD800 <= cp <= 0xDFFF or cp == 0 or cp == 0xFEFF:
            pending_high = 0
            continue
        pending_high = 0
        obj = raw.FPDFText_GetTextObject(tp, i)
        key = ctypes.cast(obj, ctypes.c_void_p).value or 0
        raw.FPDFText_GetLooseCharBox(tp, i, rect)
        if key:
            hidden = hidden_cache.get(key)
            if hidden is None:
                hidden = hidden_cache[key] = _object_hidden(obj)
            if hidden:
                dropped = True
                continue
            if hidden_cache.get(-key) is None:
                hidden_cache[-key] = _object_white(obj)
            if hidden_cache[-key] and not _on_background(rect, backgrounds):
                dropped = True
                continue
        ch = chr(cp)
        if cp < 32 and cp not in (2, 9):
            continue
        lines[-1].append(Char(ch, rect.left, rect.bottom, rect.right, rect.top))
    return [line for line in lines if line], dropped


def _object_hidden(obj: Any) -> bool:
    """Invisible render mode, fully transparent, or smaller than MIN_FONT_SIZE points."""
    from pypdfium2 import raw

    mode = raw.FPDFTextObj_GetTextRenderMode(obj)
    if mode in (raw.FPDF_TEXTRENDERMODE_INVISIBLE, raw.FPDF_TEXTRENDERMODE_CLIP):
        return True
    size = ctypes.c_float()
    if raw.FPDFTextObj_GetFontSize(obj, size):
        matrix = raw.FS_MATRIX()
        scale = 1.0
        if raw.FPDFPageObj_GetMatrix(obj, matrix):
            scale = abs(matrix.a * matrix.d - matrix.b * matrix.c) ** 0.5
        if 0 < size.value * scale < MIN_FONT_SIZE:
            return True
    r, g, b, a = (ctypes.c_uint() for _ in range(4))
    return bool(raw.FPDFPageObj_GetFillColor(obj, r, g, b, a)) and a.value == 0


def _object_white(obj: Any) -> bool:
    from pypdfium2 import raw

    r, g, b, a = (ctypes.c_uint() for _ in range(4))
    if not raw.FPDFPageObj_GetFillColor(obj, r, g, b, a):
        return False
    return min(r.value, g.value, b.value) >= 245


def _on_background(rect: Any, backgrounds: list[tuple[float, ...]]) -> bool:
    x = (rect.left + rect.right) / 2
    y = (rect.bottom + rect.top) / 2
    return any(left <= x <= right and bottom <= y <= top
               for left, bottom, right, top in backgrounds)
