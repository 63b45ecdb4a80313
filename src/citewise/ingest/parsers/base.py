"""The parser contract, the registry that maps files to parsers, and a text builder.

A parser is a callable ``parse(path, data) -> ParsedDocument``. ``path`` is only used for
messages and format hints; the content is ``data`` (the file's bytes). A parser raises a
:class:`~citewise.errors.DocumentError` subclass naming the path when a file cannot be indexed,
and never returns a document without blocks.

Parsers register themselves with :func:`register` by format name, suffixes and an optional
content sniffer, the way third-party parsers would; :func:`parser_for` picks one by content
first (magic bytes), then suffix, then falls back to text for anything that decodes as text.

What a parse may do beyond reading the bytes (OCR of image-only pages, a page limit, page
progress) is a :class:`ParseOptions`, set for the calls inside ``with parse_options(...)``
(a context variable, so concurrent parses in other threads keep their own).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from citewise.types import Block, BlockKind, ParsedDocument


@dataclass(frozen=True)
class ParseOptions:
    """Settings a parser may use. ``ocr``: an engine with ``read(image) -> lines`` (see
    :mod:`citewise.ingest.ocr`) that reads image-only PDF pages, None = off; ``ocr_dpi``: the
    resolution pages are rendered at for it; ``max_pages``: a document with more pages is
    refused before any page is read (0 = no limit); ``page_progress(page, pages)``: called
    after each page of a paged document."""

    ocr: Any = None
    ocr_dpi: int = 100
    max_pages: int = 0
    page_progress: Callable[[int, int], None] | None = None


_OPTIONS: ContextVar[ParseOptions | None] = ContextVar("citewise_parse_options", default=None)
_DEFAULT = ParseOptions()


def current_options() -> ParseOptions:
    """The options of the parse running in this context (defaults outside any)."""
    return _OPTIONS.get() or _DEFAULT


@contextmanager
def parse_options(options: ParseOptions) -> Iterator[ParseOptions]:
    """Parses inside this block (in this thread or task) use ``options``."""
    token = _OPTIONS.set(options)
    try:
        yield options
    finally:
        _OPTIONS.reset(token)


class Parser(Protocol):
    def __call__(self, path: Path, data: bytes) -> ParsedDocument: ...


@dataclass(frozen=True)
class ParserEntry:
    format: str
    parse: Parser
    suffixes: tuple[str, ...]
    sniff: Callable[[bytes], bool] | None = None


_REGISTRY: dict[str, ParserEntry] = {}


def register(
    format: str,
    suffixes: Iterable[str],
    sniff: Callable[[bytes], bool] | None = None,
) -> Callable[[Parser], Parser]:
    """Decorator registering ``parse`` for ``format``; suffixes are lower-case with the dot
    (an entry without a dot, such as ``"makefile"``, matches a whole file name)."""

    def deco(parse: Parser) -> Parser:
        _REGISTRY[format] = ParserEntry(format, parse, tuple(suffixes), sniff)
        return parse

    return deco


def registered() -> dict[str, ParserEntry]:
    _load_builtins()
    return dict(_REGISTRY)


def parser_for(path: Path, data: bytes) -> ParserEntry:
    """The parser for a file: a content sniffer that matches wins, then the suffix, then text."""
    _load_builtins()
    for entry in _REGISTRY.values():
        if entry.sniff is not None and entry.sniff(data):
            return entry
    suffix = path.suffix.lower()
    for entry in _REGISTRY.values():
        if suffix in entry.suffixes:
            return entry
    name = path.name.lower()  # entries without a dot are whole file names ("makefile")
    for entry in _REGISTRY.values():
        if name in entry.suffixes:
            return entry
    return _REGISTRY["text"]


_loaded = False


def _load_builtins() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    from citewise.ingest.parsers import (  # noqa: F401  (registration side effect)
        code,
        docx,
        eml,
        epub,
        html,
        markdown,
        pdf,
        pptx,
        text,
        xlsx,
    )


class TextBuilder:
    """Accumulates blocks and the document text they index, computing character offsets.

    Blocks are joined by a blank line, so ``text[block.start:block.end] == block.text``.
    """

    SEPARATOR = "\n\n"

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._pos = 0
        self.blocks: list[Block] = []

    def add(self, kind: BlockKind, text: str, **fields: Any) -> Block | None:
        """Append a block; whitespace-only text is skipped (returns None)."""
        text = text.strip()
        if not text:
            return None
        if self._parts:
            self._parts.append(self.SEPARATOR)
            self._pos += len(self.SEPARATOR)
        block = Block(kind=kind, text=text, start=self._pos, end=self._pos + len(text), **fields)
        self._parts.append(text)
        self._pos += len(text)
        self.blocks.append(block)
        return block

    def extend(self, blocks: Iterable[Block], section: tuple[str, ...] = (),
               page: int | None = None) -> None:
        """Append copies of ``blocks`` (parsed elsewhere: an e-mail's attachment, an e-book's
        chapter) with ``section`` put before each one's own section path (unless that path
        already starts with it) and, when given, ``page`` for blocks without one; offsets,
        including ``page_starts``, are moved to this builder's text."""
        for b in blocks:
            path = b.section if b.section[:len(section)] == section else (*section, *b.section)
            added = self.add(b.kind, b.text, section=path,
                             page=b.page if b.page is not None else page,
                             line_start=b.line_start, line_end=b.line_end, header=b.header,
                             symbol=b.symbol, level=b.level)
            if added is not None and b.page_starts:
                shift = added.start - b.start - (len(b.text) - len(b.text.lstrip()))
                self.blocks[-1] = replace(added, page_starts=tuple(
                    (offset + shift, number) for offset, number in b.page_starts))

    def build(self, format: str, **fields: Any) -> ParsedDocument:
        return ParsedDocument(
            text="".join(self._parts), blocks=tuple(self.blocks), format=format, **fields
        )


def split_keywords(value: str) -> list[str]:
    """A keywords property as a list: ``"hr, policy; leave"`` -> ``["hr", "policy", "leave"]``."""
    return [k.strip() for k in value.replace(";", ",").split(",") if k.strip()]
