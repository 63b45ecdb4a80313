"""A PDF page for the source viewer: the page as a PNG image, and the boxes of a cited
sentence on it, so the viewer can show the page itself with the sentence highlighted.

:func:`render_png` draws page ``n`` (1-based) of the file with pypdfium2. :func:`text_boxes`
finds a text on the page: the page's characters and the text are compared with their spaces
collapsed and letter case folded (a sentence breaks over lines differently in the PDF than in
the index), trying the whole text, then ever shorter beginnings of it (down to 5 words), and
gives the rectangles pdfium reports for the matched characters, as fractions of the page
(origin top left), one per line of text.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

from citewise.errors import DocumentError
from citewise.ingest.parsers.pdf import PDFIUM_LOCK

#: Rendering scale (1.0 = 72 dpi); 2 keeps small print readable on high-density screens.
SCALE = 2.0
MIN_WORDS = 5


@dataclass(frozen=True)
class PageBoxes:
    page: int
    pages: int
    width: float  # points
    height: float
    boxes: list[tuple[float, float, float, float]]  # (left, top, right, bottom), 0..1
    matched: str  # the part of the text found ("" when none)


def _open(path: str | Path, page: int):  # type: ignore[no-untyped-def]
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(str(path))
    except (pdfium.PdfiumError, OSError) as err:
        raise DocumentError(str(path), f"cannot open the PDF: {err}") from None
    if not 1 <= page <= len(pdf):
        pdf.close()
        raise DocumentError(str(path), f"no page {page} (the file has {len(pdf)})")
    return pdf


def render_png(path: str | Path, page: int, scale: float = SCALE) -> bytes:
    """Page ``page`` (1-based) of the PDF at ``path`` as PNG bytes. Raises DocumentError.
    Thread-safe: pdfium is used under :data:`~citewise.ingest.parsers.pdf.PDFIUM_LOCK`."""
    with PDFIUM_LOCK:
        pdf = _open(path, page)
        try:
            image = pdf[page - 1].render(scale=scale).to_pil()
        finally:
            pdf.close()
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def _collapsed(text: str) -> tuple[str, list[int]]:
    """``text`` with runs of white space as one space, lower case, and the index in
    ``text`` of each kept character."""
    out: list[str] = []
    index: list[int] = []
    for i, ch in enumerate(text):
        if ch.isspace():
            if out and out[-1] != " ":
                out.append(" ")
                index.append(i)
            continue
        out.append(ch.lower())
        index.append(i)
    return "".join(out), index


def text_boxes(path: str | Path, page: int, text: str) -> PageBoxes:
    """Where ``text`` is on page ``page`` of the PDF (see the module docstring); no boxes
    when it is not found. Raises DocumentError for a file or page that cannot be opened.
    Thread-safe: pdfium is used under :data:`~citewise.ingest.parsers.pdf.PDFIUM_LOCK`."""
    with PDFIUM_LOCK:
        return _text_boxes(path, page, text)


def _text_boxes(path: str | Path, page: int, text: str) -> PageBoxes:
    pdf = _open(path, page)
    try:
        pg = pdf[page - 1]
        width, height = pg.get_size()
        textpage = pg.get_textpage()
        page_text = textpage.get_text_range()
        hay, index = _collapsed(page_text)
        words = " ".join(text.split()).lower().split(" ")
        boxes: list[tuple[float, float, float, float]] = []
        matched = ""
        for n in range(len(words), min(MIN_WORDS, len(words)) - 1, -1):
            needle = " ".join(words[:n]).strip()
            at = hay.find(needle) if needle else -1
            if at < 0:
                continue
            first, last = index[at], index[at + len(needle) - 1]
            for k in range(textpage.count_rects(first, last - first + 1)):
                left, bottom, right, top = textpage.get_rect(k)
                boxes.append((left / width, 1 - top / height, right / width,
                              1 - bottom / height))
            matched = page_text[first:last + 1]
            break
        return PageBoxes(page, len(pdf), width, height, boxes, matched)
    finally:
        pdf.close()



__all__ = ["SCALE", "PageBoxes", "render_png", "text_boxes"]
