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

Form fields (case N07): the values typed into AcroForm fields live in annotations, not in
the page text; each page's filled fields are read as "Label: value" (written into the label's
line when the label stands left of the field, else one paragraph after the page's text),
check boxes and radio buttons with their state. An XFA form, or a form PDFium cannot open,
gives a warning.

Pages without text (case C01): a page with images (or hundreds of vector paths: text drawn as
outlines) but fewer than :data:`MIN_LETTERS` letters (a scan, perhaps with a stamp or
watermark) counts as having no text layer. With OCR on (``ParseOptions.ocr``, the setting
``CITEWISE_OCR``) such a page is rendered at ``ocr_dpi`` and read by the OCR engine
(:mod:`citewise.ingest.ocr`), and a warning names the pages read so. Pages drawn from the same
images only (a scan that repeats one image, blank separator sheets) are read once. If no page
has text, NoTextLayerError (OCR needed) is raised, or EmptyDocumentError when the pages are
blank; otherwise a warning names the pages without text: "page N: no extractable text
(scanned image?), OCR needed" (or "pages 2, 5-9: ...").

Long documents (case N09): pages are read one at a time and each is closed (and its bitmap
freed) before the next, so memory does not grow with the page count; ``max_pages`` is checked
before any page is read (TooLargeDocumentError), and ``page_progress(page, pages)`` is called
after each page.

Errors: a password needed to open the file -> EncryptedDocumentError (owner-password-only
files open normally, case C02); a damaged or truncated file -> CorruptDocumentError; a ``.pdf``
file whose content is not PDF but text is parsed as text with a warning (case C06).

