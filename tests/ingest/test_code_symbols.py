"""Code chunking by symbol with tree-sitter: exact symbols and line ranges per language, the
fallback to the line splitters, coverage of every line, and the chunks the chunker makes."""

from __future__ import annotations

from pathlib import Path

import pytest
import rich

from citewise.ingest.chunking import chunk_document, embedding_text
from citewise.ingest.parsers import code
from citewise.ingest.parsers.base import parser_for
from citewise.types import ParsedDocument

SAMPLES = Path(__file__).parent / "samples"

Span = tuple[str | None, int, int]

EXPECTED: dict[str, list[Span]] = {
    "cache.py": [
        (None, 1, 2), (None, 4, 4), ("cache_key", 7, 9), ("MetadataCache", 12, 15),
        ("MetadataCache.__init__", 17, 18), ("MetadataCache.size", 20, 22),
        ("MetadataCache.invalidateMetadataRuntime", 24, 26), ("MetadataCache.Stats", 28, 28),
        ("MetadataCache.Stats.reset", 29, 30), ("refresh_all", 33, 34), (None, 37, 38),
    ],
    "retry.js": [
        (None, 1, 1), (None, 3, 3), ("withRetry", 5, 12), ("jitter", 14, 14), ("Queue", 16, 18),
        ("Queue.push", 20, 22), ("Queue.length", 24, 27), (None, 29, 29),
    ],
    "store.ts": [
        (None, 1, 1), ("Store", 3, 6), ("RowId", 8, 8), ("Mode", 10, 10),
        ("MemoryStore", 12, 14), ("MemoryStore.constructor", 16, 16),
        ("MemoryStore.get", 18, 20), ("MemoryStore.put", 22, 25), ("openStore", 27, 27),
        ("closeStore", 29, 31),
    ],
    "Invoice.java": [
        (None, 1, 1), (None, 3, 3), ("Invoice", 5, 7), ("Invoice.Invoice", 9, 11),
        ("Invoice.totalWithTax", 13, 19), ("Invoice.Visitor", 21, 24), ("Currency", 26, 26),
    ],
    "Ledger.cs": [
        (None, 1, 1), (None, 3, 4), ("Ledger", 5, 10), ("Ledger.Post", 12, 17),
        ("Ledger.Ledger", 19, 20), ("IAudit", 22, 26),
    ],
    "server.go": [
        (None, 1, 1), (None, 3, 3), ("Server", 5, 8), (None, 10, 10), ("New", 12, 15),
        ("Server.ServeHTTP", 17, 20), ("Handler", 22, 24),
    ],
    "ring.c": [
        (None, 1, 1), (None, 3, 3), ("ring_area", 5, 9), ("point", 11, 13), (None, 15, 15),
        ("next_id", 17, 17),
    ],
    "shape.cpp": [
        (None, 1, 1), (None, 3, 3), ("Shape", 5, 9), ("Shape.name", 10, 11), ("twice", 13, 18),
        ("geo_area", 20, 22), ("Circle::area", 24, 26),
    ],
}


def parse(path: Path, data: bytes | None = None, **kw: bool) -> ParsedDocument:
    data = path.read_bytes() if data is None else data
    entry = parser_for(path, data)
    assert entry.format == "code"
    return code.parse(path, data, **kw)


def spans(doc: ParsedDocument) -> list[Span]:
    return [(b.symbol, b.line_start, b.line_end) for b in doc.blocks]  # type: ignore[misc]


def assert_covers_every_line(doc: ParsedDocument) -> None:
    """Blocks are in order, do not overlap, match the text, and hold every non-blank line."""
    lines = doc.text.split("\n")
    covered: set[int] = set()
    previous_end = 0
    for block in doc.blocks:
        assert doc.text[block.start:block.end] == block.text
        assert block.line_start is not None and block.line_end is not None
        assert block.line_start > previous_end, (block.symbol, block.line_start)
        previous_end = block.line_end
        covered.update(range(block.line_start, block.line_end + 1))
    missing = [n for n, line in enumerate(lines, start=1) if line.strip() and n not in covered]
    assert missing == []


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_symbols_and_line_ranges_per_language(name: str) -> None:
    doc = parse(SAMPLES / name)
    assert doc.metadata["splitter"] == "tree-sitter"
    assert spans(doc) == EXPECTED[name]
    assert_covers_every_line(doc)


def test_a_block_holds_its_comments_decorators_signature_and_docstring() -> None:
    blocks = {b.symbol: b.text for b in parse(SAMPLES / "cache.py").blocks}
    assert blocks["MetadataCache.invalidateMetadataRuntime"] == (
        "# Drop one entry so the next lookup reloads it.\n"
        "    def invalidateMetadataRuntime(self, key: str) -> None:\n"
        "        self._entries.pop(key, None)")
    assert blocks["MetadataCache.size"].startswith("@property\n    def size(self)")
    assert blocks["MetadataCache"] == ('class MetadataCache:\n    """Keeps table metadata for '
                                       'TTL_SECONDS."""\n\n    hits = 0')
    java = {b.symbol: b.text for b in parse(SAMPLES / "Invoice.java").blocks}
    assert java["Invoice.totalWithTax"].startswith("/**\n     * Total including tax.\n     */\n"
                                                   "    @Override\n")
    cs = {b.symbol: b.text for b in parse(SAMPLES / "Ledger.cs").blocks}
    assert '[Obsolete("use Post(Entry)")]' in cs["Ledger.Post"]


