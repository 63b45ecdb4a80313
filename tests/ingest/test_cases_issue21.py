"""Issue 21's ingestion cases (../shared/cases/CASES.md): pages, numbering, forms, tables
across pages, reranker windows, duplicates. Each test reads the case's real file and checks
the value the case expects, through the real parsers, chunker, store and models."""

from __future__ import annotations

import re

import pytest

from citewise.ingest.chunking import chunk_document
from citewise.ingest.parsers.base import parser_for
from citewise.types import ParsedDocument
from tests.conftest import CASES

if not CASES.is_dir():  # pragma: no cover - CI lays shared/ beside the repository
    pytest.skip(f"case files not found at {CASES}", allow_module_level=True)


def parse(relative: str) -> ParsedDocument:
    path = CASES / relative
    data = path.read_bytes()
    return parser_for(path, data).parse(path, data)


def cited(answer, text: str):
    """The citation whose number follows ``text`` in the answer."""
    pos = answer.text.find(text)
    assert pos >= 0, f"{text!r} not in answer: {answer.text!r}"
    n = int(re.search(r"\[(\d+)\]", answer.text[pos:]).group(1))
    return answer.citations[n - 1]


# --- C30: the cited page is the page of the cited sentence, with printed labels --------------

C30 = "c30_pages/vehicle_care_manual.pdf"


def test_c30_pdf_page_labels_are_recorded() -> None:
    doc = parse(C30)
    assert doc.metadata["page_labels"] == ["i", "ii", "1", "2", "3", "4", "5"]


def test_c30_pdf_without_page_labels_records_none() -> None:
    assert "page_labels" not in parse("c05_big_table/staff_directory.pdf").metadata


def test_c30_chunk_spanning_pages_knows_where_each_page_starts(embedder) -> None:
    doc = parse(C30)
    chunks = chunk_document("d", doc, embedder.count_tokens, 200, 20)
    fact = doc.text.index("Tighten the wheel bolts")
    chunk = next(c for c in chunks if c.char_start <= fact < c.char_end)
    assert (chunk.page, chunk.page_end) == (4, 5)  # it starts on page 4 and runs into page 5
    assert chunk.page_at(fact) == 5
    assert chunk.page_at(chunk.char_start) == 4
    assert [p for _, p in chunk.page_starts] == [4, 5]
    assert all(c.page_starts == () for c in chunks if c.page == c.page_end)


def test_c30_citation_names_the_page_of_the_sentence_as_printed(engine) -> None:
    engine.ingest([CASES / C30])
    # the page starts survive the store
    stored = [c for d in engine.store.documents() for c in engine.store.chunks_of(d.id)]
    assert any(c.page_starts and c.page == 4 and c.page_end == 5 for c in stored)
    answer = engine.ask("What torque should the wheel bolts be tightened to?")
    assert "120 N m" in answer.text
    citation = cited(answer, "120 N m")
    assert citation.page == 5  # 1-based physical page, never the chunk's start page 4
    assert citation.page_label == "3"
    assert "p. 3 (PDF page 5)" in citation.location


# --- N06: DOCX automatic numbering carries its rendered numbers ------------------------------

N06 = "n06_docx_numbering/supply_agreement.docx"


def test_n06_docx_clauses_carry_their_rendered_numbers() -> None:
    doc = parse(N06)
    text = doc.text
    assert "4.2 The Supplier shall give 60 days' written notice of any price change." in text
    assert "9.1 Either party may terminate for convenience with 90 days' written notice." in text
    assert "10.2 Courts of Hamburg have exclusive jurisdiction." in text
    assert "11.1 Notices must be sent by e-mail" in text  # typed by hand, kept as typed
    assert "- The Supplier" not in text  # no bullet in place of the number
    # a numbered clause title with sub-clauses is a heading: citations name the clause
    prices = next(b for b in doc.blocks if "4.2 The Supplier" in b.text)
    assert prices.section[-1] == "4. Prices"
    assert [b.text for b in doc.blocks if b.kind.value == "heading"][1:4] == [
        "1. Definitions", "2. Orders", "3. Delivery"]


