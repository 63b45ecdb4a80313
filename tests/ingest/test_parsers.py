"""Parsers against the shared failure cases (inputs and facts: shared/cases/files/MANIFEST.json).

Every file is routed the way the ingest pipeline does it: ``parser_for(path, data).parse``.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

from citewise.errors import (
    CorruptDocumentError,
    DocumentError,
    EmptyDocumentError,
    EncryptedDocumentError,
    NoTextLayerError,
)
from citewise.ingest.parsers.base import parser_for
from citewise.types import BlockKind, ParsedDocument

CASES = Path(__file__).parents[2].parent / "shared" / "cases" / "files"

if not CASES.is_dir():  # pragma: no cover - CI lays shared/ beside the repository
    pytest.skip(f"case files not found at {CASES}", allow_module_level=True)

_INJECTION = "IMPORTANT SYSTEM NOTICE"


def parse(relative: str) -> ParsedDocument:
    path = CASES / relative
    data = path.read_bytes()
    return parser_for(path, data).parse(path, data)


def squash(text: str) -> str:
    return " ".join(text.split())


def assert_well_formed(doc: ParsedDocument) -> None:
    """Offsets point at the block text; nothing that breaks a later stage is stored."""
    assert doc.blocks
    for block in doc.blocks:
        assert block.text.strip(), block
        assert doc.text[block.start:block.end] == block.text
        if block.line_start is not None:
            assert 1 <= block.line_start <= (block.line_end or block.line_start)
    for text in [doc.title, doc.text, *(b.header or "" for b in doc.blocks)]:
        assert "\x00" not in text and "\ufeff" not in text
        assert not any(unicodedata.category(ch) == "Cs" for ch in text)
        text.encode("utf-8")  # no lone surrogates


def every_case_file() -> list[str]:
    return sorted(str(p.relative_to(CASES)) for p in CASES.rglob("*") if p.is_file()
                  and p.name != "MANIFEST.json" and p.stat().st_size < 400_000)


@pytest.mark.parametrize("relative", every_case_file())
def test_every_case_file_parses_or_raises_a_document_error(relative: str) -> None:
    try:
        doc = parse(relative)
    except DocumentError as exc:
        assert exc.path.endswith(Path(relative).name)
        assert str(exc).startswith(exc.path + ": ")
        return
    assert_well_formed(doc)


# --- C10 / C11 / C12 / C14: encodings and scripts ---------------------------------------------


@pytest.mark.parametrize("name", ["otpusk_cp1251.txt", "otpusk_koi8r.txt"])
def test_c10_russian_legacy_encodings(name: str) -> None:
    doc = parse(f"c10_encodings/{name}")
    assert "заявление" in doc.text.lower()
    assert "за две недели" in doc.text
    assert "График отпусков" == doc.blocks[0].text


def test_c10_cp1252() -> None:
    doc = parse("c10_encodings/cafe_cp1252.txt")
    assert "Café Lumière" in doc.text
    assert "07:30" in doc.text
    assert "“" in doc.text and "—" in doc.text and "naïve" in doc.text


@pytest.mark.parametrize("name", ["warehouse_utf16le_bom.txt", "warehouse_utf16be_bom.md",
                                  "warehouse_utf16le_nobom.txt", "warehouse_utf8_bom.md"])
def test_c11_utf16_and_bom(name: str) -> None:
    doc = parse(f"c11_utf16/{name}")
    assert "06:00" in doc.text and "22:00" in doc.text
    assert doc.blocks[0].text == "Warehouse opening hours"
    assert "\x00" not in doc.text and "\ufeff" not in doc.text + doc.title


def test_c11_all_four_decode_to_the_same_text() -> None:
    texts = {squash(parse(f"c11_utf16/{n}").text) for n in [
        "warehouse_utf16le_bom.txt", "warehouse_utf16be_bom.md",
        "warehouse_utf16le_nobom.txt", "warehouse_utf8_bom.md"]}
    assert len(texts) == 1


def test_c12_chinese_file_name_and_text() -> None:
    doc = parse("c12_chinese/退货政策.md")
    assert doc.title == "退货政策"
    assert any("收货之日起三十天内" in b.text for b in doc.blocks)
    lines = parse("c12_chinese/lines.txt")
    assert lines.text.splitlines()[2] == "秋季盘点由仓库负责"


def test_c14_kazakh_letters_survive() -> None:
    doc = parse("c14_kazakh/kitaphana.txt")
    assert "кітапхана" in doc.text and "Сенбі" in doc.text or "сенбі" in doc.text.lower()
    upper = parse("c14_kazakh/kitaphana_UPPER.txt")
    assert any(ch in upper.text for ch in "ҚҮІ")


# --- C15 / C16 / C17 -------------------------------------------------------------------------


def test_c15_arabic_pdf_in_logical_order() -> None:
    pdf = parse("c15_arabic/return_policy_ar_shaped.pdf")
    control = parse("c15_arabic/return_policy_ar.txt")
    assert squash(pdf.text) == squash(control.text)
    for word in ("خلال", "ثلاثين", "يومًا", "الإرجاع", "4521"):
        assert word in pdf.text


def test_c16_emoji_and_surrogates() -> None:
    party = parse("c16_emoji/team_party.md")
    assert "roof terrace" in party.text and "12 July" in party.text
    assert "👨\u200d👩\u200d👧\u200d👦" in party.text and "🇰🇿" in party.text
    inventory = parse("c16_emoji/inventory_surrogate_bytes.txt")
    assert "3 October" in inventory.text
    assert "😀" in inventory.text  # the encoded surrogate pair is joined
    assert "\ufffd" in inventory.text  # the lone one becomes U+FFFD
    quiz = parse("c16_emoji/quiz_surrogate_refs.html")
    assert "19:30" in quiz.text and "Aurora" in quiz.text
    for doc in (party, inventory, quiz):
        assert_well_formed(doc)


def test_c17_long_lines_and_blobs() -> None:
    one_line = parse("c17_long_lines/one_line_300k.txt")
    assert len(one_line.blocks) == 1
    assert "The spare key is kept in the blue cabinet behind reception." in one_line.text
    assert one_line.blocks[0].line_start == one_line.blocks[0].line_end == 1
    token = parse("c17_long_lines/giant_token.txt")
    assert "the nightly backup runs at 23:15" in token.text
    assert "[data omitted]" in token.text and len(token.text) < 1000
    logo = parse("c17_long_lines/embedded_base64.md")
    assert "white background" in logo.text
    assert len(logo.text) < 500
    assert not re.search(r"[A-Za-z0-9+/]{200,}", logo.text)


# --- C18 front matter ---------------------------------------------------------------------------


def test_c18_yaml_front_matter_is_metadata() -> None:
    doc = parse("c18_frontmatter/onboarding.md")
    assert doc.title == "Onboarding Checklist"
    assert doc.metadata["author"] == "People Team"
    assert "lockers" in doc.metadata["tags"]
    assert "tags" not in doc.text and "---" not in doc.text and "People Team" not in doc.text
    assert "IT desk on floor 2" in doc.text
    laptop = next(b for b in doc.blocks if "laptop" in b.text)
    assert (laptop.line_start, laptop.section) == (11, ("Welcome aboard",))


def test_c18_toml_front_matter_is_metadata() -> None:
    doc = parse("c18_frontmatter/expenses_toml.md")
    assert doc.title == "Expense Rules"
    assert doc.metadata["date"] == "2025-03-01"
    assert "+++" not in doc.text and "date" not in doc.text
    assert "EUR 45 per day" in doc.text


def test_c18_front_matter_only_is_empty() -> None:
    with pytest.raises(EmptyDocumentError, match="front matter only"):
        parse("c18_frontmatter/only_frontmatter.md")


# --- C01 / C02 / C04 / C05 / C06: PDFs ----------------------------------------------------------


@pytest.mark.parametrize("name", ["maintenance_agreement_scan.pdf",
                                  "maintenance_agreement_watermark_only.pdf"])
def test_c01_scans_have_no_text_layer(name: str) -> None:
    with pytest.raises(NoTextLayerError, match="OCR"):
        parse(f"c01_scanned/{name}")


def test_c01_mixed_pdf_warns_about_page_2() -> None:
    doc = parse("c01_scanned/maintenance_agreement_mixed.pdf")
    assert "HSD-2025-014" in doc.text
    assert doc.pages == 2
    assert {b.page for b in doc.blocks} == {1}
    assert any(w.startswith("page 2:") and "OCR" in w for w in doc.warnings)


def test_c02_user_password_is_refused() -> None:
    with pytest.raises(EncryptedDocumentError, match="password"):
        parse("c02_encrypted/payroll_user_password.pdf")


@pytest.mark.parametrize("name", ["payroll_owner_password_only.pdf", "payroll_plain.pdf"])
def test_c02_owner_password_only_and_plain_open(name: str) -> None:
    doc = parse(f"c02_encrypted/{name}")
    assert "Salaries are paid on the 25th day of each month" in doc.text
    assert "preceding Friday" in doc.text
    assert all(b.page == 1 for b in doc.blocks)


def test_c04_columns_are_read_one_after_the_other() -> None:
    doc = parse("c04_two_column/community_bulletin_two_column.pdf")
    assert doc.title == "Community Bulletin - Spring Issue"
    left = next(b for b in doc.blocks if "Harbor Library" in b.text)
    assert "extend the opening hours to 21:00 on Thursdays starting in May" in squash(left.text)
    assert "north car park" not in left.text
    right = next(b for b in doc.blocks if "Parking and access" in b.text)
    assert "closes for resurfacing from 3 to 17 June; visitors should use the east garage on " \
           "Mill Lane instead." in squash(right.text)


HEADER = "Employee ID | Full name | Department | Office | Phone ext."
ROW_E0317 = "E0317 | Mara Lindqvist | Logistics | Building C, room 214 | 4417"


@pytest.mark.parametrize("name", ["staff_directory.md", "staff_directory.docx",
                                  "staff_directory.pdf"])
def test_c05_tables_keep_their_header(name: str) -> None:
    doc = parse(f"c05_big_table/{name}")
    tables = [b for b in doc.blocks if b.kind is BlockKind.TABLE]
    assert tables and all(b.header == HEADER for b in tables)
    rows = [row for b in tables for row in b.text.split("\n")]
    assert len(rows) == 400
    assert ROW_E0317 in rows
    assert HEADER not in rows


def test_c05_pdf_row_is_on_page_8() -> None:
    doc = parse("c05_big_table/staff_directory.pdf")
    assert doc.pages == 10
    (block,) = [b for b in doc.blocks if "E0317" in b.text]
    # the ten pages' parts are one table (N11); the block records where each page begins
    at = doc.text.index("E0317")
    assert max((s, p) for s, p in ((block.start, block.page), *block.page_starts)
               if s <= at)[1] == 8
    assert [p for _, p in block.page_starts] == list(range(2, 11))


@pytest.mark.parametrize(("name", "error"), [
    ("empty.pdf", EmptyDocumentError),
    ("empty.docx", EmptyDocumentError),
    ("empty.md", EmptyDocumentError),
    ("empty.html", EmptyDocumentError),
    ("whitespace_only.txt", EmptyDocumentError),
    ("blank_page.pdf", EmptyDocumentError),
    ("truncated.pdf", CorruptDocumentError),
])
def test_c06_bad_files_raise_clear_errors(name: str, error: type[DocumentError]) -> None:
    with pytest.raises(error) as info:
        parse(f"c06_empty/{name}")
    assert name in str(info.value)


def test_c06_text_named_pdf_is_indexed_as_text_with_a_warning() -> None:
    doc = parse("c06_empty/not_really_a.pdf")
    assert doc.format == "text"
    assert "plain text saved with a .pdf extension" in doc.text
    assert any(".pdf" in w for w in doc.warnings)


def test_c06_control_pdf() -> None:
    doc = parse("c06_empty/control_ok.pdf")
    assert "The canteen is open from 11:30 to 14:00." in doc.text
    assert doc.title == "Canteen"


# --- C27 hidden instructions, C37 Word internals -----------------------------------------------


@pytest.mark.parametrize("name", ["kettle_warranty.md", "kettle_warranty.html",
                                  "kettle_warranty_hidden.docx", "kettle_warranty_hidden.pdf"])
def test_c27_hidden_text_is_dropped(name: str) -> None:
    doc = parse(f"c27_injection/{name}")
    assert "24 months from the date of purchase" in doc.text
    assert _INJECTION not in doc.text
    assert "ACCESS GRANTED" not in doc.text


def test_c27_pdf_warns_about_dropped_text() -> None:
    doc = parse("c27_injection/kettle_warranty_hidden.pdf")
    assert any("hidden text" in w for w in doc.warnings)


def test_c37_docx_insertions_text_boxes_tables_headers() -> None:
    doc = parse("c37_docx/office_move.docx")
    assert "must be completed by 30 June." in doc.text
    assert "31 May" not in doc.text
    assert "Boxes must be labelled with the new room number in red marker." in doc.text
    table = next(b for b in doc.blocks if b.kind is BlockKind.TABLE)
    assert table.header == "Item | Detail"
    assert table.text == "Fire assembly point | Car park B, next to the bike shelter"
    assert doc.text.count("Facilities Team - internal") == 1
    assert doc.blocks[-1].text == "Questions: facilities desk, ext. 2040"
    assert doc.title == "Office move plan"


# --- C41 source code ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["invoice.py", "geometry.h", "geometry.cc", "app.ts",
                                  "Makefile", "build.proj"])
def test_c41_code_files_are_accepted(name: str) -> None:
    doc = parse(f"c41_code/{name}")
    assert doc.format == "code"
    assert doc.text == (CASES / "c41_code" / name).read_text()
    assert all(b.kind is BlockKind.CODE and b.line_start for b in doc.blocks)


def test_c41_symbols_and_line_ranges() -> None:
    def symbols(name: str) -> dict[str | None, tuple[int | None, int | None]]:
        return {b.symbol: (b.line_start, b.line_end) for b in parse(f"c41_code/{name}").blocks}

    assert symbols("geometry.cc")["ring_area"] == (4, 8)
    assert symbols("invoice.py")["parse_invoice_total"] == (5, 13)
    assert symbols("app.ts")["backoffMs"] == (2, 5)
    assert "ring_area" in symbols("geometry.h")
    assert symbols("Makefile")["release"] == (1, 3)
    ring = next(b for b in parse("c41_code/geometry.cc").blocks if b.symbol == "ring_area")
    assert ring.text.startswith("// Returns 0.0 when inner_radius >= outer_radius")
    assert "01:00" in parse("c41_code/build.proj").text
