"""Word ``.docx``: python-docx opens the package; the body XML is walked in document order.

Kept: paragraphs; headings (styles "Heading N", "Title", or an outline level) as HEADING
blocks and the section path; numbered/bulleted paragraphs merged into LIST blocks; tables as
TABLE blocks (``header`` = first row's cells joined " | ", one row per line); text boxes
(``w:txbxContent``, DrawingML and VML ``v:textbox``) as blocks after their anchor paragraph;
tracked insertions (``w:ins``, ``w:moveTo``) and field results. Automatically numbered
paragraphs carry the number Word renders for them ("4.2 The Supplier ...", case N06; see
:mod:`citewise.ingest.parsers._docx_numbering`); bullets stay "- " items. Header, footer, footnote and
endnote text comes once, at the end, so it is indexed but not repeated in every chunk.

Dropped, because Word does not show it (case C37, C27): tracked deletions (``w:del``,
``w:delText``, ``w:moveFrom``), field instructions (``w:instrText``), the VML fallback copy of
a DrawingML text box (``mc:Fallback``), and hidden runs: ``w:vanish`` (direct, or from the
run's or paragraph's style), text of 2 pt or less, and white text without shading or
highlight behind it.

Zip bombs are refused before anything is decompressed: more than :data:`MAX_UNCOMPRESSED`
bytes in total, more than :data:`MAX_MEMBERS` members, or a member that inflates more than
:data:`MAX_RATIO` times raise CorruptDocumentError.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from citewise.errors import CorruptDocumentError, EmptyDocumentError, UnsupportedFormatError
from citewise.ingest.parsers._docx_numbering import ListLabel, Numbering
from citewise.ingest.parsers.base import TextBuilder, register, split_keywords
from citewise.ingest.parsers.text import clean_text, collapse_blobs, parse_mislabelled
from citewise.types import BlockKind, ParsedDocument

__all__ = ["MAX_MEMBERS", "MAX_RATIO", "MAX_UNCOMPRESSED", "check_zip", "core_properties",
           "parse"]

MAX_UNCOMPRESSED = 200 * 1024 * 1024
MAX_MEMBERS = 10_000
MAX_RATIO = 200

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
_M = "{http://schemas.openxmlformats.org/officeDocument/2006/math}"
_RT = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"
_DESCEND = frozenset(
    _W + t for t in ("ins", "moveTo", "hyperlink", "smartTag", "customXml", "sdt",
                     "sdtContent", "fldSimple", "bdo", "dir", "r")
) | {_MC + "AlternateContent", _MC + "Choice", _MC + "Fallback"}
_SKIP = frozenset(
    _W + t for t in ("del", "moveFrom", "delText", "instrText", "pPr", "rPr", "sdtPr",
                     "sdtEndPr", "delInstrText", "commentReference", "footnoteReference",
                     "endnoteReference")
)
_BREAKS = {_W + "br": "\n", _W + "cr": "\n", _W + "tab": "\t", _W + "noBreakHyphen": "-"}
_TRUE = (None, "1", "true", "on")


def _sniff(data: bytes) -> bool:
    return data.startswith(b"PK\x03\x04") and b"word/document.xml" in data


def check_zip(path: str | Path, data: bytes) -> zipfile.ZipFile:
    """Open ``data`` as a zip after the zip-bomb checks; raises CorruptDocumentError."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise CorruptDocumentError(path, f"corrupt or truncated Office file: {exc}") from exc
    infos = archive.infolist()
    total = sum(i.file_size for i in infos)
    if len(infos) > MAX_MEMBERS or total > MAX_UNCOMPRESSED or any(
        i.file_size > 10 * 1024 * 1024 and i.file_size > MAX_RATIO * max(1, i.compress_size)
        for i in infos
    ):
        raise CorruptDocumentError(
            path,
            f"refused: the archive would inflate to {total:,} bytes in {len(infos)} members "
            f"(limit {MAX_UNCOMPRESSED:,} bytes, ratio {MAX_RATIO}); possible zip bomb",
        )
    return archive