def test_n06_bm25_finds_clause_4_2_and_the_citation_names_it(engine) -> None:
    engine.ingest([CASES / N06])
    hits = engine.search("4.2", mode="sparse").hits
    assert hits and "4.2 The Supplier" in hits[0].chunk.text
    answer = engine.ask("What does clause 4.2 say?")
    assert "60 days' written notice" in answer.text
    citation = cited(answer, "60 days")
    assert "4. Prices" in citation.location
    answer = engine.ask("Which clause allows termination for convenience, and with what notice?")
    assert "9.1" in answer.text and "90 days" in answer.text
    answer = engine.ask("What is in clause 11.1?")
    assert "legal@kestrel.example" in answer.text


def _numbering(xml: str):
    from docx.oxml import parse_xml

    from citewise.ingest.parsers._docx_numbering import Numbering

    w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    return Numbering(parse_xml(f"<w:numbering {w}>{xml}</w:numbering>"), {}), w


def _p(w: str, num_id: str, ilvl: int):
    from docx.oxml import parse_xml

    return parse_xml(f'<w:p {w}><w:pPr><w:numPr><w:ilvl w:val="{ilvl}"/>'
                     f'<w:numId w:val="{num_id}"/></w:numPr></w:pPr></w:p>')


_LEVELS = (
    '<w:abstractNum w:abstractNumId="1">'
    '<w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="upperRoman"/>'
    '<w:lvlText w:val="%1."/></w:lvl>'
    '<w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="lowerLetter"/>'
    '<w:lvlText w:val="(%2)"/></w:lvl>'
    '<w:lvl w:ilvl="2"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:isLgl/>'
    '<w:lvlText w:val="%1.%2.%3"/></w:lvl>'
    '</w:abstractNum>'
    '<w:abstractNum w:abstractNumId="2"><w:lvl w:ilvl="0"><w:numFmt w:val="bullet"/>'
    '<w:lvlText w:val="•"/></w:lvl></w:abstractNum>'
    '<w:num w:numId="5"><w:abstractNumId w:val="1"/></w:num>'
    '<w:num w:numId="6"><w:abstractNumId w:val="1"/></w:num>'
    '<w:num w:numId="7"><w:abstractNumId w:val="1"/>'
    '<w:lvlOverride w:ilvl="0"><w:startOverride w:val="1"/></w:lvlOverride></w:num>'
    '<w:num w:numId="8"><w:abstractNumId w:val="2"/></w:num>'
)


def test_n06_word_numbering_levels_restarts_and_formats() -> None:
    numbering, w = _numbering(_LEVELS)
    seq = [("5", 0), ("5", 1), ("5", 1), ("5", 2), ("5", 0), ("5", 1), ("5", 2),
           ("6", 0),  # another instance of the same list continues it
           ("7", 0), ("7", 1),  # an instance with a start override restarts it
           ("8", 0), ("0", 0)]  # a bullet; numId 0 is no numbering
    labels = [numbering.label(_p(w, n, lvl), None) for n, lvl in seq]
    assert [lb.number if lb else None for lb in labels] == [
        "I.", "(a)", "(b)", "1.2.1", "II.", "(a)", "2.1.1", "III.", "I.", "(a)", "", None]
    assert labels[-2].bullet and not labels[0].bullet


# --- N11: a table row broken by a page break is rejoined -------------------------------------

N11 = "r3_table_page_break/release_matrix.pdf"
F044 = "Archive outbound e-mails to the compliance mailbox with a blind copy (F-044) | No"


def test_n11_row_broken_by_the_page_break_is_one_row_of_one_table() -> None:
    doc = parse(N11)
    tables = [b for b in doc.blocks if b.kind.value == "table"]
    assert len(tables) == 1  # the part on page 2 continues the table, its header kept
    table = tables[0]
    assert table.header == "Feature | Enabled by default"
    rows = table.text.split("\n")
    assert F044 in rows
    assert rows[-1] == "Feature F-045 routine toggle | Yes"
    assert (table.page, [p for _, p in table.page_starts]) == (1, [2])
    assert doc.text[table.page_starts[0][0]:].startswith("mailbox with a blind copy")