PDFium is not thread-safe: one lock serialises every call into it in this process (it is let
go while the OCR engine reads a rendered page, so other documents parse meanwhile).
"""

from __future__ import annotations

import ctypes
import hashlib
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from citewise.errors import (
    CorruptDocumentError,
    EmptyDocumentError,
    EncryptedDocumentError,
    NoTextLayerError,
    TooLargeDocumentError,
)
from citewise.ingest.parsers._pdf_layout import Char, Item, layout
from citewise.ingest.parsers.base import (
    ParseOptions,
    TextBuilder,
    current_options,
    register,
    split_keywords,
)
from citewise.ingest.parsers.text import clean_text, collapse_blobs, parse_mislabelled
from citewise.types import BlockKind, ParsedDocument

__all__ = ["MIN_FONT_SIZE", "MIN_LETTERS", "parse"]

MIN_LETTERS = 20
MIN_FONT_SIZE = 3.0
#: Held around every use of pdfium in this process: pdfium is not thread-safe, not even
#: for two different documents (pypdfium2's documentation), so the parser and the source
#: viewer's page rendering (:mod:`citewise.api.pdf_pages`) take turns.
PDFIUM_LOCK = threading.Lock()
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
        with PDFIUM_LOCK:
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
        raise CorruptDocumentError(
            path, f"corrupt or unsupported PDF ({exc}): re-export or re-download it") from exc
    options = current_options()
    try:
        n_pages = len(pdf)
        if n_pages == 0:
            raise CorruptDocumentError(path, "corrupt or unsupported PDF: it has no pages")
        if options.max_pages and n_pages > options.max_pages:
            raise TooLargeDocumentError(
                path, f"{n_pages} pages, more than the limit of {options.max_pages} "
                "(CITEWISE_MAX_PAGES); raise the limit or split the file")
        builder = TextBuilder()
        warnings: list[str] = []
        form = _open_form(pdf, warnings)
        no_text: list[int] = []
        ocr_pages: list[int] = []
        ocr_seen: dict[str, list[Item]] = {}
        hidden_pages: list[int] = []
        section: list[tuple[int, str]] = []
        first_heading = ""
        held: list[_Entry] = []
        for index in range(n_pages):
            page_no = index + 1
            try:
                try:
                    items, has_text, hidden = _read_page(pdf, index, form)
                except pdfium.PdfiumError as exc:
                    warnings.append(f"page {page_no}: could not be read ({exc})")
                    continue
                if has_text is None and options.ocr is not None:
                    items = _ocr_page(pdf, index, options, ocr_seen)
                    if items:
                        has_text = True
                        ocr_pages.append(page_no)
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
                last = max((i for i, e in enumerate(entries) if not _furniture(e.item)),
                           default=-1)
                cut = last if last >= 0 and entries[last].item.kind == "table" else len(entries)
                for entry in entries[:cut]:
                    _add_item(builder, entry, section)
                held = entries[cut:]
            finally:
                if options.page_progress is not None:
                    options.page_progress(page_no, n_pages)
        for entry in held:
            _add_item(builder, entry, section)
        if not builder.blocks:
            if no_text and options.ocr is not None:
                raise NoTextLayerError(path, "no extractable text, and OCR found none on its "
                                       "pages (blank, or a scan too faint to read)")
            if no_text:
                raise NoTextLayerError(path)
            raise EmptyDocumentError(path, "no text: every page of the PDF is blank")
        if ocr_pages:
            warnings.append(f"{_pages(ocr_pages)}: text read by OCR ({options.ocr.name}); it "
                            "may contain recognition errors")
        if no_text and options.ocr is not None:
            warnings.append(f"{_pages(no_text)}: no extractable text, and OCR found none")
        elif no_text:
            warnings.append(f"{_pages(no_text)}: no extractable text (scanned image?), "
                            "OCR needed (CITEWISE_OCR=true)")
        if hidden_pages:
            warnings.append(f"{_pages(hidden_pages)}: hidden text (invisible, white or tiny) "
                            "was dropped")
        title = _metadata_title(pdf) or first_heading or path.stem
        labels = _page_labels(pdf, n_pages)
        properties = _properties(pdf)
    finally:
        pdf.close()
    metadata: dict[str, Any] = {**properties, "page_labels": labels} if labels else properties
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
            starts: list[tuple[int, int]] = []
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


#: document information entries kept as document metadata (``--where author=...``)
_PROPERTIES = {"Author": "author", "Subject": "subject", "Keywords": "keywords",
               "Creator": "creator", "Producer": "producer", "CreationDate": "created",
               "ModDate": "modified"}
_PDF_DATE = re.compile(r"(?:D:)?(\d{4})(\d{2})?(\d{2})?")


def _properties(pdf: Any) -> dict[str, Any]:
    """The PDF's non-empty information entries (author, subject, keywords as a list,
    creator, producer, created and modified as ISO dates); a broken dictionary gives {}."""
    import pypdfium2 as pdfium

    try:
        info = pdf.get_metadata_dict(skip_empty=True)
    except (pdfium.PdfiumError, ValueError, UnicodeError):
        return {}
    out: dict[str, Any] = {}
    for entry, key in _PROPERTIES.items():
        value = clean_text(str(info.get(entry) or "")).strip()
        if not value:
            continue
        if key in ("created", "modified"):
            m = _PDF_DATE.match(value)
            if not m:
                continue
            value = "-".join(part for part in (m[1], m[2], m[3]) if part)
        out[key] = split_keywords(value) if key == "keywords" else value
    return out


def _metadata_title(pdf: Any) -> str:
    import pypdfium2 as pdfium

    try:
        title = clean_text(pdf.get_metadata_value("Title") or "").strip()
    except (pdfium.PdfiumError, ValueError, UnicodeError):
        return ""  # a broken info dictionary is not worth failing the document for
    title = title.removeprefix("Microsoft Word - ").strip()
    return "" if title.lower() in _PLACEHOLDER_TITLES else title


# --- one page -----------------------------------------------------------------------------------


@contextmanager
def _unlocked() -> Iterator[None]:
    """Let go of the PDFium lock (held by the caller) for work that does not touch PDFium."""
    PDFIUM_LOCK.release()
    try:
        yield
    finally:
        PDFIUM_LOCK.acquire()


def _images_key(page: Any) -> str | None:
    """A digest of what an image-only page shows (its size, and each image's encoded data
    and placement), or None when the page holds anything but images."""
    import pypdfium2 as pdfium
    from pypdfium2 import raw

    digest = hashlib.sha256(repr(page.get_size()).encode())
    for obj in page.get_objects(max_depth=3):
        if obj.type == raw.FPDF_PAGEOBJ_FORM:
            continue
        if obj.type != raw.FPDF_PAGEOBJ_IMAGE:
            return None
        try:
            data = obj.get_data(decode_simple=False)
            matrix = obj.get_matrix().get()
        except pdfium.PdfiumError:
            return None
        digest.update(repr(matrix).encode())
        digest.update(bytes(data))
    return digest.hexdigest()


def _ocr_page(pdf: Any, index: int, options: ParseOptions,
              seen: dict[str, list[Item]]) -> list[Item]:
    """The paragraphs the OCR engine reads on page ``index``, rendered at ``options.ocr_dpi``
    in grayscale; ``seen`` keeps what pages of the same images read (so they are read once).
    The bitmap is freed before this returns."""
    from citewise.ingest.ocr import paragraphs

    page = pdf[index]
    try:
        key = _images_key(page)
        if key is not None and key in seen:
            return list(seen[key])
        bitmap = page.render(scale=options.ocr_dpi / 72, grayscale=True)
        try:
            image = bitmap.to_numpy().copy()
        finally:
            bitmap.close()
    finally:
        page.close()
    if image.ndim == 3 and image.shape[2] == 1:
        image = image[:, :, 0]
    with _unlocked():  # other documents parse while this page is read
        lines = options.ocr.read(image)
    del image
    items = [Item("paragraph", text) for text in paragraphs(lines)]
    if key is not None:
        seen[key] = items
    return list(items)


def _read_page(pdf: Any, index: int, form: Any = None) -> tuple[list[Item], bool | None, bool]:
    """``(items, has_text, dropped_hidden)``; ``has_text`` is None for a page that looks
    scanned (images, almost no letters) and False for a blank page. ``form`` is the
    document's form handle (None: no AcroForm): filled fields become one more item."""
    from pypdfium2 import raw

    page = pdf[index]
    textpage = page.get_textpage()
    try:
        objects = _page_objects(page)
        lines, hidden = _page_lines(textpage, objects)
        fields = _form_fields(page, form, lines) if form is not None else []
        extra = [Item("paragraph", "\n".join(fields))] if fields else []
        lines = [line for line in lines if line]
        letters = sum(c.text.isalpha() for line in lines for c in line)
        kinds = [obj.type for obj in page.get_objects(max_depth=3)]  # images inside forms too
        scanned = raw.FPDF_PAGEOBJ_IMAGE in kinds or kinds.count(raw.FPDF_PAGEOBJ_PATH) > 200
        if letters < MIN_LETTERS and scanned and not extra:
            return [], None, hidden  # a scan (or text drawn as outlines), maybe with a stamp
        if not any(not c.text.isspace() for line in lines for c in line):
            return extra, bool(extra), hidden
        return layout(lines) + extra, True, hidden
    finally:
        textpage.close()
        page.close()


