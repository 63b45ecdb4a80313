"""HTML: the text a reader sees, in blocks, with headings as the section path.

Parsed with selectolax (lexbor, an HTML5 parser). Dropped before any text is read, because a
reader never sees it and hidden text is how instructions get smuggled into answers (case C27):

- ``script``, ``style``, ``template``, ``noscript``, ``head``, ``svg``, ``math``, ``iframe``,
  ``object``, ``select`` and similar non-content elements, and comments;
- elements with the ``hidden`` attribute, ``aria-hidden="true"``, the ``sr-only`` /
  ``visually-hidden`` classes, or an inline style (or a simple class/id rule in a ``<style>``
  sheet) with ``display:none``, ``visibility:hidden``, ``font-size:0`` or ``opacity:0``.

Headings ``h1``-``h6`` become HEADING blocks and the section path; ``p``, ``li``, ``pre``,
``blockquote``, ``td`` and other block elements end a block; a data table (two or more rows and
columns, short cells, no nested table) becomes one TABLE block whose ``header`` is its ``th``
row (else its first row) and whose text has one ``a | b | c`` line per row. The title is
``<title>``, else the first ``h1``, else the file stem.

The tree is walked with an explicit stack (no Python recursion). Lexbor itself slows down
quadratically on tens of thousands of nested block elements, so a file nested deeper than
:data:`MAX_DEPTH` is refused before parsing.
"""

from __future__ import annotations

import re
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser, LexborNode

from citewise.errors import EmptyDocumentError, UnsupportedFormatError
from citewise.ingest.parsers.base import TextBuilder, register
from citewise.ingest.parsers.text import clean_text, collapse_blobs, decode_text, is_blank
from citewise.types import Block, BlockKind, ParsedDocument

__all__ = ["MAX_DEPTH", "check_depth", "decode_html", "html_blocks", "parse", "visible_text"]

MAX_DEPTH = 5000

