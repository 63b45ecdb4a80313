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


def test_focus_span_places_a_citation_inside_the_cited_part():
    from citewise.api.routes.sources import focus_span

    span = (13, 69)  # the chunk starts at document offset 100, at source_text[13]
    assert focus_span(span, 100, 114, 150) == (27, 63)
    assert focus_span(span, 100, 100, 156) == (13, 69)  # the whole part
    assert focus_span(span, 100, 99, 150) is None  # starts before the part
    assert focus_span(span, 100, 114, 157) is None  # ends after it
    assert focus_span(span, 100, 150, 150) is None
    assert focus_span(None, 100, 114, 150) is None
    assert focus_span(span, 100, None, 150) is None
