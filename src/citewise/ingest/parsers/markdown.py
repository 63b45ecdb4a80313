"""Markdown (CommonMark + GFM tables) via markdown-it-py tokens.

- Front matter (YAML between ``---`` lines, TOML between ``+++`` lines) becomes ``metadata``
  and is never content: indexed, its bland text would match every query (case C18). Its
  ``title`` is the document title, else the first H1, else the file stem. A file with front
  matter and nothing else raises EmptyDocumentError.
- Headings are HEADING blocks and set the section path (heading texts by level). A trailing
  attribute list, the heading-id syntax of Pandoc (``{#install .unnumbered}``, ``{-}``),
  kramdown (``{: #install}``) and Python-Markdown's attr_list as MkDocs sites use it
  (``## Install { #install }``), is dropped: it is markup, and left in it would stand in
  every citation's section path and in every chunk's embedded heading prefix.
- Paragraphs, lists (one LIST block per top-level list, one line per item, nested items
  indented), GFM tables (TABLE block: ``header`` is ``"a | b | c"``, text one row per line),
  code fences and indented code (CODE) become blocks; ``line_start``/``line_end`` come from
  the tokens' source map, so they point at the file's lines.
- Block text is the rendered plain text: emphasis markers are dropped, links keep their text
  (and an http(s)/mailto URL in parentheses), images keep their alt text, so inline ``data:``
  URIs never reach the index (case C17).
- Dropped: HTML comments, raw HTML that is hidden (``display:none`` and the other rules of
  :mod:`citewise.ingest.parsers.html`); other raw HTML contributes its visible text.

reStructuredText is registered from :mod:`citewise.ingest.parsers.rst` (imported here).
"""

from __future__ import annotations

import datetime as _dt
import re
import tomllib
from pathlib import Path
from typing import Any

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from citewise.errors import EmptyDocumentError
from citewise.ingest.parsers import html as _html
from citewise.ingest.parsers import rst as _rst  # noqa: F401  (registers format "rst")
from citewise.ingest.parsers.base import TextBuilder, register
from citewise.ingest.parsers.text import clean_text, collapse_blobs, decode_text, is_blank
from citewise.types import BlockKind, ParsedDocument

__all__ = ["json_safe", "parse", "split_front_matter"]

_YAML_FM_RE = re.compile(r"\A---[ \t]*\n(.*?)^(?:---|\.\.\.)[ \t]*$\n?", re.DOTALL | re.MULTILINE)
_TOML_FM_RE = re.compile(r"\A\+\+\+[ \t]*\n(.*?)^\+\+\+[ \t]*$\n?", re.DOTALL | re.MULTILINE)
_COMMENT_RE = re.compile(r"\A\s*(?:<!--.*?-->\s*)+\Z", re.DOTALL)
_TAG_RE = re.compile(r"\A<\s*(/)?\s*([a-zA-Z][\w-]*)")
_SPACES_RE = re.compile(r"[ \t]{2,}")
_ATTR = r"(?:[#.][^\s{}]+|[\w-]+=(?:\"[^\"]*\"|'[^']*'|[^\s{}]+))"
#: A heading's trailing attribute list: ``{#id}``, ``{ #id .class key=value }``, ``{: #id}``,
#: ``{-}``; braces holding anything else (``Using {braces}``) are heading text.
_HEADING_ATTRS_RE = re.compile(r"\s*\{:?\s*(?:-|" + _ATTR + r"(?:\s+" + _ATTR + r")*)\s*\}\s*$")
_VOID_TAGS = frozenset("area base br col embed hr img input link meta source track wbr".split())


def _markdown_it() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def split_front_matter(text: str) -> tuple[dict[str, Any] | None, str]:
    """``(metadata, body)``: YAML (``---``) or TOML (``+++``) front matter parsed into a dict
    (JSON-safe values), and the body with the front matter replaced by as many empty lines, so
    line numbers still match the file. ``metadata`` is None when there is no valid front
    matter (a block that does not parse to a mapping is left as content)."""
    for pattern, load in ((_YAML_FM_RE, yaml.safe_load), (_TOML_FM_RE, tomllib.loads)):
        m = pattern.match(text)
        if not m:
            continue
        try:
            data = load(m.group(1))
        except (yaml.YAMLError, tomllib.TOMLDecodeError, ValueError):
            return None, text
        if data is None:
            data = {}
        if not isinstance(data, dict):
            return None, text
        return json_safe(data), "\n" * m.group(0).count("\n") + text[m.end():]
    return None, text