def core_properties(props: Any, attributes: dict[str, str]) -> dict[str, Any]:
    """Document metadata from an Office package's core properties (python-docx's or
    python-pptx's ``core_properties``, openpyxl's ``workbook.properties``): for each
    ``metadata key -> attribute`` of ``attributes``, the non-empty text cleaned and stripped
    (``keywords`` split on commas and semicolons into a list) or a datetime as its ISO date
    (``"2024-03-31"``). A property that is missing, empty, not text or a date, or malformed
    (reading it raises ValueError or TypeError) is left out; nothing is raised."""
    out: dict[str, Any] = {}
    for key, attr in attributes.items():
        try:
            value = getattr(props, attr)
        except (ValueError, TypeError, AttributeError):  # a malformed property: left out
            continue
        if hasattr(value, "date") and callable(value.date):
            out[key] = value.date().isoformat()
        elif isinstance(value, str) and (value := clean_text(value).strip()):
            out[key] = split_keywords(value) if key == "keywords" else value
    return out


@register("docx", suffixes=(".docx",), sniff=_sniff)
def parse(path: Path, data: bytes) -> ParsedDocument:
    """Parse a .docx into heading, paragraph, list and table blocks (see the module docstring).

    Raises EmptyDocumentError (0 bytes or no visible text), CorruptDocumentError (not a valid
    package, zip bomb), UnsupportedFormatError (macro-enabled or other non-docx packages).
    """
    import docx as python_docx

    if not data:
        raise EmptyDocumentError(path, "empty file (0 bytes)")
    if not data.startswith(b"PK"):
        return parse_mislabelled(path, data, "docx")
    check_zip(path, data).close()
    try:
        document = python_docx.Document(io.BytesIO(data))
    except ValueError as exc:  # python-docx: "... is not a Word file, content type is ..."
        raise UnsupportedFormatError(path, f"not a Word .docx document: {exc}") from exc
    except Exception as exc:  # python-docx raises KeyError, XMLSyntaxError, ... on damage
        raise CorruptDocumentError(path, f"corrupt Word document: {exc}") from exc
    styles = _styles(document)
    walker = _Walker(styles, Numbering(_numbering_root(document), {
        sid: st.numbering for sid, st in styles.items() if st.numbering is not None}))
    builder = TextBuilder()
    walker.emit(document.element.body, builder)
    extra_sections = (("header", "footer", "Page header and footer"),
                      ("footnotes", "endnotes", "Notes"))
    for *reltypes, label in extra_sections:
        seen: set[str] = set()
        for root in _related_roots(document, reltypes):
            for text in walker.plain_paragraphs(root):
                if text not in seen:
                    seen.add(text)
                    builder.add(BlockKind.PARAGRAPH, text, section=(label,))
    if not builder.blocks:
        raise EmptyDocumentError(path, "no visible text in the Word document")
    title = (document.core_properties.title or "").strip() or walker.first_heading
    return builder.build("docx", title=clean_text(title) or Path(path).stem,
                         metadata=core_properties(document.core_properties, _PROPERTIES))


#: core properties kept as document metadata (``--where author=...``), by metadata key
_PROPERTIES = {"author": "author", "subject": "subject", "keywords": "keywords",
               "category": "category", "language": "language", "created": "created",
               "modified": "modified", "last_modified_by": "last_modified_by"}


def _numbering_root(document: Any) -> Any | None:
    """The ``w:numbering`` element of the document, None when it has no numbering part."""
    try:
        return document.part.numbering_part.element
    except (KeyError, NotImplementedError, AttributeError):
        return None