def _open_form(pdf: Any, warnings: list[str]) -> Any:
    """The form handle of a PDF with an AcroForm (None without one), opened before any page
    is loaded as PDFium requires; an XFA form or a failure to open is a warning."""
    import pypdfium2 as pdfium
    from pypdfium2 import raw

    kind = raw.FPDF_GetFormType(pdf.raw)
    if kind == raw.FORMTYPE_NONE:
        return None
    if kind in (raw.FORMTYPE_XFA_FULL, raw.FORMTYPE_XFA_FOREGROUND):
        warnings.append("XFA form: values typed into its fields were not extracted")
    try:
        pdf.init_forms()
    except (pdfium.PdfiumError, OSError) as exc:
        warnings.append(f"form fields could not be read ({exc}); filled values are missing")
        return None
    return pdf.formenv.raw if pdf.formenv is not None else None


def _annot_text(fn: Any, *args: Any) -> str:
    """A UTF-16 string out of a PDFium ``FPDFAnnot_*`` getter (size query, then fill)."""
    from pypdfium2 import raw

    n = fn(*args, None, 0)
    if n <= 2:
        return ""
    buf = ctypes.create_string_buffer(n)
    fn(*args, ctypes.cast(buf, ctypes.POINTER(raw.FPDF_WCHAR)), n)
    return buf.raw[:n - 2].decode("utf-16-le", "replace")


