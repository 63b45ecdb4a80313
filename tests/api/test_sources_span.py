"""The cited part of a source, located in its ``source_text`` for the viewer's highlight."""

from __future__ import annotations

import httpx

from citewise.api.routes.sources import cited_span
from tests.api.conftest import LiveServer


def test_cited_span_starts_at_the_first_line_and_spans_the_cited_length():
    source = "Intro line.\n\n## Batteries\n\nBatteries are covered for 12 months only.\n"
    text = "## Batteries\nBatteries are covered for 12 months only."
    assert cited_span(source, text, 56) == (13, 69)
    assert source[13:69] == "## Batteries\n\nBatteries are covered for 12 months only.\n"
    assert cited_span(source, text, 500) == (13, len(source))  # cut at the end


def test_cited_span_none_when_not_found_or_untrustworthy():
    assert cited_span("abc def", "xyz", 3) is None
    assert cited_span("a b c", "a", 1) is None  # a one-character line matches anywhere
    assert cited_span("abc def", "   \n", 3) is None
    assert cited_span("abc def", "abc", 0) is None


def test_source_detail_carries_the_span(make_app, docs_dir):
    app, engine = make_app(ingest=[docs_dir])
    with LiveServer(app) as server, httpx.Client(base_url=server.url) as c:
        hit = engine.search("batteries covered", top_k=1).hits[0]
        d = c.get(f"/api/sources/{hit.chunk_id}").json()
    cited = d["source_text"][d["span_start"]:d["span_end"]]
    assert d["span_end"] - d["span_start"] == d["char_end"] - d["char_start"]
    assert cited.startswith(hit.chunk.text.splitlines()[0])
    assert "Batteries are covered for 12 months only." in cited