def _related_roots(document: Any, kinds: list[str]) -> Iterator[Any]:
    from docx.oxml import parse_xml

    for rel in document.part.rels.values():
        if rel.is_external or rel.reltype.rsplit("/", 1)[-1] not in kinds:
            continue
        part = rel.target_part
        element = getattr(part, "element", None)
        yield element if element is not None else parse_xml(part.blob)


class _Style:
    __slots__ = ("heading", "hidden", "is_title", "list", "numbering")

    def __init__(self) -> None:
        self.heading = 0
        self.hidden = False
        self.is_title = False
        self.list = False
        self.numbering: tuple[str, int] | None = None  # (numId, ilvl) the style numbers with


def _styles(document: Any) -> dict[str, _Style]:
    """style id -> heading level / hidden / list, following ``basedOn`` (cycles ignored)."""
    raw = {s.get(_W + "styleId"): s for s in document.styles.element.iter(_W + "style")}
    result: dict[str, _Style] = {}
    for style_id in raw:
        info = _Style()
        chain, seen, current = [], set(), raw.get(style_id)
        while current is not None and current.get(_W + "styleId") not in seen:
            seen.add(current.get(_W + "styleId"))
            chain.append(current)
            based = current.find(_W + "basedOn")
            current = raw.get(based.get(_W + "val")) if based is not None else None
        for element in reversed(chain):  # base first, derived styles override
            name_el = element.find(_W + "name")
            name = (name_el.get(_W + "val") if name_el is not None else "").lower()
            if name.startswith("heading ") and name[8:].isdigit():
                info.heading = int(name[8:])
            elif name == "title":
                info.heading, info.is_title = 1, True
            outline = element.find(f"{_W}pPr/{_W}outlineLvl")
            if outline is not None and (outline.get(_W + "val") or "").isdigit():
                level = int(outline.get(_W + "val"))
                info.heading = level + 1 if level < 9 else 0
            numpr = element.find(f"{_W}pPr/{_W}numPr")
            if numpr is not None:
                info.list = True
                num_id = numpr.find(_W + "numId")
                ilvl = numpr.find(_W + "ilvl")
                old_id, old_lvl = info.numbering or (None, 0)
                new_id = num_id.get(_W + "val") if num_id is not None else old_id
                level_text = ilvl.get(_W + "val") if ilvl is not None else None
                new_lvl = int(level_text) if level_text and level_text.isdigit() else old_lvl
                info.numbering = (new_id, new_lvl) if new_id is not None else None
            vanish = element.find(f"{_W}rPr/{_W}vanish")
            if vanish is not None:
                info.hidden = vanish.get(_W + "val") in _TRUE
        result[style_id] = info
    return result