_DROP_TAGS = frozenset(
    "script style template noscript head title meta link base svg math iframe frame frameset "
    "object embed applet canvas audio video source track select option datalist input button "
    "map area dialog".split()
)
_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_BLOCK_TAGS = frozenset(
    "address article aside blockquote body caption center dd details div dl dt fieldset "
    "figcaption figure footer form header hgroup hr html legend li main nav ol p pre section "
    "summary table tbody td tfoot th thead tr ul".split()
) | frozenset(_HEADINGS)
_HIDDEN_STYLE_RE = re.compile(
    r"display\s*:\s*none|visibility\s*:\s*(?:hidden|collapse)"
    r"|font-size\s*:\s*0(?:\.0*)?(?:px|pt|em|rem|%)?\s*(?:!important)?\s*(?:;|$)"
    r"|(?<![-\w])opacity\s*:\s*0(?:\.0*)?\s*(?:!important)?\s*(?:;|$)",
    re.IGNORECASE,
)
_HIDDEN_CLASSES = frozenset({"sr-only", "visually-hidden", "screen-reader-text", "hidden"})
_CSS_RULE_RE = re.compile(r"([^{}]+)\{([^{}]*)\}")
_SIMPLE_SELECTOR_RE = re.compile(r"^\s*([.#])([\w-]+)\s*$")
_META_CHARSET_RE = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([\w-]+)""", re.IGNORECASE)
_DEEP_TAG_RE = re.compile(
    rb"<(/?)(div|section|article|blockquote|ul|ol|li|table|tr|td|p|span|font|b|i)\b[^>]*>",
    re.IGNORECASE,
)
_WS_RE = re.compile(r"[ \t\n\r\f\v\u00a0]+")
_BR = "\u2028"  # stands for <br> until whitespace is collapsed


def _sniff(data: bytes) -> bool:
    head = data[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if head.startswith(b"<?xml"):
        return b"<html" in head
    return head.startswith((b"<!doctype html", b"<html"))


def decode_html(path: str | Path, data: bytes) -> str:
    """Decode HTML bytes: BOM and UTF-8 first, then a ``<meta charset>`` declaration, then
    the same detection as plain text (:func:`~citewise.ingest.parsers.text.decode_text`)."""
    if not data.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            m = _META_CHARSET_RE.search(data[:4096])
            if m:
                try:
                    return clean_text(data.decode(m.group(1).decode("ascii"), errors="replace"))
                except LookupError:
                    pass
    return decode_text(path, data)


def visible_text(markup: str) -> str:
    """The visible text of an HTML fragment, blocks separated by a blank line (used for raw
    HTML inside Markdown). Hidden elements and comments give nothing."""
    tree = LexborHTMLParser(markup)
    builder = TextBuilder()
    _walk(tree, builder)
    return "\n\n".join(b.text for b in builder.blocks)


def html_blocks(markup: str) -> tuple[list[Block], str, str]:
    """``(blocks, title, first h1)`` of an HTML document's visible text, the blocks' offsets
    indexing their texts joined by a blank line (for formats made of HTML parts: e-book
    chapters, e-mail bodies). Hidden elements and comments give nothing."""
    tree = LexborHTMLParser(markup)
    title_node = tree.css_first("title")
    title = _collapse(title_node.text(deep=True)) if title_node is not None else ""
    builder = TextBuilder()
    first_h1 = _walk(tree, builder)
    return builder.blocks, title, first_h1


@register("html", suffixes=(".html", ".htm", ".xhtml", ".shtml"), sniff=_sniff)
def parse(path: Path, data: bytes) -> ParsedDocument:
    """Parse HTML into heading, paragraph, list, code and table blocks of visible text.

    Raises EmptyDocumentError (nothing visible), UnsupportedFormatError (binary, or nesting
    deeper than :data:`MAX_DEPTH`), EncodingError.
    """
    if not data:
        raise EmptyDocumentError(path, "empty file (0 bytes)")
    check_depth(path, data)
    markup = decode_html(path, data)
    if is_blank(markup):
        raise EmptyDocumentError(path, "empty file: only whitespace, no text to index")
    tree = LexborHTMLParser(markup)
    title_node = tree.css_first("title")
    title = _collapse(title_node.text(deep=True)) if title_node is not None else ""
    builder = TextBuilder()
    first_h1 = _walk(tree, builder)
    if not builder.blocks:
        raise EmptyDocumentError(path, "no visible text in the HTML")
    return builder.build("html", title=title or first_h1 or Path(path).stem)


# --- walking ------------------------------------------------------------------------------------


def _walk(tree: LexborHTMLParser, builder: TextBuilder) -> str:
    """Emit the visible blocks of ``tree`` into ``builder``; returns the first h1's text."""
    _remove_hidden(tree)
    root = tree.body or tree.root
    if root is None:
        return ""
    section: list[tuple[int, str]] = []  # (level, heading text)
    first_h1 = ""
    buf: list[str] = []
    in_item = 0

    def flush() -> None:
        text = _collapse("".join(buf))
        buf.clear()
        if text:
            kind = BlockKind.LIST if in_item else BlockKind.PARAGRAPH
            builder.add(kind, ("- " + text) if in_item else text, section=_path(section))

    # stack of (node, leaving); children are pushed in reverse so they pop in order
    stack: list[tuple[LexborNode, bool]] = [(root, False)]
    while stack:
        node, leaving = stack.pop()
        tag = node.tag
        if leaving:
            if tag in _BLOCK_TAGS:
                flush()
                if tag == "li":
                    in_item -= 1
            continue
        if tag == "-text":
            buf.append(node.text_content or "")
            continue
        if tag is None or tag.startswith("-") or tag in _DROP_TAGS:
            continue  # comments, doctype and non-content elements
        if tag == "br":
            buf.append(_BR)
            continue
        if tag in _HEADINGS:
            flush()
            level = _HEADINGS[tag]
            text = _collapse(node.text(deep=True))
            if text:
                while section and section[-1][0] >= level:
                    section.pop()
                section.append((level, text))
                builder.add(BlockKind.HEADING, text, section=_path(section), level=level)
                if level == 1 and not first_h1:
                    first_h1 = text
            continue
        if tag == "pre":
            flush()
            code = clean_text(node.text(deep=True)).strip("\n")
            builder.add(BlockKind.CODE, collapse_blobs(code), section=_path(section))
            continue
        if tag == "table":
            rows = _table_rows(node)
            if rows is not None:
                flush()
                _add_table(builder, node, rows, _path(section))
                continue
        if tag in _BLOCK_TAGS:
            flush()
            if tag == "li":
                in_item += 1
        stack.append((node, True))
        children = list(node.iter(include_text=True))
        stack.extend((child, False) for child in reversed(children))
    flush()
    return first_h1


def _path(section: list[tuple[int, str]]) -> tuple[str, ...]:
    return tuple(text for _, text in section)


