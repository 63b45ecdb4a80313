"""Clause citations follow the contract's own numbering, including Word's automatic numbers."""

from __future__ import annotations

from pathlib import Path

import docx
import pytest
from docx.oxml import parse_xml

from citewise.ingest.parsers.base import parser_for
from citewise.scan.checks import Verdict
from citewise.scan.numbering import clause_number, leading_label
from citewise.types import ParsedDocument

W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


@pytest.mark.parametrize(("text", "label"), [
    ("12.3 The Supplier shall deliver.", "12.3"),
    ("15.       The validity, construction", "15"),
    ("9. mPhase agrees to allow Lucent", "9"),
    ("Section 12.3 Term.", "12.3"),
    ("ARTICLE IV TERM AND TERMINATION", "IV"),
    ("IV. Term", "IV"),
    ("12.3.", "12.3"),
    ("(b) the Buyer may", "(b)"),
    ("b) the Buyer may", "(b)"),
    ("Section 5 of this Agreement survives.", None),  # a reference, not a label
    ("30 days after the notice", None),
    ("2019 Annual Report", None),  # years are no labels
    ("3.5% of the fees", None),
    ("I am the Supplier.", None),
])
def test_leading_label(text: str, label: str | None) -> None:
    found = leading_label(text)
    assert (found.text if found else None) == label


def parse(path: Path) -> ParsedDocument:
    data = path.read_bytes()
    return parser_for(path, data).parse(path, data)


def test_numbers_of_a_text_contract_with_items_continuations_and_an_exhibit(tmp_path):
    path = tmp_path / "contract.txt"
    path.write_text(
        "SUPPLY AGREEMENT\n\nThe parties agree as follows.\n\n"
        "11. TERM\n\n11.1 This Agreement runs for two years.\n\n"
        "It may be extended by a written amendment.\n\n"
        "11.2 Either party may terminate this Agreement:\n\n"
        "(a) for convenience on sixty days' notice; or\n\n"
        "(b) at once if the other party becomes insolvent.\n\n"
        "EXHIBIT A\n\nPrice list.\n", encoding="utf-8")
    parsed = parse(path)
    text = parsed.text

    def at(words: str) -> str | None:
        return clause_number(parsed, text.index(words))

    assert at("The parties agree") is None  # before the first number
    assert at("11.1 This Agreement") == "11.1"
    assert at("runs for two years") == "11.1"  # inside the clause
    assert at("It may be extended") == "11.1"  # an unnumbered paragraph continues 11.1
    assert at("(a) for convenience") == "11.2(a)"
    assert at("at once if") == "11.2(b)"
    assert at("Price list") is None  # the exhibit is not part of clause 11.2


def numbered_contract(path: Path) -> None:
    """A contract numbered by Word itself: level 0 "%1." titles, level 1 "%1.%2" clauses
    (``w:numPr`` on each paragraph, levels in numbering.xml); no number is in the text."""
    document = docx.Document()
    numbering = document.part.numbering_part.element
    numbering.append(parse_xml(
        f'<w:abstractNum {W} w:abstractNumId="90">'
        '<w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/>'
        '<w:lvlText w:val="%1."/></w:lvl>'
        '<w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="decimal"/>'
        '<w:lvlText w:val="%1.%2"/></w:lvl></w:abstractNum>'))
    numbering.append(parse_xml(f'<w:num {W} w:numId="90"><w:abstractNumId w:val="90"/></w:num>'))

    def add(text: str, level: int) -> None:
        p = document.add_paragraph(text)
        p._p.get_or_add_pPr().append(parse_xml(
            f'<w:numPr {W}><w:ilvl w:val="{level}"/><w:numId w:val="90"/></w:numPr>'))

    document.add_paragraph("MASTER SERVICES AGREEMENT")
    sections = [
        ("Definitions", ["Services means the services described in Schedule 1.",
                         "Fees means the amounts payable under clause 4."]),
        ("Services", ["The Supplier shall perform the Services with reasonable care."]),
        ("Term", ["This Agreement starts on the Effective Date and lasts for two years."]),
        ("Fees", ["The Customer shall pay each invoice within thirty days of receipt."]),
    ] + [(f"Reserved {n}", [f"Clause {n} is intentionally left blank."]) for n in range(5, 12)]
    sections.append(("General", [
        "Each notice under this Agreement must be in writing.",
        "No failure to exercise a right is a waiver of it.",
        ("This Agreement shall be governed by and construed in accordance with the laws of the "
        "State of New York, without regard to its conflict of laws principles."),
    ]))
    for title, clauses in sections:
        add(title, 0)
        for clause in clauses:
            add(clause, 1)
    document.save(str(path))


def test_docx_auto_numbering_gives_the_cited_section(engine, tmp_path):
    path = tmp_path / "msa.docx"
    numbered_contract(path)
    parsed = parse(path)
    law = parsed.text.index("This Agreement shall be governed")
    assert parsed.text[law - 5:law] == "12.3 "  # the number Word renders, computed from numPr
    assert clause_number(parsed, law) == "12.3"
    assert clause_number(parsed, parsed.text.index("within thirty days")) == "4.1"
    heading = next(b for b in parsed.blocks if b.text == "12. General")
    assert clause_number(parsed, heading.start) == "12"

    report = engine.scan(path)
    flag = next(f for f in report.flags if f.rule == "governing-law")
    assert flag.verdict is Verdict.COMPLIANT
    assert flag.clause_number == "12.3"
    assert flag.where.startswith("section 12.3, ")
    cite = flag.to_json()["citation"]
    assert cite["clause_number"] == "12.3" and cite["where"] == flag.where
    assert "laws of the State of New York" in cite["quote"]
    assert parsed.text[cite["char_start"]:cite["char_end"]].startswith("12.3 This Agreement")
    assert cite["decisive"]["quote"] == "New York"