def test_a_trailing_comment_on_a_code_line_stays_with_that_code() -> None:
    source = b"x = 1  # one\ndef f():\n    return x\n"
    assert spans(parse(Path("m.py"), source)) == [(None, 1, 1), ("f", 2, 3)]


def test_tsx_and_shebang_files_use_their_grammar() -> None:
    tsx = b"export function Button(props: Props) {\n  return <b>{props.label}</b>;\n}\n"
    doc = parse(Path("button.tsx"), tsx)
    assert (doc.metadata["splitter"], spans(doc)) == ("tree-sitter", [("Button", 1, 3)])
    script = b"#!/usr/bin/env python3\nimport sys\n\n\ndef main():\n    return 0\n"
    doc = parse(Path("tool"), script)
    assert (doc.metadata["splitter"], spans(doc)) == ("tree-sitter", [(None, 1, 2), ("main", 5, 6)])


def test_long_function_is_cut_between_statements(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(code, "MAX_BLOCK_LINES", 5)
    source = b"""def long(items):
    total = 0
    for item in items:
        total += item
        total *= 2
    if total > 10:
        return total
    return (
        total
        + 1
    )
"""
    # statements start on lines 2, 3, 6, 8; pieces end before the last start that fits
    assert spans(parse(Path("long.py"), source)) == [
        ("long", 1, 5), ("long", 6, 7), ("long", 8, 11)]


def test_long_interface_is_split_by_member_and_short_one_is_whole(
        monkeypatch: pytest.MonkeyPatch) -> None:
    source = b"""interface Repo {
    void save(Row row);

    default Row load(String id) {
        return null;
    }
}
"""
    assert spans(parse(Path("Repo.java"), source)) == [("Repo", 1, 7)]
    monkeypatch.setattr(code, "MAX_BLOCK_LINES", 4)
    assert spans(parse(Path("Repo.java"), source)) == [("Repo", 1, 2), ("Repo.load", 4, 7)]


def test_syntax_error_falls_back_to_the_line_splitters() -> None:
    broken = b"class Broken {\n  void f() {\n    return;\n  }\n\n  int x = ;;; }}\n"
    doc = parse(Path("Broken.java"), broken)
    assert doc.metadata["splitter"] == "lines"
    assert_covers_every_line(doc)
    assert "int x" in doc.blocks[-1].text


def test_legacy_splitter_can_be_chosen() -> None:
    doc = parse(SAMPLES / "cache.py", tree_sitter=False)
    assert doc.metadata["splitter"] == "lines"
    # the ast splitter keeps a class that fits MAX_BLOCK_LINES whole
    assert ("MetadataCache", 12, 30) in spans(doc)


def test_rust_and_build_files_keep_the_line_splitters() -> None:
    rust = parse(Path("lib.rs"), b"fn main() {\n    run();\n}\n")
    assert (rust.metadata["splitter"], spans(rust)) == ("lines", [("main", 1, 3)])
    make = parse(Path("Makefile"), b"all: build\n\tcc -o app main.c\n")
    assert spans(make) == [("all", 1, 2)]


@pytest.mark.parametrize("module", ["console.py", "progress.py", "table.py", "text.py"])
def test_real_library_files_are_covered_line_by_line(module: str) -> None:
    """rich (a dependency) is real, large Python: nothing is dropped or overlaps."""
    path = Path(rich.__file__).parent / module
    doc = parse(path)
    assert doc.metadata["splitter"] == "tree-sitter"
    assert_covers_every_line(doc)
    assert all(b.line_end - b.line_start < code.MAX_BLOCK_LINES for b in doc.blocks)  # type: ignore[operator]
    assert sum(1 for b in doc.blocks if b.symbol and "." in b.symbol) > 10


def test_each_symbol_is_its_own_chunk_and_long_ones_keep_their_symbol(embedder) -> None:
    doc = parse(SAMPLES / "cache.py")
    chunks = chunk_document("d", doc, embedder.count_tokens, max_tokens=200)
    named = [(c.symbol, c.line_start, c.line_end) for c in chunks if c.symbol]
    assert named == [s for s in EXPECTED["cache.py"] if s[0]]
    # the module docstring/import and the constant are packed into one unnamed chunk
    assert [(c.line_start, c.line_end) for c in chunks if not c.symbol] == [(1, 4), (37, 38)]
    method = next(c for c in chunks if c.symbol == "MetadataCache.invalidateMetadataRuntime")
    assert embedding_text("cache", method).startswith(
        "cache > MetadataCache.invalidateMetadataRuntime\n# Drop one entry")

    body = "\n".join(f"    value_{i} = compute_something_long({i}, factor={i * 3})"
                     for i in range(40))
    long = parse(Path("big.py"), f"def big():\n{body}\n".encode())
    pieces = chunk_document("d", long, embedder.count_tokens, max_tokens=64)
    assert len(pieces) > 2
    assert {c.symbol for c in pieces} == {"big"}
    assert pieces[0].line_start == 1 and pieces[-1].line_end == 41
