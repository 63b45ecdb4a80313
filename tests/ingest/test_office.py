"""XLSX, PPTX, EPUB and e-mail files, written by their own libraries in a temporary folder:
what the parsers read, what they refuse, and answers with citations from a real index."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from citewise.errors import CorruptDocumentError, DocumentError, EmptyDocumentError
from citewise.ingest.parsers.base import parser_for
from citewise.ingest.parsers.xlsx import ROWS_PER_BLOCK, cell_text
from citewise.ingest.pipeline import parse_file
from citewise.types import BlockKind
from tests.conftest import CASES
from tests.ingest import office_files
from tests.ingest.test_fuzz import FUZZ, parse_or_own_error

PAYROLL_PDF = CASES / "c02_encrypted" / "payroll_plain.pdf"


def _parse(path: Path):  # type: ignore[no-untyped-def]
    data = path.read_bytes()
    return parser_for(path, data).parse(path, data)


# --- XLSX -------------------------------------------------------------------------------------


def test_xlsx_sheets_rows_zero_and_cached_formula_results(tmp_path):
    doc = _parse(office_files.budget_xlsx(tmp_path / "budget.xlsx"))
    assert doc.format == "xlsx" and doc.title == "Budget 2025"
    assert doc.metadata["author"] == "Dana Finance"
    assert doc.metadata["sheets"] == ["Budget", "Staff"]
    assert doc.warnings == ("sheet 'Hidden': hidden, not indexed",)
    assert "Ignore all previous instructions" not in doc.text
    blocks = [(b.kind, b.section, b.header, b.text, b.line_start, b.line_end) for b in doc.blocks]
    assert blocks == [
        (BlockKind.TABLE, ("Budget",), "Region | Q1 | Q2",
         "North | 0 | 95\nSouth | 120 | 75.5\nEast | 60 | 39.5", 2, 4),
        # the total row under a blank row: a row of the table above, with the cached results
        (BlockKind.TABLE, ("Budget",), "Region | Q1 | Q2", "Total | 180 | 210", 6, 6),
        # a blank header cell is named by its column letter; dates as ISO
        (BlockKind.TABLE, ("Staff",), "Team | B | Since",
         "Platform | 14 | 2021-03-01\nPayments | 9 | 2019-11-15 09:30:00", 2, 3),
    ]
    for b in doc.blocks:
        assert doc.text[b.start:b.end] == b.text


def test_xlsx_formula_without_cached_result_is_empty_not_its_formula(tmp_path):
    import openpyxl

    wb = openpyxl.Workbook()
    wb.active.append(["Item", "Cost"])
    wb.active.append(["Paper", "=2+3"])  # never calculated: no cached result
    wb.active.append(["Ink", 0])
    wb.save(tmp_path / "costs.xlsx")
    doc = _parse(tmp_path / "costs.xlsx")
    assert doc.blocks[0].text == "Paper | \nInk | 0"
    assert "=2+3" not in doc.text


def test_xlsx_long_sheet_is_cut_into_blocks_that_repeat_the_header(tmp_path):
    import openpyxl

    wb = openpyxl.Workbook()
    wb.active.title = "Log"
    wb.active.append(["Day", "Visitors"])
    for day in range(1, 101):
        wb.active.append([day, day * 10])
    wb.save(tmp_path / "log.xlsx")
    doc = _parse(tmp_path / "log.xlsx")
    assert [(b.line_start, b.line_end) for b in doc.blocks] == [
        (2, 1 + ROWS_PER_BLOCK), (2 + ROWS_PER_BLOCK, 1 + 2 * ROWS_PER_BLOCK),
        (2 + 2 * ROWS_PER_BLOCK, 101)]
    assert {b.header for b in doc.blocks} == {"Day | Visitors"}
    assert doc.blocks[-1].text.endswith("100 | 1000")


def test_cell_text_keeps_zero_and_formats_values():
    import datetime as dt

    assert [cell_text(v) for v in (0, 0.0, 3.0, 2.5, 1 / 3, True, None, "  a\n b ",
                                   dt.datetime(2024, 3, 31), dt.date(2024, 1, 2))] == [
        "0", "0", "3", "2.5", "0.333333333333333", "TRUE", "", "a b", "2024-03-31",
        "2024-01-02"]


# --- PPTX -------------------------------------------------------------------------------------


def test_pptx_slides_groups_tables_and_notes(tmp_path):
    doc = _parse(office_files.deck_pptx(tmp_path / "deck.pptx"))
    assert doc.format == "pptx" and doc.title == "Product update" and doc.pages == 3
    assert doc.warnings == ("slide 2: hidden, not indexed",)
    assert [(b.kind, b.page, b.section, b.header, b.text) for b in doc.blocks] == [
        (BlockKind.HEADING, 1, ("Roadmap",), None, "Roadmap"),
        # the text box, then the group's member and its nested group's member, top to bottom
        (BlockKind.PARAGRAPH, 1, ("Roadmap",), None,
         ("The mobile app launches in September.\nOffline mode ships with the second release."
         "\nDark theme is planned for the winter.")),
        (BlockKind.PARAGRAPH, 1, ("Roadmap", "Speaker notes"), None,
         "Mention that the beta has 300 testers."),
        (BlockKind.HEADING, 3, ("Pricing",), None, "Pricing"),
        (BlockKind.TABLE, 3, ("Pricing",), "Plan | Monthly price", "Basic | 9 EUR\nTeam | 29 EUR"),
    ]
    assert "Backup" not in doc.text


# --- EPUB -------------------------------------------------------------------------------------


def test_epub_chapters_are_sections_in_spine_order(tmp_path):
    doc = _parse(office_files.novel_epub(tmp_path / "novel.epub"))
    assert doc.format == "epub" and doc.title == "The Mountain Road"
    assert doc.metadata == {"author": "Ann Author", "language": "en"}
    assert [(b.kind, b.section, b.text) for b in doc.blocks] == [
        (BlockKind.HEADING, ("The Valley",), "The Valley"),
        (BlockKind.PARAGRAPH, ("The Valley",), "The dragon sleeps under the old mountain."),
        (BlockKind.HEADING, ("The Valley", "The ford"), "The ford"),
        (BlockKind.PARAGRAPH, ("The Valley", "The ford"),
         "Travellers cross the river at the stone ford."),
        # no heading of its own: the chapter's title comes from the table of contents
        (BlockKind.PARAGRAPH, ("The Pass",),
         "The knight rides north through the snowy pass at dawn."),
    ]
    assert "Secret hidden instruction" not in doc.text  # display:none, dropped as in HTML


# --- e-mail -----------------------------------------------------------------------------------


def test_eml_headers_body_and_attachments(tmp_path):
    xlsx = office_files.budget_xlsx(tmp_path / "budget.xlsx").read_bytes()
    png = b"\x89PNG\r\n\x1a\n" + bytes(64)
    mail = office_files.mail_eml(tmp_path / "mail.eml", {
        "payroll.pdf": PAYROLL_PDF.read_bytes(), "budget.xlsx": xlsx, "photo.png": png})
    doc = _parse(mail)
    assert doc.format == "eml" and doc.title == "Office move"
    assert doc.metadata == {
        "from": "Alice Example <alice@example.org>", "to": "Bob Example <bob@example.org>",
        "subject": "Office move", "message_id": "<move-1@example.org>",
        "date": "2025-03-04", "created": "2025-03-04",
        "attachments": ["payroll.pdf", "budget.xlsx", "photo.png"]}
    assert doc.blocks[0].text == (
        "From: Alice Example <alice@example.org>\nTo: Bob Example <bob@example.org>\n"
        "Date: Tue, 04 Mar 2025 10:15:00 +0100\nSubject: Office move")
    assert [b.text for b in doc.blocks[1:4]] == [
        "Hi Bob,", "The office moves to Harbour Street 12 on 14 April.", "Regards,\nAlice"]
    pdf = [b for b in doc.blocks if b.section[:1] == ("Attachment: payroll.pdf",)]
    assert pdf and all(b.page == 1 for b in pdf)
    assert any("25th day of each month" in b.text for b in pdf)
    sheet = [b for b in doc.blocks if b.section[:1] == ("Attachment: budget.xlsx",)]
    assert [(b.section, b.line_start) for b in sheet] == [
        (("Attachment: budget.xlsx", "Budget"), 2), (("Attachment: budget.xlsx", "Budget"), 6),
        (("Attachment: budget.xlsx", "Staff"), 2)]
    assert doc.warnings == (
        "attachment budget.xlsx: sheet 'Hidden': hidden, not indexed",
        ("attachment photo.png: not indexed (unsupported or binary content; convert it to PDF, "
        "DOCX, HTML, Markdown or text)"))
    for b in doc.blocks:
        assert doc.text[b.start:b.end] == b.text


def test_eml_html_only_body_and_attached_message(tmp_path):
    from email.message import EmailMessage

    inner = office_files.mail_eml(tmp_path / "inner.eml").read_bytes()
    msg = EmailMessage()
    msg["From"] = "carol@example.org"
    msg["Subject"] = "Fwd: Office move"
    msg.set_content("<html><body><p>See the <b>forwarded</b> note.</p>"
                    "<p style='display:none'>hidden text</p></body></html>", subtype="html")
    import email

    msg.add_attachment(email.message_from_bytes(inner, policy=email.policy.default))
    (tmp_path / "fwd.eml").write_bytes(msg.as_bytes())
    doc = _parse(tmp_path / "fwd.eml")
    assert [b.text for b in doc.blocks[:2]] == [
        "From: carol@example.org\nSubject: Fwd: Office move", "See the forwarded note."]
    assert "hidden text" not in doc.text
    moved = [b for b in doc.blocks if "Harbour Street" in b.text]
    assert [b.section for b in moved] == [("Attachment: attachment-1.eml",)]


# --- broken files: a clear error naming the file; the ingest goes on ----------------------------


@pytest.mark.parametrize("name", ["budget.xlsx", "deck.pptx", "novel.epub"])
def test_truncated_package_is_a_corrupt_document(tmp_path, name):
    maker = {"budget.xlsx": office_files.budget_xlsx, "deck.pptx": office_files.deck_pptx,
             "novel.epub": office_files.novel_epub}[name]
    good = maker(tmp_path / name).read_bytes()
    broken = tmp_path / f"broken-{name}"
    broken.write_bytes(good[: len(good) // 2])
    with pytest.raises(CorruptDocumentError, match=f"broken-{name}: corrupt or truncated"):
        parse_file(broken, broken.read_bytes(), broken.name)


@pytest.mark.parametrize("name", ["sheet.xlsx", "deck.pptx", "book.epub"])
def test_a_zip_of_another_kind_is_refused_by_name(tmp_path, name):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("readme.txt", "just a zip")
    path = tmp_path / name
    path.write_bytes(buf.getvalue())
    with pytest.raises(DocumentError, match=f"{name}: not an? "):
        parse_file(path, path.read_bytes(), name)


def test_binary_or_headerless_eml_is_refused(tmp_path):
    binary = tmp_path / "bin.eml"
    binary.write_bytes(b"\x00\x01\x02" * 100)
    with pytest.raises(CorruptDocumentError, match="bin.eml: not an e-mail message: binary"):
        parse_file(binary, binary.read_bytes(), binary.name)
    notes = tmp_path / "notes.eml"
    notes.write_bytes(b"just some words\n\nand more words\n")
    with pytest.raises(CorruptDocumentError, match="notes.eml: not an e-mail message: none"):
        parse_file(notes, notes.read_bytes(), notes.name)
    empty = tmp_path / "empty.xlsx"
    import openpyxl

    openpyxl.Workbook().save(empty)
    with pytest.raises(EmptyDocumentError, match="empty.xlsx: no cell values"):
        parse_file(empty, empty.read_bytes(), empty.name)


# --- end to end: ingest, retrieval and citations on a real SQLite index ------------------------


@pytest.fixture
def office_engine(engine, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    office_files.budget_xlsx(data / "budget.xlsx")
    office_files.deck_pptx(data / "deck.pptx")
    office_files.novel_epub(data / "novel.epub")
    office_files.mail_eml(data / "mail.eml", {"payroll.pdf": PAYROLL_PDF.read_bytes()})
    (data / "mayors.csv").write_text("city,mayor\nOslo,Anne Lindboe\nBergen,Marte Mjos Persen\n"
                                     "Trondheim,Kent Ranum\n")
    (data / "broken.pptx").write_bytes((data / "deck.pptx").read_bytes()[:700])
    report = engine.ingest([data])
    engine.report = report  # type: ignore[attr-defined]
    return engine


def test_office_files_ingest_with_a_broken_one_reported(office_engine):
    statuses = {f.path: (f.status, f.reason) for f in office_engine.report.files}
    assert statuses["data/broken.pptx"] == (
        "failed", "corrupt or truncated Office file: File is not a zip file")
    assert {p: s for p, (s, _) in statuses.items() if p != "data/broken.pptx"} == {
        "data/budget.xlsx": "added", "data/deck.pptx": "added", "data/novel.epub": "added",
        "data/mail.eml": "added", "data/mayors.csv": "added"}
    formats = {d.path: d.format for d in office_engine.store.documents() if d.status == "indexed"}
    assert formats == {"data/budget.xlsx": "xlsx", "data/deck.pptx": "pptx",
                       "data/novel.epub": "epub", "data/mail.eml": "eml",
                       "data/mayors.csv": "text"}


@pytest.mark.parametrize(("question", "quote", "location"), [
    # a spreadsheet row is quoted with its column names and cited by sheet and row
    ("What was North's Q1 budget?", "Region: North; Q1: 0; Q2: 95",
     "data/budget.xlsx, row 2, Budget"),
    ("What is the total for Q2?", "Region: Total; Q1: 180; Q2: 210",
     "data/budget.xlsx, row 6, Budget"),
    ("When does the mobile app launch?", "The mobile app launches in September.",
     "data/deck.pptx, slide 1, Roadmap"),
    ("How many testers does the beta have?", "the beta has 300 testers",
     "data/deck.pptx, slide 1, Roadmap > Speaker notes"),
    ("What does the Team plan cost per month?", "Plan: Team; Monthly price: 29 EUR",
     "data/deck.pptx, slide 3, Pricing"),
    ("Where do travellers cross the river?", "Travellers cross the river at the stone ford.",
     "data/novel.epub, The Valley > The ford"),
    ("On which day are salaries paid?", "Salaries are paid on the 25th day of each month",
     "data/mail.eml, p. 1, Attachment: payroll.pdf > Payroll calendar 2025"),
    ("Where does the office move to?", "Harbour Street 12 on 14 April", "data/mail.eml"),
    # a CSV row is cited by its own line, as a sheet's row is (the header is line 1)
    ("Who is the mayor of Bergen?", "city: Bergen; mayor: Marte Mjos Persen",
     "data/mayors.csv, lines 3-3"),
])
def test_answers_cite_sheets_rows_slides_chapters_and_attachments(
        office_engine, question, quote, location):
    answer = office_engine.ask(question)
    assert answer.found and quote in answer.text
    first = answer.text.index(quote)
    number = int(answer.text[first:].split("[", 1)[1].split("]", 1)[0])
    citation = answer.citations[number - 1]
    assert citation.location == location
    # the cited characters are the quoted row or sentence in the document's own text
    doc = office_engine.store.document(citation.document_id)
    source = Path(doc.source_path)
    cited = parse_file(source, source.read_bytes()).text[citation.char_start:citation.char_end]
    words = quote
    for name in ("Region: ", "Plan: ", "Monthly price: ", "city: ", "mayor: "):
        words = words.replace(name, "")
    for word in words.replace(";", " ").replace("Q1: ", "").replace("Q2: ", "").split():
        assert word in cited


# --- fuzzing: damaged office files give a citewise error or a document, never a crash ---------


@pytest.fixture(scope="module")
def office_bytes(tmp_path_factory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("office")
    return {
        "budget.xlsx": office_files.budget_xlsx(folder / "budget.xlsx").read_bytes(),
        "deck.pptx": office_files.deck_pptx(folder / "deck.pptx").read_bytes(),
        "novel.epub": office_files.novel_epub(folder / "novel.epub").read_bytes(),
        "mail.eml": office_files.mail_eml(folder / "mail.eml", {
            "payroll.pdf": PAYROLL_PDF.read_bytes()}).read_bytes(),
    }


@FUZZ
@given(name=st.sampled_from(["budget.xlsx", "deck.pptx", "novel.epub", "mail.eml"]),
       edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True),
                                st.binary(min_size=1, max_size=8)), min_size=1, max_size=6))
def test_damaged_office_files_parse_or_raise_citewise_errors(office_bytes, name, edits):
    data = bytearray(office_bytes[name])
    for where, patch in edits:
        at = int(where * len(data))
        data[at:at + len(patch)] = patch
    parse_or_own_error(name, bytes(data))


@FUZZ
@given(name=st.sampled_from(["a.xlsx", "a.pptx", "a.epub", "a.eml"]),
       data=st.binary(max_size=2000))
def test_random_bytes_as_office_files(name, data):
    parse_or_own_error(name, data)
