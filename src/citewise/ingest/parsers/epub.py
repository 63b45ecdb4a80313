"""EPUB 2 and 3 e-books: EbookLib reads the package; each chapter is HTML.

The chapters are the spine's documents in reading order (the navigation document, the
EPUB 3 table of contents, is not a chapter). Each is read by the HTML parser
(:func:`citewise.ingest.parsers.html.html_blocks`, so hidden elements are dropped there too)
and its blocks get the chapter's title as the first part of their section path: the title
the table of contents gives the chapter, else its first heading, else its ``<title>``, else
"Chapter N". A citation reads "book.epub, Chapter Two > The ford". The title, creators,
language, publisher, date and subjects of the package metadata become the document's title
and metadata (``author`` is the creators joined by ", ").

Zip bombs are refused before anything is decompressed (as for Office files).
"""

from __future__ import annotations

import io
import posixpath
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from citewise.errors import (
    CorruptDocumentError,
    DocumentError,
    EmptyDocumentError,
    UnsupportedFormatError,
)
from citewise.ingest.parsers.base import TextBuilder, register
from citewise.ingest.parsers.docx import check_zip
from citewise.ingest.parsers.html import check_depth, decode_html, html_blocks
from citewise.ingest.parsers.text import clean_text, parse_mislabelled
from citewise.types import ParsedDocument

__all__ = ["parse"]

_MIMETYPE = b"mimetypeapplication/epub+zip"


def _sniff(data: bytes) -> bool:
    return data.startswith(b"PK\x03\x04") and _MIMETYPE in data[:128]


@register("epub", suffixes=(".epub",), sniff=_sniff)
def parse(path: Path, data: bytes) -> ParsedDocument:
    """Parse an e-book into the blocks of its chapters, each chapter a section (see the
    module docstring).

    Raises EmptyDocumentError (0 bytes, no text in any chapter), CorruptDocumentError (not a
    valid zip or package document, zip bomb), UnsupportedFormatError (a zip that is not an
    EPUB).
    """
    from ebooklib import ITEM_NAVIGATION, epub

    if not data:
        raise EmptyDocumentError(path, "empty file (0 bytes)")
    if not data.startswith(b"PK"):
        return parse_mislabelled(path, data, "epub")
    archive = check_zip(path, data)
    try:
        if "META-INF/container.xml" not in archive.namelist():
            raise UnsupportedFormatError(path, "not an EPUB e-book (no META-INF/container.xml)")
    finally:
        archive.close()
    try:
        book = epub.read_epub(io.BytesIO(data), options={"ignore_ncx": True})
    except Exception as exc:  # EbookLib raises EpubException, KeyError, XML errors on damage
        raise CorruptDocumentError(path, f"corrupt EPUB e-book: {exc}") from exc
    try:
        builder, warnings = _chapters(path, book, epub.EpubNav, ITEM_NAVIGATION)
        metadata = _metadata(book)
    except Exception as exc:  # a damaged package document or chapter
        raise CorruptDocumentError(path, f"corrupt EPUB e-book: {exc}") from exc
    if not builder.blocks:
        raise EmptyDocumentError(path, "no text in any chapter of the e-book")
    title = metadata.pop("title", "") or Path(path).stem
    return builder.build("epub", title=title, metadata=metadata, warnings=tuple(warnings))


def _chapters(path: Path, book: Any, nav_class: type, nav_type: int
              ) -> tuple[TextBuilder, list[str]]:
    """The blocks of the spine's chapters, each under its title, and the warnings."""
    toc = dict(_toc_titles(book.toc))
    builder = TextBuilder()
    warnings: list[str] = []
    number = 0
    for idref, _linear in book.spine:
        item = book.get_item_with_id(idref)
        if item is None:
            warnings.append(f"spine item {idref!r}: not in the manifest, skipped")
            continue
        if (isinstance(item, nav_class) or item.get_type() == nav_type
                or "nav" in (getattr(item, "properties", None) or ())):
            continue
        name = item.get_name()
        content = item.get_content()
        number += 1
        try:
            check_depth(f"{path}:{name}", content)
            blocks, html_title, first_h1 = html_blocks(decode_html(f"{path}:{name}", content))
        except DocumentError as exc:  # binary, undecodable, nested too deep
            warnings.append(f"chapter {name}: {exc.detail}, skipped")
            continue
        if not blocks:
            continue
        first_heading = next((b.section[0] for b in blocks if b.section), "")
        chapter = toc.get(name) or first_heading or first_h1 or html_title or f"Chapter {number}"
        builder.extend(blocks, section=(chapter,))
    return builder, warnings


def _toc_titles(toc: Iterable[Any], base: str = "") -> Iterator[tuple[str, str]]:
    """``(chapter file name, title)`` for every entry of the (nested) table of contents; the
    first entry naming a file wins (later ones point at fragments inside it)."""
    seen: set[str] = set()
    stack: list[Iterator[Any]] = [iter(toc)]
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
            continue
        if isinstance(entry, tuple | list):  # (Section, [children])
            head, *rest = entry
            stack.append(iter([head, *(c for group in rest for c in group)]))
            continue
        href = getattr(entry, "href", "") or ""
        title = " ".join(clean_text(getattr(entry, "title", "") or "").split())
        name = posixpath.normpath(posixpath.join(base, href.split("#", 1)[0])) if href else ""
        if name and title and name not in seen:
            seen.add(name)
            yield name, title


def _metadata(book: Any) -> dict[str, Any]:
    def values(field: str) -> list[str]:
        out = []
        for value, _attrs in book.get_metadata("DC", field):
            text = " ".join(clean_text(str(value or "")).split())
            if text:
                out.append(text)
        return out

    meta: dict[str, Any] = {}
    if titles := values("title"):
        meta["title"] = titles[0]
    if creators := values("creator"):
        meta["author"] = ", ".join(creators)
    for key, field in (("language", "language"), ("publisher", "publisher"),
                       ("created", "date")):
        if found := values(field):
            meta[key] = found[0]
    if subjects := values("subject"):
        meta["keywords"] = subjects
    return meta