def test_n11_answer_reads_the_whole_row_and_cites_both_pages(engine, embedder) -> None:
    doc = parse(N11)
    chunks = chunk_document("d", doc, embedder.count_tokens, 120, 10)
    row_chunk = next(c for c in chunks if F044 in c.text)
    assert row_chunk.text.startswith("Feature | Enabled by default")  # header repeated
    engine.ingest([CASES / N11])
    answer = engine.ask(
        "Is archiving outbound e-mails to the compliance mailbox enabled by default?")
    assert "F-044" in answer.text and "No" in answer.text
    citation = cited(answer, "F-044")
    assert (citation.page, citation.page_end) == (1, 2)
    assert "pp. 1-2" in citation.location


def test_n11_repeated_header_and_page_number_footer_between_the_parts() -> None:
    from citewise.ingest.parsers._pdf_layout import Item
    from citewise.ingest.parsers.pdf import _continue, _Entry

    held = [_Entry(Item("table", "A1 | 1\nA2 | 2", header="Name | Value"), 3),
            _Entry(Item("paragraph", "- 3 -"), 3)]
    page = [_Entry(Item("paragraph", "Page 4 of 9"), 4),
            _Entry(Item("table", "A3 | 3", header="Name | Value"), 4),
            _Entry(Item("paragraph", "After the table."), 4)]
    merged = _continue(held, page)
    assert merged is not None and merged[0].item.text == "A1 | 1\nA2 | 2\nA3 | 3"
    assert [e.item.text for e in merged[1:]] == ["- 3 -", "Page 4 of 9", "After the table."]
    assert merged[0].continued == [(len("A1 | 1\nA2 | 2\n"), 4, "A3 | 3")]
    other = [_Entry(Item("table", "x | y | z", header="P | Q | R"), 4)]
    assert _continue(held, other) is None  # another table (other columns) starts there


# --- C40: the reranker scores long passages by windows and says so ----------------------------

C40 = "c40_rerank/facilities_log.md"
DOOR = "What is the server room door code?"


@pytest.fixture(scope="module")
def bundled_reranker():
    from citewise.retrieve.rerank import load_reranker

    return load_reranker("bundled")


def test_c40_long_chunk_is_scored_by_windows_and_logged(make_engine, bundled_reranker,
                                                        caplog) -> None:
    """Chunk size 480 (the default), so chunks are 200-216 embedder tokens while the shipped
    reranker reads 192: the fact closing a chunk used to be cut off before scoring."""
    import logging

    from citewise.retrieve import rerank
    from citewise.retrieve.rerank import passage_text

    engine = make_engine(reranker_model="bundled", parts={"reranker": bundled_reranker})
    engine.ingest([CASES / C40])
    doc = engine.store.documents()[0]
    chunk = next(c for c in engine.store.chunks_of(doc.id) if "7719" in c.text)
    passage = passage_text(doc.title, chunk.section, chunk.text)
    tok = bundled_reranker.tokenizer
    assert len(tok.encode(DOOR, passage).ids) == bundled_reranker.max_length  # it is cut
    head = passage[:passage.index("The server room door code")]  # what the model used to see
    getattr(rerank, "_WARNED", set()).discard(bundled_reranker.name)  # warn again
    with caplog.at_level(logging.WARNING, logger="citewise.retrieve.rerank"):
        whole, cut_off = bundled_reranker.score(DOOR, [passage, head])
    assert whole > cut_off + 1.0  # the window holding the fact counts
    assert any("windows" in r.getMessage() and "192" in r.getMessage() for r in caplog.records)
    answer = engine.ask(DOOR)
    assert "7719" in answer.text and "1 March" in answer.text