class _Walker:
    """Walks WordprocessingML block content with an explicit stack (no recursion)."""

    def __init__(self, styles: dict[str, _Style], numbering: Numbering | None = None) -> None:
        self.styles = styles
        self.numbering = numbering or Numbering(None, {})
        self.labels: dict[Any, ListLabel | None] = {}  # w:p -> its list label, computed once
        self.first_heading = ""

    # block level ------------------------------------------------------------------------------

    def emit(self, root: Any, builder: TextBuilder) -> None:
        section: list[tuple[int, str]] = []
        pending_list: list[str] = []

        def flush_list() -> None:
            if pending_list:
                builder.add(BlockKind.LIST, "\n".join(pending_list), section=_path(section))
                pending_list.clear()

        stack = list(reversed(root))
        while stack:
            element = stack.pop()
            tag = element.tag
            if tag == _W + "p":
                text, boxes, level, is_list, numbered = self._paragraph(element)
                if text and numbered and not level:
                    level = self._clause_heading(element, text, stack[-1] if stack else None)
                if text and is_list and not level:
                    indent = " " * (text.find(" ") + 1) if numbered else "  "
                    item = text if numbered else "- " + text
                    pending_list.append(item.replace("\n", "\n" + indent))
                elif text:
                    flush_list()
                    if level:
                        while section and section[-1][0] >= level:
                            section.pop()
                        section.append((level, text.replace("\n", " ")))
                        builder.add(BlockKind.HEADING, text, section=_path(section), level=level)
                        self.first_heading = self.first_heading or text
                    else:
                        builder.add(BlockKind.PARAGRAPH, text, section=_path(section))
                for box in reversed(boxes):
                    stack.extend(reversed(box))
            elif tag == _W + "tbl":
                flush_list()
                self._table(element, builder, _path(section), stack)
            elif tag in (_W + "sdt", _W + "sdtContent", _W + "customXml"):
                stack.extend(reversed(element))
        flush_list()

    def plain_paragraphs(self, root: Any) -> list[str]:
        """Texts of every visible paragraph under ``root`` (headers, footers, notes)."""
        texts = []
        for p in root.iter(_W + "p"):
            if any(a.tag == _MC + "Fallback" for a in p.iterancestors()):
                continue
            if p.getparent() is not None and p.getparent().tag in (_W + "footnote",
                                                                   _W + "endnote"):
                owner = p.getparent()
                if owner.get(_W + "type") in ("separator", "continuationSeparator",
                                              "continuationNotice"):
                    continue
            text = self._paragraph(p)[0]
            if text:
                texts.append(text)
        return texts

    def _table(self, tbl: Any, builder: TextBuilder, section: tuple[str, ...],
               stack: list[Any]) -> None:
        rows = []
        for tr in tbl.iterchildren(_W + "tr"):
            cells = [self._cell_text(tc) for tc in tr.iterchildren(_W + "tc")]
            if any(cells):
                rows.append(cells)
        if len(rows) >= 2 and max(map(len, rows)) >= 2 and all(
            len(c) <= 400 for r in rows for c in r
        ):
            header = " | ".join(c.replace("\n", " ") for c in rows[0])
            body = "\n".join(" | ".join(c.replace("\n", " ") for c in r) for r in rows[1:])
            builder.add(BlockKind.TABLE, body, section=section, header=header)
            return
        # a layout table: walk its cells' content as ordinary blocks
        for tc in reversed([tc for tr in tbl.iterchildren(_W + "tr")
                            for tc in tr.iterchildren(_W + "tc")]):
            stack.extend(reversed(tc))

    def _cell_text(self, tc: Any) -> str:
        parts = []
        for p in tc.iter(_W + "p"):
            if any(a.tag == _MC + "Fallback" for a in p.iterancestors()):
                continue
            text = self._paragraph(p)[0]
            if text:
                parts.append(text)
        return " ".join(parts)

    # paragraph level ----------------------------------------------------------------------------

    def _paragraph(self, p: Any) -> tuple[str, list[Any], int, bool, bool]:
        """``(text, text boxes, heading level, is list item, numbered)`` of one ``w:p``; a
        numbered paragraph's text starts with its rendered number ("4.2 The Supplier ...")."""
        style = self._paragraph_style(p)
        level, is_list = style.heading, style.list
        ppr = p.find(_W + "pPr")
        if ppr is not None:
            if ppr.find(_W + "numPr") is not None:
                is_list = True
            outline = ppr.find(_W + "outlineLvl")
            if outline is not None and (outline.get(_W + "val") or "").isdigit():
                value = int(outline.get(_W + "val"))
                level = value + 1 if value < 9 else 0
        shaded = self._has_shading(p)
        parts: list[str] = []
        boxes: list[Any] = []
        stack = list(reversed(p))
        while stack:
            el = stack.pop()
            tag = el.tag
            if not isinstance(tag, str) or tag in _SKIP:
                continue
            if tag in (_W + "t", _M + "t"):
                parts.append(el.text or "")
            elif tag in _BREAKS:
                parts.append(_BREAKS[tag])
            elif tag == _W + "txbxContent":
                boxes.append(el)
            elif tag == _W + "r":
                if not self._run_hidden(el, style, shaded):
                    stack.extend(reversed(el))
            elif tag == _MC + "AlternateContent":
                choice = el.find(_MC + "Choice")
                chosen = choice if choice is not None else el.find(_MC + "Fallback")
                if chosen is not None:
                    stack.extend(reversed(chosen))
            elif tag in _DESCEND or len(el):
                stack.extend(reversed(el))  # pict, drawing, shapes: look for text boxes
        text = clean_text("".join(parts)).strip()
        text = collapse_blobs("\n".join(" ".join(line.split()) for line in text.split("\n")))
        label = self._label(p)
        number = label.number if label else ""
        if number and text:
            text = f"{number} {text}"
        if level and style.is_title and not self.first_heading:
            self.first_heading = text
        return text, boxes, level, is_list, bool(number)

    def _label(self, p: Any) -> ListLabel | None:
        """The list label of ``p`` (None: not numbered), computed once per paragraph in the
        order paragraphs are first read (document order)."""
        if p not in self.labels:
            pstyle = p.find(f"{_W}pPr/{_W}pStyle")
            style_id = pstyle.get(_W + "val") if pstyle is not None else None
            self.labels[p] = self.numbering.label(p, style_id)
        return self.labels[p]

    def _clause_heading(self, p: Any, text: str, following: Any) -> int:
        """A numbered clause title ("4. Prices") followed by its own sub-clauses ("4.1 ...")
        is a heading: returns its heading level (deeper than Word's heading styles, so it
        nests under them; ``10 + list level``), else 0. A title is short and does not end
        like a sentence."""
        label = self._label(p)
        if label is None or not label.number or following is None or following.tag != _W + "p":
            return 0
        title = text[len(label.number):].strip()
        if not title or len(title) > 80 or title.endswith((".", ";", ":", ",", "!", "?")):
            return 0
        nxt = self._label(following)
        if nxt is None or nxt.num_id != label.num_id or nxt.level <= label.level:
            return 0
        return 10 + label.level

    def _paragraph_style(self, p: Any) -> _Style:
        pstyle = p.find(f"{_W}pPr/{_W}pStyle")
        if pstyle is not None:
            found = self.styles.get(pstyle.get(_W + "val"))
            if found is not None:
                return found
        return _NO_STYLE

    def _run_hidden(self, run: Any, pstyle: _Style, shaded: bool) -> bool:
        rpr = run.find(_W + "rPr")
        hidden = pstyle.hidden
        if rpr is None:
            return hidden
        rstyle = rpr.find(_W + "rStyle")
        if rstyle is not None:
            found = self.styles.get(rstyle.get(_W + "val"))
            hidden = hidden or (found is not None and found.hidden)
        vanish = rpr.find(_W + "vanish")
        if vanish is not None:
            hidden = vanish.get(_W + "val") in _TRUE
        if hidden:
            return True
        size = rpr.find(_W + "sz")
        size_val = size.get(_W + "val") or "" if size is not None else ""
        if size_val.isdigit() and int(size_val) <= 4:  # half-points: 2 pt or less
            return True
        color = rpr.find(_W + "color")
        if color is not None and (color.get(_W + "val") or "").upper() == "FFFFFF":
            return not (shaded or rpr.find(_W + "shd") is not None
                        or rpr.find(_W + "highlight") is not None)
        return False

    @staticmethod
    def _has_shading(p: Any) -> bool:
        """True when the paragraph or an enclosing table cell has a background fill."""
        candidates = [p.find(f"{_W}pPr/{_W}shd")]
        for ancestor in p.iterancestors(_W + "tc"):
            candidates.append(ancestor.find(f"{_W}tcPr/{_W}shd"))
        return any(
            shd is not None and (shd.get(_W + "fill") or "auto").upper() not in ("AUTO", "FFFFFF")
            for shd in candidates
        )


_NO_STYLE = _Style()


def _path(section: list[tuple[int, str]]) -> tuple[str, ...]:
    return tuple(text for _, text in section)