def json_safe(value: Any, _budget: list[int] | None = None, _depth: int = 0) -> Any:
    """A copy of ``value`` with only JSON types: strings cleaned like document text, dates as
    ISO strings, other objects ``str``; at most 10,000 nodes and 32 levels (YAML aliases can
    make huge or cyclic data)."""
    budget = _budget if _budget is not None else [10_000]
    budget[0] -= 1
    if budget[0] < 0 or _depth > 32:
        return None
    if isinstance(value, str):
        return clean_text(value)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, (_dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, dict):
        return {clean_text(str(k)): json_safe(v, budget, _depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [json_safe(v, budget, _depth + 1) for v in value]
    return str(value)


@register("markdown", suffixes=(".md", ".markdown", ".mdx", ".mkd", ".mdown"))
def parse(path: Path, data: bytes) -> ParsedDocument:
    """Parse Markdown into heading, paragraph, list, table and code blocks.

    Raises EmptyDocumentError (empty, whitespace only, front matter only), EncodingError,
    UnsupportedFormatError (binary content).
    """
    if not data:
        raise EmptyDocumentError(path, "empty file (0 bytes)")
    source = decode_text(path, data)
    if is_blank(source):
        raise EmptyDocumentError(path, "empty file: only whitespace, no text to index")
    metadata, body = split_front_matter(source)
    tokens = _markdown_it().parse(body)
    builder = TextBuilder()
    first_h1 = _emit(tokens, builder, body.split("\n"))
    if not builder.blocks:
        if metadata is not None:
            raise EmptyDocumentError(path, "front matter only, no content")
        raise EmptyDocumentError(path, "no text to index")
    title = metadata.get("title") if metadata else None
    title = title.strip() if isinstance(title, str) else ""
    return builder.build(
        "markdown", title=title or first_h1 or Path(path).stem, metadata=metadata or {}
    )


def _emit(tokens: list[Token], builder: TextBuilder, source: list[str]) -> str:
    """Add the blocks of a token stream to ``builder``; returns the first H1's text."""
    section: list[tuple[int, str]] = []
    first_h1 = ""
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        path = tuple(text for _, text in section)
        lines = _lines(tok, source)
        if tok.type == "heading_open":
            level = int(tok.tag[1:])
            text = _HEADING_ATTRS_RE.sub("", _inline_text(tokens[i + 1]))
            if text:
                while section and section[-1][0] >= level:
                    section.pop()
                section.append((level, text))
                path = tuple(t for _, t in section)
                builder.add(BlockKind.HEADING, text, section=path, level=level, **lines)
                if level == 1 and not first_h1:
                    first_h1 = text
            i += 3
            continue
        if tok.type == "paragraph_open":
            builder.add(BlockKind.PARAGRAPH, _inline_text(tokens[i + 1]), section=path, **lines)
            i += 3
            continue
        if tok.type in ("bullet_list_open", "ordered_list_open"):
            end = _matching_close(tokens, i)
            builder.add(BlockKind.LIST, _list_text(tokens[i:end]), section=path, **lines)
            i = end + 1
            continue
        if tok.type == "table_open":
            end = _matching_close(tokens, i)
            header, rows = _table(tokens[i:end])
            if rows:
                builder.add(BlockKind.TABLE, rows, section=path, header=header, **lines)
            else:
                builder.add(BlockKind.PARAGRAPH, header, section=path, **lines)
            i = end + 1
            continue
        if tok.type in ("fence", "code_block"):
            builder.add(BlockKind.CODE, collapse_blobs(tok.content), section=path, **lines)
        elif tok.type == "html_block" and not _COMMENT_RE.match(tok.content):
            builder.add(BlockKind.PARAGRAPH, _html.visible_text(tok.content), section=path, **lines)
        i += 1
    return first_h1


def _lines(tok: Token, source: list[str]) -> dict[str, int]:
    """1-based first and last line of a token's source, trailing blank lines excluded."""
    if tok.map is None:
        return {}
    first, last = tok.map[0] + 1, tok.map[1]
    while last > first and not source[last - 1].strip():
        last -= 1
    return {"line_start": first, "line_end": max(first, last)}


def _matching_close(tokens: list[Token], i: int) -> int:
    depth = 0
    for j in range(i, len(tokens)):
        depth += tokens[j].nesting
        if depth == 0:
            return j
    return len(tokens) - 1


def _list_text(tokens: list[Token]) -> str:
    """One line per list item ("- x" or "3. x"), nested items indented two spaces per level."""
    lines: list[str] = []
    kinds: list[tuple[str, int]] = []  # per open list: (marker type, next number)
    item_started = False
    for tok in tokens:
        if tok.type in ("bullet_list_open", "ordered_list_open"):
            kinds.append(("-" if tok.type == "bullet_list_open" else "1", int(tok.attrs.get(
                "start", 1) or 1)))
        elif tok.type in ("bullet_list_close", "ordered_list_close"):
            kinds.pop()
        elif tok.type == "list_item_open":
            item_started = True
        elif tok.type in ("inline", "fence", "code_block", "html_block"):
            if tok.type == "inline":
                text = _inline_text(tok)
            elif tok.type == "html_block":
                text = _html.visible_text(tok.content)
            else:
                text = collapse_blobs(tok.content.rstrip("\n"))
            if not text:
                continue
            indent = "  " * (len(kinds) - 1)
            if item_started and kinds:
                marker, number = kinds[-1]
                if marker == "1":
                    kinds[-1] = (marker, number + 1)
                    prefix = f"{number}. "
                else:
                    prefix = "- "
                item_started = False
            else:
                prefix = "  "
            body = text.replace("\n", "\n" + indent + " " * len(prefix))
            lines.append(indent + prefix + body)
    return "\n".join(lines)


def _table(tokens: list[Token]) -> tuple[str, str]:
    """``(header, rows)`` of a GFM table: cells joined by " | ", rows by newlines."""
    header: list[str] = []
    rows: list[list[str]] = []
    row: list[str] | None = None
    in_head = False
    for tok in tokens:
        if tok.type == "thead_open":
            in_head = True
        elif tok.type == "thead_close":
            in_head = False
        elif tok.type == "tr_open":
            row = []
        elif tok.type == "tr_close" and row is not None:
            if in_head:
                header = row
            elif any(row):
                rows.append(row)
            row = None
        elif tok.type == "inline" and row is not None:
            row.append(_inline_text(tok).replace("\n", " "))
    return " | ".join(header), "\n".join(" | ".join(r) for r in rows)


def _inline_text(tok: Token) -> str:
    """Plain text of an inline token: markup dropped, link URLs in parentheses, images as
    their alt text, HTML comments and hidden inline HTML removed."""
    parts: list[str] = []
    hidden: list[str] = []  # tag names of open hidden elements
    hrefs: list[str | None] = []
    for child in tok.children or []:
        kind = child.type
        if kind == "html_inline":
            _inline_html(child.content, hidden, parts)
            continue
        if hidden:
            continue
        if kind in ("text", "code_inline"):
            parts.append(child.content)
        elif kind in ("softbreak", "hardbreak"):
            parts.append("\n")
        elif kind == "image":
            parts.append(child.content)
        elif kind == "link_open":
            href = str(child.attrs.get("href") or "")
            hrefs.append(href if re.match(r"(?:https?:|mailto:)", href) and len(href) < 300
                         else None)
            parts.append("\x00")  # marks where the link text starts
        elif kind == "link_close" and hrefs:
            target = hrefs.pop()
            start = len(parts) - 1 - parts[::-1].index("\x00")
            label = "".join(parts[start + 1:])
            del parts[start]
            if target and target.removeprefix("mailto:") != label.strip():
                parts.append(f" ({target})")
    text = _SPACES_RE.sub(" ", "".join(parts).replace("\x00", ""))
    return collapse_blobs(text.replace(" \n", "\n").replace("\n ", "\n").strip())


def _inline_html(markup: str, hidden: list[str], parts: list[str]) -> None:
    """Track hidden inline elements (``<span style="display:none">...</span>``)."""
    m = _TAG_RE.match(markup)
    if not m:
        return  # a comment or a processing instruction
    closing, name = m.group(1), m.group(2).lower()
    if closing:
        if hidden and hidden[-1] == name:
            hidden.pop()
        return
    if hidden:
        if name not in _VOID_TAGS and not markup.rstrip().endswith("/>"):
            hidden.append(name)
        return
    if name == "br":
        parts.append("\n")
    elif name not in _VOID_TAGS and not _html.visible_text(markup + "x").strip():
        hidden.append(name)