def _form_fields(page: Any, form: Any, lines: list[list[Char]]) -> list[str]:
    """``label: value`` lines for the page's filled form fields, in reading order (case N07).

    A field with its label just left of it on its line is written into that line instead
    (the value's characters appended to it, so the layout reads "Policy number: PN-44817-K")
    and is not returned. Otherwise the label is the page text just left of the field on its line (else just above it, else
    the field's tooltip or name); text fields, combo and list boxes give their value (empty
    ones are left out), check boxes "yes (checked)" or "no (not checked)", and a radio group
    the option chosen ("... (selected)", the option's label being the text to its right)."""
    from pypdfium2 import raw

    chars = [c for line in lines for c in line]
    found: list[tuple[float, float, str]] = []
    for i in range(raw.FPDFPage_GetAnnotCount(page.raw)):
        annot = raw.FPDFPage_GetAnnot(page.raw, i)
        if not annot:
            continue
        try:
            if raw.FPDFAnnot_GetSubtype(annot) != raw.FPDF_ANNOT_WIDGET:
                continue
            kind = raw.FPDFAnnot_GetFormFieldType(form, annot)
            rect = raw.FS_RECTF()
            if not raw.FPDFAnnot_GetRect(annot, rect):
                continue
            box = (min(rect.left, rect.right), min(rect.bottom, rect.top),
                   max(rect.left, rect.right), max(rect.bottom, rect.top))
            name = (_annot_text(raw.FPDFAnnot_GetFormFieldAlternateName, form, annot)
                    or _annot_text(raw.FPDFAnnot_GetFormFieldName, form, annot))
            fallback = " ".join(name.replace("_", " ").replace(".", " ").split()).capitalize()
            label = _label_near(chars, box, "left") or _label_near(chars, box, "above")
            if kind == raw.FPDF_FORMFIELD_CHECKBOX:
                checked = bool(raw.FPDFAnnot_IsChecked(form, annot))
                label = label or _label_near(chars, box, "right")
                value = "yes (checked)" if checked else "no (not checked)"
            elif kind == raw.FPDF_FORMFIELD_RADIOBUTTON:
                if not raw.FPDFAnnot_IsChecked(form, annot):
                    continue
                option = _label_near(chars, box, "right") or _annot_text(
                    raw.FPDFAnnot_GetFormFieldExportValue, form, annot)
                label = fallback or label
                value = f"{option} (selected)" if option else "selected"
            elif kind in (raw.FPDF_FORMFIELD_TEXTFIELD, raw.FPDF_FORMFIELD_COMBOBOX,
                          raw.FPDF_FORMFIELD_LISTBOX):
                value = " ".join(clean_text(
                    _annot_text(raw.FPDFAnnot_GetFormFieldValue, form, annot)).split())
                if not value:
                    continue
            else:
                continue  # push buttons, signatures
            if label and _place_beside(lines, chars, box, value):
                continue  # read in its line: "Policy number: PN-44817-K"
            label = label or fallback or "Field"
            sep = " " if label.endswith((":", "?")) else ": "
            found.append((-box[3], box[0], f"{label}{sep}{value}"))
        finally:
            raw.FPDFPage_CloseAnnot(annot)
    found.sort()
    return [text for _, _, text in found]


def _place_beside(lines: list[list[Char]], chars: list[Char],
                  box: tuple[float, float, float, float], value: str) -> bool:
    """Write ``value`` as characters right after the label text left of ``box`` on its line,
    so the layout reads label and value as one line; False when there is no such label."""
    left, bottom, _, top = box
    near = [c for c in chars if bottom - 2 <= (c.y0 + c.y1) / 2 <= top + 2
            and c.x1 <= left + 1 and not c.text.isspace()]
    if not near:
        return False
    last = max(near, key=lambda c: c.x1)
    line = next((ln for ln in lines if any(c is last for c in ln)), None)
    if line is None:
        return False
    width = max(1.0, 0.5 * (last.y1 - last.y0))
    x = last.x1 + width
    for ch in value:
        line.append(Char(ch, x, last.y0, x + width, last.y1))
        x += width
    return True


def _label_near(chars: list[Char], box: tuple[float, float, float, float], side: str) -> str:
    """The run of page text next to ``box`` on ``side`` ("left", "right": on the same line;
    "above": the line just over it, overlapping it horizontally), nearest part first."""
    left, bottom, right, top = box
    if side == "above":
        near = [c for c in chars if top - 1 <= (c.y0 + c.y1) / 2 <= top + 24
                and c.x1 > left - 2 and c.x0 < right + 2]
        if not near:
            return ""
        lowest = min((c.y0 + c.y1) / 2 for c in near)
        near = [c for c in near if (c.y0 + c.y1) / 2 - lowest < 3]
    else:
        near = [c for c in chars if bottom - 2 <= (c.y0 + c.y1) / 2 <= top + 2
                and (c.x1 <= left + 1 if side == "left" else c.x0 >= right - 1)]
    if not near:
        return ""
    near.sort(key=lambda c: c.x0, reverse=side == "left")
    run = [near[0]]
    for c in near[1:]:  # stop at a gap wider than about two letters' height
        prev = run[-1]
        gap = prev.x0 - c.x1 if side == "left" else c.x0 - prev.x1
        if gap > 2.5 * max(1.0, prev.y1 - prev.y0):
            break
        run.append(c)
    if side == "left":
        run.reverse()
    parts: list[str] = []
    before: Char | None
    for before, c in zip([None, *run], run, strict=False):
        if (before is not None and not before.text.isspace() and not c.text.isspace()
                and c.x0 - before.x1 > 0.25 * max(1.0, c.y1 - c.y0)):
            parts.append(" ")
        parts.append(c.text)
    return " ".join(clean_text("".join(parts)).split())


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