def test_c40_windows_cover_the_whole_passage_and_cut_is_logged(bundled_reranker,
                                                                caplog) -> None:
    import logging

    from citewise.retrieve.rerank import MAX_WINDOWS, passage_windows

    text = (CASES / C40).read_text(encoding="utf-8")
    offsets = bundled_reranker._offsets
    short, long_ = "Title\nA short passage.", "Log > Notes\n" + text[:3000]
    texts, owner, cut = passage_windows(10, [short, long_], offsets, 192)
    assert texts[0] == short and owner[0] == 0 and cut == 0
    windows = [t for t, o in zip(texts, owner, strict=True) if o == 1]
    assert len(windows) > 1 and all(w.startswith("Log > Notes\n") for w in windows)
    assert all(len(offsets(w)) <= 192 - 3 - 10 for w in windows)
    assert windows[-1].endswith(text[:3000].rstrip()[-20:])  # the end is read
    texts, owner, cut = passage_windows(10, [text * 2], offsets, 192)
    assert cut == 1 and len(texts) == MAX_WINDOWS
    with caplog.at_level(logging.WARNING, logger="citewise.retrieve.rerank"):
        bundled_reranker.score(DOOR, [text * 2])
    assert any("truncated" in r.getMessage() for r in caplog.records)


# --- C19: duplicates collapse into one source; differing versions both appear ----------------

LEAVE = "How many days of annual leave do full-time employees get?"


def test_c19_duplicates_are_one_source_listing_every_file(engine) -> None:
    engine.ingest([CASES / "c19_duplicates"])
    hits = engine.search(LEAVE, top_k=3).hits
    texts = [h.chunk.text for h in hits]
    assert len(texts) == len(set(texts))  # no passage twice
    seven = next(h for h in hits if "27 days" in h.chunk.text)
    files = {seven.document.path, *(d.path for d in seven.duplicates)}
    assert files == {"c19_duplicates/leave_policy.pdf", "c19_duplicates/leave_policy (1).pdf",
                     "c19_duplicates/archive/leave_policy.pdf",
                     "c19_duplicates/leave_policy.docx"}  # the DOCX: same text, other format
    assert any("28 days" in t for t in texts)  # the other version is not pushed out
    answer = engine.ask(LEAVE)
    assert "27 days" in answer.text and "28 days" in answer.text
    paths = [c.path for c in answer.citations]
    assert len(paths) == len(set(paths))  # citations are not repeated
    seven_cite = cited(answer, "27 days")
    assert len(seven_cite.also_in) == 3 and "same text in" in seven_cite.location
    assert cited(answer, "28 days").path == "c19_duplicates/leave_policy_v2.pdf"


def test_c19_near_duplicate_rule() -> None:
    from citewise.retrieve.retriever import near_duplicate, passage_key

    pdf = "Annual leave policy\nFull-time employees receive 27 days of paid annual leave."
    docx = "Annual leave policy\n\n• Full-time employees receive 27 days of paid\nannual leave"
    assert passage_key(pdf) == passage_key(docx)
    assert near_duplicate(passage_key(pdf), passage_key(docx + "\n- 1 -"))  # plus a footer
    assert not near_duplicate(passage_key(pdf), passage_key(pdf.replace("27", "28")))
    assert not near_duplicate(passage_key("Annual leave policy"), passage_key(pdf))


# --- N07: PDF form field values beside their labels -------------------------------------------

N07 = "n07_pdf_form/insurance_application_filled.pdf"


def test_n07_form_values_and_checkbox_state_beside_their_labels() -> None:
    doc = parse(N07)
    lines = [b.text for b in doc.blocks]
    for expected in ("Applicant name: Mira Okonkwo-Hale", "Policy number: PN-44817-K",
                     "Insured address: Tannenweg 14, 8010 Graz", "Sum insured (EUR): 185000",
                     "Start date: 2026-03-01", "Flood cover requested: yes (checked)"):
        assert expected in lines
    assert all(b.page == 1 for b in doc.blocks)
    assert not doc.warnings


def test_n07_questions_about_form_values_are_answered_from_page_1(engine) -> None:
    engine.ingest([CASES / N07])
    answer = engine.ask("What is the policy number on the household insurance application?")
    assert "PN-44817-K" in answer.text and cited(answer, "PN-44817-K").page == 1
    answer = engine.ask("What sum is insured and is flood cover requested?")
    assert "Flood cover requested: yes (checked)" in answer.text  # the extractive answer
    answer = engine.ask("What is the sum insured?")  # quotes one line of a two-part question
    assert "185000" in answer.text and cited(answer, "185000").page == 1
    text = " ".join(h.chunk.text for h in engine.search("Is flood cover requested?").hits)
    assert "Flood cover requested: yes (checked)" in text
