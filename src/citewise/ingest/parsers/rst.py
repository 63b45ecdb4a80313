"""reStructuredText via docutils' doctree (registered as format ``rst``).

Section titles are HEADING blocks and the section path; paragraphs, lists (one LIST block per
top-level list), definition and field lists, literal blocks (CODE) and tables (TABLE, header
from the ``thead`` rows) are blocks. ``line_start`` is docutils' line for the node (for titles
the line of the title text); ``line_end`` adds the block's line count.

Sphinx's roles and directives are read as the built page shows them
(:mod:`citewise.ingest.parsers._rst_sphinx`): ``:class:`~a.Response``` is "Response",
``.. code-block::`` a literal block, an autodoc entry its name.

Dropped: comments, substitution definitions, link targets, docutils' own error messages and
``raw`` passthrough. File inclusion (``.. include::``, ``csv-table :file:``) and raw output are
disabled, so an indexed file can never pull in another file from disk.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from citewise.errors import CorruptDocumentError, EmptyDocumentError
from citewise.ingest.parsers import _rst_sphinx
from citewise.ingest.parsers.base import TextBuilder, register
from citewise.ingest.parsers.text import collapse_blobs, decode_text, is_blank
from citewise.types import BlockKind, ParsedDocument

__all__ = ["parse"]

_SKIP = frozenset(
    {"comment", "substitution_definition", "target", "system_message", "raw", "pending",
     "problematic", "citation_reference", "footnote_reference", "image", "decoration"}
)
_SETTINGS = {
    "report_level": 5,
    "halt_level": 5,
    "file_insertion_enabled": False,
    "raw_enabled": False,
    "doctitle_xform": False,
    "input_encoding": "unicode",
    "traceback": True,
}


@register("rst", suffixes=(".rst", ".rest"))
def parse(path: Path, data: bytes) -> ParsedDocument:
    """Parse reStructuredText into heading, paragraph, list, table and code blocks.

    Raises EmptyDocumentError, EncodingError, UnsupportedFormatError (binary) and
    CorruptDocumentError (docutils could not parse it at all).
    """
    import docutils.core
    import docutils.utils

    if not data:
        raise EmptyDocumentError(path, "empty file (0 bytes)")
    source = decode_text(path, data)
    if is_blank(source):
        raise EmptyDocumentError(path, "empty file: only whitespace, no text to index")
    _rst_sphinx.register()
    settings = dict(_SETTINGS, warning_stream=io.StringIO())
    try:
        doctree = docutils.core.publish_doctree(source, settings_overrides=settings)
    except (docutils.utils.SystemMessage, RecursionError, ValueError) as exc:
        raise CorruptDocumentError(path, f"reStructuredText could not be parsed: {exc}") from exc
    builder = TextBuilder()
    title = _emit(doctree, builder)
    if not builder.blocks:
        raise EmptyDocumentError(path, "no text to index")
    return builder.build("rst", title=title or Path(path).stem)


def _emit(doctree: Any, builder: TextBuilder) -> str:
    from docutils import nodes

    section: list[str] = []
    first_title = ""
    # explicit stack of nodes to visit; a None entry closes the innermost section
    stack: list[nodes.Node | None] = list(reversed(doctree.children))
    while stack:
        node = stack.pop()
        if node is None:
            section.pop()
            continue
        if not isinstance(node, nodes.Element) or node.tagname in _SKIP:
            continue
        name = node.tagname
        line = node.line
        if name == "section":
            title = next((c for c in node.children if c.tagname == "title"), None)
            text = title.astext().strip() if title is not None else ""
            section.append(text)
            if text:
                first_title = first_title or text
                builder.add(BlockKind.HEADING, text, section=tuple(section),
                            level=len(section), **_lines(line, text, title=True))
            stack.append(None)
            stack.extend(reversed([c for c in node.children if c is not title]))
            continue
        path = tuple(s for s in section if s)
        if name in ("paragraph", "line_block", "attribution", "rubric"):
            _add(builder, BlockKind.PARAGRAPH, node.astext(), path, line)
        elif name in ("literal_block", "doctest_block", "math_block"):
            _add(builder, BlockKind.CODE, node.astext(), path, line)
        elif name in ("bullet_list", "enumerated_list"):
            items = []
            for n, item in enumerate(node.children, start=1):
                marker = "- " if name == "bullet_list" else f"{n}. "
                items.append(marker + item.astext().strip().replace("\n\n", "\n")
                             .replace("\n", "\n" + " " * len(marker)))
            _add(builder, BlockKind.LIST, "\n".join(items), path, line)
        elif name in ("definition_list", "field_list", "option_list"):
            items = []
            for item in node.children:
                parts = [c.astext().strip() for c in item.children if isinstance(c, nodes.Element)]
                items.append(": ".join(p.replace("\n\n", " ") for p in parts if p))
            _add(builder, BlockKind.LIST, "\n".join(items), path, line)
        elif name == "table":
            _table(builder, node, path, line)
        elif name == "title":
            _add(builder, BlockKind.PARAGRAPH, node.astext(), path, line)
        else:  # containers: admonitions, block quotes, topics, compound paragraphs ...
            stack.extend(reversed(node.children))
    return first_title


def _table(builder: TextBuilder, table: Any, path: tuple[str, ...], line: int | None) -> None:
    from docutils import nodes

    header: list[str] = []
    rows: list[str] = []
    for part in table.findall(nodes.row):
        cells = " | ".join(e.astext().strip().replace("\n", " ") for e in part.children)
        if isinstance(part.parent, nodes.thead):
            header.append(cells)
        else:
            rows.append(cells)
    caption = next((c for c in table.children if c.tagname == "title"), None)
    if caption is not None:
        _add(builder, BlockKind.PARAGRAPH, caption.astext(), path, line)
    if rows:
        builder.add(BlockKind.TABLE, "\n".join(rows), section=path,
                    header=" / ".join(header) or None, **_lines(line, "\n".join(rows)))
    elif header:
        _add(builder, BlockKind.PARAGRAPH, "\n".join(header), path, line)


def _add(builder: TextBuilder, kind: BlockKind, text: str, path: tuple[str, ...],
         line: int | None) -> None:
    builder.add(kind, collapse_blobs(text), section=path, **_lines(line, text))


def _lines(line: int | None, text: str, title: bool = False) -> dict[str, int]:
    if not line:
        return {}
    start = max(1, line - 1) if title else line
    return {"line_start": start, "line_end": start + text.strip().count("\n")}