def _collapse(text: str) -> str:
    text = clean_text(text)
    text = _WS_RE.sub(" ", text).replace(f" {_BR}", _BR).replace(f"{_BR} ", _BR)
    return collapse_blobs(text.replace(_BR, "\n").strip())


# --- tables -------------------------------------------------------------------------------------


def _table_rows(table: LexborNode) -> list[tuple[bool, list[str]]] | None:
    """``(is_header_row, cells)`` of a data table, or None for a layout table (one row or
    column, a nested table, or a cell longer than 400 characters), which is walked as blocks."""
    if _has_nested_table(table):
        return None
    rows: list[tuple[bool, list[str]]] = []
    for tr in table.css("tr"):
        cells = [c for c in tr.iter() if c.tag in ("td", "th")]
        if not cells:
            continue
        texts = [_collapse(c.text(deep=True, separator=" ")).replace("\n", " ") for c in cells]
        if any(len(t) > 400 for t in texts):
            return None
        in_thead = tr.parent is not None and tr.parent.tag == "thead"
        rows.append((in_thead or all(c.tag == "th" for c in cells), texts))
    if len(rows) < 2 or max(len(cells) for _, cells in rows) < 2:
        return None
    return rows


def _has_nested_table(table: LexborNode) -> bool:
    return any(node.tag == "table" for node in table.traverse(include_text=False)
               if node.mem_id != table.mem_id)


def _add_table(
    builder: TextBuilder,
    table: LexborNode,
    rows: list[tuple[bool, list[str]]],
    section: tuple[str, ...],
) -> None:
    caption = table.css_first("caption")
    if caption is not None:
        builder.add(BlockKind.PARAGRAPH, _collapse(caption.text(deep=True)), section=section)
    if rows[0][0]:
        n_header = 1
        while n_header < len(rows) and rows[n_header][0]:
            n_header += 1
        header_rows = rows[:n_header]
    else:
        header_rows, n_header = rows[:1], 1
    heading = " | ".join(
        " ".join(filter(None, col)) for col in zip(*(cells for _, cells in header_rows))
    )
    body = "\n".join(" | ".join(cells) for _, cells in rows[n_header:] if any(cells))
    header: str | None = heading
    if not body:
        body, header = heading, None
    builder.add(BlockKind.TABLE, body, section=section, header=header)


# --- hidden content ---------------------------------------------------------------------------


def _remove_hidden(tree: LexborHTMLParser) -> None:
    """Decompose hidden elements and comments, deepest first (a parent's removal would
    invalidate its children's handles)."""
    classes, ids = _hidden_css_rules(tree)
    doomed = []
    root = tree.root
    if root is None:
        return
    for node in root.traverse(include_text=False):
        if node.tag == "-comment":
            doomed.append(node)
            continue
        attrs = node.attributes
        if not attrs:
            continue
        style = attrs.get("style") or ""
        node_classes = set((attrs.get("class") or "").split())
        if (
            "hidden" in attrs
            or (attrs.get("aria-hidden") or "").strip().lower() == "true"
            or (style and _HIDDEN_STYLE_RE.search(style))
            or node_classes & _HIDDEN_CLASSES
            or node_classes & classes
            or (attrs.get("id") or "") in ids
        ):
            doomed.append(node)
    for node in reversed(doomed):
        node.decompose()


def _hidden_css_rules(tree: LexborHTMLParser) -> tuple[set[str], set[str]]:
    """Class and id names that a ``<style>`` sheet hides with a one-selector rule."""
    classes: set[str] = set()
    ids: set[str] = set()
    for style in tree.css("style"):
        for selectors, body in _CSS_RULE_RE.findall(style.text(deep=True)):
            if not _HIDDEN_STYLE_RE.search(body):
                continue
            for selector in selectors.split(","):
                m = _SIMPLE_SELECTOR_RE.match(selector)
                if m:
                    (classes if m.group(1) == "." else ids).add(m.group(2))
    return classes, ids


def check_depth(path: str | Path, data: bytes) -> None:
    """Refuse markup nested deeper than MAX_DEPTH (checked only for large files)."""
    if data.count(b"<") < MAX_DEPTH:
        return
    depth = deepest = 0
    for m in _DEEP_TAG_RE.finditer(data):
        depth += -1 if m.group(1) else 1
        deepest = max(deepest, depth)
    if deepest > MAX_DEPTH:
        raise UnsupportedFormatError(
            path, f"HTML nested {deepest} levels deep (limit {MAX_DEPTH}); refusing to parse"
        )
