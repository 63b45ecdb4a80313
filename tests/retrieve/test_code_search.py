"""Code over the real SQLite index: identifiers are found by their words, and code citations
read ``path:start-end, symbol``."""

from __future__ import annotations

from pathlib import Path

import pytest

from citewise.answer.answerer import to_evidence
from citewise.types import Citation

SAMPLES = Path(__file__).resolve().parents[1] / "ingest" / "samples"
TARGET = "MetadataCache.invalidateMetadataRuntime"


@pytest.fixture
def code_engine(engine):
    report = engine.ingest([SAMPLES])
    assert report.count("added") == 8, report.files
    return engine


@pytest.mark.parametrize("query", [
    "invalidateMetadataRuntime",
    "invalidate metadata runtime",
    "cache.invalidateMetadataRuntime()",
    "Invalidate the metadata at runtime",
])
def test_bm25_finds_an_identifier_by_itself_and_by_its_words(code_engine, query):
    hits = code_engine.search(query, mode="sparse", top_k=3, per_file=3, min_score=0.0).hits
    assert hits[0].chunk.symbol == TARGET
    assert hits[0].sparse > 0


def test_snake_case_and_dotted_queries_meet_in_bm25(code_engine):
    for query in ("cache key", "cache_key", "MetadataCache.Stats.reset", "stats reset"):
        hits = code_engine.search(query, mode="sparse", top_k=1, per_file=1, min_score=0.0).hits
        assert hits[0].chunk.symbol == {"cache key": "cache_key", "cache_key": "cache_key"}.get(
            query, "MetadataCache.Stats.reset"), query


def test_code_citation_reads_path_lines_and_symbol(code_engine):
    hits = code_engine.search("invalidate metadata runtime", mode="sparse", top_k=1,
                              min_score=0.0).hits
    citation = to_evidence(hits)[0].citation
    assert citation.format == "code"
    assert citation.location == f"samples/cache.py:24-26, {TARGET}"
    go = code_engine.search("ServeHTTP answers every request", mode="sparse", top_k=1,
                            min_score=0.0).hits
    assert to_evidence(go)[0].citation.location == "samples/server.go:17-20, Server.ServeHTTP"


def test_code_citation_without_symbol_and_other_formats_unchanged():
    base = {"n": 1, "chunk_id": "c", "document_id": "d", "title": "t", "char_start": 0,
            "char_end": 5, "score": 1.0}
    module_code = Citation(path="src/app.py", section=(), page=None, line_start=3, line_end=7,
                           format="code", **base)
    assert module_code.location == "src/app.py:3-7"
    text = Citation(path="notes.txt", section=(), page=None, line_start=2, line_end=4,
                    format="text", **base)
    assert text.location == "notes.txt, lines 2-4"
    pdf = Citation(path="a.pdf", section=("Terms", "Fees"), page=3, line_start=None,
                   line_end=None, format="pdf", **base)
    assert pdf.location == "a.pdf, p. 3, Terms > Fees"
    markdown = Citation(path="docs/x.md", section=("Install",), page=None, line_start=5,
                        line_end=9, format="markdown", symbol=None, **base)
    assert markdown.location == "docs/x.md, lines 5-9, Install"
