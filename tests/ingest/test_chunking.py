import regex

from citewise.ingest.chunking import chunk_document, embedding_text
from citewise.ingest.parsers.base import TextBuilder
from citewise.types import BlockKind


def build(*blocks):
    b = TextBuilder()
    for kind, text, fields in blocks:
        b.add(kind, text, **fields)
    return b.build("test", title="Doc")


def test_chunks_never_exceed_the_token_limit(embedder):
    long = " ".join(f"Sentence number {i} talks about topic {i % 7}." for i in range(400))
    parsed = build((BlockKind.PARAGRAPH, long, {}))
    chunks = chunk_document("d", parsed, embedder.count_tokens, max_tokens=100, overlap=20)
    assert len(chunks) > 5
    for c in chunks:
        assert embedder.count_tokens(c.text) <= 100
        assert parsed.text[c.char_start:c.char_start + 15] == c.text[:15]
    assert "Sentence number 399" in chunks[-1].text


def test_split_pieces_overlap(embedder):
    long = " ".join(f"Fact {i} is here." for i in range(200))
    chunks = chunk_document("d", build((BlockKind.PARAGRAPH, long, {})), embedder.count_tokens,
                            max_tokens=60, overlap=15)
    first_of_second = chunks[1].text.split(".")[0]
    assert first_of_second in chunks[0].text


def test_text_without_separators_is_hard_split_at_graphemes(embedder):
    family = "👨‍👩‍👧‍👦"
    parsed = build((BlockKind.PARAGRAPH, "1" * 5000 + family * 300 + " the backup runs at 23:15", {}))
    chunks = chunk_document("d", parsed, embedder.count_tokens, max_tokens=64, overlap=0)
    assert all(embedder.count_tokens(c.text) <= 64 for c in chunks)
    assert any("23:15" in c.text for c in chunks)
    for c in chunks:  # no chunk holds a piece of a ZWJ family
        rest = c.text.replace(family, "")
        assert not set(rest) & set(family), c.text[:40]


def test_table_chunks_repeat_the_header_and_keep_rows_whole(embedder):
    header = "Employee ID | Full name | Department"
    rows = "\n".join(f"E{i:04d} | Person {i} | Dept {i % 5}" for i in range(300))
    parsed = build((BlockKind.HEADING, "Staff", {"section": ("Staff",)}),
                   (BlockKind.TABLE, header + "\n" + rows, {"header": header, "section": ("Staff",)}))
    chunks = chunk_document("d", parsed, embedder.count_tokens, max_tokens=120, overlap=10)
    table_chunks = [c for c in chunks if "E0" in c.text]
    assert len(table_chunks) > 3
    seen = []
    for c in table_chunks:
        lines = c.text.split("\n")
        start = lines.index(header)
        assert all(regex.fullmatch(r"E\d{4} \| Person \d+ \| Dept \d", ln) for ln in lines[start + 1:])
        seen += lines[start + 1:]
    assert seen == rows.split("\n")


def test_headings_start_chunks_and_set_the_section(embedder):
    parsed = build(
        (BlockKind.HEADING, "Install", {"section": ("Install",)}),
        (BlockKind.PARAGRAPH, "Run pip install.", {"section": ("Install",)}),
        (BlockKind.HEADING, "Configure", {"section": ("Configure",)}),
        (BlockKind.PARAGRAPH, "Set CITEWISE_HOME.", {"section": ("Configure",)}),
    )
    chunks = chunk_document("d", parsed, embedder.count_tokens, max_tokens=200)
    assert [c.section for c in chunks] == [("Install",), ("Configure",)]
    assert chunks[1].text == "Configure\nSet CITEWISE_HOME."
    assert chunks[1].source_text == parsed.text[chunks[1].char_start:chunks[1].char_end]
    assert embedding_text("Doc", chunks[1]).startswith("Doc > Configure\n")


def test_code_symbols_are_separate_chunks(embedder):
    parsed = build(
        (BlockKind.CODE, "def a():\n    return 1", {"symbol": "a", "line_start": 1, "line_end": 2}),
        (BlockKind.CODE, "def b():\n    return 2", {"symbol": "b", "line_start": 4, "line_end": 5}),
    )
    chunks = chunk_document("d", parsed, embedder.count_tokens, max_tokens=200)
    assert [(c.symbol, c.line_start, c.line_end) for c in chunks] == [("a", 1, 2), ("b", 4, 5)]


def test_hard_wrapped_prose_stays_one_sentence():
    from citewise.ingest.chunking import sentences

    text = ("The kettle warranty lasts two years for buyers living in\nGermany and three years "
            "elsewhere. Returns take 30 days.\nOpening hours\nMonday: 9-17")
    assert sentences(text) == [
        ("The kettle warranty lasts two years for buyers living in\nGermany and three years "
         "elsewhere."),
        "Returns take 30 days.",
        "Opening hours",
        "Monday: 9-17",
    ]


def test_no_chunk_is_a_heading_alone(embedder):
    """Regression: a heading over a list too long to share its chunk became a chunk of its
    own ("How many results: top_k, per_file and min_score", no text), which retrieval ranked
    first for "What is the default top_k?" while the list item holding the answer came
    second. A title directly over a subheading is the same case."""
    items = "\n".join(f"- `setting_{i}` (default {i}) is one of the settings of this list."
                      for i in range(40))
    parsed = build(
        (BlockKind.HEADING, "Config", {"section": ("Config",)}),
        (BlockKind.HEADING, "How many results", {"section": ("Config", "How many results")}),
        (BlockKind.LIST, items, {"section": ("Config", "How many results")}),
    )
    chunks = chunk_document("d", parsed, embedder.count_tokens, max_tokens=120)
    assert len(chunks) > 2
    assert all("default" in c.text for c in chunks)
    assert chunks[0].section == ("Config", "How many results")
    assert "`setting_0` (default 0)" in chunks[0].text


def test_a_small_table_chunk_starts_with_its_header(make_engine, tmp_path):
    """Regression: a Markdown table short enough for one chunk was chunked without its
    header row (only split tables repeated it), so the answer's sentence selection took the
    first data row for the header: "citewise ingest PATH...: citewise eval beir PATH; Add or
    update files...: Measure retrieval quality..." (docs/cli.md, found by a newcomer)."""
    from citewise.answer.answerer import to_evidence
    from citewise.answer.selection import candidates

    (tmp_path / "cli.md").write_text(
        "# Commands\n\nThe commands.\n\n| Command | What it does |\n| --- | --- |\n"
        "| `ingest PATH` | Add files to the index. |\n| `ask QUESTION` | Answer a question. |\n",
        encoding="utf-8")
    engine = make_engine()
    engine.ingest([tmp_path / "cli.md"])
    doc = engine.store.documents()[0]
    table = next(c for c in engine.store.chunks_of(doc.id) if "ingest PATH" in c.text)
    assert table.text.split("\n")[0] == "Command | What it does"
    hits = engine.search("What does ask do?").hits
    rows = [c.text for ev in to_evidence(hits) if "ingest PATH" in ev.chunk.text
            for c in candidates(ev, 0)]
    assert rows == ["Command: ingest PATH; What it does: Add files to the index.",
                    "Command: ask QUESTION; What it does: Answer a question."]
